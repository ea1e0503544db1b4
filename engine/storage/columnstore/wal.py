"""Checksummed log records: the per-partition write-ahead log and the aggregator's commit log.

A record is ``magic (4 bytes) | csn (u64) | length (u32) | crc32 of payload (u32) | payload``. A WAL
record's payload is an Arrow IPC stream (LZ4 buffers) of the rows one statement adds to one partition;
its ``csn`` is the statement's commit sequence number. Records are only ever appended, so a crash can
leave at most one torn record, at the end: :func:`read_records` stops at the first record that is short
or fails its checksum and reports where the valid prefix ends, and the file is truncated there before
anything else is appended.
"""
from __future__ import annotations

import struct
import zlib
from pathlib import Path
from typing import Sequence

import pyarrow as pa
import pyarrow.ipc as ipc

HEADER = struct.Struct("<4sQII")
WAL_MAGIC = b"CWAL"

_WAL_WRITE_OPTIONS = ipc.IpcWriteOptions(compression="lz4")


def encode_record(magic: bytes, csn: int, payload: bytes = b"") -> bytes:
    return HEADER.pack(magic, csn, len(payload), zlib.crc32(payload)) + payload


def read_records(path: Path, magics: Sequence[bytes]) -> tuple[list[tuple[bytes, int, bytes]], int]:
    """The intact records of ``path`` as (magic, csn, payload), and the byte length of that valid
    prefix (everything after it is a torn tail). A missing file has no records."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return [], 0
    records, offset = [], 0
    while offset + HEADER.size <= len(data):
        magic, csn, length, crc = HEADER.unpack_from(data, offset)
        start, end = offset + HEADER.size, offset + HEADER.size + length
        if magic not in magics or end > len(data):
            break
        payload = data[start:end]
        if zlib.crc32(payload) != crc:
            break
        records.append((magic, csn, payload))
        offset = end
    return records, offset


def encode_batches(schema: pa.Schema, batches: Sequence[pa.RecordBatch]) -> bytes:
    sink = pa.BufferOutputStream()
    with ipc.new_stream(sink, schema, options=_WAL_WRITE_OPTIONS) as writer:
        for batch in batches:
            writer.write_batch(batch)
    return sink.getvalue().to_pybytes()


def decode_batches(payload: bytes) -> list[pa.RecordBatch]:
    return list(ipc.open_stream(pa.py_buffer(payload)))
