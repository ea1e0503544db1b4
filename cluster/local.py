"""The embedded runner: an aggregator and N leaves in this process.

Queries go through the one scheduler (:mod:`cluster.scheduler`), as on the Ray runner; this runner is its
executor with threads: a stage's tasks run on a thread pool (the Arrow kernels release the GIL, so leaves
use the machine's cores), or one after the other on the calling thread when the stage is small (a small
stage on the leaves as one task over every leaf's partitions where that answers the same), and
their output is routed in memory by :func:`cluster.exchange.route_batches`. Rows are placed on
partitions by :mod:`cluster.placement`; a statement's writes are one transaction of the commit protocol
both runners share (:mod:`cluster.writes`), over each leaf's :class:`cluster.leaf_writes.LeafWrites`
called in this process (:mod:`cluster.local_writes`).
"""
from __future__ import annotations

import os
import signal
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager
import dataclasses
from dataclasses import dataclass
from typing import Optional, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from cluster.exchange import route_batches
from cluster.exchange_buffer import Chain, ExchangeBuffer
from cluster.leaf import Leaf, LeafStorage
from cluster.load import LoadStats, StreamingLoad
from cluster.local_writes import LocalLeaves
from cluster.placement import Placement
from cluster.scheduler import Inputs, Output, Query, ScheduledRunner, Where, where
from cluster.specs import ExchangeSpec, PartitionRef, TaskSpec
from cluster.writes import write
from engine.catalog import Catalog, TableDef
from engine.errors import CanopyInternalError
from engine.core.deadline import Deadline
from engine.exec.answer import AnswerCollector, SpilledAnswer
from engine.exec.memory import MemoryPool, statement_memory_limit
from engine.exec.profile import TaskProfile
from engine.exec.operators.base import conform
from engine.exec.statement_warnings import Warnings
from engine.exec.stages import StageSpec, decode_stage, encode_stage, scans_of
from engine.storage.columnstore import Committer


_CHECK_STAGE_CODEC = os.environ.get("CANOPY_CHECK_STAGE_CODEC") == "1"
# A stage reading fewer rows than this runs its leaf tasks one after the other on the calling thread:
# handing a task to the pool and waiting for it costs ~20-40 us per task on the 2-core reference
# machine, more than the tasks of a small stage gain from running side by side (workload j:
# `python -m benchmarks.plan_cache`). Big stages still use every core.
INLINE_STAGE_ROWS = 50_000
# Such a small stage on the leaves runs as ONE task over every partition of every leaf when that
# gives the same answer (no input kept on its leaf, no output to keep there): the leaves' tasks
# would each set up every operator (a hash table per build side, a partial aggregate, a sort) and
# push their own batches through it. The plan is the same (a Ray leaf runs its own partitions).


class _Flag:
    """Set once, read by every task of a query (``threading.Event`` without waiting, which costs
    more to make than a small query takes to run)."""
    __slots__ = ("_set",)

    def __init__(self) -> None:
        self._set = False

    def set(self) -> None:
        self._set = True

    def is_set(self) -> bool:
        return self._set


def _interruptible(deadline: Optional[Deadline], interrupted: _Flag) -> Deadline:
    """The statement's deadline (or none) that also ends once ``interrupted`` is set (Ctrl-C)."""
    if deadline is None:
        return Deadline(None, cancelled=interrupted.is_set)
    outer = deadline.cancelled
    cancelled = interrupted.is_set if outer is None else (lambda: interrupted.is_set() or outer())
    return Deadline(deadline.timeout_ms, deadline.at, cancelled=cancelled, where=deadline.where)


@dataclass
class _LocalQuery:
    """The embedded executor's state of one query (``cluster.scheduler.Query.state``)."""
    interrupted: _Flag                  # set on Ctrl-C or any failure: the pool's tasks stop at a batch
    snapshots: dict                     # leaf id -> {(table id, partition): snapshot} (see _pin)
    # memory_limit for what waits between stages (the exchange buffers): past it, on disk
    buffers: MemoryPool
    kept: set = dataclasses.field(default_factory=set)     # ids of the stages whose output stays on its leaf


class LocalRunner(ScheduledRunner):
    def __init__(self, leaves: int = 2, partitions_per_leaf: int = 4, threads: Optional[int] = None,
                 data_dir: Optional[str] = None, **storage_options):
        """``data_dir``: keep tables in durable columnstores there (reopened and recovered if it exists);
        ``storage_options`` (``segment_rows``, ``flush_rows``, ...) tune them. None: in memory."""
        self.num_leaves = leaves
        self.partitions_per_leaf = partitions_per_leaf
        self._data = None
        storages = [LeafStorage() for _ in range(leaves)]
        self._committer = Committer(None)      # statements as transactions over the partition stores
        if data_dir is not None:
            from engine.data_directory import DataDirectory     # durable runners only
            self._data = DataDirectory(data_dir, leaves, partitions_per_leaf, storage_options)
            self._committer = self._data.committer
            storages = [LeafStorage(self._data.leaf_dir(i), self._committer, self._data.options)
                        for i in range(leaves)]
        elif storage_options:
            raise ValueError(f"unknown runner options {sorted(storage_options)} (storage options need data_dir)")
        self.leaves = [Leaf(i, range(i * partitions_per_leaf, (i + 1) * partitions_per_leaf), storages[i])
                       for i in range(leaves)]
        # The aggregator runs once-only stages; it hosts no partitions.
        self.aggregator = Leaf(-1, ())
        self._threads = threads or max(2, min(self.num_partitions, os.cpu_count() or 1))
        self._pool = ThreadPoolExecutor(max_workers=self._threads, thread_name_prefix="canopy-leaf")
        self.placement = Placement(leaves, partitions_per_leaf)
        self.last_load: Optional[LoadStats] = None   # what the latest committed load staged on the leaves
        self._leaves_writes = LocalLeaves(self)     # the leaves' LeafWrites, as the commit protocol reaches them
        self._closed = False
        # The aggregator's catalog; "canopy" is the database a new session starts in.
        self.catalog = Catalog()
        self.catalog.create_database("canopy")
        self.statistics_store = None if self._data is None else self._data.statistics    # kept across restarts
        if self._data is not None:
            self.catalog = self._data.catalog
            tables = self._data.catalog.all_tables()
            for table in tables:
                self._create_storage(table, self._data.committed)
            stores = [s for leaf in self.leaves for s in leaf.storage.all_stores()]
            self._data.finish_recovery(stores, {t.table_id for t in tables})
            # segments left mostly deleted (or small) by the last session are compacted now, not
            # at the table's next write
            self._committer.maintain(stores)

    def leaf_of(self, partition: int) -> Leaf:
        return self.leaves[partition // self.partitions_per_leaf]

    # -- tables -----------------------------------------------------------------------------------
    def create_table(self, table: TableDef) -> None:
        self._create_storage(table)

    def _create_storage(self, table: TableDef, committed: frozenset = frozenset()) -> None:
        schema = table.arrow_schema
        for leaf in self.leaves:
            leaf.storage.create(table.table_id, schema, [None] if table.reference else leaf.partitions,
                                table.sort_key, committed, table.index_names)

    def drop_table(self, table: TableDef) -> None:
        for leaf in self.leaves:
            leaf.storage.drop(table.table_id)

    # -- writes: the commit protocol (cluster.writes) over the leaves' LeafWrites, in this process ----
    def insert(self, table: TableDef, data: pa.Table) -> int:
        if data.num_rows == 0:
            return 0
        write(self._leaves_writes, [(table, self._leaves_writes.place(table, data), False)])
        return data.num_rows

    def begin_load(self, table: TableDef) -> StreamingLoad:
        return StreamingLoad(self, table)

    def _write(self, writes, on_commit=None, delete=None, staged: Optional[StreamingLoad] = None) -> int:
        """One transaction of the commit protocol over the leaves; ``staged``: a streaming load whose
        rows the leaves already hold (its load id is the transaction's id)."""
        if staged is None:
            return write(self._leaves_writes, writes, on_commit, delete)
        return write(self._leaves_writes, writes, on_commit, delete, staged=staged.staged_rows(),
                     txn=staged.load_id, get=staged.get)

    def replace_table(self, table: TableDef, data: Optional[pa.Table]) -> None:
        self.replace_tables([(table, data)])

    def replace_tables(self, changes) -> None:
        # every store is replaced, the empty ones with nothing
        place = self._leaves_writes.place
        write(self._leaves_writes, [(table, self.placement.replacing(table, place(table, data) if data is not None else {}),
                                     True) for table, data in changes])

    def delete_rows(self, table: TableDef, matcher, rewrite=None) -> int:
        """DELETE / UPDATE in place: storage marks the rows (columnstores: delete bitmaps) under the
        exclusive commit lock; an UPDATE's new rows are routed like an INSERT's and prepared in the same
        transaction. Returns the rows matched (a reference table's counted once)."""
        return write(self._leaves_writes, [], delete=(table, matcher, rewrite))

    def optimize_table(self, table: TableDef) -> None:
        stores = [s for leaf in self.leaves for _, s in leaf.storage.stores_of(table.table_id)]
        with self._committer.lock.exclusive():
            for store in stores:
                if hasattr(store, "flush"):
                    store.flush()
                    store.merge(force=True)

    def row_count(self, table: TableDef) -> int:
        if table.reference:
            return self.leaves[0].storage.store(table.table_id, None).row_count()
        return sum(leaf.storage.store(table.table_id, p).row_count()
                   for leaf in self.leaves for p in leaf.partitions)

    def distinct_count(self, table: TableDef, column: str) -> int:
        stores = ([self.leaves[0].storage.store(table.table_id, None)] if table.reference else
                  [leaf.storage.store(table.table_id, p) for leaf in self.leaves for p in leaf.partitions])
        chunks = [b.column(0) for store in stores for b in store.scan([column])]
        if not chunks:
            return 0
        return pc.count_distinct(pa.chunked_array(chunks), mode="only_valid").as_py()

    def map_column_partitions(self, table: TableDef, column: str, fn):
        keys = [(self.leaves[0], None)] if table.reference else \
            [(leaf, p) for leaf in self.leaves for p in leaf.partitions]
        field = table.arrow_schema.field(column)

        def one(key):
            leaf, partition = key
            chunks = [b.column(0) for b in leaf.storage.store(table.table_id, partition).scan([column])]
            return fn(pa.chunked_array(chunks, type=field.type))

        return list(self._pool.map(one, keys))

    def map_partitions(self, table: TableDef, fn):
        keys = [(self.leaves[0], None)] if table.reference else \
            [(leaf, p) for leaf in self.leaves for p in leaf.partitions]
        return list(self._pool.map(lambda key: fn(key[0].storage.store(table.table_id, key[1])), keys))

    # -- queries: the scheduler's executor (cluster.scheduler) ------------------------------------
    def open(self, query: Query, stages: Sequence[StageSpec]) -> None:
        if self._closed:
            raise CanopyInternalError("the runner has been shut down")
        # statement_timeout, and Ctrl-C: every task checks the deadline per batch, so an interrupt in
        # this thread stops the tasks running on the pool within one batch instead of after them
        interrupted = _Flag()
        query.deadline = _interruptible(query.deadline, interrupted)
        query.state = _LocalQuery(interrupted, self._pin(stages),
                                  MemoryPool(statement_memory_limit.get(), where=" (between stages)"))

    def close(self, query: Query) -> None:
        state = query.state
        if state is not None:               # the exchange buffers' spill files go with the query
            if query.profile is not None:
                query.profile.add_spilled(state.buffers.spilled_by)
            state.buffers.close()

    def cancel_query(self, query: Query) -> None:
        query.state.interrupted.set()

    def run_stage(self, query: Query, stage: StageSpec, tasks, inputs) -> Output:
        if stage.output_kind == "keep":
            query.state.kept.add(stage.stage_id)
        results = self._run_tasks(query, stage, tasks, inputs, buffered=True)
        routed = self._route_output(query, stage, results)
        if query.profile is not None:
            query.profile.add_exchange(stage.stage_id, routed)
        return Output(stage.output_kind, tuple((PartitionRef(d, routed[d], routed[d].rows, routed[d].nbytes),)
                                               for d in range(len(routed))))

    def run_final(self, query: Query, stage: StageSpec, tasks, inputs) -> "pa.Table | SpilledAnswer":
        schema = stage.root.schema
        # the answer of a client's query (or a CTE's) goes to disk past memory_limit (engine.exec.answer)
        answer = AnswerCollector.for_query(schema, statement_memory_limit.get()) if len(tasks) == 1 else None
        if answer is None:
            result = [b for out in self._run_tasks(query, stage, tasks, inputs) for b in out]
            return pa.Table.from_batches([conform(b, schema) for b in result], schema=schema)
        try:
            self._run_tasks(query, stage, tasks, inputs, answer=answer)
            result = answer.result()
        except BaseException:
            answer.close()
            raise
        if query.profile is not None:
            query.profile.add_spilled(answer.spilled_by)
        return result

    def _pin(self, stages: Sequence[StageSpec]) -> dict[int, dict]:
        """leaf id -> {(table id, partition): snapshot} of every store the stages scan, taken while no
        statement is making its rows visible: the query sees each statement in every partition or in
        none (a half-applied INSERT ... SELECT, LOAD DATA or DELETE is never read)."""
        tables = {table_id for stage in stages for table_id, _ in stage.scanned}
        if not tables:
            return {}
        with self._committer.published:
            return {leaf.leaf_id: {(table_id, partition): store.snapshot()
                                   for table_id in tables for partition, store in leaf.storage.stores_of(table_id)}
                    for leaf in self.leaves}

    def _run_tasks(self, query: Query, stage: StageSpec, tasks: Sequence[TaskSpec],
                   inputs: Inputs, buffered: bool = False, answer: Optional[AnswerCollector] = None) -> list:
        """Run ``tasks`` (their inputs as ``scheduler.task_inputs`` gives them) where ``scheduler.where``
        places them: one per leaf, or once on the aggregator or leaf 0. Each task's output: a list of
        batches, or with ``buffered`` an ExchangeBuffer of the query (it spills past memory_limit), or
        with ``answer`` (one task) nothing: the collector keeps the batches."""
        # What a remote leaf would receive; in process the spec itself serves (operators are
        # immutable). Tests set CANOPY_CHECK_STAGE_CODEC=1 so every plan proves it can travel.
        stage = decode_stage(encode_stage(stage)) if _CHECK_STAGE_CODEC else stage
        profile, deadline, progress = query.profile, query.deadline, query.progress
        snapshots = query.state.snapshots
        placed = where(stage)
        small = len(tasks) == 1 or self._stage_input_rows(stage, inputs) < INLINE_STAGE_ROWS
        whole = small and placed is Where.LEAVES and len(tasks) > 1 and stage.output_kind != "keep" \
            and not any(sid in query.state.kept for t in inputs for sid, _ in inputs[t])
        ran = tasks[:1] if whole else tasks
        task_profiles = {t.task: TaskProfile(stage.stage_id, stage.root) for t in ran} if profile is not None else {}
        # each task's warnings apart, merged in task order once they have all ended (SHOW WARNINGS
        # lists them alike whichever thread ran first)
        task_warnings = {t.task: Warnings() for t in ran} if query.warnings is not None else {}

        def task(spec: TaskSpec) -> list[pa.RecordBatch]:
            t = spec.task
            if whole:
                # every leaf's partitions and every task's inputs (a broadcast's, a gather's once)
                leaf, pinned = self._whole_leaf(), _all_snapshots(snapshots, self.leaves)
                exchange_inputs = _all_inputs(inputs)
            else:
                leaf = self.leaves[t] if placed is Where.LEAVES else self.leaves[0] if placed is Where.LEAF0 \
                    else self.aggregator
                pinned = (snapshots or {}).get(leaf.leaf_id)
                # read as the task goes (a spilled buffer from disk), not gathered into memory first
                exchange_inputs = {sid: Chain(ref.data for ref in refs) for sid, refs in inputs[t]}
            batches = leaf.task_batches(stage, spec, exchange_inputs, task_profiles.get(t), deadline, pinned,
                                        hold_output=answer if answer is not None else not buffered,
                                        warnings=task_warnings.get(t))
            if answer is not None:
                deque(batches, maxlen=0)    # the collector keeps them as they come
                out = []
            else:
                out = ExchangeBuffer(query.state.buffers).extend(batches) if buffered else list(batches)
            if progress is not None:
                progress.task_done(stage.stage_id, out.rows if buffered else answer.rows if answer is not None
                                   else sum(b.num_rows for b in out))
            return out

        if small:
            outputs = [task(t) for t in ran]
            if whole and progress is not None:      # the leaves' other tasks: their work is done too
                for _ in tasks[1:]:
                    progress.task_done(stage.stage_id, 0)
        else:
            outputs = self._run_parallel(task, tasks, query.state.interrupted, progress)
        for task_profile in task_profiles.values():     # the tasks have ended: no writer is left
            profile.add_task(task_profile)
        for t in sorted(task_warnings):
            query.warnings.merge(task_warnings[t].state())
        return outputs

    def _whole_leaf(self) -> Leaf:
        """A leaf hosting every partition of every leaf (their stores read where they are): a small
        stage's one task."""
        whole = self.__dict__.get("_whole")
        if whole is None:
            whole = self.__dict__["_whole"] = Leaf(0, range(self.num_partitions), _AllLeaves(self))
        return whole

    def _stage_input_rows(self, stage: StageSpec, inputs: dict) -> int:
        """An upper bound of the rows a stage reads: the exchange outputs routed to its tasks (known
        up front by their refs) plus the stored rows of the tables it scans (a metadata count; zone
        maps may skip most of them). It errs towards running in parallel."""
        rows = sum(ref.rows for task in inputs.values() for _, refs in task for ref in refs)
        for scan in scans_of(stage):
            # an equality on the shard key reads the partitions its constants hash to, no other
            only = scan.key_partitions(self.num_partitions)
            for leaf in self.leaves[:1] if scan.replicated else self.leaves:
                rows += sum(store.row_count() for partition, store in leaf.storage.stores_of(scan.table_id)
                            if only is None or partition in only)
            if rows >= INLINE_STAGE_ROWS:
                break
        return rows

    def _run_parallel(self, task, tasks, interrupted: _Flag, progress=None) -> list[list[pa.RecordBatch]]:
        """Run ``tasks`` on the pool and wait for every one of them, whatever happens (Ctrl-C, a task's
        error): no task of the stage is left queued or running once this returns or raises."""
        def guarded(item):
            if interrupted.is_set():        # queued when the query was interrupted: never starts
                raise KeyboardInterrupt
            return task(item)

        futures: list = []
        outputs, first_error = [], None
        # Ctrl-C only marks the query interrupted (its tasks stop at their next batch, the queued ones
        # never start) until every task has ended; it is raised then. A KeyboardInterrupt raised here
        # at once could land inside ThreadPoolExecutor.submit (the work item queued, its future not
        # yet returned) or between two waits, and leave a task running after the query and its buffers.
        with _sigint_deferred(interrupted.set):
            try:
                for t in tasks:
                    futures.append(self._pool.submit(guarded, t))
            except BaseException as error:  # noqa: BLE001 - re-raised below, once the queued tasks ended
                interrupted.set()
                first_error = error
            for future in futures:          # wait for all, so no task outlives the query
                while True:
                    try:
                        # a watched query wakes up 4 times a second so its progress bar appears on time
                        outputs.append(future.result(timeout=0.25 if progress is not None else None))
                        break
                    except FutureTimeout:
                        progress.tick()
                    except BaseException as error:  # noqa: BLE001 - re-raised below
                        first_error = first_error or error
                        break
        if first_error is not None:
            raise first_error
        return outputs

    def _route_output(self, query: Query, stage: StageSpec, outputs: list[ExchangeBuffer]) -> dict:
        """Where the output of a stage goes, keyed by the consuming task (a leaf, or task 0): an
        ExchangeBuffer or a Chain of them each."""
        if stage.output_kind == "keep":         # each task's output stays with the same task (leaf)
            return {t: out for t, out in enumerate(outputs)}
        exchange = ExchangeSpec.of(stage, self.num_leaves, self.partitions_per_leaf)
        if exchange.kind in ("gather", "broadcast"):      # every output, read where it is
            chained = Chain(outputs)
            return {d: chained for d in range(1 if exchange.kind == "gather" else exchange.num_leaves)}
        batches = Chain(outputs)
        # a large exchange held in memory splits on the leaf pool (the kernels release the GIL); a
        # spilled one streams from disk through the split (the pool's map would read it all at once)
        large = len(batches) > 1 and batches.rows >= INLINE_STAGE_ROWS and not batches.spilled
        routed = route_batches(batches, exchange, self._map_on_pool(query) if large else map,
                               lambda: ExchangeBuffer(query.state.buffers))
        for out in outputs:                 # routed: the producing tasks' buffers are read no more
            out.discard()
        return routed

    def _map_on_pool(self, query: Query):
        """``map`` on the leaf pool, under Ctrl-C as a stage's tasks: every call has ended when it returns
        (the pool's own ``map`` leaves its queued calls behind when interrupted)."""
        return lambda fn, items: self._run_parallel(fn, list(items), query.state.interrupted)

    def shutdown(self) -> None:
        self._closed = True
        self._pool.shutdown(wait=True)
        if self._data is not None:
            # the background merger first: a merge about to install waits for the commit lock's shared
            # side, which the exclusive hold below would keep from it while close() joins its thread
            self._committer.close()
            with self._committer.lock.exclusive():      # no statement is between prepare and apply
                for leaf in self.leaves:
                    for store in leaf.storage.all_stores():
                        store.close()
                self._data.close()


class _AllLeaves:
    """The storage of every leaf as one (:meth:`LocalRunner._whole_leaf`): a partition's store is on
    the leaf that hosts it, a reference table's copy on leaf 0."""

    def __init__(self, runner: LocalRunner):
        self._runner = runner

    def _leaf(self, partition: Optional[int]) -> Leaf:
        return self._runner.leaves[0] if partition is None else self._runner.leaf_of(partition)

    def store(self, table_id: int, partition: Optional[int]):
        return self._leaf(partition).storage.store(table_id, partition)

    def scan(self, table_id: int, partition: Optional[int], *args, **kwargs):
        return self._leaf(partition).storage.scan(table_id, partition, *args, **kwargs)


def _all_snapshots(snapshots: Optional[dict], leaves: Sequence[Leaf]) -> dict:
    """{(table id, partition): snapshot} of every leaf's pinned stores (a reference copy's: leaf 0's)."""
    merged: dict = {}
    for leaf in reversed(leaves):
        merged.update((snapshots or {}).get(leaf.leaf_id) or {})
    return merged


def _all_inputs(inputs: Inputs) -> dict:
    """{stage id: Chain} of every task's inputs, each routed output read once (a broadcast's and a
    gather's are the same for every task)."""
    chains: dict = {}
    seen: set = set()
    for t in sorted(inputs):
        for sid, refs in inputs[t]:
            parts = chains.setdefault(sid, [])
            for ref in refs:
                if id(ref.data) not in seen:
                    seen.add(id(ref.data))
                    parts.append(ref.data)
    return {sid: Chain(parts) for sid, parts in chains.items()}


@contextmanager
def _sigint_deferred(on_sigint):
    """For the block, SIGINT (Ctrl-C) calls ``on_sigint()`` instead of raising KeyboardInterrupt; it is
    delivered to its own handler once the block has ended. Python runs signal handlers only in the main
    thread: elsewhere there is nothing to defer."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGINT) is None:
        yield                               # (None: a handler not set from Python, which cannot be put back)
        return
    held: list = []

    def hold(signum, frame):
        held.append(signum)
        on_sigint()
    previous = signal.signal(signal.SIGINT, hold)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if held:
            signal.raise_signal(signal.SIGINT)


