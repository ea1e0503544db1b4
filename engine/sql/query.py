"""Queries: bind, optimize, plan physically, cut into stages, run on the runner.

A bound query may carry init plans (uncorrelated scalar subqueries): each is planned and run first, and
its single value becomes a parameter of the plans after it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import pyarrow as pa
from sqlglot import exp

from engine.catalog import Catalog
from engine.errors import BadDataError
from engine.exec.operators.base import PhysicalOperator
from engine.exec.stages import StageSpec, explain_physical, split_stages
from engine.optimizer import optimize_logical
from engine.optimizer.cardinality import Estimator
from engine.optimizer.context import OptimizerContext
from engine.optimizer.physical import PhysicalPlanner
from engine.plan.binder import Binder
from engine.plan.logical import Field, LogicalPlan, Query
from engine.result import ColumnInfo, Result


@dataclass(frozen=True)
class PlannedQuery:
    """One query ready to run: stages of each init plan (in order), then the main plan's stages."""

    init_plans: tuple[tuple[PhysicalOperator, tuple[StageSpec, ...]], ...]
    root: PhysicalOperator
    stages: tuple[StageSpec, ...]
    fields: tuple[Field, ...]
    names: tuple[str, ...]
    logical: LogicalPlan
    # id(operator) -> (estimated rows, what the estimate rests on), for EXPLAIN; the operators are alive
    # as long as this plan is, so their ids stay unique
    estimates: dict = field(default_factory=dict, compare=False)


def plan_query(node: exp.Expression, catalog: Catalog, database: Optional[str], statistics,
               num_partitions: int) -> PlannedQuery:
    query: Query = Binder(catalog, database).bind_statement(node)
    ctx = OptimizerContext(Estimator(statistics), num_partitions=num_partitions)
    init_plans = []
    planner = PhysicalPlanner(ctx)
    for sub in query.subqueries:
        root = planner.plan(optimize_logical(sub.root, ctx))
        init_plans.append((root, tuple(split_stages(root))))
    logical = optimize_logical(query.root, ctx)
    root = planner.plan(logical)
    estimates = {op_id: (ctx.estimator.rows(node), ctx.estimator.source(node))
                 for op_id, node in planner.logical_of.items()}
    return PlannedQuery(tuple(init_plans), root, tuple(split_stages(root)), query.root.fields,
                        query.names, logical, estimates)


def run_query(planned: PlannedQuery, runner) -> Result:
    params: list = []
    for index, (_, stages) in enumerate(planned.init_plans):
        table = runner.run(stages, params)
        if table.num_rows > 1:
            raise BadDataError(f"scalar subquery $subquery{index} returned {table.num_rows} rows; it must "
                               "return at most one")
        params.append(table.column(0)[0].as_py() if table.num_rows else None)
    table = runner.run(planned.stages, params)
    return query_result(table, planned.fields, planned.names)


def query_result(table: pa.Table, fields: tuple[Field, ...], names: tuple[str, ...]) -> Result:
    """Name the result columns as the user wrote them and describe them for clients."""
    columns = []
    arrays = []
    for i, (f, name) in enumerate(zip(fields, names)):
        column = table.column(i)
        target = f.type.to_arrow()
        if column.type != target:
            column = column.cast(target)
        arrays.append(column)
        columns.append(column_info(name, f))
    result = pa.Table.from_arrays(arrays, names=list(names)) if arrays else pa.table({})
    return Result(result, columns, result.num_rows)


def column_info(name: str, f: Field) -> ColumnInfo:
    t = f.type
    return ColumnInfo(name=name, arrow_type=t.to_arrow(), sql_type=t.name, nullable=f.nullable,
                      precision=t.precision if t.kind == "decimal" else None,
                      scale=t.scale if t.kind == "decimal" else None,
                      display_size=t.length)


def explain_text(planned: PlannedQuery) -> str:
    """EXPLAIN: the physical plan, each operator with its estimated rows and their source (exact row
    counts, a histogram, distinct counts only, or a default selectivity)."""
    def estimate(op) -> str:
        rows, source = planned.estimates.get(id(op), (None, None))
        return f"(est. {rows:,.0f} rows: {source})" if rows is not None else ""

    parts = []
    for index, (root, _) in enumerate(planned.init_plans):
        parts.append(f"Init plan $subquery{index} (scalar, runs first):")
        parts.extend("  " + line for line in explain_physical(root, estimate).splitlines())
    parts.append(explain_physical(planned.root, estimate))
    return "\n".join(parts)
