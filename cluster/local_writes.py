"""The embedded runner's writes: its leaves as the commit protocol (:mod:`cluster.writes`) reaches them,
and its streaming load.

:class:`LocalLeaves` calls each leaf's :class:`cluster.leaf_writes.LeafWrites` in this process. The
leaves share one commit lock and one commit log (:class:`engine.storage.columnstore.commit.Committer`):
a transaction holds the lock shared when it only appends to durable stores (concurrent INSERTs prepare,
sync and commit together: one fsync covers them), exclusively otherwise; the commit step applies every
leaf's part under the lock a query takes to pin its snapshots, so a query sees a statement in every
partition or in none.

:class:`LocalLoad` routes a load block by block on the leaf pool as it is read; each partition's pieces
are concatenated (on the pool, overlapping the parse) into batches of _LOAD_BATCH_ROWS rows and staged
on the partition's leaf, so the reader drops each block once routed; the commit prepares them.
"""
from __future__ import annotations

import uuid
from concurrent.futures import Future, wait
from typing import TYPE_CHECKING, Callable, Optional

import pyarrow as pa

from cluster.exchange import concat
from cluster.leaf_writes import LeafWrites
from cluster.writes import WriteTarget, write
from engine.catalog import TableDef
from engine.runner import LoadWriter

if TYPE_CHECKING:
    from cluster.local import LocalRunner

# A load's routed pieces are small (a parsed block of a few thousand rows cut into one piece per
# partition); a partition's pieces are concatenated into batches of this many rows on the leaf pool as
# the load goes, overlapping the parse, instead of by the store under the write lock at commit (the
# memory store coalesces appends under 64k rows: for TPC-H lineitem SF1, 3.4 s of one core there).
_LOAD_BATCH_ROWS = 64 * 1024


class LocalLeaves(WriteTarget):
    def __init__(self, runner: "LocalRunner"):
        self.runner = runner
        self.num_leaves = runner.num_leaves
        self.placement = runner.placement
        self.committer = runner._committer
        # each leaf's half of every write; the leaves share the commit lock, held here (``transaction``)
        self.writes = [LeafWrites(leaf, durable=runner._data is not None) for leaf in runner.leaves]

    def place(self, table: TableDef, data: "pa.Table | list[pa.RecordBatch]") -> dict:
        """``Placement.by_leaf`` of ``data``, its batches routed on the leaf pool (the kernels release
        the GIL; small takes stay in cache)."""
        return self.placement.by_leaf(table, data, self.runner._pool.map)

    def transaction(self, exclusive: bool):
        lock = self.committer.lock
        return lock.exclusive() if exclusive or self.committer.log is None else lock.shared()

    def next_csn(self) -> Optional[int]:
        log = self.committer.log
        return log.next_csn() if log is not None else None

    def call(self, leaf: int, method: str, *args):
        return getattr(self.writes[leaf], method)(*args)

    def results(self, handles: list, doing: str) -> list:
        return handles

    def abort(self, txn: str, leaves) -> None:
        for i in leaves:
            self.writes[i].abort(txn)

    def log_commit(self, csn: int, participants: list[str]) -> None:
        self.committer.log.commit(csn, participants)

    def apply(self, txn: str, csn: Optional[int], leaves: list[int], on_commit: Optional[Callable[[], None]]) -> list:
        with self.committer.published:      # queries pin their snapshots under it (LocalRunner._pin)
            stores = [store for i in leaves for store in self.writes[i].commit(txn)]
            if on_commit is not None:
                on_commit()
        return stores

    def finish(self, stores: list) -> None:
        if self.committer.log is not None:      # flushes due now, merges to the background thread
            self.committer.maintain(stores)


class LocalLoad(LoadWriter):
    """A load routed block by block on the leaf pool as it is read. A partition's pieces wait here until
    they make _LOAD_BATCH_ROWS rows, then are concatenated on the pool and staged on its leaf as one
    chunk (a reference table's on every leaf); the commit stages what is left as it is (concatenating it
    would copy on the commit's critical path) and one transaction prepares every staged row with those
    of ``add_related`` tables, ``on_commit`` inside it; ``abort`` drops the staged chunks."""

    def __init__(self, runner: "LocalRunner", table: TableDef):
        super().__init__(runner, table)
        self.load_id = uuid.uuid4().hex
        self._target: LocalLeaves = runner._leaves_writes
        leaves = runner.num_leaves
        self._pieces: dict[Optional[int], list[pa.RecordBatch]] = {}    # partition -> pieces waiting here
        self._piece_rows: dict[Optional[int], int] = {}
        self._chunks: dict[Optional[int], int] = {}     # partition -> chunks staged of it (savepoints)
        self._next_seq = [0] * leaves           # the number the next chunk to each leaf gets
        self._sent_rows = [0] * leaves          # rows each leaf holds for this load (staged, or on their way)
        self._staging: list[Future] = []

    def _leaves_of(self, partition: Optional[int]) -> range:
        if partition is None:
            return range(self.runner.num_leaves)
        leaf = self.runner.placement.leaf_of(partition)
        return range(leaf, leaf + 1)

    def add(self, data: "pa.Table | pa.RecordBatch") -> None:
        batches = [b for b in (data.to_batches() if isinstance(data, pa.Table) else [data]) if b.num_rows]
        route = self.runner.placement.route
        routed = self.runner._pool.map(lambda batch: route(self.table, batch), batches)
        for partition, piece in (placement for pieces in routed for placement in pieces):
            self._pieces.setdefault(partition, []).append(piece)
            rows = self._piece_rows[partition] = self._piece_rows.get(partition, 0) + piece.num_rows
            if rows >= _LOAD_BATCH_ROWS:
                self._stage(partition, self._pieces.pop(partition), concatenated=True)
                del self._piece_rows[partition]
        self.rows += data.num_rows

    def _stage(self, partition: Optional[int], pieces: list, concatenated: bool) -> None:
        """Stage ``pieces`` of ``partition`` as one chunk on its leaf (every leaf: a reference copy):
        concatenated on the pool, or as they are, here."""
        seqs = []
        for leaf in self._leaves_of(partition):
            seqs.append((leaf, self._next_seq[leaf]))
            self._next_seq[leaf] += 1
            self._sent_rows[leaf] += sum(p.num_rows for p in pieces)
        self._chunks[partition] = self._chunks.get(partition, 0) + 1
        writes, load, table_id = self._target.writes, self.load_id, self.table.table_id

        def stage():
            chunk = [(partition, concat(pieces))] if concatenated else [(partition, p) for p in pieces]
            for leaf, seq in seqs:
                writes[leaf].stage(load, table_id, seq, chunk)

        if concatenated:
            self._staging.append(self.runner._pool.submit(stage))
        else:
            stage()

    def _settle(self) -> None:
        """Wait until every chunk on its way is staged (raising a failed one's error)."""
        staging, self._staging = self._staging, []
        for future in staging:
            future.result()

    def savepoint(self):
        return (self.rows, list(self._next_seq), list(self._sent_rows), dict(self._chunks),
                {p: (len(pieces), self._piece_rows[p]) for p, pieces in self._pieces.items()})

    def rollback_to(self, savepoint) -> None:
        """Back to ``savepoint``: a partition staged since kept, in its first chunk since, the pieces that
        waited here then; its leaf keeps that many rows of it and drops the rest. Any other partition's
        waiting pieces are cut back here."""
        self.rows, marks, sent_rows, chunks, held = savepoint
        self._settle()
        keep: list[dict] = [{} for _ in marks]
        for partition in set(self._pieces) | set(self._chunks) | set(held):
            count, rows = held.get(partition, (0, 0))
            if self._chunks.get(partition, 0) > chunks.get(partition, 0):
                self._pieces.pop(partition, None)
                self._piece_rows.pop(partition, None)
                for leaf in self._leaves_of(partition):
                    keep[leaf][partition] = rows
            elif partition in self._pieces:
                if count:
                    self._pieces[partition] = self._pieces[partition][:count]
                    self._piece_rows[partition] = rows
                else:
                    del self._pieces[partition], self._piece_rows[partition]
        self._chunks = dict(chunks)
        for leaf, mark in enumerate(marks):
            if self._next_seq[leaf] > mark:
                self._target.writes[leaf].rollback_staged(self.load_id, mark, keep[leaf])
            self._sent_rows[leaf] = sent_rows[leaf] + sum(keep[leaf].values())
        # chunks staged since then were emptied or dropped on their leaves; their numbers stay used
        # (the numbers only order a leaf's chunks)

    def add_related(self, table: TableDef, data: pa.Table) -> None:
        self._related.append((table, self._target.place(table, data), False))

    def commit(self, on_commit=None) -> int:
        for partition, pieces in list(self._pieces.items()):
            self._stage(partition, pieces, concatenated=False)
        self._pieces, self._piece_rows = {}, {}
        try:
            self._settle()
        except BaseException:
            self.abort()
            raise
        related, self._related = self._related, []
        staged = {leaf: rows for leaf, rows in enumerate(self._sent_rows) if self._next_seq[leaf]}
        write(self._target, related, on_commit, staged=staged, txn=self.load_id)
        return self.rows

    def abort(self) -> None:
        """Drop what the leaves hold of the load and what waits here."""
        for future in self._staging:
            future.cancel()
        wait(self._staging)         # a chunk being staged now lands before the drop
        self._staging = []
        for leaf, writes in enumerate(self._target.writes):
            if self._next_seq[leaf]:
                writes.drop_staged(self.load_id)
        self._pieces, self._piece_rows, self._chunks = {}, {}, {}
        self._related = []
        self.rows = 0
