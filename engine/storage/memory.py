"""In-memory partition store: the columnstore without files.

Rows live in encoded in-memory segments (:class:`~engine.storage.columnstore.memory_segment.MemorySegment`:
the same encodings, zone maps and statistics as a ``data_dir``'s segment files) plus a *tail* of plain
Arrow batches for small appends, flushed into a segment once it holds ``flush_rows`` rows (a write of
``_BULK_ROWS`` rows or more is encoded at once). The store's
snapshot has the columnstore's shape ``(segments, tail batches)``, so every reader of encoded
segments serves both stores.

Writes are *prepared* then *applied* (:meth:`MemoryPartitionStore.prepare_write`,
:meth:`MemoryPartitionStore.delete_rows`): the expensive part (encoding a bulk insert, evaluating a
DELETE's predicate) happens in prepare, outside the lock that publishes statements to readers; apply
swaps immutable tuples. The caller (a transaction of :mod:`cluster.writes`, whose embedded runner holds
the writers' exclusive lock from prepare to apply, or whose Ray driver runs one at a time) makes sure
no other write comes between.
"""
from __future__ import annotations

import threading
from typing import Iterator, Optional, Sequence

import numpy as np
import pyarrow as pa

from engine.storage.columnstore.memory_segment import MemorySegment
from engine.storage.columnstore.segment import sort_rows
from engine.storage.columnstore.store import StoreOptions, index_lookup, merge_candidates, scan_snapshot
from engine.storage.interface import PartitionStore

# Small appends (INSERT ... VALUES) pile up in the tail; a tail of this many pieces is concatenated
# into one (single-row INSERTs would otherwise leave thousands of one-row batches for every scan).
_TAIL_PIECES = 16

# A write of this many rows (one statement's rows for the partition: a LOAD DATA, an INSERT ... SELECT)
# is encoded into a segment at once, even under flush_rows. Without a file, a tail row costs nothing
# to keep but is read plain by every scan: no dictionary codes, run ends or zone maps, and in the
# load's small routed pieces (TPC-H SF 1's partsupp, part and customer, 19k-100k rows a partition,
# stayed in tails of 3-4k-row batches, so every join and filter on them ran on strings, piece by piece).
_BULK_ROWS = 1 << 14

_DEFAULT_OPTIONS = StoreOptions(column_cache_bytes=0)


class MemoryPartitionStore(PartitionStore):
    """Encoded segments plus a plain tail (see the module docstring). ``sort_key``: each segment's
    rows are sorted by it, as a ``data_dir``'s are (a sorted column becomes runs)."""

    def __init__(self, schema: pa.Schema, sort_key: Sequence[str] = (), options: Optional[StoreOptions] = None):
        self.schema = schema
        self.sort_key = tuple(sort_key)
        self.options = options or _DEFAULT_OPTIONS
        self._segments: tuple[MemorySegment, ...] = ()
        self._tail: tuple[pa.RecordBatch, ...] = ()
        self._tail_rows = 0
        self._lock = threading.Lock()
        # what scans read, as the data_dir store counts it (segments, rows, index lookups)
        self.scan_stats = {"segments_read": 0, "rows_read": 0, "index_lookups": 0}

    # -- reads ------------------------------------------------------------------------------------
    def snapshot(self) -> tuple[tuple[MemorySegment, ...], tuple[pa.RecordBatch, ...]]:
        """The segments and tail batches a scan starting now reads (both immutable)."""
        with self._lock:
            return self._segments, self._tail

    def scan(self, columns: Optional[Sequence[str]] = None, batch_rows: Optional[int] = None,
             bounds=None, encoded: bool = False, snapshot=None, stats: Optional[dict] = None) -> Iterator[pa.RecordBatch]:
        segments, tail = snapshot if snapshot is not None else self.snapshot()
        names = list(columns) if columns is not None else self.schema.names
        return scan_snapshot(segments, tail, names, batch_rows, bounds, encoded,
                             index_lookup(self.schema, bounds),
                             (self.scan_stats,) if stats is None else (self.scan_stats, stats))

    def row_count(self) -> int:
        with self._lock:
            return sum(s.info.live_rows for s in self._segments) + self._tail_rows

    def segment_infos(self):
        with self._lock:
            return tuple(s.info for s in self._segments)

    # -- writes -----------------------------------------------------------------------------------
    def append(self, batch: pa.RecordBatch) -> None:
        self.prepare_write([batch]).apply()

    def replace(self, batches: Sequence[pa.RecordBatch]) -> None:
        self.prepare_write(batches, replace=True).apply()

    def prepare_write(self, batches: Sequence[pa.RecordBatch], replace: bool = False) -> "_MemoryWrite":
        """Rows to append (or to replace every row with), encoded now when they are many; nothing is
        visible until the returned part is applied."""
        batches = [self._conform(b) for b in batches if b.num_rows]
        rows = sum(b.num_rows for b in batches)
        if rows >= min(self.options.flush_rows, _BULK_ROWS):
            return _MemoryWrite(self, self._encode(batches), (), replace)
        return _MemoryWrite(self, (), tuple(batches), replace)

    def delete_rows(self, matcher, collect: bool = False) -> "_MemoryDelete":
        """The rows ``matcher`` selects (a bool ndarray per decoded batch of ``matcher.columns``;
        True: delete), removed when the returned part is applied (the caller holds the writers'
        lock until then): segments get a new deletion bitmap, the tail is filtered. ``collect``: the
        part keeps the deleted rows (all columns) in ``deleted_rows``. ``matcher.bounds`` (optional)
        skip segments by their zone maps, as on disk."""
        segments, tail = self.snapshot()
        columns = list(matcher.columns)
        bounds = getattr(matcher, "bounds", None)
        kept_segments, collected, count = [], [], 0
        for segment in segments:
            if bounds and not segment.info.may_match(bounds):
                kept_segments.append(segment)
                continue
            masks = [matcher(b) for b in segment.batches(columns, None, with_deleted=True)]
            hit = np.concatenate(masks) if masks else np.zeros(segment.info.rows, bool)
            old = segment.deleted_mask()
            if old is not None:
                hit &= ~old
            matched = int(np.count_nonzero(hit))
            if not matched:
                kept_segments.append(segment)
                continue
            count += matched
            if collect:
                rows = pa.Table.from_batches(list(segment.batches(self.schema.names, None, with_deleted=True)),
                                             schema=self.schema)
                collected.extend(rows.filter(pa.array(hit)).to_batches())
            new = hit if old is None else old | hit
            if not new.all():
                kept_segments.append(segment.with_deleted(new))
        kept_tail = []
        for batch in tail:
            mask = matcher(batch.select(columns))
            hits = int(np.count_nonzero(mask))
            if not hits:
                kept_tail.append(batch)
                continue
            count += hits
            if hits < batch.num_rows:
                kept_tail.append(batch.filter(pa.array(~mask)))
            if collect:
                collected.append(batch.filter(pa.array(mask)))
        state = (tuple(kept_segments), tuple(kept_tail)) if count else None
        return _MemoryDelete(self, state, count, collected)

    # -- maintenance ------------------------------------------------------------------------------
    def flush(self) -> None:
        """Encode the tail into a segment (OPTIMIZE TABLE)."""
        with self._lock:
            if self._tail:
                self._segments = self._segments + self._encode(self._tail)
                self._tail, self._tail_rows = (), 0

    def merge(self, force: bool = False, **_ignored) -> int:
        """Re-encode small segments (under half of ``segment_rows``: at least ``merge_segments`` of
        them, two when ``force``) and those with a quarter of their rows deleted (``force``: any) as
        full segments of their live rows. Returns how many segments were merged."""
        with self._lock:
            chosen = self._merge_candidates(self._segments, force)
            if chosen:
                self._merge(chosen)
            return len(chosen)

    def _merge_candidates(self, segments, force: bool) -> list[MemorySegment]:
        return merge_candidates(segments, self.options, force)

    def _merge(self, chosen: list[MemorySegment]) -> None:
        """Caller holds ``_lock``."""
        names = self.schema.names
        batches = [b for s in chosen for b in s.batches(names, None)]
        ids = {id(s) for s in chosen}
        self._segments = tuple(s for s in self._segments if id(s) not in ids) + self._encode(batches)

    def _encode(self, batches) -> tuple[MemorySegment, ...]:
        """Segments of ``batches`` (sorted by the sort key, at most ``segment_rows`` rows each)."""
        table = sort_rows(pa.Table.from_batches(list(batches), schema=self.schema), self.sort_key)
        step = self.options.segment_rows
        return tuple(MemorySegment.encode(table.slice(start, step), self.options.chunk_rows)
                     for start in range(0, table.num_rows, step))

    def _install_write(self, segments: tuple, tail: tuple, replace: bool) -> None:
        with self._lock:
            if replace:
                self._segments, self._tail, self._tail_rows = (), (), 0
            self._segments = self._segments + segments
            self._tail_rows += sum(b.num_rows for b in tail)
            tail = self._tail + tail
            if self._tail_rows >= self.options.flush_rows:
                self._segments = self._segments + self._encode(tail)
                tail, self._tail_rows = (), 0
            elif len(tail) >= _TAIL_PIECES:
                # copies at most flush_rows rows once per _TAIL_PIECES appends
                tail = tuple(pa.Table.from_batches(tail, schema=self.schema).combine_chunks().to_batches())
            self._tail = tail
            chosen = self._merge_candidates(self._segments, force=False)
            if chosen:
                self._merge(chosen)

    def _install_delete(self, segments: tuple, tail: tuple) -> None:
        with self._lock:
            self._segments, self._tail = segments, tail
            self._tail_rows = sum(b.num_rows for b in tail)
            dead = [s for s in segments if s.info.deleted * 4 >= s.info.rows > 0 and s.info.deleted]
            if dead:
                self._merge(dead)

    def _conform(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        if batch.schema.equals(self.schema):
            return batch
        return pa.RecordBatch.from_arrays(batch.columns, schema=self.schema)


class _MemoryWrite:
    """A prepared append or replace: segments already encoded plus tail batches."""

    def __init__(self, store: MemoryPartitionStore, segments: tuple, tail: tuple, replace: bool):
        self.store, self.segments, self.tail, self.replace = store, segments, tail, replace

    def apply(self) -> None:
        self.store._install_write(self.segments, self.tail, self.replace)

    def abort(self) -> None:
        pass                    # nothing was changed before apply


class _MemoryDelete:
    def __init__(self, store: MemoryPartitionStore, state, deleted: int, deleted_rows):
        self.store, self.state, self.deleted, self.deleted_rows = store, state, deleted, deleted_rows

    def apply(self) -> None:
        if self.state is not None:
            self.store._install_delete(*self.state)

    def abort(self) -> None:
        pass                    # nothing was changed before apply
