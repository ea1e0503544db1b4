"""GROUP BY one partition: the operator and the path the planner chose for it (engine.exec.aggregate_mode:
``AggregatePath``; engine.optimizer.aggregate_paths). The paths are in their own files: the hash kernels
(aggregate_kernels.py), Arrow's group_by (aggregate_arrow.py), the extended aggregates by group ids
(below, with engine.exec.extended_aggregates), and the store's metadata (storage_aggregate.py)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional

import pyarrow as pa

import kernels
from engine import types as T
from engine.core.expressions import AggCall, Call, ColumnRef, Expr
from engine.core.fields import Field
from engine.errors import BadDataError
from engine.exec import decimal128
from engine.exec.aggregate_mode import AggregateMode, AggregatePath
from engine.exec.evaluate import evaluate_array
from engine.exec.memory import held_bytes
from engine.exec.extended_aggregates import FUNCTIONS, builtin_by_ids, group_ids, is_extended
from engine.exec.distribution import grouped_output
from engine.exec.operators.base import PhysicalOperator, TaskContext, accounted, table_to_batches
from engine.exec.operators.scan import ScanExec
from engine.exec.operators.spill_partitions import SpillPartitions, hash_type, hold_or_spill
from engine.exec.operators.storage_aggregate import storage_states

from engine.exec.aggregate_states import (_STATES, _as_schema, _cast_result, _state_input, raise_unsupported,
                                          state_fields)
from engine.exec.operators.aggregate_arrow import ArrowAggregation
from engine.exec.operators.aggregate_kernels import KernelAggregation, kernel_states


def rows_path(mode: AggregateMode, keys, aggregates) -> AggregatePath:
    """How an aggregate of these keys and aggregates computes over its rows (or merges its states),
    from their types alone: an aggregate of engine.exec.extended_aggregates by dense group ids; a
    keyless COUNT(DISTINCT x) of types the kernels hold into their distinct counters; keys and states
    the hash kernels hold on the kernels; the rest (DISTINCT, other types) by Arrow's group_by."""
    if any(is_extended(call) for _, call in aggregates):
        return AggregatePath.GROUP_IDS
    if (mode == AggregateMode.SINGLE and not keys and aggregates
            and all(call.func == "count" and call.distinct and call.arg is not None
                    and kernels.supports_group_key(call.arg.type.to_arrow()) for _, call in aggregates)):
        return AggregatePath.DISTINCT_COUNT
    if kernel_states(keys, aggregates, final=mode.reads_states) is not None:
        return AggregatePath.KERNELS
    return AggregatePath.ARROW


@dataclass(frozen=True)
class HashAggregateExec(KernelAggregation, ArrowAggregation, PhysicalOperator):
    """GROUP BY one partition. ``mode`` (chosen by the planner):

    * ``PARTIAL`` — keys + partial states (leaf-level aggregation before data moves);
    * ``FINAL`` — merges partial states that arrive partitioned (or gathered) by the keys;
    * ``SINGLE`` — the whole aggregation in one step (input already partitioned by the keys, or
      DISTINCT aggregates whose partial states would not merge);
    * ``MERGE`` — as ``FINAL``, but emits the merged states (as ``PARTIAL`` does), for a further merge
      (grouping sets roll the finest grouping's states up to the coarser sets).

    ``path`` (:class:`AggregatePath`), ``coded`` and ``presize`` say how it computes; the planner sets
    them (engine.optimizer.aggregate_paths) once the stages are known, and the operator does what they
    say: it no longer looks at its input to choose. An aggregate built elsewhere (GroupingSetsExec's,
    at run time) gets ``rows_path`` of its types, with nothing coded or presized.
    """

    input: PhysicalOperator
    mode: AggregateMode
    keys: tuple[tuple[Field, Expr], ...]
    aggregates: tuple[tuple[Field, AggCall], ...]
    requires: tuple = ()          # Required per input (None: as it is), chosen by the planner
    # what of its input's store it reads instead of the rows (see stored_access), chosen by the planner
    stored: str = ""
    path: Optional[AggregatePath] = None      # how it computes over its rows (None: rows_path)
    # string columns of the scan below read as stored dictionaries, only by keys (see coded_columns)
    coded: tuple[str, ...] = ()
    presize: bool = False         # size the hash table once from an estimate: the input is an exchange's
    # MERGE on the kernels: string keys may come out as dictionary arrays (their distinct values, not
    # a copy a group), for a further merge by some of them (GroupingSetsExec sets it, at run time)
    encoded_keys: bool = False

    def __post_init__(self):
        object.__setattr__(self, "mode", AggregateMode(self.mode))    # a mode's name is accepted too
        path = rows_path(self.mode, self.keys, self.aggregates) if self.path is None else AggregatePath(self.path)
        object.__setattr__(self, "path", path)

    def stored_access(self) -> str:
        """How this aggregate could read its input's store instead of its rows, for the planner to
        choose (engine.optimizer.aggregate_paths): ``"metadata"`` — no group keys, over a bare scan:
        COUNT / MIN / MAX from segment metadata and encoded runs
        (:func:`engine.exec.operators.storage_aggregate.storage_states`; the rows where a store cannot
        answer); ``"key counts"`` — ``k, COUNT(*) ... GROUP BY k`` over a bare scan: the stored key
        column's codes counted (see ``_count_stored_keys``); ``""``: neither."""
        if self.mode.reads_states or not isinstance(self.input, ScanExec):
            return ""
        if not self.keys:
            return "metadata"
        return "key counts" if self._counted_scan_column() is not None else ""

    def output_distribution(self, inputs):
        return grouped_output(inputs[0], self.keys, self.mode.reads_states)

    @property
    def fields(self):
        if self.mode.emits_states:
            raise AttributeError("partial aggregates expose state_schema, not fields")
        return tuple(f for f, _ in self.keys) + tuple(f for f, _ in self.aggregates)

    @property
    def schema(self) -> pa.Schema:
        return self.derived("schema", (self.keys, self.aggregates, self.mode), self._schema)

    def _schema(self) -> pa.Schema:
        keys = [pa.field(f.id, f.type.to_arrow()) for f, _ in self.keys]
        if self.mode.emits_states:
            return pa.schema(keys + state_fields(self.aggregates))
        return pa.schema(keys + [pa.field(f.id, f.type.to_arrow()) for f, _ in self.aggregates])

    @property
    def children(self):
        return (self.input,)

    def describe(self) -> str:
        keys = ", ".join(str(e) for _, e in self.keys)
        aggs = ", ".join(str(a) for _, a in self.aggregates)
        how = f" path={self.path}"
        if self.stored:
            how += f" stored={self.stored}"
        if self.coded:
            how += f" coded=[{', '.join(self.coded)}]"
        if self.presize:
            how += " presized"
        return f"HashAggregate {self.mode} keys=[{keys}] aggs=[{aggs}]{how}"

    # -- execution -----------------------------------------------------------------------------
    def execute(self, partition: int, ctx: TaskContext) -> Iterator[pa.RecordBatch]:
        # memory_limit: the hash table (its groups) or the input a path holds counts against the
        # query's pool; past it the streaming kernel paths spill (partitioned hash aggregation), the
        # others fail with MemoryLimitError
        try:
            with ctx.memory.reservation("HashAggregate", spillable=bool(self.keys)) as memory:
                if self.path == AggregatePath.GROUP_IDS:
                    yield from self._extended(partition, ctx, memory)
                elif self.mode.reads_states:
                    yield from (self._kernel_final if self.path == AggregatePath.KERNELS
                                else self._arrow_final)(partition, ctx, memory)
                else:
                    yield from self._first_phase(partition, ctx, memory)
        except (OverflowError, decimal128.DecimalOverflow) as error:
            # a SUM past DECIMAL(38) (kernels' 128-bit sums, Arrow's 256-bit ones), or an AVG
            sums = ", ".join(str(call) for _, call in self.aggregates if call.func in ("sum", "avg"))
            raise BadDataError(f"{error} in {sums or 'an aggregate'}") from None

    def _extended(self, partition: int, ctx: TaskContext, memory) -> Iterator[pa.RecordBatch]:
        if self.stored == "metadata":
            # MIN / MAX of a string (collated) from the store's selection, as _first_phase does
            result = storage_states(self.aggregates, self.input, ctx)
            if result is not None:
                yield from table_to_batches(result.cast(self.schema) if self.mode == AggregateMode.PARTIAL
                                            else self._finish(result))
                return
        yield from self._by_group_ids(partition, ctx, memory)

    def _first_phase(self, partition: int, ctx: TaskContext, memory) -> Iterator[pa.RecordBatch]:
        if self.stored == "metadata":
            # COUNT(*) / MIN / MAX of a columnstore scan from its metadata and runs (None: read it)
            result = storage_states(self.aggregates, self.input, ctx)
            if result is not None:
                yield from table_to_batches(_as_schema(result, self.schema) if self.mode == AggregateMode.PARTIAL
                                            else self._finish(result))
                return
        if self.stored == "key counts":
            result = self._count_stored_keys(partition, ctx, *self._counted_scan_column())
            yield from table_to_batches(result.cast(self.schema) if self.mode == AggregateMode.PARTIAL
                                        else self._finish(result))
        elif self.path == AggregatePath.DISTINCT_COUNT:
            yield from table_to_batches(self._finish(self._count_distinct(partition, ctx, memory)))
        elif self.path == AggregatePath.KERNELS:
            yield from self._kernel_first_phase(partition, ctx, memory)
        else:
            yield from self._arrow_first_phase(partition, ctx, memory)

    def _state_schema(self) -> pa.Schema:
        return self.derived("state_schema", (self.keys, self.aggregates), lambda: pa.schema(
            [pa.field(f.id, f.type.to_arrow()) for f, _ in self.keys] + state_fields(self.aggregates)))

    def _spilled_groups(self, ctx: TaskContext) -> SpillPartitions:
        """Partitions on disk of partial states by their keys (each table is cast to the states' schema)."""
        schema = self._state_schema()
        keys = [ColumnRef(f.id, f.type) for f, _ in self.keys]
        return SpillPartitions(ctx.memory, schema, keys, [hash_type(schema.field(f.id).type) or schema.field(f.id).type
                                                          for f, _ in self.keys], ctx.params,
                               operator="HashAggregate")

    def _merged_partitions(self, parts: SpillPartitions, memory) -> Iterator[pa.Table]:
        """Each spilled partition's states merged (one row a group; no group in two partitions)."""
        states = kernel_states(self.keys, self.aggregates, final=True)
        per_group = self._group_bytes(len(states)) if states is not None else 0    # the merge's hash table
        for table in parts.each(memory, cost=lambda rows, size: max(size, rows * per_group)):
            yield self._merge_states(table.to_batches(), memory)

    def _by_group_ids(self, partition: int, ctx: TaskContext, memory) -> Iterator[pa.RecordBatch]:
        """Any mode, when an aggregate of ``engine.exec.extended_aggregates`` is among them: the input
        held whole, its keys factorized into dense group ids, then every aggregate's states (or
        merged states) computed per group id over whole columns. Past memory_limit with keys, the
        input goes to hash partitions of the keys on disk and each is aggregated alone (a group's
        rows are all in one); without keys (one group) it fails."""
        merging = self.mode.reads_states
        if not self.keys:
            batches = [b for b in accounted(self.input.execute(partition, ctx), memory) if b.num_rows]
            if merging and not batches and ctx.task != 0:
                return       # a scalar aggregate produces its one row in task 0 only
            yield from self._grouped_by_ids(batches, ctx)
            return
        keys = [ColumnRef(f.id, f.type) for f, _ in self.keys] if merging else [e for _, e in self.keys]
        held, spilled = hold_or_spill(self.input.execute(partition, ctx), memory, lambda: SpillPartitions.over(
            ctx.memory, self.input.schema, keys, ctx.params, "HashAggregate"), cost=held_bytes)
        if spilled is None:
            yield from self._grouped_by_ids(held, ctx)
            return
        for table in spilled.each(memory):
            yield from self._grouped_by_ids(table.to_batches(), ctx)

    def _grouped_by_ids(self, batches: list, ctx: TaskContext) -> Iterator[pa.RecordBatch]:
        """``_by_group_ids`` over ``batches``: every row of their groups."""
        merging = self.mode.reads_states
        schema = self.input.schema if merging else None

        def column(values: list, arrow_type) -> pa.Array:
            return pa.chunked_array(values, type=arrow_type).combine_chunks() if values else pa.array([], arrow_type)

        if merging:
            keys = [column([b.column(f.id) for b in batches], schema.field(f.id).type) for f, _ in self.keys]
        else:
            keys = [column([evaluate_array(e, b, ctx.params) for b in batches], f.type.to_arrow())
                    for f, e in self.keys]
        rows = sum(b.num_rows for b in batches)
        ids, groups, uniques = group_ids(keys, rows)
        states: dict[str, pa.Array] = {}
        for f, call in self.aggregates:
            if is_extended(call):
                function = FUNCTIONS[call.func]
                names = [f"{f.id}|{suffix}" for suffix, _ in function.states(call)]
                if merging:
                    inputs = [column([b.column(n) for b in batches], schema.field(n).type) for n in names]
                    out = function.merge(call, ids, groups, inputs)
                else:
                    inputs = [column([evaluate_array(e, b, ctx.params) for b in batches], e.type.to_arrow())
                              for e in call.arguments()]
                    out = function.update(call, ids, groups, inputs)
                states.update(zip(names, out))
                continue
            if call.distinct and not merging and call.func == "count":
                values = column([evaluate_array(call.arg, b, ctx.params) for b in batches], call.arg.type.to_arrow())
                states[f"{f.id}|count"] = builtin_by_ids("count_distinct", ids, groups, values)
                continue
            if call.distinct:
                raise_unsupported(call)
            for suffix, compute, merge in _STATES[call.func]:
                name = f"{f.id}|{suffix}"
                if merging:
                    values = column([b.column(name) for b in batches], schema.field(name).type)
                    states[name] = builtin_by_ids(merge, ids, groups, values)
                elif call.arg is None:
                    states[name] = builtin_by_ids("count_all", ids, groups, None)
                else:
                    values = column([_state_input(call, evaluate_array(call.arg, b, ctx.params)) for b in batches],
                                    _state_input(call, pa.array([], call.arg.type.to_arrow())).type)
                    states[name] = builtin_by_ids(compute, ids, groups, values)
        result = pa.table(list(uniques) + list(states.values()),
                          names=[f.id for f, _ in self.keys] + list(states))
        if self.mode.emits_states:
            yield from table_to_batches(result.cast(self.schema))
        else:
            yield from table_to_batches(self._finish(result))

    def _finish_or_states(self, merged: pa.Table) -> pa.Table:
        if self.mode != AggregateMode.MERGE:
            return self._finish(merged)
        schema = self.schema
        if self.encoded_keys:       # dictionary-encoded keys stay encoded (their values are the keys')
            schema = pa.schema([merged.schema.field(i) if pa.types.is_dictionary(merged.schema.field(i).type)
                                and merged.schema.field(i).type.value_type == field.type else field
                                for i, field in enumerate(schema)])
        return merged.cast(schema)

    def _finish(self, states: pa.Table) -> pa.Table:
        """Turn merged states into SQL results: AVG = SUM / COUNT, COUNT of nothing = 0, types exact."""
        columns = [states.column(f.id) for f, _ in self.keys]
        names = [f.id for f, _ in self.keys]
        batch = None           # the states as one batch, made for AVG's division only
        for f, call in self.aggregates:
            target = f.type.to_arrow()
            if is_extended(call):
                function = FUNCTIONS[call.func]
                column = function.finish(call, [states.column(f"{f.id}|{suffix}").combine_chunks()
                                                for suffix, _ in function.states(call)])
            elif call.func in ("count", "count_star"):
                column = states.column(f"{f.id}|count")
                if column.null_count:
                    column = column.fill_null(0)
            elif call.func == "avg":
                total = ColumnRef(f"{f.id}|sum", T.from_arrow(states.schema.field(f"{f.id}|sum").type))
                count = ColumnRef(f"{f.id}|count", T.BIGINT)
                if batch is None:
                    batches = states.combine_chunks().to_batches()
                    batch = batches[0] if batches else pa.RecordBatch.from_pylist([], schema=states.schema)
                column = evaluate_array(Call("divide", (total, count), f.type), batch)
            else:
                column = states.column(f"{f.id}|{_STATES[call.func][0][0]}")
            if column.type != target:
                column = _cast_result(column, target)
            columns.append(column)
            names.append(f.id)
        return pa.table(columns, names=names)
