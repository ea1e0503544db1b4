"""The storage interface a leaf uses for one partition of one table."""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Iterator, Optional, Sequence

import pyarrow as pa


class PartitionStore(ABC):
    """Rows of one partition of one table.

    Concurrency contract: appends are atomic per call (a reader sees all of a batch or none of it);
    ``scan`` iterates over a snapshot taken when it starts.
    """

    schema: pa.Schema

    @abstractmethod
    def append(self, batch: pa.RecordBatch) -> None:
        """Add rows (already of this table's schema)."""

    @abstractmethod
    def snapshot(self):
        """An immutable view of the rows as of now, for :meth:`scan` (``snapshot=``): the runner pins
        every partition a query reads at its start, so the query sees each statement everywhere or
        nowhere (see ``Committer.published``)."""

    @abstractmethod
    def scan(self, columns: Optional[Sequence[str]] = None, batch_rows: Optional[int] = None,
             bounds: Optional[Sequence[tuple[str, str, object]]] = None,
             encoded: bool = False, snapshot=None, stats: Optional[dict] = None) -> Iterator[pa.RecordBatch]:
        """Yield the partition's rows, only ``columns`` (all when None), at most ``batch_rows`` a batch;
        those of ``snapshot`` (from :meth:`snapshot`) when given, else the rows as of now.

        ``encoded``: the caller takes columns as stored (run-end or dictionary encoded arrays of the
        column's value type) and decodes them itself; a store may still return plain arrays.

        ``bounds``: (column, op, value) conjuncts of the query's filter (op: eq, ne, lt, le, gt, ge,
        ``between`` with a (low, high) pair, ``in`` with a tuple). A store may skip rows it can prove
        fail them (segment elimination by min/max); it need not filter, the caller still does.

        ``stats``: counts what this scan reads (``segments_read``, ``rows_read``, ``index_lookups``),
        as the store's own ``scan_stats`` counts every scan's (EXPLAIN ANALYZE: a store's counters also
        move with the scans of other queries and of the background statistics collection)."""

    @abstractmethod
    def row_count(self) -> int:
        """Number of live rows (answered without reading column data)."""

    @abstractmethod
    def replace(self, batches: Sequence[pa.RecordBatch]) -> None:
        """Atomically replace all rows (DELETE/UPDATE rewrite the partition through this)."""

    def truncate(self) -> None:
        self.replace([])
