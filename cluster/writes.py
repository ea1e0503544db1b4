"""The aggregator's half of every write: one commit protocol, driven the same way for both runners.

A statement (INSERT, a load, TRUNCATE-like replaces, DELETE / UPDATE, a pipeline batch with its file
marks: any number of tables) is one transaction over the leaves' :class:`cluster.leaf_writes.LeafWrites`:

1. *prepare* on every leaf that holds a part: a DELETE's / UPDATE's delete bitmaps first (an UPDATE's
   matched rows come back here, ``rewrite`` makes their new versions, placed like an INSERT's rows),
   then the rows (a streaming load's staged chunks first). Durable leaves sync what they prepared. A leaf
   that cannot take its rows, a predicate that fails or an UPDATE's bad new value aborts the
   transaction on every leaf: every partition stays as it was.
2. *commit record*: with a data directory the aggregator appends the statement's csn to its commit log,
   naming the partitions given a WAL record: the statement's commit point.
3. *commit* on every leaf, which makes it visible; ``on_commit`` runs with it, still inside the
   transaction (a pipeline marks its files there).

:class:`WriteTarget` is how a runner reaches its leaves' halves: the embedded runner calls them in this
process (its leaves share one commit lock, held here around the whole transaction, and a query pins its
snapshots under the lock that the commit step holds); the Ray runner sends actor calls (one transaction at
a time, each leaf holding its own commit lock, every commit a snapshot epoch published once every leaf has
applied it).
"""
from __future__ import annotations

import uuid
from abc import ABC, abstractmethod
from contextlib import AbstractContextManager
from typing import Callable, Optional, Sequence

import pyarrow as pa

from cluster.placement import Placement
from engine.catalog import TableDef

# (table, {leaf: {partition (None: the reference copy): [batches]}} as Placement.by_leaf makes it, replace)
Write = tuple[TableDef, dict, bool]


class WriteTarget(ABC):
    """A runner's leaves as the commit protocol reaches them. A call's result may be a handle
    (an object ref) that ``results`` resolves."""
    num_leaves: int
    placement: Placement

    @abstractmethod
    def transaction(self, exclusive: bool) -> AbstractContextManager:
        """Held around one transaction. ``exclusive``: it deletes or replaces rows (an append-only one
        may share the commit lock with others where the runner allows)."""

    @abstractmethod
    def next_csn(self) -> Optional[int]:
        """The statement's commit sequence number from the commit log; None without a data directory."""

    @abstractmethod
    def call(self, leaf: int, method: str, *args):
        """``LeafWrites.<method>(*args)`` on ``leaf``; its result or a handle to it."""

    @abstractmethod
    def results(self, handles: list, doing: str) -> list:
        """The results of ``call``s (a leaf's error raised as the engine's)."""

    @abstractmethod
    def abort(self, txn: str, leaves) -> None:
        """``abort`` on ``leaves``, without waiting where the runner can."""

    @abstractmethod
    def log_commit(self, csn: int, participants: list[str]) -> None:
        """Append the commit record: the statement is durable from here."""

    @abstractmethod
    def apply(self, txn: str, csn: Optional[int], leaves: list[int], on_commit: Optional[Callable[[], None]]) -> list:
        """``commit`` of ``txn`` on ``leaves`` as one visible step, then ``on_commit``; the stores it
        changed where known."""

    def finish(self, stores: list) -> None:
        """After the transaction (its hold released): what follows a commit, e.g. due flushes."""

    # -- a streaming load's chunks (cluster.load.StreamingLoad, the one driver of both runners) -----
    @abstractmethod
    def place(self, table: TableDef, data: "pa.Table | list[pa.RecordBatch]") -> dict:
        """``{leaf: {partition (None: the reference copy): [batches]}}`` of ``data``'s rows."""

    @abstractmethod
    def load_compression(self) -> str:
        """How chunks travel to the leaves: "never" (in process), "adaptive" or "always" (LZ4)."""

    @abstractmethod
    def stage_chunk(self, leaf: int, load: str, table: TableDef, seq: int, partition: Optional[int],
                    pieces: list, outstanding: int, final: bool):
        """Stage chunk ``seq`` of ``load`` on ``leaf``: ``pieces`` (batches of ``partition``, in order)
        as one batch, ``LeafWrites.stage``; ``outstanding`` chunks to that leaf are unacknowledged;
        ``final``: the commit's last pieces. Returns a :class:`cluster.load.ChunkSent`."""

    @abstractmethod
    def acknowledged(self, handles: list) -> int:
        """How many of ``handles`` (chunks to one leaf, oldest first), from the first, are staged:
        without waiting."""

    @abstractmethod
    def load_results(self, handles, doing: str, table: TableDef):
        """The result of a load's handle, or of a list of them (waiting); a leaf's error, or its death,
        raised as the engine's error naming the load."""

    @abstractmethod
    def rollback_staged(self, leaf: int, load: str, mark: int, keep: dict):
        """``LeafWrites.rollback_staged`` on ``leaf`` (after its chunks below ``mark`` are staged); a
        handle, or None when done."""

    @abstractmethod
    def drop_staged(self, leaf: int, load: str) -> None:
        """``LeafWrites.drop_staged`` on ``leaf``, without waiting where the runner can."""

    def cancel_staging(self, handles: list) -> None:
        """The load is aborted: chunks on their way need not arrive (but one arriving lands before the
        drop that follows)."""


def write(target: WriteTarget, writes: Sequence[Write], on_commit: Optional[Callable[[], None]] = None,
          delete=None, staged: Optional[dict[int, int]] = None, txn: Optional[str] = None,
          get: Optional[Callable] = None) -> int:
    """One transaction over any number of tables. ``writes``: (table, placed rows, replace); ``delete``:
    (table, matcher, rewrite or None) of a DELETE / UPDATE, prepared first; ``staged``: {leaf: rows} of
    a streaming load whose rows the leaves already hold under ``txn`` (the load's id), prepared with the
    writes; ``get``: resolves prepare handles in place of ``target.results`` (a load names itself in a
    dead leaf's error). Returns the rows the delete matched (a reference table's counted once)."""
    txn = txn or uuid.uuid4().hex
    exclusive = delete is not None or any(replace for _, _, replace in writes)
    get = get or (lambda handles, doing: target.results(handles, doing))
    changed: list = []
    with target.transaction(exclusive):
        csn = target.next_csn()
        touched: set[int] = set()           # leaves holding a part of the transaction
        participants: list[str] = []        # partitions given a WAL record (the commit record names them)
        deleted = 0
        try:
            if delete is not None:
                deleted, rewritten = _prepare_delete(target, txn, csn, *delete, touched, participants)
                if rewritten is not None and rewritten.num_rows:
                    writes = [*writes, (delete[0], target.placement.by_leaf(delete[0], rewritten), False)]
                if not deleted and not writes:      # matched no row: no commit record
                    target.abort(txn, touched)
                    return 0
            by_leaf: dict[int, list] = {}
            for table, placed, replace in writes:
                for i, pieces in placed.items():
                    by_leaf.setdefault(i, []).append((table.table_id, list(pieces.items()), replace))
            staged = staged or {}
            for i in staged:
                by_leaf.setdefault(i, [])
            touched.update(by_leaf)
            prepared = get([target.call(i, "prepare", txn, ops, csn, staged.get(i)) for i, ops in by_leaf.items()],
                           "preparing")
            participants.extend(name for names in prepared for name in names or ())
            if csn is not None and touched:
                target.log_commit(csn, participants)      # the commit point
        except BaseException:
            target.abort(txn, touched)
            raise
        changed = target.apply(txn, csn, sorted(touched), on_commit)
    target.finish(changed)
    return deleted


def _prepare_delete(target: WriteTarget, txn: str, csn: Optional[int], table: TableDef, matcher, rewrite,
                    touched: set[int], participants: list[str]) -> tuple[int, Optional[pa.Table]]:
    """Every leaf prepares the delete; (rows matched, their new versions for an UPDATE). A reference
    table's copies are alike: leaf 0's count and rows are the table's."""
    counted = range(1) if table.reference else range(target.num_leaves)
    touched.update(range(target.num_leaves))
    results = target.results([target.call(i, "prepare_delete", txn, table.table_id,
                                          target.placement.keys(table, i), matcher,
                                          rewrite is not None and i in counted, csn)
                              for i in range(target.num_leaves)], "deleting")
    participants.extend(name for result in results for name in result[2])
    deleted = sum(results[i][0] for i in counted)
    if rewrite is None or not deleted:
        return deleted, None
    return deleted, rewrite([b for i in counted for b in results[i][1]])
