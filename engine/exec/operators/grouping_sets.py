"""GroupingSetsExec: ROLLUP / CUBE / GROUPING SETS on the aggregator.

The input is aggregated once by the finest grouping (every key of every set). ``mode``:

* ``final`` — the input is the partial states of that finest grouping (one partial per leaf, gathered):
  they are merged once by all the keys, and each set is then rolled up from those merged states (a
  merge of states by the set's keys), so no set rescans or re-reads the rows;
* ``single`` — the input is the rows themselves, for aggregates whose states do not merge
  (COUNT(DISTINCT ...)): each set is aggregated from the rows, held once.

Each set's rows carry NULL in the keys it rolls up and the grouping id (bit ``i`` set where key ``i`` is
rolled up), which GROUPING(...) reads.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np
import pyarrow as pa

from engine.exec.aggregate_mode import AggregateMode
from engine.exec.distribution import grouped_output
from engine.exec.operators.base import PhysicalOperator, TaskContext
from engine.exec.operators.hash_aggregate import HashAggregateExec
from engine.core.expressions import AggCall, ColumnRef, Expr
from engine.core.fields import Field, format_sets


@dataclass(frozen=True)
class _Held(PhysicalOperator):
    """Batches already in memory, as an operator's output (the input of each set's aggregation).
    Built while GroupingSetsExec runs; never planned or shipped."""

    schema_: pa.Schema
    batches: tuple

    @property
    def schema(self) -> pa.Schema:
        return self.schema_

    def execute(self, partition: int, ctx: TaskContext) -> Iterator[pa.RecordBatch]:
        yield from self.batches


@dataclass(frozen=True)
class GroupingSetsExec(PhysicalOperator):
    input: PhysicalOperator
    mode: AggregateMode                         # FINAL | SINGLE (see the module docstring)
    keys: tuple[tuple[Field, Expr], ...]
    aggregates: tuple[tuple[Field, AggCall], ...]
    sets: tuple[tuple[int, ...], ...]
    grouping_id: Field
    requires: tuple = ()          # Required per input (None: as it is), chosen by the planner

    def __post_init__(self):
        object.__setattr__(self, "mode", AggregateMode(self.mode))
        if self.mode not in (AggregateMode.FINAL, AggregateMode.SINGLE):
            raise ValueError(f"GroupingSetsExec mode must be final or single, not {self.mode!r}")

    def output_distribution(self, inputs):
        return grouped_output(inputs[0], self.keys)

    @property
    def fields(self):
        return tuple(f for f, _ in self.keys) + tuple(f for f, _ in self.aggregates) + (self.grouping_id,)

    @property
    def children(self):
        return (self.input,)

    def describe(self) -> str:
        aggs = ", ".join(str(a) for _, a in self.aggregates)
        how = "rolled up from merged states" if self.mode == AggregateMode.FINAL else "each set from the rows"
        return f"GroupingSets {how} sets=[{format_sets(self.keys, self.sets)}] aggs=[{aggs}]"

    def execute(self, partition: int, ctx: TaskContext) -> Iterator[pa.RecordBatch]:
        held = _Held(self.input.schema, tuple(b for b in self.input.execute(partition, ctx) if b.num_rows))
        if self.mode == AggregateMode.FINAL:
            # merge the leaves' partials by the finest grouping once; the sets roll up from its states
            by_column = tuple((f, ColumnRef(f.id, f.type, f.name)) for f, _ in self.keys)
            merge = HashAggregateExec(held, AggregateMode.MERGE, by_column, self.aggregates)
            held = _Held(merge.schema, tuple(b for b in merge.execute(partition, ctx) if b.num_rows))
            keys, inner_mode = by_column, AggregateMode.FINAL
        else:
            keys, inner_mode = self.keys, AggregateMode.SINGLE
        schema = self.schema
        for grouping_set in self.sets:
            chosen = tuple(keys[i] for i in grouping_set)
            rolled_up = sum(1 << i for i in range(len(self.keys)) if i not in grouping_set)
            source = held
            if inner_mode == AggregateMode.FINAL:      # the states and this set's keys only, as a final merge reads them
                names = [n for i, n in enumerate(held.schema.names)
                         if i >= len(self.keys) or i in grouping_set]
                source = _Held(pa.schema([held.schema.field(n) for n in names]),
                               tuple(b.select(names) for b in held.batches))
            aggregate = HashAggregateExec(source, inner_mode, chosen, self.aggregates)
            for batch in aggregate.execute(partition, ctx):
                if batch.num_rows:
                    yield self._widen(batch, grouping_set, rolled_up, schema)

    def _widen(self, batch: pa.RecordBatch, grouping_set, rolled_up: int, schema: pa.Schema) -> pa.RecordBatch:
        """One set's rows in the operator's schema: NULL for the keys outside the set, the grouping id."""
        n = batch.num_rows
        columns = []
        for i, (f, _) in enumerate(self.keys):
            target = schema.field(f.id).type
            columns.append(batch.column(f.id) if i in grouping_set else pa.nulls(n, target))
        for f, _ in self.aggregates:
            columns.append(batch.column(f.id))
        columns.append(pa.array(np.full(n, rolled_up, dtype=np.int64)))
        columns = [c if c.type == field.type else c.cast(field.type) for c, field in zip(columns, schema)]
        return pa.RecordBatch.from_arrays(columns, schema=schema)
