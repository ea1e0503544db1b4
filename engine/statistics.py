"""Table statistics the optimizer reads, held by the runner's aggregator for every session.

Row counts are exact and free (each partition store keeps its count). Column statistics (nulls, min,
max, a HyperLogLog NDV, a histogram with exact frequent values: :mod:`engine.stats`) are collected by
``ANALYZE TABLE`` for every column, or on demand for a column a query's estimates ask about. They are
kept per (table id, column) with the row count they were collected at, and collected again when the
table's rows have moved by more than a fifth since (a load, a DELETE, a TRUNCATE): catalog objects are
frozen, so this side structure is the statistics' home in the catalog.
"""
from __future__ import annotations

import threading
from typing import Iterable, Optional

from engine.catalog import TableDef
from engine.stats import ColumnStats, collect_column

_REFRESH_RATIO = 0.2


class RunnerStatistics:
    def __init__(self, runner) -> None:
        self.runner = runner
        self._columns: dict[tuple[int, str], ColumnStats] = {}     # (table id, column) -> stats
        self._lock = threading.Lock()
        # a data directory keeps them across restarts (engine.catalog_store.PersistentStatistics)
        self._persisted = getattr(runner, "statistics_store", None)
        if self._persisted is not None:
            self._columns.update(self._persisted.load())

    def table_rows(self, table: TableDef) -> int:
        return self.runner.row_count(table)

    def column_stats(self, table: TableDef, column: str) -> ColumnStats:
        key = (table.table_id, column.lower())
        with self._lock:
            cached = self._columns.get(key)
        if cached is not None and not self._stale(cached, self.table_rows(table)):
            return cached
        return self._collect(table, table.column(column).name)

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
        self._save()

    def _collect(self, table: TableDef, column: str) -> ColumnStats:
        stats = collect_column(lambda fn: self.runner.map_column_partitions(table, column, fn))
        with self._lock:
            self._columns[(table.table_id, column.lower())] = stats
        self._save()
        return stats

    def _save(self) -> None:
        if self._persisted is not None:
            with self._lock:
                columns = dict(self._columns)
            self._persisted.save(columns)

    @staticmethod
    def _stale(stats: ColumnStats, rows: int) -> bool:
        return abs(rows - stats.rows) > _REFRESH_RATIO * max(stats.rows, 1)
