"""AUTO_INCREMENT: values unique across partitions, handed out by the aggregator.

One counter per table lives beside the runner (shared by its sessions) and starts above the largest
value stored (read once, from every partition, after a start or a restart). An INSERT's rows whose
AUTO_INCREMENT column is NULL or 0 get consecutive values (MySQL); an explicit larger value moves the
counter past it. Values handed to a statement that fails or a transaction rolled back are not reused
(MySQL leaves such gaps too). ``LAST_INSERT_ID()`` and ``cursor.lastrowid`` are the first value the
session's last INSERT generated.
"""
from __future__ import annotations

import threading
from typing import Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine import types as T
from engine.catalog import TableDef


class Counters:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._next: dict[str, int] = {}

    def forget(self, table: TableDef) -> None:
        """A table dropped or created: its counter starts again from what it stores."""
        with self._lock:
            self._next.pop(table.qualified_name.lower(), None)

    def assign(self, runner, table: TableDef, given: np.ndarray, missing: np.ndarray) -> np.ndarray:
        """The column's values for rows ``given`` (int64; rows where ``missing`` get generated ones),
        as MySQL hands them out row after row: a generated value is the counter, which then moves
        one up; an explicit value moves the counter past it. Vectorised: with G(i) the rows generated
        before row i, row i gets G(i) + max(counter, max over earlier explicit rows j of
        given[j] + 1 - G(j))."""
        key = table.qualified_name.lower()
        with self._lock:
            start = self._next.get(key)
            if start is None:
                stored = [m for m in runner.map_column_partitions(table, table.auto_increment, _largest)
                          if m is not None]
                start = max(stored, default=0) + 1
            generated_before = np.concatenate([[0], np.cumsum(missing)]).astype(np.int64)   # G(0..n)
            reach = np.where(missing, np.iinfo(np.int64).min, given + 1 - generated_before[:-1])
            floor = np.maximum(np.maximum.accumulate(np.concatenate([[start], reach])), start)   # per G(i)
            values = np.where(missing, generated_before[:-1] + floor[:-1], given)
            self._next[key] = int(generated_before[-1] + floor[-1])
            return values


def counters_of(runner) -> Counters:
    counters = getattr(runner, "auto_increment", None)
    if counters is None:
        counters = runner.auto_increment = Counters()     # shared by every session of this cluster
    return counters


def _largest(column: pa.ChunkedArray) -> Optional[int]:
    """On a partition: its largest value of the column (run on the leaf)."""
    return pc.max(column).as_py() if len(column) else None


def fill(runner, table: TableDef, data: pa.Table, types: list, columns: list) -> tuple[pa.Table, list, list, Optional[int]]:
    """Give the rows of an INSERT (``data``: one column per entry of ``columns``, of ``types``) their
    AUTO_INCREMENT values; the column is added when the INSERT does not list it. Returns the new
    (data, types, columns) and the first generated value (None when none was)."""
    name = table.auto_increment
    position = next((i for i, c in enumerate(columns) if c.name.lower() == name.lower()), None)
    if position is None:
        given = pa.nulls(data.num_rows, pa.int64())
    else:
        given = data.column(position).combine_chunks() if data.num_rows else pa.array([], pa.int64())
        given = given.cast(pa.int64()) if types[position].kind in ("int", "null", "bool") else \
            pc.cast(given, pa.int64())          # a decimal or text value: MySQL converts it
    missing = pc.fill_null(pc.equal(given, 0), True).to_numpy(zero_copy_only=False)
    if not len(missing):
        return data, types, columns, None
    explicit = pc.fill_null(given, 0).to_numpy(zero_copy_only=False).astype(np.int64)
    values = counters_of(runner).assign(runner, table, explicit, missing)
    filled = pa.array(values, pa.int64())
    first = int(values[np.flatnonzero(missing)[0]]) if missing.any() else None
    if position is None:
        data = data.append_column(f"c{data.num_columns}", filled)
        return data, [*types, T.BIGINT], [*columns, table.column(name)], first
    data = data.set_column(position, data.schema.field(position).name, filled)
    types = [T.BIGINT if i == position else t for i, t in enumerate(types)]
    return data, types, columns, first
