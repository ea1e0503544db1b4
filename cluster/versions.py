"""Snapshot epochs of a Ray leaf: which version of each partition store a query reads.

A Ray statement is applied leaf by leaf, and a query's tasks run on every leaf at their own times, so a
task could see a statement that the task of the same query on the next leaf does not (half an
INSERT ... SELECT, a LOAD DATA or a DELETE). The driver numbers its statements: a write gets epoch
``E = published + 1``, every leaf applies it and records, in its :class:`VersionHistory`, the snapshot
of each store it changed tagged ``E``; once every leaf has applied it the driver publishes ``E``. A
query takes ``epoch = published`` when it starts and sends it with every task; each scan of the task
reads the newest version of its store tagged ``<= epoch`` (:meth:`VersionHistory.view`). So every
stage, on every leaf, reads the same cut of statements.

A snapshot is what the store's ``snapshot()`` returns (immutable: batches in memory; segments and
write-buffer batches of a columnstore, whose files are unlinked only when no snapshot holds them), so a
version stays readable after background flushes and merges: they change the physical layout, not the
rows. Versions are pruned by the driver's *floor*, the oldest epoch a running or future query may read:
a store keeps the newest version at or below the floor and those above it, and none at all once its
only version is its current state (a store without versions is read as it is now).

A leaf that has no history (Ray restarted it, or the driver's query carries no epoch) serves the latest
state: a query that a leaf died under is retried by the driver, and the restarted leaf reads as of now.
"""
from __future__ import annotations

import contextlib
import threading
from typing import Hashable, Mapping, Optional

from engine.errors import CanopyInternalError

BASE = -1       # tag of the version a store had before its first recorded change: read by every older epoch


class VersionHistory:
    """Per store key (``(table id, partition)`` on a leaf): ``[(epoch, snapshot)]``, oldest first.

    Invariant: a store with versions has its current rows in its last one (every change is recorded,
    or its versions are dropped), and its first one is read by every epoch older than the second."""

    def __init__(self) -> None:
        self._versions: dict[Hashable, list[tuple[int, object]]] = {}
        self._floor = BASE
        self.latest = 0             # the newest epoch recorded here (a reconnecting driver starts from it)
        self._changing: set = set()         # keys a statement is being applied to (their base stays)
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def changing(self, epoch: Optional[int], stores: Mapping[Hashable, object]):
        """Around a statement's apply on ``stores`` (key -> store with ``snapshot()``): before it, a
        store without versions keeps its current rows as the version older epochs read; after it (also
        when the apply failed part way: the last version must be the current rows), the stores'
        snapshots are the version of ``epoch``. Without an epoch (an old driver) their versions are
        dropped: every reader sees them as they are now."""
        if epoch is None:
            try:
                yield
            finally:
                self.forget(stores)
            return
        with self._lock:
            for key, store in stores.items():
                if key not in self._versions:
                    self._versions[key] = [(BASE, store.snapshot())]
                elif self._versions[key][-1][0] >= epoch:
                    raise CanopyInternalError(f"epoch {epoch} applied after epoch {self._versions[key][-1][0]} "
                                     f"on store {key}")
            self._changing.update(stores)
        try:
            yield
        finally:
            with self._lock:
                self._changing.difference_update(stores)
                for key, store in stores.items():
                    self._versions[key].append((epoch, store.snapshot()))
                self.latest = max(self.latest, epoch)
                self._prune()

    def prune(self, floor: Optional[int]) -> None:
        """No query will read an epoch older than ``floor`` any more: drop the versions only those read.
        A lower floor than one seen before (a task submitted earlier) changes nothing."""
        if floor is None or floor <= self._floor:
            return
        with self._lock:
            self._floor = max(self._floor, floor)
            self._prune()

    def _prune(self) -> None:
        floor = self._floor
        for key in list(self._versions):
            versions = self._versions[key]
            # the newest version an epoch >= floor may read, and every newer one, stay
            keep = max((i for i, (epoch, _) in enumerate(versions) if epoch <= floor), default=0)
            if keep == len(versions) - 1 and key not in self._changing:
                del self._versions[key]     # only the current rows are left: read the store as it is
            elif keep:
                del versions[:keep]

    def forget(self, keys=None) -> None:
        """Drop the versions of ``keys`` (a dropped table's stores), or of every store (the leaf
        reopened its partitions)."""
        with self._lock:
            if keys is None:
                self._versions.clear()
            for key in keys or ():
                self._versions.pop(key, None)

    def resolve(self, key: Hashable, epoch: Optional[int]):
        """The snapshot of ``key`` an ``epoch`` reads; None: the store as it is now."""
        if epoch is None:
            return None
        with self._lock:
            versions = self._versions.get(key)
            if versions is None:
                return None
            for tag, snapshot in reversed(versions):
                if tag <= epoch:
                    return snapshot
            # older than every version kept: only a query that already failed (its epoch left the floor)
            return versions[0][1]

    def view(self, epoch: Optional[int]) -> "EpochView":
        return EpochView(self, epoch)

    def keys(self) -> list:
        """The stores that have versions."""
        with self._lock:
            return list(self._versions)

    def versions_of(self, key: Hashable) -> list[int]:
        """The epochs kept for ``key`` (tests, diagnostics)."""
        with self._lock:
            return [tag for tag, _ in self._versions.get(key, ())]


class EpochView:
    """What a task's scans consult (``TaskContext.snapshots``): key -> the snapshot its epoch reads,
    resolved when a scan starts; None for a store to read as it is now."""

    __slots__ = ("history", "epoch")

    def __init__(self, history: VersionHistory, epoch: Optional[int]):
        self.history, self.epoch = history, epoch

    def get(self, key: Hashable, default=None):
        snapshot = self.history.resolve(key, self.epoch)
        return default if snapshot is None else snapshot
