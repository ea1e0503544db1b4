"""The embedded runner's writes: its leaves as the commit protocol (:mod:`cluster.writes`) and the
streaming load (:mod:`cluster.load`) reach them.

:class:`LocalLeaves` calls each leaf's :class:`cluster.leaf_writes.LeafWrites` in this process. The
leaves share one commit lock and one commit log (:class:`engine.storage.columnstore.commit.Committer`):
a transaction holds the lock shared when it only appends to durable stores (concurrent INSERTs prepare,
sync and commit together: one fsync covers them), exclusively otherwise; the commit step applies every
leaf's part under the lock a query takes to pin its snapshots, so a query sees a statement in every
partition or in none.

A load's blocks are routed on the leaf pool as they are read; each chunk of a partition's pieces is
concatenated on the pool too (overlapping the parse, instead of by the store under the write lock at
commit) and staged on its leaf, so the reader drops each block once routed; the commit prepares them.
The commit's last pieces are staged as they are (concatenating them would copy on the commit's
critical path).
"""
from __future__ import annotations

from concurrent.futures import Future, wait
from typing import TYPE_CHECKING, Callable, Optional

import pyarrow as pa

from cluster.exchange import concat
from cluster.leaf_writes import LeafWrites
from cluster.load import ChunkSent
from cluster.writes import WriteTarget
from engine.catalog import TableDef

if TYPE_CHECKING:
    from cluster.local import LocalRunner


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

    # -- a streaming load's chunks --------------------------------------------------------------------
    def load_compression(self) -> str:
        return "never"

    def stage_chunk(self, leaf: int, load: str, table: TableDef, seq: int, partition: Optional[int],
                    pieces: list, outstanding: int, final: bool) -> ChunkSent:
        """A chunk's pieces concatenated on the leaf pool and staged there (the memory store would
        otherwise coalesce appends under 64k rows at commit: for TPC-H lineitem SF1, 3.4 s of one core
        under the write lock); the commit's last pieces staged as they are, here."""
        writes = self.writes[leaf]
        rows, nbytes = sum(p.num_rows for p in pieces), sum(p.nbytes for p in pieces)
        if final:
            writes.stage(load, table.table_id, seq, [(partition, p) for p in pieces])
            return ChunkSent(None, rows, nbytes, nbytes)
        future = self.runner._pool.submit(lambda: writes.stage(load, table.table_id, seq, [(partition, concat(pieces))]))
        return ChunkSent(future, rows, nbytes, nbytes)

    def acknowledged(self, handles: list) -> int:
        done = 0
        while done < len(handles) and handles[done].done():
            done += 1
        return done

    def load_results(self, handles, doing: str, table: TableDef):
        if isinstance(handles, list):
            return [h.result() if isinstance(h, Future) else h for h in handles]
        return handles.result() if isinstance(handles, Future) else handles

    def rollback_staged(self, leaf: int, load: str, mark: int, keep: dict) -> None:
        self.writes[leaf].rollback_staged(load, mark, keep)

    def drop_staged(self, leaf: int, load: str) -> None:
        self.writes[leaf].drop_staged(load)

    def cancel_staging(self, handles: list) -> None:
        for future in handles:
            future.cancel()
        wait(handles)         # a chunk being staged now lands before the drop
