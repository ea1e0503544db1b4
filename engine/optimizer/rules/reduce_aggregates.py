"""Semi-join reduction of aggregates: aggregate only the groups a join will keep.

A decorrelated scalar subquery becomes ``Aggregate(input) GROUP BY k`` joined on ``k`` with the outer
query. When the other side of that inner join is small, most groups are computed only to be thrown
away: TPC-H Q17 averages l_quantity for all 200,000 parts and keeps the 200 of one brand and container.
This rule filters the aggregate's input first with a semi join on the same keys against the small side
(which is evaluated twice: it is small). Valid for inner joins whose keys are group keys of the
aggregate: a group whose key has no partner is dropped by the join anyway.

    Join(Project(Aggregate(lineitem) BY l_partkey), part) ON corr = p_partkey
    -> Join(Project(Aggregate(Join semi(lineitem, part) ON l_partkey = p_partkey) BY l_partkey), part)

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
>>> many = Values((p,), tuple((i,) for i in range(100)))                 # 100 rows: half the groups
>>> "semi" in reduce_aggregates(Join(sums, many, "inner", (g.ref(),), (p.ref(),)), ctx).pretty()
False
"""
from __future__ import annotations

import dataclasses
from typing import Optional

from engine.optimizer.context import OptimizerContext
from engine.core.expressions import ColumnRef, Expr
from engine.plan.logical import Aggregate, Join, LogicalPlan, Project

# Reduce when the small side has at most this share of the aggregate's estimated groups.
_MAX_SHARE = 0.25


def reduce_aggregates(plan: LogicalPlan, ctx: OptimizerContext) -> LogicalPlan:
    from engine.plan.logical import map_inputs
    plan = map_inputs(plan, lambda child: reduce_aggregates(child, ctx))
    if not (isinstance(plan, Join) and plan.kind == "inner" and plan.left_keys):
        return plan
    reduced = _reduce(plan.right, plan.right_keys, plan.left, plan.left_keys, ctx)
    if reduced is not None:
        return dataclasses.replace(plan, right=reduced)
    reduced = _reduce(plan.left, plan.left_keys, plan.right, plan.right_keys, ctx)
    if reduced is not None:
        return dataclasses.replace(plan, left=reduced)
    return plan


def _reduce(side: LogicalPlan, keys: tuple[Expr, ...], other: LogicalPlan, other_keys: tuple[Expr, ...],
            ctx: OptimizerContext) -> Optional[LogicalPlan]:
    if not all(isinstance(k, ColumnRef) for k in keys):
        return None
    ids = [k.id for k in keys]
    projects: list[Project] = []
    node = side
    while isinstance(node, Project):            # follow the key columns down to the aggregate
        exprs = {f.id: e for f, e in node.exprs}
        if not all(isinstance(exprs.get(i), ColumnRef) for i in ids):
            return None
        ids = [exprs[i].id for i in ids]
        projects.append(node)
        node = node.input
    if not isinstance(node, Aggregate) or node.grouping_sets:
        return None      # a grouping set's rows without the key are totals over all its values
    group_exprs = {f.id: e for f, e in node.keys}
    if not all(i in group_exprs for i in ids):
        return None
    est = ctx.estimator
    if est.rows(other) > _MAX_SHARE * est.rows(node):
        return None
    semi = Join(node.input, other, "semi", tuple(group_exprs[i] for i in ids), tuple(other_keys), None)
    rebuilt: LogicalPlan = dataclasses.replace(node, input=semi)
    for project in reversed(projects):
        rebuilt = dataclasses.replace(project, input=rebuilt)
    return rebuilt
