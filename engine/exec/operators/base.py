"""The physical operator contract.

An operator is an immutable description (a frozen dataclass: picklable, shipped inside a StageSpec);
``execute(partition, ctx)`` runs it for one partition and yields ``pa.RecordBatch``es whose column names
are the plan's field ids. Per-run state lives in local variables of ``execute``, never on the operator.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Callable, Iterator, Optional, Sequence

import pyarrow as pa

from engine.exec.distribution import ANY, Distribution, Required
from engine.exec.memory import MemoryPool, Reservation, held_bytes
from engine.core.deadline import Deadline
from engine.core.fields import Field


class TaskContext:
    """What an operator may touch while it runs one task of one stage on a leaf or the aggregator.

    A leaf runs one task per stage over all the partitions it hosts (``partitions``), so a hash table
    built from a broadcast side is built once per leaf, not once per partition, and partial aggregates
    are per leaf (MemSQL's local aggregation). ``task`` numbers the stage's tasks; task 0 is the one
    that emits a scalar aggregate's row when its input is empty.
    """

    def __init__(self, task: int, num_partitions: int, params: Sequence, storage=None,
                 exchange_inputs: Optional[dict[int, list[pa.RecordBatch]]] = None,
                 partitions: Optional[Sequence[int]] = None, profile=None,
                 deadline: Optional[Deadline] = None, memory: Optional[MemoryPool] = None):
        self.task = task
        self.partition = task                       # kept for operators that log or label by task
        self.partitions = tuple(partitions) if partitions is not None else (task,)
        self.num_partitions = num_partitions
        self.params = tuple(params)
        self.storage = storage                      # the leaf's storage (scan access), None on the aggregator
        self.exchange_inputs = exchange_inputs or {}
        self.profile = profile                      # an engine.exec.profile.TaskProfile under EXPLAIN ANALYZE
        # runtime join filter id -> kernels.JoinBloom: built by the hash join holding the id for the
        # scan of its probe side holding it (same task, registered before that side runs)
        self.runtime_filters: dict[int, object] = {}
        self.deadline = deadline                    # statement_timeout / cancel, checked per batch
        # memory_limit: the query's pool in this process, which blocking operators reserve from
        self.memory = memory if memory is not None else MemoryPool(None)
        # (table id, partition) -> the store's snapshot pinned when the query started (embedded
        # runner; a Ray leaf resolves its query's snapshot epoch, cluster.versions): every scan of
        # the query reads the same cut of committed statements
        self.snapshots: dict = {}

    def scan(self, table_id: int, task: int, columns: Sequence[str], replicated: bool,
             batch_rows: Optional[int] = None, bounds=None, encoded: bool = False,
             only: Optional[frozenset] = None, stats: Optional[dict] = None) -> Iterator[pa.RecordBatch]:
        """``bounds``, ``encoded``, ``stats``: see :meth:`engine.storage.PartitionStore.scan`; ``only``:
        the partitions that can hold the wanted rows (None: all of the task's)."""
        for partition in self.scan_partitions(replicated):
            if only is not None and partition not in only:
                continue
            yield from self.storage.scan(table_id, partition, columns, batch_rows, bounds, encoded,
                                         self.snapshots.get((table_id, partition)), stats)

    def scan_partitions(self, replicated: bool) -> tuple[Optional[int], ...]:
        """The storage partitions a scan of this task reads (None: the leaf's reference copy)."""
        return (None,) if replicated else self.partitions


def schema_of(fields: Sequence[Field]) -> pa.Schema:
    return pa.schema([pa.field(f.id, f.type.to_arrow()) for f in fields])


class PhysicalOperator:
    fields: tuple[Field, ...]

    def __init_subclass__(cls, **kwargs):
        # Every operator's execute is wrapped once, here, so EXPLAIN ANALYZE counts each operator's
        # output, and a statement's deadline is checked at every operator's batch boundaries, without
        # operators knowing: a task with neither pays two attribute checks per execute call (not per batch).
        super().__init_subclass__(**kwargs)
        if "execute" in cls.__dict__:
            cls.execute = _profiled(cls.__dict__["execute"])

    @property
    def children(self) -> tuple["PhysicalOperator", ...]:
        return ()

    @property
    def schema(self) -> pa.Schema:
        return self.derived("schema", (self.fields,), lambda: schema_of(self.fields))

    def describe(self) -> str:
        return type(self).__name__

    # -- distribution (engine.exec.distribution): what the operator needs of its inputs, and what its
    # output is. The planner fills ``requires`` of operators whose inputs must move (its choice of
    # strategy); engine.optimizer.exchanges places the exchanges. Default: inputs used where they are,
    # output distributed as the first input (a leaf: spread on no key).
    def required_distributions(self) -> tuple[Optional[Required], ...]:
        requires = getattr(self, "requires", ())
        return tuple(requires) if requires else (None,) * len(self.children)

    def output_distribution(self, inputs: tuple[Distribution, ...]) -> Distribution:
        return inputs[0] if inputs else ANY

    def with_children(self, children: Sequence["PhysicalOperator"]) -> "PhysicalOperator":
        """This operator over ``children`` (in :attr:`children`' order, which is its fields' order)."""
        remaining = list(children)
        replaced = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, PhysicalOperator):
                replaced[f.name] = remaining.pop(0)
            elif isinstance(value, tuple) and value and all(isinstance(v, PhysicalOperator) for v in value):
                replaced[f.name] = tuple(remaining.pop(0) for _ in value)
        assert not remaining, f"{type(self).__name__}: children are not its operator fields"
        return dataclasses.replace(self, **replaced)

    def execute(self, partition: int, ctx: TaskContext) -> Iterator[pa.RecordBatch]:
        raise NotImplementedError

    def derived(self, name: str, sources: tuple, compute: Callable[[], object]):
        """``compute()``, kept on the operator while ``sources`` (the fields it is derived from) are
        the same objects: a cached plan runs one operator many times, and what it derives from its
        description alone (a filter split for the kernels) need not be derived on every run. A copy
        with one of those fields replaced (a plan bound to new parameter values) derives it afresh."""
        cached = self.__dict__.get(_DERIVED + name)
        if cached is not None and len(cached[0]) == len(sources) \
                and all(a is b for a, b in zip(cached[0], sources)):
            return cached[1]
        value = compute()
        self.__dict__[_DERIVED + name] = (sources, value)     # frozen dataclass: not through setattr
        return value

    def __getstate__(self):
        # what travels to another process is the description only, never what was derived here
        return {k: v for k, v in self.__dict__.items() if not k.startswith(_DERIVED)}


_DERIVED = "_derived_"


def _profiled(execute):
    @functools.wraps(execute)
    def run(self, partition: int, ctx: TaskContext) -> Iterator[pa.RecordBatch]:
        batches = execute(self, partition, ctx)
        if ctx.profile is not None:
            batches = ctx.profile.measure(self, iter(batches))
        if ctx.deadline is not None:
            batches = ctx.deadline.guard(batches)
        return batches
    return run


def collect(op: PhysicalOperator, partition: int, ctx: TaskContext,
            reservation: Optional[Reservation] = None) -> pa.Table:
    """Run ``op`` to completion into one Table of its schema (blocking operators' inputs).
    ``reservation``: grown by each batch kept (MemoryLimitError once the query's pool is full)."""
    batches = op.execute(partition, ctx)
    if reservation is not None:
        batches = accounted(batches, reservation)
    batches = [b for b in batches if b.num_rows]
    schema = op.schema
    if not batches:
        return schema.empty_table()
    table = pa.Table.from_batches([conform(b, schema) for b in batches], schema=schema)
    if ctx.profile is not None:
        ctx.profile.held(op, table)
    return table


def accounted(batches: Iterator[pa.RecordBatch], reservation: Reservation) -> Iterator[pa.RecordBatch]:
    """``batches``, each reserved as it passes (for a consumer that keeps them all)."""
    for batch in batches:
        reservation.grow(held_bytes(batch))
        yield batch


def conform(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """Cast a batch to ``schema`` when types differ only in detail (e.g. decimal precision)."""
    if batch.schema.equals(schema):
        return batch
    columns = [c if c.type == f.type else c.cast(f.type) for c, f in zip(batch.columns, schema)]
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def one_array(column) -> pa.Array:
    """``column`` as one Array: a ChunkedArray's only chunk as it is (``combine_chunks`` copies even
    one chunk: a gathered join column was copied twice), several concatenated."""
    if not isinstance(column, pa.ChunkedArray):
        return column
    if column.num_chunks == 1:
        return column.chunk(0)
    return column.combine_chunks()


def table_to_batches(table: pa.Table, max_rows: int = 1 << 20) -> Iterator[pa.RecordBatch]:
    for batch in table.to_batches(max_chunksize=max_rows):
        if batch.num_rows:
            yield batch
