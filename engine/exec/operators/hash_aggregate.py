from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import kernels
from engine.errors import BadDataError
from engine.exec import decimal64, decimal128
from engine.exec.aggregate_mode import AggregateMode
from engine.core.collation_keys import collation_keys
from engine.exec.evaluate import evaluate, evaluate_array
from engine.exec.extended_aggregates import FUNCTIONS, builtin_by_ids, group_ids, is_extended
from engine.exec.distribution import grouped_output
from engine.exec.operators.base import PhysicalOperator, TaskContext, accounted, table_to_batches
from engine.exec.operators.exchange import ExchangeSourceExec
from engine.exec.operators.scan import ScanExec
from engine.exec.operators.spill_partitions import SpillPartitions, hash_type
from engine.exec.operators.storage_aggregate import storage_states
from engine.core.expressions import AggCall, Call, ColumnRef, Expr
from engine.core.fields import Field
from engine import types as T

# Partial state of each aggregate, as (suffix, Arrow aggregation computing it, Arrow aggregation merging it)
_STATES = {
    "count_star": (("count", "count_all", "sum"),),
    "count": (("count", "count", "sum"),),
    "sum": (("sum", "sum", "sum"),),
    "avg": (("sum", "sum", "sum"), ("count", "count", "sum")),
    "min": (("min", "min", "min"),),
    "max": (("max", "max", "max"),),
    "any_value": (("min", "min", "min"),),       # any value of the group: the smallest is one
}


def state_fields(aggregates: tuple[tuple[Field, AggCall], ...]) -> list[pa.Field]:
    """Arrow fields of the partial states a partial aggregate emits, after its group keys."""
    out = []
    for f, call in aggregates:
        if is_extended(call):
            out.extend(pa.field(f"{f.id}|{suffix}", t) for suffix, t in FUNCTIONS[call.func].states(call))
            continue
        for suffix, _, _ in _STATES[call.func]:
            if suffix == "count":
                t = pa.int64()
            elif suffix == "sum":
                t = _sum_type(call)
            else:
                t = call.type.to_arrow()
            out.append(pa.field(f"{f.id}|{suffix}", t))
    return out


def _sum_type(call: AggCall) -> pa.DataType:
    # Integer sums are kept as DECIMAL(38, 0), as MySQL types SUM(int): Arrow's int64 sum would wrap
    # silently past 2**63.
    arg_type = call.arg.type
    if arg_type.kind == "decimal":
        return pa.decimal128(38, arg_type.scale)
    if arg_type.kind == "float":
        return pa.float64()
    return pa.decimal128(38, 0)


def _sum_decimals_as_int64(table: pa.Table, specs: list) -> tuple[pa.Table, dict[int, int]]:
    """Feed DECIMAL columns that are only summed to Arrow as their scaled int64 integers.

    Arrow's decimal128 hash sum is several times slower than its int64 one. When no value is null and
    rows x largest magnitude cannot overflow int64, the int64 sum of the scaled integers is the exact
    decimal sum. Returns the table and {spec index: scale} of the sums to turn back into decimals.
    """
    summed = {spec[0] for spec in specs if spec[1] == "sum" and isinstance(spec[0], str)}
    other_uses = {spec[0] for spec in specs if spec[1] != "sum" and isinstance(spec[0], str)}
    scaled_columns: dict[str, int] = {}
    for name in summed - other_uses:
        column = table.column(name)
        if not pa.types.is_decimal128(column.type) or column.null_count:
            continue
        chunks = [decimal64.scaled_int64(chunk) for chunk in column.chunks if len(chunk)]
        if any(chunk is None for chunk in chunks):
            continue
        largest = max((int(np.abs(chunk).max()) for chunk in chunks if len(chunk)), default=0)
        if largest * max(table.num_rows, 1) >= (1 << 62):
            continue
        as_int = pa.chunked_array([pa.array(chunk) for chunk in chunks], type=pa.int64())
        table = table.set_column(table.schema.get_field_index(name), name, as_int)
        scaled_columns[name] = column.type.scale
    scaled = {k: scaled_columns[spec[0]] for k, spec in enumerate(specs)
              if isinstance(spec[0], str) and spec[0] in scaled_columns}
    return table, scaled


def _widen_sums(table: pa.Table, specs: list) -> pa.Table:
    """Decimal columns only summed (and counted) as Arrow must sum them to notice an overflow:
    more than 18 digits in 256 bits (``decimal128.widen_for_sum``); ``_narrow_sums`` undoes it."""
    uses: dict[str, set] = {}
    for column, func in specs:
        if isinstance(column, str):
            uses.setdefault(column, set()).add(func)
    for name, funcs in uses.items():
        if "sum" in funcs and funcs <= {"sum", "count"}:
            column = table.column(name)
            wide = decimal128.widen_for_sum(column)
            if wide.type != column.type:
                table = table.set_column(table.schema.get_field_index(name), name, wide)
    return table


def _narrow_sums(columns: list) -> list:
    """Sums that ``_widen_sums`` made decimal256 back to DECIMAL(38, s), checked."""
    return [decimal128.narrow_sum(c, c.type.scale) if pa.types.is_decimal256(c.type) else c for c in columns]


def _state_input(call: AggCall, values: pa.Array) -> pa.Array:
    """The argument column as the aggregate's state accumulates it (integers summed as decimals)."""
    if call.func in ("sum", "avg") and call.arg.type.kind in ("int", "bool"):
        return values.cast(pa.int64()).cast(pa.decimal128(38, 0))
    return values


# Inputs of at least this many rows have their distinct keys estimated (a HyperLogLog pass,
# ``kernels.estimate_distinct``) and the hash table sized for them before the first insert: growing
# a table of millions of keys by doubling costs more than the inserts (a rehash per doubling, and
# fresh pages each time). Below it the table's growth is cheap.
_PRESIZE_ROWS = 1 << 16


def _reserve_for(tables, key_arrays: list, rows: int) -> None:
    """Size ``tables`` (a Factorizer or DistinctCount, and GroupedAggregates) for the estimated
    distinct values of ``key_arrays`` (one column in batches, ``rows`` rows), never for more than
    ``rows``."""
    if rows < _PRESIZE_ROWS:
        return
    estimate = kernels.estimate_distinct(key_arrays)
    if estimate is not None:
        for table in tables:
            table.reserve(min(rows, int(estimate * 1.05) + 1024))


def _occurring_values(values: pa.Array, keyed: pa.Array) -> pa.Table:
    """(k, v): each stored value of ``values`` that occurs and its key ``keyed`` (a dictionary
    array's entries whose codes occur, found by a histogram of the codes; a plain array's rows)."""
    if pa.types.is_dictionary(values.type):
        codes = values.indices.drop_null().to_numpy(zero_copy_only=False)
        present = pa.array(np.bincount(codes.astype(np.int64), minlength=len(values.dictionary)) > 0)
        table = pa.table({"k": keyed.dictionary.filter(present), "v": values.dictionary.filter(present)})
        if values.null_count:
            table = pa.concat_tables([table, pa.table({"k": pa.nulls(1, table.schema.field("k").type),
                                                       "v": pa.nulls(1, table.schema.field("v").type)})])
        return table
    return pa.table({"k": keyed, "v": values})


def _first_value_per_key(occurring: list, uniques: pa.Array, value_type: pa.DataType) -> pa.Array:
    """For each key of ``uniques``, the first stored value seen with it in ``occurring``."""
    if not occurring:
        return pa.nulls(len(uniques), value_type)
    first = pa.concat_tables(occurring).group_by("k", use_threads=False).aggregate([("v", "first")])
    where = pc.index_in(uniques, value_set=first.column("k").combine_chunks())
    return first.column("v_first").combine_chunks().take(where).cast(value_type)


class _FirstValues:
    """ANY_VALUE on the kernels' group-by path, of any type (GROUP BY a string keeps one row's value
    beside its collation key): each group's value is its first row's, taken when the group appears.
    A factorizer numbers new groups in order of their first rows, so the first row of each new group
    is where the running maximum of the ids grows (one pass, no sort of the ids)."""

    def __init__(self):
        self.chunks: list = []
        self.groups = 0

    def reserve(self, num_groups: int) -> None:
        pass

    def update(self, ids, num_groups: int, values=None, rows=None) -> None:
        if num_groups <= self.groups or values is None or not len(values):
            return
        if ids is None:                    # keyless: the first row
            self.chunks.append(values.slice(0, 1))
        else:
            running = np.maximum.accumulate(np.asarray(ids))
            grows = np.flatnonzero(running[1:] > running[:-1]) + 1
            first = np.concatenate([[0], grows]) if running[0] >= self.groups else grows
            first = first[running[first] >= self.groups]
            self.chunks.append(values.take(pa.array(first)))
        self.groups = num_groups

    def result(self, num_groups: int) -> pa.Array:
        if not self.chunks:
            return pa.nulls(num_groups)
        values = pa.concat_arrays([c.dictionary_decode() if pa.types.is_dictionary(c.type) else c
                                   for c in self.chunks])
        return values if len(values) == num_groups else pa.nulls(num_groups, values.type)


def _as_state_type(values, arg_type):
    if values is not None and arg_type is not None and values.type != arg_type \
            and not pa.types.is_dictionary(values.type):
        return values.cast(arg_type)
    return values


def _reads_coded(e: Expr, columns) -> bool:
    """Whether ``e`` is a column of ``columns`` or its collation key: an expression that keeps a
    dictionary array's codes (``_evaluate_coded``)."""
    if isinstance(e, Call) and e.op == "collation_key":
        e = e.args[0]
    return isinstance(e, ColumnRef) and e.id in columns


def _evaluate_coded(e: Expr, batch: pa.RecordBatch, params) -> pa.Array:
    """``evaluate_array`` of an expression ``_reads_coded``, a dictionary array left encoded (its
    type is the expression's over codes; ``evaluate_array`` would cast it to the plain type)."""
    result = evaluate(e, batch, params)
    if isinstance(result, pa.ChunkedArray):
        result = result.combine_chunks()
    if pa.types.is_dictionary(result.type):
        return result
    return evaluate_array(e, batch, params)


@dataclass(frozen=True)
class HashAggregateExec(PhysicalOperator):
    """GROUP BY one partition. ``mode`` (chosen by the planner):

    * ``PARTIAL`` — keys + partial states (leaf-level aggregation before data moves);
    * ``FINAL`` — merges partial states that arrive partitioned (or gathered) by the keys;
    * ``SINGLE`` — the whole aggregation in one step (input already partitioned by the keys, or
      DISTINCT aggregates whose partial states would not merge);
    * ``MERGE`` — as ``FINAL``, but emits the merged states (as ``PARTIAL`` does), for a further merge
      (grouping sets roll the finest grouping's states up to the coarser sets).
    """

    input: PhysicalOperator
    mode: AggregateMode
    keys: tuple[tuple[Field, Expr], ...]
    aggregates: tuple[tuple[Field, AggCall], ...]
    requires: tuple = ()          # Required per input (None: as it is), chosen by the planner
    # what of its input's store it reads instead of the rows (see stored_access), chosen by the planner
    stored: str = ""

    def __post_init__(self):
        object.__setattr__(self, "mode", AggregateMode(self.mode))    # a mode's name is accepted too

    def stored_access(self) -> str:
        """How this aggregate could read its input's store instead of its rows, for the planner to
        choose (engine.optimizer.stored_aggregates): ``"metadata"`` — no group keys, over a bare scan:
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
        return grouped_output(inputs[0], self.keys)

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
        return f"HashAggregate {self.mode} keys=[{keys}] aggs=[{aggs}]"

    # -- execution -----------------------------------------------------------------------------
    def execute(self, partition: int, ctx: TaskContext) -> Iterator[pa.RecordBatch]:
        # memory_limit: the hash table (its groups) or the input a path holds counts against the
        # query's pool; past it the streaming kernel paths spill (partitioned hash aggregation), the
        # others fail with MemoryLimitError
        try:
            with ctx.memory.reservation("HashAggregate", spillable=bool(self.keys)) as memory:
                if any(is_extended(call) for _, call in self.aggregates):
                    yield from self._extended(partition, ctx, memory)
                elif self.mode.reads_states:
                    yield from self._final(partition, ctx, memory)
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

    def _kernel_states(self, final: bool):
        """(aggregate index, kernel function, argument type, state name) of each partial state when
        the keys and every state run on kernels' hash group-by, else None (Acero's path). Without
        keys (one group, no factorizing) only the first phase runs on the kernels."""
        if not self.keys and final:
            return None
        if not all(kernels.supports_group_key(f.type.to_arrow()) for f, _ in self.keys):
            return None
        states = []
        for i, (f, call) in enumerate(self.aggregates):
            if call.distinct:
                return None
            if call.func == "any_value":       # any type: the value of the group's first row
                states.append((i, "first", None, f"{f.id}|min"))
                continue
            for suffix, compute, merge in _STATES[call.func]:
                name = f"{f.id}|{suffix}"
                if final:
                    func, arg_type = merge, (pa.int64() if suffix == "count" else
                                             _sum_type(call) if suffix == "sum" else call.type.to_arrow())
                else:
                    func, arg_type = compute, (call.arg.type.to_arrow() if call.arg is not None else None)
                if not kernels.supports_aggregate(func, arg_type):
                    return None
                states.append((i, func, arg_type, name))
        return states

    def _aggregate_with_kernels(self, batches, key_columns, state_columns, states, memory=None,
                                spill=None) -> pa.Table:
        """Stream ``batches`` through a Factorizer and one GroupedAggregate per state: no
        concatenation of the input; memory grows with the groups, not the rows. ``memory``: reserves
        the groups' estimated bytes after each batch; when they do not fit, ``spill(table)`` takes
        the states so far (keys and states, as this method returns them) and the aggregation starts
        afresh (without ``spill``: MemoryLimitError)."""
        aggs = [_FirstValues() if func == "first" else kernels.GroupedAggregate(func, arg_type)
                for _, func, arg_type, _ in states]
        if not self.keys:
            # One group, present even without rows (COUNT 0, SUM NULL): opened by an empty update.
            for agg, (_, func, arg_type, _) in zip(aggs, states):
                agg.update(None, 1, None if func == "count_all" else pa.array([], arg_type), rows=0)
            for batch in batches:
                for agg, (_, func, arg_type, _), values in zip(aggs, states, state_columns(batch)):
                    agg.update(None, 1, _as_state_type(values, arg_type), rows=batch.num_rows)
            return pa.table([agg.result(1) for agg in aggs], names=[name for *_, name in states])
        factorizer = kernels.Factorizer([f.type.to_arrow() for f, _ in self.keys])
        keyed = ((batch, key_columns(batch)) for batch in batches if batch.num_rows)
        if len(self.keys) == 1 and isinstance(self.input, ExchangeSourceExec):
            # The exchange's rows are all here already: estimate the keys, size the table once.
            keyed = list(keyed)
            _reserve_for([factorizer] + aggs, [keys[0] for _, keys in keyed], sum(b.num_rows for b, _ in keyed))
        names = [f.id for f, _ in self.keys] + [name for *_, name in states]
        group_bytes = self._group_bytes(len(states))
        for batch, keys in keyed:
            ids = factorizer.factorize(keys)
            groups = factorizer.num_groups
            for agg, (i, func, arg_type, name), values in zip(aggs, states, state_columns(batch)):
                agg.update(ids, groups, _as_state_type(values, arg_type))
            if memory is not None and not memory.resize(groups * group_bytes):
                if spill is None:
                    memory.grow(groups * group_bytes - memory.size, spilled=True)     # raises
                spill(pa.table(factorizer.uniques() + [agg.result(groups) for agg in aggs], names=names))
                memory.free()
                factorizer = kernels.Factorizer([f.type.to_arrow() for f, _ in self.keys])
                aggs = [_FirstValues() if func == "first" else kernels.GroupedAggregate(func, arg_type)
                        for _, func, arg_type, _ in states]
        groups = factorizer.num_groups
        columns = factorizer.uniques() + [agg.result(groups) for agg in aggs]
        return pa.table(columns, names=names)

    def _group_bytes(self, states: int) -> int:
        """A group's estimated bytes in the Factorizer and the aggregates (memory_limit's accounting):
        its keys (a string's 16 bytes of slot plus a guess at its text) and 16 bytes a state."""
        keys = 0
        for f, _ in self.keys:
            t = f.type.to_arrow()
            keys += t.bit_width // 8 if pa.types.is_primitive(t) and t.bit_width >= 8 else 48
        return 32 + keys + 16 * states

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
        for index in range(len(parts.files)):
            states = parts.read(index)
            if states.num_rows:
                memory.free()
                memory.grow(states.nbytes, spilled=True)
                yield self._merge_states(states.to_batches(), memory)

    def _merge_states(self, batches, memory) -> pa.Table:
        """Partial states (the states' schema) merged by key on the kernels or Arrow's group_by,
        typed as the states' schema (without spilling: this is what runs on a spilled partition)."""
        key_names = [f.id for f, _ in self.keys]
        states = self._kernel_states(final=True)
        if states is not None:
            result = self._aggregate_with_kernels(
                batches, lambda batch: [batch.column(name) for name in key_names],
                lambda batch: [batch.column(name) for *_, name in states], states, memory)
            for k, (_, _, _, name) in enumerate(states):     # SUM of counts: back to BIGINT
                if name.endswith("|count"):
                    result = result.set_column(len(key_names) + k, name, result.column(name).cast(pa.int64()))
            return result
        state_schema = self._state_schema()
        batches = [b for b in batches if b.num_rows]
        if not key_names:
            merged = self._merge_keyless(batches, state_schema)
            if merged is not None:
                return merged
        table = pa.Table.from_batches(batches, schema=state_schema) if batches else state_schema.empty_table()
        specs, names = [], []
        for f, call in self.aggregates:
            for suffix, _, merge in _STATES[call.func]:
                specs.append((f"{f.id}|{suffix}", merge))
                names.append(f"{f.id}|{suffix}")
        grouped = _group_by(_widen_sums(table, specs), key_names, specs)
        key_columns, agg_columns = _split_grouped(grouped, key_names)
        return pa.table(key_columns + _narrow_sums(agg_columns), names=key_names + names)

    def _merge_keyless(self, batches: list, state_schema: pa.Schema) -> Optional[pa.Table]:
        """A scalar aggregate's partial states (a row per task) merged column by column, when every
        state merges by MIN, MAX or an integer SUM (counts); None otherwise (a decimal or float sum
        is widened to notice an overflow: the general path)."""
        columns, names = [], []
        table = pa.Table.from_batches(batches, schema=state_schema)
        for f, call in self.aggregates:
            for suffix, _, merge in _STATES[call.func]:
                name = f"{f.id}|{suffix}"
                arrow_type = state_schema.field(name).type
                if merge not in ("sum", "min", "max") or (merge == "sum" and not pa.types.is_integer(arrow_type)):
                    return None
                column = table.column(name)
                if table.num_rows <= _FEW_STATES and pa.types.is_integer(arrow_type):
                    # a state a task, a few of them: Python's ints skip a compute call's ~5 us (a
                    # tiny query pays it per state); the integer sums here are counts (sums of
                    # integer values are DECIMAL states), which never overflow
                    values = [v for v in column.to_pylist() if v is not None]
                    value = _PYTHON_MERGE[merge](values) if values else None
                else:
                    value = _KEYLESS[merge](column).as_py()
                columns.append(pa.array([value], arrow_type))
                names.append(name)
        return pa.Table.from_arrays(columns, names=names)

    def _first_phase(self, partition: int, ctx: TaskContext, memory) -> Iterator[pa.RecordBatch]:
        if self.stored == "metadata":
            # COUNT(*) / MIN / MAX of a columnstore scan from its metadata and runs (None: read it)
            result = storage_states(self.aggregates, self.input, ctx)
            if result is not None:
                yield from table_to_batches(_as_schema(result, self.schema) if self.mode == AggregateMode.PARTIAL
                                            else self._finish(result))
                return
        if self._distinct_counts_on_kernels():
            result = self._count_distinct(partition, ctx, memory)
            yield from table_to_batches(self._finish(result))
            return
        counted = self._counted_scan_column() if self.stored == "key counts" else None
        if counted is not None:
            result = self._count_stored_keys(partition, ctx, *counted)
            yield from table_to_batches(result.cast(self.schema) if self.mode == AggregateMode.PARTIAL
                                        else self._finish(result))
            return
        states = self._kernel_states(final=False)
        if states is not None:
            coded = self._coded_columns()
            coded_keys = [_reads_coded(e, coded) for _, e in self.keys]
            coded_args = [call.func == "any_value" and _reads_coded(call.arg, coded) for _, call in self.aggregates]

            def key_columns(batch):
                return [_evaluate_coded(e, batch, ctx.params) if direct else evaluate_array(e, batch, ctx.params)
                        for direct, (_, e) in zip(coded_keys, self.keys)]

            def state_columns(batch):
                args = {i: _evaluate_coded(call.arg, batch, ctx.params) if coded_args[i]
                        else evaluate_array(call.arg, batch, ctx.params)
                        for i, (_, call) in enumerate(self.aggregates) if call.arg is not None}
                return [args.get(i) for i, *_ in states]

            spilled: list[SpillPartitions] = []

            def spill(table: pa.Table) -> None:
                if not spilled:
                    spilled.append(self._spilled_groups(ctx))
                for batch in table.cast(self._state_schema()).to_batches():
                    spilled[0].add(batch)

            batches = self._input_keeping_dictionaries(partition, ctx, coded) if coded else \
                self.input.execute(partition, ctx)
            result = self._aggregate_with_kernels(batches, key_columns, state_columns, states, memory,
                                                  spill if self.keys else None)
            results = [result]
            if spilled:                   # partitioned hash aggregation: merge each partition's states
                spill(result)
                del result, results
                memory.free()
                results = self._merged_partitions(spilled[0], memory)
            for result in results:
                if self.mode == AggregateMode.PARTIAL:
                    yield from table_to_batches(result.cast(self.schema))
                else:
                    yield from table_to_batches(self._finish(result))
            return
        # Arrow's group_by (DISTINCT aggregates, states the kernels lack) over the input held whole;
        # past memory_limit with keys, the input goes to hash partitions of the keys on disk and
        # each is aggregated alone (a group's rows are all in one partition)
        def spill():
            if self.keys:
                return SpillPartitions.over(ctx.memory, self.input.schema, [e for _, e in self.keys], ctx.params,
                                            "HashAggregate")
            if all(call.distinct and call.func in ("count", "sum", "avg") for _, call in self.aggregates):
                return _ArgumentPartitions(ctx, [call for _, call in self.aggregates])
            return None                 # one group of other aggregates: held whole or fails

        held, spilled = _held_or_spilled(self.input.execute(partition, ctx), memory, spill)
        if spilled is None:
            yield from self._aggregate_held(held, ctx)
        elif isinstance(spilled, _ArgumentPartitions):
            yield from table_to_batches(self._finish(self._distinct_states(spilled, memory)))
        else:
            for table in spilled.each(memory):
                yield from self._aggregate_held(table.to_batches(), ctx)

    def _distinct_states(self, spilled: "_ArgumentPartitions", memory) -> pa.Table:
        """Keyless COUNT / SUM / AVG (DISTINCT x) states from each argument's spilled partitions: a
        value is in one partition only, so the distinct values' count and sum add up over them."""
        columns, names = [], []
        for (f, call), parts in zip(self.aggregates, spilled.parts):
            value_type = parts.schema.field(0).type
            count, total = 0, None
            for table in parts.each(memory):
                distinct = pc.unique(pc.drop_null(table.column(0).combine_chunks()))
                count += len(distinct)
                if call.func != "count" and len(distinct):
                    part = pc.sum(decimal128.widen_for_sum(distinct)).as_py()
                    total = part if total is None else total + part
            if call.func != "count":
                wide_type = pc.sum(decimal128.widen_for_sum(pa.array([], value_type))).type
                column = _narrow_sums([pa.array([total], wide_type)])[0]
                columns.append(column.cast(value_type if not pa.types.is_decimal(value_type)
                                           else pa.decimal128(38, value_type.scale)))
                names.append(f"{f.id}|sum")
            if call.func != "sum":
                columns.append(pa.array([count], pa.int64()))
                names.append(f"{f.id}|count")
        return pa.table(columns, names=names)

    def _aggregate_held(self, batches, ctx: TaskContext) -> Iterator[pa.RecordBatch]:
        """The aggregates of ``batches`` (all the rows of their groups) on Arrow's group_by."""
        key_names = [f.id for f, _ in self.keys]
        columns: dict[str, list[pa.Array]] = {}
        arg_names: dict[int, str] = {}
        for i, (_, call) in enumerate(self.aggregates):
            if call.arg is not None:
                arg_names[i] = f"a{i}"
        pieces = []
        for batch in batches:
            cols = [evaluate_array(e, batch, ctx.params) for _, e in self.keys]
            cols += [_state_input(call, evaluate_array(call.arg, batch, ctx.params))
                     for i, (_, call) in enumerate(self.aggregates) if i in arg_names]
            pieces.append(pa.RecordBatch.from_arrays(cols, names=key_names + list(arg_names.values()))
                          if cols else pa.RecordBatch.from_arrays([pa.nulls(batch.num_rows)], names=["__rows"]))
        del columns
        if pieces:
            table = pa.Table.from_batches(pieces)
        else:
            table = self._empty_input(key_names, arg_names)
        if not self.keys and table.num_columns == 0:
            table = pa.table({"__rows": pa.nulls(0)})
        specs, outputs = [], []
        for i, (f, call) in enumerate(self.aggregates):
            if self.mode == AggregateMode.SINGLE:
                if call.distinct and call.func == "count":
                    specs.append((arg_names[i], "count_distinct"))
                    outputs.append([(f"{f.id}|count", "count")])
                    continue
                if call.distinct and call.func in ("sum", "avg") and not self.keys:
                    # one group: the column's distinct values, summed after the (keyless) aggregation
                    outputs.append([(f"{f.id}|distinct:{arg_names[i]}", call.func)])
                    continue
                if call.distinct and call.func in ("sum", "avg"):
                    # each group's distinct values as a list, summed (and counted) after the group_by
                    specs.append((arg_names[i], "distinct"))
                    outputs.append([(f"{f.id}|distinct", call.func)])
                    continue
                states = _STATES[call.func]
            else:
                states = _STATES[call.func]
            names = []
            for suffix, compute, _ in states:
                specs.append(([], "count_all") if compute == "count_all" else (arg_names[i], compute))
                names.append((f"{f.id}|{suffix}", suffix))
            outputs.append(names)
        table, scaled = _sum_decimals_as_int64(table, specs)
        grouped = _group_by(_widen_sums(table, specs), key_names, specs)
        key_columns, agg_columns = _split_grouped(grouped, key_names)
        agg_columns = _narrow_sums(agg_columns)
        for k, scale in scaled.items():      # int64 sums back to DECIMAL(38, scale): same digits, reread
            agg_columns[k] = decimal64.from_int64_array(agg_columns[k].combine_chunks(), pa.decimal128(38, scale))
        state_columns, state_names, k = [], [], 0
        for names in outputs:
            for name, suffix in names:
                if "|distinct:" in name:            # keyless: no group_by output to read (k stays)
                    field_id, column = name.split("|distinct:")
                    distinct = pc.unique(pc.drop_null(table.column(column).combine_chunks()))
                    wide = decimal128.widen_for_sum(distinct)
                    total = pc.sum(wide) if len(distinct) else pa.scalar(None, wide.type)
                    state_columns.append(_narrow_sums([pa.array([total.as_py()], wide.type)])[0]
                                         .cast(distinct.type if not pa.types.is_decimal(distinct.type)
                                               else pa.decimal128(38, distinct.type.scale)))
                    state_names.append(f"{field_id}|sum")
                    if suffix == "avg":
                        state_columns.append(pa.array([len(distinct)], pa.int64()))
                        state_names.append(f"{field_id}|count")
                    continue
                if name.endswith("|distinct"):
                    field_id = name[: -len("|distinct")]
                    total, count = _sum_lists(agg_columns[k].combine_chunks())
                    state_columns.append(total)
                    state_names.append(f"{field_id}|sum")
                    if suffix == "avg":
                        state_columns.append(count)
                        state_names.append(f"{field_id}|count")
                else:
                    state_columns.append(agg_columns[k])
                    state_names.append(name)
                k += 1
        result = pa.table(list(key_columns) + state_columns, names=key_names + state_names)
        if self.mode == AggregateMode.PARTIAL:
            yield from table_to_batches(result.cast(self.schema))
        else:
            yield from table_to_batches(self._finish(result))

    def _coded_columns(self) -> frozenset:
        """Ids of the string columns of the scan below that only group keys read (``k`` or its
        collation key ``collation_key(k)``) or ``ANY_VALUE(k)`` beside them: stored
        dictionary-encoded, they reach the factorizer as dictionary arrays (a key of a dictionary is
        a dictionary of keys over the same codes, ``engine.core.collation_keys``), so each distinct
        code of a batch is keyed and hashed once and no row is decoded."""
        if not isinstance(self.input, ScanExec) or not self.keys:
            return frozenset()
        strings = {f.id for f in self.input.fields if pa.types.is_string(f.type.to_arrow())}
        others = set()          # columns some other expression reads (it would need them decoded)
        for _, e in self.keys:
            if not _reads_coded(e, strings):
                others |= e.column_ids()
        for _, call in self.aggregates:
            if call.arg is not None and not (call.func == "any_value" and _reads_coded(call.arg, strings)):
                others |= call.arg.column_ids()
        return frozenset(i for _, e in self.keys if _reads_coded(e, strings)
                         for i in e.column_ids() if i not in others)

    def _input_keeping_dictionaries(self, partition: int, ctx: TaskContext, coded: frozenset):
        scan = self.input
        batches = scan.execute_keeping_dictionaries(partition, ctx, coded)
        if ctx.profile is not None:      # what the scan's own execute does (base._profiled)
            batches = ctx.profile.measure(scan, iter(batches))
        if ctx.deadline is not None:
            batches = ctx.deadline.guard(batches)
        return batches

    def _distinct_counts_on_kernels(self) -> bool:
        """Whether this is a keyless ``single`` aggregate of COUNT(DISTINCT x) only, each argument of
        a type the kernels' tables hold (after a repartition by x, each leaf counts its share)."""
        return (self.mode == AggregateMode.SINGLE and not self.keys and bool(self.aggregates)
                and all(call.func == "count" and call.distinct and call.arg is not None
                        and kernels.supports_group_key(call.arg.type.to_arrow())
                        for _, call in self.aggregates))

    def _count_distinct(self, partition: int, ctx: TaskContext, memory) -> pa.Table:
        """COUNT(DISTINCT x) per aggregate into a ``kernels.DistinctCount`` (integers: a set of the
        values, no ids, no kept keys), sized once from a HyperLogLog estimate of the input.

        Past memory_limit each argument's values go to hash partitions of themselves on disk (one
        set of partitions per aggregate): equal values land in one partition, so a count is the sum
        of its partitions' distinct counts, each counted alone."""
        def spill_each_argument():
            return _ArgumentPartitions(ctx, [call for _, call in self.aggregates])

        held, spilled = _held_or_spilled(self.input.execute(partition, ctx), memory, spill_each_argument)
        names = [f"{f.id}|count" for f, _ in self.aggregates]
        if spilled is not None:
            return pa.table([pa.array([sum(_distinct_count(call, [table.column(0)], ctx, on_values=True)
                                           for table in parts.each(memory))], pa.int64())
                             for (_, call), parts in zip(self.aggregates, spilled.parts)], names=names)
        return pa.table([pa.array([_distinct_count(call, held, ctx)], pa.int64()) for _, call in self.aggregates],
                        names=names)

    def _counted_scan_column(self):
        """(stored column name, collation key options or None) when this is ``SELECT k, COUNT(*) ...
        GROUP BY k`` straight over a scan (one column key, only COUNT(*), no filter, no runtime join
        filter), else None. A string k groups by ``collation_key(k)`` with ``ANY_VALUE(k)`` beside."""
        scan = self.input
        if not isinstance(scan, ScanExec) or scan.filters or len(self.keys) != 1:
            return None
        (key_field, key), = self.keys
        collated = None
        if isinstance(key, Call) and key.op == "collation_key" and isinstance(key.args[0], ColumnRef):
            key, collated = key.args[0], key.options
        if not isinstance(key, ColumnRef) or not self.aggregates:
            return None
        if any(call.distinct or not (call.func == "count_star" or (
                collated is not None and call.func == "any_value" and call.arg == key))
               for _, call in self.aggregates):
            return None
        if scan.runtime_filters or not kernels.supports_group_key(key_field.type.to_arrow()):
            return None
        names = dict(zip((f.id for f in scan.fields), scan.column_names))
        return (names[key.id], collated) if key.id in names else None

    def _count_stored_keys(self, partition: int, ctx: TaskContext, column: str, collated=None) -> pa.Table:
        """COUNT(*) per key reading only the key column, as stored: a dictionary-encoded column is
        counted on its codes (``Factorizer.count_keys``: a histogram of the codes per dictionary,
        then only the dictionary entries that occur are factorized), never decoded or hashed per
        row; a column stored otherwise is decoded and factorized. ``collated``: the key is the
        column's collation key (a dictionary of keys over the same codes) and each group's value is
        one of the stored values that occur with that key."""
        from engine.storage.columnstore.encoding import decode_column

        (key_field, _), = self.keys
        scan = self.input
        factorizer = kernels.Factorizer([key_field.type.to_arrow()])
        batches = ctx.scan(scan.table_id, partition, [column], scan.replicated, scan.batch_rows, None,
                           encoded=True)
        if ctx.profile is not None:      # EXPLAIN ANALYZE credits the scan with the rows read
            batches = ctx.profile.measure(scan, iter(batches))
        occurring = []          # (key, stored value) of the values that occur, when collated
        for batch in batches:
            keys = batch.column(0)
            if not len(keys):
                continue
            values = keys if pa.types.is_dictionary(keys.type) else decode_column(keys)
            if collated is None:
                factorizer.count_keys(values)
                continue
            keyed = collation_keys(values, *collated)
            factorizer.count_keys(keyed)
            occurring.append(_occurring_values(values, keyed))
        counts = pa.array(factorizer.key_counts())
        uniques = factorizer.uniques()
        columns, names = list(uniques), [key_field.id]
        for f, call in self.aggregates:
            if call.func == "count_star":
                columns.append(counts)
                names.append(f"{f.id}|count")
            else:
                columns.append(_first_value_per_key(occurring, uniques[0], call.arg.type.to_arrow()))
                names.append(f"{f.id}|min")
        return pa.table(columns, names=names)

    def _empty_input(self, key_names, arg_names) -> pa.Table:
        arrays, names = [], []
        for f, _ in self.keys:
            arrays.append(pa.array([], f.type.to_arrow()))
            names.append(f.id)
        for i, (_, call) in enumerate(self.aggregates):
            if i in arg_names:
                arrays.append(pa.array([], call.arg.type.to_arrow()))
                names.append(arg_names[i])
        if not arrays:
            return pa.table({"__rows": pa.nulls(0)})
        return pa.table(arrays, names=names)

    def _final(self, partition: int, ctx: TaskContext, memory) -> Iterator[pa.RecordBatch]:
        key_names = [f.id for f, _ in self.keys]
        states = self._kernel_states(final=True)
        if states is not None:
            spilled: list[SpillPartitions] = []

            def spill(table: pa.Table) -> None:
                if not spilled:
                    spilled.append(self._spilled_groups(ctx))
                for k, (_, _, _, name) in enumerate(states):     # SUM of counts: back to BIGINT
                    if name.endswith("|count"):
                        table = table.set_column(len(key_names) + k, name, table.column(name).cast(pa.int64()))
                for batch in table.cast(self._state_schema()).to_batches():
                    spilled[0].add(batch)

            result = self._aggregate_with_kernels(
                self.input.execute(partition, ctx),
                lambda batch: [batch.column(name) for name in key_names],
                lambda batch: [batch.column(name) for *_, name in states], states, memory, spill)
            if spilled:                   # partitioned hash aggregation: merge each partition's states
                spill(result)
                del result
                memory.free()
                for merged in self._merged_partitions(spilled[0], memory):
                    yield from table_to_batches(self._finish_or_states(merged))
                return
            for k, (_, _, _, name) in enumerate(states):     # SUM of counts: back to BIGINT
                if name.endswith("|count"):
                    result = result.set_column(len(key_names) + k, name, result.column(name).cast(pa.int64()))
            yield from table_to_batches(self._finish_or_states(result))
            return
        batches = [b for b in accounted(self.input.execute(partition, ctx), memory) if b.num_rows]
        if not self.keys and not batches and ctx.task != 0:
            return       # a scalar aggregate produces its one row in task 0 only
        yield from table_to_batches(self._finish_or_states(self._merge_states(batches, memory)))

    def _by_group_ids(self, partition: int, ctx: TaskContext, memory) -> Iterator[pa.RecordBatch]:
        """Any mode, when an aggregate of ``engine.exec.extended_aggregates`` is among them: the input
        held whole, its keys factorized into dense group ids, then every aggregate's states (or
        merged states) computed per group id over whole columns."""
        merging = self.mode.reads_states
        batches = [b for b in accounted(self.input.execute(partition, ctx), memory) if b.num_rows]
        if merging and not self.keys and not batches and ctx.task != 0:
            return       # a scalar aggregate produces its one row in task 0 only
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
        return merged.cast(self.schema) if self.mode == AggregateMode.MERGE else self._finish(merged)

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


def _as_schema(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` cast to ``schema`` (itself when it has it already: a cast copies)."""
    return table if table.schema.equals(schema) else table.cast(schema)


def _cast_result(column, target: pa.DataType):
    """A merged state to its SQL type; a sum that does not fit its DECIMAL(p, s) is an overflow."""
    try:
        return column.cast(target)
    except pa.ArrowInvalid:
        if not pa.types.is_decimal(target):
            raise
        raise decimal128.DecimalOverflow(f"DECIMAL value is out of range: the result does not fit "
                                         f"DECIMAL({target.precision},{target.scale})") from None


# Aggregations of a whole table without group keys, straight from the compute functions: Acero's
# group_by with no keys gives the same values and types (checked in tests/exec/test_keyless_aggregate.py)
# but costs ~40 us of plan set-up per call, which a point query pays on every leaf (workload j).
_KEYLESS = {"count": pc.count, "sum": pc.sum, "min": pc.min, "max": pc.max, "count_distinct": pc.count_distinct}
# _merge_keyless merges at most this many rows of integer states (one a task) in Python
_FEW_STATES = 64
_PYTHON_MERGE = {"sum": sum, "min": min, "max": max}


def _group_by(table: pa.Table, key_names: list[str], specs: list) -> pa.Table:
    """``table.group_by(key_names).aggregate(specs)``; keyless specs of the common functions directly."""
    if key_names or not all(func == "count_all" or func in _KEYLESS for _, func in specs):
        return table.group_by(key_names, use_threads=False).aggregate(specs)
    columns = []
    for column, func in specs:
        if func == "count_all":
            columns.append(pa.array([table.num_rows], pa.int64()))
        else:
            value = _KEYLESS[func](table.column(column))
            columns.append(pa.array([value.as_py()], value.type))
    return pa.table(columns, names=[f"{column}_{func}" for column, func in specs])


def _split_grouped(grouped: pa.Table, key_names: list[str]) -> tuple[list, list]:
    """Arrow names aggregation results '<column>_<function>' (order as requested) beside the keys."""
    keys = [grouped.column(n) for n in key_names]
    key_set = set(key_names)
    aggs = [grouped.column(i) for i, n in enumerate(grouped.column_names) if n not in key_set]
    return keys, aggs


def _sum_lists(lists: pa.Array) -> tuple[pa.Array, pa.Array]:
    """SUM and COUNT of each list of a list array (NULL sum for an empty list): SUM(DISTINCT x) over the
    per-group distinct values Arrow's ``distinct`` aggregation collects."""
    groups = len(lists)
    values = decimal128.widen_for_sum(pc.list_flatten(lists))
    parents = pc.list_parent_indices(lists)
    per_group = pa.table({"g": parents, "v": values}).group_by("g", use_threads=False).aggregate(
        [("v", "sum"), ("v", "count")])
    where = np.full(groups, -1, dtype=np.int64)
    where[per_group.column("g").to_numpy()] = np.arange(per_group.num_rows)
    index = pa.array(where, mask=where < 0)
    total = per_group.column("v_sum").combine_chunks().take(index) if per_group.num_rows else \
        pa.nulls(groups, values.type)
    count = per_group.column("v_count").combine_chunks().take(index).fill_null(0) if per_group.num_rows else \
        pa.array(np.zeros(groups, dtype=np.int64))
    return _narrow_sums([total])[0], count


def raise_unsupported(call: AggCall):
    from engine.errors import UnsupportedError
    raise UnsupportedError(f"{call.func.upper()}(DISTINCT ...) is not supported yet; COUNT(DISTINCT ...) is")


def _distinct_count(call, batches, ctx: TaskContext, on_values: bool = False) -> int:
    """COUNT(DISTINCT call.arg) of ``batches`` (``on_values``: they are the argument's values)."""
    values = list(batches) if on_values else [evaluate_array(call.arg, batch, ctx.params) for batch in batches]
    values = [v.combine_chunks() if isinstance(v, pa.ChunkedArray) else v for v in values]
    counter = kernels.DistinctCount(call.arg.type.to_arrow())
    _reserve_for([counter], values, sum(len(v) for v in values))
    for column in values:
        counter.add(column)
    return counter.count


def _held_or_spilled(batches, memory, spill) -> tuple[list, Optional[object]]:
    """The input's non-empty batches held, each reserved; when one does not fit, ``spill()`` (None:
    it cannot: MemoryLimitError) makes partitions on disk that take what was held and the rest.
    Returns (held batches, None) or ([], the partitions)."""
    held: list = []
    spilled = None
    for batch in batches:
        if not batch.num_rows:
            continue
        if spilled is None and not memory.try_grow(batch.nbytes):
            spilled = spill()
            if spilled is None:
                memory.grow(batch.nbytes)           # raises: the operator and the limit
            for kept in held:
                spilled.add(kept)
            held = []
            memory.free()
        if spilled is not None:
            spilled.add(batch)
        else:
            held.append(batch)
    return held, spilled


class _ArgumentPartitions:
    """Keyless DISTINCT aggregates past memory_limit: each aggregate's argument values (as its state
    takes them) in hash partitions of themselves (``parts``, one SpillPartitions per aggregate)."""

    def __init__(self, ctx: TaskContext, calls):
        self.ctx = ctx
        self.calls = list(calls)
        self.parts = []
        for call in self.calls:
            arrow_type = _state_input(call, pa.array([], call.arg.type.to_arrow())).type
            schema = pa.schema([pa.field("v", arrow_type)])
            self.parts.append(SpillPartitions.over(ctx.memory, schema, [ColumnRef("v", T.from_arrow(arrow_type))],
                                                   ctx.params, "HashAggregate"))

    def add(self, batch: pa.RecordBatch) -> None:
        for call, parts in zip(self.calls, self.parts):
            values = _state_input(call, evaluate_array(call.arg, batch, self.ctx.params))
            if isinstance(values, pa.ChunkedArray):
                values = values.combine_chunks()
            parts.add(pa.RecordBatch.from_arrays([values.cast(parts.schema.field(0).type)], schema=parts.schema))
