"""Inner joins whose rows only prove existence become semi joins.

The right input of a semi or anti join (EXISTS, IN, NOT IN) is read only for the set of its key values
(and the columns its residual compares): how many times a value occurs does not matter. An inner join
there whose output columns read above all come from one of its sides only filters that side: it may
keep each row of that side once, as a semi join, instead of once per partner. TPC-DS q95 tests
``ws_order_number IN (SELECT ws_order_number FROM ws_wh)`` where ``ws_wh`` self-joins web_sales on the
order number with different warehouses: inner, 6.6M pairs at SF 1; as a semi join, the 720k lines
whose order has another warehouse (and the semi join on ``<>`` needs no pairs at all).

The same holds below the rewritten join (its filtering side is read for existence too) and through
projections, filters, DISTINCT (an aggregate without aggregate functions) and other semi joins; and
below a GROUP BY whose aggregates are only MIN / MAX / ANY_VALUE or DISTINCT ones (or none), which
reads its input as a set as well: TPC-DS q37 / q82 group items that have inventory and catalog sales,
and joined inner, each item's inventory rows met each of its sales.

>>> from engine import types as T
>>> from engine.plan.logical import Field, Values
>>> a, k, b = (Field(n, n, T.BIGINT) for n in ("a", "k", "b"))
>>> outer, left, right = Values((a,), ((1,),)), Values((k,), ((1,), (2,))), Values((b,), ((1,), (1,)))
>>> pairs = Join(left, right, "inner", (k.ref(),), (b.ref(),))
>>> print(existence_joins(Join(outer, Project(pairs, ((k, k.ref()),)), "semi", (a.ref(),), (k.ref(),)), None).pretty())
Join semi ON a = k
  Values (1 rows)
  Project k
    Join semi ON k = b
      Values (2 rows)
      Values (2 rows)
"""
from __future__ import annotations

import dataclasses
from typing import Optional

from engine.optimizer.context import OptimizerContext
from engine.plan.logical import Aggregate, Filter, Join, LogicalPlan, Project

_FILTERING = ("semi", "anti", "anti_null_aware")
# aggregates that one copy of each input row gives the same result as several
_DUPLICATE_FREE = ("min", "max", "any_value", "collated_min", "collated_max")


def existence_joins(plan: LogicalPlan, ctx: OptimizerContext) -> LogicalPlan:
    from engine.plan.logical import map_inputs
    plan = map_inputs(plan, lambda child: existence_joins(child, ctx))
    if isinstance(plan, Join) and plan.kind in _FILTERING:
        reduced = as_set(plan.right, _right_reads(plan))
        if reduced is not None:
            return dataclasses.replace(plan, right=reduced)
    if isinstance(plan, Aggregate) and plan.keys and not plan.grouping_sets and \
            all(c.distinct or c.func in _DUPLICATE_FREE for _, c in plan.aggregates):
        # GROUP BY without aggregates (DISTINCT) or with only MIN / MAX / DISTINCT ones reads a set too
        reads: set[str] = set()
        for _, e in plan.keys:
            reads |= e.column_ids()
        for _, c in plan.aggregates:
            for a in c.arguments():
                reads |= a.column_ids()
        reduced = as_set(plan.input, reads)
        if reduced is not None:
            return dataclasses.replace(plan, input=reduced)
    return plan


def _right_reads(join: Join) -> set[str]:
    """Columns of a join's right input that the join reads: its keys and what its residual compares."""
    ids: set[str] = set()
    for key in join.right_keys:
        ids |= key.column_ids()
    if join.residual is not None:
        ids |= join.residual.column_ids()
    return ids & join.right.field_ids()


def as_set(plan: LogicalPlan, needed: set[str]) -> Optional[LogicalPlan]:
    """``plan`` rewritten for a reader of only the columns ``needed`` that ignores duplicate rows (the
    same set of values of those columns, maybe fewer copies), or None when nothing changes."""
    if not needed:
        return None
    if isinstance(plan, Project):
        kept = tuple((f, e) for f, e in plan.exprs if f.id in needed)
        below: set[str] = set()
        for _, e in kept:
            below |= e.column_ids()
        inner = as_set(plan.input, below)
        if inner is None:
            return None
        return Project(inner, kept)
    if isinstance(plan, Filter):
        inner = as_set(plan.input, needed | plan.predicate.column_ids())
        return None if inner is None else dataclasses.replace(plan, input=inner)
    if isinstance(plan, Aggregate):
        if plan.aggregates or plan.grouping_sets or not plan.keys:
            return None                 # a count or sum reads every copy; an empty input gives one row
        below = set()
        for _, e in plan.keys:
            below |= e.column_ids()
        inner = as_set(plan.input, below)
        return None if inner is None else dataclasses.replace(plan, input=inner)
    if not isinstance(plan, Join):
        return None
    if plan.kind in _FILTERING:
        inner = as_set(plan.left, needed | _left_reads(plan))
        return None if inner is None else dataclasses.replace(plan, left=inner)
    if plan.kind != "inner" or not plan.left_keys:
        return None
    if needed <= plan.left.field_ids():
        left, right, left_keys, right_keys = plan.left, plan.right, plan.left_keys, plan.right_keys
    elif needed <= plan.right.field_ids():
        left, right, left_keys, right_keys = plan.right, plan.left, plan.right_keys, plan.left_keys
    else:
        return None
    semi = Join(left, right, "semi", left_keys, right_keys, plan.residual)
    left = as_set(left, needed | _left_reads(semi))
    right = as_set(right, _right_reads(semi))
    return dataclasses.replace(semi, left=left or semi.left, right=right or semi.right)


def _left_reads(join: Join) -> set[str]:
    ids: set[str] = set()
    for key in join.left_keys:
        ids |= key.column_ids()
    if join.residual is not None:
        ids |= join.residual.column_ids()
    return ids & join.left.field_ids()
