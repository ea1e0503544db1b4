"""GROUP BY over input whose rows of one group arrive next to each other: no hash table.

A group ends where the keys change, so group ids are a running count of key changes (a vectorized
compare of each row with the one before it) and the per-group states come from the same
``kernels.GroupedAggregate`` kernels the hash aggregate feeds, indexed by those ids. Memory holds one
batch's runs and the one group still open at the batch's end, never a table of all groups.

The planner picks it (by cost, :mod:`engine.optimizer.cost`) where input order is known or measured:

* ``single`` — above a sort on the group keys: every group is one run, the result is final;
* ``partial`` — above a scan of a table whose statistics show the group keys clustered (a SORT KEY
  table's segments are sorted runs; ANALYZE counts the runs). A group split over several runs (two
  segments, the unsorted write buffer) just emits several partial rows, which the final aggregate
  merges: correctness never rests on the order, only the amount of work saved does.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import kernels
from engine.exec.evaluate import evaluate_array
from engine.exec.aggregate_mode import AggregateMode
from engine.exec.distribution import grouped_output
from engine.exec.operators.base import PhysicalOperator, TaskContext
from engine.exec.aggregate_states import _STATES, _sum_type, state_fields
from engine.exec.operators.hash_aggregate import HashAggregateExec
from engine.core.expressions import AggCall, Expr
from engine.core.fields import Field


def supports(keys: tuple[tuple[Field, Expr], ...], aggregates: tuple[tuple[Field, AggCall], ...]) -> bool:
    """Whether every partial state has a kernel (the planner asks before choosing this operator)."""
    if not keys:
        return False
    for _, call in aggregates:
        if call.distinct or call.func not in _STATES:
            return False
        for suffix, compute, merge in _STATES[call.func]:
            arg_type = call.arg.type.to_arrow() if call.arg is not None else None
            if not kernels.supports_aggregate(compute, arg_type):
                return False
            merged_type = pa.int64() if suffix == "count" else _sum_type(call) if suffix == "sum" \
                else call.type.to_arrow()
            if not kernels.supports_aggregate(merge, merged_type):
                return False
    return True


@dataclass(frozen=True)
class StreamingAggregateExec(PhysicalOperator):
    """Aggregate runs of equal group keys. ``mode``: ``partial`` (keys + partial states, one row per
    run, merged by a final HashAggregateExec) or ``single`` (input sorted on the keys: one row per
    group, final values)."""

    input: PhysicalOperator
    mode: AggregateMode           # PARTIAL or SINGLE
    keys: tuple[tuple[Field, Expr], ...]
    aggregates: tuple[tuple[Field, AggCall], ...]
    requires: tuple = ()          # Required per input (None: as it is), chosen by the planner

    def output_distribution(self, inputs):
        return grouped_output(inputs[0], self.keys, self.mode.reads_states)

    def __post_init__(self):
        object.__setattr__(self, "mode", AggregateMode(self.mode))
        if self.mode not in (AggregateMode.PARTIAL, AggregateMode.SINGLE):
            raise ValueError(f"StreamingAggregateExec mode must be partial or single, not {self.mode!r}")

    @property
    def fields(self):
        if self.mode == AggregateMode.PARTIAL:
            raise AttributeError("partial aggregates expose state_schema, not fields")
        return tuple(f for f, _ in self.keys) + tuple(f for f, _ in self.aggregates)

    @property
    def state_schema(self) -> pa.Schema:
        return pa.schema([pa.field(f.id, f.type.to_arrow()) for f, _ in self.keys] + state_fields(self.aggregates))

    @property
    def schema(self) -> pa.Schema:
        if self.mode == AggregateMode.PARTIAL:
            return self.state_schema
        return pa.schema([pa.field(f.id, f.type.to_arrow()) for f in self.fields])

    @property
    def children(self):
        return (self.input,)

    def describe(self) -> str:
        keys = ", ".join(str(e) for _, e in self.keys)
        aggs = ", ".join(str(a) for _, a in self.aggregates)
        return f"StreamingAggregate {self.mode} keys=[{keys}] aggs=[{aggs}]"

    def _states(self) -> list[tuple[Optional[Expr], str, str, Optional[pa.DataType], pa.DataType]]:
        """(argument, compute function, merge function, argument type, state type) per state column."""
        out = []
        for f, call in self.aggregates:
            for suffix, compute, merge in _STATES[call.func]:
                state_type = pa.int64() if suffix == "count" else _sum_type(call) if suffix == "sum" \
                    else call.type.to_arrow()
                arg_type = call.arg.type.to_arrow() if call.arg is not None else None
                out.append((call.arg, compute, merge, arg_type, state_type))
        return out

    def execute(self, partition: int, ctx: TaskContext) -> Iterator[pa.RecordBatch]:
        states = self._states()
        schema = self.state_schema
        key_count = len(self.keys)
        pending: Optional[pa.RecordBatch] = None       # the last run seen: it may go on in the next batch
        for batch in self.input.execute(partition, ctx):
            if not batch.num_rows:
                continue
            keys = [_plain(evaluate_array(e, batch, ctx.params)) for _, e in self.keys]
            ids, starts = _run_ids(keys)
            runs = len(starts)
            columns = [k.take(pa.array(starts)) for k in keys]
            args: dict[int, pa.Array] = {}
            for arg, compute, _, arg_type, _ in states:
                agg = kernels.GroupedAggregate(compute, arg_type)
                values = None
                if arg is not None:
                    values = args.get(id(arg))
                    if values is None:
                        values = args[id(arg)] = _plain(evaluate_array(arg, batch, ctx.params))
                    if arg_type is not None and values.type != arg_type:
                        values = values.cast(arg_type)
                agg.update(ids, runs, values)
                columns.append(agg.result(runs))
            table = _conform(columns, schema)
            if pending is not None:
                table = _merge_runs(pa.concat_batches([pending, table]), key_count, states, schema)
            if table.num_rows > 1:
                yield self._output(table.slice(0, table.num_rows - 1))
            pending = table.slice(table.num_rows - 1)
        if pending is not None:
            yield self._output(pending)

    def _output(self, states: pa.RecordBatch) -> pa.RecordBatch:
        if self.mode == AggregateMode.PARTIAL:
            return states
        # the hash aggregate's finishing step (AVG = SUM / COUNT, exact result types) reads only its
        # description, not its input: one place turns merged states into SQL values
        finished = HashAggregateExec(self.input, AggregateMode.FINAL, self.keys, self.aggregates)._finish(pa.table(states))
        return pa.RecordBatch.from_arrays([c.combine_chunks() for c in finished.columns], schema=self.schema)


def _plain(values) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    return values


def _run_ids(keys: list[pa.Array]) -> tuple[np.ndarray, np.ndarray]:
    """Group ids (0, 0, 1, 1, 1, 2, ...) of consecutive rows with equal keys (NULL equal to NULL, as
    GROUP BY groups them), and the first row of each run."""
    n = len(keys[0])
    change = np.zeros(n, dtype=bool)
    change[0] = True
    if n > 1:
        for column in keys:
            after, before = column.slice(1), column.slice(0, n - 1)
            differs = pc.not_equal(after, before)
            if column.null_count:
                one_null = pc.xor(pc.is_null(after), pc.is_null(before))
                differs = pc.or_(pc.fill_null(differs, False), one_null)
            change[1:] |= differs.to_numpy(zero_copy_only=False)
    ids = np.cumsum(change, dtype=np.int64) - 1
    return ids, np.flatnonzero(change)


def _conform(columns: list[pa.Array], schema: pa.Schema) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays([c if c.type == f.type else c.cast(f.type) for c, f in zip(columns, schema)],
                                      schema=schema)


def _merge_runs(table: pa.RecordBatch, key_count: int, states, schema: pa.Schema) -> pa.RecordBatch:
    """Merge adjacent state rows with equal keys (the open run of the previous batch with the first
    run of this one) using each state's merge function."""
    keys = [table.column(i) for i in range(key_count)]
    ids, starts = _run_ids(keys)
    if len(starts) == table.num_rows:
        return table
    runs = len(starts)
    columns = [k.take(pa.array(starts)) for k in keys]
    for i, (_, _, merge, _, state_type) in enumerate(states):
        agg = kernels.GroupedAggregate(merge, state_type)
        agg.update(ids, runs, table.column(key_count + i))
        columns.append(agg.result(runs))
    return _conform(columns, schema)
