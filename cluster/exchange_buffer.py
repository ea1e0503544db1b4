"""The embedded runner's exchange buffers: a stage's output, held between stages until the consuming
stage reads it, under the query's ``memory_limit``.

A query's buffers share one :class:`~engine.exec.memory.MemoryPool` (the limit again: the operators'
pools bound what each task holds while it runs, this one what waits between stages). A batch is kept
in memory while the pool has room; past it, the batches that follow go to a spill file (Arrow IPC,
LZ4) and are read back, one at a time, by whoever iterates the buffer: the router, then the
consuming task's ExchangeSourceExec. Spill files go with the pool when the query ends.

Modelled on DuckDB's buffer manager, which evicts the blocks of materialised intermediate results to
its temporary directory, and on Ray's object store, which spills objects to disk past its capacity
(what the Ray runner's exchanges go through).
"""
from __future__ import annotations

from typing import Iterable, Iterator, Optional

import pyarrow as pa

from engine.exec.memory import MemoryPool, SpillFile, held_bytes

OPERATOR = "Exchange"


class ExchangeBuffer:
    """Batches of one schema, in the order appended; iterated any number of times. ``rows`` and
    ``nbytes`` (Arrow bytes, as if in memory) are known without reading what is on disk."""

    def __init__(self, pool: MemoryPool):
        self.pool = pool
        # the first batch's schema, which the spilled batches keep (cast to it where they differ:
        # a dictionary column stays one), so what is read back concatenates with what was held
        self.schema: Optional[pa.Schema] = None
        self._memory = pool.reservation(OPERATOR)
        self._held: list[pa.RecordBatch] = []
        self._file: Optional[SpillFile] = None
        self.rows = 0
        self.nbytes = 0

    @property
    def spilled(self) -> bool:
        return self._file is not None

    def append(self, batch: pa.RecordBatch) -> None:
        if not batch.num_rows:
            return
        self.rows += batch.num_rows
        size = held_bytes(batch)
        self.nbytes += size
        if self.schema is None:
            self.schema = batch.schema
        # once one batch has gone to disk the rest follow it there, so the order is kept
        if self._file is None and self._memory.try_grow(size):
            self._held.append(batch)
            return
        if self._file is None:
            self._file = self.pool.spill_file(self.schema, OPERATOR)
        if not batch.schema.equals(self._file.schema):
            batch = pa.RecordBatch.from_arrays(
                [c if c.type == f.type else c.cast(f.type) for c, f in zip(batch.columns, self._file.schema)],
                schema=self._file.schema)
        self._file.write(batch)

    def extend(self, batches: Iterable[pa.RecordBatch]) -> "ExchangeBuffer":
        for batch in batches:
            self.append(batch)
        return self

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        yield from self._held
        if self._file is not None:
            yield from self._file.read()

    def __len__(self) -> int:
        return len(self._held) + (1 if self._file is not None and self._file.rows else 0)

    def discard(self) -> None:
        """Nobody reads it any more: give its memory back and delete its file."""
        self._held = []
        self._memory.free()
        if self._file is not None:
            self._file.delete()
            self._file = None


class Chain:
    """Several buffers (or lists of batches) read one after the other, as one input; re-iterable."""

    def __init__(self, parts: Iterable):
        self.parts = list(parts)
        self.rows = sum(_rows(p) for p in self.parts)
        self.nbytes = sum(_nbytes(p) for p in self.parts)

    @property
    def spilled(self) -> bool:
        return any(getattr(p, "spilled", False) for p in self.parts)

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        for part in self.parts:
            yield from part

    def __len__(self) -> int:
        return sum(len(p) for p in self.parts)


def _rows(part) -> int:
    rows = getattr(part, "rows", None)
    return rows if rows is not None else sum(b.num_rows for b in part)


def _nbytes(part) -> int:
    nbytes = getattr(part, "nbytes", None)
    return nbytes if nbytes is not None else sum(held_bytes(b) for b in part)
