"""A LOAD DATA file's bytes: opened (missing, a directory, no permission: said in the statement's words),
decompressed by its extension, read whole or as runs of whole lines, and decoded to UTF-8 from its
CHARACTER SET."""
from __future__ import annotations

import codecs
from typing import Optional

import numpy as np
import pyarrow as pa

from engine.errors import BadDataError, ExecutionError, UnsupportedError

_UTF8_CHARSETS = {"utf8", "utf8mb4", "utf8mb3", "utf-8", "ascii", "us-ascii", "binary"}
_MYSQL_CODECS = {"latin1": "cp1252", "latin2": "iso8859-2", "cp1251": "cp1251", "greek": "iso8859-7",
                 "hebrew": "iso8859-8", "koi8r": "koi8-r", "ucs2": "utf-16-be", "utf16": "utf-16-be",
                 "utf16le": "utf-16-le", "utf32": "utf-32-be", "sjis": "shift_jis", "gbk": "gbk",
                 "big5": "big5", "euckr": "euc-kr", "ujis": "euc-jp", "gb2312": "gb2312"}
_COMPRESSION = {".gz": "gzip", ".gzip": "gzip", ".lz4": "lz4", ".zst": "zstd", ".zstd": "zstd",
                ".bz2": "bz2"}


class WholeFileNeeded(Exception):
    """The streamed read of a file stopped: drop its blocks and read the file whole (see
    :func:`stream_delimited`). Never reaches a user."""


def open_input(path: str):
    """(the file's handle, a stream of its bytes: decompressed for .gz/.lz4/.zst/.bz2), or
    ExecutionError for a missing file, a directory, no permission."""
    try:
        handle = open(path, "rb")
    except FileNotFoundError:
        raise ExecutionError(f"LOAD DATA: file {path!r} not found") from None
    except IsADirectoryError:
        raise ExecutionError(f"LOAD DATA: {path!r} is a directory, not a file") from None
    except PermissionError:
        raise ExecutionError(f"LOAD DATA: permission denied reading {path!r}") from None
    except OSError as e:
        raise ExecutionError(f"LOAD DATA: cannot open {path!r}: {e.strerror or e}") from None
    compression = compression_of(path)
    return handle, (handle if compression is None else pa.input_stream(handle, compression=compression))


def compression_of(path: str) -> Optional[str]:
    return next((codec for ext, codec in _COMPRESSION.items() if path.lower().endswith(ext)), None)


def read_file(path: str) -> bytes:
    handle, source = open_input(path)
    with handle:
        try:
            return source.read()
        except (pa.ArrowException, OSError) as e:
            kind = f"{compression_of(path)} " if compression_of(path) else ""
            raise BadDataError(f"LOAD DATA {path}: cannot read {kind}data: {e}") from None


class Chunks:
    """A file's bytes as runs of whole lines of about ``size`` bytes (the last may lack its line end).

    One buffer serves every run: pyarrow's CSV reader copies what it parses into its own arrays, so
    the run before is dead once parsed, and reading into the same pages again spares the page faults
    of a fresh allocation per run (about a third of the load's system time). Only the partial line
    after a run's last line end is copied, to the front of the buffer.
    """

    def __init__(self, source, handle, size: int):
        self.source, self.handle, self.size = source, handle, size
        self.buffer = bytearray(size)
        self.scratch = np.empty(0, np.bool_)     # count()'s flags, reused like the buffer
        self.carry = 0             # bytes at the front of the buffer that continue the last run
        self.position = 0          # of the raw file, for compressed input too

    def next(self) -> tuple[Optional[bytearray], int, int]:
        """(data, end, file bytes read for it): the run is ``data[:end]``, valid until the next
        call; data is None at the end of the file."""
        filled = self.carry
        while True:
            if len(self.buffer) - filled < max(self.size // 2, 1):     # no room for a useful read
                self.buffer.extend(bytes(max(self.size, len(self.buffer))))
            try:
                read = self.source.readinto(memoryview(self.buffer)[filled:])
            except (pa.ArrowException, OSError):
                raise WholeFileNeeded("unreadable data") from None  # the whole read names the error
            filled += read
            end = self.buffer.rfind(b"\n", 0, filled) + 1
            if not read or end:
                break
        if not read:
            end = filled
        # the partial line goes to the front (after this run is parsed: the caller parses first)
        self.pending_carry = (end, filled)
        position = self.handle.tell()
        consumed, self.position = position - self.position, position
        return (self.buffer if end else None), end, consumed

    def count(self, run: np.ndarray, byte: int) -> int:
        """How often ``byte`` occurs in ``run`` (a view of the buffer): NumPy's compare and count
        release the GIL and run about four times faster than ``bytes.count`` here."""
        if len(self.scratch) < len(run):
            self.scratch = np.empty(len(self.buffer), np.bool_)
        flags = self.scratch[:len(run)]
        np.equal(run, byte, out=flags)
        return int(np.count_nonzero(flags))

    def release(self) -> None:
        """The run ``next`` returned is parsed: move its trailing partial line to the front."""
        end, filled = self.pending_carry
        self.buffer[:filled - end] = self.buffer[end:filled]
        self.carry = filled - end


def decode_text(data: bytes, charset: Optional[str], path: str) -> bytes:
    """The file as UTF-8 (pyarrow's only text encoding)."""
    if charset is None or charset.lower() in _UTF8_CHARSETS:
        return data
    name = _MYSQL_CODECS.get(charset.lower(), charset.lower())
    try:
        codecs.lookup(name)
    except LookupError:
        raise UnsupportedError(f"CHARACTER SET {charset}") from None
    try:
        return data.decode(name).encode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise BadDataError(f"LOAD DATA {path}: line {line}: not valid {charset} text") from None


def escaped_bytes(data: bytes, escape: bytes, offset: int, limit: int = 10_000) -> Optional[set[bytes]]:
    """The bytes that follow the escape character, or None when there are too many escapes to visit
    one by one (then every rewrite just runs). Exact once escaped escapes are replaced."""
    if data.count(escape, offset) > limit:
        return None
    followers, position = set(), data.find(escape, offset)
    while position >= 0:
        followers.add(data[position + 1:position + 2])
        position = data.find(escape, position + 1)
    return followers


def skip_lines(data: bytes, count: int) -> int:
    """Byte offset after the first ``count`` lines (the whole file when it has fewer)."""
    offset = 0
    for _ in range(count):
        end = data.find(b"\n", offset)
        if end < 0:
            return len(data)
        offset = end + 1
    return offset
