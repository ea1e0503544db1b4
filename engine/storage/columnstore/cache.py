"""A bounded, byte-accounted LRU cache of segments' decoded columns (``column_cache_bytes``).

A segment's columns are zstd-compressed inside its Arrow IPC file, so every scan of a memory-mapped
segment decompresses them again: for ``GROUP BY`` on a dictionary-encoded key that decompression
was ~90% of the query, the counting kernel the rest. The cache keeps the decompressed form of
*encoded* columns — dictionary codes (narrowed to the smallest index type the dictionary allows),
run-end runs, bit-packed integers unpacked — as one contiguous array per segment column, live rows
only. Plain columns are not kept whole: they are as large decompressed as the rows they hold, so they
would push out many times their rows' worth of encoded columns for the same saving. Point lookups
keep the stored record batches they read instead (every column they took a row from, one batch of
``chunk_rows`` rows each, key ``(path, "(stored batch)", (column, batch number))``): a lookup otherwise
decompresses the batch's whole columns to take one row, again at every lookup of that batch.

Keys: ``(segment file path, delete file name or None, column name)``. A segment file never changes
and a DELETE names a new delete file, so an entry can never be stale: a merge, OPTIMIZE or rewrite
retires the file and a DELETE changes the key. The store also :meth:`discard` s the entries of a
file it retires or a delete file it replaces, so they do not wait for eviction to free memory.

Thread-safe: one lock around the map; arrays are immutable. Two threads missing the same key both
read the file and the second insert replaces the first (same value), which is cheaper than making
readers wait on each other.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Optional

import pyarrow as pa

# Default budget of one process's cache (per connection's data directory, per Ray leaf): 512 MiB
# hold the dictionary codes of ~250M rows at 2 bytes a row (workload f's 20M rows take 40 MB) while
# staying small beside the memory one query's decoded batches and hash tables take.
DEFAULT_COLUMN_CACHE_BYTES = 512 << 20

Key = tuple[str, Optional[str], str]


def array_bytes(array: pa.Array) -> int:
    """Bytes an array holds in memory (its buffers, a dictionary's values included)."""
    return array.get_total_buffer_size()


class ColumnCache:
    """Least recently used arrays up to ``budget`` bytes; an array larger than the whole budget is
    not kept (a budget of 0 keeps nothing)."""

    def __init__(self, budget: int):
        if not isinstance(budget, int) or isinstance(budget, bool) or budget < 0:
            raise ValueError(f"column_cache_bytes must be a non-negative integer of bytes, not {budget!r}")
        self.budget = budget
        self._lock = threading.Lock()
        self._entries: OrderedDict[Key, tuple[pa.Array, int]] = OrderedDict()
        self.bytes = 0
        self.hits = self.misses = self.evictions = 0

    def get(self, key: Key) -> Optional[pa.Array]:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return entry[0]

    def put(self, key: Key, array: pa.Array) -> None:
        size = array_bytes(array)
        if size > self.budget:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self.bytes -= old[1]
            self._entries[key] = (array, size)
            self.bytes += size
            while self.bytes > self.budget:
                _, (_, evicted) = self._entries.popitem(last=False)
                self.bytes -= evicted
                self.evictions += 1

    def discard(self, path: str, deletes: Optional[str] = None, *, any_deletes: bool = False) -> None:
        """Drop the entries of segment file ``path`` read under delete file ``deletes`` (every
        delete file with ``any_deletes``)."""
        with self._lock:
            for key in [k for k in self._entries if k[0] == path and (any_deletes or k[1] == deletes)]:
                self.bytes -= self._entries.pop(key)[1]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.bytes = 0

    def __len__(self) -> int:
        return len(self._entries)

    def stats(self) -> dict:
        with self._lock:
            return {"budget": self.budget, "bytes": self.bytes, "entries": len(self._entries), "hits": self.hits,
                    "misses": self.misses, "evictions": self.evictions}
