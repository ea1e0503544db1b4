"""A leaf: the table partitions it hosts and the stage tasks it runs over them.

A leaf knows tables only by id and Arrow schema; SQL-level details stay in the aggregator's catalog. It
receives encoded StageSpecs (the same bytes a Ray leaf actor will receive) and returns Arrow batches.
"""
from __future__ import annotations

from typing import Iterator, Optional, Sequence

import pyarrow as pa

from engine.errors import CanopyInternalError
from engine.exec.operators.base import TaskContext
from engine.exec.stages import StageSpec
from engine.storage import MemoryPartitionStore, PartitionStore


class LeafStorage:
    """Partition stores of one leaf, keyed by (table id, partition); a reference table's copy is keyed
    by (table id, None)."""

    def __init__(self) -> None:
        self._stores: dict[tuple[int, Optional[int]], PartitionStore] = {}

    def create(self, table_id: int, schema: pa.Schema, partitions: Sequence[Optional[int]]) -> None:
        for partition in partitions:
            self._stores[(table_id, partition)] = MemoryPartitionStore(schema)

    def drop(self, table_id: int) -> None:
        for key in [k for k in self._stores if k[0] == table_id]:
            del self._stores[key]

    def store(self, table_id: int, partition: Optional[int]) -> PartitionStore:
        try:
            return self._stores[(table_id, partition)]
        except KeyError:
            raise CanopyInternalError(f"partition {partition} of table #{table_id} is not on this leaf") from None

    def stores_of(self, table_id: int) -> list[tuple[Optional[int], PartitionStore]]:
        return [(k[1], s) for k, s in self._stores.items() if k[0] == table_id]

    def scan(self, table_id: int, partition: Optional[int], columns: Sequence[str],
             batch_rows: Optional[int] = None) -> Iterator[pa.RecordBatch]:
        return self.store(table_id, partition).scan(columns, batch_rows)


class Leaf:
    def __init__(self, leaf_id: int, partitions: Sequence[int]):
        self.leaf_id = leaf_id
        self.partitions = tuple(partitions)
        self.storage = LeafStorage()

    def run_task(self, stage: StageSpec, task: int, num_partitions: int, params: Sequence,
                 exchange_inputs: dict[int, list[pa.RecordBatch]]) -> list[pa.RecordBatch]:
        """Run one task of a stage to completion over all of this leaf's partitions (the stage's
        output, not yet routed)."""
        return list(self.task_batches(stage, task, num_partitions, params, exchange_inputs))

    def task_batches(self, stage: StageSpec, task: int, num_partitions: int, params: Sequence,
                     exchange_inputs: dict[int, list[pa.RecordBatch]]) -> Iterator[pa.RecordBatch]:
        """The same task as a stream of its non-empty output batches (a Ray leaf sends them as they come)."""
        ctx = TaskContext(task, num_partitions, params, self.storage, exchange_inputs, self.partitions)
        return (b for b in stage.root.execute(task, ctx) if b.num_rows)
