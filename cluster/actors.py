"""Ray actor shells around the same :class:`cluster.leaf.Leaf` code the embedded runner uses.

A :class:`LeafActor` owns the partitions of one leaf and a copy of every reference table: in-memory
partition stores inside the actor process, or, given a :class:`DurableLeaf` description, the durable
columnstores of the embedded runner's leaf directory (``data_dir/leaf-N``), reopened from disk whenever
the actor starts — also when Ray restarts it after a crash. It receives encoded StageSpecs and exchange
payloads, runs one task with ``Leaf``, and returns its output already split per destination as transport
payloads. No planning, no SQL, no live operators cross the actor boundary.

Writes are the two phases of :mod:`engine.storage.columnstore.commit` split across processes: the driver
numbers the statement from its commit log, every leaf prepares and syncs its pieces (``prepare_write``),
the driver appends the commit record, every leaf applies (``commit_write``). A leaf opening its
partitions keeps exactly the statements whose commit record is in the log, which it reads (never writes)
on the shared filesystem.

The :class:`AggregatorActor` is the deployment's registry: its shape (leaves, partitions per leaf) and
the catalog as the last driver left it, so a second driver can reconnect by name. Queries' once-only
stages run in the driver (the driver is the aggregator); the actor only keeps state.

These classes are plain Python; :mod:`cluster.ray_runner` wraps them with ``ray.remote`` so that this
module imports without Ray.
"""
from __future__ import annotations

import collections
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

import kernels
from cluster import transport
from cluster.leaf import Leaf, LeafStorage
from cluster.versions import VersionHistory
from engine.errors import CanopyInternalError, ExecutionError
from engine.exec.operators.base import Deadline
from engine.exec.profile import TaskProfile
from engine.exec.stages import decode_stage
from engine.storage.columnstore.commit import COMMIT_MAGIC, FLOOR_MAGIC, Committer
from engine.storage.columnstore.wal import read_records

CANCEL_MEMORY_S = 600.0     # how long a leaf remembers a cancelled query id
STAGE_CACHE = 128           # decoded stages a leaf keeps
COALESCE_ROWS = 32768       # rows of repartitioned pieces gathered into one batch per link

# What a consumer task reads: [(stage id, number of payloads)], the payloads following as arguments.
Layout = Sequence[tuple[int, int]]


@dataclass(frozen=True)
class DurableLeaf:
    """Where a leaf's durable partitions live: paths of the driver's data directory
    (:class:`engine.storage.columnstore.datadir.DataDirectory` decides the layout) and the store options."""
    leaf_dir: str
    catalog: str            # catalog.json: which tables exist (and their schemas, sort keys)
    commit_log: str         # commit.log: which statements committed
    options: dict = field(default_factory=dict)


class _LeafCommitter(Committer):
    """A leaf's half of the commit protocol: the lock its flushes and merges take. Statements are
    transactions run by the driver, which owns the commit log, so a store write that would start its
    own transaction here is a bug."""

    def begin(self):
        raise CanopyInternalError("a Ray leaf's durable partitions are written through prepare_write/commit_write")


class _MemoryWrite:
    """An in-memory store's prepared piece: held until commit, applied then (nothing to undo)."""

    def __init__(self, store, batches: list, replace: bool):
        self.store, self.batches, self.replace = store, batches, replace

    def apply(self) -> None:
        if self.replace:
            self.store.replace(self.batches)
        else:
            for batch in self.batches:
                self.store.append(batch)

    def abort(self) -> None:
        pass


class LeafActor:
    def __init__(self, leaf_id: int, partitions: Sequence[int], restarted: bool = False,
                 debug_task_delay_s: float = 0.0, durable: Optional[DurableLeaf] = None):
        self.durable = durable
        self.leaf = Leaf(leaf_id, partitions)
        self.versions = VersionHistory()            # each store's versions by snapshot epoch (cluster.versions)
        if durable is not None:
            self._open_durable()
        self.restarted = restarted
        self.debug_task_delay_s = debug_task_delay_s
        self._pending: dict[str, list] = {}        # write transactions prepared, not yet committed
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
        records, _ = read_records(Path(d.commit_log), (COMMIT_MAGIC, FLOOR_MAGIC))
        committed = frozenset(csn for magic, csn, _ in records if magic == COMMIT_MAGIC)
        storage = LeafStorage(Path(d.leaf_dir), _LeafCommitter(None), StoreOptions.from_options(dict(d.options)))
        for table in PersistentCatalog(Path(d.catalog)).all_tables():
            keys = [None] if table.reference else self.leaf.partitions
            storage.create(table.table_id, table.arrow_schema, keys, table.sort_key, committed)
        self.leaf.storage = storage

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
        self._pending.clear()
        self.versions.forget()              # new store objects: queries read them as they are now
        self._open_durable()

    def close(self) -> None:
        for store in self.leaf.storage.all_stores():
            if hasattr(store, "close"):
                store.close()

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
                     sort_key: Sequence[str] = ()) -> None:
        self.leaf.storage.create(table_id, schema, keys, sort_key)

    def drop_table(self, table_id: int) -> None:
        self.versions.forget([key for key in self.versions.keys() if key[0] == table_id])
        self.leaf.storage.drop(table_id)

    def prepare_write(self, txn: str, table_id: int, pieces: Sequence[tuple[Optional[int], list]],
                      replace: bool, csn: Optional[int] = None) -> None:
        """Check that every target store exists and hold the pieces until ``commit_write``. Durable
        stores (``csn`` given) also write and sync them: WAL records or segments plus a delta, all
        ignored by recovery unless the commit log gets ``csn``."""
        stores = {key: self._store(table_id, key) for key, _ in pieces}
        if self.durable is None:
            self._pending[txn] = [_MemoryWrite(stores[key], batches, replace) for key, batches in pieces]
            return
        if csn is None:
            raise CanopyInternalError("a write to durable partitions without a commit sequence number")
        prepared = []
        try:
            for key, batches in pieces:
                store = stores[key]
                prepared.append(store.prepare_replace(csn, batches) if replace else store.prepare_append(csn, batches))
            for p in prepared:
                p.sync()
        except BaseException:
            for p in prepared:
                p.abort()
            raise
        self._pending[txn] = prepared

    def commit_write(self, txn: str, epoch: Optional[int] = None, floor: Optional[int] = None) -> None:
        """Apply a prepared write (the driver has made it durable) as the version ``epoch`` of the
        stores it changes (queries of older epochs still read the versions before it; ``floor``: the
        oldest epoch the driver's queries may still read, see :mod:`cluster.versions`); then flush what
        crossed its threshold. Ray runs this actor's default-group methods one at a time, so no
        prepared write of another statement sits in a WAL that the flush swaps (one driver writes at
        a time), and no task runs between the versions' bookkeeping and the apply."""
        try:
            prepared = self._pending.pop(txn)
        except KeyError:
            raise ExecutionError(f"leaf {self.leaf.leaf_id} holds no prepared write {txn} "
                                 f"(it was restarted after preparing it)") from None
        self.versions.prune(floor)
        with self.versions.changing(epoch, self.leaf.storage.keys_of(p.store for p in prepared)):
            for p in prepared:
                p.apply()
        if self.durable is not None:
            self.leaf.storage.committer.maintain([p.store for p in prepared])

    def abort_write(self, txn: str) -> None:
        for p in self._pending.pop(txn, ()):
            p.abort()

    def optimize_table(self, table_id: int) -> None:
        """OPTIMIZE TABLE on this leaf: flush write buffers, merge small segments."""
        if self.durable is None:
            return                          # nothing to do for tables kept in memory
        storage = self.leaf.storage
        with storage.committer.lock.exclusive():
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
    def run_task(self, query_id: str, stage_bytes: bytes, task: int, num_partitions: int, params: Sequence,
                 output: dict, layout: Layout, *payloads) -> tuple:
        """Run one task of a stage; return ``(meta, payload per destination...)``.

        ``output``: ``kind`` (gather | broadcast | repartition | None for a final stage run here),
        ``keys``, ``destinations`` and ``partitions_per_leaf`` (a repartitioned row goes to the leaf of
        its partition, ``partition // partitions_per_leaf``), plus the transport options; ``deadline``:
        (statement_timeout ms, seconds left) or absent; ``profile``: count each operator's output
        (EXPLAIN ANALYZE) into the meta's ``operators``; ``epoch``: the snapshot epoch the task's scans
        read (absent: the stores as they are now) and ``floor``, the oldest one still read
        (:mod:`cluster.versions`).
        """
        started = time.perf_counter()
        self.tasks_running += 1
        timeout_ms, remaining_s = output.get("deadline") or (None, None)
        deadline = Deadline.after(timeout_ms, remaining_s, cancelled=lambda: query_id in self._cancelled,
                                  where=f" on leaf {self.leaf.leaf_id}")
        try:
            while time.perf_counter() - started < self.debug_task_delay_s:
                deadline.check()
                time.sleep(0.01)
            return self._run_task(stage_bytes, task, num_partitions, params, output, layout, payloads,
                                  deadline, started)
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

    def _run_task(self, stage_bytes, task, num_partitions, params, output, layout, payloads, deadline,
                  started) -> tuple:
        stage = self._decode(stage_bytes)
        inputs: dict[int, list[pa.RecordBatch]] = {}
        position = 0
        for stage_id, count in layout:
            for payload in payloads[position:position + count]:
                inputs.setdefault(stage_id, []).extend(transport.decode(payload))
            position += count
        profile = TaskProfile(stage.stage_id, stage.root) if output.get("profile") else None
        self.versions.prune(output.get("floor"))
        try:
            deadline.check()
            batches = self.leaf.task_batches(stage, task, num_partitions, params, inputs, profile, deadline,
                                             self.versions.view(output.get("epoch")))
            sent, counters = route(batches, stage.root.schema, output, deadline.check)
        except CanopyInternalError as error:
            raise self._lost(error) from None
        seconds, now = time.perf_counter() - started, time.time()
        meta = {"leaf": self.leaf.leaf_id, "stage": stage.stage_id, "task": task, "kind": output["kind"],
                "seconds": seconds, "links": counters, "wall": (now - seconds, now)}
        if profile is not None:             # EXPLAIN ANALYZE: each operator's counters, by path
            meta["operators"] = {path: dataclasses.asdict(c) for path, c in profile.counters.items()}
        self.tasks_done += 1
        return (meta, *sent)


def route(batches, schema: pa.Schema, output: dict, check=None) -> tuple[list[bytes], list[dict]]:
    """Send a task's output batches through a :class:`transport.Sender` by the stage's exchange; return
    the payloads (one per destination) and the per-link counters."""
    kind = output["kind"]
    destinations = output["destinations"]
    sender = transport.Sender(schema, destinations, compression=output.get("compression", "adaptive"),
                              compress_after=output.get("compress_after", transport.COMPRESS_AFTER),
                              throttle_bytes_per_s=output.get("throttle_bytes_per_s"))
    # A repartition cuts each batch into a piece per partition: pieces for one leaf wait here (in the
    # sender's schema, so they concatenate) until they make a batch of COALESCE_ROWS, so a link sends
    # few full frames, not a tiny one per piece.
    held: list[list[pa.RecordBatch]] = [[] for _ in range(destinations)]
    held_rows = [0] * destinations

    def flush(destination: int) -> None:
        pieces = held[destination]
        if pieces:
            sender.send(destination, pieces[0] if len(pieces) == 1 else
                        pa.Table.from_batches(pieces).combine_chunks().to_batches()[0])
        held[destination], held_rows[destination] = [], 0

    try:
        for batch in batches:
            if check is not None:
                check()
            if kind == "repartition":
                ppl = output["partitions_per_leaf"]
                pieces = kernels.split_batch(batch, list(output["keys"]), destinations * ppl)
                for partition, piece in enumerate(pieces):
                    if piece.num_rows:
                        destination = partition // ppl
                        held[destination].append(sender.conform(piece))
                        held_rows[destination] += piece.num_rows
                        if held_rows[destination] >= COALESCE_ROWS:
                            flush(destination)
            else:                           # gather, broadcast, a final stage: one destination
                sender.send(0, batch)
        for destination in range(destinations):
            flush(destination)
        sent = sender.finish()
    except BaseException:
        sender.abort()
        raise
    return sent, [vars(c) for c in sender.counters]


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
