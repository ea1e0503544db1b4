"""The Ray runner: leaves as Ray actors, the driver as the aggregator.

Shape: N named :class:`cluster.actors.LeafActor`s (``<name>-leaf-<i>``), spread over the cluster's nodes,
each owning ``partitions_per_leaf`` partitions of every sharded table and a copy of every reference table
in its own process, plus a named :class:`cluster.actors.AggregatorActor` (``<name>-aggregator``) that keeps
the deployment's shape and catalog so a second driver can reconnect by name. The driver holds the catalog
and plays the aggregator: it routes inserted rows with ``kernels.split_batch`` and runs the once-only
stages that read no table. A load streams: the driver routes each parsed block and sends every leaf its
rows in chunks as it goes (``_RayLoad``), which the leaves stage until the load's transaction.

A query's stages are submitted all at once; Ray starts each task when its inputs exist. A parallel stage
runs one task per leaf; a task returns its meta plus one transport payload per destination (per leaf for
a repartition, one for gather/broadcast), and the consuming tasks take those object refs as arguments, so
exchange data moves leaf -> object store -> leaf and reaches the driver only for the final stage.

Durability: with a ``data_dir`` the driver opens it as the embedded runner does (``cluster.json``,
``catalog.json``, ``commit.log``, the lock) and each leaf opens its columnstores under ``leaf-N`` of it.
A write is one statement of the commit protocol (:mod:`engine.storage.columnstore.commit`) spread over
processes: the csn comes from the driver's commit log, the leaves prepare and sync, the driver appends
the commit record, the leaves apply. Driver and leaves must see the same filesystem (one node, or a
shared mount). One transaction may span tables (a pipeline batch's rows and its files' marks). DELETE
and UPDATE run in place: every leaf evaluates the predicate on its partitions and prepares delete
bitmaps; an UPDATE's matched rows (only those) come to the driver, which computes their new versions and
routes them into the same transaction. Durable leaves flush and merge on a background thread.

Consistent reads: every write is a snapshot epoch, published when every leaf has applied it; a query
reads the epoch published when it started, on every leaf and in every stage (:mod:`cluster.versions`).

Failures: Ray errors become :mod:`engine.errors` types here. Ray restarts a leaf that dies
(``max_restarts``). With a ``data_dir`` the restarted leaf reopens its partitions from disk, keeping the
statements whose commit record is in the log, and a query it died under is retried once (see ``run``);
in memory it has lost them: the query fails with an ``ExecutionError`` (an ``OperationalError``) naming
the leaf, and queries over its tables fail with an error saying so until they are dropped and reloaded.
A query that fails for any reason, runs past ``statement_timeout`` or is interrupted (Ctrl-C) is
cancelled on every leaf: queued tasks are cancelled, running ones stop at their next batch.
"""
from __future__ import annotations

import collections
import dataclasses
import itertools
import pickle
import threading
import time
import uuid
import warnings
import weakref
from pathlib import Path
from types import SimpleNamespace
from typing import Optional, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import ray
import ray.exceptions as rex

import engine.catalog
from cluster import transport
from cluster.actors import AggregatorActor, DurableLeaf, LeafActor
from cluster.exchange import route_payloads
from cluster.leaf import Leaf
from cluster.placement import Placement
from cluster.scheduler import Output, Where, consumed, submission_order, task_inputs, tasks_of, where
from cluster.specs import ExchangeSpec, PartitionRef, TaskSpec, TransportOptions
from cluster.ray_start import init_ray
from engine.catalog import Catalog, TableDef
from engine.errors import CanopyInternalError, ExecutionError
from engine.exec.operators.base import Deadline, conform, statement_deadline
from engine.exec.profile import TaskProfile
from engine.exec.progress import query_progress
from engine.exec.stages import StageSpec, encode_stage
from engine.fair_locks import FairMutex
from engine.runner import LoadWriter, Runner
from engine.storage.columnstore.datadir import DataDirectory


INLINE_STAGE_BYTES = 64 * 1024     # an encoded stage up to this size travels inside each task's arguments
STAGE_CACHE = 256                   # encoded stages kept by the driver


class _RayLeaf(LeafActor):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Same constructor arguments on a restart: only Ray knows this process replaces a dead one.
        with warnings.catch_warnings():     # the property reads a deprecated attribute inside Ray
            warnings.simplefilter("ignore", DeprecationWarning)
            self.restarted = ray.get_runtime_context().was_current_actor_reconstructed

    # ping and cancel answer while a task runs (their own concurrency group, their own thread)
    @ray.method(concurrency_group="control")
    def ping(self) -> dict:
        return super().ping()

    @ray.method(concurrency_group="control")
    def cancel(self, query_id: str) -> None:
        super().cancel(query_id)


_LeafRemote = ray.remote(concurrency_groups={"control": 1})(_RayLeaf)
_AggregatorRemote = ray.remote(num_cpus=0)(AggregatorActor)


def _retrieve_errors(submitted: list) -> None:
    """Take the errors of a cancelled query's failed tasks, so Ray does not print each one later as an
    "Unhandled error" traceback when its refs are dropped (Ctrl-C showed ~25 lines of "query cancelled
    on leaf 0"). A task's first return (its meta) tells whether it failed; only then are its other
    returns (which hold the same error, no data) taken too. Tasks still running are left alone."""
    for _, out in submitted:
        try:
            ray.get(out[0], timeout=0)
            continue                       # it succeeded: its payloads are data, not errors
        except rex.GetTimeoutError:
            continue
        except (rex.RayError, Exception):  # noqa: BLE001 - the error is the point: now it is handled
            pass
        for ref in out[1:]:
            try:
                ray.get(ref, timeout=0)
            except (rex.RayError, Exception):  # noqa: BLE001
                pass


class RayRunner(Runner):
    """``leaves`` leaf actors on the Ray cluster at ``address`` (None: join the Ray this process already
    runs, or a running cluster ``ray start --head`` recorded on this machine, or start a private local one
    with ``num_cpus``: see :mod:`cluster.ray_start`; ``"auto"``: the cluster this machine belongs to).
    ``ray_origin`` says which, in words.

    ``name``: deployment name (default: a fresh unique one). With an existing deployment of that name in
    ``namespace`` the runner reconnects to it (its leaves, partitions and catalog) instead of starting one.
    ``detached``: the actors outlive this driver (``shutdown`` then only disconnects; ``destroy`` ends
    them). ``leaf_cpus`` / ``leaf_resources``: what each leaf reserves. ``max_restarts``: how often Ray
    restarts a dead leaf. ``compression`` / ``throttle_bytes_per_s``: exchange transport options
    (:mod:`cluster.transport`). ``debug_task_delay_s``: every leaf task sleeps first (failure tests).
    ``data_dir``: durable tables there, in the embedded runner's layout (reopened and recovered if it
    exists; a deployment reconnected by name uses the data_dir it was started with);
    ``storage_options`` (``segment_rows``, ``flush_rows``, ...) tune the columnstores.
    """

    def __init__(self, leaves: int = 2, partitions_per_leaf: int = 4, *, address: Optional[str] = None,
                 name: Optional[str] = None, namespace: str = "canopy", detached: bool = False,
                 leaf_cpus: float = 0.5, leaf_resources: Optional[dict] = None, max_restarts: int = 3,
                 num_cpus: Optional[int] = None, compression: str = "adaptive",
                 throttle_bytes_per_s: Optional[float] = None, debug_task_delay_s: float = 0.0,
                 start_timeout_s: float = 120.0, data_dir: Optional[str] = None, **storage_options):
        if storage_options and data_dir is None:
            raise ValueError(f"unknown runner options {sorted(storage_options)} (storage options need data_dir)")
        if not ray.is_initialized():
            self.ray_origin = init_ray(address, num_cpus)
        else:
            self.ray_origin = "joined the Ray this process already runs"
        self.namespace = namespace
        self.detached = detached
        self.max_restarts = max_restarts
        self.transport_options = {"compression": compression, "throttle_bytes_per_s": throttle_bytes_per_s}
        self.last_profile: list[dict] = []
        self.last_load: Optional[LoadStats] = None   # what the latest committed load sent the leaves
        self.retries = 0                        # queries that succeeded on a retry after a leaf died
        # id(StageSpec) -> (the spec, its payload for tasks, the exchanges it reads): stage encoding and
        # the object-store put are per plan, not per query (the spec keeps its id from being reused)
        self._stages: "collections.OrderedDict[int, tuple]" = collections.OrderedDict()
        self.aggregator = Leaf(-1, ())          # runs the once-only stages that read no table
        self._write_lock = FairMutex()     # one transaction at a time (and no DDL during one), in turn
        # Row counts and distinct counts answered here: the optimizer asks for them hundreds of times a
        # plan, and every write goes through this driver, which keeps them exact (a reconnecting driver
        # or a leaf restart starts them afresh from the leaves).
        self._rows: dict[int, int] = {}
        self._distinct: dict[tuple[int, str], int] = {}
        self._closed = False
        self._data: Optional[DataDirectory] = None
        # Snapshot epochs (cluster.versions): the newest statement every leaf has applied, and the epochs
        # running queries read (how many of each), whose versions the leaves keep.
        self._published = 0
        self._reading: collections.Counter = collections.Counter()
        self._epoch_lock = threading.Lock()
        # Debug (tests): called once a write is applied on its first leaf, before the others apply it.
        self.debug_after_first_leaf_commit = None

        self.name = name or f"canopy-{uuid.uuid4().hex[:8]}"
        registry = _find_actor(f"{self.name}-aggregator", namespace)
        if registry is not None:
            self._attach(registry, data_dir, storage_options)
        else:
            if data_dir is not None:
                self._data = DataDirectory(data_dir, leaves, partitions_per_leaf, storage_options)
            try:
                self._deploy(leaves, partitions_per_leaf, leaf_cpus, leaf_resources, debug_task_delay_s,
                             start_timeout_s)
            except BaseException:
                if self._data is not None:
                    self._data.close()
                raise
        self.placement = Placement(self.num_leaves, self.partitions_per_leaf)
        self._leaf_by_actor = {leaf._actor_id.hex(): i for i, leaf in enumerate(self.leaves)}
        if not detached:        # a runner dropped without shutdown() must not hold the cluster's CPUs
            self._finalizer = weakref.finalize(self, _kill, [*self.leaves, self._registry])

    # -- deployment -------------------------------------------------------------------------------
    def _deploy(self, leaves, partitions_per_leaf, leaf_cpus, leaf_resources, delay, timeout) -> None:
        self.num_leaves = leaves
        self.partitions_per_leaf = partitions_per_leaf
        lifetime = "detached" if self.detached else None
        data = self._data
        self.leaves = [
            _LeafRemote.options(
                name=f"{self.name}-leaf-{i}", namespace=self.namespace, lifetime=lifetime,
                num_cpus=leaf_cpus, resources=leaf_resources or {}, max_restarts=self.max_restarts,
                max_task_retries=0, scheduling_strategy="SPREAD",
            ).remote(i, range(i * partitions_per_leaf, (i + 1) * partitions_per_leaf),
                     debug_task_delay_s=delay, durable=self._durable_leaf(i))
            for i in range(leaves)]
        info = {"leaves": leaves, "partitions_per_leaf": partitions_per_leaf, "name": self.name,
                "data_dir": str(data.path.resolve()) if data is not None else None}
        self._registry = _AggregatorRemote.options(
            name=f"{self.name}-aggregator", namespace=self.namespace, lifetime=lifetime,
            max_restarts=self.max_restarts).remote(info)
        try:
            ray.get([leaf.ping.remote() for leaf in self.leaves] + [self._registry.describe.remote()],
                    timeout=timeout)
        except rex.GetTimeoutError:
            _kill([*self.leaves, self._registry])
            raise ExecutionError(
                f"the Ray cluster could not place {leaves} leaves of {leaf_cpus} CPU each within {timeout:.0f} s "
                f"(available: {ray.available_resources().get('CPU', 0)} CPU)") from None
        if data is not None:
            self.catalog = data.catalog
            self._finish_recovery()
            return
        self.catalog = Catalog()
        self.catalog.create_database("canopy")
        self._save_catalog()

    def _durable_leaf(self, leaf: int) -> Optional[DurableLeaf]:
        data = self._data
        if data is None:
            return None
        return DurableLeaf(str(data.leaf_dir(leaf).resolve()), str((data.path / "catalog.json").resolve()),
                           str(data.log.path.resolve()), dataclasses.asdict(data.options))

    def _finish_recovery(self) -> None:
        """The leaves have opened their partitions: compact the commit log to what their WALs still
        need and remove directories of tables the catalog does not name (DataDirectory.finish_recovery)."""
        states = self._get([leaf.recovery_state.remote() for leaf in self.leaves])
        self._data.finish_recovery([SimpleNamespace(**state) for state in states],
                                   {t.table_id for t in self._data.catalog.all_tables()})

    def _attach(self, registry, data_dir: Optional[str], storage_options: dict) -> None:
        self._registry = registry
        info = ray.get(registry.describe.remote())
        self.num_leaves = info["leaves"]
        self.partitions_per_leaf = info["partitions_per_leaf"]
        self.leaves = [ray.get_actor(f"{self.name}-leaf-{i}", namespace=self.namespace)
                       for i in range(self.num_leaves)]
        # the statements the previous driver published are the leaves' newest versions
        self._published = max(ping["epoch"] for ping in self._get([leaf.ping.remote() for leaf in self.leaves]))
        deployed = info.get("data_dir")
        if data_dir is not None and str(Path(data_dir).resolve()) != deployed:
            raise ExecutionError(f"deployment {self.name!r} keeps its tables "
                                 f"{'in ' + deployed if deployed else 'in memory'}, not in {data_dir}")
        if deployed is not None:
            # the leaves hold their partitions open; reopening here only reads the catalog and log
            self._data = DataDirectory(deployed, self.num_leaves, self.partitions_per_leaf, storage_options,
                                       verify=False)
            self.catalog = self._data.catalog
            self._finish_recovery()
            return
        state = ray.get(registry.load_catalog.remote())
        self.catalog = _catalog_from_state(state) if state else Catalog()

    def catalog_changed(self) -> None:
        self._save_catalog()

    def _save_catalog(self) -> None:
        if self._data is not None:
            return          # catalog.json is saved by every catalog change (engine.catalog_store)
        ray.get(self._registry.save_catalog.remote(_catalog_state(self.catalog)))

    def leaf_info(self) -> list[dict]:
        """Each leaf's process id, host, whether Ray restarted it, its task counters and snapshot versions."""
        return self._get([leaf.ping.remote() for leaf in self.leaves])

    # -- tables -----------------------------------------------------------------------------------
    def _keys(self, table: TableDef, leaf: int) -> list[Optional[int]]:
        return self.placement.keys(table, leaf)

    def _forget(self, table_id: Optional[int] = None) -> None:
        """Drop cached counts: of one table (it changed), or all (a leaf may have lost rows)."""
        if table_id is None:
            self._rows.clear()
            self._distinct.clear()
            return
        self._rows.pop(table_id, None)
        for key in [k for k in self._distinct if k[0] == table_id]:
            del self._distinct[key]

    def create_table(self, table: TableDef) -> None:
        self._forget(table.table_id)
        with self._write_lock:
            self._get([leaf.create_table.remote(table.table_id, table.arrow_schema, self._keys(table, i),
                                                table.sort_key)
                       for i, leaf in enumerate(self.leaves)])
        self._save_catalog()

    def drop_table(self, table: TableDef) -> None:
        self._forget(table.table_id)
        with self._write_lock:      # a durable leaf in a transaction holds its commit lock until the apply
            self._get([leaf.drop_table.remote(table.table_id) for leaf in self.leaves])
        self._save_catalog()

    def insert(self, table: TableDef, data: pa.Table) -> int:
        if data.num_rows == 0:
            return 0
        self._write([(table, self._place(table, data), False)])
        return data.num_rows

    def begin_load(self, table: TableDef) -> "_RayLoad":
        return _RayLoad(self, table)

    def replace_table(self, table: TableDef, data: Optional[pa.Table]) -> None:
        self.replace_tables([(table, data)])

    def replace_tables(self, changes) -> None:
        writes = []
        for table, data in changes:
            pieces = self._place(table, data) if data is not None else {}
            for i in range(self.num_leaves):       # every store is replaced, the empty ones with nothing
                for key in self._keys(table, i):
                    pieces.setdefault(i, {}).setdefault(key, [])
            writes.append((table, pieces, True))
        self._write(writes)

    def delete_rows(self, table: TableDef, matcher, rewrite=None) -> int:
        """DELETE / UPDATE in place, one transaction: every leaf marks the rows ``matcher`` selects in
        its partitions (delete bitmaps when durable); for an UPDATE the matched rows (only those) come
        here, ``rewrite`` makes their new versions, which are routed as an INSERT's and prepared in the
        same transaction. Returns the rows matched (a reference table's counted once)."""
        return self._write([], delete=(table, matcher, rewrite))

    def _place(self, table: TableDef, data: pa.Table) -> dict[int, dict[Optional[int], list]]:
        """{leaf: {partition (None: the reference copy): [batches]}}, routed here on the driver."""
        return self.placement.by_leaf(table, data)

    def _write(self, writes: Sequence[tuple[TableDef, dict, bool]], on_commit=None, delete=None,
               staged: Optional["_RayLoad"] = None) -> int:
        """One transaction over any number of tables. ``writes``: (table, pieces as ``_place`` makes
        them, replace); ``delete``: (table, matcher, rewrite or None) of a DELETE / UPDATE (see
        ``delete_rows``), prepared first; ``staged``: a streaming load whose rows the leaves already
        hold (its load id is the transaction's id), prepared with the writes; ``on_commit`` runs once
        every leaf applied, still under the write lock. Returns the rows the delete matched.

        Three steps: every leaf prepares its part (durable: synced to disk), so a leaf that cannot take
        its rows, a predicate that fails or an UPDATE's bad new value leaves every partition as it was
        (abort everywhere); the driver appends the commit record, the statement's commit point; every
        leaf applies. The statement is the next snapshot epoch, published once every leaf has applied
        it: queries started before read the versions without it on every leaf (cluster.versions)."""
        txn = staged.load_id if staged is not None else uuid.uuid4().hex
        for table, *_ in [*writes, *([delete] if delete is not None else []),
                          *([(staged.table,)] if staged is not None else [])]:
            self._forget(table.table_id)
        with self._write_lock:
            csn = self._data.log.next_csn() if self._data is not None else None
            touched: set[int] = set()          # leaves holding a part of the transaction
            participants: list[str] = []        # partitions given a WAL record (the commit record names them)
            deleted = 0
            try:
                if delete is not None:
                    deleted, rewritten = self._prepare_delete(txn, csn, *delete, touched, participants)
                    if rewritten is not None and rewritten.num_rows:
                        writes = [*writes, (delete[0], self._place(delete[0], rewritten), False)]
                if delete is not None and not deleted and not writes:    # matched no row: no commit record
                    for i in touched:
                        self.leaves[i].abort_write.remote(txn)
                    return 0
                by_leaf: dict[int, list] = {}
                for table, placed, replace in writes:
                    for i, pieces in placed.items():
                        by_leaf.setdefault(i, []).append((table.table_id, list(pieces.items()), replace))
                staged_rows = staged.staged_rows() if staged is not None else {}
                for i in staged_rows:
                    by_leaf.setdefault(i, [])
                touched.update(by_leaf)
                refs = [self.leaves[i].prepare.remote(txn, ops, csn, staged_rows.get(i)) for i, ops in by_leaf.items()]
                prepared = staged.get(refs, "preparing") if staged is not None else self._get(refs)
                participants.extend(name for names in prepared for name in names or ())
                if self._data is not None and touched:
                    self._data.log.commit(csn, participants)      # the commit point
            except BaseException:
                for i in touched:
                    self.leaves[i].abort_write.remote(txn)
                raise
            self._apply(txn, csn, sorted(touched))
            if on_commit is not None:
                on_commit()
            return deleted

    def _prepare_delete(self, txn: str, csn: Optional[int], table: TableDef, matcher, rewrite,
                        touched: set[int], participants: list[str]) -> tuple[int, Optional[pa.Table]]:
        """Every leaf prepares the delete; (rows matched, their new versions for an UPDATE). A
        reference table's copies are alike: leaf 0's count and rows are the table's."""
        counted = range(1) if table.reference else range(self.num_leaves)
        touched.update(range(self.num_leaves))
        results = self._get([leaf.prepare_delete.remote(txn, table.table_id, self._keys(table, i), matcher,
                                                        rewrite is not None and i in counted, csn)
                             for i, leaf in enumerate(self.leaves)])
        participants.extend(name for result in results for name in result[2])
        deleted = sum(results[i][0] for i in counted)
        if rewrite is None or not deleted:
            return deleted, None
        return deleted, rewrite([b for i in counted for b in results[i][1]])

    def _apply(self, txn: str, csn: Optional[int], leaves: list[int]) -> None:
        """Every leaf makes the transaction visible, as the next snapshot epoch (published once all
        have). Durable: it is committed already, so a leaf that fails to apply (it died after
        preparing) reopens its partitions from disk instead."""
        epoch = self._published + 1
        try:
            if self._data is None:
                self._get([ref for _, ref in self._commit_on_leaves(txn, leaves, epoch)])
                return
            failed = []
            for i, ref in self._commit_on_leaves(txn, leaves, epoch):
                try:
                    self._get(ref)
                except Exception as error:      # noqa: BLE001 - the statement is committed: recover the leaf
                    failed.append((i, error))
            for i, error in failed:
                self._reopen_leaf(i, csn, error)
        finally:
            self._publish(epoch)

    def _commit_on_leaves(self, txn: str, leaves: list[int], epoch: int) -> list[tuple[int, object]]:
        """Send ``commit_write`` of ``txn`` (as snapshot ``epoch``) to ``leaves``; their refs."""
        floor = self._floor()
        refs = []
        for leaf in leaves:
            refs.append((leaf, self.leaves[leaf].commit_write.remote(txn, epoch, floor)))
            if len(refs) == 1 and self.debug_after_first_leaf_commit is not None:
                ray.wait([refs[0][1]])
                self.debug_after_first_leaf_commit()
        return refs

    # -- snapshot epochs (cluster.versions) -------------------------------------------------------
    def _publish(self, epoch: int) -> None:
        with self._epoch_lock:
            self._published = max(self._published, epoch)

    def _floor(self) -> int:
        """The oldest epoch a running query reads, or a query starting from now will: the leaves keep
        the versions from there on."""
        with self._epoch_lock:
            return min(self._reading, default=self._published)

    def _start_reading(self) -> int:
        with self._epoch_lock:
            epoch = self._published
            self._reading[epoch] += 1
            return epoch

    def _stop_reading(self, epoch: int) -> None:
        with self._epoch_lock:
            self._reading[epoch] -= 1
            if not self._reading[epoch]:
                del self._reading[epoch]

    def _reopen_leaf(self, leaf: int, csn: int, error: Exception, timeout: float = 60.0) -> None:
        """A committed statement a leaf did not apply (it died, or failed, after preparing): the leaf
        reopens its partitions from disk, which now has the commit record. Waits for Ray to restart it."""
        self._forget()
        deadline = time.monotonic() + timeout
        while True:
            try:
                self._get(self.leaves[leaf].reopen.remote(), timeout=max(1.0, deadline - time.monotonic()))
                return
            except ExecutionError as retry_error:
                if time.monotonic() >= deadline:
                    raise ExecutionError(
                        f"statement {csn} is committed, but leaf {leaf} could not apply it ({error}) nor "
                        f"reopen its partitions ({retry_error}); it will show the statement when it is "
                        f"restarted") from None
                time.sleep(0.2)

    def row_count(self, table: TableDef) -> int:
        rows = self._rows.get(table.table_id)
        if rows is None:
            leaves = self.leaves[:1] if table.reference else self.leaves
            rows = self._rows[table.table_id] = sum(self._get(
                [leaf.row_count.remote(table.table_id, self._keys(table, i)) for i, leaf in enumerate(leaves)]))
        return rows

    def distinct_count(self, table: TableDef, column: str) -> int:
        key = (table.table_id, column)
        if key not in self._distinct:
            leaves = self.leaves[:1] if table.reference else self.leaves
            values = self._get([leaf.distinct_values.remote(table.table_id, self._keys(table, i), column)
                                for i, leaf in enumerate(leaves)])
            values = [v for v in values if len(v)]
            self._distinct[key] = \
                pc.count_distinct(pa.chunked_array(values), mode="only_valid").as_py() if values else 0
        return self._distinct[key]

    def optimize_table(self, table: TableDef) -> None:
        with self._write_lock:      # a durable leaf in a transaction holds its commit lock until the apply
            self._get([leaf.optimize_table.remote(table.table_id) for leaf in self.leaves])

    def map_column_partitions(self, table: TableDef, column: str, fn):
        leaves = self.leaves[:1] if table.reference else self.leaves
        type_ = table.arrow_schema.field(column).type
        per_leaf = self._get([leaf.map_column.remote(table.table_id, self._keys(table, i), column, type_, fn)
                              for i, leaf in enumerate(leaves)])
        return [result for results in per_leaf for result in results]

    def map_partitions(self, table: TableDef, fn):
        leaves = self.leaves[:1] if table.reference else self.leaves
        per_leaf = self._get([leaf.map_store.remote(table.table_id, self._keys(table, i), fn)
                              for i, leaf in enumerate(leaves)])
        return [result for results in per_leaf for result in results]

    # -- queries ----------------------------------------------------------------------------------
    def run(self, stages: Sequence[StageSpec], params: Sequence = (), profile=None) -> pa.Table:
        """Run one query's stages. A query is read-only (a write's rows go through ``_write`` after it),
        so when a leaf dies under it and its partitions are durable, its failed tasks are retried
        once on the restarted leaf: the tasks that had completed keep their outputs (objects in the
        store, owned by this driver), the dead leaf's tasks and the ones that consumed their outputs run
        again. In memory the restarted leaf has lost its partitions, so the error stays."""
        if self._closed:
            raise CanopyInternalError("the runner has been shut down")
        deadline = statement_deadline.get()
        progress = query_progress.get()
        if progress is not None:
            progress.start(sum(self.num_leaves if s.parallel else 1 for s in stages), len(stages))
        epoch = self._start_reading()       # every task of every stage, a retry's too, reads this epoch
        try:
            return self._attempts(stages, params, profile, deadline, epoch)
        finally:
            self._stop_reading(epoch)

    def _attempts(self, stages, params, profile, deadline, epoch: int) -> pa.Table:
        done: dict = {}
        for attempt in range(2):
            query = _Query(uuid.uuid4().hex, deadline, reuse=done, profile=profile, epoch=epoch)
            if profile is not None:             # a retry counts the whole query again
                profile.operators.clear()
                profile.exchanges.clear()
            try:
                table = self._run(query, stages, tuple(params))
                self.last_profile = query.metas if query.metas is not None else \
                    self._get(query.meta_refs, deadline=deadline)
                if profile is not None:
                    self._collect_profile(profile, self.last_profile)
                self.retries += attempt
                return table
            except _LeafDied as error:
                if self._data is None or attempt:
                    self.cancel(query.query_id, query.submitted)
                    if attempt:
                        raise ExecutionError(f"{error} (the query was already retried once after leaf "
                                             f"{error.leaf} restarted)") from None
                    raise
                # the other leaves' tasks run on: what they complete is not done again
                settled = self._settle(query, deadline)
                done = self._completed(query.tasks)
                if not settled:
                    self.cancel(query.query_id, query.submitted)
                self._wait_alive(error.leaf, deadline, error)
            except BaseException:
                # Ctrl-C, statement_timeout, a leaf's error: stop the query's other tasks too
                self.cancel(query.query_id, query.submitted)
                raise
        raise CanopyInternalError("unreachable")

    def _fetch(self, query: "_Query", refs: list, final: bool) -> list:
        """The payloads ``refs``; for the final stage with every task's meta in the same ``ray.get``
        (they are ready by then: every task feeds the final stage), saving a round trip per query."""
        progress = query_progress.get()
        if progress is not None:
            self._watch(query, refs, progress)
        if not final:
            return self._get(refs, deadline=query.deadline)
        values = self._get(list(refs) + query.meta_refs, deadline=query.deadline)
        query.metas = values[len(refs):]
        return values[:len(refs)]

    def _watch(self, query: "_Query", refs: list, progress) -> None:
        """Wait for ``refs`` a quarter second at a time, telling ``progress`` of each task that ended
        (its meta: stage and rows sent). Errors are left for the ``ray.get`` that follows to raise."""
        waiting = list(refs)
        while True:
            metas = [ref for ref in query.meta_refs if ref not in query.reported]
            ended = ray.wait(metas, num_returns=len(metas), timeout=0)[0] if metas else []
            for ref in ended:
                query.reported.add(ref)
                try:
                    meta = ray.get(ref)
                except rex.RayError:
                    continue
                progress.task_done(meta["stage"], sum(link["rows"] for link in meta.get("links", ())))
            progress.tick()
            if not waiting or query.deadline is not None and query.deadline.expired():
                return
            waiting = ray.wait(waiting, num_returns=len(waiting), timeout=0.25)[1]

    def _stage_payload(self, spec: StageSpec):
        """The encoded stage a task receives: bytes inline in the task (small) or one object in the
        store (large); cached per StageSpec object, which a plan-cache hit hands over again."""
        return self._stage_entry(spec)[1]

    def _consumed(self, spec: StageSpec) -> tuple[int, ...]:
        return self._stage_entry(spec)[2]

    def _stage_entry(self, spec: StageSpec) -> tuple:
        entry = self._stages.get(id(spec))
        if entry is not None and entry[0] is spec:
            self._stages.move_to_end(id(spec))
            return entry
        encoded = encode_stage(spec)
        payload = encoded if len(encoded) <= INLINE_STAGE_BYTES else ray.put(encoded)
        entry = self._stages[id(spec)] = (spec, payload, consumed(spec.root))
        while len(self._stages) > STAGE_CACHE:
            self._stages.popitem(last=False)
        return entry

    def _collect_profile(self, profile, metas: list[dict]) -> None:
        """The leaves' operator counters and link counters into the QueryProfile (EXPLAIN ANALYZE)."""
        for meta in metas:
            profile.add_counters(meta["stage"], meta.get("operators", {}))
            if meta["kind"] is not None:
                profile.add_links(meta["stage"], meta["links"],
                                  self.num_leaves if meta["kind"] == "broadcast" else 1)

    def _settle(self, query: "_Query", deadline: Optional[Deadline], limit_s: float = 60.0) -> bool:
        """Wait until every task of a failed attempt has ended (at most ``limit_s`` and the deadline)."""
        refs = [out[0] for _, out in query.submitted]
        remaining = deadline.remaining() if deadline is not None else None
        _, pending = ray.wait(refs, num_returns=len(refs), timeout=limit_s if remaining is None else min(limit_s, remaining))
        return not pending

    def _completed(self, tasks: dict) -> dict:
        """The tasks of a failed attempt that completed: (stage id, task) -> their output refs."""
        done = {}
        for key, out in tasks.items():
            try:
                ray.get(out[0], timeout=0)
            except (rex.RayError, rex.GetTimeoutError):
                continue
            done[key] = out
        return done

    def _wait_alive(self, leaf: int, deadline: Optional[Deadline], error: Exception, timeout: float = 60.0) -> None:
        """Wait until Ray has restarted ``leaf`` (its constructor reopened its durable partitions)."""
        until = time.monotonic() + (timeout if deadline is None or deadline.timeout_ms is None
                                    else min(timeout, deadline.remaining()))
        while True:
            try:
                ray.get(self.leaves[leaf].ping.remote(), timeout=max(0.1, until - time.monotonic()))
                return
            except (rex.RayError, rex.GetTimeoutError):
                if time.monotonic() >= until:
                    if deadline is not None and deadline.expired():
                        raise deadline.error() from None
                    raise error from None
                time.sleep(0.1)

    def _run(self, query: "_Query", stages: Sequence[StageSpec], params: tuple) -> pa.Table:
        deadline = query.deadline
        outputs: dict[int, Output] = {}        # each stage's payload refs per destination (cluster.scheduler)

        def inputs_of(spec: StageSpec, task: int) -> tuple[list, list]:
            layout, refs = [], []
            for stage_id, chosen in task_inputs(self._consumed(spec), task, outputs):
                layout.append((stage_id, len(chosen)))
                refs.extend(ref.data for ref in chosen)
            return layout, refs

        transport_options = TransportOptions(**self.transport_options)
        for spec in submission_order(stages, self._consumed):
            kind = spec.output_kind
            exchange = ExchangeSpec.of(spec, self.num_leaves, self.partitions_per_leaf)
            destinations = exchange.destinations
            timed = deadline is not None and deadline.timeout_ms is not None
            if timed:
                deadline.check()
            task_spec = TaskSpec(query.query_id, spec.stage_id, 0, self.num_partitions, params, exchange,
                                 transport=transport_options, profile=query.profile is not None,
                                 epoch=query.epoch, floor=self._floor(),
                                 deadline=(deadline.timeout_ms, deadline.remaining()) if timed else None)
            if where(spec) is Where.AGGREGATOR:
                # once-only on the aggregator (this driver): its inputs come here
                layout, refs = inputs_of(spec, 0)
                inputs: dict[int, list[pa.RecordBatch]] = {}
                payloads = iter(self._fetch(query, refs, final=kind is None))
                for stage_id, count in layout:
                    for payload in itertools.islice(payloads, count):
                        inputs.setdefault(stage_id, []).extend(transport.decode(payload))
                task_profile = TaskProfile(spec.stage_id, spec.root) if query.profile is not None else None
                batches = self.aggregator.task_batches(spec, 0, self.num_partitions, params, inputs,
                                                       task_profile, deadline)
                if kind is None:
                    table = _table(list(batches), spec.root.schema)
                else:
                    sent, links = route_payloads(batches, spec.root.schema, exchange, transport_options)
                progress = query_progress.get()
                if progress is not None:
                    progress.task_done(spec.stage_id, table.num_rows if kind is None
                                       else sum(link["rows"] for link in links))
                if task_profile is not None:        # the task has ended
                    query.profile.add_task(task_profile)
                    if kind is not None:
                        query.profile.add_links(spec.stage_id, links,
                                                self.num_leaves if kind == "broadcast" else 1)
                if kind is None:
                    return table
                outputs[spec.stage_id] = Output(kind, tuple((PartitionRef(d, ray.put(payload)),)
                                                            for d, payload in enumerate(sent)))
                continue

            stage_ref = self._stage_payload(spec)
            per_destination: list[list] = [[] for _ in range(destinations)]
            for task in tasks_of(spec, self.num_leaves):
                leaf = self.leaves[task]          # a once-only stage here reads reference tables: leaf 0
                layout, refs = inputs_of(spec, task)
                out = query.reuse.get((spec.stage_id, task)) if not any(r in query.rerun for r in refs) else None
                if out is None:
                    out = leaf.run_task.options(num_returns=1 + destinations).remote(
                        dataclasses.replace(task_spec, task=task, inputs=tuple(layout)), stage_ref, *refs)
                    query.submitted.append((leaf, out))
                    query.rerun.update(out)
                query.tasks[(spec.stage_id, task)] = out
                query.meta_refs.append(out[0])
                for d in range(destinations):
                    per_destination[d].append(out[1 + d])
            if kind is None:                # a final stage that reads reference tables ran on leaf 0
                batches = [b for payload in self._fetch(query, per_destination[0], final=True)
                           for b in transport.decode(payload)]
                return _table(batches, spec.root.schema)
            outputs[spec.stage_id] = Output(kind, tuple(tuple(PartitionRef(d, ref) for ref in refs)
                                                        for d, refs in enumerate(per_destination)))
        raise CanopyInternalError("a plan without a final stage")

    def cancel(self, query_id: str, submitted: list) -> None:
        """Stop a query on every leaf: queued tasks are cancelled, running ones stop at their next batch.
        Waits (briefly) for the running ones, so the next query does not queue behind them."""
        for leaf in self.leaves:
            leaf.cancel.remote(query_id)
        for _, out in submitted:
            for ref in out:
                try:
                    ray.cancel(ref)
                except (TypeError, ValueError, rex.RayError):
                    pass        # already finished, or not cancellable (a return ref that is not the first)
        if submitted:
            ray.wait([out[0] for _, out in submitted], num_returns=len(submitted), timeout=10)
            _retrieve_errors(submitted)

    # -- errors -----------------------------------------------------------------------------------
    def _get(self, refs, timeout: Optional[float] = None, deadline: Optional[Deadline] = None):
        """``ray.get`` with Ray's errors as the engine's; ``deadline``: a query's statement_timeout
        (waiting past it raises its error; the caller cancels the query's tasks)."""
        waited_for_deadline = deadline is not None and deadline.timeout_ms is not None
        if waited_for_deadline:
            timeout = deadline.remaining()
        if deadline is not None and deadline.cancelled is not None and timeout is None:
            self._wait_watching(refs, deadline)
        try:
            return ray.get(refs, timeout=timeout)
        except rex.GetTimeoutError:
            # the wait was the deadline's remaining time: Ray's clock may end it a hair before ours does
            if waited_for_deadline or deadline is not None and deadline.expired():
                raise deadline.error() from None
            raise self._translate(rex.GetTimeoutError()) from None
        except rex.RayError as error:
            raise self._translate(error) from None

    @staticmethod
    def _wait_watching(refs, deadline: Deadline, poll_s: float = 0.1) -> None:
        """Wait for ``refs`` in short slices, so a KILL QUERY (the deadline's ``cancelled``) stops the
        driver's wait at once; ``deadline.check()`` raises then, and the caller cancels the leaves' tasks."""
        pending = list(dict.fromkeys(refs)) if isinstance(refs, (list, tuple)) else [refs]   # unique for ray.wait
        while pending:
            _, pending = ray.wait(pending, num_returns=len(pending), timeout=poll_s)
            if pending:
                deadline.check()

    def _translate(self, error: BaseException) -> BaseException:
        """A Ray failure as the engine's error: a leaf's own error as raised there, a dead leaf as an
        ExecutionError naming it."""
        if isinstance(error, rex.RayTaskError):
            cause = getattr(error, "cause", None)
            if isinstance(cause, rex.RayError):
                return self._translate(cause)
            if isinstance(cause, Exception):
                return cause
            return ExecutionError(f"a leaf task failed: {_first_line(str(error))}")
        if isinstance(error, rex.RayActorError):
            self._forget()
            actor_id = getattr(error, "actor_id", None)
            leaf = self._leaf_by_actor.get(actor_id if isinstance(actor_id, str) else getattr(actor_id, "hex", lambda: "")())
            who = f"leaf {leaf} ({self.name}-leaf-{leaf})" if leaf is not None else "a leaf"
            if self._data is not None:
                message = (f"{who} died during the query; Ray restarts it (max_restarts={self.max_restarts}) and "
                           f"it recovers its partitions from {self._data.path}: retry the query")
            else:
                message = (f"{who} died during the query; Ray restarts it (max_restarts={self.max_restarts}), but "
                           f"its in-memory partitions are lost: drop and reload the tables it held")
            return _LeafDied(message, leaf) if leaf is not None else ExecutionError(message)
        if isinstance(error, (rex.ObjectLostError, rex.OwnerDiedError)):
            return ExecutionError(f"exchange data of the query was lost (a leaf or node died): {_first_line(str(error))}")
        if isinstance(error, rex.GetTimeoutError):
            return ExecutionError("the leaves did not answer in time")
        return ExecutionError(f"Ray failed: {_first_line(str(error))}")

    # -- lifecycle --------------------------------------------------------------------------------
    def shutdown(self) -> None:
        """Non-detached: end the actors. Detached: save the catalog and disconnect (see ``destroy``).
        Either way a data_dir is released for the next driver."""
        if self._closed:
            return
        self._closed = True
        try:
            if self.detached:
                try:
                    self._save_catalog()
                except rex.RayError:
                    pass        # the registry is gone: the catalog it held goes with it
                return
            self._stop_leaves()
            self._finalizer()
        finally:
            self._release_data()

    def destroy(self) -> None:
        """End a deployment's actors (a detached one too); in-memory data is gone, a data_dir stays."""
        self._closed = True
        self._stop_leaves()
        _kill([*self.leaves, self._registry])
        self._release_data()

    def _stop_leaves(self) -> None:
        """Durable leaves close their files first (no statement is in flight under the write lock);
        a leaf that does not answer is killed anyway, which recovery on the next open covers."""
        if self._data is None:
            return
        with self._write_lock:
            try:
                ray.get([leaf.close.remote() for leaf in self.leaves], timeout=30)
            except rex.RayError:
                pass

    def _release_data(self) -> None:
        if self._data is not None:
            self._data.close()
            self._data = None


LOAD_CHUNK_ROWS = 65536     # rows a streaming load gathers for one leaf before sending them as one chunk
LOAD_MAX_OUTSTANDING = 8    # a leaf's unacknowledged chunks before the load waits for the oldest


@dataclasses.dataclass
class LoadStats:
    """What one streaming load sent to the leaves (``RayRunner.last_load``)."""
    rows: int = 0
    chunks: int = 0
    chunks_compressed: int = 0
    bytes_raw: int = 0           # Arrow IPC bytes of the chunks
    bytes_sent: int = 0          # bytes of the payloads (LZ4 where compressed)
    waits: int = 0               # times the load waited for a leaf with LOAD_MAX_OUTSTANDING chunks unacknowledged
    compression: str = "adaptive"

    @property
    def ratio(self) -> float:
        return self.bytes_raw / self.bytes_sent if self.bytes_sent else 1.0


class _RayLoad(LoadWriter):
    """A load that streams to the leaves as it is read. Each added block is routed here on the driver;
    the pieces bound for one leaf wait until they make LOAD_CHUNK_ROWS rows, then go to that leaf as one
    chunk: a :mod:`cluster.transport` payload (Arrow IPC frames, one per partition) sent with
    ``stage_chunk``, which the leaf decodes and keeps under the load's id. The commit sends what is left,
    and one transaction (``RayRunner._write``) prepares the staged rows on every leaf together with those
    of ``add_related`` tables (a pipeline batch's file marks), ``on_commit`` running inside it: the rows
    and their marks become durable and visible together; ``abort`` drops the staged chunks.

    Adaptive LZ4 (MemSQL 6.7's rule, per leaf): a chunk goes compressed when more than
    ``transport.COMPRESS_AFTER`` chunks to its leaf are still unacknowledged (the link, or the leaf,
    is the bottleneck), raw otherwise; the runner's ``compression="always"|"never"`` forces either. A
    leaf with LOAD_MAX_OUTSTANDING chunks unacknowledged makes the load wait for the oldest, which bounds
    the driver's memory. ``throttle_bytes_per_s`` (the runner's transport option, a benchmark mode)
    models each leaf's link: a chunk occupies it for ``bytes / rate`` and counts as unacknowledged until
    it is across and the leaf has answered.
    """

    def __init__(self, runner: RayRunner, table: TableDef):
        super().__init__(runner, table)
        self.load_id = uuid.uuid4().hex
        leaves = runner.num_leaves
        options = runner.transport_options
        self.stats = LoadStats(compression=options["compression"])
        self._throttle = options["throttle_bytes_per_s"]
        self._held: list[dict[Optional[int], list]] = [{} for _ in range(leaves)]     # per leaf: partition -> pieces
        self._held_rows = [0] * leaves
        self._next_seq = [0] * leaves           # the number the next chunk to each leaf gets
        self._sent_rows = [0] * leaves          # rows each leaf holds for this load (sent, or on their way)
        self._unacked: list[collections.deque] = [collections.deque() for _ in range(leaves)]  # (ref, across at)
        self._wire_free_at = [0.0] * leaves     # throttled: when each leaf's modelled link is idle again

    # -- adding -------------------------------------------------------------------------------------
    def add(self, data: "pa.Table | pa.RecordBatch") -> None:
        if isinstance(data, pa.RecordBatch):
            data = pa.Table.from_batches([data])
        for leaf, pieces in self.runner._place(self.table, data).items():
            held = self._held[leaf]
            for key, batches in pieces.items():
                held.setdefault(key, []).extend(batches)
                self._held_rows[leaf] += sum(b.num_rows for b in batches)
            if self._held_rows[leaf] >= LOAD_CHUNK_ROWS:
                self._send(leaf)
        self.rows += data.num_rows

    def _send(self, leaf: int) -> None:
        """Send what waits for ``leaf`` as chunks of about LOAD_CHUNK_ROWS rows (each partition's pieces
        concatenated, then cut into as many slices as chunks, so partitions stay in their order)."""
        held, rows = self._held[leaf], self._held_rows[leaf]
        if not rows:
            return
        self._held[leaf], self._held_rows[leaf] = {}, 0
        keys = list(held)
        whole = [pa.concat_batches(held[key]) if len(held[key]) > 1 else held[key][0] for key in keys]
        del held
        count = max(1, round(rows / LOAD_CHUNK_ROWS))
        for part in range(count):
            slices = [(key, batch.slice(batch.num_rows * part // count,
                                        batch.num_rows * (part + 1) // count - batch.num_rows * part // count))
                      for key, batch in zip(keys, whole)]
            slices = [(key, batch) for key, batch in slices if batch.num_rows]
            self._send_chunk(leaf, [key for key, _ in slices], [batch for _, batch in slices])

    def _send_chunk(self, leaf: int, keys: list, batches: list[pa.RecordBatch]) -> None:
        self._reap(leaf)
        mode = self.stats.compression
        compress = mode == "always" or mode == "adaptive" and len(self._unacked[leaf]) > transport.COMPRESS_AFTER
        payload, counters = transport.encode_payload(batches, self.table.arrow_schema, compress)
        seq = self._next_seq[leaf]
        self._next_seq[leaf] += 1
        ref = self.runner.leaves[leaf].stage_chunk.remote(self.load_id, self.table.table_id, seq, keys, payload)
        del payload
        across = 0.0
        if self._throttle:
            across = self._wire_free_at[leaf] = \
                max(self._wire_free_at[leaf], time.monotonic()) + counters.bytes_sent / self._throttle
        self._unacked[leaf].append((ref, across))
        self._sent_rows[leaf] += counters.rows
        stats = self.stats
        stats.chunks += 1
        stats.chunks_compressed += counters.batches_compressed > 0
        stats.bytes_raw += counters.bytes_raw
        stats.bytes_sent += counters.bytes_sent
        while len(self._unacked[leaf]) >= LOAD_MAX_OUTSTANDING:
            stats.waits += 1
            self._settle_oldest(leaf)

    def _reap(self, leaf: int) -> None:
        """Forget the chunks to ``leaf`` that are across and acknowledged (raising a leaf's error)."""
        unacked = self._unacked[leaf]
        if not unacked:
            return
        ready, _ = ray.wait([ref for ref, _ in unacked], num_returns=len(unacked), timeout=0)
        ready = set(ready)
        now = time.monotonic()
        while unacked and unacked[0][0] in ready and unacked[0][1] <= now:
            self.get(unacked.popleft()[0], "sending")

    def _settle_oldest(self, leaf: int) -> None:
        ref, across = self._unacked[leaf].popleft()
        self.get(ref, "sending")
        time.sleep(max(0.0, across - time.monotonic()))

    def get(self, refs, doing: str):
        """``ray.get`` of the load's calls; a leaf that died fails the load naming it."""
        try:
            return ray.get(refs)
        except rex.RayActorError as error:
            self.runner._forget()           # cached counts: the leaf may have lost rows
            actor_id = getattr(error, "actor_id", None)
            leaf = self.runner._leaf_by_actor.get(
                actor_id if isinstance(actor_id, str) else getattr(actor_id, "hex", lambda: "")())
            who = f"leaf {leaf} ({self.runner.name}-leaf-{leaf})" if leaf is not None else "a leaf"
            raise ExecutionError(f"{who} died while {doing} the load into {self.table.name}: nothing of the load "
                                 f"is visible; run it again once Ray has restarted the leaf") from None
        except rex.RayError as error:
            raise self.runner._translate(error) from None

    # -- savepoints ---------------------------------------------------------------------------------
    def savepoint(self) -> tuple:
        held = [{key: (len(pieces), sum(b.num_rows for b in pieces)) for key, pieces in by_key.items()}
                for by_key in self._held]
        return self.rows, list(self._next_seq), list(self._sent_rows), held

    def rollback_to(self, savepoint: tuple) -> None:
        """Back to ``savepoint``: for a leaf that was sent chunks since, the pieces that waited here then
        went first in those chunks; the leaf keeps that many rows of each partition and drops the rest.
        Otherwise the waiting pieces are cut back here."""
        self.rows, marks, sent_rows, held = savepoint
        for leaf, mark in enumerate(marks):
            if self._next_seq[leaf] > mark:
                keep = {key: rows for key, (_, rows) in held[leaf].items()}
                ref = self.runner.leaves[leaf].rollback_staged.remote(self.load_id, mark, keep)
                self._unacked[leaf].append((ref, 0.0))
                self._held[leaf], self._held_rows[leaf] = {}, 0
                self._sent_rows[leaf] = sent_rows[leaf] + sum(keep.values())
            else:
                self._held[leaf] = {key: self._held[leaf][key][:count] for key, (count, _) in held[leaf].items()}
                self._held_rows[leaf] = sum(rows for _, rows in held[leaf].values())
                self._sent_rows[leaf] = sent_rows[leaf]

    def add_related(self, table: TableDef, data: pa.Table) -> None:
        self._related.append((table, self.runner._place(table, data), False))

    # -- the end ------------------------------------------------------------------------------------
    def staged_rows(self) -> dict[int, int]:
        """{leaf: rows it must hold} for every leaf that was sent chunks."""
        return {leaf: self._sent_rows[leaf] for leaf in range(self.runner.num_leaves) if self._next_seq[leaf]}

    def commit(self, on_commit=None) -> int:
        for leaf in range(self.runner.num_leaves):
            self._send(leaf)
        for leaf in range(self.runner.num_leaves):
            while self._unacked[leaf]:
                self._settle_oldest(leaf)
        related, self._related = self._related, []
        self.runner._write(related, on_commit=on_commit, staged=self)
        self.stats.rows = self.rows
        self.runner.last_load = self.stats
        return self.rows

    def abort(self) -> None:
        """Drop what the leaves hold of the load (the abort of its transaction drops its staged chunks
        too, should ``_write`` have started it) and what waits here."""
        for leaf in range(self.runner.num_leaves):
            if self._next_seq[leaf]:
                self.runner.leaves[leaf].drop_staged.remote(self.load_id)
        self._held = [{} for _ in range(self.runner.num_leaves)]
        self._unacked = [collections.deque() for _ in range(self.runner.num_leaves)]
        self._related = []
        self.rows = 0


class _LeafDied(ExecutionError):
    """A leaf actor died under a query (``leaf``: its index); Ray restarts it."""

    def __init__(self, message: str, leaf: int):
        super().__init__(message)
        self.leaf = leaf


@dataclasses.dataclass
class _Query:
    """One attempt at running a query's stages."""
    query_id: str
    deadline: Optional[Deadline]
    reuse: dict                                     # (stage id, task) -> outputs of a previous attempt
    profile: object = None                          # a QueryProfile to fill (EXPLAIN ANALYZE)
    epoch: Optional[int] = None                     # the snapshot epoch its scans read (cluster.versions)
    metas: Optional[list] = None                    # every task's meta, once fetched
    submitted: list = dataclasses.field(default_factory=list)      # (leaf, output refs) sent this attempt
    meta_refs: list = dataclasses.field(default_factory=list)      # each task's meta, in stage order
    tasks: dict = dataclasses.field(default_factory=dict)          # (stage id, task) -> output refs
    rerun: set = dataclasses.field(default_factory=set)            # refs made by this attempt
    reported: set = dataclasses.field(default_factory=set)         # meta refs told to the progress bar


def _kill(actors) -> None:
    # At interpreter exit Ray may already be shut down; ray.kill would then start a fresh local Ray
    # (auto-init) while logging and modules are being torn down, which has crashed the process.
    # A shut-down Ray has taken its actors with it, so there is nothing left to kill.
    if not ray.is_initialized():
        return
    for actor in actors:
        try:
            ray.kill(actor, no_restart=True)
        except (rex.RayError, ValueError):
            pass                # already dead


def _find_actor(name: str, namespace: str):
    try:
        return ray.get_actor(name, namespace=namespace)
    except ValueError:
        return None


def _table(batches: list[pa.RecordBatch], schema: pa.Schema) -> pa.Table:
    return pa.Table.from_batches([conform(b, schema) for b in batches], schema=schema)


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else text


def _catalog_state(catalog: Catalog) -> bytes:
    # the system tables are functions of this process's live state: each driver registers its own
    return pickle.dumps({k: v for k, v in vars(catalog).items() if k not in ("_lock", "system_tables")},
                        protocol=5)


def _catalog_from_state(state: bytes) -> Catalog:
    """The saved catalog; table ids made by this process continue after the deployment's largest."""
    catalog = Catalog()
    vars(catalog).update(pickle.loads(state))
    largest = max((t.table_id for tables in catalog._databases.values() for t in tables.values()), default=0)
    if next(engine.catalog._table_ids) <= largest:
        engine.catalog._table_ids = itertools.count(largest + 1)
    return catalog
