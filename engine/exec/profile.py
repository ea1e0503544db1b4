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
    # a scan's reads from storage (the stores' scan_stats): segments read, rows read (an index
    # lookup reads only its candidate rows; a write buffer is read whole)
    segments_read: int = 0
    rows_read: int = 0

    def merge(self, other: "OperatorCounters") -> None:
        self.segments_read += other.segments_read
        self.rows_read += other.rows_read
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
    # Over a transport (the Ray runner), per link (one producing task -> one consuming task):
    links: int = 0
    batches: int = 0
    batches_compressed: int = 0       # sent LZ4-compressed (adaptive: the link's queue was long)
    bytes_sent: int = 0               # payload bytes, compressed where compressed
    busiest_rows: int = 0             # the link that sent the most bytes
    busiest_bytes: int = 0

    def describe(self, size) -> str:
        """The EXPLAIN ANALYZE text; ``size`` formats a byte count."""
        text = f"{self.rows:,} rows, {size(self.bytes_moved)} moved"
        if self.links:
            text += (f", {size(self.bytes_sent)} sent over {self.links} links, {self.batches_compressed} of "
                     f"{self.batches} batches LZ4, busiest link {self.busiest_rows:,} rows {size(self.busiest_bytes)}")
        return text


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
        self.spilled: dict[str, int] = {}       # operator -> bytes it spilled to disk in this task
        self.peak = 0                           # the most its pool held at once (memory_limit)

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

    def storage_read(self, scan, segments: int, rows: int) -> None:
        """``scan`` read ``segments`` stored segments and ``rows`` rows from its partitions' stores."""
        counters = self._counters(scan)
        if counters is not None:
            counters.segments_read += segments
            counters.rows_read += rows

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
        self.spilled: dict[str, int] = {}       # operator -> bytes spilled to disk (memory_limit)
        self.peak = 0                           # the most one task's pool held at once (memory_limit)
        self.seconds = 0.0

    def add_task(self, task: TaskProfile) -> None:
        self.add_counters(task.stage_id, task.counters)
        self.add_spilled(task.spilled)
        self.peak = max(self.peak, task.peak)

    def add_spilled(self, spilled: dict) -> None:
        """Bytes written to disk past memory_limit, by operator (a task's, or the query's own buffers')."""
        for operator, size in spilled.items():
            if size:
                self.spilled[operator] = self.spilled.get(operator, 0) + size

    def add_counters(self, stage_id: int, counters: dict) -> None:
        """One task's operator counters, ``{path: OperatorCounters}`` (or their ``asdict`` from a remote
        leaf)."""
        for path, c in counters.items():
            c = c if isinstance(c, OperatorCounters) else OperatorCounters(**c)
            self.operators.setdefault((stage_id, tuple(path)), OperatorCounters()).merge(c)

    def add_links(self, stage_id: int, links: list, copies: int = 1) -> None:
        """One producing task's link counters (:class:`cluster.transport.LinkCounters` as dicts), one per
        destination; ``copies``: how many consumers read each payload (a broadcast: every leaf)."""
        counters = self.exchanges.setdefault(stage_id, ExchangeCounters())
        for link in links:
            counters.links += 1
            counters.rows += link["rows"]
            counters.bytes_moved += link["bytes_raw"] * copies
            counters.batches += link["batches"]
            counters.batches_compressed += link["batches_compressed"]
            counters.bytes_sent += link["bytes_sent"] * copies
            if link["bytes_sent"] > counters.busiest_bytes:
                counters.busiest_rows, counters.busiest_bytes = link["rows"], link["bytes_sent"]

    def add_exchange(self, stage_id: int, routed: dict) -> None:
        """``routed``: consuming task -> the batches it receives (LocalRunner._route_output's shape)."""
        counters = self.exchanges.setdefault(stage_id, ExchangeCounters())
        seen: set[int] = set()
        for batches in routed.values():
            if hasattr(batches, "nbytes"):      # an exchange buffer: counted without reading it
                counters.bytes_moved += batches.nbytes
                if id(batches) not in seen:
                    seen.add(id(batches))
                    counters.rows += batches.rows
                continue
            for batch in batches:
                counters.bytes_moved += batch.nbytes
                if id(batch) not in seen:      # a broadcast batch is sent once per leaf, produced once
                    seen.add(id(batch))
                    counters.rows += batch.num_rows
