"""Segments: immutable Arrow IPC files of up to ``segment_rows`` rows, ordered by the table's sort key.

Columns are stored encoded (:mod:`.encoding`) with zstd-compressed buffers, in record batches of
``chunk_rows`` rows so a reader that wants a few rows decompresses one chunk, not the segment. A
segment is read through a memory map, only the projected columns (``IpcReadOptions.included_fields``),
after its whole-file CRC32 has been checked once against the manifest: a flipped byte raises
:class:`StorageCorruptionError` naming the file instead of returning wrong rows.
"""
from __future__ import annotations

import os
import threading
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

from engine.errors import ExecutionError
from engine.storage.columnstore.encoding import (ColumnStats, decode_batch, encode_column, may_match,
                                                 pack_stored, stored_field, unpack_stored)
from engine.storage.columnstore.files import crc32_of_file

_SEGMENT_WRITE_OPTIONS = ipc.IpcWriteOptions(compression="zstd")


class StorageCorruptionError(ExecutionError):
    """A data file failed its checksum (or cannot be parsed): the message names the file."""


@dataclass(frozen=True)
class SegmentInfo:
    """What the manifest records about one segment file."""

    file: str
    rows: int
    bytes: int
    crc32: int
    columns: dict[str, ColumnStats]

    def to_json(self, schema: pa.Schema) -> dict:
        return {"file": self.file, "rows": self.rows, "bytes": self.bytes, "crc32": self.crc32,
                "columns": {name: stats.to_json(schema.field(name).type) for name, stats in self.columns.items()}}

    @classmethod
    def from_json(cls, data: dict, schema: pa.Schema) -> "SegmentInfo":
        return cls(data["file"], data["rows"], data["bytes"], data["crc32"],
                   {name: ColumnStats.from_json(stats, schema.field(name).type)
                    for name, stats in data["columns"].items()})

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


def write_segment(path: Path, table: pa.Table, chunk_rows: int) -> SegmentInfo:
    """Write ``table`` (already sorted) as one segment file, fsynced; return its manifest entry."""
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
    sink = pa.BufferOutputStream()
    with ipc.new_file(sink, schema, options=_SEGMENT_WRITE_OPTIONS) as writer:
        for start in range(0, max(table.num_rows, 1), chunk_rows):
            writer.write_batch(pa.RecordBatch.from_arrays(
                [pack_stored(a.slice(start, chunk_rows)) if p else a.slice(start, chunk_rows)
                 for a, p in zip(encoded, packed)], schema=schema))
    data = sink.getvalue()
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    return SegmentInfo(path.name, table.num_rows, data.size, zlib.crc32(data), stats)


class Segment:
    """An open segment: its manifest entry plus a lazily verified, memory-mapped reader.

    Safe to share between threads: verification and opening happen once under a lock; after that a
    scan only reads the immutable file.
    """

    def __init__(self, directory: Path, info: SegmentInfo, schema: pa.Schema):
        self.info = info
        self.path = directory / info.file
        self.schema = schema
        self._lock = threading.Lock()
        self._source: Optional[pa.MemoryMappedFile] = None
        self._runs: dict[str, pa.Array] = {}       # run_end_column's cache (the file is immutable)

    def _open(self) -> pa.MemoryMappedFile:
        with self._lock:
            if self._source is None:
                try:
                    crc = crc32_of_file(self.path)
                except FileNotFoundError:
                    raise StorageCorruptionError(f"segment file {self.path} is missing") from None
                if crc != self.info.crc32:
                    raise StorageCorruptionError(
                        f"segment file {self.path} is corrupt: CRC32 {crc:08x}, manifest says {self.info.crc32:08x}")
                self._source = pa.memory_map(str(self.path))
            return self._source

    def batches(self, names: Sequence[str], batch_rows: Optional[int],
                encoded: bool = False) -> Iterator[pa.RecordBatch]:
        """The rows, ``names`` only, at most ``batch_rows`` a batch. ``encoded``: columns as stored
        (run-end / dictionary arrays) instead of decoded; slicing happens before decoding, so a small
        ``batch_rows`` decodes a small first batch."""
        source = self._open()
        indices = [self.schema.get_field_index(name) for name in names]
        schema = pa.schema([self.schema.field(i) for i in indices])
        # included_fields returns the columns in file order: map each requested one to its position
        wanted = sorted(set(indices)) or [0]
        position = {index: k for k, index in enumerate(wanted)}
        try:
            reader = ipc.open_file(source, options=ipc.IpcReadOptions(included_fields=wanted))
        except (pa.ArrowInvalid, OSError) as error:
            raise StorageCorruptionError(f"segment file {self.path} cannot be read: {error}") from error
        for i in range(reader.num_record_batches):
            chunk = reader.get_batch(i)
            if not chunk.num_rows:
                continue
            batch = chunk.select([position[index] for index in indices]) if indices else chunk.select([])
            batch = unpack_stored(batch)       # bit-packed columns, whole record batches only
            pieces = ([batch.slice(start, batch_rows) for start in range(0, batch.num_rows, batch_rows)]
                      if batch_rows and batch.num_rows > batch_rows else [batch])
            for piece in pieces:
                yield piece if encoded or not indices else decode_batch(piece, schema)

    def run_end_column(self, name: str) -> Optional[pa.Array]:
        """The whole column as one run-end-encoded array when it is stored run-end encoded, else None.

        Kept in memory after the first call: its size grows with the runs (at most one run per
        ``RUN_END_MIN_AVERAGE_RUN`` rows), and reading it again would cost one zstd frame per chunk."""
        stats = self.info.columns.get(name)
        if stats is None or stats.encoding != "run_end":
            return None
        cached = self._runs.get(name)
        if cached is not None:
            return cached
        run_ends, values, rows = [], [], 0
        for batch in self.batches([name], None, encoded=True):
            array = batch.column(0)
            if not pa.types.is_run_end_encoded(array.type):
                return None
            start, count = array.find_physical_offset(), array.find_physical_length()
            ends = pc.subtract(array.run_ends.slice(start, count), array.offset)
            ends = pc.min_element_wise(ends, len(array))       # the last run may reach past the slice
            run_ends.append(pc.add(ends, rows).cast(pa.int32()))
            values.append(array.values.slice(start, count))
            rows += len(array)
        if not run_ends:
            return None
        column = pa.RunEndEncodedArray.from_arrays(pa.concat_arrays(run_ends), pa.concat_arrays(values))
        with self._lock:
            self._runs[name] = column
        return column

    def close(self) -> None:
        with self._lock:
            self._runs.clear()
            if self._source is not None:
                self._source.close()
                self._source = None
