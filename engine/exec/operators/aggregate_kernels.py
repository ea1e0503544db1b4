"""The hash-kernel paths of :class:`~engine.exec.operators.hash_aggregate.HashAggregateExec`
(``AggregatePath.KERNELS`` and ``DISTINCT_COUNT``, and the stored key counts): keys factorized by
``kernels.Factorizer`` and each state accumulated by a ``kernels.GroupedAggregate``, batch by batch
(memory grows with the groups, not the rows; past memory_limit the groups spill by partition), and
dictionary-coded key columns keyed and hashed once per code. A mixin of HashAggregateExec."""
from __future__ import annotations

from typing import Iterator

import numpy as np
import pyarrow as pa

import kernels
from engine.core.collation_keys import collation_keys
from engine.core.expressions import Call, ColumnRef, Expr
from engine.exec import decimal_scaled
from engine.exec.aggregate_mode import AggregateMode
from engine.exec.evaluate import evaluate, evaluate_array, evaluate_arrays, shared_subexpressions
from engine.exec.operators.base import TaskContext, table_to_batches
from engine.exec.operators.scan import ScanExec
from engine.exec.operators.spill_partitions import SpillPartitions

from engine.exec.aggregate_states import _STATES, _sum_type
from engine.exec.operators.aggregate_spill import _ArgumentPartitions
from engine.exec.operators.spill_partitions import hold_or_spill

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


def _code_counts(values: pa.DictionaryArray) -> np.ndarray:
    """Rows per code of a dictionary array, nulls in the last slot (``len(dictionary) + 1``): a
    histogram of the codes as they are stored (narrow), no copy."""
    indices = values.indices
    counts = np.zeros(len(values.dictionary) + 1, dtype=np.int64)
    if len(indices):
        codes = np.frombuffer(indices.buffers()[1], dtype=indices.type.to_pandas_dtype(), count=len(indices),
                              offset=indices.offset * (indices.type.bit_width // 8))
        validity = np.frombuffer(indices.buffers()[0], np.uint8) if indices.null_count else None
        kernels.count_codes(codes, validity, indices.offset, counts)
    return counts


class _CollatedKeyCounts:
    """COUNT(*) per collation key of a string column and, for each key, one stored value that
    occurs with it (the first seen): ``SELECT k, COUNT(*) ... GROUP BY k`` under a case- or
    accent-insensitive collation. A dictionary batch is counted on its codes, one histogram pass
    (``kernels.count_codes``); only the dictionary entries that occur are keyed, factorized and
    weighted by their counts, and a new group's value is its first entry's (entries in code order).
    A plain batch is factorized per row."""

    def __init__(self, key_type: pa.DataType):
        self.factorizer = kernels.Factorizer([key_type])
        self.counts = np.zeros(0, dtype=np.int64)
        self.firsts: list = []

    def add(self, values: pa.Array, keyed: pa.Array) -> None:
        """``values``: the stored column (dictionary or plain); ``keyed``: its collation keys (a
        dictionary of keys over the same codes, or plain)."""
        weights = None
        if pa.types.is_dictionary(values.type) and not pa.types.is_dictionary(keyed.type):
            values = values.dictionary_decode()
        if pa.types.is_dictionary(values.type):
            counts = _code_counts(values)
            used = np.flatnonzero(counts)
            if not len(used):
                return
            nvalues = len(values.dictionary)
            taken = pa.array(used, pa.int64(), mask=used == nvalues) if used[-1] == nvalues else pa.array(used)
            values, keyed, weights = values.dictionary.take(taken), keyed.dictionary.take(taken), counts[used]
        before = self.factorizer.num_groups
        ids = np.asarray(self.factorizer.factorize([keyed]))
        groups = self.factorizer.num_groups
        if len(self.counts) < groups:
            grown = np.zeros(max(groups, 2 * len(self.counts)), dtype=np.int64)
            grown[:len(self.counts)] = self.counts
            self.counts = grown
        if weights is None:
            self.counts[:groups] += np.bincount(ids, minlength=groups)
        else:
            np.add.at(self.counts, ids, weights)
        if groups > before:               # new groups, numbered in order of their first rows
            new, first = np.unique(ids, return_index=True)
            self.firsts.append(values.take(pa.array(first[new >= before])))

    def uniques(self) -> list:
        return self.factorizer.uniques()

    def key_counts(self) -> pa.Array:
        return pa.array(self.counts[:self.factorizer.num_groups])

    def first_values(self, value_type: pa.DataType) -> pa.Array:
        if not self.firsts:
            return pa.nulls(self.factorizer.num_groups, value_type)
        return pa.concat_arrays([a.cast(value_type) for a in self.firsts])


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


def kernel_states(keys, aggregates, final: bool):
    """(aggregate index, kernel function, argument type, state name) of each partial state when
    the keys and every state run on kernels' hash group-by, else None (Acero's path). Without
    keys (one group, no factorizing) only the first phase runs on the kernels."""
    if not keys and final:
        return None
    if not all(kernels.supports_group_key(f.type.to_arrow()) for f, _ in keys):
        return None
    states = []
    for i, (f, call) in enumerate(aggregates):
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


def _distinct_count(call, batches, ctx: TaskContext, on_values: bool = False) -> int:
    """COUNT(DISTINCT call.arg) of ``batches`` (``on_values``: they are the argument's values)."""
    values = list(batches) if on_values else [evaluate_array(call.arg, batch, ctx.params) for batch in batches]
    values = [v.combine_chunks() if isinstance(v, pa.ChunkedArray) else v for v in values]
    counter = kernels.DistinctCount(call.arg.type.to_arrow())
    _reserve_for([counter], values, sum(len(v) for v in values))
    for column in values:
        counter.add(column)
    return counter.count


class KernelAggregation:
    def _kernel_first_phase(self, partition: int, ctx: TaskContext, memory) -> Iterator[pa.RecordBatch]:
        """Keys and states of the rows on the hash kernels, streaming (past memory_limit the groups'
        states go to hash partitions on disk, each merged alone)."""
        states = kernel_states(self.keys, self.aggregates, final=False)
        coded = frozenset(self.coded)
        coded_keys = [_reads_coded(e, coded) for _, e in self.keys]
        coded_args = [call.func == "any_value" and _reads_coded(call.arg, coded) for _, call in self.aggregates]

        def key_columns(batch):
            return [_evaluate_coded(e, batch, ctx.params) if direct else evaluate_array(e, batch, ctx.params)
                    for direct, (_, e) in zip(coded_keys, self.keys)]

        # the arguments evaluated together: a subexpression two of them share is computed once
        plain_args = [(i, call.arg) for i, (_, call) in enumerate(self.aggregates)
                      if call.arg is not None and not coded_args[i]]
        slots = shared_subexpressions([arg for _, arg in plain_args])

        def state_columns(batch):
            args = dict(zip([i for i, _ in plain_args],
                            evaluate_arrays([arg for _, arg in plain_args], batch, ctx.params, slots)))
            args.update((i, _evaluate_coded(call.arg, batch, ctx.params))
                        for i, (_, call) in enumerate(self.aggregates) if coded_args[i])
            return [args.get(i) for i, *_ in states]

        spilled: list[SpillPartitions] = []

        def spill(table: pa.Table) -> None:
            if not spilled:
                spilled.append(self._spilled_groups(ctx))
            for batch in table.cast(self._state_schema()).to_batches():
                spilled[0].add(batch)

        batches = self._input_keeping_dictionaries(partition, ctx, coded) if coded else \
            self.input.execute(partition, ctx)
        # a state equal to an earlier one (the SUM of AVG(x) beside SUM(x)) is accumulated once
        first_of: dict = {}
        same_as = [first_of.setdefault((func, str(arg_type), self.aggregates[i][1].arg), k)
                   for k, (i, func, arg_type, _) in enumerate(states)]
        result = self._aggregate_with_kernels(batches, key_columns, state_columns, states, memory,
                                              spill if self.keys else None, same_as)
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

    def _kernel_final(self, partition: int, ctx: TaskContext, memory) -> Iterator[pa.RecordBatch]:
        """Partial states merged by key on the hash kernels (spilling by partition past memory_limit)."""
        key_names = [f.id for f, _ in self.keys]
        states = kernel_states(self.keys, self.aggregates, final=True)
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
            lambda batch: [batch.column(name) for *_, name in states], states, memory, spill,
            encoded=self.encoded_keys and self.mode == AggregateMode.MERGE)
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

    def _aggregate_with_kernels(self, batches, key_columns, state_columns, states, memory=None,
                                spill=None, same_as=None, encoded=False) -> pa.Table:
        """Stream ``batches`` through a Factorizer and one GroupedAggregate per state: no
        concatenation of the input; memory grows with the groups, not the rows. ``memory``: reserves
        the groups' estimated bytes after each batch; when they do not fit, ``spill(table)`` takes
        the states so far (keys and states, as this method returns them) and the aggregation starts
        afresh (without ``spill``: MemoryLimitError). ``same_as[k]``: the first state computing
        the same as state k (k itself for most): only that one is accumulated, its result copied.
        ``encoded``: string keys may come back as dictionary arrays (``Factorizer.uniques``)."""
        if same_as is None:
            same_as = list(range(len(states)))
        # the states accumulated: (position among the states, state, its aggregate)
        own = [k for k in range(len(states)) if same_as[k] == k]

        def new_aggregates():
            return {k: _FirstValues() if states[k][1] == "first" else kernels.GroupedAggregate(states[k][1], states[k][2])
                    for k in own}

        def results(groups):
            done = {k: agg.result(groups) for k, agg in aggs.items()}
            return [done[same_as[k]] for k in range(len(states))]

        aggs = new_aggregates()
        if not self.keys:
            # One group, present even without rows (COUNT 0, SUM NULL): opened by an empty update.
            for k, agg in aggs.items():
                _, func, arg_type, _ = states[k]
                agg.update(None, 1, None if func == "count_all" else pa.array([], arg_type), rows=0)
            for batch in batches:
                columns = state_columns(batch)
                for k, agg in aggs.items():
                    agg.update(None, 1, _as_state_type(columns[k], states[k][2]), rows=batch.num_rows)
            return pa.table(results(1), names=[name for *_, name in states])
        factorizer = kernels.Factorizer([f.type.to_arrow() for f, _ in self.keys])
        keyed = ((batch, key_columns(batch)) for batch in batches if batch.num_rows)
        if self.presize:
            # The exchange's rows are all here already: estimate the keys, size the table once.
            keyed = list(keyed)
            _reserve_for([factorizer] + list(aggs.values()), [keys[0] for _, keys in keyed], sum(b.num_rows for b, _ in keyed))
        names = [f.id for f, _ in self.keys] + [name for *_, name in states]
        group_bytes = self._group_bytes(len(states))
        for batch, keys in keyed:
            ids = factorizer.factorize(keys)
            groups = factorizer.num_groups
            columns = state_columns(batch)
            for k, agg in aggs.items():
                agg.update(ids, groups, _as_state_type(columns[k], states[k][2]))
            if memory is not None and not memory.resize(groups * group_bytes):
                if spill is None:
                    memory.grow(groups * group_bytes - memory.size, spilled=True)     # raises
                spill(pa.table(factorizer.uniques() + results(groups), names=names))
                memory.free()
                factorizer = kernels.Factorizer([f.type.to_arrow() for f, _ in self.keys])
                aggs = new_aggregates()
        groups = factorizer.num_groups
        return pa.table(factorizer.uniques(encoded=encoded) + results(groups), names=names)

    def _group_bytes(self, states: int) -> int:
        """A group's estimated bytes in the Factorizer and the aggregates (memory_limit's accounting):
        its keys (a string's 16 bytes of slot plus a guess at its text) and 16 bytes a state."""
        keys = 0
        for f, _ in self.keys:
            t = f.type.to_arrow()
            keys += t.bit_width // 8 if pa.types.is_primitive(t) and t.bit_width >= 8 else 48
        return 32 + keys + 16 * states

    def coded_columns(self) -> tuple[str, ...]:
        """For the planner (engine.optimizer.aggregate_paths), which sets ``coded`` from it: ids of
        the string columns of the scan below that only group keys read (``k`` or its
        collation key ``collation_key(k)``) or ``ANY_VALUE(k)`` beside them: stored dictionary-
        or run-end-encoded, they reach the factorizer as dictionary arrays (a key of a dictionary is
        a dictionary of keys over the same codes, ``engine.core.collation_keys``), so each distinct
        code of a batch is keyed and hashed once and no row is decoded. And the decimal columns
        that aggregate arguments read only inside ``+ - *`` trees (``decimal_scaled.scaled_columns``):
        such a tree is computed per dictionary entry and the rows gather it (TPC-H Q1's
        ``1 - l_discount``), the column never decoded."""
        if not isinstance(self.input, ScanExec):
            return ()
        scaled = decimal_scaled.scaled_columns([call.arg for _, call in self.aggregates if call.arg is not None]
                                               + [e for _, e in self.keys])
        if not self.keys:
            return tuple(sorted(scaled))
        strings = {f.id for f in self.input.fields if pa.types.is_string(f.type.to_arrow())}
        others = set()          # columns some other expression reads (it would need them decoded)
        for _, e in self.keys:
            if not _reads_coded(e, strings):
                others |= e.column_ids()
        for _, call in self.aggregates:
            if call.arg is not None and not (call.func == "any_value" and _reads_coded(call.arg, strings)):
                others |= call.arg.column_ids()
        return tuple(sorted({i for _, e in self.keys if _reads_coded(e, strings)
                             for i in e.column_ids() if i not in others} | scaled))

    def _input_keeping_dictionaries(self, partition: int, ctx: TaskContext, coded: frozenset):
        scan = self.input
        batches = scan.execute_keeping_dictionaries(partition, ctx, coded)
        if ctx.profile is not None:      # what the scan's own execute does (base._profiled)
            batches = ctx.profile.measure(scan, iter(batches))
        if ctx.deadline is not None:
            batches = ctx.deadline.guard(batches)
        return batches

    def _count_distinct(self, partition: int, ctx: TaskContext, memory) -> pa.Table:
        """COUNT(DISTINCT x) per aggregate into a ``kernels.DistinctCount`` (integers: a set of the
        values, no ids, no kept keys), sized once from a HyperLogLog estimate of the input.

        Past memory_limit each argument's values go to hash partitions of themselves on disk (one
        set of partitions per aggregate): equal values land in one partition, so a count is the sum
        of its partitions' distinct counts, each counted alone."""
        def spill_each_argument():
            return _ArgumentPartitions(ctx, [call for _, call in self.aggregates])

        held, spilled = hold_or_spill(self.input.execute(partition, ctx), memory, spill_each_argument)
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
        key_type = key_field.type.to_arrow()
        factorizer = kernels.Factorizer([key_type]) if collated is None else _CollatedKeyCounts(key_type)
        batches = ctx.scan(scan.table_id, partition, [column], scan.replicated, scan.batch_rows, None,
                           encoded=True)
        if ctx.profile is not None:      # EXPLAIN ANALYZE credits the scan with the rows read
            batches = ctx.profile.measure(scan, iter(batches))
        for batch in batches:
            keys = batch.column(0)
            if not len(keys):
                continue
            values = keys if pa.types.is_dictionary(keys.type) else decode_column(keys)
            if collated is None:
                factorizer.count_keys(values)
            else:
                factorizer.add(values, collation_keys(values, *collated))
        counts = pa.array(factorizer.key_counts())
        uniques = factorizer.uniques()
        columns, names = list(uniques), [key_field.id]
        for f, call in self.aggregates:
            if call.func == "count_star":
                columns.append(counts)
                names.append(f"{f.id}|count")
            else:
                columns.append(factorizer.first_values(call.arg.type.to_arrow()))
                names.append(f"{f.id}|min")
        return pa.table(columns, names=names)
