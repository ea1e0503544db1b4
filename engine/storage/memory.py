"""In-memory partition store: an immutable list of Arrow batches swapped atomically on write."""
from __future__ import annotations

import threading
from typing import Iterator, Optional, Sequence

import pyarrow as pa

from engine.storage.interface import PartitionStore

# Small appends (INSERT ... VALUES) are coalesced so scans do not iterate over thousands of tiny batches.
_COALESCE_BELOW_ROWS = 64 * 1024


class MemoryPartitionStore(PartitionStore):
    """Sealed batches plus a tail of small ones. Small appends (INSERT ... VALUES, the pieces a load
    routes to each partition) collect in the tail and are concatenated once it holds enough rows, so a
    scan never iterates over thousands of tiny batches and appends never re-copy what is sealed."""

    def __init__(self, schema: pa.Schema) -> None:
        self.schema = schema
        self._sealed: tuple[pa.RecordBatch, ...] = ()
        self._tail: tuple[pa.RecordBatch, ...] = ()
        self._rows = 0
        self._lock = threading.Lock()

    def append(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows == 0:
            return
        if batch.schema != self.schema:
            batch = pa.RecordBatch.from_arrays(batch.columns, schema=self.schema)
        with self._lock:
            if batch.num_rows >= _COALESCE_BELOW_ROWS:
                self._sealed = self._sealed + (batch,)
            else:
                tail = self._tail + (batch,)
                if sum(b.num_rows for b in tail) >= _COALESCE_BELOW_ROWS:
                    merged = pa.Table.from_batches(tail, schema=self.schema).combine_chunks().to_batches()
                    self._sealed = self._sealed + tuple(merged)
                    tail = ()
                self._tail = tail
            self._rows += batch.num_rows

    def scan(self, columns: Optional[Sequence[str]] = None, batch_rows: Optional[int] = None,
             bounds=None, encoded: bool = False) -> Iterator[pa.RecordBatch]:
        with self._lock:
            snapshot = self._sealed + self._tail
        for batch in snapshot:
            if columns is not None:
                batch = batch.select(list(columns))
            if batch_rows and batch.num_rows > batch_rows:
                for start in range(0, batch.num_rows, batch_rows):
                    yield batch.slice(start, batch_rows)
            else:
                yield batch

    def row_count(self) -> int:
        return self._rows

    def replace(self, batches: Sequence[pa.RecordBatch]) -> None:
        batches = tuple(b for b in batches if b.num_rows)
        with self._lock:
            self._sealed, self._tail = batches, ()
            self._rows = sum(b.num_rows for b in batches)
