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

    def take(self, runner, table: TableDef, count: int, largest_given: Optional[int]) -> int:
        """Reserve ``count`` values above everything stored or given; the first of them."""
        key = table.qualified_name.lower()
        with self._lock:
            start = self._next.get(key)
            if start is None:
                stored = [m for m in runner.map_column_partitions(table, table.auto_increment, _largest)
                          if m is not None]
                start = max(stored, default=0) + 1
            if largest_given is not None:
                start = max(start, largest_given + 1)
            self._next[key] = start + count
            return start


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
    values = given.to_numpy(zero_copy_only=False).astype(object) if given.null_count else given.to_numpy()
    missing = pc.fill_null(pc.equal(given, 0), True).to_numpy(zero_copy_only=False)
    count = int(missing.sum())
    explicit = pc.max(pc.filter(given, pa.array(~missing))).as_py() if count < len(missing) else None
    if count == 0 and explicit is None:
        return data, types, columns, None
    start = counters_of(runner).take(runner, table, count, explicit)
    if count:
        values = np.where(missing, 0, values).astype(np.int64)
        values[missing] = np.arange(start, start + count, dtype=np.int64)
        filled = pa.array(values, pa.int64())
    else:
        filled = given
    if position is None:
        data = data.append_column(f"c{data.num_columns}", filled)
        return data, [*types, T.BIGINT], [*columns, table.column(name)], (start if count else None)
    data = data.set_column(position, data.schema.field(position).name, filled)
    types = [T.BIGINT if i == position else t for i, t in enumerate(types)]
    return data, types, columns, (start if count else None)
