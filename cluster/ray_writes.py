"""The Ray runner's leaves as the commit protocol (:mod:`cluster.writes`) reaches them: actor calls to
each :class:`cluster.actors.LeafActor`'s :class:`cluster.leaf_writes.LeafWrites`.

One transaction at a time (the driver's write lock, also kept by DDL: a durable leaf in a transaction
holds its commit lock until the commit). The csn comes from the driver's commit log, which only the driver
writes. The commit step makes the statement the next snapshot epoch (:mod:`cluster.versions`), published
once every leaf has applied it: queries started before read the versions without it on every leaf.
With a data directory the statement is committed before any leaf applies it, so a leaf that fails to
apply (it died after preparing) reopens its partitions from disk instead, which has the commit record.
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Callable, Optional

import ray

from cluster.writes import WriteTarget
from engine.errors import ExecutionError

if TYPE_CHECKING:
    from cluster.ray_runner import RayRunner


class RayLeaves(WriteTarget):
    def __init__(self, runner: "RayRunner"):
        self.runner = runner

    @property
    def num_leaves(self) -> int:
        return self.runner.num_leaves

    @property
    def placement(self):
        return self.runner.placement

    def transaction(self, exclusive: bool):
        return self.runner._write_lock

    def next_csn(self) -> Optional[int]:
        data = self.runner._data
        return data.log.next_csn() if data is not None else None

    def call(self, leaf: int, method: str, *args):
        return getattr(self.runner.leaves[leaf], method).remote(*args)

    def results(self, handles: list, doing: str) -> list:
        return self.runner._get(handles)

    def abort(self, txn: str, leaves) -> None:
        for i in leaves:
            self.runner.leaves[i].abort_write.remote(txn)

    def log_commit(self, csn: int, participants: list[str]) -> None:
        self.runner._data.log.commit(csn, participants)

    def apply(self, txn: str, csn: Optional[int], leaves: list[int], on_commit: Optional[Callable[[], None]]) -> list:
        runner = self.runner
        epoch = runner._published + 1
        try:
            if runner._data is None:
                runner._get([ref for _, ref in self._commit_on_leaves(txn, leaves, epoch)])
            else:
                failed = []
                for i, ref in self._commit_on_leaves(txn, leaves, epoch):
                    try:
                        runner._get(ref)
                    except Exception as error:      # noqa: BLE001 - the statement is committed: recover the leaf
                        failed.append((i, error))
                for i, error in failed:
                    self._reopen_leaf(i, csn, error)
        finally:
            runner._publish(epoch)
        if on_commit is not None:
            on_commit()
        return []           # each leaf hands its stores to its own flushes and merges

    def _commit_on_leaves(self, txn: str, leaves: list[int], epoch: int) -> list[tuple[int, object]]:
        """Send ``commit_write`` of ``txn`` (as snapshot ``epoch``) to ``leaves``; their refs."""
        runner = self.runner
        floor = runner._floor()
        refs = []
        for leaf in leaves:
            refs.append((leaf, runner.leaves[leaf].commit_write.remote(txn, epoch, floor)))
            if len(refs) == 1 and runner.debug_after_first_leaf_commit is not None:
                ray.wait([refs[0][1]])
                runner.debug_after_first_leaf_commit()
        return refs

    def _reopen_leaf(self, leaf: int, csn: int, error: Exception, timeout: float = 60.0) -> None:
        """A committed statement a leaf did not apply (it died, or failed, after preparing): the leaf
        reopens its partitions from disk, which now has the commit record. Waits for Ray to restart it."""
        runner = self.runner
        runner._forget()
        deadline = time.monotonic() + timeout
        while True:
            try:
                runner._get(runner.leaves[leaf].reopen.remote(), timeout=max(1.0, deadline - time.monotonic()))
                return
            except ExecutionError as retry_error:
                if time.monotonic() >= deadline:
                    raise ExecutionError(
                        f"statement {csn} is committed, but leaf {leaf} could not apply it ({error}) nor "
                        f"reopen its partitions ({retry_error}); it will show the statement when it is "
                        f"restarted") from None
                time.sleep(0.2)
