"""Durable file primitives: atomic replacement, directory fsync, and an append-only file whose fsyncs
are shared by concurrent writers (group commit)."""
from __future__ import annotations

import os
import threading
import zlib
from pathlib import Path


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


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` by ``data``: a reader (or a recovery after a crash) sees the old or the new
    content, never a mix (write a temporary file, fsync it, rename over, fsync the directory)."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)


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
