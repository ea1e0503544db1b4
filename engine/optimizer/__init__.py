"""The optimizer: logical rewrite rules in order, then physical planning with explicit exchanges."""
from __future__ import annotations

from engine.core.deadline import check_statement_deadline
from engine.optimizer.context import OptimizerContext
from engine.optimizer.rules.eager_aggregation import eager_aggregation
from engine.optimizer.rules.existence_joins import existence_joins
from engine.optimizer.rules.factor_or import factor_or
from engine.optimizer.rules.group_by_keys import group_by_keys
from engine.optimizer.rules.merge_scalar_aggregates import merge_scalar_aggregates
from engine.optimizer.rules.order_joins import order_joins
from engine.optimizer.rules.prune_columns import prune_columns
from engine.optimizer.rules.pushdown_filters import pushdown_filters
from engine.optimizer.rules.reduce_aggregates import reduce_aggregates
from engine.optimizer.rules.simplify_expressions import simplify_expressions
from engine.optimizer.rules.top_n import top_n
from engine.optimizer.rules.transitive_predicates import transitive_predicates
from engine.plan.logical import LogicalPlan

# Order matters: expressions are simplified first (every later rule reads the simpler form); one-row
# aggregates over one tree are merged while their WHERE is still above their joins (and the OR of their
# filters is then factored and pushed like any other); OR-factoring exposes join keys hidden in ORs (Q19); filters are pushed into MultiJoin inputs before join ordering (so estimates see them),
# pushed again into the scans of the ordered tree, and columns are pruned last. Inner joins that only
# prove existence (under a semi join) become semi joins once ordered, so the order saw their true sizes. Transitive predicates
# read the filters pushdown put on the MultiJoin inputs and add what they imply before joins are ordered.
# Eager aggregation splits a grouped MultiJoin in two (the part the aggregates read, grouped first, and
# the inputs that only add group keys) before each part's joins are ordered; before it, a GROUP BY of a
# table's unique key and other columns of its rows groups on the key alone (group_by_keys).
RULES = (simplify_expressions, merge_scalar_aggregates, factor_or, pushdown_filters, transitive_predicates, group_by_keys,
         eager_aggregation, order_joins,
         existence_joins, reduce_aggregates, pushdown_filters, top_n, prune_columns)


def optimize_logical(plan: LogicalPlan, ctx: OptimizerContext) -> LogicalPlan:
    # One planning may optimize a tree more than once (engine.optimizer.ctes prices the query with
    # and without a CTE materialized, then plans the one chosen): the second time is the first's
    # answer. By identity, the tree held so its id stays unique.
    done = ctx.optimized.get(id(plan))
    if done is not None and done[0] is plan:
        return done[1]
    optimized = plan
    for rule in RULES:
        check_statement_deadline()          # statement_timeout covers planning too
        optimized = rule(optimized, ctx)
    ctx.optimized[id(plan)] = (plan, optimized)
    return optimized
