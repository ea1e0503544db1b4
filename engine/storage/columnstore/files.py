"""Durable file primitives: atomic replacement, directory fsync, checksummed JSON documents, and an
append-only file whose fsyncs are shared by concurrent writers (group commit)."""
from __future__ import annotations

import json
import os
import uuid
import re
import threading
import zlib
from pathlib import Path
from typing import Optional

from engine.errors import StorageCorruptionError

# A checksummed JSON file is ``{"crc32": "<8 hex digits>", "document": <the document>}`` with the
# CRC32 taken over the exact bytes of ``<the document>``: still JSON (jq, an editor), and a reader
# checks the bytes it parses without serializing them again.
_CHECKED_PREFIX = re.compile(rb'\{"crc32": "([0-9a-f]{8})", "document": ')


def crc32_of_file(path: Path, chunk: int = 1 << 22) -> int:
    crc = 0
    with open(path, "rb") as f:
        while True:
            block = f.read(chunk)
            if not block:
                return crc
            crc = zlib.crc32(block, crc)


def fsync_dir(path: Path) -> None:
    """Make a rename / create / unlink inside ``path`` durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes, writers_race: bool = False) -> None:
    """Replace ``path`` by ``data``: a reader (or a recovery after a crash) sees the old or the new
    content, never a mix (write a temporary file, fsync it, rename over, fsync the directory).
    ``writers_race``: two threads may write ``path`` at once (a merge and a flush building the same
    index), so each writes its own temporary file."""
    suffix = f".{uuid.uuid4().hex[:8]}.tmp" if writers_race else ".tmp"
    tmp = path.with_name(path.name + suffix)
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)


def encode_checked_json(document) -> bytes:
    body = json.dumps(document).encode()
    return b'{"crc32": "%08x", "document": ' % zlib.crc32(body) + body + b"}"


def write_checked_json(path: Path, document) -> None:
    """Replace ``path`` atomically by ``document`` under a CRC32 (:func:`read_checked_json`)."""
    write_atomic(path, encode_checked_json(document))


def read_checked_json(path: Path, what: str, data: Optional[bytes] = None) -> tuple[dict, bool]:
    """The document of a JSON file written by :func:`write_checked_json`, and True; or, for a file
    of an older format without the checksum (plain JSON), that document and False — the caller
    accepts it only where its version predates checksums. A file that does not parse or fails its
    checksum raises :class:`StorageCorruptionError` naming it (``what``: "manifest", "catalog"...)
    and the offset where the damage shows. Missing: FileNotFoundError."""
    if data is None:
        data = Path(path).read_bytes()
    match = _CHECKED_PREFIX.match(data)
    if match is not None:
        body = memoryview(data)[match.end():-1]
        if data[-1:] != b"}" or zlib.crc32(body) != int(match.group(1), 16):
            raise StorageCorruptionError(
                f"{what} {path} is corrupt: its CRC32 {zlib.crc32(body):08x} is not the "
                f"{match.group(1).decode()} it was written with", path, match.end())
        offset = match.end()
        text = bytes(body)
    else:
        offset, text = 0, data
    try:
        document = json.loads(text)
    except ValueError as error:          # UnicodeDecodeError included
        at = offset + getattr(error, "pos", getattr(error, "start", 0))
        raise StorageCorruptionError(f"{what} {path} is corrupt at byte {at}: it does not parse ({error})",
                                     path, at) from None
    if not isinstance(document, dict):
        raise StorageCorruptionError(f"{what} {path} is corrupt: not a JSON object", path, 0)
    return document, match is not None


class SyncedAppendFile:
    """An append-only file; ``append`` returns the end offset of what it wrote and ``sync_to(offset)``
    returns once everything up to ``offset`` is on disk.

    Group commit: appends are serialized by a lock but do not fsync; whichever thread calls
    ``sync_to`` first fsyncs for every append made so far, and threads whose offset that fsync covered
    return without one. So N concurrent statements pay about one fsync, not N.
    """

    def __init__(self, path: Path, truncate_to: int | None = None):
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
        if truncate_to is not None:
            os.ftruncate(self._fd, truncate_to)
        self._end = os.lseek(self._fd, 0, os.SEEK_END)
        self._synced = self._end if truncate_to is None else 0
        self._write_lock = threading.Lock()
        self._sync_lock = threading.Lock()

    @property
    def size(self) -> int:
        return self._end

    def append(self, data: bytes) -> int:
        with self._write_lock:
            view = memoryview(data)
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
            self._end += len(data)
            return self._end

    def sync(self) -> None:
        """fsync everything appended so far (and the file's existence, with its directory's fsync)."""
        with self._sync_lock:
            end = self._end
            os.fsync(self._fd)
            self._synced = end

    def sync_to(self, offset: int) -> None:
        if self._synced >= offset:
            return
        with self._sync_lock:
            if self._synced >= offset:      # another thread's fsync covered us while we waited
                return
            end = self._end
            os.fsync(self._fd)
            self._synced = end

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
