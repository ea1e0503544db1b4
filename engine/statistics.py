"""Table statistics the optimizer reads, held by the runner's aggregator for every session.

Row counts are exact and free (each partition store keeps its count). Column statistics (nulls, min,
max, a HyperLogLog NDV, a histogram with exact frequent values: :mod:`engine.stats`) are collected by
``ANALYZE TABLE`` for every column, synchronously, or when a query's estimates ask about a column.

A query does not wait for a full collection (two passes over every partition of the column: ~0.7 s
for 10M rows). It gets *quick* statistics at once (:mod:`engine.stats.quick`: rows, nulls, min, max
and an NDV from the segments' manifests and write-time sketches, or from a bounded sample of an
in-memory table; EXPLAIN names their source, ``segment metadata`` or ``sample``), and the full
collection is queued on one background thread; its histogram replaces them when done (and the plan
cache is invalidated, so later queries plan from it). :meth:`RunnerStatistics.wait` blocks until the
queue is empty (tests, benchmarks). A runner without ``map_partitions`` collects synchronously, as
before.

Statistics are kept per (table id, column) with the row count they were collected at, and collected
again when the table's rows have moved by more than a fifth since (a load, a DELETE, a TRUNCATE):
meanwhile the stale ones are still used. Catalog objects are frozen, so this side structure is the
statistics' home in the catalog.
"""
from __future__ import annotations

import logging
import queue
import threading
from functools import partial
from typing import Iterable, Optional

from engine.catalog import TableDef
from engine.stats import ColumnStats, collect_column
from engine.stats.quick import merge as merge_quick
from engine.stats.quick import summarize_store

log = logging.getLogger(__name__)

_REFRESH_RATIO = 0.2


class RunnerStatistics:
    def __init__(self, runner, background: bool = True) -> None:
        self.runner = runner
        self._columns: dict[tuple[int, str], ColumnStats] = {}     # (table id, column) -> stats
        self._lock = threading.Lock()
        # a data directory keeps them across restarts (engine.catalog_store.PersistentStatistics)
        self._persisted = getattr(runner, "statistics_store", None)
        if self._persisted is not None:
            self._columns.update(self._persisted.load())
        # background collection: queued (table, column name), the keys queued or running, and a
        # generation per table bumped by forget() (a collection that started before is dropped)
        self.background = background and callable(getattr(runner, "map_partitions", None))
        self._queue: "queue.Queue[tuple[TableDef, str, int]]" = queue.Queue()
        self._pending: set[tuple[int, str]] = set()
        self._generations: dict[int, int] = {}
        self._idle = threading.Condition(self._lock)
        self._worker: Optional[threading.Thread] = None

    def table_rows(self, table: TableDef) -> int:
        return self.runner.row_count(table)

    def column_stats(self, table: TableDef, column: str) -> ColumnStats:
        key = (table.table_id, column.lower())
        with self._lock:
            cached = self._columns.get(key)
            pending = key in self._pending
        name = table.column(column).name
        if cached is not None and (pending or not self._stale(cached, self.table_rows(table))):
            if cached.source != "histogram" and not pending and self.background:
                self._schedule(table, name)     # a background collection that failed: try again
            return cached
        if not self.background:
            return self._collect(table, name)
        quick = self._quick(table, name)
        with self._lock:
            if self._columns.get(key) is cached:        # not replaced meanwhile by a full collection
                self._columns[key] = quick
        self._schedule(table, name)
        return quick

    def column_ndv(self, table: TableDef, column: str) -> int:
        return max(1, round(self.column_stats(table, column).ndv))

    def analyze(self, table: TableDef, columns: Optional[Iterable[str]] = None) -> dict[str, ColumnStats]:
        """Collect statistics of ``columns`` (all by default) now, whatever is cached."""
        names = [table.column(c).name for c in columns] if columns is not None else [c.name for c in table.columns]
        return {name: self._collect(table, name) for name in names}

    def cached(self, table: TableDef, column: str) -> Optional[ColumnStats]:
        """What is kept for the column, stale or not, without collecting (for tests and SHOW)."""
        with self._lock:
            return self._columns.get((table.table_id, column.lower()))

    def forget(self, table: TableDef) -> None:
        with self._lock:
            for key in [k for k in self._columns if k[0] == table.table_id]:
                del self._columns[key]
            self._generations[table.table_id] = self._generations.get(table.table_id, 0) + 1
        self._save()

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Block until no background collection is queued or running; False if ``timeout`` (seconds)
        passed first."""
        with self._idle:
            return self._idle.wait_for(lambda: not self._pending, timeout)

    # -- collection -------------------------------------------------------------------------------
    def _quick(self, table: TableDef, column: str) -> ColumnStats:
        return merge_quick(self.runner.map_partitions(table, partial(summarize_store, column=column)))

    def _schedule(self, table: TableDef, column: str) -> None:
        key = (table.table_id, column.lower())
        with self._lock:
            if key in self._pending:
                return
            self._pending.add(key)
            self._queue.put((table, column, self._generations.get(table.table_id, 0)))
            if self._worker is None:
                self._worker = threading.Thread(target=self._work, name="canopy-statistics", daemon=True)
                self._worker.start()

    def _work(self) -> None:
        """The background thread: collects what is queued, and ends when nothing is (items are queued
        under the lock, so one queued as it decides to end starts a new thread)."""
        while True:
            with self._lock:
                if self._queue.empty():
                    self._worker = None
                    return
                table, column, generation = self._queue.get()
            key = (table.table_id, column.lower())
            try:
                stats = collect_column(lambda fn: self.runner.map_column_partitions(table, column, fn))
            except Exception as error:      # a dropped table, a runner shut down: statistics only steer plans
                log.info("background statistics of %s.%s not collected: %s", table.name, column, error)
                stats = None
            with self._lock:
                current = self._generations.get(table.table_id, 0) == generation
                if stats is not None and current:
                    self._columns[key] = stats
            if stats is not None and current:
                self._save()
                plans = getattr(self.runner, "plan_cache", None)
                if plans is not None:
                    plans.invalidate()      # plans chosen from the quick statistics may change
            with self._idle:
                self._pending.discard(key)
                self._idle.notify_all()

    def _collect(self, table: TableDef, column: str) -> ColumnStats:
        stats = collect_column(lambda fn: self.runner.map_column_partitions(table, column, fn))
        with self._lock:
            self._columns[(table.table_id, column.lower())] = stats
        self._save()
        return stats

    def _save(self) -> None:
        if self._persisted is not None:
            with self._lock:
                columns = {k: v for k, v in self._columns.items() if v.source == "histogram"}
            self._persisted.save(columns)

    @staticmethod
    def _stale(stats: ColumnStats, rows: int) -> bool:
        return abs(rows - stats.rows) > _REFRESH_RATIO * max(stats.rows, 1)
