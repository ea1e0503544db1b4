"""Fold ``Limit`` over ``Sort`` into a top-N sort, so each partition keeps only its first N rows."""
from __future__ import annotations

import dataclasses

from engine.optimizer.context import OptimizerContext
from engine.plan.logical import Limit, LogicalPlan, Sort


def top_n(plan: LogicalPlan, ctx: OptimizerContext) -> LogicalPlan:
    from engine.optimizer.rules.order_joins import _map_inputs
    plan = _map_inputs(plan, lambda child: top_n(child, ctx))
    if isinstance(plan, Limit) and isinstance(plan.input, Sort) and plan.count is not None:
        sort = plan.input
        return Limit(dataclasses.replace(sort, limit=plan.count + plan.offset), plan.count, plan.offset)
    return plan
