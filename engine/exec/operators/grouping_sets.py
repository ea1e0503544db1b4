"""GroupingSetsExec: ROLLUP / CUBE / GROUPING SETS on the aggregator.

The input is aggregated once by the finest grouping (every key of every set). ``mode``:

* ``final`` — the input is the partial states of that finest grouping (one partial per leaf, gathered):
  they are merged once by all the keys, and each set is then rolled up from merged states (a merge of
  states by the set's keys): the fewest already made whose keys include the set's (a ROLLUP's set
  from the set before it), so no set rescans or re-reads the rows;
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


def _held(schema: pa.Schema, batches) -> _Held:
    """``batches`` held, with their own schema (encoded keys: dictionary types where ``schema``
    has the values' types)."""
    kept = tuple(b for b in batches if b.num_rows)
    if any(b.schema != kept[0].schema for b in kept):          # some encoded, some not: plain
        kept = tuple(pa.Table.from_batches([b]).cast(schema).combine_chunks().to_batches()[0] for b in kept)
    return _Held(kept[0].schema if kept else schema, kept)


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
        if self.mode == AggregateMode.SINGLE:
            for grouping_set in self.sets:
                aggregate = HashAggregateExec(held, AggregateMode.SINGLE, tuple(self.keys[i] for i in grouping_set),
                                              self.aggregates)
                yield from self._output(aggregate.execute(partition, ctx), grouping_set)
            return
        # merge the leaves' partials by the finest grouping once; each set then rolls up from the
        # fewest merged states already made whose keys include its own: a ROLLUP's set reads the
        # states of the set before it (fewer rows every step), not the finest grouping's again
        by_column = tuple((f, ColumnRef(f.id, f.type, f.name)) for f, _ in self.keys)
        # the merged states keep their string keys dictionary-encoded (encoded_keys): the sets rolled
        # up from them group by the codes (each distinct string hashed once, not once a row), and
        # only the rows output are decoded (_widen)
        merge = HashAggregateExec(held, AggregateMode.MERGE, by_column, self.aggregates, encoded_keys=True)
        finest = tuple(range(len(self.keys)))
        merged = {finest: _held(merge.schema, merge.execute(partition, ctx))}
        del held
        for n, grouping_set in enumerate(self.sets):
            chosen = tuple(by_column[i] for i in grouping_set)
            rest = self.sets[n + 1:]
            if grouping_set and tuple(grouping_set) == finest:
                # the finest set (every ROLLUP's and CUBE's first): its merged states are one row a
                # group already; aggregating them again by the same keys would hash every row again
                # for nothing (TPC-DS q67: the largest of its 9 sets)
                held = merged[finest]
                final = HashAggregateExec(held, AggregateMode.FINAL, chosen, self.aggregates)
                finished = final._finish(pa.Table.from_batches(held.batches, schema=held.schema))
                yield from self._output(finished.to_batches(), grouping_set)
            elif not grouping_set or not any(set(s) < set(grouping_set) for s in rest):
                source = self._states_for(merged, grouping_set)
                aggregate = HashAggregateExec(source, AggregateMode.FINAL, chosen, self.aggregates)
                yield from self._output(aggregate.execute(partition, ctx), grouping_set)
            else:
                # a later set rolls up from this one: keep its merged states, and finish them as they are
                source = self._states_for(merged, grouping_set)
                step = HashAggregateExec(source, AggregateMode.MERGE, chosen, self.aggregates, encoded_keys=True)
                states = _held(step.schema, step.execute(partition, ctx))
                merged[tuple(grouping_set)] = states
                final = HashAggregateExec(states, AggregateMode.FINAL, chosen, self.aggregates)
                finished = final._finish(pa.Table.from_batches(states.batches, schema=states.schema))
                yield from self._output(finished.to_batches(), grouping_set)
            # states no later set reads are let go
            for keys in [k for k in merged if k != finest and not any(set(s) <= set(k) for s in rest)]:
                del merged[keys]

    def _states_for(self, merged: dict, grouping_set) -> _Held:
        """The fewest merged states whose keys include ``grouping_set``'s, with only its keys (and the
        states) kept, as a merge by its keys reads them."""
        keys = min((k for k in merged if set(grouping_set) <= set(k)),
                   key=lambda k: sum(b.num_rows for b in merged[k].batches))
        held = merged[keys]
        dropped = {self.keys[i][0].id for i in keys if i not in grouping_set}
        names = [name for name in held.schema.names if name not in dropped]
        return _Held(pa.schema([held.schema.field(name) for name in names]),
                     tuple(b.select(names) for b in held.batches))

    def _output(self, batches, grouping_set) -> Iterator[pa.RecordBatch]:
        """A set's result rows in the operator's schema (see _widen)."""
        rolled_up = sum(1 << i for i in range(len(self.keys)) if i not in grouping_set)
        schema = self.schema
        for batch in batches:
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
