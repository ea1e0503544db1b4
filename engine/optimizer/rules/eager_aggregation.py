"""Eager aggregation (Yan & Larson, "Eager Aggregation and Lazy Aggregation", VLDB 1995): group the
rows of a join's larger part before joining the input that only supplies group keys.

``GROUP BY`` over an inner join whose group keys come partly from one input D (a dimension: customer
names, addresses) while every aggregate reads the other inputs R (or is MIN / MAX / ANY_VALUE of D's
columns, which duplicates do not change) can aggregate R first, by R's group keys and R's side of the
equalities that join D, then join D to the (far fewer) groups and aggregate once more by the original
keys, merging the partial states (SUM of SUMs and of COUNTs, MIN of MINs; an AVG is its merged SUM
over its merged COUNT, divided in a projection above). Every R row meets the same D rows before and
after, so each final group sums the same values: the rewrite holds whatever the keys' uniqueness, and
for grouping sets (ROLLUP, CUBE) too: each set is a coarser grouping of the early groups' partial
states (R's keys of every set are among the early keys). It pays when R's groups are much fewer than R's rows: the wide keys of D
(strings, hashed through their collation keys) are then computed over the groups, not over every row.

    Aggregate keys=[c_name, d_year] aggs=[sum(ss_price)]
      MultiJoin ON c_sk = ss_customer AND ss_date = d_sk
    -> Aggregate keys=[c_name, year] aggs=[sum(s)]
         MultiJoin ON c_sk = customer
           customer
           Aggregate keys=[d_year, ss_customer] aggs=[sum(ss_price)] -> year, customer, s
             MultiJoin ON ss_date = d_sk

>>> from engine import types as T
>>> from engine.optimizer.cardinality import Estimator
>>> from engine.core.expressions import AggCall, Call
>>> from engine.plan.logical import Field, Values
>>> sk, cust, price, s = (Field(n, n, T.BIGINT) for n in ("sk", "cust", "price", "s"))
>>> name, g = Field("name", "name", T.TEXT), Field("g", "g", T.TEXT)
>>> customers = Values((sk, name), tuple((i, f"name{i % 7}") for i in range(10)))
>>> sales = Values((cust, price), tuple((i % 10, i) for i in range(1000)))      # 1000 rows, 10 customers
>>> join = MultiJoin((customers, sales), (Call("eq", (sk.ref(), cust.ref()), T.BOOLEAN),))
>>> agg = Aggregate(join, ((g, name.ref()),), ((s, AggCall("sum", price.ref(), T.BIGINT)),))
>>> print(eager_aggregation(agg, OptimizerContext(Estimator(None))).pretty())
Aggregate keys=[name] aggs=[sum(s)]
  MultiJoin ON (sk = join)
    Values (10 rows)
    Aggregate keys=[cust] aggs=[sum(price)]
      Values (1000 rows)
"""
from __future__ import annotations

import dataclasses
import itertools
from typing import Optional

from engine import types as T
from engine.optimizer.context import OptimizerContext
from engine.core.expressions import AggCall, Call, Expr, equi_pair
from engine.plan.logical import Aggregate, Field, LogicalPlan, MultiJoin, Project

# Aggregate R first only where its groups are at most this share of the rows the aggregate reads
# (estimated) ...
_MAX_GROUP_SHARE = 0.5
# ... and only where R alone has at most this many times the rows of the whole join.
_MAX_GROWTH = 2.0
# ... and where the work of grouping (keys and states by their widths) is at most this share of now's.
_MAX_COST_SHARE = 0.5
# a string key or state costs this many fixed-width ones (hashing its collation key, copying it)
_STRING_WEIGHT = 4.0
# inputs beyond those the aggregates read that may go to either side (2 ** this splits are tried)
_MAX_CHOICES = 4
# partial state -> how the final aggregate merges it
_MERGE = {"sum": "sum", "count": "sum", "count_star": "sum", "min": "min", "max": "max", "any_value": "any_value",
          "collated_min": "collated_min", "collated_max": "collated_max"}
# aggregates of D's columns that the duplicates eager aggregation removes do not change
_DUPLICATE_FREE = ("min", "max", "any_value", "collated_min", "collated_max")

_ids = itertools.count(1)


def _field(hint: str, like: Field) -> Field:
    return Field(f"{hint}#e{next(_ids)}", like.name, like.type, True)


def eager_aggregation(plan: LogicalPlan, ctx: OptimizerContext) -> LogicalPlan:
    from engine.plan.logical import map_inputs
    plan = map_inputs(plan, lambda child: eager_aggregation(child, ctx))
    if not (isinstance(plan, Aggregate) and isinstance(plan.input, MultiJoin)):
        return plan
    inputs = plan.input.inputs_
    # R holds at least the inputs that SUM / COUNT read; each other input may go either way
    read = set()
    for _, call in plan.aggregates:
        if call.func not in _DUPLICATE_FREE:
            read |= set().union(*(a.column_ids() for a in call.arguments())) if call.arguments() else set()
    fact = [i for i, x in enumerate(inputs) if x.field_ids() & read]
    others = [i for i in range(len(inputs)) if i not in fact]
    if not others or len(others) > _MAX_CHOICES:
        return plan
    best: Optional[tuple[float, LogicalPlan]] = None
    joined = ctx.estimator.rows(_ordered(plan.input, ctx))     # the rows the aggregate reads as it is
    for choice in itertools.product((False, True), repeat=len(others)):
        dim = tuple(i for i, in_dim in zip(others, choice) if in_dim)
        valid = dim and len(dim) < len(inputs)         # (COUNT(*) alone reads no input: R may be any)
        candidate = _rewrite(plan, dim, joined, ctx) if valid else None
        if candidate is not None and (best is None or candidate[0] < best[0]):
            best = candidate
    return plan if best is None else best[1]


def _rewrite(agg: Aggregate, dim_at: tuple[int, ...], joined: float,
             ctx: OptimizerContext) -> Optional[tuple[float, LogicalPlan]]:
    """``agg`` aggregated eagerly below its join with the inputs at ``dim_at`` (D), with the
    estimated rows of the early groups; None where that is not valid or does not pay: where the early
    groups are not far fewer than R's rows and the rows the aggregate reads now (``joined``), or where D's join
    removes most of R's rows (grouping all of R first would read more than the join leaves)."""
    join: MultiJoin = agg.input
    dims = tuple(x for i, x in enumerate(join.inputs_) if i in dim_at)
    rest = tuple(x for i, x in enumerate(join.inputs_) if i not in dim_at)
    dim_ids = set().union(*(x.field_ids() for x in dims))
    rest_ids = set().union(*(x.field_ids() for x in rest))
    # the conditions: D's own, R's own, and equalities D-expr = R-expr (the join of D)
    own, inner, pairs = [], [], []
    for c in join.conditions:
        ids = c.column_ids()
        if ids <= dim_ids:
            own.append(c)
        elif not ids & dim_ids:
            inner.append(c)
        else:
            pair = equi_pair(c, dim_ids, rest_ids)
            if pair is None:
                return None         # D joined by something else than equalities
            pairs.append(pair)
    if not pairs or not _connected(rest, inner):
        return None
    # keys: D's or R's, never both; at least one of D's (what the rewrite saves)
    dim_keys = [k for k in agg.keys if k[1].column_ids() and k[1].column_ids() <= dim_ids]
    rest_keys = [k for k in agg.keys if not k[1].column_ids() & dim_ids]
    if not dim_keys or len(dim_keys) + len(rest_keys) != len(agg.keys):
        return None
    partial, final, averages = [], [], {}
    for f, call in agg.aggregates:
        if call.distinct or call.extra or call.func not in _MERGE and call.func != "avg":
            return None
        read = call.arg.column_ids() if call.arg is not None else set()
        if read and read <= dim_ids and call.func in _DUPLICATE_FREE:
            final.append((f, call))
        elif read & dim_ids:
            return None
        elif call.func == "avg":
            # AVG = SUM / COUNT of the merged partial sums and counts (the division the aggregate's
            # own finish makes: the sum as DECIMAL(38, s) for exact types, DOUBLE for floats)
            t = call.arg.type
            sum_type = T.DOUBLE if t.kind == "float" else T.decimal_type(38, T.as_decimal(t).scale)
            total, count = _field("sum", Field("sum", "sum", sum_type)), _field("count", Field("count", "count", T.BIGINT))
            partial += [(total, AggCall("sum", call.arg, sum_type)), (count, AggCall("count", call.arg, T.BIGINT))]
            merged_total, merged_count = _field("sum", total), _field("count", count)
            final += [(merged_total, AggCall("sum", total.ref(), sum_type)),
                      (merged_count, AggCall("sum", count.ref(), T.BIGINT))]
            averages[f.id] = Call("divide", (merged_total.ref(), merged_count.ref()), f.type)
        else:
            state = _field(call.func, f)
            partial.append((state, call))
            final.append((f, AggCall(_MERGE[call.func], state.ref(), f.type, options=call.options)))
    # R grouped by its keys and its side of the join
    early_keys = [(_field("key", f), e) for f, e in rest_keys]
    join_keys = [(_field("join", Field("join", "join", r.type)), r) for _, r in pairs]
    r_plan = rest[0] if len(rest) == 1 and not inner else MultiJoin(rest, tuple(inner))
    early = Aggregate(r_plan, tuple(early_keys + join_keys), tuple(partial))
    est = ctx.estimator
    ordered = _ordered(r_plan, ctx)
    rows = est.rows(ordered)
    groups = est.rows(dataclasses.replace(early, input=ordered))
    if groups > _MAX_GROUP_SHARE * min(rows, joined) or rows > _MAX_GROWTH * joined:
        return None
    # what hashing keys and updating states costs per row, before and after (strings weigh more)
    before = joined * _width([e for _, e in agg.keys] + [c for _, c in agg.aggregates])
    after = rows * _width([e for _, e in early.keys] + [c for _, c in partial]) + \
        groups * _width([e for _, e in agg.keys] + [c for _, c in final])
    if after > _MAX_COST_SHARE * before:
        return None
    conditions = own + [Call("eq", (d, jf.ref()), T.BOOLEAN) for (d, _), (jf, _) in zip(pairs, join_keys)]
    moved = {f.id: ef for (f, _), (ef, _) in zip(rest_keys, early_keys)}
    keys = tuple((f, moved[f.id].ref()) if f.id in moved else (f, e) for f, e in agg.keys)
    top = dataclasses.replace(agg, input=MultiJoin(dims + (early,), tuple(conditions)), keys=keys,
                              aggregates=tuple(final))
    if averages:        # each AVG from its merged sum and count, every other column as it is
        top = Project(top, tuple((f, averages.get(f.id, f.ref())) for f in agg.fields))
    return groups, top


def _width(items) -> float:
    """The relative per-row cost of grouping by (or aggregating) ``items``: a string (hashed through
    its collation key, or kept as a string state) counts :data:`_STRING_WEIGHT`, anything else 1."""
    total = 0.0
    for item in items:
        t = item.arg.type if isinstance(item, AggCall) and item.arg is not None else item.type
        total += _STRING_WEIGHT if t.kind == "string" else 1.0
    return total


def _ordered(plan: LogicalPlan, ctx: OptimizerContext) -> LogicalPlan:
    """The join tree the join-order rule would build (its estimate is the one to trust: a MultiJoin's
    own is a rough default)."""
    from engine.optimizer.rules.order_joins import order_joins
    return order_joins(plan, ctx) if isinstance(plan, MultiJoin) else plan


def _connected(inputs: tuple[LogicalPlan, ...], conditions: list[Expr]) -> bool:
    """Whether ``conditions`` join every one of ``inputs`` to the others (no cross product)."""
    if len(inputs) == 1:
        return True
    groups = [set(i.field_ids()) for i in inputs]
    reached = {0}
    changed = True
    while changed:
        changed = False
        ids = set().union(*(groups[i] for i in reached))
        for c in conditions:
            cols = c.column_ids()
            if cols & ids:
                for j, g in enumerate(groups):
                    if j not in reached and cols & g:
                        reached.add(j)
                        changed = True
    return len(reached) == len(inputs)

