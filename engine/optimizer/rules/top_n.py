"""Top-N: fold ``Limit`` over ``Sort`` into a top-N sort, so each partition keeps only its first N
rows; and a filter keeping the rows ranked at most N in their window partition (``rk <= N`` over
ROW_NUMBER / RANK / DENSE_RANK) tells the window, which then takes its other columns for those rows
only (the ranks of each partition's first rows do not depend on the rows after them; every call is
still computed over all rows, and the filter stays above).

The sort keeps ``count + offset`` rows: the offset is applied by the Limit above it.

>>> from engine import types as T
>>> from engine.core.expressions import Call, Literal
>>> from engine.core.fields import WindowCall
>>> from engine.plan.logical import Field, SortKey, Values, Window
>>> v = Field("v", "v", T.BIGINT)
>>> plan = Limit(Sort(Values((v,), ((3,), (1,), (2,))), (SortKey(v.ref(), ascending=False),)), 2, 1)
>>> print(top_n(plan, None).pretty())                # reads no estimates: no context needed
Limit 2 offset 1
  Sort top 3 v DESC
    Values (3 rows)
>>> rk = Field("rk", "rk", T.BIGINT)
>>> ranked = Window(Values((v,), ((3,), (1,), (2,))), (), (SortKey(v.ref()),), ((rk, WindowCall("rank", (), T.BIGINT)),))
>>> print(top_n(Filter(ranked, Call("lt", (rk.ref(), Literal(3, T.BIGINT)), T.BOOLEAN)), None).pretty())
Filter (rk < 3)
  Window order=[v ASC] [rank() AS rk] keep rk <= 2
    Values (3 rows)
"""
from __future__ import annotations

import dataclasses
from typing import Optional

from engine.core.expressions import Call, ColumnRef, Literal, conjuncts
from engine.optimizer.context import OptimizerContext
from engine.plan.logical import Filter, Limit, LogicalPlan, Sort, Window

# the window functions whose values are 1, 2, ... over each partition's rows in window order, never
# smaller for a later row: those at most N are a prefix of each partition
_RANKS = ("row_number", "rank", "dense_rank")
_FLIPPED = {"le": "ge", "lt": "gt", "eq": "eq", "ge": "le", "gt": "lt"}


def top_n(plan: LogicalPlan, ctx: OptimizerContext) -> LogicalPlan:
    from engine.plan.logical import map_inputs
    plan = map_inputs(plan, lambda child: top_n(child, ctx))
    if isinstance(plan, Limit) and isinstance(plan.input, Sort) and plan.count is not None:
        sort = plan.input
        return Limit(dataclasses.replace(sort, limit=plan.count + plan.offset), plan.count, plan.offset)
    if isinstance(plan, Filter) and isinstance(plan.input, Window):
        window = plan.input
        ranks = {f.id for f, call in window.calls if call.func in _RANKS}
        bounds = [b for b in (_rank_bound(c, ranks) for c in conjuncts(plan.predicate)) if b is not None]
        if bounds:
            keep = min(bounds, key=lambda b: b[1])
            if window.keep is None or keep[1] < window.keep[1]:
                return dataclasses.replace(plan, input=dataclasses.replace(window, keep=keep))
    return plan


def _rank_bound(condition, ranks: set[str]) -> Optional[tuple[str, int]]:
    """(rank column, N) where ``condition`` holds only for rows whose rank column is at most N."""
    if not (isinstance(condition, Call) and condition.op in _FLIPPED and len(condition.args) == 2):
        return None
    op, (left, right) = condition.op, condition.args
    if isinstance(left, Literal):
        op, left, right = _FLIPPED[op], right, left
    if not (isinstance(left, ColumnRef) and left.id in ranks and isinstance(right, Literal)):
        return None
    value = right.value
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    n = {"le": value, "eq": value, "lt": value - 1}.get(op)
    return None if n is None else (left.id, max(n, 0))
