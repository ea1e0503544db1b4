"""In-memory partition store: an immutable list of Arrow batches swapped atomically on write."""
from __future__ import annotations

import threading
from typing import Iterator, Optional, Sequence

import numpy as np
import pyarrow as pa

from engine.storage.interface import PartitionStore

# Small appends (INSERT ... VALUES) are coalesced so scans do not iterate over thousands of tiny batches.
_COALESCE_BELOW_ROWS = 64 * 1024
# ... and a tail of this many small pieces is concatenated into one (a pipeline committing one small file
# at a time, or single-row INSERTs, would otherwise leave up to 64k one-row batches for every scan).
_TAIL_PIECES = 16


class MemoryPartitionStore(PartitionStore):
    """Sealed batches plus a tail of small ones. Small appends (INSERT ... VALUES, the pieces a load
    routes to each partition) collect in the tail and are concatenated once it holds enough rows, so a
    scan never iterates over thousands of tiny batches and appends never re-copy what is sealed."""

    def __init__(self, schema: pa.Schema) -> None:
        self.schema = schema
        self._sealed: tuple[pa.RecordBatch, ...] = ()
        self._tail: tuple[pa.RecordBatch, ...] = ()
        self._tail_rows = 0
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
                tail, tail_rows = self._tail + (batch,), self._tail_rows + batch.num_rows
                if tail_rows >= _COALESCE_BELOW_ROWS:
                    self._sealed = self._sealed + self._concatenated(tail)
                    tail, tail_rows = (), 0
                elif len(tail) >= _TAIL_PIECES:
                    tail = self._concatenated(tail)     # copies at most 64k rows once per 16 appends
                self._tail, self._tail_rows = tail, tail_rows
            self._rows += batch.num_rows

    def _concatenated(self, batches: tuple[pa.RecordBatch, ...]) -> tuple[pa.RecordBatch, ...]:
        return tuple(pa.Table.from_batches(batches, schema=self.schema).combine_chunks().to_batches())

    def snapshot(self) -> tuple[pa.RecordBatch, ...]:
        """The batches a scan starting now reads (immutable)."""
        with self._lock:
            return self._sealed + self._tail

    def scan(self, columns: Optional[Sequence[str]] = None, batch_rows: Optional[int] = None,
             bounds=None, encoded: bool = False, snapshot=None) -> Iterator[pa.RecordBatch]:
        for batch in snapshot if snapshot is not None else self.snapshot():
            if columns is not None:
                batch = batch.select(list(columns))
            if batch_rows and batch.num_rows > batch_rows:
                for start in range(0, batch.num_rows, batch_rows):
                    yield batch.slice(start, batch_rows)
            else:
                yield batch

    def row_count(self) -> int:
        return self._rows

    def delete_rows(self, matcher, collect: bool = False) -> "_MemoryDelete":
        """The rows ``matcher`` selects (a bool ndarray per batch of ``matcher.columns``; True:
        delete), removed when the returned part is applied (the caller holds the writers' lock until
        then). ``collect``: the part keeps the deleted rows in ``deleted_rows``."""
        with self._lock:
            snapshot = self._sealed + self._tail
        kept, deleted_rows, deleted = [], [], 0
        columns = list(matcher.columns)
        for batch in snapshot:
            mask = matcher(batch.select(columns))
            hits = int(np.count_nonzero(mask))
            if not hits:
                kept.append(batch)
                continue
            deleted += hits
            if hits < batch.num_rows:
                kept.append(batch.filter(pa.array(~mask)))
            if collect:
                deleted_rows.append(batch.filter(pa.array(mask)))
        return _MemoryDelete(self, kept if deleted else None, deleted, deleted_rows)

    def replace(self, batches: Sequence[pa.RecordBatch]) -> None:
        batches = tuple(b for b in batches if b.num_rows)
        with self._lock:
            self._sealed, self._tail, self._tail_rows = batches, (), 0
            self._rows = sum(b.num_rows for b in batches)


class _MemoryDelete:
    def __init__(self, store: MemoryPartitionStore, kept, deleted: int, deleted_rows):
        self.store, self.kept, self.deleted, self.deleted_rows = store, kept, deleted, deleted_rows

    def apply(self) -> None:
        if self.kept is not None:
            self.store.replace(self.kept)

    def abort(self) -> None:
        pass                    # nothing was changed before apply
