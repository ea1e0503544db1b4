"""The physical operator contract.

An operator is an immutable description (a frozen dataclass: picklable, shipped inside a StageSpec);
``execute(partition, ctx)`` runs it for one partition and yields ``pa.RecordBatch``es whose column names
are the plan's field ids. Per-run state lives in local variables of ``execute``, never on the operator.
"""
from __future__ import annotations

import functools
from typing import Iterator, Optional, Sequence

import pyarrow as pa

from engine.plan.logical import Field


class TaskContext:
    """What an operator may touch while it runs one task of one stage on a leaf or the aggregator.

    A leaf runs one task per stage over all the partitions it hosts (``partitions``), so a hash table
    built from a broadcast side is built once per leaf, not once per partition, and partial aggregates
    are per leaf (MemSQL's local aggregation). ``task`` numbers the stage's tasks; task 0 is the one
    that emits a scalar aggregate's row when its input is empty.
    """

    def __init__(self, task: int, num_partitions: int, params: Sequence, storage=None,
                 exchange_inputs: Optional[dict[int, list[pa.RecordBatch]]] = None,
                 partitions: Optional[Sequence[int]] = None, profile=None):
        self.task = task
        self.partition = task                       # kept for operators that log or label by task
        self.partitions = tuple(partitions) if partitions is not None else (task,)
        self.num_partitions = num_partitions
        self.params = tuple(params)
        self.storage = storage                      # the leaf's storage (scan access), None on the aggregator
        self.exchange_inputs = exchange_inputs or {}
        self.profile = profile                      # an engine.exec.profile.TaskProfile under EXPLAIN ANALYZE

    def scan(self, table_id: int, task: int, columns: Sequence[str], replicated: bool,
             batch_rows: Optional[int] = None, bounds=None, encoded: bool = False) -> Iterator[pa.RecordBatch]:
        """``bounds``, ``encoded``: see :meth:`engine.storage.PartitionStore.scan`."""
        for partition in self.scan_partitions(replicated):
            yield from self.storage.scan(table_id, partition, columns, batch_rows, bounds, encoded)

    def scan_partitions(self, replicated: bool) -> tuple[Optional[int], ...]:
        """The storage partitions a scan of this task reads (None: the leaf's reference copy)."""
        return (None,) if replicated else self.partitions


def schema_of(fields: Sequence[Field]) -> pa.Schema:
    return pa.schema([pa.field(f.id, f.type.to_arrow()) for f in fields])


class PhysicalOperator:
    fields: tuple[Field, ...]

    def __init_subclass__(cls, **kwargs):
        # Every operator's execute is wrapped once, here, so EXPLAIN ANALYZE counts each operator's
        # output without operators knowing: a task without a profile pays one attribute check per
        # execute call (not per batch).
        super().__init_subclass__(**kwargs)
        if "execute" in cls.__dict__:
            cls.execute = _profiled(cls.__dict__["execute"])

    @property
    def children(self) -> tuple["PhysicalOperator", ...]:
        return ()

    @property
    def schema(self) -> pa.Schema:
        return schema_of(self.fields)

    def describe(self) -> str:
        return type(self).__name__

    def execute(self, partition: int, ctx: TaskContext) -> Iterator[pa.RecordBatch]:
        raise NotImplementedError


def _profiled(execute):
    @functools.wraps(execute)
    def run(self, partition: int, ctx: TaskContext) -> Iterator[pa.RecordBatch]:
        if ctx.profile is None:
            return execute(self, partition, ctx)
        return ctx.profile.measure(self, iter(execute(self, partition, ctx)))
    return run


def collect(op: PhysicalOperator, partition: int, ctx: TaskContext) -> pa.Table:
    """Run ``op`` to completion into one Table of its schema (blocking operators' inputs)."""
    batches = [b for b in op.execute(partition, ctx) if b.num_rows]
    schema = op.schema
    if not batches:
        return schema.empty_table()
    table = pa.Table.from_batches([conform(b, schema) for b in batches], schema=schema)
    if ctx.profile is not None:
        ctx.profile.held(op, table)
    return table


def conform(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """Cast a batch to ``schema`` when types differ only in detail (e.g. decimal precision)."""
    if batch.schema.equals(schema):
        return batch
    columns = [c if c.type == f.type else c.cast(f.type) for c, f in zip(batch.columns, schema)]
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def table_to_batches(table: pa.Table, max_rows: int = 1 << 20) -> Iterator[pa.RecordBatch]:
    for batch in table.to_batches(max_chunksize=max_rows):
        if batch.num_rows:
            yield batch
