"""Subqueries in any position, unnested after Neumann & Kemper ("Unnesting Arbitrary Queries", 2015),
as DuckDB does it.

A subquery used as a value (a scalar subquery, EXISTS, IN, ANY / ALL / SOME) in a WHERE condition under
OR or NOT, in the select list, in CASE, in HAVING, is bound to a :class:`SubqueryUse`: the subquery's
plan with its outer references left in place, and the field its value will arrive in. Once the clause
is bound, :func:`attach` joins each use to the plan it reads from (the *outer* plan):

1. The outer columns the subquery reads form the *domain*: the distinct values of those columns, taken
   from a copy of the outer plan (fresh column ids).
2. The dependent join of the domain with the subquery is pushed down through the subquery's operators
   (:func:`push_domain`): a filter, projection or join passes the domain columns up; an aggregate groups
   by them too (a keyless one is left-joined back to the domain, so an empty group still yields its
   one row: COUNT 0, SUM NULL); ``ORDER BY ... LIMIT`` becomes ROW_NUMBER() partitioned by the
   domain; where a subtree reads no outer column the domain is joined in as
   another input, and every outer reference above becomes a reference to a domain column. Any
   correlation predicate (equality or not, under OR, two levels out) becomes an ordinary predicate.
3. The result, reduced to at most one row per domain value (with the counts the SQL semantics need),
   is left-joined to the outer plan on the correlated columns (a NULL matching a NULL), and the use's
   value computed from it: a scalar's value (an error when a domain value has more than one row), a
   mark for EXISTS, and for ``x op ANY (S)`` the three-valued result from S's count, count of non-NULL
   values, MIN / MAX and, for ``=``, an equality match: TRUE where a value satisfies ``op``; else NULL
   where ``x`` is NULL or S holds a NULL (S not empty); else FALSE. ``x op ALL (S)`` is
   ``NOT (x op' ANY (S))`` with ``op'`` the negated comparison, ``IN`` is ``= ANY``, ``NOT IN`` is
   ``NOT (= ANY)``, so ``1 NOT IN (NULL, 2)`` is NULL and ``x > ALL (empty)`` TRUE, as in MySQL.

Outer references to queries further out (a subquery two levels deep) stay free in the result and are
pushed down when the enclosing subquery is itself attached.
"""
from __future__ import annotations

import dataclasses
import datetime
import decimal
from dataclasses import dataclass
from typing import Optional

from engine import types as T
from engine.errors import UnsupportedError
from engine.core.expressions import AggCall, Call, ColumnRef, Expr, Literal, and_all, conjuncts
from engine.plan.logical import (Aggregate, Field, Filter, Join, Limit, LogicalPlan, MultiJoin, Project,
                                 Repeat, Sort, SortKey, Union, Window, WindowCall, filter_all)
from engine.plan.plan_walk import free_refs, node_exprs, refresh, substitute
from engine.plan.scope import IdGenerator



@dataclass
class SubqueryUse:
    """One subquery used as a value. ``kind``: scalar (``plan`` has one column), exists, or any
    (``probe op ANY (plan)``; ``negate`` turns it into ``NOT``, which is how ALL and NOT IN are
    written; ``probe`` is a tuple of expressions for a row value, with ``op`` eq)."""

    kind: str
    plan: LogicalPlan
    result: Field
    probe: object = None
    op: str = "eq"
    negate: bool = False


@dataclass
class SubqueryCollector:
    """The subqueries met while binding one clause; the binder attaches them to the clause's plan."""

    uses: list[SubqueryUse] = dataclasses.field(default_factory=list)

    def add(self, use: SubqueryUse) -> ColumnRef:
        self.uses.append(use)
        return use.result.ref()


# --- the domain ----------------------------------------------------------------------------------
@dataclass
class Domain:
    """The distinct values of the outer ``columns`` a subquery reads; :meth:`make` builds one more copy
    (each appearance in the plan needs its own column ids)."""

    source: LogicalPlan
    columns: tuple[Field, ...]
    ids: IdGenerator

    def make(self) -> tuple[LogicalPlan, dict[str, Field]]:
        copy, renamed = refresh(self.source, self.ids)
        keys = tuple((Field(self.ids.new("domain"), f.name, f.type, f.nullable),
                      ColumnRef(renamed[f.id], f.type, f.name)) for f in self.columns)
        return Aggregate(copy, keys, ()), {f.id: k for f, (k, _) in zip(self.columns, keys)}


def domain_source(outer: LogicalPlan, column_ids: set[str]) -> LogicalPlan:
    """The smallest part of ``outer`` that produces every correlated column with at least each value
    ``outer`` holds: an input of an inner join (with its own conditions), the preserved side of an
    outer, semi or anti join. A superset of the values only costs work; the join back keeps the right rows."""
    if isinstance(outer, MultiJoin):
        for i in outer.inputs_:
            if column_ids <= i.field_ids():
                own = [c for c in outer.conditions if c.column_ids() <= i.field_ids()]
                return domain_source(filter_all(i, own), column_ids)
    if isinstance(outer, Join) and outer.kind != "full" and column_ids <= outer.left.field_ids():
        return domain_source(outer.left, column_ids)
    if isinstance(outer, Project) and all(isinstance(e, ColumnRef) and e.id == f.id for f, e in outer.exprs):
        return domain_source(outer.input, column_ids)
    return outer


# --- null-safe keys --------------------------------------------------------------------------------
def _zero(t: T.SqlType):
    return {"int": 0, "decimal": decimal.Decimal(0), "float": 0.0, "string": "", "bool": False,
            "date": datetime.date(1970, 1, 1), "datetime": datetime.datetime(1970, 1, 1)}.get(t.kind)


def null_safe_keys(pairs: list[tuple[Expr, Expr, bool]]) -> tuple[tuple[Expr, ...], tuple[Expr, ...]]:
    """Hash-join keys under which NULL matches NULL: a pair (a, b) both of which may be NULL becomes
    (COALESCE(a, 0), a IS NULL) = (COALESCE(b, 0), b IS NULL); where one side is never NULL a plain
    equality already is NULL-safe."""
    left, right = [], []
    for a, b, nullable in pairs:
        zero = _zero(a.type)
        if not nullable or zero is None:
            left.append(a)
            right.append(b)
            continue
        for side, e in ((left, a), (right, b)):
            side.append(Call("coalesce", (e, Literal(zero, e.type)), e.type))
            side.append(Call("is_null", (e,), T.BOOLEAN))
    return tuple(left), tuple(right)


def _domain_pairs(a: dict[str, Field], b: dict[str, Field]) -> list[tuple[Expr, Expr, bool]]:
    return [(a[k].ref(), b[k].ref(), a[k].nullable and b[k].nullable) for k in a]


# --- pushing the dependent join down ---------------------------------------------------------------
def push_domain(plan: LogicalPlan, domain: Domain, ids: IdGenerator) -> tuple[LogicalPlan, dict[str, Field]]:
    """The dependent join of ``domain`` with ``plan``: ``plan``'s fields plus the domain's, where every
    reference to a domain column has become one to the returned domain fields (outer id -> field)."""
    outer_ids = {f.id for f in domain.columns}
    if not (free_refs(plan) & outer_ids):
        d_plan, d_map = domain.make()
        if isinstance(plan, MultiJoin):
            return MultiJoin(plan.inputs_ + (d_plan,), plan.conditions), d_map
        return MultiJoin((plan, d_plan), ()), d_map
    if isinstance(plan, Filter) and not free_refs(plan.input) & outer_ids:
        bound = _bound_by_equalities(plan, outer_ids, ids)
        if bound is not None:
            return bound
    if isinstance(plan, Filter):
        child, d_map = push_domain(plan.input, domain, ids)
        predicate = _sub(plan.predicate, d_map)
        if isinstance(child, MultiJoin):        # an inner join: its filter is more join conditions
            return MultiJoin(child.inputs_, child.conditions + tuple(conjuncts(predicate))), d_map
        return Filter(child, predicate), d_map
    if isinstance(plan, Project):
        child, d_map = push_domain(plan.input, domain, ids)
        exprs = tuple((f, _sub(e, d_map)) for f, e in plan.exprs)
        return Project(child, exprs + tuple((f, f.ref()) for f in d_map.values())), d_map
    if isinstance(plan, Aggregate):
        if plan.grouping_sets:
            return _push_grouping_sets(plan, domain, ids)
        child, d_map = push_domain(plan.input, domain, ids)
        keys = tuple((f, _sub(e, d_map)) for f, e in plan.keys)
        aggs = tuple((f, substitute(a, d_map_refs(d_map))) for f, a in plan.aggregates)
        grouped_keys = tuple((Field(ids.new("domain"), f.name, f.type, f.nullable), f.ref())
                             for f in d_map.values())
        grouped_map = {k: g for k, (g, _) in zip(d_map, grouped_keys)}
        if plan.keys:
            return Aggregate(child, keys + grouped_keys, aggs), grouped_map
        # keyless: one row per domain value even where its group is empty (COUNT 0, others NULL)
        inner_aggs = tuple((Field(ids.new(f.name), f.name, f.type, True), a) for f, a in aggs)
        grouped = Aggregate(child, grouped_keys, inner_aggs)
        d_plan, d_out = domain.make()
        lkeys, rkeys = null_safe_keys(_domain_pairs(d_out, grouped_map))
        joined = Join(d_plan, grouped, "left", lkeys, rkeys)
        exprs = []
        for (f, a), (inner, _) in zip(plan.aggregates, inner_aggs):
            value: Expr = inner.ref()
            if a.func in ("count", "count_star"):
                value = Call("coalesce", (value, Literal(0, f.type)), f.type)
            exprs.append((f, value))
        return Project(joined, tuple(exprs) + tuple((f, f.ref()) for f in d_out.values())), d_out
    if isinstance(plan, MultiJoin):
        correlated = [bool(free_refs(i) & outer_ids) for i in plan.inputs_]
        inputs, maps = [], []
        for i, c in zip(plan.inputs_, correlated):
            if c:
                pushed, m = push_domain(i, domain, ids)
                inputs.append(pushed)
                maps.append(m)
            else:
                inputs.append(i)
        if not maps:                       # only the join conditions read the outer query
            d_plan, m = domain.make()
            inputs.append(d_plan)
            maps.append(m)
        d_map = maps[0]
        conditions = [_sub(c, d_map) for c in plan.conditions]
        for other in maps[1:]:            # several inputs correlated: the same domain value in each
            lkeys, rkeys = null_safe_keys(_domain_pairs(d_map, other))
            conditions += [Call("eq", (a, b), T.BOOLEAN) for a, b in zip(lkeys, rkeys)]
        return MultiJoin(tuple(inputs), tuple(conditions)), d_map
    if isinstance(plan, Repeat):
        child, d_map = push_domain(plan.input, domain, ids)
        return Repeat(child, _sub(plan.count, d_map)), d_map
    if isinstance(plan, Join) and plan.kind == "full":
        return _push_full_join(plan, domain, ids)
    if isinstance(plan, Join):
        right_correlated = bool(free_refs(plan.right) & outer_ids) or any(
            e.column_ids() & outer_ids for e in node_exprs(plan))
        left, d_map = push_domain(plan.left, domain, ids)
        kind, lkeys, rkeys, residual = plan.kind, plan.left_keys, plan.right_keys, plan.residual
        right = plan.right
        if right_correlated:
            if kind == "anti_null_aware":
                raise UnsupportedError("NOT IN over a subquery correlated two levels out; write NOT EXISTS")
            right, r_map = push_domain(plan.right, domain, ids)
            extra_l, extra_r = null_safe_keys(_domain_pairs(d_map, r_map))
            lkeys = tuple(_sub(k, d_map) for k in lkeys) + extra_l
            rkeys = tuple(_sub(k, r_map) for k in rkeys) + extra_r
            kind = "inner" if kind == "cross" else kind
            if residual is not None:
                residual = _sub(_sub(residual, d_map), r_map)
        else:
            lkeys = tuple(_sub(k, d_map) for k in lkeys)
            if residual is not None:
                residual = _sub(residual, d_map)
        return Join(left, right, kind, lkeys, rkeys, residual), d_map
    if isinstance(plan, Window):
        # each outer value's rows are windowed apart: the domain columns join the PARTITION BY
        child, d_map = push_domain(plan.input, domain, ids)
        partition = tuple(_sub(k, d_map) for k in plan.partition_by) + tuple(f.ref() for f in d_map.values())
        order = tuple(dataclasses.replace(k, expr=_sub(k.expr, d_map)) for k in plan.order_by)
        calls = tuple((f, dataclasses.replace(c, args=tuple(_sub(a, d_map) for a in c.args))) for f, c in plan.calls)
        return Window(child, partition, order, calls), d_map
    if isinstance(plan, Sort) and plan.limit is None:
        return push_domain(plan.input, domain, ids)       # order inside a subquery does not matter
    if isinstance(plan, Limit) or isinstance(plan, Sort):
        return _push_limit(plan, domain, ids)
    if isinstance(plan, Union):
        pushed = [push_domain(i, domain, ids) for i in plan.inputs_]
        d_fields = {k: Field(ids.new("domain"), f.name, f.type, f.nullable) for k, f in pushed[0][1].items()}
        inputs = []
        for (p, m), original in zip(pushed, plan.inputs_):
            fields = [Field(ids.new(f.name), f.name, f.type, f.nullable) for f in original.fields]
            exprs = tuple(zip(fields, [f.ref() for f in original.fields]))
            exprs += tuple((Field(ids.new("domain"), d.name, d.type, d.nullable), m[k].ref())
                           for k, d in d_fields.items())
            inputs.append(Project(p, exprs))
        return Union(tuple(inputs), plan.fields + tuple(d_fields.values())), d_fields
    raise UnsupportedError(f"a correlated subquery over {plan.describe().split()[0]}")


def _push_grouping_sets(plan: Aggregate, domain: Domain, ids: IdGenerator):
    """ROLLUP / CUBE / GROUPING SETS per domain value: the domain columns join every grouping set (as
    keys after the query's own, so the grouping id's bits are unchanged). A grand-total set ``()``
    yields its row even over no rows; a domain value without rows gets that row from the domain
    (anti-joined to the groups), COUNT 0 and the other aggregates NULL, every key rolled up."""
    child, d_map = push_domain(plan.input, domain, ids)
    keys = tuple((f, _sub(e, d_map)) for f, e in plan.keys)
    aggs = tuple((f, substitute(a, d_map_refs(d_map))) for f, a in plan.aggregates)
    grouped_keys = tuple((Field(ids.new("domain"), f.name, f.type, f.nullable), f.ref()) for f in d_map.values())
    grouped_map = {k: g for k, (g, _) in zip(d_map, grouped_keys)}
    extra = tuple(range(len(keys), len(keys) + len(grouped_keys)))
    sets = tuple(s + extra for s in plan.grouping_sets)
    if () not in plan.grouping_sets:
        return Aggregate(child, keys + grouped_keys, aggs, sets, plan.grouping_id), grouped_map
    # the groups under fresh ids; the union of them and the missing totals takes the query's ids
    fresh = lambda f: Field(ids.new(f.name), f.name, f.type, True)     # noqa: E731
    inner_gid = fresh(plan.grouping_id) if plan.grouping_id is not None else None
    inner_keys = tuple((fresh(f), e) for f, e in keys) + tuple((fresh(g), e) for g, e in grouped_keys)
    grouped = Aggregate(child, inner_keys, tuple((fresh(f), a) for f, a in aggs), sets, inner_gid)
    inner_map = {k: inner_keys[len(keys) + i][0] for i, k in enumerate(d_map)}
    d_plan, d_out = domain.make()
    lkeys, rkeys = null_safe_keys(_domain_pairs(d_out, inner_map))
    missing = Join(d_plan, grouped, "anti", lkeys, rkeys)
    exprs = [(fresh(f), Literal(None, f.type)) for f, _ in keys]
    exprs += [(fresh(g), d_out[k].ref()) for k, (g, _) in zip(d_map, grouped_keys)]
    for f, a in aggs:
        zero = Literal(0, f.type) if a.func in ("count", "count_star") else Literal(None, f.type)
        exprs.append((fresh(f), zero))
    if plan.grouping_id is not None:
        everything = (1 << len(keys)) - 1          # every key rolled up
        exprs.append((fresh(plan.grouping_id), Literal(everything, plan.grouping_id.type)))
    union = Union((grouped, Project(missing, tuple(exprs))), plan.fields[:len(keys)] + tuple(
        g for g, _ in grouped_keys) + plan.fields[len(keys):])
    return union, grouped_map


def _push_full_join(plan: Join, domain: Domain, ids: IdGenerator):
    """A FULL OUTER JOIN per domain value: the domain pushed into both sides (an unmatched row of
    either side is one per domain value), the sides matched on it too, and the domain column of a
    joined row is whichever side has it."""
    left, l_map = push_domain(plan.left, domain, ids)
    right, r_map = push_domain(plan.right, domain, ids)
    extra_l, extra_r = null_safe_keys(_domain_pairs(l_map, r_map))
    lkeys = tuple(_sub(k, l_map) for k in plan.left_keys) + extra_l
    rkeys = tuple(_sub(k, r_map) for k in plan.right_keys) + extra_r
    residual = None if plan.residual is None else _sub(_sub(plan.residual, l_map), r_map)
    joined = Join(left, right, "full", lkeys, rkeys, residual)
    d_out = {k: Field(ids.new("domain"), f.name, f.type, f.nullable) for k, f in l_map.items()}
    exprs = tuple((f, f.ref()) for f in joined.fields)
    exprs += tuple((d_out[k], Call("coalesce", (l_map[k].ref(), r_map[k].ref()), l_map[k].type)) for k in l_map)
    return Project(joined, exprs), d_out


def _push_limit(plan: LogicalPlan, domain: Domain, ids: IdGenerator):
    """``ORDER BY k LIMIT n OFFSET m`` per domain value: ROW_NUMBER() OVER (PARTITION BY the domain
    ORDER BY k) kept between m + 1 and m + n."""
    count, offset = (plan.limit, 0) if isinstance(plan, Sort) else (plan.count, plan.offset)
    below = plan.input
    keys: tuple[SortKey, ...] = plan.keys if isinstance(plan, Sort) else ()
    if isinstance(plan, Limit) and isinstance(below, Sort):
        if below.limit is not None:
            count = below.limit if count is None else min(count, max(below.limit - offset, 0))
        keys, below = below.keys, below.input
    child, d_map = push_domain(below, domain, ids)
    number = Field(ids.new("row_number"), "row_number", T.BIGINT, False)
    order = tuple(SortKey(_sub(k.expr, d_map), k.ascending, k.nulls_first) for k in keys)
    numbered = Window(child, tuple(f.ref() for f in d_map.values()), order,
                      ((number, WindowCall("row_number", (), T.BIGINT)),))
    kept = [Call("gt", (number.ref(), Literal(offset, T.BIGINT)), T.BOOLEAN)]
    if count is not None:
        kept.append(Call("le", (number.ref(), Literal(offset + count, T.BIGINT)), T.BOOLEAN))
    return Project(filter_all(numbered, kept), tuple((f, f.ref()) for f in child.fields)), d_map


def _bound_by_equalities(plan: Filter, outer_ids: set[str], ids: IdGenerator):
    """Where the filter equates every domain column with an expression of its input
    (``inner.k = outer.k``), the rows that pass carry their domain value already: that expression is
    the domain column and no copy of the outer query is joined in (DuckDB's delim-join elimination).
    Its NULLs are dropped, as the equality did; values no outer row holds find no partner later."""
    own = plan.input.field_ids()
    bound: dict[str, Expr] = {}
    rest: list[Expr] = []
    for c in conjuncts(plan.predicate):
        pair = _outer_equality(c, outer_ids, own)
        if pair is not None and pair[0].id not in bound:
            bound[pair[0].id] = pair[1]
        else:
            rest.append(c)
    if set(bound) != outer_ids:
        return None
    mapping = dict(bound)
    kept = [substitute(c, mapping) for c in rest]
    kept += [Call("is_not_null", (e,), T.BOOLEAN) for e in bound.values()]
    d_map = {k: Field(ids.new("domain"), "domain", e.type, False) for k, e in bound.items()}
    exprs = tuple((f, f.ref()) for f in plan.input.fields) + tuple((d_map[k], e) for k, e in bound.items())
    return Project(filter_all(plan.input, kept), exprs), d_map


def _outer_equality(c: Expr, outer_ids: set[str], own: set[str]):
    if not (isinstance(c, Call) and c.op == "eq"):
        return None
    for o, i in (c.args, c.args[::-1]):
        if isinstance(o, ColumnRef) and o.id in outer_ids and i.type == o.type \
                and i.column_ids() and i.column_ids() <= own:
            return o, i
    return None


def d_map_refs(d_map: dict[str, Field]) -> dict[str, Expr]:
    return {k: f.ref() for k, f in d_map.items()}


def _sub(e: Expr, d_map: dict[str, Field]) -> Expr:
    return substitute(e, d_map_refs(d_map))


# --- attaching a use to its outer plan ---------------------------------------------------------------
def attach(outer: LogicalPlan, uses: list[SubqueryUse], ids: IdGenerator) -> LogicalPlan:
    """``outer`` with one more field per use (``use.result``), each the value of its subquery."""
    base = outer       # every use's domain comes from the plan before any use was attached
    for use in uses:
        outer = _attach_one(outer, use, ids, base)
    return outer


def _attach_one(outer: LogicalPlan, use: SubqueryUse, ids: IdGenerator, base: LogicalPlan) -> LogicalPlan:
    if use.kind == "any" and isinstance(use.probe, tuple):
        return _attach_row_in(outer, use, ids, base)
    plan = use.plan
    if use.kind == "exists":
        plan = _strip_limit(plan)
    outer_fields = {f.id: f for f in base.fields}
    correlated = sorted(free_refs(plan) & set(outer_fields))
    domain = None
    if correlated:
        columns = tuple(outer_fields[c] for c in correlated)
        domain = Domain(domain_source(base, set(correlated)), columns, ids)
        inner, d_map = push_domain(plan, domain, ids)
    else:
        inner, d_map = plan, {}
    value_of = plan.fields[0].ref() if plan.fields else None
    columns = [f for f in outer.fields]
    if use.kind == "exists":
        counted = _grouped(inner, d_map, [("count_star", None)], ids)
        outer, (count,) = _join_back(outer, counted, d_map, columns, ids)
        value: Expr = Call("gt", (_zero_if_null(count), Literal(0, T.BIGINT)), T.BOOLEAN)
    elif use.kind == "scalar":
        value_field = plan.fields[0]
        if _at_most_one_row(plan):
            reduced = _rekey(inner, d_map, [value_field.ref()], ids)
        else:
            reduced = _grouped(inner, d_map, [("count_star", None), ("min", value_of)], ids)
            n, v = reduced.fields[-2:]
            checked = Field(ids.new("subquery"), "subquery", v.type, True)
            reduced = Project(reduced, tuple((f, f.ref()) for f in reduced.fields[:-2]) + (
                (checked, Call("single_row", (n.ref(), v.ref()), v.type)),))
        outer, (v,) = _join_back(outer, reduced, d_map, columns, ids)
        value = v
    else:
        value = _quantified(outer, inner, d_map, use, columns, ids)
        outer, value = value
    if use.negate:
        value = Call("not", (value,), T.BOOLEAN)
    return Project(outer, tuple((f, f.ref()) for f in columns) + ((use.result, value),))


def _quantified(outer, inner, d_map, use: SubqueryUse, columns, ids):
    """``probe op ANY (inner)`` from S's counts, MIN / MAX and (for =) an equality match."""
    x: Expr = use.probe
    y = use.plan.fields[0].ref()        # the pushed plan keeps the subquery's column ids
    op = use.op
    aggs = [("count_star", None), ("count", y)]
    if op in ("gt", "ge", "ne"):
        aggs.append(("min", y))
    if op in ("lt", "le", "ne"):
        aggs.append(("max", y))
    counted = _grouped(inner, d_map, aggs, ids)
    outer, values = _join_back(outer, counted, d_map, columns, ids)
    count, non_null = _zero_if_null(values[0]), _zero_if_null(values[1])
    extremes = dict(zip([f for f, _ in aggs[2:]], values[2:]))
    if op == "eq":
        matched = _grouped(inner, d_map, [("count_star", None)], ids, extra_keys=[y])
        outer, (hit,) = _join_back(outer, matched, d_map, columns, ids, extra=[x])
        witness: Expr = Call("is_not_null", (hit,), T.BOOLEAN)
    elif op == "ne":
        witness = Call("or", (Call("ne", (x, extremes["min"]), T.BOOLEAN),
                              Call("ne", (x, extremes["max"]), T.BOOLEAN)), T.BOOLEAN)
    else:
        witness = Call(op, (x, extremes["min" if op in ("gt", "ge") else "max"]), T.BOOLEAN)
    unknown = Call("or", (Call("is_null", (x,), T.BOOLEAN), Call("gt", (count, non_null), T.BOOLEAN)), T.BOOLEAN)
    value = Call("case", (Call("eq", (count, Literal(0, T.BIGINT)), T.BOOLEAN), Literal(False, T.BOOLEAN),
                          witness, Literal(True, T.BOOLEAN),
                          unknown, Literal(None, T.BOOLEAN),
                          Literal(False, T.BOOLEAN)), T.BOOLEAN)
    return outer, value


def _attach_row_in(outer, use: SubqueryUse, ids, base):
    """``(a, b) IN (SELECT c, d ...)``: TRUE where a row equals; else NULL where a row could equal
    were its NULLs (or the probe's) some value; else FALSE. Two EXISTS over the subquery, each
    correlated to the probe's columns."""
    probe, plan = use.probe, use.plan
    values = [f.ref() for f in plan.fields]
    equal = and_all([Call("eq", (x, y), T.BOOLEAN) for x, y in zip(probe, values)])
    maybe = and_all([Call("or", (Call("eq", (x, y), T.BOOLEAN), Call("or", (
        Call("is_null", (x,), T.BOOLEAN), Call("is_null", (y,), T.BOOLEAN)), T.BOOLEAN)), T.BOOLEAN)
        for x, y in zip(probe, values)])
    hit = Field(ids.new("match"), "match", T.BOOLEAN)
    possible = Field(ids.new("maybe"), "maybe", T.BOOLEAN)
    outer = _attach_one(outer, SubqueryUse("exists", Filter(plan, equal), hit), ids, base)
    outer = _attach_one(outer, SubqueryUse("exists", Filter(plan, maybe), possible), ids, base)
    value = Call("case", (hit.ref(), Literal(True, T.BOOLEAN), possible.ref(), Literal(None, T.BOOLEAN),
                          Literal(False, T.BOOLEAN)), T.BOOLEAN)
    if use.negate:
        value = Call("not", (value,), T.BOOLEAN)
    kept = tuple((f, f.ref()) for f in outer.fields if f.id not in (hit.id, possible.id))
    return Project(outer, kept + ((use.result, value),))


def _grouped(inner: LogicalPlan, d_map: dict[str, Field], aggs: list, ids: IdGenerator,
             extra_keys: Optional[list[Expr]] = None) -> LogicalPlan:
    """``inner`` aggregated per domain value (and ``extra_keys``): fields are the keys, then the aggregates."""
    keys = tuple((Field(ids.new("domain"), f.name, f.type, f.nullable), f.ref()) for f in d_map.values())
    keys += tuple((Field(ids.new("key"), "key", e.type, True), e) for e in extra_keys or [])
    calls = []
    for func, arg in aggs:
        t = T.BIGINT if func.startswith("count") else arg.type
        calls.append((Field(ids.new(func), func, t, True), AggCall(func, arg, t)))
    return Aggregate(inner, keys, tuple(calls))


def _rekey(plan: LogicalPlan, d_map, values, ids):
    keys = tuple((Field(ids.new("domain"), f.name, f.type, f.nullable), f.ref()) for f in d_map.values())
    vals = tuple((Field(ids.new("value"), "value", v.type, True), v) for v in values)
    return Project(plan, keys + vals)


def _join_back(outer, reduced, d_map, columns, ids, extra=()):
    """Left-join ``reduced`` (its first fields the domain keys in ``d_map``'s order, then ``extra``'s
    partners) to ``outer``; returns the joined plan and refs to ``reduced``'s remaining fields."""
    n = len(d_map) + len(extra)
    key_fields = reduced.fields[:n]
    pairs = [(ColumnRef(k, f.type, f.name), kf.ref(), f.nullable and kf.nullable)
             for (k, f), kf in zip(((k, next(c for c in columns if c.id == k)) for k in d_map), key_fields)]
    lkeys, rkeys = null_safe_keys(pairs)
    lkeys += tuple(extra)
    rkeys += tuple(kf.ref() for kf in key_fields[len(d_map):])
    joined = Join(outer, reduced, "left", lkeys, rkeys)
    return joined, [f.ref() for f in reduced.fields[n:]]


def _zero_if_null(e: Expr) -> Expr:
    return Call("coalesce", (e, Literal(0, e.type)), e.type)


def _at_most_one_row(plan: LogicalPlan) -> bool:
    while isinstance(plan, (Project, Filter, Sort)):
        plan = plan.input
    if isinstance(plan, Limit):
        return plan.count is not None and plan.count <= 1
    return isinstance(plan, Aggregate) and not plan.keys


def _strip_limit(plan: LogicalPlan) -> LogicalPlan:
    """EXISTS (... LIMIT n), n >= 1, is EXISTS (...): the rows' number does not matter, only whether
    there is one (an ORDER BY beside it neither)."""
    if isinstance(plan, Project):
        return dataclasses.replace(plan, input=_strip_limit(plan.input))
    if isinstance(plan, Limit) and plan.offset == 0 and (plan.count is None or plan.count >= 1):
        return _strip_limit(plan.input)
    if isinstance(plan, Sort):
        return _strip_limit(plan.input)
    return plan
