"""Semi-join reduction of aggregates (magic sets): aggregate only the groups a join will keep.

A decorrelated subquery becomes ``Aggregate(input) GROUP BY k`` joined on ``k`` with the outer query.
When the other side of that join is small, most groups are computed only to be thrown away: TPC-H Q17
averages l_quantity for all 200,000 parts and keeps the 200 of one brand and container; Q20 sums a
year's 909k lineitem rows into 543k (part, supplier) groups to keep the ~8.5k pairs of the parts named
'forest%'. This rule filters the aggregate's input first with a semi join on the same keys against the
key values the other side holds, its *magic set* (Mumick et al., "Magic is Relevant", SIGMOD 1990;
DuckDB's delim join): a copy of that side, or of the part of it that produces the keys (an inner join's
input, the preserved side of an outer, semi or anti join: a superset of the values, which costs only
work). The semi join's Bloom filter then reaches the scan below the aggregate.

Valid where the join drops every group whose keys have no partner: either side of an inner or semi
join, the right side of a left or anti join (not NOT IN, whose NULL rule reads every row), each of the
join's keys on the aggregate's side reading only group keys (through projections and filters; not
grouping sets, whose rolled-up rows total all the values). It pays (estimates) when the magic set has
at most ``_MAX_SHARE`` of the aggregate's groups and computing it again reads at most
``_MAX_COPY_SHARE`` of the table rows the aggregate's input reads.

    Join(Project(Aggregate(lineitem) BY l_partkey), part) ON corr = p_partkey
    -> Join(Project(Aggregate(Join semi(lineitem, part') ON l_partkey = p_partkey') BY l_partkey), part)

>>> from engine import types as T
>>> from engine.optimizer.cardinality import Estimator
>>> from engine.core.expressions import AggCall
>>> from engine.plan.logical import Field, Values
>>> k, q, g, s, p = (Field(n, n, T.BIGINT) for n in ("k", "q", "g", "s", "p"))
>>> lines = Values((k, q), tuple((i, i) for i in range(200)))            # 200 rows, 200 groups
>>> sums = Aggregate(lines, ((g, k.ref()),), ((s, AggCall("sum", q.ref(), T.BIGINT)),))
>>> parts = Values((p,), ((7,), (9,)))                                   # 2 rows: 2 of the groups
>>> ctx = OptimizerContext(Estimator(None))         # Values need no table statistics
>>> print(reduce_aggregates(Join(sums, parts, "inner", (g.ref(),), (p.ref(),)), ctx).pretty())
Join inner ON g = p
  Aggregate keys=[k] aggs=[sum(q)]
    Join semi ON k = p
      Values (200 rows)
      Values (2 rows)
  Values (2 rows)
>>> print(reduce_aggregates(Join(parts, sums, "semi", (p.ref(),), (g.ref(),)), ctx).pretty())
Join semi ON p = g
  Values (2 rows)
  Aggregate keys=[k] aggs=[sum(q)]
    Join semi ON k = p
      Values (200 rows)
      Values (2 rows)
>>> "semi" in reduce_aggregates(Join(sums, parts, "left", (g.ref(),), (p.ref(),)), ctx).pretty()
False
>>> many = Values((p,), tuple((i,) for i in range(100)))                 # 100 rows: half the groups
>>> "semi" in reduce_aggregates(Join(sums, many, "inner", (g.ref(),), (p.ref(),)), ctx).pretty()
False
"""
from __future__ import annotations

import dataclasses
import itertools
from typing import Optional

from engine.core.expressions import Expr
from engine.optimizer.context import OptimizerContext
from engine.plan.logical import (Aggregate, CteScan, Filter, Join, LogicalPlan, MultiJoin, Project, Scan,
                                 Values, filter_all, map_inputs)
from engine.plan.plan_walk import refresh, substitute

# Reduce when the magic set has at most this share of the aggregate's estimated groups ...
_MAX_SHARE = 0.25
# ... and computing it again reads at most this share of the table rows the aggregate's input reads.
_MAX_COPY_SHARE = 0.5

_counter = itertools.count(1)


class _Ids:
    """Fresh column ids for a magic set's copy (``<name>#m<n>``, apart from the binder's ``#<n>``)."""

    def new(self, hint: str) -> str:
        return f"{hint}#m{next(_counter)}"


def reduce_aggregates(plan: LogicalPlan, ctx: OptimizerContext) -> LogicalPlan:
    plan = map_inputs(plan, lambda child: reduce_aggregates(child, ctx))
    if not isinstance(plan, Join) or not plan.left_keys:
        return plan
    if plan.kind in ("inner", "semi", "left", "anti"):        # the right side's unmatched groups are dropped
        reduced = _reduce(plan.right, plan.right_keys, plan.left, plan.left_keys, ctx)
        if reduced is not None:
            return dataclasses.replace(plan, right=reduced)
    if plan.kind in ("inner", "semi"):                        # and so are the left side's
        reduced = _reduce(plan.left, plan.left_keys, plan.right, plan.right_keys, ctx)
        if reduced is not None:
            return dataclasses.replace(plan, left=reduced)
    return plan


def _reduce(side: LogicalPlan, keys: tuple[Expr, ...], other: LogicalPlan, other_keys: tuple[Expr, ...],
            ctx: OptimizerContext) -> Optional[LogicalPlan]:
    """``side`` with its aggregate's input semi-joined to a magic set of ``other``, or None."""
    found = _aggregate_under(side, keys)
    if found is None:
        return None
    node, input_keys = found
    if _already_reduced(node.input, input_keys):
        return None                 # a plan optimized a second time (a CTE priced, then planned)
    needed = set().union(*(k.column_ids() for k in other_keys))
    if not needed:
        return None
    est = ctx.estimator
    budget = _MAX_COPY_SHARE * _table_rows(node.input, est)
    source = next((s for s in _sources(other, needed) if _table_rows(s, est) <= budget), None)
    if source is None or est.rows(source) > _MAX_SHARE * est.rows(node):
        return None
    copy, renamed = refresh(source, _Ids())
    fields = {f.id: f for f in copy.fields}
    mapping = {old: fields[new].ref() for old, new in renamed.items() if new in fields}
    semi = Join(node.input, copy, "semi", input_keys, tuple(substitute(k, mapping) for k in other_keys), None)
    return _rebuilt(side, dataclasses.replace(node, input=semi))


def _aggregate_under(side: LogicalPlan, keys: tuple[Expr, ...]) -> Optional[tuple[Aggregate, tuple[Expr, ...]]]:
    """(the aggregate under ``side``'s projections and filters, ``keys`` rewritten over its input)
    where every key reads group keys only; None otherwise."""
    node = side
    while isinstance(node, (Project, Filter)):      # follow the key columns down to the aggregate
        if isinstance(node, Project):
            exprs = {f.id: e for f, e in node.exprs}
            keys = tuple(substitute(k, exprs) for k in keys)
        node = node.input
    if not isinstance(node, Aggregate) or not node.keys or node.grouping_sets:
        return None      # a grouping set's rows without the key are totals over all its values
    group_exprs = {f.id: e for f, e in node.keys}
    if not all(k.column_ids() and k.column_ids() <= group_exprs.keys() for k in keys):
        return None
    return node, tuple(substitute(k, group_exprs) for k in keys)


def _rebuilt(side: LogicalPlan, aggregate: Aggregate) -> LogicalPlan:
    if isinstance(side, (Project, Filter)):
        return dataclasses.replace(side, input=_rebuilt(side.input, aggregate))
    return aggregate


def _already_reduced(plan: LogicalPlan, keys: tuple[Expr, ...]) -> bool:
    return isinstance(plan, Join) and plan.kind == "semi" and \
        tuple(map(str, plan.left_keys)) == tuple(map(str, keys))


def _sources(plan: LogicalPlan, needed: set[str]):
    """``plan``, then ever smaller parts of it that hold each value of the ``needed`` columns that
    ``plan`` holds: an inner join's input (with its own conditions), the preserved side of a left,
    semi or anti join. (Below a projection the columns have other ids: it is copied whole.)"""
    while True:
        yield plan
        if isinstance(plan, MultiJoin):
            own = next((i for i in plan.inputs if needed <= i.field_ids()), None)
            if own is None:
                return
            plan = filter_all(own, [c for c in plan.conditions if c.column_ids() <= own.field_ids()])
        elif isinstance(plan, Join) and plan.kind != "full" and needed <= plan.left.field_ids():
            plan = plan.left
        elif isinstance(plan, Join) and plan.kind == "inner" and needed <= plan.right.field_ids():
            plan = plan.right
        else:
            return


def _table_rows(plan: LogicalPlan, est) -> float:
    """The rows ``plan`` reads: each scan's table rows (before its filters), a kept CTE's, a VALUES'."""
    if isinstance(plan, Scan):
        return est.rows(dataclasses.replace(plan, filters=())) if plan.filters else est.rows(plan)
    if isinstance(plan, (CteScan, Values)):
        return est.rows(plan)
    return sum(_table_rows(i, est) for i in plan.inputs)
