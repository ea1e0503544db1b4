"""A leaf: the table partitions it hosts and the stage tasks it runs over them.

A leaf knows tables only by id and Arrow schema; SQL-level details stay in the aggregator's catalog. It
receives encoded StageSpecs (the same bytes a Ray leaf actor will receive) and returns Arrow batches.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterator, Optional, Sequence

import pyarrow as pa

from cluster.specs import TaskSpec
from engine.errors import CanopyInternalError, MemoryLimitError
from engine.core.deadline import Deadline
from engine.exec import statement_warnings
from engine.exec.memory import MemoryPool, format_bytes, held_bytes
from engine.exec.operators.base import TaskContext
from engine.exec.stages import StageSpec
from engine.storage import MemoryPartitionStore, PartitionStore


class LeafStorage:
    """Partition stores of one leaf, keyed by (table id, partition); a reference table's copy is keyed
    by (table id, None).

    With a ``directory`` the stores are durable columnstores under ``directory/table-ID/part-P``
    (``part-ref`` for a reference table's copy) whose writes commit through ``committer``; without one
    they live in memory."""

    def __init__(self, directory: Optional[Path] = None, committer=None, options=None) -> None:
        self._stores: dict[tuple[int, Optional[int]], PartitionStore] = {}
        # table id -> [(partition, store)]: every query pins and sizes its tables' stores, and a leaf
        # hosts every table's partitions
        self._by_table: dict[int, list[tuple[Optional[int], PartitionStore]]] = {}
        self.directory = directory
        self.committer = committer
        self.options = options

    def create(self, table_id: int, schema: pa.Schema, partitions: Sequence[Optional[int]],
               sort_key: Sequence[str] = (), committed: frozenset = frozenset(), indexed: Sequence[str] = ()) -> None:
        """Create (or, with a directory that already holds them, reopen and recover) the stores;
        ``committed``: the csns of the commit log, which recovery keeps; ``indexed``: the columns
        whose hash index each stored segment gets when written (the first column of each key)."""
        for partition in partitions:
            if self.directory is None:
                store: PartitionStore = MemoryPartitionStore(schema, sort_key)
            else:
                from engine.storage.columnstore import ColumnstorePartitionStore
                part = "part-ref" if partition is None else f"part-{partition}"
                store = ColumnstorePartitionStore(self.directory / f"table-{table_id}" / part, schema, sort_key,
                                                  self.options, self.committer, committed, indexed)
            self._stores[(table_id, partition)] = store
        self._by_table[table_id] = [(k[1], s) for k, s in self._stores.items() if k[0] == table_id]

    def drop(self, table_id: int) -> None:
        self._by_table.pop(table_id, None)
        for key in [k for k in self._stores if k[0] == table_id]:
            store = self._stores.pop(key)
            if hasattr(store, "close"):
                store.close()
        if self.directory is not None:
            import shutil
            shutil.rmtree(self.directory / f"table-{table_id}", ignore_errors=True)

    def all_stores(self) -> list[PartitionStore]:
        return list(self._stores.values())

    def store(self, table_id: int, partition: Optional[int]) -> PartitionStore:
        try:
            return self._stores[(table_id, partition)]
        except KeyError:
            raise CanopyInternalError(f"partition {partition} of table #{table_id} is not on this leaf") from None

    def keys_of(self, stores) -> dict[tuple[int, Optional[int]], PartitionStore]:
        """``{key: store}`` of these store objects (the ones a statement changes)."""
        wanted = {id(store) for store in stores}
        return {key: store for key, store in self._stores.items() if id(store) in wanted}

    def stores_of(self, table_id: int) -> list[tuple[Optional[int], PartitionStore]]:
        return list(self._by_table.get(table_id, ()))

    def scan(self, table_id: int, partition: Optional[int], columns: Sequence[str],
             batch_rows: Optional[int] = None, bounds=None, encoded: bool = False,
             snapshot=None, stats: Optional[dict] = None) -> Iterator[pa.RecordBatch]:
        return self.store(table_id, partition).scan(columns, batch_rows, bounds, encoded, snapshot, stats)


class Leaf:
    def __init__(self, leaf_id: int, partitions: Sequence[int], storage: Optional[LeafStorage] = None):
        self.leaf_id = leaf_id
        self.partitions = tuple(partitions)
        self.storage = storage or LeafStorage()

    def run_task(self, stage: StageSpec, task: TaskSpec, exchange_inputs: dict[int, list[pa.RecordBatch]],
                 profile=None, deadline: Optional[Deadline] = None, snapshots=None,
                 warnings=None) -> list[pa.RecordBatch]:
        """Run one task of a stage to completion over all of this leaf's partitions (the stage's
        output, not yet routed). ``exchange_inputs``: the batches of each exchange the task reads;
        ``profile``: a TaskProfile that counts each operator's output; ``deadline``: checked at every
        operator's batch boundaries (statement_timeout, cancel); ``warnings``: the
        engine.exec.statement_warnings sink its evaluation records into."""
        return list(self.task_batches(stage, task, exchange_inputs, profile, deadline, snapshots,
                                      warnings=warnings))

    def task_batches(self, stage: StageSpec, task: TaskSpec, exchange_inputs: dict[int, list[pa.RecordBatch]],
                     profile=None, deadline: Optional[Deadline] = None, snapshots=None,
                     hold_output: bool = True, warnings=None) -> Iterator[pa.RecordBatch]:
        """The same task as a stream of its non-empty output batches (a Ray leaf sends them as they come).
        ``snapshots``: (table id, partition) -> this leaf's stores' snapshots pinned for the query (a
        dict, or anything with its ``get``: a Ray leaf's :class:`cluster.versions.EpochView`).
        ``hold_output``: the caller keeps the output in memory, so the task's pool counts it; False
        where the caller accounts it itself (the embedded runner's exchange buffers, which spill); an
        :class:`engine.exec.answer.AnswerCollector`: the query's answer, which keeps each batch in
        memory while the task's pool grants it and on disk past it (the batches are still yielded)."""
        # memory_limit: the task's own pool (its spill files go with it when the task ends)
        memory = MemoryPool(task.memory_limit, where=f" on leaf {self.leaf_id}" if self.leaf_id >= 0 else "")
        ctx = TaskContext(task.task, task.num_partitions, task.params, self.storage, exchange_inputs, self.partitions,
                          profile, deadline, memory)
        ctx.snapshots = snapshots if snapshots is not None else {}
        return _task_output(stage, ctx, hold_output, warnings)


def _task_output(stage: StageSpec, ctx: TaskContext, hold_output: bool = True,
                 warnings=None) -> Iterator[pa.RecordBatch]:
    """A task's non-empty output batches, the memory they hold reserved while the task runs (its
    caller keeps them: an exploding join stops at the limit instead of filling the machine), and an
    allocation failure (Python's MemoryError, Arrow's) reported as the query's MemoryLimitError."""
    answer = hold_output if not isinstance(hold_output, bool) else None
    # the answer's share is spillable: it goes to disk past it, leaving the operators theirs
    reservation = ctx.memory.reservation(stage.output_label, spillable=answer is not None)
    try:
        for batch in statement_warnings.collected(stage.root.execute(ctx.task, ctx), warnings):
            if batch.num_rows:
                if answer is not None:
                    answer.hold(batch, reservation)
                elif hold_output:
                    reservation.grow(held_bytes(batch))
                yield batch
    except MemoryError as error:            # pa.ArrowMemoryError is one too
        limit = ctx.memory.limit
        raise MemoryLimitError(
            f"out of memory running stage {stage.stage_id} ({format_bytes(ctx.memory.reserved)} reserved by "
            f"the query, memory_limit = {format_bytes(limit) if limit else 'none'}): {error}",
            operator=stage.root.describe().split(" ")[0], limit=limit) from None
    finally:
        reservation.close()
        if ctx.profile is not None:         # EXPLAIN ANALYZE: what went to disk past memory_limit
            ctx.profile.spilled = dict(ctx.memory.spilled_by)
            ctx.profile.peak = ctx.memory.peak
        ctx.memory.close()
