"""Table statistics the optimizer reads, from the runner's metadata.

Row counts are exact and free (each partition store keeps its count). Distinct counts are computed on
demand for the columns a query's estimates ask about, then cached until the table's row count moves by
more than a fifth. ``ANALYZE TABLE`` with sketches and histograms replaces this with issue 7.
"""
from __future__ import annotations

import threading

from engine.catalog import TableDef

_REFRESH_RATIO = 0.2


class RunnerStatistics:
    def __init__(self, runner) -> None:
        self.runner = runner
        self._ndv: dict[tuple[int, str], tuple[int, int]] = {}    # (table id, column) -> (rows then, ndv)
        self._lock = threading.Lock()

    def table_rows(self, table: TableDef) -> int:
        return self.runner.row_count(table)

    def column_ndv(self, table: TableDef, column: str) -> int:
        rows = self.table_rows(table)
        key = (table.table_id, column.lower())
        with self._lock:
            cached = self._ndv.get(key)
        if cached is not None and abs(rows - cached[0]) <= _REFRESH_RATIO * max(cached[0], 1):
            return cached[1]
        ndv = max(1, self.runner.distinct_count(table, column)) if rows else 1
        with self._lock:
            self._ndv[key] = (rows, ndv)
        return ndv

    def forget(self, table: TableDef) -> None:
        with self._lock:
            for key in [k for k in self._ndv if k[0] == table.table_id]:
                del self._ndv[key]
