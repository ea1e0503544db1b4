"""Segments: immutable Arrow IPC files of up to ``segment_rows`` rows, ordered by the table's sort key.

Columns are stored encoded (:mod:`.encoding`) with zstd-compressed buffers, in record batches of
``chunk_rows`` rows so a reader that wants a few rows decompresses one chunk, not the segment. A
segment is read through a memory map, only the projected columns (``IpcReadOptions.included_fields``).
The manifest keeps a CRC32 per column and one of the file's structure (:mod:`.layout`): a reader
checks the structure when it maps the file and each column the first time it reads it, so one column
of a wide table costs that column's bytes, not the file's. A flipped byte raises
:class:`StorageCorruptionError` naming the file (and the column) instead of returning wrong rows.
Segments of older manifests (no per-column checksums) are checked whole, once, by their file CRC32.

Deleted rows: a segment file never changes; DELETE (and the delete half of UPDATE) writes a new
*delete file* ``dels-<id>.bin`` holding the segment's whole deletion bitmap (one bit per row,
zstd-compressed, CRC32 in the manifest) and the manifest names it beside the segment with the count of
deleted rows. Reads skip deleted rows (encoded columns stay encoded); merges drop them.
"""
from __future__ import annotations

import os
import struct
import threading
import weakref
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from engine.errors import StorageCorruptionError
from engine.storage.columnstore.cache import ColumnCache
from engine.storage.columnstore.encoding import (ColumnStats, concat_stored, decode_batch, encode_column,
                                                 filter_column, may_match, pack_stored, stored_field, take_rows,
                                                 unpack_stored)
from engine.storage.columnstore.files import crc32_of_file
from engine.storage.columnstore.layout import LayoutError, read_layout

_SEGMENT_WRITE_OPTIONS = ipc.IpcWriteOptions(compression="zstd")
_DELETES_MAGIC = b"CDEL"
_DELETES_HEADER = struct.Struct("<4sQQ")      # magic, rows, packed bytes; then the zstd frame
# Encodings whose decompressed columns the column cache keeps (cache.py says why not plain ones).
CACHED_ENCODINGS = frozenset({"dictionary", "run_end", "bitpack"})
_STORED_BATCH = "(stored batch)"     # the column cache's "delete file" of a stored batch (Segment._chunk_columns)
_DECODED_BATCH_ROWS = 1 << 16       # batches of cached columns a decoding reader gets (bounds its memory)


@dataclass(frozen=True)
class SegmentInfo:
    """What the manifest records about one segment file."""

    file: str
    rows: int
    bytes: int
    crc32: int
    columns: dict[str, ColumnStats]     # zone maps of every row written, deleted ones included
    deleted: int = 0                    # rows marked deleted in the delete file
    deletes: Optional[str] = None       # the delete file (None: no row deleted)
    deletes_crc32: int = 0
    # {"structure": CRC32, "columns": {name: CRC32}} (.layout); None: a segment written before
    # per-column checksums, checked by its whole-file ``crc32``
    checksums: Optional[dict] = None

    @property
    def live_rows(self) -> int:
        return self.rows - self.deleted

    def to_json(self, schema: pa.Schema) -> dict:
        out = {"file": self.file, "rows": self.rows, "bytes": self.bytes, "crc32": self.crc32,
               "columns": {name: stats.to_json(schema.field(name).type) for name, stats in self.columns.items()}}
        if self.deletes is not None:
            out.update(deleted=self.deleted, deletes=self.deletes, deletes_crc32=self.deletes_crc32)
        if self.checksums is not None:
            out["checksums"] = self.checksums
        return out

    @classmethod
    def from_json(cls, data: dict, schema: pa.Schema) -> "SegmentInfo":
        return cls(data["file"], data["rows"], data["bytes"], data["crc32"],
                   {name: ColumnStats.from_json(stats, schema.field(name).type)
                    for name, stats in data["columns"].items()},
                   data.get("deleted", 0), data.get("deletes"), data.get("deletes_crc32", 0),
                   data.get("checksums"))

    def may_match(self, bounds: Sequence[tuple[str, str, object]]) -> bool:
        """False when the zone maps prove no row satisfies every (column, op, value) bound."""
        for column, op, value in bounds:
            stats = self.columns.get(column)
            if stats is not None and not may_match(stats, self.rows, op, value):
                return False
        return True


def sort_rows(table: pa.Table, sort_key: Sequence[str]) -> pa.Table:
    if sort_key and table.num_rows > 1:
        table = table.sort_by([(name, "ascending") for name in sort_key])
    return table


@dataclass(frozen=True)
class EncodedTable:
    """A table in segment form: its columns encoded (:mod:`.encoding`), cut into record batches of
    ``chunk_rows`` rows as a segment file stores them (bit-packed columns packed), with statistics.
    A segment file is these batches written as Arrow IPC; an in-memory segment (:mod:`.memory_segment`)
    keeps them as they are."""

    schema: pa.Schema                   # the stored schema (bit-packed columns are binary there)
    chunks: list                        # [pa.RecordBatch] of the stored schema
    columns: dict                       # {name: encoded array of every row} (bit-packed: unpacked)
    stats: dict                         # {name: ColumnStats}
    rows: int


def encode_table(table: pa.Table, chunk_rows: int) -> EncodedTable:
    """``table`` (already sorted) encoded column by column and cut into stored record batches."""
    table = table.combine_chunks()
    encoded, stats = [], {}
    for field, column in zip(table.schema, table.columns):
        array = column.chunk(0) if column.num_chunks == 1 else pa.concat_arrays(column.chunks) \
            if column.num_chunks else pa.array([], type=field.type)
        array, stats[field.name] = encode_column(array)
        encoded.append(array)
    schema = pa.schema([stored_field(pa.field(f.name, a.type, nullable=f.nullable), stats[f.name])
                        for f, a in zip(table.schema, encoded)])
    packed = [stats[f.name].encoding == "bitpack" for f in table.schema]
    chunks = [pa.RecordBatch.from_arrays(
        [pack_stored(a.slice(start, chunk_rows)) if p else a.slice(start, chunk_rows)
         for a, p in zip(encoded, packed)], schema=schema)
        for start in range(0, max(table.num_rows, 1), chunk_rows)]
    return EncodedTable(schema, chunks, dict(zip(table.schema.names, encoded)), stats, table.num_rows)


def write_segment(path: Path, table: pa.Table, chunk_rows: int) -> SegmentInfo:
    """Write ``table`` (already sorted) as one segment file, fsynced; return its manifest entry."""
    encoded = encode_table(table, chunk_rows)
    schema = encoded.schema
    sink = pa.BufferOutputStream()
    with ipc.new_file(sink, schema, options=_SEGMENT_WRITE_OPTIONS) as writer:
        for chunk in encoded.chunks:
            writer.write_batch(chunk)
    data = sink.getvalue()
    try:
        layout = read_layout(data, schema)
        checksums = {"structure": layout.structure_crc32(data),
                     "columns": {f.name: layout.column_crc32(data, i) for i, f in enumerate(schema)}}
    except LayoutError:         # a type .layout cannot map: the whole-file CRC32 guards it
        checksums = None
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    return SegmentInfo(path.name, encoded.rows, data.size, zlib.crc32(data), encoded.stats, checksums=checksums)


def write_deletes(path: Path, deleted: np.ndarray) -> int:
    """Write a segment's deletion bitmap (``deleted``: one bool per row), fsynced; return its CRC32."""
    packed = np.packbits(deleted, bitorder="little")
    body = pa.compress(packed.tobytes(), codec="zstd", asbytes=True)
    data = _DELETES_HEADER.pack(_DELETES_MAGIC, len(deleted), len(packed)) + body
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    return zlib.crc32(data)


def read_deletes(path: Path, rows: int, crc32: int) -> np.ndarray:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise StorageCorruptionError(f"delete file {path} is missing") from None
    if zlib.crc32(data) != crc32:
        raise StorageCorruptionError(f"delete file {path} is corrupt: CRC32 {zlib.crc32(data):08x}, "
                                     f"manifest says {crc32:08x}")
    if len(data) < _DELETES_HEADER.size:
        raise StorageCorruptionError(f"delete file {path}: not a deletion bitmap of {rows} rows")
    magic, stored_rows, packed = _DELETES_HEADER.unpack_from(data)
    if magic != _DELETES_MAGIC or stored_rows != rows:
        raise StorageCorruptionError(f"delete file {path}: not a deletion bitmap of {rows} rows")
    bits = pa.decompress(data[_DELETES_HEADER.size:], packed, codec="zstd", asbytes=True)
    return np.unpackbits(np.frombuffer(bits, np.uint8), count=rows, bitorder="little").astype(bool)


class _SegmentFile:
    """The memory map of one segment file, verified as it is read, shared by the :class:`Segment`
    objects of successive manifests that name it (a DELETE changes the entry, not the file).

    Verification: with per-column checksums, the file's structure when it is mapped and each column
    the first time :meth:`open` is asked for it (then remembered: the file is immutable); without, the
    whole file once, when it is mapped.

    Lifetime: the map closes when the last Segment using it is dropped (the store's current segments,
    or a scan's snapshot); a file :meth:`retire` d (no manifest names it after a merge or rewrite) is
    unlinked then too — never under a reader. A crash before that leaves an unnamed file, which
    opening the partition removes."""

    def __init__(self, path: Path, info: SegmentInfo):
        self.path, self.crc32, self.checksums = path, info.crc32, info.checksums
        self.lock = threading.Lock()
        self._state = {"source": None, "retired": False}
        self._layout = None
        self._verified: set[int] = set()       # column positions whose checksum matched
        # file readers of the map by the columns they read (a point lookup reads one record batch:
        # parsing the footer again for it cost as much as the read), dropped with the map
        self._readers: dict[tuple[int, ...], ipc.RecordBatchFileReader] = {}
        weakref.finalize(self, _release_file, path, self._state)

    @property
    def source(self) -> Optional[pa.MemoryMappedFile]:
        return self._state["source"]

    def close(self) -> None:
        """Close the memory map now (a later read maps the file again)."""
        with self.lock:
            _release_file(self.path, {"source": self.source, "retired": False})
            self._state["source"] = None
            self._readers = {}

    def batch(self, columns: Sequence[int], index: int) -> pa.RecordBatch:
        """Record batch ``index`` as stored, the columns at positions ``columns`` (ascending) only,
        through a reader kept for those columns (the file is immutable). Readers are used under the
        lock: a stored batch is a zero-copy slice of the map, the lock is held briefly."""
        key = tuple(columns)
        while True:
            source = self.open(columns)
            with self.lock:
                if self._state["source"] is not source:      # closed meanwhile (close drops the readers)
                    continue
                reader = self._readers.get(key)
                if reader is None:
                    reader = self._readers[key] = ipc.open_file(source, options=ipc.IpcReadOptions(
                        included_fields=list(columns)))
                return reader.get_batch(index)

    def retire(self) -> None:
        self._state["retired"] = True

    @property
    def retired(self) -> bool:
        return self._state["retired"]

    def open(self, columns: Sequence[int] = ()) -> pa.MemoryMappedFile:
        """The file's memory map, its structure and the columns at positions ``columns`` verified."""
        with self.lock:
            source = self._state["source"]
            if source is None:
                source = self._state["source"] = self._map()
            if self.checksums is not None:
                for index in columns:
                    if index not in self._verified:
                        self._verify_column(source, index)
            return source

    def _map(self) -> pa.MemoryMappedFile:
        if self.checksums is None:
            try:
                crc = crc32_of_file(self.path)
            except FileNotFoundError:
                raise StorageCorruptionError(f"segment file {self.path} is missing") from None
            if crc != self.crc32:
                raise StorageCorruptionError(
                    f"segment file {self.path} is corrupt: CRC32 {crc:08x}, manifest says {self.crc32:08x}")
        try:
            source = pa.memory_map(str(self.path))
        except FileNotFoundError:
            raise StorageCorruptionError(f"segment file {self.path} is missing") from None
        if self.checksums is not None:
            try:
                stored = ipc.open_file(source).schema       # bit-packed columns are binary there
                self._stored_names = stored.names
                self._layout = read_layout(source, stored)
            except (LayoutError, pa.ArrowInvalid, OSError) as error:
                source.close()
                raise StorageCorruptionError(f"segment file {self.path} is corrupt: {error}") from None
            crc = self._layout.structure_crc32(source)
            if crc != self.checksums["structure"]:
                source.close()
                raise StorageCorruptionError(
                    f"segment file {self.path} is corrupt: CRC32 of its structure (schema, message "
                    f"headers, footer) {crc:08x}, manifest says {self.checksums['structure']:08x}")
        return source

    def _verify_column(self, source: pa.MemoryMappedFile, index: int) -> None:
        name = self._stored_names[index]
        crc = self._layout.column_crc32(source, index)
        expected = self.checksums["columns"].get(name)
        if crc != expected:
            raise StorageCorruptionError(
                f"segment file {self.path} is corrupt in column {name!r}: CRC32 {crc:08x}, manifest says "
                f"{expected if expected is None else format(expected, '08x')}")
        self._verified.add(index)


def _release_file(path: Path, state: dict) -> None:
    if state["source"] is not None:
        state["source"].close()
        state["source"] = None
    if state["retired"]:
        path.unlink(missing_ok=True)
        from engine.storage.columnstore.index_files import remove_indexes
        remove_indexes(path)


class Segment:
    """An open segment: its manifest entry plus a lazily verified, memory-mapped reader and its
    deletion bitmap (read once, on first use).

    Safe to share between threads: verification and opening happen once under a lock; after that a
    scan only reads the immutable files. ``previous``: the Segment of the same file under the last
    manifest, whose verified mapping this one reuses.
    """

    def __init__(self, directory: Path, info: SegmentInfo, schema: pa.Schema,
                 previous: Optional["Segment"] = None, cache: Optional[ColumnCache] = None):
        self.info = info
        self.directory = directory
        self.path = directory / info.file
        self.schema = schema
        self._lock = threading.Lock()
        self._file = previous._file if previous is not None else _SegmentFile(self.path, info)
        self._cache = cache if cache is not None and cache.budget > 0 else None
        self._deleted: Optional[np.ndarray] = None
        # column name -> HashIndex over every row of the file (deleted ones too: positions stay
        # valid when the delete file changes), shared with the Segments of later manifests
        self._indexes: dict = previous._indexes if previous is not None else {}
        if previous is not None and previous.info.deletes == info.deletes:
            self._deleted = previous._deleted

    def _open(self, columns: Sequence[int] = ()) -> pa.MemoryMappedFile:
        return self._file.open(columns)

    def verify(self) -> None:
        """Check every column's checksum (or the whole file's) now; StorageCorruptionError if one fails."""
        self._file.open(range(len(self.schema)))
        self._file.close()

    def deleted_mask(self) -> Optional[np.ndarray]:
        """One bool per row, True for a deleted row; None when no row is deleted."""
        if self.info.deletes is None:
            return None
        with self._lock:
            if self._deleted is None:
                self._deleted = read_deletes(self.directory / self.info.deletes, self.info.rows,
                                             self.info.deletes_crc32)
            return self._deleted

    def _chunks(self, wanted: list[int], deleted: Optional[np.ndarray]) -> Iterator[pa.RecordBatch]:
        """The file's record batches with columns ``wanted`` (schema positions, ascending: the
        reader returns them in file order), bit-packed ones unpacked, rows of ``deleted`` dropped
        (encoded columns stay encoded); chunks left empty are skipped."""
        first = 0
        for chunk in self._stored_chunks(wanted):
            if not chunk.num_rows:
                continue
            chunk = unpack_stored(chunk)       # bit-packed columns, whole record batches only
            if deleted is not None:
                keep = ~deleted[first:first + chunk.num_rows]
                first += chunk.num_rows
                live = int(np.count_nonzero(keep))
                if live == 0:
                    continue
                if live < chunk.num_rows:
                    keep_array = pa.array(keep)
                    chunk = pa.RecordBatch.from_arrays([filter_column(c, keep, keep_array) for c in chunk.columns],
                                                       schema=chunk.schema)
            yield chunk

    def _stored_chunks(self, wanted: list[int]) -> Iterator[pa.RecordBatch]:
        """The file's record batches as stored (bit-packed columns packed), columns ``wanted`` only."""
        source = self._open(wanted)
        try:
            reader = ipc.open_file(source, options=ipc.IpcReadOptions(included_fields=wanted))
        except (pa.ArrowInvalid, OSError) as error:
            raise StorageCorruptionError(f"segment file {self.path} cannot be read: {error}") from error
        for i in range(reader.num_record_batches):
            yield reader.get_batch(i)

    @property
    def _holds_whole_columns(self) -> bool:
        """:meth:`column` may answer (the column cache is on): :meth:`batches` asks it first."""
        return self._cache is not None

    def column(self, name: str, with_deleted: bool = False) -> Optional[pa.Array]:
        """The live rows (every row: ``with_deleted``) of column ``name`` as one array, still encoded
        (dictionary codes narrowed, runs, bit-packed integers unpacked), when the column is stored
        with an encoding in :data:`CACHED_ENCODINGS`; else None. Kept in the column cache: a later
        call (any scan of this segment file under the same delete file) reads no file."""
        stats = self.info.columns.get(name)
        if stats is None or stats.encoding not in CACHED_ENCODINGS:
            return None
        key = (str(self.path), None if with_deleted else self.info.deletes, name)
        if self._cache is not None:
            cached = self._cache.get(key)
            if cached is not None:
                return cached
        deleted = None if with_deleted else self.deleted_mask()
        field = self.schema.field(name)
        chunks = [chunk.column(0) for chunk in self._chunks([self.schema.get_field_index(name)], deleted)]
        whole = concat_stored(chunks, field.type)
        if self._cache is not None and not self._file.retired:
            self._cache.put(key, whole)
        return whole

    def batches(self, names: Sequence[str], batch_rows: Optional[int],
                encoded: bool = False, with_deleted: bool = False) -> Iterator[pa.RecordBatch]:
        """The live rows, ``names`` only, at most ``batch_rows`` a batch. ``encoded``: columns as
        stored (run-end / dictionary arrays) instead of decoded; slicing happens before decoding, so a
        small ``batch_rows`` decodes a small first batch. ``with_deleted``: deleted rows too (every
        row in file order, which DELETE needs to number rows).

        Encoded columns come from :meth:`column` (the column cache) when the cache is on; only the
        other columns are read from the file. When every column is cached, a batch may hold the
        whole segment (``batch_rows`` None and ``encoded``: no per-chunk work at all)."""
        indices = [self.schema.get_field_index(name) for name in names]
        schema = pa.schema([self.schema.field(i) for i in indices])
        whole: dict[int, pa.Array] = {}
        if self._holds_whole_columns:
            for index in dict.fromkeys(indices):
                column = self.column(self.schema.field(index).name, with_deleted)
                if column is not None:
                    whole[index] = column
        rest = sorted(set(indices) - set(whole))
        if indices and not rest:
            columns = [whole[i] for i in indices]
            rows = len(columns[0])
            step = batch_rows or (rows if encoded else _DECODED_BATCH_ROWS)
            for start in range(0, rows, max(step, 1)):
                piece = pa.RecordBatch.from_arrays([c.slice(start, step) if step < rows else c for c in columns],
                                                   names=list(names))
                yield piece if encoded else decode_batch(piece, schema)
            return
        deleted = None if with_deleted else self.deleted_mask()
        position = {index: k for k, index in enumerate(rest)}
        done = 0            # live rows yielded so far: where the next chunk starts in a cached column
        for chunk in self._chunks(rest or [0], deleted):
            n = chunk.num_rows
            batch = pa.RecordBatch.from_arrays(
                [whole[i].slice(done, n) if i in whole else chunk.column(position[i]) for i in indices],
                names=list(names)) if indices else chunk.select([])
            done += n
            pieces = ([batch.slice(start, batch_rows) for start in range(0, batch.num_rows, batch_rows)]
                      if batch_rows and batch.num_rows > batch_rows else [batch])
            for piece in pieces:
                yield piece if encoded or not indices else decode_batch(piece, schema)

    def hash_index(self, name: str):
        """The :class:`engine.storage.hash_index.HashIndex` named ``name`` (a column's, or its UCA
        index: engine.storage.hash_index.index_name), built on first use (None for a type it does
        not cover)."""
        with self._lock:
            if name in self._indexes:
                return self._indexes[name]
        from engine.storage.hash_index import HashIndex, index_column
        index = self._stored_index(name)
        if index is None:
            column_name, uca = index_column(name)
            chunks = [b.column(0) for b in self.batches([column_name], None, with_deleted=True)]
            column = pa.chunked_array(chunks, self.schema.field(column_name).type).combine_chunks()
            index = HashIndex.build(column, uca)
            if index is not None:
                self._keep_index(name, index)
        with self._lock:
            self._indexes[name] = index
        return index

    def _stored_index(self, name: str):
        """The index file's HashIndex of column ``name`` (engine.storage.columnstore.index_files), or
        None: none usable, build it."""
        from engine.storage.columnstore.index_files import read_index
        return read_index(self.path, name, self.info.rows)

    def _keep_index(self, name: str, index) -> None:
        """Write a built index beside the segment file (not for a retired one: it is going away)."""
        if self._file.retired:
            return
        from engine.storage.columnstore.index_files import write_index
        try:
            write_index(self.path, name, index)
        except OSError:
            pass            # derived data: a read-only or full disk only costs a rebuild next time

    def rows_at(self, names: Sequence[str], positions: np.ndarray) -> Optional[pa.RecordBatch]:
        """The live rows among ``positions`` (file order, deleted rows counted), columns ``names``,
        decoded: what an index lookup reads of this segment."""
        deleted = self.deleted_mask()
        if deleted is not None:
            positions = positions[~deleted[positions]]
        if not len(positions):
            return None
        schema = pa.schema([self.schema.field(n) for n in names])
        whole = [self.column(n, True) for n in names] if self._holds_whole_columns else [None]
        if all(column is not None for column in whole):
            # the rows taken from the encoded columns: no column of the segment is decoded whole
            return pa.RecordBatch.from_arrays([take_rows(column, positions) for column in whole], schema=schema)
        # Only the record batches (chunk_rows each) holding a position are unpacked and decoded: a
        # lookup of one key reads one chunk of the segment, not all of it. ``positions`` is sorted.
        wanted = sorted({self.schema.get_field_index(n) for n in names})
        offsets = self._chunk_offsets()
        pieces = []
        for i in np.unique(np.searchsorted(offsets, positions, side="right") - 1).tolist():
            first = int(offsets[i])
            low, high = np.searchsorted(positions, [first, offsets[i + 1]])
            # taken from the encoded columns (dictionary codes, runs), then decoded: a chunk's
            # other rows are never decoded
            unpacked, wanted_rows = self._chunk_columns(wanted, i), positions[low:high] - first
            pieces.append(pa.RecordBatch.from_arrays(
                [take_rows(unpacked[self.schema.get_field_index(n)], wanted_rows) for n in names], schema=schema))
        return pa.Table.from_batches(pieces, schema=schema).combine_chunks().to_batches()[0]

    def _chunk_columns(self, wanted: list[int], index: int) -> dict[int, pa.Array]:
        """Columns ``wanted`` (schema positions) of record batch ``index`` as stored, bit-packed ones
        unpacked, by position. With the column cache on they are kept there (every row of the
        batch, under no delete file: positions count deleted rows): point lookups come back to the
        same batches, and each read decompressed the batch's whole column (zstd, ``chunk_rows``
        rows) to take a row or two. Their keys name no delete file but :data:`_STORED_BATCH` (a
        DELETE discards the entries under the old one, which these do not depend on)."""
        cache = self.__dict__.get("_cache")
        keys = {i: (str(self.path), _STORED_BATCH, (self.schema.field(i).name, index)) for i in wanted}
        found = {}
        if cache is not None:
            for i in wanted:
                column = cache.get(keys[i])
                if column is not None:
                    found[i] = column
        missing = [i for i in wanted if i not in found]
        if missing:
            unpacked = unpack_stored(self._stored_chunk(missing, index))
            for k, i in enumerate(missing):
                found[i] = unpacked.column(k)
                if cache is not None and not self._file.retired:
                    cache.put(keys[i], found[i])
        return found

    def _chunk_offsets(self) -> np.ndarray:
        """The first row of each stored record batch, then the row count: counted once (one narrow
        column read through), so that a lookup reads only the chunks holding its rows."""
        offsets = self.__dict__.get("_offsets")
        if offsets is None:
            narrowest = min(range(len(self.schema)), key=lambda i: self.schema.field(i).type.bit_width
                            if pa.types.is_primitive(self.schema.field(i).type) else 1 << 20)
            counts = [chunk.num_rows for chunk in self._stored_chunks([narrowest])]
            offsets = self.__dict__["_offsets"] = np.concatenate(([0], np.cumsum(counts, dtype=np.int64)))
        return offsets

    def _stored_chunk(self, wanted: list[int], index: int) -> pa.RecordBatch:
        """Record batch ``index`` of the file as stored, columns ``wanted`` only."""
        try:
            return self._file.batch(wanted, index)
        except (pa.ArrowInvalid, OSError) as error:
            raise StorageCorruptionError(f"segment file {self.path} cannot be read: {error}") from error

    def run_end_column(self, name: str) -> Optional[pa.Array]:
        """The whole column as one run-end-encoded array when it is stored run-end encoded, else None
        (None too when rows are deleted: the caller reads the live rows through :meth:`batches`).
        Kept in the column cache (its size grows with the runs, not the rows)."""
        stats = self.info.columns.get(name)
        if stats is None or stats.encoding != "run_end" or self.info.deletes is not None:
            return None
        column = self.column(name)
        return column if column is not None and pa.types.is_run_end_encoded(column.type) else None

    def forget_cached(self, every: bool = False) -> None:
        """Drop this segment's columns under its delete file (``every``: under any) from the cache."""
        if self._cache is not None:
            self._cache.discard(str(self.path), self.info.deletes, any_deletes=every)

    def close(self) -> None:
        """Close the memory map now (a later read maps the file again)."""
        self._file.close()

    def retire(self) -> None:
        """The manifest no longer names this file: delete it once no snapshot reads it."""
        self._file.retire()
        self.forget_cached(every=True)
