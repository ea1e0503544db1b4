"""A streaming load's driver side, one for both runners (``runner.begin_load``): blocks are routed with the
cluster's placement as they are read, each partition's rows wait here until they make LOAD_CHUNK_ROWS,
then go to the partition's leaf (every leaf: a reference table's copy) as one numbered chunk, staged in
its :class:`cluster.leaf_writes.LeafWrites` until the load's transaction prepares them
(:func:`cluster.writes.write`, with the rows of ``add_related`` tables and ``on_commit`` inside it: a
pipeline batch's rows and file marks become visible together); ``abort`` drops the staged chunks.

What differs between the runners is how a chunk reaches a leaf, behind the runner's
:class:`cluster.writes.WriteTarget` (``stage_chunk`` and the calls beside it): the embedded runner
concatenates a chunk's pieces on its leaf pool (threads) and stages it in process; the Ray runner sends
it to the leaf actor as a :mod:`cluster.transport` payload, LZ4-compressed while the link backs up.
Flow control is here, the same for both: a leaf with LOAD_MAX_OUTSTANDING chunks unacknowledged makes
the load wait for the oldest, which bounds the memory of chunks on their way.
"""
from __future__ import annotations

import dataclasses
import uuid
from collections import deque
from typing import Optional

import pyarrow as pa

from engine.catalog import TableDef
from engine.runner import LoadWriter

LOAD_CHUNK_ROWS = 64 * 1024   # rows of one partition staged as one chunk (the stores append them as one batch)
LOAD_MAX_OUTSTANDING = 8      # a leaf's unacknowledged chunks before the load waits for the oldest


@dataclasses.dataclass
class LoadStats:
    """What one streaming load sent to the leaves (``runner.last_load``)."""
    rows: int = 0
    chunks: int = 0
    chunks_compressed: int = 0
    bytes_raw: int = 0           # Arrow bytes of the chunks
    bytes_sent: int = 0          # bytes that went to the leaves (LZ4 where compressed)
    waits: int = 0               # times the load waited for a leaf with LOAD_MAX_OUTSTANDING chunks unacknowledged
    compression: str = "never"

    @property
    def ratio(self) -> float:
        return self.bytes_raw / self.bytes_sent if self.bytes_sent else 1.0


@dataclasses.dataclass
class ChunkSent:
    """What ``WriteTarget.stage_chunk`` did with one chunk: ``handle`` (None: staged already) resolves
    once the leaf holds it."""
    handle: object
    rows: int
    bytes_raw: int
    bytes_sent: int
    compressed: bool = False


class StreamingLoad(LoadWriter):
    """The one load driver (see the module docstring). ``runner``: its ``_leaves_writes`` is the
    :class:`cluster.writes.WriteTarget` the chunks go through, its ``_write`` the transaction that
    prepares them; ``runner.last_load`` gets the load's :class:`LoadStats` at commit."""

    def __init__(self, runner, table: TableDef):
        super().__init__(runner, table)
        self.load_id = uuid.uuid4().hex
        self._target = runner._leaves_writes
        leaves = runner.num_leaves
        self.stats = LoadStats(compression=self._target.load_compression())
        self._held: list[dict[Optional[int], list[pa.RecordBatch]]] = [{} for _ in range(leaves)]
        self._held_rows: list[dict[Optional[int], int]] = [{} for _ in range(leaves)]
        self._flushes: list[dict[Optional[int], int]] = [{} for _ in range(leaves)]  # chunks sent per partition
        self._next_seq = [0] * leaves           # the number the next chunk to each leaf gets
        self._sent_rows = [0] * leaves          # rows each leaf holds for this load (staged, or on their way)
        self._unacked: list[deque] = [deque() for _ in range(leaves)]

    # -- adding -------------------------------------------------------------------------------------
    def add(self, data: "pa.Table | pa.RecordBatch") -> None:
        placed = self._target.place(self.table, data if isinstance(data, pa.Table) else [data])
        for leaf, pieces in placed.items():
            held, held_rows = self._held[leaf], self._held_rows[leaf]
            for partition, batches in pieces.items():
                held.setdefault(partition, []).extend(batches)
                held_rows[partition] = held_rows.get(partition, 0) + sum(b.num_rows for b in batches)
                while held_rows.get(partition, 0) >= LOAD_CHUNK_ROWS:
                    self._send(leaf, partition, LOAD_CHUNK_ROWS, final=False)
        self.rows += data.num_rows

    def _send(self, leaf: int, partition: Optional[int], rows: int, final: bool) -> None:
        """Send the first ``rows`` rows waiting for ``partition`` on ``leaf`` as one chunk (the piece
        that crosses the boundary sliced: its rest waits, first in line)."""
        pieces, taken, waiting = [], 0, self._held[leaf][partition]
        while taken < rows:
            piece = waiting.pop(0)
            if taken + piece.num_rows > rows:
                cut = rows - taken
                waiting.insert(0, piece.slice(cut))
                piece = piece.slice(0, cut)
            pieces.append(piece)
            taken += piece.num_rows
        left = self._held_rows[leaf][partition] - taken
        if left:
            self._held_rows[leaf][partition] = left
        else:
            del self._held[leaf][partition], self._held_rows[leaf][partition]
        seq = self._next_seq[leaf]
        self._next_seq[leaf] += 1
        self._flushes[leaf][partition] = self._flushes[leaf].get(partition, 0) + 1
        unacked = self._unacked[leaf]
        self._reap(leaf)
        sent = self._target.stage_chunk(leaf, self.load_id, self.table, seq, partition, pieces, len(unacked), final)
        self._sent_rows[leaf] += sent.rows
        stats = self.stats
        stats.chunks += 1
        stats.chunks_compressed += sent.compressed
        stats.bytes_raw += sent.bytes_raw
        stats.bytes_sent += sent.bytes_sent
        if sent.handle is not None:
            unacked.append(sent.handle)
        while len(unacked) >= LOAD_MAX_OUTSTANDING:
            stats.waits += 1
            self.get(unacked.popleft(), "sending")

    def _reap(self, leaf: int) -> None:
        """Forget the chunks to ``leaf`` that it has acknowledged (raising a leaf's error)."""
        unacked = self._unacked[leaf]
        for _ in range(self._target.acknowledged(list(unacked))):
            self.get(unacked.popleft(), "sending")

    def _settle(self, leaf: int) -> None:
        """Wait until every chunk on its way to ``leaf`` is staged (raising a failed one's error)."""
        unacked = self._unacked[leaf]
        while unacked:
            self.get(unacked.popleft(), "sending")

    def get(self, handles, doing: str):
        """The results of the load's calls (one handle, or a list); a leaf that failed or died fails the
        load, named (the transaction's prepare resolves its handles here too)."""
        return self._target.load_results(handles, doing, self.table)

    # -- savepoints ---------------------------------------------------------------------------------
    def savepoint(self) -> tuple:
        held = [{p: (len(pieces), self._held_rows[leaf][p]) for p, pieces in by_partition.items()}
                for leaf, by_partition in enumerate(self._held)]
        return (self.rows, list(self._next_seq), list(self._sent_rows), held,
                [dict(flushes) for flushes in self._flushes])

    def rollback_to(self, savepoint: tuple) -> None:
        """Back to ``savepoint``. A partition with chunks sent since: the pieces that waited here then
        went first in them (fewer than LOAD_CHUNK_ROWS rows waited: all in its first chunk since), so its
        leaf keeps that many rows of them and drops the rest, and what waits here now goes. Any other
        partition's waiting pieces are cut back here."""
        self.rows, marks, sent_rows, held, flushes = savepoint
        for leaf, mark in enumerate(marks):
            keep: dict[Optional[int], int] = {}
            now_held, now_rows, now_flushes = self._held[leaf], self._held_rows[leaf], self._flushes[leaf]
            for partition in set(now_held) | set(now_flushes) | set(held[leaf]):
                count, rows = held[leaf].get(partition, (0, 0))
                if now_flushes.get(partition, 0) > flushes[leaf].get(partition, 0):
                    keep[partition] = rows
                    now_held.pop(partition, None)
                    now_rows.pop(partition, None)
                elif count:
                    now_held[partition] = now_held[partition][:count]
                    now_rows[partition] = rows
                elif partition in now_held:
                    del now_held[partition], now_rows[partition]
            self._flushes[leaf] = dict(flushes[leaf])
            if self._next_seq[leaf] > mark:
                self._settle(leaf)          # the leaf drops chunks from ``mark`` on: every one must be there
                handle = self._target.rollback_staged(leaf, self.load_id, mark, keep)
                if handle is not None:
                    self._unacked[leaf].append(handle)
            self._sent_rows[leaf] = sent_rows[leaf] + sum(keep.values())
        # chunks sent since were emptied or dropped on their leaves; their numbers stay used (they only
        # order a leaf's chunks)

    def add_related(self, table: TableDef, data: pa.Table) -> None:
        self._related.append((table, self._target.place(table, data), False))

    # -- the end ------------------------------------------------------------------------------------
    def staged_rows(self) -> dict[int, int]:
        """{leaf: rows it must hold} for every leaf that was sent chunks."""
        return {leaf: rows for leaf, rows in enumerate(self._sent_rows) if self._next_seq[leaf]}

    def commit(self, on_commit=None) -> int:
        try:
            for leaf, rows in enumerate(self._held_rows):
                for partition in list(rows):
                    self._send(leaf, partition, rows[partition], final=True)
            for leaf in range(len(self._unacked)):
                self._settle(leaf)
        except BaseException:
            self.abort()
            raise
        related, self._related = self._related, []
        self.runner._write(related, on_commit=on_commit, staged=self)
        self.stats.rows = self.rows
        self.runner.last_load = self.stats
        return self.rows

    def abort(self) -> None:
        """Drop what the leaves hold of the load (a chunk on its way lands before the drop) and what
        waits here."""
        for leaf, unacked in enumerate(self._unacked):
            self._target.cancel_staging(list(unacked))
            unacked.clear()
            if self._next_seq[leaf]:
                self._target.drop_staged(leaf, self.load_id)
        self._held = [{} for _ in self._held]
        self._held_rows = [{} for _ in self._held_rows]
        self._related = []
        self.rows = 0
