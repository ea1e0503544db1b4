"""A segment's hash indexes in the data_dir: ``<segment file>.hidx-<index name as hex>``, one per
index (a column's, or its UCA index: engine.storage.hash_index.index_name), beside the (immutable)
segment file they index, so a reopened partition answers its first point lookup from the file
instead of reading the key column of every segment again.

An index is derived data: a file that is missing, fails its CRC32, or was written under another hash
scheme (the hashes are pandas' siphash of collation keys: a new pandas may hash differently) is
rebuilt from the segment and written again; nothing is lost. The file goes with its segment (unlinked
when the retired segment's last reader lets go, or, after a crash, as an unnamed file when the
partition is opened).

Layout: a header (magic, entries, CRC32 of the rest, the hash scheme and the column name, each
length-prefixed), then the sorted uint64 hashes, then the int64 row positions.
"""
from __future__ import annotations

import struct
import zlib
from pathlib import Path
from typing import Optional

import numpy as np

from engine.storage.columnstore.files import write_atomic

MARK = ".hidx-"
_MAGIC = b"CNHX0001"
_HEADER = struct.Struct("<8sQIHH")          # magic, entries, crc32, len(scheme), len(column)


def hash_scheme() -> bytes:
    """How the hashes were made: a UCA index (its name ends so) hashes 0900_ai_ci keys instead, in
    their second form (``uca 2``: characters above U+FFFF weighed by their own, not all as U+FFFD)."""
    import pandas
    return f"siphash-general_ci;uca 2;pandas {pandas.__version__}".encode()


def index_path(segment_path: Path, column: str) -> Path:
    return segment_path.with_name(f"{segment_path.name}{MARK}{column.encode().hex()}")


def column_of(file_name: str) -> Optional[tuple[str, str]]:
    """(segment file, column) an index file's name stands for; None for another file."""
    segment, mark, hexed = file_name.partition(MARK)
    if not mark or file_name.endswith(".tmp"):
        return None
    try:
        return segment, bytes.fromhex(hexed).decode()
    except ValueError:
        return None


def write_index(segment_path: Path, column: str, index) -> None:
    """Write ``index`` (a HashIndex) for ``column`` of the segment at ``segment_path``, atomically
    (a temporary file of its own, so concurrent builders of one index do not collide), fsynced."""
    scheme, name = hash_scheme(), column.encode()
    body = scheme + name + index.hashes.astype("<u8", copy=False).tobytes() + \
        index.positions.astype("<i8", copy=False).tobytes()
    data = _HEADER.pack(_MAGIC, len(index.hashes), zlib.crc32(body), len(scheme), len(name)) + body
    write_atomic(index_path(segment_path, column), data, writers_race=True)


def read_index(segment_path: Path, column: str, rows: int):
    """The HashIndex stored for ``column`` of the segment (of ``rows`` rows), or None when there is
    none usable (missing, damaged, another hash scheme): the caller rebuilds it."""
    from engine.storage.hash_index import HashIndex, index_column
    try:
        data = index_path(segment_path, column).read_bytes()
    except FileNotFoundError:
        return None
    if len(data) < _HEADER.size:
        return None
    magic, entries, crc, scheme_len, name_len = _HEADER.unpack_from(data)
    body = memoryview(data)[_HEADER.size:]
    if magic != _MAGIC or len(body) != scheme_len + name_len + 16 * entries or entries > rows \
            or zlib.crc32(body) != crc:
        return None
    if bytes(body[:scheme_len]) != hash_scheme() or bytes(body[scheme_len:scheme_len + name_len]) != column.encode():
        return None
    start = scheme_len + name_len
    hashes = np.frombuffer(body, dtype="<u8", count=entries, offset=start)
    positions = np.frombuffer(body, dtype="<i8", count=entries, offset=start + 8 * entries)
    return HashIndex(hashes.astype(np.uint64, copy=False), positions.astype(np.int64, copy=False),
                     index_column(column)[1])


def remove_indexes(segment_path: Path) -> None:
    """Unlink the index files of a segment file that is going away."""
    for path in segment_path.parent.glob(f"{segment_path.name}{MARK}*"):
        path.unlink(missing_ok=True)
