"""A query's memory budget (``memory_limit``) and the disk its operators spill to past it.

Modelled on DataFusion's ``MemoryPool`` / ``MemoryReservation`` and DuckDB's buffer manager with its
temporary directory: the blocking operators (hash join, hash aggregate, sort, window, the stage
output a task holds) *reserve* the bytes of the Arrow data they keep from the query's
:class:`MemoryPool` before keeping it. A reservation that does not fit either makes the operator
spill (it writes what it holds to :class:`SpillFile`\\ s and frees the reservation) or, for an
operator that cannot spill, fails the query with :class:`~engine.errors.MemoryLimitError` naming the
operator and the limit; the process and its other sessions go on.

One pool per query in each process that runs its operators: the embedded runner's process (shared by
all of its leaves' tasks and the aggregator, which run in that one process), each Ray leaf's task, the
Ray driver's aggregator task. What is accounted is the Arrow buffers an operator holds (``nbytes``)
plus its hash table's estimated size, not every transient copy, so the process' peak RSS can exceed
the limit by a bounded factor (a batch in flight, a sort's output gather); docs/memory.md states it.

Concurrency: the embedded runner runs a query's tasks on a thread pool, so the pool's counter is
guarded by a lock; a reservation itself belongs to one operator of one task (one thread).
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
import threading
from contextvars import ContextVar
from typing import Iterator, Optional

import pyarrow as pa

from engine.errors import BindError, MemoryLimitError

# What one query's pool may write to its spill directory: this fraction of the disk space free there
# at its first spill (DuckDB's max_temp_directory_size defaults to 90% of it), so an exploding join
# under a small memory_limit stops with an error instead of filling the disk.
DISK_FRACTION = 0.9

# The default memory_limit: this fraction of the machine's physical memory (DuckDB takes 80%; a
# Canopy process on a shared machine leaves more to others, and accounting is below RSS).
DEFAULT_FRACTION = 0.5
_UNITS = {"": 1, "b": 1, "kb": 1000, "mb": 1000 ** 2, "gb": 1000 ** 3, "tb": 1000 ** 4,
          "k": 1024, "m": 1024 ** 2, "g": 1024 ** 3, "t": 1024 ** 4,
          "kib": 1024, "mib": 1024 ** 2, "gib": 1024 ** 3, "tib": 1024 ** 4}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")

# The running statement's memory_limit in bytes (None: no limit): set by the session around a
# statement like ``statement_deadline``; runners build each query's pools from it.
statement_memory_limit: ContextVar[Optional[int]] = ContextVar("statement_memory_limit", default=None)


# Below this many buffer bytes, held_bytes counts a batch's whole buffers (an upper bound of its
# nbytes, read in ~50 ns) instead of nbytes (~3 us: Arrow walks every buffer for the slice it
# references), which a tiny query's few one-row batches paid several times over.
_WHOLE_BUFFERS_BELOW = 1 << 18


def held_bytes(batch) -> int:
    """The bytes a record batch or table holds, for accounting: its buffers' total when small (at
    most ``_WHOLE_BUFFERS_BELOW`` over the bytes it references), else ``nbytes`` (a slice of a big
    buffer counts its part only)."""
    total = batch.get_total_buffer_size()
    return total if total < _WHOLE_BUFFERS_BELOW else batch.nbytes


def physical_memory() -> Optional[int]:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def default_memory_limit() -> int:
    """Half the machine's physical memory (4 GiB where it cannot be read)."""
    total = physical_memory()
    return int(total * DEFAULT_FRACTION) if total else 4 << 30


def parse_memory_limit(value) -> int:
    """``memory_limit`` as bytes: an integer of bytes, or a string such as ``'512MB'``, ``'2 GiB'``,
    ``'1.5G'`` (KB/MB/GB: powers of 1000; KiB/MiB/GiB and K/M/G: powers of 1024, as DuckDB reads
    them). At least 1 MiB: below that no batch fits.

    >>> parse_memory_limit('64MiB'), parse_memory_limit(1 << 30), parse_memory_limit('2GB')
    (67108864, 1073741824, 2000000000)
    """
    if isinstance(value, bool):
        value = None
    if isinstance(value, (int, float)) or (hasattr(value, "is_finite") and value.is_finite()):
        size = int(value)
    else:
        match = _SIZE.match(value) if isinstance(value, str) else None
        if match is None or match.group(2).lower() not in _UNITS:
            raise BindError(f"memory_limit takes a size in bytes or with a unit (KB, MB, GB, KiB, MiB, GiB), "
                            f"such as '4GB', not {value!r}")
        size = int(float(match.group(1)) * _UNITS[match.group(2).lower()])
    if size < 1 << 20:
        raise BindError(f"memory_limit must be at least 1MiB, not {value!r}")
    return size


def format_bytes(size: int) -> str:
    """A size as errors show it.

    >>> format_bytes(3 << 20), format_bytes(1536), format_bytes(12)
    ('3.0 MiB', '1.5 KiB', '12 bytes')
    """
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} bytes"


class MemoryPool:
    """One query's memory in one process: the sum of its operators' reservations, at most ``limit``
    bytes (None: unlimited, only counted). ``peak``: the most reserved at once (EXPLAIN ANALYZE,
    tests). The spill directory is made on the first spill and removed by :meth:`close`."""

    def __init__(self, limit: Optional[int] = None, where: str = ""):
        self.limit = limit
        self.where = where
        self.reserved = 0
        self.peak = 0
        self.spilled_bytes = 0
        self.spilled_by: dict[str, int] = {}    # operator -> bytes it wrote to disk (EXPLAIN ANALYZE)
        self._spillable = 0                 # open spillable reservations
        self._spilling_reserved = 0         # the bytes they hold
        self._lock = threading.Lock()
        self._spill_dir: Optional[str] = None
        self._files = 0
        self._written = 0                   # bytes handed to spill files (before compression)
        self.disk_limit: Optional[int] = None   # set at the first spill (DISK_FRACTION of the free space)

    def reservation(self, operator: str, spillable: bool = False) -> "Reservation":
        """A new reservation of nothing yet. ``spillable``: its operator spills when a grow fails, so
        it gets a fair share (DataFusion's FairSpillPool): the limit less what unspillable
        reservations hold, divided among the spillable ones open at the time; one spilling operator
        cannot starve another running beside it (the embedded runner's leaves share the pool)."""
        return Reservation(self, operator, spillable)

    def _open(self, reservation: "Reservation") -> None:
        with self._lock:
            self._spillable += 1

    def _close(self, reservation: "Reservation") -> None:
        with self._lock:
            self._spillable -= 1

    def _try_grow(self, size: int, reservation: Optional["Reservation"] = None) -> bool:
        with self._lock:
            if self.limit is not None and self.reserved + size > self.limit:
                return False
            if self.limit is not None and reservation is not None and reservation.spillable:
                unspillable = self.reserved - self._spilling_reserved
                share = (self.limit - unspillable) // max(1, self._spillable)
                if reservation.size + size > share:
                    return False
                self._spilling_reserved += size
            self.reserved += size
            if self.reserved > self.peak:
                self.peak = self.reserved
            return True

    def share(self) -> Optional[int]:
        """What one spillable reservation may hold now (its fair share; None: no limit)."""
        if self.limit is None:
            return None
        with self._lock:
            unspillable = self.reserved - self._spilling_reserved
            return (self.limit - unspillable) // max(1, self._spillable)

    def _shrink(self, size: int, reservation: Optional["Reservation"] = None) -> None:
        with self._lock:
            self.reserved -= size
            if reservation is not None and reservation.spillable:
                self._spilling_reserved -= size

    def error(self, operator: str, wanted: int, spilled: bool = False) -> MemoryLimitError:
        after = " even after spilling to disk" if spilled else ""
        return MemoryLimitError(
            f"{operator} needs more memory than memory_limit = {format_bytes(self.limit)} allows{after} "
            f"({format_bytes(self.reserved)} reserved by the query, {format_bytes(wanted)} more asked{self.where}); "
            f"raise it with SET memory_limit = '...'", operator=operator, limit=self.limit)

    def spill_file(self, schema: pa.Schema, operator: str = "") -> "SpillFile":
        with self._lock:
            if self._spill_dir is None:
                self._spill_dir = tempfile.mkdtemp(prefix="canopy-spill-", dir=spill_root())
                try:
                    free = shutil.disk_usage(self._spill_dir).free
                    self.disk_limit = int(free * DISK_FRACTION)
                except OSError:
                    self.disk_limit = None
            self._files += 1
            path = os.path.join(self._spill_dir, f"{self._files}.arrow")
        return SpillFile(self, path, schema, operator)

    def wrote(self, operator: str, size: int) -> None:
        """``size`` more bytes (uncompressed) go to a spill file: past the disk limit the query stops."""
        with self._lock:
            self._written += size
            written, limit = self._written, self.disk_limit
        if limit is not None and written > limit:
            raise MemoryLimitError(
                f"{operator} needs more than memory_limit = {format_bytes(self.limit or 0)} and more disk than "
                f"the spill directory has free ({format_bytes(written)} written there{self.where}); raise "
                f"memory_limit or free disk space", operator=operator, limit=self.limit)

    def close(self) -> None:
        """Remove the query's spill files (the query has ended; nothing reads them any more)."""
        with self._lock:
            directory, self._spill_dir = self._spill_dir, None
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)


def spill_root() -> Optional[str]:
    """Where spill directories go: ``$CANOPY_SPILL_DIR``, else the system's temporary directory."""
    return os.environ.get("CANOPY_SPILL_DIR") or None


class Reservation:
    """The bytes one operator of one task holds, reserved from its query's pool. ``grow`` raises
    :class:`MemoryLimitError` when they do not fit; ``try_grow`` says so instead (an operator that
    can spill). Used as a context manager, everything still reserved is given back on exit."""

    def __init__(self, pool: MemoryPool, operator: str, spillable: bool = False):
        self.pool = pool
        self.operator = operator
        self.spillable = spillable
        self.size = 0
        if spillable:
            pool._open(self)

    def try_grow(self, size: int) -> bool:
        if size <= 0 or self.pool._try_grow(size, self):
            self.size += max(size, 0)
            return True
        return False

    def grow(self, size: int, spilled: bool = False) -> None:
        if not self.try_grow(size):
            raise self.pool.error(self.operator, size, spilled)

    def resize(self, size: int) -> bool:
        """Hold ``size`` bytes in all (estimates that are recomputed, e.g. a hash table's); False when
        growing to it does not fit (nothing changed then)."""
        if size > self.size:
            return self.try_grow(size - self.size)
        self.shrink(self.size - size)
        return True

    def shrink(self, size: int) -> None:
        size = min(size, self.size)
        if size > 0:
            self.size -= size
            self.pool._shrink(size, self)

    def free(self) -> None:
        self.shrink(self.size)

    def close(self) -> None:
        """Give everything back; the reservation is no longer counted among the spillable ones."""
        self.free()
        if self.spillable:
            self.spillable = False
            self.pool._close(self)

    def __enter__(self) -> "Reservation":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


_IPC_OPTIONS = pa.ipc.IpcWriteOptions(compression="lz4")


class SpillFile:
    """Batches written to disk as an Arrow IPC stream with LZ4-compressed buffers, read back once in
    the order written. Lives in its query's spill directory (removed with the pool); ``delete``
    removes it as soon as it was read."""

    def __init__(self, pool: MemoryPool, path: str, schema: pa.Schema, operator: str = ""):
        self.pool = pool
        self.operator = operator
        self.path = path
        self.schema = schema
        self.rows = 0
        self.bytes = 0                      # uncompressed: what reading it all back holds
        self.batch_bytes = 0                # the largest batch written (what reading one back holds)
        self._sink = pa.OSFile(path, "wb")
        self._writer = pa.ipc.new_stream(self._sink, schema, options=_IPC_OPTIONS)

    def write(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows:
            self.pool.wrote(self.operator or "an operator", batch.nbytes)
            self._writer.write_batch(batch)
            self.rows += batch.num_rows
            self.bytes += batch.nbytes
            self.batch_bytes = max(self.batch_bytes, batch.nbytes)

    def finish(self) -> "SpillFile":
        if self._writer is not None:
            self._writer.close()
            self._sink.close()
            self._writer = None
            try:
                size = os.path.getsize(self.path)
            except OSError:                 # the query ended and took its directory along
                size = 0
            with self.pool._lock:
                self.pool.spilled_bytes += size
                by = self.pool.spilled_by
                by[self.operator] = by.get(self.operator, 0) + size
        return self

    def spilled_rows(self) -> "SpilledRows":
        """What was written, as a picklable handle that another process of this host can read."""
        self.finish()
        return SpilledRows(self.path, self.schema, self.rows)

    def read(self) -> Iterator[pa.RecordBatch]:
        self.finish()
        with pa.OSFile(self.path, "rb") as source:
            yield from pa.ipc.open_stream(source)

    def read_all(self) -> pa.Table:
        self.finish()
        with pa.OSFile(self.path, "rb") as source:
            return pa.ipc.open_stream(source).read_all()

    def delete(self) -> None:
        self.finish()
        try:
            os.remove(self.path)
        except FileNotFoundError:
            pass


class SpilledRows:
    """A finished spill file by path: the rows of a materialised CTE that did not fit, carried in the
    stages that read it (pickled to a Ray leaf of the same host) and read there as a stream."""

    def __init__(self, path: str, schema: pa.Schema, rows: int):
        self.path = path
        self.schema = schema
        self.num_rows = rows

    def read(self, operator: str) -> Iterator[pa.RecordBatch]:
        try:
            source = pa.OSFile(self.path, "rb")
        except FileNotFoundError:
            raise MemoryLimitError(f"{operator}: its rows were spilled to {self.path}, which this process cannot "
                                   f"read (another host?); raise memory_limit so they stay in memory",
                                   operator=operator) from None
        with source:
            yield from pa.ipc.open_stream(source)
