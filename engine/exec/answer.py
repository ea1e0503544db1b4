"""A query's answer past ``memory_limit``: the final stage's output kept on disk and read as it is fetched.

The final task's output (the answer, gathered where the query was started) is held in memory while the
task's pool grants it: a *spillable* reservation of that pool, so it shares the limit fairly with the
operators still running beside it. Past its share, what is held and every later batch are written in
order to one spill file (Arrow IPC stream, LZ4-compressed buffers, as every spill) and the query hands
back a :class:`SpilledAnswer`, which a DB-API cursor's ``fetch*`` and the MySQL wire server read from
disk a batch at a time (DuckDB keeps a large result in its buffer manager, which spills alike).

The answer on disk has its own bound: at most ``ANSWER_DISK_FACTOR`` times ``memory_limit`` (and never
past the spill directory's disk bound): a join that explodes stops with :class:`MemoryLimitError`
after writing a bounded amount instead of filling the disk before the client sees a row.

Only where the answer's reader takes it as a stream may it spill: a client (a SELECT, EXPLAIN
ANALYZE), a materialised CTE, whose references read the file (``SpilledRows``), a plain INSERT ...
SELECT or CREATE TABLE ... AS, which load it into the table a batch at a time, a scalar subquery (on
disk: more than one row, an error). ``answer_spill`` names it for the running plan. Elsewhere (INSERT
IGNORE / REPLACE / ON DUPLICATE KEY UPDATE ... SELECT, AUTO_INCREMENT) it is held whole and counts
against the limit.
"""
from __future__ import annotations

import weakref
from contextvars import ContextVar
from typing import Callable, Iterator, Optional

import pyarrow as pa

from engine.errors import MemoryLimitError
from engine.exec.memory import MemoryPool, Reservation, SpilledRows, format_bytes, held_bytes
from engine.exec.operators.base import conform

# An answer may take this many times memory_limit on disk (uncompressed Arrow bytes) before the query
# stops: far above any answer a client fetches whole, far below the disk a runaway join would fill.
ANSWER_DISK_FACTOR = 8

# what a client's answer is called in EXPLAIN ANALYZE's "spilled to disk" and in the error past its bound
ANSWER = "Answer"

# The name under which the running plan's answer may go to disk (ANSWER, or "CTE <name>" for a
# materialised CTE's init plan), None where it is held whole: engine.sql.query.run_query sets it
answer_spill: ContextVar[Optional[str]] = ContextVar("answer_spill", default=None)


class AnswerCollector:
    """The final task's output batches, in order: in memory while ``reservation`` grants them, then on
    disk. One per final task (one thread); the runner calls :meth:`hold` per batch as the task makes
    it and :meth:`result` once it ended, or :meth:`close` if the query failed."""

    def __init__(self, schema: pa.Schema, limit: Optional[int], name: str = ANSWER, where: str = ""):
        self.schema = schema
        self.limit = limit
        self.name = name
        self.rows = 0
        self._held: list[pa.RecordBatch] = []
        # its own pool, for its spill file only: the file outlives the query (the client reads it)
        self._pool = MemoryPool(limit, where=where)
        self._file = None
        self._bound = ANSWER_DISK_FACTOR * limit if limit else None

    @classmethod
    def for_query(cls, schema: pa.Schema, limit: Optional[int], where: str = "") -> Optional["AnswerCollector"]:
        """A collector when the running plan's answer may spill under a limit, else None (held whole)."""
        name = answer_spill.get()
        return cls(schema, limit, name, where) if limit and name else None

    @property
    def spilled_by(self) -> dict:
        return self._pool.spilled_by

    def hold(self, batch: pa.RecordBatch, reservation: Reservation) -> None:
        """Keep ``batch``: in memory if the task's pool grants its bytes, else (and from then on) on disk."""
        self.rows += batch.num_rows
        if self._file is None and reservation.try_grow(held_bytes(batch)):
            self._held.append(batch)
            return
        if self._file is None:          # past the limit: what is held goes first, in order
            self._file = self._pool.spill_file(self.schema, self.name)
            held, self._held = self._held, []
            for kept in held:
                self._write(kept)
            reservation.free()
        self._write(batch)

    def _write(self, batch: pa.RecordBatch) -> None:
        written = self._file.bytes + batch.nbytes
        if self._bound is not None and written > self._bound:
            raise MemoryLimitError(
                f"{self.name} needs more than memory_limit = {format_bytes(self.limit)} allows, even on disk: an "
                f"answer may take {ANSWER_DISK_FACTOR} times memory_limit there ({format_bytes(written)} so far"
                f"{self._pool.where}); raise it with SET memory_limit = '...' or ask for fewer rows",
                operator=self.name, limit=self.limit)
        self._file.write(conform(batch, self.schema))

    def result(self) -> "pa.Table | SpilledAnswer":
        """The answer: a Table when it stayed in memory, else a SpilledAnswer that owns the file."""
        if self._file is None:
            table = pa.Table.from_batches([conform(b, self.schema) for b in self._held], schema=self.schema)
            self._held = []
            self._pool.close()
            return table
        self._file.finish()
        return SpilledAnswer(self._pool, self._file.path, self.schema, self.rows)

    def close(self) -> None:
        """The query failed: drop what was kept (and the file)."""
        self._held = []
        self._pool.close()


class SpilledAnswer:
    """An answer on disk: the few things of a ``pa.Table`` its readers use (``schema``, ``num_rows``,
    ``num_columns``, ``column_names``, ``slice``, ``to_batches``), read from the file a batch at a time.
    ``slice`` reads forward from where the last one stopped (a cursor fetches in order); an earlier
    offset reads the file again from its start. ``map`` gives a view whose batches pass through a
    function (the result's casts and names), sharing the file. The file goes with :meth:`close`, or
    when the last view is garbage collected."""

    def __init__(self, pool: MemoryPool, path: str, schema: pa.Schema, rows: int,
                 transform: Optional[Callable[[pa.RecordBatch], pa.RecordBatch]] = None, owner=None,
                 file_schema: Optional[pa.Schema] = None):
        self.path = path
        self.schema = schema
        self.num_rows = rows
        self._pool = pool
        self._transform = transform
        self._file_schema = file_schema or schema
        # views share the file: it goes when the first answer closes or when no view is left
        self._owner = owner if owner is not None else _Owner(pool)
        self._reset()

    @property
    def num_columns(self) -> int:
        return len(self.schema)

    @property
    def column_names(self) -> list[str]:
        return self.schema.names

    @property
    def nbytes(self) -> int:
        return 0                        # nothing of it is held in memory

    @property
    def spilled_by(self) -> dict:
        return self._pool.spilled_by

    def map(self, transform: Callable[[pa.RecordBatch], pa.RecordBatch], schema: pa.Schema) -> "SpilledAnswer":
        """A view whose batches are ``transform(batch)`` (with ``schema``) of this one's."""
        inner = self._transform
        chained = transform if inner is None else (lambda batch: transform(inner(batch)))
        return SpilledAnswer(self._pool, self.path, schema, self.num_rows, chained, self._owner, self._file_schema)

    def to_batches(self) -> Iterator[pa.RecordBatch]:
        for batch in self.spilled_rows().read(ANSWER):
            yield batch if self._transform is None else self._transform(batch)

    def spilled_rows(self) -> SpilledRows:
        """The file as a materialised CTE's rows (read by path, on this host), before any ``map``."""
        return SpilledRows(self.path, self._file_schema, self.num_rows)

    def slice(self, offset: int = 0, length: Optional[int] = None) -> pa.Table:
        stop = self.num_rows if length is None else min(self.num_rows, offset + max(length, 0))
        if self._batches is None or offset < self._start:
            self._open()
        pieces = []
        while self._current is not None and self._start < stop:
            batch = self._current
            end = self._start + batch.num_rows
            if end > offset:
                low = max(offset - self._start, 0)
                pieces.append(batch.slice(low, min(stop, end) - self._start - low))
            if end > stop:
                break                   # the rest of this batch is for the next slice
            self._start = end
            self._current = next(self._batches, None)
        return pa.Table.from_batches(pieces, schema=self.schema)

    def read_all(self) -> pa.Table:
        return pa.Table.from_batches(list(self.to_batches()), schema=self.schema)

    def _reset(self) -> None:
        if getattr(self, "_batches", None) is not None:
            self._batches.close()       # the file it has open
        self._batches: Optional[Iterator[pa.RecordBatch]] = None
        self._start = 0
        self._current: Optional[pa.RecordBatch] = None

    def _open(self) -> None:
        self._reset()
        self._batches = self.to_batches()
        self._current = next(self._batches, None)

    def close(self) -> None:
        self._reset()
        self._owner.close()


class _Owner:
    """Removes an answer's spill directory once: on close, or when no view refers to it any more."""

    def __init__(self, pool: MemoryPool):
        self._finalizer = weakref.finalize(self, pool.close)

    def close(self) -> None:
        self._finalizer()


