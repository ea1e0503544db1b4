"""Counters for EXPLAIN ANALYZE / PROFILE: what each operator and each exchange actually did.

An operator is named by ``(stage_id, path)``: its stage and the child indexes (``children`` order)
from the stage's root. Both the planner's tree (with its exchanges) and a decoded stage on a leaf
derive the same names, so counters survive the pickling of stages without keys stored in operators.

Contract: a :class:`TaskProfile` belongs to one task and is written only by the thread running it;
the runner merges the task profiles of a query into one :class:`QueryProfile` after the tasks end.
Times are inclusive (an operator's time contains its children's, since they run inside its
``next()``) and summed over the stage's tasks, so on a parallel stage they are CPU-like, not wall.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Iterator, Optional

import pyarrow as pa

Path = tuple[int, ...]


@dataclass
class OperatorCounters:
    rows: int = 0
    batches: int = 0
    seconds: float = 0.0
    tasks: int = 0
    held_bytes: int = 0      # largest input a blocking operator collected in one task (0: streams)
    filter_rows_in: int = 0  # a scan's runtime join filters: rows tested, rows kept
    filter_rows_kept: int = 0

    def merge(self, other: "OperatorCounters") -> None:
        self.filter_rows_in += other.filter_rows_in
        self.filter_rows_kept += other.filter_rows_kept
        self.rows += other.rows
        self.batches += other.batches
        self.seconds += other.seconds
        self.tasks += other.tasks
        self.held_bytes = max(self.held_bytes, other.held_bytes)


@dataclass
class ExchangeCounters:
    rows: int = 0            # rows the producing stage sent
    bytes_moved: int = 0     # Arrow buffer bytes delivered, summed over destinations (broadcast: × leaves)


def operator_paths(root) -> dict[int, Path]:
    """id(operator) -> path, for one live stage tree (valid while the tree is alive)."""
    paths: dict[int, Path] = {}

    def walk(op, path: Path) -> None:
        paths.setdefault(id(op), path)
        for i, child in enumerate(op.children):
            walk(child, path + (i,))

    walk(root, ())
    return paths


class TaskProfile:
    """One task's counters; ``TaskContext.profile`` points at it while the task runs."""

    def __init__(self, stage_id: int, root):
        self.stage_id = stage_id
        self.paths = operator_paths(root)
        self.counters: dict[Path, OperatorCounters] = {}

    def _counters(self, op) -> Optional[OperatorCounters]:
        path = self.paths.get(id(op))
        if path is None:
            return None
        return self.counters.setdefault(path, OperatorCounters())

    def measure(self, op, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        counters = self._counters(op)
        if counters is None:
            yield from batches
            return
        counters.tasks += 1
        clock = time.perf_counter
        while True:
            start = clock()
            try:
                batch = next(batches)
            except StopIteration:
                counters.seconds += clock() - start
                return
            counters.seconds += clock() - start
            counters.rows += batch.num_rows
            counters.batches += 1
            yield batch

    def runtime_filter(self, scan, rows_in: int, rows_kept: int) -> None:
        """A runtime join filter (a hash join's Bloom filter) tested ``rows_in`` rows of ``scan``."""
        counters = self._counters(scan)
        if counters is not None:
            counters.filter_rows_in += rows_in
            counters.filter_rows_kept += rows_kept

    def held(self, consumer_input, table: pa.Table) -> None:
        """A blocking operator collected ``table`` from its input ``consumer_input``."""
        counters = self._counters(consumer_input)
        if counters is not None:
            counters.held_bytes = max(counters.held_bytes, table.nbytes)


class QueryProfile:
    """The merged counters of one plan run: operators by (stage_id, path), exchanges by stage_id."""

    def __init__(self):
        self.operators: dict[tuple[int, Path], OperatorCounters] = {}
        self.exchanges: dict[int, ExchangeCounters] = {}
        self.seconds = 0.0

    def add_task(self, task: TaskProfile) -> None:
        for path, counters in task.counters.items():
            self.operators.setdefault((task.stage_id, path), OperatorCounters()).merge(counters)

    def add_exchange(self, stage_id: int, routed: dict) -> None:
        """``routed``: consuming task -> the batches it receives (LocalRunner._route_output's shape)."""
        counters = self.exchanges.setdefault(stage_id, ExchangeCounters())
        seen: set[int] = set()
        for batches in routed.values():
            for batch in batches:
                counters.bytes_moved += batch.nbytes
                if id(batch) not in seen:      # a broadcast batch is sent once per leaf, produced once
                    seen.add(id(batch))
                    counters.rows += batch.num_rows
