"""In-memory segments: the columnstore's segments without a file (``connect()`` with no ``data_dir``).

An in-memory segment holds exactly what a segment file stores (:func:`.segment.encode_table`): the
columns encoded (run-end, dictionary with narrowed codes, bit-packed, plain) in record batches of
``chunk_rows`` rows, with the same :class:`.segment.SegmentInfo` (zone maps, statistics, sketches).
It *is* a :class:`.segment.Segment` — only where the stored record batches come from differs — so
every reader of encoded segments (encoded scans and filters, counts from metadata and runs, group-by
on dictionary codes) works on in-memory tables unchanged.

Run-end, dictionary and plain columns are also held whole (the chunks are zero-copy slices of
them, so this costs no memory), as the column cache holds a file segment's encoded ones: an encoded
scan of such columns gets one batch per segment with no per-chunk work (TPC-H Q1's plain
``l_extendedprice`` beside its dictionaries used to cut lineitem into 96 batches of 62.5k rows, each
paying the scan's, filter's and aggregate's per-batch Python calls). Bit-packed columns stay packed and
are unpacked per chunk as they are read.

Deleted rows: a bitmap in memory. A DELETE makes a new segment object sharing the data with the new
bitmap (:meth:`MemorySegment.with_deleted`), so a snapshot holding the old object keeps its rows.
"""
from __future__ import annotations

import itertools
import threading
from typing import Iterator, Optional

import numpy as np
import pyarrow as pa

from engine.storage.columnstore.encoding import filter_column
from engine.storage.columnstore.segment import Segment, SegmentInfo, encode_table

_names = itertools.count()


class MemorySegment(Segment):
    """One immutable in-memory segment (see the module docstring). Thread-safe: nothing changes
    after construction but the memo of live-row columns, filled idempotently."""

    def __init__(self, schema: pa.Schema, info: SegmentInfo, chunks: list, whole: dict[str, pa.Array],
                 deleted: Optional[np.ndarray] = None, indexes: Optional[dict] = None):
        # no file or cache of Segment's: only the attributes the shared readers use
        self.schema = schema
        self.info = info
        self.path = info.file           # named in errors and cache keys only
        self._chunk_list = chunks
        self._whole = whole             # {name: the whole column (not bit-packed), every row}
        self._deleted = deleted
        self._live: dict[str, pa.Array] = {}      # whole columns with deleted rows dropped
        # hash indexes built on first lookup (Segment.hash_index); they index every row, deleted
        # ones too, so a copy with more rows deleted shares them
        self._indexes: dict = indexes if indexes is not None else {}
        self._lock = threading.Lock()

    @classmethod
    def encode(cls, table: pa.Table, chunk_rows: int) -> "MemorySegment":
        """A segment of ``table`` (already sorted)."""
        encoded = encode_table(table, chunk_rows)
        whole = {name: array for name, array in encoded.columns.items()
                 if encoded.stats[name].encoding != "bitpack"}
        size = sum(c.get_total_buffer_size() for c in encoded.chunks)
        info = SegmentInfo(f"memory-segment-{next(_names)}", encoded.rows, size, 0, encoded.stats)
        return cls(table.schema, info, encoded.chunks, whole)

    def with_deleted(self, deleted: np.ndarray) -> "MemorySegment":
        """This segment with the rows of ``deleted`` (one bool per row; the old deletions included)
        deleted."""
        count = int(np.count_nonzero(deleted))
        info = SegmentInfo(self.info.file, self.info.rows, self.info.bytes, 0, self.info.columns, count,
                           f"{self.info.file}-deleted-{next(_names)}" if count else None)
        return MemorySegment(self.schema, info, self._chunk_list, self._whole, deleted if count else None,
                             self._indexes)

    # -- what Segment reads -----------------------------------------------------------------------
    def _stored_index(self, name: str):
        return None             # no file: built on first lookup, kept in memory only

    def _keep_index(self, name: str, index) -> None:
        pass

    def deleted_mask(self) -> Optional[np.ndarray]:
        return self._deleted

    def _stored_chunks(self, wanted: list[int]) -> Iterator[pa.RecordBatch]:
        for chunk in self._chunk_list:
            yield chunk.select(wanted)

    def _stored_chunk(self, wanted: list[int], index: int) -> pa.RecordBatch:
        return self._chunk_list[index].select(wanted)

    @property
    def _holds_whole_columns(self) -> bool:
        return True

    def column(self, name: str, with_deleted: bool = False) -> Optional[pa.Array]:
        whole = self._whole.get(name)
        if whole is None or with_deleted or self._deleted is None:
            return whole
        live = self._live.get(name)
        if live is None:
            keep = ~self._deleted
            live = self._live[name] = filter_column(whole, keep, pa.array(keep))
        return live

    def verify(self) -> None:
        pass

    def forget_cached(self, every: bool = False) -> None:
        pass

    def close(self) -> None:
        pass

    def retire(self) -> None:
        pass
