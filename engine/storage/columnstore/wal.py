"""Checksummed log records: the per-partition write-ahead log and the aggregator's commit log.

A record is ``magic (4 bytes) | csn (u64) | length (u32) | crc32 (u32) | payload``. The CRC32 covers
the magic, csn and length too for the magics of :data:`HEADER_CHECKED` (every record written now:
a flipped csn would otherwise move a record to another statement unnoticed), only the payload for the
older ``CWAL`` / ``CCMT`` / ``CFLR``. A WAL
record's payload is an Arrow IPC stream (LZ4 buffers) of the rows one statement adds to one partition;
its ``csn`` is the statement's commit sequence number. A ``CWL2`` record's payload starts with a u64:
the newest csn the commit log had committed when the record was written (*seen*), so a commit log
that lost records from its end is caught by a WAL record that saw them (:mod:`.verify`); ``CWAL``
records (older ones) have none; a Ray leaf, which does not see the log, writes 0. Records are only ever appended, so a crash can
leave at most one torn record, at the end, and it is *short*: its header is cut, or its length runs past
the end of the file. :func:`scan_log` tells that torn tail (which recovery truncates) from damage: a
record with a wrong magic or checksum, or a short one followed by a valid record, is corruption, and
recovery refuses to open rather than drop the records after it.
"""
from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

import pyarrow as pa
import pyarrow.ipc as ipc

HEADER = struct.Struct("<4sQII")
WAL_MAGIC = b"CWAL"
WAL_SEEN_MAGIC = b"CWL2"
WAL_MAGICS = (WAL_MAGIC, WAL_SEEN_MAGIC)
HEADER_CHECKED = frozenset({WAL_SEEN_MAGIC, b"CCM2", b"CFL2"})
_PREFIX = struct.Struct("<4sQI")
_SEEN = struct.Struct("<Q")

_WAL_WRITE_OPTIONS = ipc.IpcWriteOptions(compression="lz4")


def _crc(magic: bytes, csn: int, payload) -> int:
    if magic in HEADER_CHECKED:
        return zlib.crc32(payload, zlib.crc32(_PREFIX.pack(magic, csn, len(payload))))
    return zlib.crc32(payload)


def encode_record(magic: bytes, csn: int, payload: bytes = b"") -> bytes:
    return HEADER.pack(magic, csn, len(payload), _crc(magic, csn, payload)) + payload


@dataclass(frozen=True)
class LogScan:
    """What :func:`scan_log` found: the intact ``records`` (magic, csn, payload) of the valid prefix
    ``valid`` bytes long; ``size`` bytes in all. Past the prefix: a torn tail (``damage`` None; the csn
    in its header when the header is whole, ``tail_csn``) or damage (``damage``: (offset, what))."""
    path: Path
    records: list
    valid: int
    size: int
    damage: Optional[tuple[int, str]] = None
    tail_csn: Optional[int] = None

    @property
    def torn(self) -> bool:
        return self.damage is None and self.valid < self.size


def _record_at(data: bytes, offset: int, magics: Sequence[bytes]) -> Optional[tuple[bytes, int, bytes]]:
    """The record at ``offset`` if it is whole and intact."""
    if offset + HEADER.size > len(data):
        return None
    magic, csn, length, crc = HEADER.unpack_from(data, offset)
    end = offset + HEADER.size + length
    if magic not in magics or end > len(data):
        return None
    payload = data[offset + HEADER.size:end]
    return (magic, csn, payload) if _crc(magic, csn, payload) == crc else None


def _valid_record_after(data: bytes, offset: int, magics: Sequence[bytes]) -> Optional[int]:
    for magic in magics:
        at = data.find(magic, offset)
        while at >= 0:
            if _record_at(data, at, magics) is not None:
                return at
            at = data.find(magic, at + 1)
    return None


def scan_log(path: Path, magics: Sequence[bytes], data: Optional[bytes] = None) -> LogScan:
    """Read the log at ``path`` (a missing file has no records) and classify what follows its valid
    prefix. Read only: the caller truncates a torn tail, and refuses to open on damage."""
    if data is None:
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return LogScan(path, [], 0, 0)
    records, offset = [], 0
    while offset < len(data):
        record = _record_at(data, offset, magics)
        if record is None:
            break
        records.append(record)
        offset += HEADER.size + len(record[2])
    damage, tail_csn = None, None
    if offset < len(data) and offset + HEADER.size <= len(data):
        magic, csn, length, crc = HEADER.unpack_from(data, offset)
        end = offset + HEADER.size + length
        later = _valid_record_after(data, offset + 1, magics)
        if magic not in magics:
            damage = (offset, "a record header with an unknown magic")
        elif later is not None:
            damage = (offset, f"a damaged record (csn {csn}) followed by intact records from byte {later}")
        elif end <= len(data):
            damage = (offset, f"a record (csn {csn}) failing its CRC32")
        else:
            tail_csn = csn               # short: the last record, cut by a crash
    return LogScan(path, records, offset, len(data), damage, tail_csn)


def read_records(path: Path, magics: Sequence[bytes]) -> tuple[list[tuple[bytes, int, bytes]], int]:
    """The intact records of ``path`` as (magic, csn, payload) and the length of the valid prefix
    (for readers that only look: a damaged log is refused by recovery before they run)."""
    scan = scan_log(path, magics)
    return scan.records, scan.valid


def encode_batches(schema: pa.Schema, batches: Sequence[pa.RecordBatch]) -> bytes:
    sink = pa.BufferOutputStream()
    with ipc.new_stream(sink, schema, options=_WAL_WRITE_OPTIONS) as writer:
        for batch in batches:
            writer.write_batch(batch)
    return sink.getvalue().to_pybytes()


def decode_batches(payload: bytes) -> list[pa.RecordBatch]:
    return list(ipc.open_stream(pa.py_buffer(payload)))


def encode_wal_record(csn: int, schema: pa.Schema, batches: Sequence[pa.RecordBatch],
                      seen: Optional[int]) -> bytes:
    """A WAL record of ``batches`` under ``csn``; ``seen``: the commit log's newest committed csn now
    (None: unknown, written as 0)."""
    return encode_record(WAL_SEEN_MAGIC, csn, _SEEN.pack(seen or 0) + encode_batches(schema, batches))


def wal_seen(magic: bytes, payload: bytes) -> Optional[int]:
    return _SEEN.unpack_from(payload)[0] if magic == WAL_SEEN_MAGIC else None


def decode_wal_record(magic: bytes, payload: bytes) -> list[pa.RecordBatch]:
    return decode_batches(payload[_SEEN.size:] if magic == WAL_SEEN_MAGIC else payload)
