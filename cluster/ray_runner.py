"""The Ray runner: leaves as Ray actors, the driver as the aggregator.

Shape: N named :class:`cluster.actors.LeafActor`s (``<name>-leaf-<i>``), spread over the cluster's nodes,
each owning ``partitions_per_leaf`` partitions of every sharded table and a copy of every reference table
in its own process, plus a named :class:`cluster.actors.AggregatorActor` (``<name>-aggregator``) that keeps
the deployment's shape and catalog so a second driver can reconnect by name. The driver holds the catalog
and plays the aggregator: it places inserted rows (:mod:`cluster.placement`) and runs the once-only
stages that read no table.

Queries go through the one scheduler (:mod:`cluster.scheduler`); this runner is its executor through
:class:`cluster.ray_queries.RayQueries` (tasks submitted to the leaf actors, exchange data moving leaf ->
object store -> leaf). A load streams (:mod:`cluster.load`, the driver both runners share): the driver places each parsed
block and sends every leaf its rows in chunks as it goes (:mod:`cluster.ray_writes`: transport payloads),
which the leaves stage until the load's transaction.

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

Failures: Ray errors become :mod:`engine.errors` types here (``_translate``). Ray restarts a leaf that
dies (``max_restarts``). With a ``data_dir`` the restarted leaf reopens its partitions from disk, keeping
the statements whose commit record is in the log, and a query it died under is retried once (the
scheduler's retry, :meth:`RayQueries.recover`); in memory it has lost them: the query fails with an
``ExecutionError`` (an ``OperationalError``) naming the leaf, and queries over its tables fail with an
error saying so until they are dropped and reloaded.
"""
from __future__ import annotations

import collections
import dataclasses
import itertools
import pickle
import threading
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
from cluster.actors import AggregatorActor, DurableLeaf, LeafActor
from cluster.leaf import Leaf
from cluster.placement import Placement
from cluster.load import LoadStats, StreamingLoad
from cluster.ray_queries import RayQueries
from cluster.ray_start import init_ray
from cluster.ray_writes import RayLeaves
from cluster.scheduler import LeafDied, ScheduledRunner
from cluster.writes import Write, write
from engine.catalog import Catalog, TableDef
from engine.errors import ExecutionError
from engine.core.deadline import Deadline
from engine.fair_locks import FairMutex
from engine.data_directory import DataDirectory


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


class RayRunner(RayQueries, ScheduledRunner):
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
        self.last_load: Optional[LoadStats] = None   # what the latest committed load sent the leaves
        self._init_queries()
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
        self._leaves_writes = RayLeaves(self)     # the leaves as the commit protocol reaches them

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

    @property
    def retries(self) -> int:
        """Queries that succeeded on a retry after a leaf died (cluster.scheduler)."""
        return self.scheduler.retries

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
                                                table.sort_key, table.index_names)
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

    def begin_load(self, table: TableDef) -> StreamingLoad:
        return StreamingLoad(self, table)

    def replace_table(self, table: TableDef, data: Optional[pa.Table]) -> None:
        self.replace_tables([(table, data)])

    def replace_tables(self, changes) -> None:
        # every store is replaced, the empty ones with nothing
        self._write([(table, self.placement.replacing(table, self._place(table, data) if data is not None else {}),
                      True) for table, data in changes])

    def delete_rows(self, table: TableDef, matcher, rewrite=None) -> int:
        """DELETE / UPDATE in place, one transaction: every leaf marks the rows ``matcher`` selects in
        its partitions (delete bitmaps when durable); for an UPDATE the matched rows (only those) come
        here, ``rewrite`` makes their new versions, which are routed as an INSERT's and prepared in the
        same transaction. Returns the rows matched (a reference table's counted once)."""
        return self._write([], delete=(table, matcher, rewrite))

    def _place(self, table: TableDef, data: pa.Table) -> dict[int, dict[Optional[int], list]]:
        """{leaf: {partition (None: the reference copy): [batches]}}, routed here on the driver."""
        return self.placement.by_leaf(table, data)

    def _write(self, writes: Sequence[Write], on_commit=None, delete=None, staged: Optional[StreamingLoad] = None) -> int:
        """One transaction of the commit protocol (:func:`cluster.writes.write`) over the leaf actors
        (:class:`cluster.ray_writes.RayLeaves`); ``staged``: a streaming load whose rows the leaves
        already hold (its load id is the transaction's id)."""
        for table, *_ in [*writes, *([delete] if delete is not None else []),
                          *([(staged.table,)] if staged is not None else [])]:
            self._forget(table.table_id)
        if staged is None:
            return write(self._leaves_writes, writes, on_commit, delete)
        return write(self._leaves_writes, writes, on_commit, delete, staged=staged.staged_rows(),
                     txn=staged.load_id, get=staged.get)

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
            return LeafDied(message, leaf) if leaf is not None else ExecutionError(message)
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
