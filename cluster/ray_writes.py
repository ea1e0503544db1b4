"""The Ray runner's leaves as the commit protocol (:mod:`cluster.writes`) and the streaming load
(:mod:`cluster.load`) reach them: actor calls to each :class:`cluster.actors.LeafActor`'s
:class:`cluster.leaf_writes.LeafWrites`.

A load's chunk goes to its leaf as a :mod:`cluster.transport` payload (Arrow IPC frames) with
``stage_chunk``. Adaptive LZ4 (MemSQL 6.7's rule, per leaf): a chunk goes compressed when more than
``transport.COMPRESS_AFTER`` chunks to its leaf are still unacknowledged (the link, or the leaf, is the
bottleneck), raw otherwise; the runner's ``compression="always"|"never"`` forces either.
``throttle_bytes_per_s`` (the runner's transport option, a benchmark mode) models each leaf's link: a
chunk occupies it for ``bytes / rate`` and counts as unacknowledged until it is across and the leaf has
answered.

One transaction at a time (the driver's write lock, also kept by DDL: a durable leaf in a transaction
holds its commit lock until the commit). The csn comes from the driver's commit log, which only the driver
writes. The commit step makes the statement the next snapshot epoch (:mod:`cluster.versions`), published
once every leaf has applied it: queries started before read the versions without it on every leaf.
With a data directory the statement is committed before any leaf applies it, so a leaf that fails to
apply (it died after preparing) reopens its partitions from disk instead, which has the commit record.
"""
from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING, Callable, Optional

import pyarrow as pa
import ray
import ray.exceptions as rex

from cluster import transport
from cluster.load import ChunkSent
from cluster.writes import WriteTarget
from engine.catalog import TableDef
from engine.errors import ExecutionError

if TYPE_CHECKING:
    from cluster.ray_runner import RayRunner


@dataclasses.dataclass
class _Sent:
    """A chunk on its way to a leaf: the actor call, and when the (throttled) link is through with it."""
    ref: object
    across: float = 0.0


class RayLeaves(WriteTarget):
    def __init__(self, runner: "RayRunner"):
        self.runner = runner
        self._wire_free_at: dict[int, float] = {}   # throttled: when each leaf's modelled link is idle again

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

    # -- a streaming load's chunks --------------------------------------------------------------------
    def place(self, table: TableDef, data: "pa.Table | list[pa.RecordBatch]") -> dict:
        return self.runner.placement.by_leaf(table, data)

    def load_compression(self) -> str:
        return self.runner.transport_options["compression"]

    def stage_chunk(self, leaf: int, load: str, table: TableDef, seq: int, partition: Optional[int],
                    pieces: list, outstanding: int, final: bool) -> ChunkSent:
        mode = self.runner.transport_options["compression"]
        compress = mode == "always" or mode == "adaptive" and outstanding > transport.COMPRESS_AFTER
        batch = pa.concat_batches(pieces) if len(pieces) > 1 else pieces[0]
        payload, counters = transport.encode_payload([batch], table.arrow_schema, compress)
        ref = self.runner.leaves[leaf].stage_chunk.remote(load, table.table_id, seq, [partition], payload)
        across = 0.0
        throttle = self.runner.transport_options["throttle_bytes_per_s"]
        if throttle:
            across = self._wire_free_at[leaf] = \
                max(self._wire_free_at.get(leaf, 0.0), time.monotonic()) + counters.bytes_sent / throttle
        return ChunkSent(_Sent(ref, across), counters.rows, counters.bytes_raw, counters.bytes_sent,
                         counters.batches_compressed > 0)

    def acknowledged(self, handles: list) -> int:
        if not handles:
            return 0
        ready, _ = ray.wait([h.ref for h in handles], num_returns=len(handles), timeout=0)
        ready = set(ready)
        now = time.monotonic()
        done = 0
        while done < len(handles) and handles[done].ref in ready and handles[done].across <= now:
            done += 1
        return done

    def load_results(self, handles, doing: str, table: TableDef):
        """``ray.get`` of the load's calls (a chunk's waits until its throttled link is through); a leaf
        that died fails the load naming it."""
        runner = self.runner
        try:
            if isinstance(handles, _Sent):
                result = ray.get(handles.ref)
                time.sleep(max(0.0, handles.across - time.monotonic()))
                return result
            return ray.get(handles)
        except rex.RayActorError as error:
            runner._forget()           # cached counts: the leaf may have lost rows
            actor_id = getattr(error, "actor_id", None)
            leaf = runner._leaf_by_actor.get(
                actor_id if isinstance(actor_id, str) else getattr(actor_id, "hex", lambda: "")())
            who = f"leaf {leaf} ({runner.name}-leaf-{leaf})" if leaf is not None else "a leaf"
            raise ExecutionError(f"{who} died while {doing} the load into {table.name}: nothing of the load "
                                 f"is visible; run it again once Ray has restarted the leaf") from None
        except rex.RayError as error:
            raise runner._translate(error) from None

    def rollback_staged(self, leaf: int, load: str, mark: int, keep: dict) -> _Sent:
        return _Sent(self.runner.leaves[leaf].rollback_staged.remote(load, mark, keep))

    def drop_staged(self, leaf: int, load: str) -> None:
        self.runner.leaves[leaf].drop_staged.remote(load)
