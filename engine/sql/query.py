"""Queries: bind, optimize, plan physically, cut into stages, run on the runner.

A bound query may carry init plans, each planned apart and run before the main plan: a WITH query that
several references read (``engine.optimizer.ctes``), whose result is put into the stages that read it,
and uncorrelated scalar subqueries, whose single value becomes a parameter of the plans after them.
"""
from __future__ import annotations

import dataclasses
import time
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from engine.catalog import Catalog
from engine.errors import BadDataError, MemoryLimitError
from engine.exec.answer import ANSWER, SpilledAnswer, answer_spill
from engine.exec.memory import MemoryPool, SpilledRows, statement_memory_limit
from engine.exec.operators.base import PhysicalOperator
from engine.exec.operators.cte_scan import CteScanExec
from engine.exec.operators.exchange import ExchangeExec
from engine.exec.operators.scan import ScanExec
from engine.exec.profile import QueryProfile
from engine.exec.statement_warnings import Warnings, statement_sink
from engine.exec.stages import StageSpec, explain_physical, operator_names, split_stages
from engine.optimizer import optimize_logical
from engine.optimizer.cardinality import Estimator
from engine.optimizer.context import OptimizerContext
from engine.optimizer.ctes import materialize_ctes
from engine.optimizer.physical import PhysicalPlanner
from engine.optimizer.rules.merge_scalar_aggregates import merge_scalar_subqueries
from engine.plan.binder import Binder
from engine.plan.logical import Field, LogicalPlan, Query
from engine.result import ColumnInfo, Result


@dataclass(frozen=True)
class InitPlan:
    """A plan run before the main one: a materialized CTE (``cte`` its name; ``reads``: how many
    references read it) or, with ``cte`` None, scalar subqueries: its column ``i`` is the value of
    ``$subquery<values[i]>`` (several where one aggregation over a shared tree computes them all:
    engine.optimizer.rules.merge_scalar_aggregates). CTEs come first, in the order of their CteScan
    numbers; the scalar subqueries follow in the order of their first ``$subqueryN``."""

    root: PhysicalOperator
    stages: tuple[StageSpec, ...]
    cte: Optional[str] = None
    reads: int = 0
    values: tuple[int, ...] = ()


# cte_max_recursion_depth of the session running the statement (engine.session sets it per call)
recursion_depth_limit: ContextVar[int] = ContextVar("recursion_depth_limit", default=1000)


@dataclass(frozen=True)
class RecursivePlan:
    """A recursive WITH query (engine.plan.recursive_ctes): the anchor's stages run once, the step's
    over the last round's rows (CteScan ``work_index``) until a round adds none; all rows are CteScan
    ``result_index``."""

    name: str
    result_index: int
    work_index: int
    anchor: tuple[StageSpec, ...]
    step: tuple[StageSpec, ...]
    distinct: bool


@dataclass(frozen=True)
class PlannedQuery:
    """One query ready to run: stages of each init plan (in order), then the main plan's stages."""

    init_plans: tuple[InitPlan, ...]
    root: PhysicalOperator
    stages: tuple[StageSpec, ...]
    fields: tuple[Field, ...]
    names: tuple[str, ...]
    logical: LogicalPlan
    # id(operator) -> (estimated rows, what the estimate rests on), for EXPLAIN; the operators are alive
    # as long as this plan is, so their ids stay unique
    estimates: dict = field(default_factory=dict, compare=False)
    recursive: tuple[RecursivePlan, ...] = ()       # run first, in order

    def result_columns(self) -> tuple[list, list]:
        """(the Arrow type, ColumnInfo) of each result column: made once per plan (a cached plan runs
        many times), not on every run."""
        made = self.__dict__.get("_result_columns")
        if made is None:
            made = ([f.type.to_arrow() for f in self.fields],
                    [column_info(name, f) for f, name in zip(self.fields, self.names)])
            self.__dict__["_result_columns"] = made       # frozen dataclass: not through setattr
        return made


def plan_query(node: exp.Expression, catalog: Catalog, database: Optional[str], statistics,
               num_partitions: int) -> PlannedQuery:
    binder = Binder(catalog, database)
    binder.recursive_ctes = []
    query: Query = binder.bind_statement(node)
    ctx = OptimizerContext(Estimator(statistics), num_partitions=num_partitions,
                           num_tasks=getattr(getattr(statistics, "runner", None), "num_leaves", None))
    query, ctes = materialize_ctes(query, binder.cte_uses, ctx, lambda plan: optimize_logical(plan, ctx),
                                   lambda plan: PhysicalPlanner(ctx).plan_cost(optimize_logical(plan, ctx)),
                                   first_index=2 * len(binder.recursive_ctes))
    init_plans = []
    planner = PhysicalPlanner(ctx)
    recursive = tuple(RecursivePlan(cte.name, cte.result_index, cte.work_index,
                                    tuple(split_stages(planner.plan(optimize_logical(cte.anchor, ctx)))),
                                    tuple(split_stages(planner.plan(optimize_logical(cte.step, ctx)))), cte.distinct)
                      for cte in binder.recursive_ctes)
    for cte in ctes:
        root = planner.plan(cte.plan)
        init_plans.append(InitPlan(root, tuple(split_stages(root)), cte.name, cte.reads))
    for plan, values in merge_scalar_subqueries(query.subqueries):
        root = planner.plan(optimize_logical(plan, ctx))
        init_plans.append(InitPlan(root, tuple(split_stages(root)), values=values))
    logical = optimize_logical(query.root, ctx)
    root = planner.plan(logical)
    estimates = {op_id: (ctx.estimator.rows(node), ctx.estimator.source(node), planner.cost_text(op_id))
                 for op_id, node in planner.logical_of.items()}
    return PlannedQuery(tuple(init_plans), root, tuple(split_stages(root)), query.root.fields,
                        query.names, logical, estimates, recursive)


def run_query(planned: PlannedQuery, runner, profiles: Optional[list[QueryProfile]] = None,
              spill_answer: "bool | str" = False) -> Result:
    """``profiles``: when a list, one QueryProfile per plan run (the init plans', then the main one's)
    is appended to it (EXPLAIN ANALYZE). ``spill_answer``: the answer goes to a client, which reads it
    as it fetches, or to a writer that streams it (a string: what the answer is called, e.g.
    ``INSERT ... SELECT``): past memory_limit it may stay on disk (``Result.table`` is then an
    engine.exec.answer.SpilledAnswer); otherwise it is held whole (the caller wants a Table)."""
    # the statement's warnings (SHOW WARNINGS): every plan of the query records into one sink
    warnings = Warnings()
    token = statement_sink.set(warnings)
    try:
        result = _run_plans(planned, runner, profiles, spill_answer)
    finally:
        statement_sink.reset(token)
    result.warnings = warnings.result()
    return result


def _run_plans(planned: PlannedQuery, runner, profiles: Optional[list[QueryProfile]], spill_answer) -> Result:
    def run(stages, params, spill_as: Optional[str] = None):
        token = answer_spill.set(spill_as)
        try:
            if profiles is None:
                return runner.run(stages, params)
            profiles.append(QueryProfile())
            start = time.perf_counter()
            table = runner.run(stages, params, profile=profiles[-1])
            profiles[-1].seconds = time.perf_counter() - start
            return table
        finally:
            answer_spill.reset(token)

    # the scalar subqueries' values by $subquery number, each set by the init plan computing it
    params: list = [None] * sum(len(init.values) for init in planned.init_plans)
    # results of the materialized CTEs, by CteScan number: the recursive ones' (and their working
    # tables) first
    ctes: list = [None] * (2 * len(planned.recursive))
    # the materialized CTEs are held (here, and shipped with the stages reading them) until the
    # query ends: together they count against memory_limit; one that does not fit goes to disk
    pool = MemoryPool(statement_memory_limit.get())
    held = pool.reservation("a materialized CTE")
    spilled: list[SpilledAnswer] = []   # CTEs whose init plan's answer went to disk: read there
    try:
        for recursive in planned.recursive:
            ctes[recursive.result_index] = run_recursive(
                recursive, lambda stages: run(with_ctes(stages, ctes), params), ctes, held)
            ctes[recursive.work_index] = None
        for init in planned.init_plans:
            # a CTE's answer may go to disk as it is made (its references read the file as a stream); a
            # scalar subquery's too, so that one of many rows fails as one that returns more than a row
            table = run(with_ctes(init.stages, ctes), params,
                        spill_as="CTE " + init.cte if init.cte is not None else SUBQUERY)
            if init.cte is not None:
                if isinstance(table, SpilledAnswer):
                    spilled.append(table)
                    ctes.append(table.spilled_rows())
                else:
                    ctes.append(table if held.try_grow(table.nbytes) else _spilled_cte(pool, init.cte, table))
                continue
            if isinstance(table, SpilledAnswer):        # far more than one row
                table.close()
                raise BadDataError(f"Subquery returns more than 1 row (scalar subquery $subquery{init.values[0]} "
                                   f"returned {table.num_rows})")
            for column, index in enumerate(init.values):
                params[index] = _scalar_value(table, column, index)
        name = (spill_answer if isinstance(spill_answer, str) else ANSWER) if spill_answer else None
        table = run(with_ctes(planned.stages, ctes), params, spill_as=name)
    finally:
        if profiles:
            profiles[-1].add_spilled(pool.spilled_by)
        pool.close()                    # the spilled CTEs' files: nobody reads them any more
        for answer in spilled:
            answer.close()
    return query_result(table, planned.fields, planned.names, planned.result_columns())


def run_recursive(recursive: RecursivePlan, run, ctes: list, held) -> pa.Table:
    """All rows of a recursive WITH query: the anchor's, then each round of the step over the rows the
    round before produced, until one produces none (UNION DISTINCT: none not seen before). Past
    ``cte_max_recursion_depth`` rounds it is MySQL's error 3636. The rows count against memory_limit
    (``held``) as they are made: past it the statement fails, naming the query (they are not spilled)."""
    limit = recursion_depth_limit.get()
    def hold(table: pa.Table, rounds: int) -> None:
        if not held.try_grow(table.nbytes):
            raise MemoryLimitError(f"WITH RECURSIVE {recursive.name}: its rows after {rounds} rounds need more "
                                   f"than memory_limit")

    rows = _as_table(run(recursive.anchor))
    if recursive.distinct:
        rows = _new_rows(rows, None)
    hold(rows, 0)
    parts, seen, work, rounds = [rows], rows, rows, 0
    while work.num_rows:
        if rounds >= limit:
            raise BadDataError(f"Recursive query aborted after {rounds + 1} iterations. Try increasing "
                               f"@@cte_max_recursion_depth to a larger value (WITH RECURSIVE {recursive.name})")
        rounds += 1
        ctes[recursive.work_index] = work
        produced = _as_table(run(recursive.step), like=rows)
        if recursive.distinct:
            produced = _new_rows(produced, seen)
            seen = pa.concat_tables([seen, produced])
        hold(produced, rounds)
        parts.append(produced)
        work = produced
    return pa.concat_tables(parts).combine_chunks()


def _as_table(answer, like: Optional[pa.Table] = None) -> pa.Table:
    """A plan's answer with the columns named by position (c0, c1, ...) and typed as ``like``'s, so the
    rounds' tables concatenate."""
    table = answer if isinstance(answer, pa.Table) else pa.Table.from_batches(list(answer))
    names = [f"c{i}" for i in range(table.num_columns)]
    if like is None:
        return pa.Table.from_arrays(table.columns, names=names)
    return pa.Table.from_arrays([c if c.type == t else c.cast(t) for c, t in zip(table.columns, like.schema.types)],
                                schema=like.schema)


def _new_rows(rows: pa.Table, seen: Optional[pa.Table]) -> pa.Table:
    """The distinct rows of ``rows`` not in ``seen`` (NULLs equal, as UNION DISTINCT compares)."""
    names = rows.column_names
    marked = rows.append_column("__round", pa.array(np.ones(rows.num_rows, np.int8)))
    if seen is not None and seen.num_rows:
        marked = pa.concat_tables([seen.append_column("__round", pa.array(np.zeros(seen.num_rows, np.int8))),
                                   marked])
    grouped = marked.group_by(names, use_threads=False).aggregate([("__round", "min")])
    kept = grouped.filter(pc.equal(grouped["__round_min"], 1)).select(names)
    return pa.Table.from_arrays(kept.columns, schema=rows.schema)


SUBQUERY = "Subquery"      # a scalar subquery's answer, on disk (EXPLAIN ANALYZE, the error past its bound)


def _spilled_cte(pool: MemoryPool, name: str, table: pa.Table) -> SpilledRows:
    """A CTE's result past memory_limit: written to disk (Arrow IPC, LZ4), read by its references."""
    spilled = pool.spill_file(table.schema, "CTE " + name)
    for batch in table.to_batches(max_chunksize=1 << 16):
        spilled.write(batch)
    return spilled.spilled_rows()


def _scalar_value(table: pa.Table, column: int, index: int):
    """The value of scalar subquery ``$subquery<index>``, column ``column`` of its init plan's result
    (NULL for no row)."""
    if table.num_rows > 1:
        raise BadDataError(f"Subquery returns more than 1 row (scalar subquery $subquery{index} "
                           f"returned {table.num_rows})")
    return table.column(column)[0].as_py() if table.num_rows else None


def scalar_values(subqueries: tuple[Query, ...], statistics, runner) -> list:
    """The values of uncorrelated scalar subqueries (a bound query's init plans), each planned and run
    in turn (a later one may read an earlier one's value): what a row-local DELETE / UPDATE puts into
    the predicate storage evaluates (engine.sql.dml.RowChange)."""
    if not subqueries:
        return []
    ctx = OptimizerContext(Estimator(statistics), num_partitions=runner.num_partitions,
                           num_tasks=getattr(runner, "num_leaves", None))
    planner = PhysicalPlanner(ctx)
    values: list = []
    for sub in subqueries:
        root = planner.plan(optimize_logical(sub.root, ctx))
        values.append(_scalar_value(runner.run(tuple(split_stages(root)), values), 0, len(values)))
    return values


def reads_tables(op: PhysicalOperator) -> bool:
    """Whether an operator tree scans a stored table."""
    return isinstance(op, ScanExec) or any(reads_tables(child) for child in op.children)


def with_ctes(stages: tuple[StageSpec, ...], ctes: list[pa.Table]) -> tuple[StageSpec, ...]:
    """``stages`` with each CteScanExec holding its CTE's result, so a stage carries what it reads to
    wherever it runs (the aggregator or every leaf, on any runner), as a VALUES stage carries its rows."""
    if not ctes:
        return stages

    def bind(op: PhysicalOperator) -> PhysicalOperator:
        if isinstance(op, CteScanExec):
            return dataclasses.replace(op, table=ctes[op.index])
        replaced = {}
        for f in dataclasses.fields(op):
            value = getattr(op, f.name)
            if isinstance(value, PhysicalOperator):
                new = bind(value)
                if new is not value:
                    replaced[f.name] = new
            elif isinstance(value, tuple) and value and all(isinstance(v, PhysicalOperator) for v in value):
                new = tuple(bind(v) for v in value)
                if any(a is not b for a, b in zip(new, value)):
                    replaced[f.name] = new
        return dataclasses.replace(op, **replaced) if replaced else op

    return tuple(dataclasses.replace(stage, root=root) if root is not stage.root else stage
                 for stage, root in ((stage, bind(stage.root)) for stage in stages))


def query_result(table: pa.Table, fields: tuple[Field, ...], names: tuple[str, ...],
                 described: Optional[tuple[list, list]] = None) -> Result:
    """Name the result columns as the user wrote them and describe them for clients. ``described``:
    (Arrow types, ColumnInfos) of the columns when the caller has them already."""
    targets, infos = described if described is not None else \
        ([f.type.to_arrow() for f in fields], [column_info(name, f) for f, name in zip(fields, names)])
    if isinstance(table, SpilledAnswer):     # on disk: each batch named and cast as it is read
        schema = pa.schema([pa.field(name, target) for name, target in zip(names, targets)])

        def conform(batch: pa.RecordBatch) -> pa.RecordBatch:
            return pa.RecordBatch.from_arrays([c if c.type == t else c.cast(t) for c, t in zip(batch.columns, targets)],
                                              schema=schema)
        return Result(table.map(conform, schema), list(infos), table.num_rows)
    arrays = []
    for i, target in enumerate(targets):
        column = table.column(i)
        if column.type != target:
            column = column.cast(target)
        arrays.append(column)
    result = pa.Table.from_arrays(arrays, names=list(names)) if arrays else pa.table({})
    return Result(result, list(infos), result.num_rows)


def column_info(name: str, f: Field) -> ColumnInfo:
    t = f.type
    return ColumnInfo(name=name, arrow_type=t.to_arrow(), sql_type=t.name, nullable=f.nullable,
                      precision=t.precision if t.kind == "decimal" else None,
                      scale=t.scale if t.kind == "decimal" else None,
                      display_size=t.length)


@dataclass(frozen=True)
class ExplainPart:
    """One plan of an EXPLAIN (an init plan, or the main plan last): its heading (None for the main
    plan), its root, and what to say of each operator: ``estimate(op)`` (cost and estimated rows) and
    ``actual(op)`` (EXPLAIN ANALYZE's counters; "" without them). The text and the picture
    (:mod:`engine.sql.plan_picture`) are both drawn from these."""

    heading: Optional[str]
    root: PhysicalOperator
    estimate: Callable[[PhysicalOperator], str]
    actual: Callable[[PhysicalOperator], str]


def explain_parts(planned: PlannedQuery, profiles: Optional[list[QueryProfile]] = None) -> list[ExplainPart]:
    """Each operator's estimated rows and their source (exact row counts, a histogram, distinct counts
    only, or a default selectivity), and with ``profiles`` (one per plan, as :func:`run_query` fills
    them) what actually happened."""
    def estimate(op) -> str:
        rows, source, _ = planned.estimates.get(id(op.input if isinstance(op, ExchangeExec) else op),
                                                (None, None, None))
        # "cost X ms" with its inputs' (an exchange's includes its move), then alternatives rejected by cost
        costed = planned.estimates.get(id(op), (None, None, None))[2]
        spent = f"({costed}) " if costed is not None else ""
        return spent + f"(est. {rows:,.0f} rows: {source})" if rows is not None else spent.strip()

    def actual_of(root, profile: Optional[QueryProfile]):
        if profile is None:
            return lambda op: ""
        names = operator_names(root)
        return lambda op: _actual(op, names.get(id(op)), profile)

    plans = [init.root for init in planned.init_plans] + [planned.root]
    profiles = profiles if profiles is not None else [None] * len(plans)
    parts = []
    for index, (root, profile) in enumerate(zip(plans, profiles)):
        heading = None
        if index < len(planned.init_plans):
            init = planned.init_plans[index]
            if init.cte is not None:
                heading = f"Init plan cte{index}: CTE {init.cte} materialized once, read {init.reads}x (runs first):"
            elif len(init.values) == 1:
                heading = f"Init plan $subquery{init.values[0]} (scalar, runs first):"
            else:       # one aggregation over a shared tree computes several
                names = ", ".join(f"$subquery{i}" for i in init.values)
                heading = f"Init plan {names} (scalar, one plan computes all {len(init.values)}, runs first):"
        parts.append(ExplainPart(heading, root, estimate, actual_of(root, profile)))
    return parts


def execution_summary(profiles: Optional[list[QueryProfile]]) -> str:
    """EXPLAIN ANALYZE's last line ("" without profiles)."""
    if not profiles or profiles[-1] is None:
        return ""
    spilled: dict[str, int] = {}
    for profile in profiles:
        for operator, size in profile.spilled.items():
            spilled[operator] = spilled.get(operator, 0) + size
    disk = ""
    peak = max(profile.peak for profile in profiles if profile is not None)
    if spilled:         # memory_limit: what operators wrote to disk (Arrow IPC, LZ4), by operator
        # and the most one task's operators held at once (what memory_limit bounds)
        disk = f"; peak held by a task: {_bytes(peak)}; spilled to disk: " + \
            ", ".join(f"{op} {_bytes(size)}" for op, size in sorted(spilled.items()))
    return (f"Execution: {sum(p.seconds for p in profiles) * 1000:.3f} ms (times are inclusive of "
            f"children, summed over tasks; held = largest input a blocking operator collected){disk}")


def explain_text(planned: PlannedQuery, profiles: Optional[list[QueryProfile]] = None) -> str:
    """EXPLAIN: the physical plan, each operator with its estimated rows and their source, and with
    ``profiles`` (EXPLAIN ANALYZE) also what actually happened."""
    lines = []
    for part in explain_parts(planned, profiles):
        def annotate(op, part=part):
            return "  ".join(t for t in (part.estimate(op), part.actual(op)) if t)
        text = explain_physical(part.root, annotate)
        if part.heading is not None:
            lines.append(part.heading)
            text = "\n".join("  " + line for line in text.splitlines())
        lines.append(text)
    summary = execution_summary(profiles)
    if summary:
        lines.append(summary)
    return "\n".join(lines)


def _actual(op, name, profile: QueryProfile) -> str:
    if name is None:
        return ""
    stage_id, path = name
    if isinstance(op, ExchangeExec):
        moved = profile.exchanges.get(stage_id)
        if moved is None:
            return ""
        return f"(actual {moved.describe(_bytes)})"
    counters = profile.operators.get((stage_id, path))
    if counters is None:
        return "(actual 0 rows, never ran)"
    # a blocking operator's collected input is counted on that input's path
    inputs = (profile.operators.get((stage_id, path + (i,))) for i in range(len(op.children)))
    held_bytes = max((c.held_bytes for c in inputs if c is not None), default=0)
    held = f", held {_bytes(held_bytes)}" if held_bytes else ""
    if counters.filter_rows_in:
        held += f", bloom filter kept {counters.filter_rows_kept:,} of {counters.filter_rows_in:,} rows"
    if isinstance(op, ScanExec):
        held += f", read {counters.segments_read:,} segments, {counters.rows_read:,} rows from storage"
    return (f"(actual {counters.rows:,} rows, {counters.batches} batches, {counters.seconds * 1000:.3f} ms, "
            f"{counters.tasks} tasks{held})")


def _bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB"):
        if n < 1024 or unit == "MiB":
            return f"{n:,} B" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n:,.1f} GiB"
