"""One leaf's half of every write, the same code in both runners: the embedded runner calls it in
process, a Ray :class:`cluster.actors.LeafActor` in its own process. The aggregator drives it through
:mod:`cluster.writes` (one protocol for both):

``stage``     a streaming load's rows, chunk by chunk as the aggregator reads them, per partition;
              nothing visible (``rollback_staged`` / ``drop_staged`` for a savepoint or an abort)
``prepare``   rows of any number of tables (appends, or a TRUNCATE-like replace; the load's staged rows
              first) and ``prepare_delete``, a DELETE's or UPDATE's delete bitmaps evaluated here: made
              durable (WAL records, or segments plus a delta, synced) and checked; nothing visible
``commit``    after the aggregator's commit record (the commit point, :mod:`engine.storage.columnstore.commit`):
              made visible, as snapshot epoch ``E`` where the leaf keeps versions (:mod:`cluster.versions`)
``abort``     dropped, on every leaf, when any prepare failed

A transaction holds the leaf's commit lock from its first prepare to its commit or abort (``hold``), so
its flushes and merges never swap a WAL or a segment under a prepared statement; where the leaves share
one lock (embedded) the aggregator holds it around the whole transaction instead.
"""
from __future__ import annotations

import collections
import contextlib
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import pyarrow as pa

from engine.errors import CanopyInternalError, ExecutionError

STAGED_IDLE_S = 3600.0      # a load whose chunks stopped arriving this long ago is dropped (its driver died)
# An in-memory prepare writing this many rows prepares its partitions on threads (the encoding kernels
# release the GIL).
THREADED_WRITE_ROWS = 1 << 17

# (table id, [(partition (None: a reference table's copy), [batches])], replace)
Writes = Sequence[tuple[int, Sequence[tuple[Optional[int], list]], bool]]


@dataclass
class _Transaction:
    """A transaction prepared on this leaf, waiting for the aggregator's commit or abort. ``deletes``
    are applied before ``writes`` (a delete installs a partition's new write buffer and WAL, which an
    UPDATE's re-inserted rows, prepared after it, go into); ``release`` ends the hold on the commit lock."""
    csn: Optional[int]
    deletes: list = field(default_factory=list)
    writes: list = field(default_factory=list)
    release: Optional[Callable[[], None]] = None

    def parts(self) -> list:
        return self.deletes + self.writes


@dataclass
class StagedLoad:
    """The chunks a streaming load has sent this leaf so far, by the aggregator's chunk number: each
    chunk is [(partition, batch)]. They wait here until the load's commit prepares them or its abort
    drops them."""
    table_id: int
    chunks: "collections.OrderedDict[int, list[tuple[Optional[int], pa.RecordBatch]]]" = \
        field(default_factory=collections.OrderedDict)
    rows: int = 0
    nbytes: int = 0
    touched_at: float = field(default_factory=time.monotonic)

    def add(self, seq: int, pieces: list) -> None:
        self.chunks[seq] = pieces
        self.rows += sum(batch.num_rows for _, batch in pieces)
        self.nbytes += sum(batch.nbytes for _, batch in pieces)
        self.touched_at = time.monotonic()

    def rollback(self, mark: int, keep: dict) -> None:
        """Drop what the load added after its savepoint: chunks numbered from ``mark`` on held the
        pieces that waited on the aggregator at the savepoint first, ``keep[partition]`` rows of each;
        those stay, the rest goes."""
        left = dict(keep)
        for seq in [seq for seq in self.chunks if seq >= mark]:
            kept = []
            for key, batch in self.chunks.pop(seq):
                rows = min(left.get(key, 0), batch.num_rows)
                if rows:
                    kept.append((key, batch.slice(0, rows)))
                    left[key] -= rows
            if kept:
                self.chunks[seq] = kept
        self.rows = sum(b.num_rows for pieces in self.chunks.values() for _, b in pieces)
        self.nbytes = sum(b.nbytes for pieces in self.chunks.values() for _, b in pieces)
        self.touched_at = time.monotonic()

    def pieces(self) -> list[tuple[Optional[int], list]]:
        """[(partition, its batches in the order they were loaded)]."""
        by_key: dict[Optional[int], list] = {}
        for seq in sorted(self.chunks):
            for key, batch in self.chunks[seq]:
                by_key.setdefault(key, []).append(batch)
        return list(by_key.items())


class LeafWrites:
    """The writes of one leaf (``leaf.storage``'s stores, looked up at each call: a Ray leaf reopens them).

    ``durable``: the stores are columnstores (prepares take the statement's csn and sync), else in
    memory. ``hold()``: takes the leaf's commit lock for one transaction and returns its release (None:
    the aggregator holds it). ``versions``: the leaf's :class:`cluster.versions.VersionHistory` (a commit
    records the snapshot epoch it makes), or None: readers pin snapshots under the aggregator's lock.
    ``committed()``: the csns of the commit log, to settle transactions a dead aggregator left prepared
    (one aggregator writes to a Ray leaf at a time); None where transactions run side by side.
    ``maintain``: a commit hands its stores to the committer's flushes and merges. ``store``: the store
    of (table id, partition), with the caller's error for a missing one."""

    def __init__(self, leaf, durable: bool = False, hold: Optional[Callable[[], Callable[[], None]]] = None,
                 versions=None, committed: Optional[Callable[[], set]] = None, maintain: bool = False,
                 store: Optional[Callable] = None):
        self.leaf = leaf
        self.durable = durable
        self.versions = versions
        self._hold = hold
        self._committed = committed
        self._maintain = maintain
        self._store = store or (lambda table_id, key: self.leaf.storage.store(table_id, key))
        self._pending: dict[str, _Transaction] = {}     # prepared, not yet committed or aborted
        self._staged: dict[str, StagedLoad] = {}        # streaming loads' chunks, by load (its txn)
        self._lock = threading.Lock()                   # the two dicts (embedded: concurrent statements)

    # -- staged loads -------------------------------------------------------------------------------
    def stage(self, load: str, table_id: int, seq: int, pieces: list) -> int:
        """Keep chunk ``seq`` of the streaming load ``load`` (its transaction id): ``pieces`` are
        [(partition, batch)]. Loads idle past STAGED_IDLE_S (their aggregator died: nothing else ever
        drops them) are dropped here. Returns the rows staged."""
        now = time.monotonic()
        with self._lock:
            for stale in [name for name, staged in self._staged.items() if now - staged.touched_at > STAGED_IDLE_S]:
                del self._staged[stale]
            staged = self._staged.get(load)
            if staged is None:
                staged = self._staged[load] = StagedLoad(table_id)
            staged.add(seq, pieces)
            return staged.rows

    def rollback_staged(self, load: str, mark: int, keep: dict) -> None:
        """The load rolled back to a savepoint (see ``StagedLoad.rollback``)."""
        staged = self._staged.get(load)
        if staged is not None:
            staged.rollback(mark, keep)

    def drop_staged(self, load: str) -> None:
        """The load was aborted: its chunks go."""
        with self._lock:
            self._staged.pop(load, None)

    def staged_info(self) -> dict:
        """{load: {"rows", "bytes", "chunks"}} of the loads staged here (tests, diagnostics)."""
        return {name: {"rows": s.rows, "bytes": s.nbytes, "chunks": len(s.chunks)}
                for name, s in self._staged.items()}

    # -- prepare ------------------------------------------------------------------------------------
    def prepare(self, txn: str, writes: Writes, csn: Optional[int] = None,
                staged_rows: Optional[int] = None) -> list[str]:
        """Hold ``writes`` until ``commit``; called again with the same ``txn`` they join the same
        transaction. ``staged_rows``: the transaction is a streaming load whose chunks this leaf holds
        (staged under ``txn``): they are prepared first, and must be that many rows (a Ray leaf
        restarted during the load has lost them). Durable stores (``csn`` given) also write and sync
        them: WAL records or segments plus a delta, all ignored by recovery unless the commit log gets
        ``csn``. A failure aborts the whole transaction here. Returns the partitions given a WAL record
        (``leaf-N/table-ID/part-P``), which the commit record names."""
        pending = self._begin(txn, csn)
        added = len(pending.writes)
        try:
            if staged_rows is not None:
                with self._lock:
                    load = self._staged.pop(txn, None)
                held = load.rows if load is not None else 0
                if held != staged_rows:
                    raise ExecutionError(
                        f"leaf {self.leaf.leaf_id} holds {held} of the {staged_rows} rows the load sent it "
                        f"(it was restarted during the load, or the load sat idle past {STAGED_IDLE_S:.0f} s); "
                        f"nothing of the load is visible: run it again")
                if load is not None:
                    writes = [(load.table_id, load.pieces(), False), *writes]
            items = [(self._store(table_id, key), batches, replace)
                     for table_id, pieces, replace in writes for key, batches in pieces]
            if self.durable:
                for store, batches, replace in items:
                    pending.writes.append(store.prepare_replace(csn, batches) if replace
                                          else store.prepare_append(csn, batches))
                for p in pending.writes[added:]:
                    p.sync()
            else:
                prepare = lambda item: item[0].prepare_write(item[1], item[2])   # noqa: E731
                if sum(b.num_rows for _, batches, _ in items for b in batches) >= THREADED_WRITE_ROWS:
                    parts, error = _on_threads(prepare, items)
                    pending.writes.extend(p for p in parts if p is not None)
                    if error is not None:
                        raise error
                else:
                    for item in items:
                        pending.writes.append(prepare(item))
        except BaseException:
            self.abort(txn)
            raise
        return [p.store.participant for p in pending.writes[added:] if getattr(p, "wal_record", False)]

    def prepare_delete(self, txn: str, table_id: int, keys: Sequence[Optional[int]], matcher,
                       collect: bool, csn: Optional[int] = None) -> tuple[int, list, list[str]]:
        """Mark the rows ``matcher`` (engine.sql.dml.RowMatcher) selects in this leaf's partitions
        ``keys`` of the table, on threads (one per partition), evaluated under the commit lock, so on
        exactly the rows committed before: durable stores write their delete bitmaps and sync them,
        memory stores hold their new deletion bitmaps until commit. Returns (rows matched, the matched
        rows themselves when ``collect``: an UPDATE's aggregator computes their new versions, the
        partitions given a WAL record). A failure aborts the whole transaction here."""
        pending = self._begin(txn, csn)
        try:
            stores = [self._store(table_id, key) for key in keys]
            if self.durable:
                parts, error = _on_threads(lambda store: store.prepare_delete(csn, matcher, collect), stores)
            else:
                parts, error = _on_threads(lambda store: store.delete_rows(matcher, collect), stores)
            pending.deletes.extend(p for p in parts if p is not None)
            if error is not None:
                raise error
        except BaseException:
            self.abort(txn)
            raise
        rows = [b for p in parts for b in p.deleted_rows] if collect else []
        return (sum(p.deleted for p in parts), rows,
                [p.store.participant for p in parts if getattr(p, "wal_record", False)])

    def _begin(self, txn: str, csn: Optional[int]) -> _Transaction:
        pending = self._pending.get(txn)
        if pending is not None:
            return pending
        if self.durable and csn is None:
            raise CanopyInternalError("a write to durable partitions without a commit sequence number")
        if self._committed is not None:
            self.resolve_stale()
        release = self._hold() if self._hold is not None else None
        with self._lock:
            pending = self._pending[txn] = _Transaction(csn, release=release)
        return pending

    def resolve_stale(self) -> None:
        """Transactions still prepared here when another one starts (one aggregator writes to a Ray leaf
        at a time, and it waits for every commit): their aggregator died between prepare and commit, or a
        test prepared by hand. Each is committed if its commit record is in the log, aborted otherwise;
        either way the commit lock it holds is released."""
        if not self._pending or self._committed is None:
            return
        committed = self._committed()
        for txn, pending in list(self._pending.items()):
            if pending.csn in committed:
                self.commit(txn)
            else:
                self.abort(txn)

    # -- commit / abort ----------------------------------------------------------------------------
    def commit(self, txn: str, epoch: Optional[int] = None, floor: Optional[int] = None) -> list:
        """Make a prepared transaction visible (the aggregator has made it durable); with versions, as
        the version ``epoch`` of the stores it changes (queries of older epochs still read the versions
        before it; ``floor``: the oldest epoch the aggregator's queries may still read). Deletes first,
        on threads (each installs a partition's manifest), then the writes; then the commit lock is
        released and, with ``maintain``, the partitions go to the committer's flushes and merges (they
        cannot run before: the transaction holds the lock until here). Returns the stores changed."""
        with self._lock:
            pending = self._pending.pop(txn, None)
        if pending is None:
            raise ExecutionError(f"leaf {self.leaf.leaf_id} holds no prepared write {txn} "
                                 f"(it was restarted after preparing it)")
        stores = [p.store for p in pending.parts()]
        versions = self.versions
        if versions is not None:
            versions.prune(floor)
        try:
            with versions.changing(epoch, self.leaf.storage.keys_of(stores)) if versions is not None \
                    else contextlib.nullcontext():
                _, error = _on_threads(lambda p: p.apply(), pending.deletes)
                if error is not None:
                    raise error
                for p in pending.writes:
                    p.apply()
        finally:
            if pending.release is not None:
                pending.release()
        if self._maintain:
            self.leaf.storage.committer.maintain(stores)
        return stores

    def abort(self, txn: str) -> None:
        """Drop the transaction's prepared parts and, if it is a streaming load, its staged chunks."""
        with self._lock:
            self._staged.pop(txn, None)
            pending = self._pending.pop(txn, None)
        if pending is None:
            return
        try:
            for p in pending.parts():
                p.abort()
        finally:
            if pending.release is not None:
                pending.release()

    def forget_pending(self) -> None:
        """The leaf reopened its partitions from disk: what it had prepared is gone with the old stores."""
        with self._lock:
            self._pending.clear()


def _on_threads(fn: Callable, items: list) -> tuple[list, Optional[BaseException]]:
    """``fn`` over ``items``, on threads when there are several (a DELETE evaluates its predicate and
    fsyncs its files in every partition: the kernels and fsync release the GIL); the results in
    order (None where ``fn`` raised) and the first error, raised by the caller once all finished."""
    if len(items) <= 1:
        try:
            return [fn(item) for item in items], None
        except BaseException as error:    # noqa: BLE001 - returned to the caller, which raises it
            return [None] * len(items), error
    with ThreadPoolExecutor(max_workers=min(len(items), 8), thread_name_prefix="canopy-commit") as pool:
        futures = [pool.submit(fn, item) for item in items]
    results, first = [], None
    for future in futures:
        try:
            results.append(future.result())
        except BaseException as error:    # noqa: BLE001 - returned to the caller, which raises it
            results.append(None)
            first = first or error
    return results, first
