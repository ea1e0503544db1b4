"""Fold ``Limit`` over ``Sort`` into a top-N sort, so each partition keeps only its first N rows.

The sort keeps ``count + offset`` rows: the offset is applied by the Limit above it.

>>> from engine import types as T
>>> from engine.plan.logical import Field, SortKey, Values
>>> v = Field("v", "v", T.BIGINT)
>>> plan = Limit(Sort(Values((v,), ((3,), (1,), (2,))), (SortKey(v.ref(), ascending=False),)), 2, 1)
>>> print(top_n(plan, None).pretty())                # reads no estimates: no context needed
Limit 2 offset 1
  Sort top 3 v DESC
    Values (3 rows)
"""
from __future__ import annotations

import dataclasses

from engine.optimizer.context import OptimizerContext
from engine.plan.logical import Limit, LogicalPlan, Sort


def top_n(plan: LogicalPlan, ctx: OptimizerContext) -> LogicalPlan:
    from engine.plan.logical import map_inputs
    plan = map_inputs(plan, lambda child: top_n(child, ctx))
    if isinstance(plan, Limit) and isinstance(plan.input, Sort) and plan.count is not None:
        sort = plan.input
        return Limit(dataclasses.replace(sort, limit=plan.count + plan.offset), plan.count, plan.offset)
    return plan
