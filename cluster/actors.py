"""Ray actor shells around the same :class:`cluster.leaf.Leaf` code the embedded runner uses.

A :class:`LeafActor` owns the partitions of one leaf and a copy of every reference table: in-memory
partition stores inside the actor process, or, given a :class:`DurableLeaf` description, the durable
columnstores of the embedded runner's leaf directory (``data_dir/leaf-N``), reopened from disk whenever
the actor starts — also when Ray restarts it after a crash. It receives encoded StageSpecs and exchange
payloads, runs one task with ``Leaf``, and returns its output already split per destination as transport
payloads. No planning, no SQL, no live operators cross the actor boundary.

Writes: the actor hands the driver's calls to its :class:`cluster.leaf_writes.LeafWrites`, the leaf-side
write component the embedded runner's leaves use too (staged load chunks, prepare, commit, abort),
driven by the driver's :mod:`cluster.writes`. A leaf opening its partitions keeps exactly the statements
whose commit record is in the log, which it reads (never writes) on the shared filesystem. A durable
leaf holds its commit lock exclusively from a transaction's first prepare to its commit or abort, so its
background thread (flushes and merges, off the statements' path) never swaps a WAL or a segment under a
prepared statement.

The :class:`AggregatorActor` is the deployment's registry: its shape (leaves, partitions per leaf) and
the catalog as the last driver left it, so a second driver can reconnect by name. Queries' once-only
stages run in the driver (the driver is the aggregator); the actor only keeps state.

These classes are plain Python; :mod:`cluster.ray_runner` wraps them with ``ray.remote`` so that this
module imports without Ray.
"""
from __future__ import annotations

import collections
import contextlib
import dataclasses
import os
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from cluster import transport
from cluster.exchange import route_payloads
from cluster.leaf import Leaf, LeafStorage
from cluster.leaf_writes import LeafWrites
from cluster.specs import TaskSpec
from cluster.versions import VersionHistory
from engine.errors import CanopyInternalError, ExecutionError
from engine.core.deadline import Deadline
from engine.exec.profile import TaskProfile
from engine.exec.statement_warnings import Warnings
from engine.exec.stages import decode_stage
from engine.storage.columnstore.commit import CommitLogContents, Committer

CANCEL_MEMORY_S = 600.0     # how long a leaf remembers a cancelled query id
STAGE_CACHE = 128           # decoded stages a leaf keeps


@dataclass(frozen=True)
class DurableLeaf:
    """Where a leaf's durable partitions live: paths of the driver's data directory
    (:class:`engine.data_directory.DataDirectory` decides the layout) and the store options."""
    leaf_dir: str
    catalog: str            # catalog.json: which tables exist (and their schemas, sort keys)
    commit_log: str         # commit.log: which statements committed
    options: dict = field(default_factory=dict)


class LeafActor:
    def __init__(self, leaf_id: int, partitions: Sequence[int], restarted: bool = False,
                 debug_task_delay_s: float = 0.0, durable: Optional[DurableLeaf] = None):
        self.durable = durable
        self.leaf = Leaf(leaf_id, partitions)
        self.versions = VersionHistory()            # each store's versions by snapshot epoch (cluster.versions)
        if durable is not None:
            self._open_durable()
        # the leaf's half of every write; a durable leaf holds its own commit lock from a transaction's
        # first prepare to its commit or abort, and settles what a dead driver left prepared
        self.writes = LeafWrites(self.leaf, durable=durable is not None, versions=self.versions,
                                 hold=self._hold_commit_lock if durable is not None else None,
                                 committed=self._committed if durable is not None else None,
                                 maintain=durable is not None, store=self._store)
        self.restarted = restarted
        self.debug_task_delay_s = debug_task_delay_s
        self._cancelled: dict[str, float] = {}     # query id -> when its cancel arrived
        self._stages: "collections.OrderedDict[bytes, object]" = collections.OrderedDict()
        self._lock = threading.Lock()
        # task counters (ping): running now, completed, ended by a cancel or statement_timeout
        self.tasks_running = self.tasks_done = self.tasks_stopped = 0

    def _open_durable(self) -> None:
        """Open (recovering) every table the catalog names: committed statements only, as the commit
        log says now. Runs at every start of the actor, a restart after a crash included."""
        from engine.catalog_store import PersistentCatalog          # the SQL-level catalog, read only here
        from engine.storage.columnstore import StoreOptions

        d = self.durable
        log = CommitLogContents.read(Path(d.commit_log))
        log.check()
        committed = frozenset(log.committed)
        # flushes and merges run on the committer's background thread, not in the statement
        committer = Committer(None, background_merges=True, background_flushes=True)
        storage = LeafStorage(Path(d.leaf_dir), committer, StoreOptions.from_options(dict(d.options)))
        for table in PersistentCatalog(Path(d.catalog)).all_tables():
            keys = [None] if table.reference else self.leaf.partitions
            storage.create(table.table_id, table.arrow_schema, keys, table.sort_key, committed, table.index_names)
        self.leaf.storage = storage
        committer.maintain(storage.all_stores())     # what the last session left due, compacted now

    def _hold_commit_lock(self):
        hold = contextlib.ExitStack()
        hold.enter_context(self.leaf.storage.committer.lock.exclusive())
        return hold.close

    def _committed(self) -> set:
        return set(CommitLogContents.read(Path(self.durable.commit_log)).committed)

    def recovery_state(self) -> dict:
        """What the driver's commit-log compaction needs: every csn found in this leaf's partition files,
        and the committed ones still only in a WAL (their commit records must stay)."""
        stores = self.leaf.storage.all_stores()
        return {"csns_seen": set().union(*(s.csns_seen for s in stores)),
                "wal_csns": set().union(*(s.wal_csns for s in stores))}

    def reopen(self) -> None:
        """Close and reopen every partition from disk (after the driver committed a statement this
        leaf could not apply: a restart between its prepare and commit)."""
        if self.durable is None:
            raise CanopyInternalError("reopen of a leaf without durable storage")
        self.close()
        self.writes.forget_pending()
        self.versions.forget()              # new store objects: queries read them as they are now
        self._open_durable()

    def close(self) -> None:
        """Settle what a driver left prepared, stop the background thread, close the files."""
        if self.durable is not None:
            self.writes.resolve_stale()
            self.leaf.storage.committer.close()
        for store in self.leaf.storage.all_stores():
            if hasattr(store, "close"):
                store.close()

    def maintenance_idle(self, timeout: float = 60.0) -> dict:
        """Wait (at most ``timeout`` s) until the background thread has nothing due; its counters."""
        merger = self.leaf.storage.committer.merger if self.durable is not None else None
        if merger is None:
            return {"idle": True, "merged": 0, "errors": []}
        idle = merger.wait_idle(timeout)
        return {"idle": idle, "merged": merger.merged, "errors": [str(e) for e in merger.errors]}

    # -- control ----------------------------------------------------------------------------------
    def ping(self) -> dict:
        return {"leaf": self.leaf.leaf_id, "pid": os.getpid(), "host": socket.gethostname(),
                "restarted": self.restarted, "tasks_running": self.tasks_running, "tasks_done": self.tasks_done,
                "tasks_stopped": self.tasks_stopped, "epoch": self.versions.latest,
                "versioned_stores": len(self.versions.keys())}

    def cancel(self, query_id: str) -> None:
        """Ask the tasks of ``query_id`` to stop at their next batch (any operator's), and the ones not
        started yet to stop at once. A query's mark is kept a while (its tasks may still be queued
        here), then dropped: a query id is never reused."""
        now = time.monotonic()
        with self._lock:
            self._cancelled[query_id] = now
            for old in [q for q, at in self._cancelled.items() if now - at > CANCEL_MEMORY_S]:
                del self._cancelled[old]

    # -- tables -----------------------------------------------------------------------------------
    def create_table(self, table_id: int, schema: pa.Schema, keys: Sequence[Optional[int]],
                     sort_key: Sequence[str] = (), indexed: Sequence[str] = ()) -> None:
        self.leaf.storage.create(table_id, schema, keys, sort_key, indexed=indexed)

    def drop_table(self, table_id: int) -> None:
        self.versions.forget([key for key in self.versions.keys() if key[0] == table_id])
        if self.durable is None:
            self.leaf.storage.drop(table_id)
            return
        with self.leaf.storage.committer.lock.exclusive():      # not while the background thread flushes it
            self.leaf.storage.drop(table_id)

    # -- writes: the leaf's half of the commit protocol (cluster.leaf_writes), driven by cluster.writes
    def prepare_write(self, txn: str, table_id: int, pieces: Sequence[tuple[Optional[int], list]],
                      replace: bool, csn: Optional[int] = None) -> list[str]:
        """``prepare`` of one table's pieces."""
        return self.writes.prepare(txn, [(table_id, pieces, replace)], csn)

    def prepare(self, txn: str, writes, csn: Optional[int] = None, staged_rows: Optional[int] = None) -> list[str]:
        return self.writes.prepare(txn, writes, csn, staged_rows)

    def prepare_delete(self, txn: str, table_id: int, keys: Sequence[Optional[int]], matcher,
                       collect: bool, csn: Optional[int] = None) -> tuple[int, list, list[str]]:
        return self.writes.prepare_delete(txn, table_id, keys, matcher, collect, csn)

    def commit_write(self, txn: str, epoch: Optional[int] = None, floor: Optional[int] = None) -> None:
        """Ray runs this actor's default-group methods one at a time, so no task runs between the
        versions' bookkeeping and the apply."""
        self.writes.commit(txn, epoch, floor)

    def abort_write(self, txn: str) -> None:
        self.writes.abort(txn)

    def stage_chunk(self, load: str, table_id: int, seq: int, keys: Sequence[Optional[int]], payload) -> int:
        """Stage chunk ``seq`` of the streaming load ``load``: a transport payload whose frames are the
        rows for partitions ``keys``, in order. Returns the rows staged."""
        batches = transport.decode(payload)
        if len(batches) != len(keys):
            raise CanopyInternalError(f"a load chunk of {len(batches)} frames for {len(keys)} partitions")
        return self.writes.stage(load, table_id, seq, list(zip(keys, batches)))

    def rollback_staged(self, load: str, mark: int, keep: dict) -> None:
        self.writes.rollback_staged(load, mark, keep)

    def drop_staged(self, load: str) -> None:
        self.writes.drop_staged(load)

    def staged_info(self) -> dict:
        return self.writes.staged_info()


    def optimize_table(self, table_id: int) -> None:
        """OPTIMIZE TABLE on this leaf: flush write buffers, merge small segments."""
        storage = self.leaf.storage
        # in memory each store's own lock makes its flush and merge atomic
        with storage.committer.lock.exclusive() if self.durable is not None else contextlib.nullcontext():
            for _, store in storage.stores_of(table_id):
                store.flush()
                store.merge(force=True)

    def row_count(self, table_id: int, keys: Sequence[Optional[int]]) -> int:
        return sum(self._store(table_id, key).row_count() for key in keys)

    def distinct_values(self, table_id: int, keys: Sequence[Optional[int]], column: str) -> pa.Array:
        chunks = [b.column(0) for key in keys for b in self._store(table_id, key).scan([column])]
        if not chunks:
            return pa.array([])
        return pc.unique(pa.chunked_array(chunks).combine_chunks()).drop_null()

    def map_column(self, table_id: int, keys: Sequence[Optional[int]], column: str, type_: pa.DataType,
                   fn) -> list[Any]:
        out = []
        for key in keys:
            chunks = [b.column(0) for b in self._store(table_id, key).scan([column])]
            out.append(fn(pa.chunked_array(chunks, type=type_)))
        return out

    def map_store(self, table_id: int, keys: Sequence[Optional[int]], fn) -> list[Any]:
        return [fn(self._store(table_id, key)) for key in keys]

    def _store(self, table_id: int, key: Optional[int]):
        try:
            return self.leaf.storage.store(table_id, key)
        except CanopyInternalError as error:
            raise self._lost(error) from None

    def _lost(self, error: Exception) -> Exception:
        if not self.restarted or self.durable is not None:
            return error
        return ExecutionError(
            f"leaf {self.leaf.leaf_id} was restarted after a crash and lost its in-memory partitions "
            f"({error}); in-memory storage is not durable: drop and reload the table")

    # -- queries ----------------------------------------------------------------------------------
    def run_task(self, spec: TaskSpec, stage_bytes: bytes, *payloads) -> tuple:
        """Run one task of a stage; return ``(meta, payload per destination...)``: ``payloads`` are its
        inputs as ``spec.inputs`` lays them out, its output goes by ``spec.exchange``
        (:func:`cluster.exchange.route_payloads`)."""
        started = time.perf_counter()
        self.tasks_running += 1
        timeout_ms, remaining_s = spec.deadline or (None, None)
        query_id = spec.query_id
        deadline = Deadline.after(timeout_ms, remaining_s, cancelled=lambda: query_id in self._cancelled,
                                  where=f" on leaf {self.leaf.leaf_id}")
        try:
            while time.perf_counter() - started < self.debug_task_delay_s:
                deadline.check()
                time.sleep(0.01)
            return self._run_task(spec, stage_bytes, payloads, deadline, started)
        except ExecutionError:
            if deadline.expired() or query_id in self._cancelled:
                self.tasks_stopped += 1
            raise
        finally:
            self.tasks_running -= 1

    def _decode(self, stage_bytes: bytes):
        """Decoded stages are kept by their bytes (operators are immutable): a query run again decodes
        nothing."""
        stage = self._stages.get(stage_bytes)
        if stage is None:
            stage = self._stages[stage_bytes] = decode_stage(stage_bytes)
            while len(self._stages) > STAGE_CACHE:
                self._stages.popitem(last=False)
        else:
            self._stages.move_to_end(stage_bytes)
        return stage

    def _run_task(self, spec: TaskSpec, stage_bytes, payloads, deadline, started) -> tuple:
        stage = self._decode(stage_bytes)
        # each exchange's payloads decoded as the task reads them (a compressed frame is unpacked then,
        # not all of them up front); the payloads themselves are Ray objects, which Ray's object store
        # spills to disk under memory pressure
        inputs: dict[int, transport.Payloads] = {}
        position = 0
        for stage_id, count in spec.inputs:
            inputs.setdefault(stage_id, transport.Payloads()).extend(payloads[position:position + count])
            position += count
        profile = TaskProfile(stage.stage_id, stage.root) if spec.profile else None
        warnings = Warnings()           # SHOW WARNINGS: shipped with the task's metadata
        self.versions.prune(spec.floor)
        try:
            deadline.check()
            # memory_limit: what the task sends waits in memory at most a quarter of the limit (over all
            # its destinations); past it, in Ray's object store (which spills to disk under pressure)
            limit = spec.memory_limit
            chunk = None if not limit or spec.exchange.kind is None else \
                max(256 << 10, limit // (4 * max(1, spec.exchange.destinations)))
            stats: dict = {}
            batches = self.leaf.task_batches(stage, spec, inputs, profile,
                                             deadline, self.versions.view(spec.epoch), hold_output=chunk is None,
                                             warnings=warnings)
            sent, counters = route_payloads(batches, stage.root.schema, spec.exchange, spec.transport,
                                            deadline.check, chunk, _ray_put() if chunk else None, stats)
        except CanopyInternalError as error:
            raise self._lost(error) from None
        seconds, now = time.perf_counter() - started, time.time()
        meta = {"leaf": self.leaf.leaf_id, "stage": stage.stage_id, "task": spec.task, "kind": spec.exchange.kind,
                "seconds": seconds, "links": counters, "wall": (now - seconds, now)}
        if warnings.total or warnings.constants:
            meta["warnings"] = warnings.state()
        if profile is not None:             # EXPLAIN ANALYZE: each operator's counters, by path
            meta["operators"] = {path: dataclasses.asdict(c) for path, c in profile.counters.items()}
            meta["spilled"] = dict(profile.spilled)
            meta["peak"] = profile.peak
            if stats.get("chunked"):
                meta["spilled"]["Exchange (to Ray's object store)"] = stats["chunked"]
        self.tasks_done += 1
        return (meta, *sent)


def _ray_put():
    import ray          # this module imports without Ray; a leaf actor runs in a Ray worker

    return ray.put


class AggregatorActor:
    """The deployment's registry: shape, leaf names and the catalog a reconnecting driver picks up."""

    def __init__(self, info: dict):
        self.info = dict(info)
        self.catalog_state: Optional[bytes] = None

    def describe(self) -> dict:
        return dict(self.info)

    def save_catalog(self, state: bytes) -> None:
        self.catalog_state = state

    def load_catalog(self) -> Optional[bytes]:
        return self.catalog_state
