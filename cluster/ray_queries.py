"""The Ray runner's half of :class:`cluster.scheduler.Executor`: a stage's tasks submitted to the leaf
actors, the aggregator's once-only stages run in this driver.

A query's stages are submitted all at once; Ray starts each task when its inputs exist. A parallel stage
runs one task per leaf; a task returns its meta plus one transport payload per destination (per leaf for
a repartition, one for gather/broadcast), and the consuming tasks take those object refs as arguments, so
exchange data moves leaf -> object store -> leaf and reaches the driver only for the final stage and for
once-only stages that read no table (they run here, on :attr:`aggregator`).

Every task of every stage, a retry's too, reads the snapshot epoch published when the query started
(:mod:`cluster.versions`). When a leaf dies under a query and its partitions are durable, the
scheduler's one retry reuses the tasks that had completed (their outputs are objects in the store, owned
by this driver); the dead leaf's tasks and the ones that consumed their outputs run again. A query that
fails, runs past ``statement_timeout`` or is interrupted is cancelled on every leaf: queued tasks are
cancelled, running ones stop at their next batch.

:class:`RayQueries` is a mixin of :class:`cluster.ray_runner.RayRunner`, which provides the leaves, the
epochs and ``_get`` (Ray's errors as the engine's).
"""
from __future__ import annotations

import collections
import dataclasses
import itertools
import time
from typing import Optional, Sequence

import pyarrow as pa
import ray
import ray.exceptions as rex

from cluster import transport
from cluster.exchange import route_payloads
from cluster.scheduler import Executor, Inputs, LeafDied, Output, Query, Where, where
from cluster.specs import PartitionRef, TaskSpec, TransportOptions
from engine.errors import CanopyInternalError
from engine.core.deadline import Deadline
from engine.exec.answer import AnswerCollector
from engine.exec.operators.base import conform
from engine.exec.profile import TaskProfile
from engine.exec.statement_warnings import Warnings
from engine.exec.stages import StageSpec, encode_stage

INLINE_STAGE_BYTES = 64 * 1024     # an encoded stage up to this size travels inside each task's arguments
STAGE_CACHE = 256                   # encoded stages kept by the driver


class RayQueries(Executor):
    """Submits stages' tasks to ``self.leaves``; see the module's docstring."""

    def _init_queries(self) -> None:
        self.last_profile: list[dict] = []
        # id(StageSpec) -> (the spec, its payload for tasks, the exchanges it reads): stage encoding and
        # the object-store put are per plan, not per query (the spec keeps its id from being reused)
        self._stages: "collections.OrderedDict[int, tuple]" = collections.OrderedDict()

    # -- the scheduler's executor ------------------------------------------------------------------
    def open(self, query: Query, stages: Sequence[StageSpec]) -> None:
        if self._closed:
            raise CanopyInternalError("the runner has been shut down")
        # every task of every stage, a retry's too, reads this epoch
        query.state = _Query(epoch=self._start_reading())

    def close(self, query: Query) -> None:
        if query.state is not None:
            self._stop_reading(query.state.epoch)

    def start_attempt(self, query: Query) -> None:
        previous = query.state
        query.state = _Query(epoch=previous.epoch, reuse=previous.completed)

    def complete(self, query: Query) -> None:
        state = query.state
        self.last_profile = state.metas if state.metas is not None else \
            self._get(state.meta_refs, deadline=query.deadline)
        if query.profile is not None:
            self._collect_profile(query.profile, self.last_profile)
        if query.warnings is not None:      # the tasks' warnings (SHOW WARNINGS), in (stage, task) order
            # one state per (stage, task): a task of a failed attempt reused by the retry counts once
            tasks = {(meta["stage"], meta["task"]): meta["warnings"] for meta in self.last_profile
                     if "warnings" in meta}
            tasks.update(state.warnings)
            for key in sorted(tasks):
                query.warnings.merge(tasks[key])

    def cancel_query(self, query: Query) -> None:
        self.cancel(query.query_id, query.state.submitted)

    def recover(self, query: Query, error: LeafDied) -> bool:
        """Durable partitions only (a restarted in-memory leaf has lost its own): the other leaves' tasks
        run on, and what they complete is not done again."""
        if self._data is None:
            return False
        settled = self._settle(query.state, query.deadline)
        query.state.completed = self._completed(query.state.tasks)
        if not settled:
            self.cancel_query(query)
        self._wait_alive(error.leaf, query.deadline, error)
        return True

    def consumed(self, stage: StageSpec) -> tuple[int, ...]:
        return self._stage_entry(stage)[2]

    def run_stage(self, query: Query, stage: StageSpec, tasks: Sequence[TaskSpec], inputs: Inputs) -> Output:
        tasks = self._leaf_tasks(query, tasks)
        if where(stage) is Where.AGGREGATOR:
            return self._run_here(query, stage, tasks[0], inputs[0])
        per_destination = self._submit(query, stage, tasks, inputs)
        if stage.output_kind == "keep":     # each task's output stays on its leaf, for the same task
            per_destination = [[ref] for ref in per_destination[0]]
        return Output(stage.output_kind, tuple(tuple(PartitionRef(d, ref) for ref in refs)
                                               for d, refs in enumerate(per_destination)))

    def run_final(self, query: Query, stage: StageSpec, tasks: Sequence[TaskSpec], inputs: Inputs) -> pa.Table:
        tasks = self._leaf_tasks(query, tasks)
        if where(stage) is Where.AGGREGATOR:
            return self._run_here(query, stage, tasks[0], inputs[0])
        # a final stage that reads reference tables runs on leaf 0
        refs = self._submit(query, stage, tasks, inputs)[0]
        batches = [b for payload in self._fetch(query, refs, final=True) for b in transport.decode(payload)]
        return _table(batches, stage.root.schema)

    def _leaf_tasks(self, query: Query, tasks: Sequence[TaskSpec]) -> list[TaskSpec]:
        """The scheduler's task specs with what a leaf adds: the epoch its scans read, the floor of the
        epochs still read, how its payloads are encoded."""
        options = TransportOptions(**self.transport_options)
        floor = self._floor()
        return [dataclasses.replace(task, epoch=query.state.epoch, floor=floor, transport=options)
                for task in tasks]

    def _run_here(self, query: Query, stage: StageSpec, task: TaskSpec, inputs) -> "Output | pa.Table":
        """A once-only stage on the aggregator (this driver): its inputs come here."""
        kind = stage.output_kind
        decoded: dict[int, list[pa.RecordBatch]] = {}
        payloads = iter(self._fetch(query, [ref.data for _, refs in inputs for ref in refs], final=kind is None))
        for stage_id, count in task.inputs:
            for payload in itertools.islice(payloads, count):
                decoded.setdefault(stage_id, []).extend(transport.decode(payload))
        task_profile = TaskProfile(stage.stage_id, stage.root) if query.profile is not None else None
        warnings = Warnings() if query.warnings is not None else None
        # the answer of a client's query (or a CTE's) goes to disk past memory_limit (engine.exec.answer)
        answer = AnswerCollector.for_query(stage.root.schema, task.memory_limit) if kind is None else None
        batches = self.aggregator.task_batches(stage, task, decoded, task_profile, query.deadline,
                                               hold_output=answer if answer is not None else True, warnings=warnings)
        if answer is not None:
            try:
                collections.deque(batches, maxlen=0)    # the collector keeps them as they come
                table = answer.result()
            except BaseException:
                answer.close()
                raise
            if query.profile is not None:
                query.profile.add_spilled(answer.spilled_by)
        elif kind is None:
            table = _table(list(batches), stage.root.schema)
        else:
            sent, links = route_payloads(batches, stage.root.schema, task.exchange, task.transport)
        if warnings is not None and (warnings.total or warnings.constants):
            query.state.warnings[(stage.stage_id, task.task)] = warnings.state()     # merged at complete
        if query.progress is not None:
            query.progress.task_done(stage.stage_id, table.num_rows if kind is None
                                     else sum(link["rows"] for link in links))
        if task_profile is not None:        # the task has ended
            query.profile.add_task(task_profile)
            if kind is not None:
                query.profile.add_links(stage.stage_id, links, self.num_leaves if kind == "broadcast" else 1)
        if kind is None:
            return table
        return Output(kind, tuple((PartitionRef(d, ray.put(payload)),) for d, payload in enumerate(sent)))

    def _submit(self, query: Query, stage: StageSpec, tasks: Sequence[TaskSpec], inputs: Inputs) -> list[list]:
        """Submit the tasks to their leaves (a task of a failed attempt that completed and reads nothing
        made again is reused); each destination's output refs."""
        state = query.state
        stage_ref = self._stage_payload(stage)
        destinations = tasks[0].exchange.destinations
        per_destination: list[list] = [[] for _ in range(destinations)]
        for task in tasks:
            leaf = self.leaves[task.task]       # a once-only stage here reads reference tables: leaf 0
            refs = [ref.data for _, chosen in inputs[task.task] for ref in chosen]
            out = state.reuse.get((stage.stage_id, task.task)) if not any(r in state.rerun for r in refs) else None
            if out is None:
                out = leaf.run_task.options(num_returns=1 + destinations).remote(task, stage_ref, *refs)
                state.submitted.append((leaf, out))
                state.rerun.update(out)
            state.tasks[(stage.stage_id, task.task)] = out
            state.meta_refs.append(out[0])
            for d in range(destinations):
                per_destination[d].append(out[1 + d])
        return per_destination

    def _fetch(self, query: Query, refs: list, final: bool) -> list:
        """The payloads ``refs``; for the final stage with every task's meta in the same ``ray.get``
        (they are ready by then: every task feeds the final stage), saving a round trip per query."""
        state = query.state
        if query.progress is not None:
            self._watch(query, refs, query.progress)
        if not final:
            return self._get(refs, deadline=query.deadline)
        values = self._get(list(refs) + state.meta_refs, deadline=query.deadline)
        state.metas = values[len(refs):]
        return values[:len(refs)]

    def _watch(self, query: Query, refs: list, progress) -> None:
        """Wait for ``refs`` a quarter second at a time, telling ``progress`` of each task that ended
        (its meta: stage and rows sent). Errors are left for the ``ray.get`` that follows to raise."""
        state = query.state
        waiting = list(refs)
        while True:
            metas = [ref for ref in state.meta_refs if ref not in state.reported]
            ended = ray.wait(metas, num_returns=len(metas), timeout=0)[0] if metas else []
            for ref in ended:
                state.reported.add(ref)
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

    def _stage_entry(self, spec: StageSpec) -> tuple:
        entry = self._stages.get(id(spec))
        if entry is not None and entry[0] is spec:
            self._stages.move_to_end(id(spec))
            return entry
        encoded = encode_stage(spec)
        payload = encoded if len(encoded) <= INLINE_STAGE_BYTES else ray.put(encoded)
        entry = self._stages[id(spec)] = (spec, payload, spec.consumed)
        while len(self._stages) > STAGE_CACHE:
            self._stages.popitem(last=False)
        return entry

    def _collect_profile(self, profile, metas: list[dict]) -> None:
        """The leaves' operator counters and link counters into the QueryProfile (EXPLAIN ANALYZE)."""
        for meta in metas:
            profile.add_counters(meta["stage"], meta.get("operators", {}))
            profile.add_spilled(meta.get("spilled", {}))
            profile.peak = max(profile.peak, meta.get("peak", 0))
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

    def cancel(self, query_id: str, submitted: list) -> None:
        """Stop a query on every leaf: running tasks stop at their next batch, queued ones at once when
        they start (the leaf keeps the query's mark). Waits (briefly) for them, so the next query does
        not queue behind them.

        The tasks are not also ``ray.cancel``-ed: an actor runs its callers' tasks in sequence-number
        order, and cancelling one still waiting for its inputs on this side leaves a gap the actor waits
        on ("Timed out waiting for seq_no ..."), after which it cancels everything queued on it, the
        next query's tasks included (seen as LeafDied after Ctrl-C under load)."""
        for leaf in self.leaves:
            leaf.cancel.remote(query_id)
        if submitted:
            ray.wait([out[0] for _, out in submitted], num_returns=len(submitted), timeout=10)
            _retrieve_errors(submitted)


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


@dataclasses.dataclass
class _Query:
    """The Ray executor's state of one attempt at a query (``cluster.scheduler.Query.state``)."""
    epoch: Optional[int] = None                     # the snapshot epoch its scans read (cluster.versions)
    reuse: dict = dataclasses.field(default_factory=dict)      # (stage id, task) -> outputs of a previous attempt
    completed: dict = dataclasses.field(default_factory=dict)  # its own tasks that completed, once it failed
    metas: Optional[list] = None                    # every task's meta, once fetched
    submitted: list = dataclasses.field(default_factory=list)      # (leaf, output refs) sent this attempt
    meta_refs: list = dataclasses.field(default_factory=list)      # each task's meta, in stage order
    tasks: dict = dataclasses.field(default_factory=dict)          # (stage id, task) -> output refs
    rerun: set = dataclasses.field(default_factory=set)            # refs made by this attempt
    reported: set = dataclasses.field(default_factory=set)         # meta refs told to the progress bar
    warnings: dict = dataclasses.field(default_factory=dict)       # (stage id, task) -> a driver task's warnings


def _table(batches: list[pa.RecordBatch], schema: pa.Schema) -> pa.Table:
    return pa.Table.from_batches([conform(b, schema) for b in batches], schema=schema)
