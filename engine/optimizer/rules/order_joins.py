"""Turn each MultiJoin into a tree of binary joins, greedily by estimated size.

Repeatedly join the two connected subtrees whose join has the smallest estimated output (never a
cross product while a connected pair exists); the smaller side of each join becomes its build (right)
side. Dynamic programming over connected subgraphs replaces this with issue 7.
"""
from __future__ import annotations

from engine.optimizer.context import OptimizerContext
from engine.plan.expressions import Call, Expr, and_all
from engine.plan.logical import Filter, Join, LogicalPlan, MultiJoin


def order_joins(plan: LogicalPlan, ctx: OptimizerContext) -> LogicalPlan:
    return _rewrite(plan, ctx)


def _rewrite(plan: LogicalPlan, ctx: OptimizerContext) -> LogicalPlan:
    plan = _map_inputs(plan, lambda child: _rewrite(child, ctx))
    if isinstance(plan, MultiJoin):
        return _greedy(plan, ctx)
    return plan


def _map_inputs(plan: LogicalPlan, fn) -> LogicalPlan:
    import dataclasses
    from engine.plan.logical import Aggregate, Limit, Project, Sort, Union
    if isinstance(plan, MultiJoin):
        return MultiJoin(tuple(fn(i) for i in plan.inputs), plan.conditions)
    if isinstance(plan, Union):
        return Union(tuple(fn(i) for i in plan.inputs), plan.fields)
    if isinstance(plan, Join):
        return dataclasses.replace(plan, left=fn(plan.left), right=fn(plan.right))
    if isinstance(plan, (Filter, Project, Aggregate, Sort, Limit)):
        return dataclasses.replace(plan, input=fn(plan.input))
    return plan


_FILTERING_JOINS = ("semi", "anti", "anti_null_aware")


def _peel_filtering_joins(plan: LogicalPlan, pending: list[Join]) -> LogicalPlan:
    """Take the EXISTS / IN semi and anti joins the binder attached to an input off it, so that the
    ordering below can apply each one where it is cheapest (TPC-H Q21 checks EXISTS for the lineitems
    of one nation's suppliers, after that join, not for all 3.8M late lineitems)."""
    while isinstance(plan, Join) and plan.kind in _FILTERING_JOINS:
        pending.append(plan)
        plan = plan.left
    return plan


def _needed_ids(join: Join) -> set[str]:
    needed = set().union(*(k.column_ids() for k in join.left_keys)) if join.left_keys else set()
    if join.residual is not None:
        needed |= join.residual.column_ids() - join.right.field_ids()
    return needed


def _greedy(node: MultiJoin, ctx: OptimizerContext) -> LogicalPlan:
    est = ctx.estimator
    trees: list[LogicalPlan] = []
    pending: list[Join] = []
    conditions = list(node.conditions)
    for child in node.inputs:
        child = _peel_filtering_joins(child, pending)
        ids = child.field_ids()
        local = [c for c in conditions if c.column_ids() and c.column_ids() <= ids]
        conditions = [c for c in conditions if c not in local]
        trees.append(Filter(child, and_all(local)) if local else child)
    while len(trees) > 1 or pending:
        best = None
        # a semi / anti join competes with the inner joins: it is applied when its output is the smallest
        for p, join in enumerate(pending):
            needed = _needed_ids(join)
            for i, tree in enumerate(trees):
                if needed <= tree.field_ids():
                    candidate = Join(tree, join.right, join.kind, join.left_keys, join.right_keys, join.residual)
                    score = (0, est.rows(candidate), est.rows(tree))
                    if best is None or score < best[0]:
                        best = (score, ("pending", p, i), candidate, [])
                    break
        for i in range(len(trees)):
            for j in range(i + 1, len(trees)):
                a, b = trees[i], trees[j]
                ids = a.field_ids() | b.field_ids()
                conds = [c for c in conditions if c.column_ids() <= ids
                         and c.column_ids() & a.field_ids() and c.column_ids() & b.field_ids()]
                connected = any(_is_equi(c, a, b) for c in conds)
                candidate = _make_join(a, b, conds, est)
                rows = est.rows(candidate)
                score = (0 if connected else 1, rows, est.rows(a) + est.rows(b))
                if best is None or score < best[0]:
                    best = (score, ("join", i, j), candidate, conds)
        if best is None:              # pending joins whose columns no single tree holds: apply on top
            break
        _, (what, a, b), joined, used = best
        if what == "pending":
            pending.pop(a)
            trees[b] = joined
            continue
        conditions = [c for c in conditions if c not in used]
        trees = [t for k, t in enumerate(trees) if k not in (a, b)] + [joined]
    result = trees[0]
    if conditions:
        result = Filter(result, and_all(conditions))
    for join in pending:
        result = Join(result, join.right, join.kind, join.left_keys, join.right_keys, join.residual)
    return result


def _is_equi(c: Expr, a: LogicalPlan, b: LogicalPlan) -> bool:
    return _split_equi(c, a.field_ids(), b.field_ids()) is not None


def _split_equi(c: Expr, left_ids, right_ids):
    if isinstance(c, Call) and c.op == "eq":
        x, y = c.args
        if x.column_ids() and y.column_ids():
            if x.column_ids() <= left_ids and y.column_ids() <= right_ids:
                return x, y
            if y.column_ids() <= left_ids and x.column_ids() <= right_ids:
                return y, x
    return None


def _make_join(a: LogicalPlan, b: LogicalPlan, conds: list[Expr], est) -> Join:
    # the larger input probes, the smaller one is built into the hash table (right side)
    if est.rows(a) < est.rows(b):
        a, b = b, a
    left_keys, right_keys, residual = [], [], []
    for c in conds:
        pair = _split_equi(c, a.field_ids(), b.field_ids())
        if pair:
            left_keys.append(pair[0])
            right_keys.append(pair[1])
        else:
            residual.append(c)
    kind = "inner" if left_keys or residual else "cross"
    return Join(a, b, kind, tuple(left_keys), tuple(right_keys), and_all(residual))
