"""Statements commit atomically across partitions: a two-phase commit with the aggregator's commit log
as the commit point.

1. *Prepare* (per partition touched): an INSERT's rows go to the partition's WAL as one record tagged
   with the statement's commit sequence number (csn); a large insert or a TRUNCATE rewrite writes new
   segment files plus a ``delta-<csn>.json`` naming them; a DELETE (and the delete half of an UPDATE)
   writes new delete files (segment deletion bitmaps) plus a ``delta-<csn>-d.json``, and for deleted
   write-buffer rows a new WAL. Nothing is visible yet.
2. *Sync*: the WAL records are fsynced (group commit: one fsync covers every statement that appended
   before it).
3. *Commit*: the csn is appended to ``commit.log`` and fsynced — the statement is durable from here,
   and only from here; recovery keeps exactly the csns found in the commit log. The record names the
   partitions that hold a WAL record of the statement (``leaf-N/table-ID/part-P``), so recovery can
   tell a committed record that went missing from one that was never written (:mod:`.verify`).
4. *Apply*: each partition makes the rows visible (buffer append, or the delta installed into the
   partition's manifest).

Concurrency: INSERTs hold the commit lock shared, so concurrent statements prepare, sync and commit
together; deletes, rewrites, flushes and merges hold it exclusively (they swap a partition's WAL or segments,
which must not happen under a statement that is between prepare and apply). The lock is granted first
come, first served, so neither kind starves the other.

Who runs the steps: for every statement of either runner, the leaves' :mod:`cluster.leaf_writes` prepares
(1, 2) and applies (4) and the aggregator's :mod:`cluster.writes` writes the commit record (3): one
write path, whatever the runner. This module holds the commit log and the locks they use, and
``Committer.commit_alone``, the same four steps in one call for one store's own ``append`` /
``replace`` (storage tests and tools). Its former ``Transaction`` (several stores, deletes,
re-inserts, in-memory stores) was a second copy of the leaves' protocol that no runner used: removed.
"""
from __future__ import annotations

import json
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Optional

from engine.errors import CanopyInternalError, StorageCorruptionError
from engine.fair_locks import FairLocks
from engine.storage.columnstore.files import SyncedAppendFile, write_atomic
from engine.storage.columnstore.wal import LogScan, encode_record, scan_log

COMMIT_MAGIC = b"CCM2"
FLOOR_MAGIC = b"CFL2"       # the csn below which no new statement may be numbered (after compaction)
_OLD_COMMIT_MAGIC, _OLD_FLOOR_MAGIC = b"CCMT", b"CFLR"      # read: their CRC32 covers the payload only
_MAGICS = (COMMIT_MAGIC, FLOOR_MAGIC, _OLD_COMMIT_MAGIC, _OLD_FLOOR_MAGIC)


class SharedExclusiveLock:
    """Many shared holders or one exclusive holder, granted first come, first served
    (:class:`engine.fair_locks.FairLocks`): a waiting exclusive request blocks later shared ones (so a
    flush or an UPDATE is not starved by a stream of inserts), and a shared request waits only for the
    exclusive ones ahead of it (so an INSERT waits for at most the statements queued before it, not
    for every UPDATE that keeps arriving). Not reentrant; every acquisition is its own owner, so a
    hold may end on another thread than the one that took it (a Ray leaf's prepare and apply)."""

    _MODES = {"shared": {"exclusive"}, "exclusive": {"shared", "exclusive"}}

    def __init__(self) -> None:
        self._locks = FairLocks(self._MODES, {"shared": 0, "exclusive": 1})

    @contextmanager
    def shared(self):
        with self._holding("shared"):
            yield

    @contextmanager
    def exclusive(self):
        with self._holding("exclusive"):
            yield

    @contextmanager
    def _holding(self, mode: str):
        token = object()
        self._locks.acquire(None, token, mode)
        try:
            yield
        finally:
            self._locks.release(None, token)


def encode_participants(participants) -> bytes:
    return json.dumps(sorted(set(participants))).encode() if participants else b""


def decode_participants(payload: bytes) -> Optional[frozenset]:
    """The partitions a commit record names; None for a record of an older format (names none)."""
    if not payload:
        return None
    names = json.loads(payload)
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ValueError("not a list of partition names")
    return frozenset(names)


class CommitLogContents:
    """A read of ``commit.log``: the committed csns with the partitions each names, and the highest
    csn the log has ever numbered (``high_water``: no partition can have applied a later one)."""

    def __init__(self, scan: LogScan):
        self.scan = scan
        self.committed: dict[int, Optional[frozenset]] = {}
        self.high_water = 0
        for magic, csn, payload in scan.records:
            if magic in (COMMIT_MAGIC, _OLD_COMMIT_MAGIC):
                try:
                    self.committed[csn] = decode_participants(payload)
                except ValueError as error:      # intact under its CRC32, so written so: a bug
                    raise StorageCorruptionError(f"commit log {scan.path}: the record of csn {csn} names "
                                                 f"no partitions ({error})", scan.path) from None
                self.high_water = max(self.high_water, csn)
            else:
                self.high_water = max(self.high_water, csn - 1)

    @classmethod
    def read(cls, path: Path) -> "CommitLogContents":
        return cls(scan_log(path, _MAGICS))

    def check(self) -> None:
        """Raise :class:`StorageCorruptionError` on damage other than a torn tail."""
        if self.scan.damage is not None:
            offset, what = self.scan.damage
            raise StorageCorruptionError(f"commit log {self.scan.path} is corrupt at byte {offset}: {what}",
                                         self.scan.path, offset)


class CommitLog:
    """``commit.log``: one checksummed record per committed statement. A torn tail is dropped on open;
    any other damage refuses the open, the file untouched."""

    def __init__(self, path: Path):
        self.path = path
        contents = CommitLogContents.read(path)
        contents.check()
        self.committed = set(contents.committed)
        self._participants = dict(contents.committed)     # of the records read at open (compact keeps them)
        self._next = max([csn + 1 for _, csn, _ in contents.scan.records], default=1)
        self.high_committed = contents.high_water      # the newest csn committed (WAL records note it)
        self._lock = threading.Lock()
        self._file = SyncedAppendFile(path, truncate_to=contents.scan.valid if contents.scan.torn else None)

    def observe(self, csn: int) -> None:
        """A csn found in a partition's files: new statements are numbered above it, so a record of a
        statement that never committed can never be mistaken for a later one's."""
        with self._lock:
            self._next = max(self._next, csn + 1)

    def next_csn(self) -> int:
        with self._lock:
            csn = self._next
            self._next += 1
            return csn

    def commit(self, csn: int, participants=()) -> None:
        """Make ``csn`` committed; ``participants``: the partitions (``leaf-N/table-ID/part-P``) that
        hold a WAL record of it."""
        self._file.sync_to(self._file.append(encode_record(COMMIT_MAGIC, csn, encode_participants(participants))))
        with self._lock:
            self.high_committed = max(self.high_committed, csn)

    def compact(self, keep: set[int]) -> None:
        """Rewrite the log with only the committed csns some partition's WAL still holds (the rest are
        in segments), under a floor record so numbering continues upward. Called at open only."""
        with self._lock:
            data = encode_record(FLOOR_MAGIC, self._next) + b"".join(
                encode_record(COMMIT_MAGIC, csn, encode_participants(self._participants.get(csn)))
                for csn in sorted(keep & self.committed))
            self._file.close()
            write_atomic(self.path, data)
            self.committed &= keep
            self._participants = {csn: p for csn, p in self._participants.items() if csn in self.committed}
            self._file = SyncedAppendFile(self.path)

    def close(self) -> None:
        self._file.close()


class Committer:
    """What the statements of one process's partition stores share: the commit log (None: in-memory
    stores, or a Ray leaf's columnstores, whose commit log is the driver's), the commit lock, the lock
    that publishes a statement to readers, and the flushes and merges after a statement."""

    def __init__(self, log: Optional[CommitLog] = None, background_merges: bool = False,
                 background_flushes: bool = False):
        """``background_merges``: partitions due for a merge go to a :class:`BackgroundMerger` thread;
        ``background_flushes`` (with it): so do flushes, and a statement only hands its partitions over
        (a Ray leaf, whose statements are actor calls the driver waits for)."""
        self.log = log
        self.lock = SharedExclusiveLock()
        # Held while a statement makes its rows visible in the partitions it touched (apply), and while
        # a query pins the snapshots it will read: a query sees a statement everywhere or nowhere.
        self.published = threading.Lock()
        self.merger = None
        if background_merges:
            from engine.storage.columnstore.merger import BackgroundMerger
            self.merger = BackgroundMerger(self.lock, flushes=background_flushes)

    def commit_alone(self, store, prepare: Callable[[int], object], exclusive: bool = False,
                     maintain: bool = True):
        """One durable partition's statement on its own, in this process: ``prepare(csn)`` (the store's
        ``prepare_append`` / ``prepare_replace`` / ``prepare_delete``), synced, the commit record,
        applied under ``published``; then, with ``maintain``, its flushes and merges. ``exclusive``: the
        statement replaces or deletes rows. Returns the applied part.

        A store's own ``append`` / ``replace`` (the storage tests and tools) and nothing else: every
        statement of a runner is the same steps spread over the leaves (:mod:`cluster.leaf_writes`
        prepares and applies, :mod:`cluster.writes` writes the commit record), whatever the runner."""
        if self.log is None:
            raise CanopyInternalError("a columnstore whose statements come from its leaf (cluster.leaf_writes) "
                                      "cannot commit on its own")
        hold = self.lock.exclusive if exclusive else self.lock.shared
        with hold():
            csn = self.log.next_csn()
            part = prepare(csn)
            try:
                part.sync()
                self.log.commit(csn, [store.participant] if part.wal_record else [])
            except BaseException:
                part.abort()
                raise
            with self.published:
                part.apply()
        if maintain:
            self.maintain([store])
        return part

    def maintain(self, stores) -> None:
        """Flush write buffers past their threshold — synchronously, by the statement that crossed
        it, under the exclusive lock (a flush swaps the WAL); then partitions due for a merge go to
        the background merger, or are merged here under the same lock without one. With background
        flushes the merger's thread does both: the statement returns at once."""
        stores = [s for s in stores if hasattr(s, "needs_merge")]
        if self.merger is not None and self.merger.flushes:
            due = [s for s in stores if s.needs_flush() or s.needs_merge()]
            if due:
                self.merger.submit(due)
            return
        flush = [s for s in stores if s.needs_flush()]
        merge = [] if self.merger is not None else [s for s in stores if s.needs_merge()]
        if flush or merge:
            with self.lock.exclusive():
                for store in flush:
                    store.flush()
                if self.merger is None:
                    for store in stores:
                        store.merge()
        if self.merger is not None:
            due = [s for s in stores if s.needs_merge()]
            if due:
                self.merger.submit(due)

    def close(self) -> None:
        """Stop the background merger (before the stores close)."""
        if self.merger is not None:
            self.merger.close()
