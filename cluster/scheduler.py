"""The one scheduler: how a query's stages become tasks, for both runners.

A plan arrives as StageSpecs, producers before consumers (engine.exec.stages). :class:`Scheduler` walks
them once per query: in :func:`submission_order`, each stage's tasks placed by :func:`where` (one per
leaf, or once on the aggregator or on leaf 0), described by frozen :class:`cluster.specs.TaskSpec`s, each
reading the routed outputs of the stages it consumes (:func:`task_inputs`): a stage's output is an
:class:`Output`, a tuple of :class:`cluster.specs.PartitionRef` per destination, and a consuming task
``t`` reads destination ``t`` (every task reads destination 0 of a broadcast or a gather). The scheduler
also owns the query's life: its deadline, checked before every stage; cancellation of every task when
anything fails or the user interrupts; one retry when a leaf died under it and its executor can bring it
back (:meth:`Executor.recover`).

An :class:`Executor` only executes: the embedded runner (:mod:`cluster.local`) runs a stage's tasks on
its thread pool and keeps the routed batches in memory; the Ray runner (:mod:`cluster.ray_runner`)
submits them to leaf actors, which run them with the same :class:`cluster.leaf.Leaf` code and route
their output with :mod:`cluster.exchange`, and hands object refs on.
"""
from __future__ import annotations

import dataclasses
import enum
import itertools
import os
from abc import ABC, abstractmethod
from typing import Any, Callable, Optional, Sequence

import pyarrow as pa

from cluster.specs import ExchangeSpec, PartitionRef, TaskSpec
from engine.errors import CanopyInternalError, ExecutionError
from engine.exec.memory import statement_memory_limit
from engine.core.deadline import Deadline, statement_deadline
from engine.exec.progress import query_progress
from engine.exec.statement_warnings import statement_sink
from engine.runner import Runner
from engine.exec.operators.base import PhysicalOperator
from engine.exec.stages import StageSpec, consumed_exchanges

# Query ids (per attempt): unique across processes by a random prefix drawn once, within one by a
# counter (a getrandom system call per query was measurable on a SELECT 1 round trip)
_QUERY_PREFIX = os.urandom(8).hex()
_QUERY_NUMBERS = itertools.count(1)


class Where(enum.Enum):
    LEAVES = "leaves"           # a parallel stage: one task on every leaf, over its partitions
    LEAF0 = "leaf 0"            # once-only, reading reference tables: leaf 0 holds a copy of each
    AGGREGATOR = "aggregator"   # once-only, reading only exchanges: the driver, no data of its own


def where(stage: StageSpec) -> Where:
    if stage.parallel:
        return Where.LEAVES
    return Where.LEAF0 if stage.scans_tables else Where.AGGREGATOR


def tasks_of(stage: StageSpec, num_leaves: int) -> range:
    """The task indexes of a stage: a parallel stage's task ``i`` runs on leaf ``i``."""
    return range(num_leaves) if stage.parallel else range(1)


@dataclasses.dataclass(frozen=True)
class Output:
    """A stage's routed output: ``refs[d]``, the refs bound for destination ``d`` (a keep's
    destination ``d`` is task ``d``'s own output, read by task ``d`` of each consumer)."""
    kind: str
    refs: tuple[tuple[PartitionRef, ...], ...]

    def for_task(self, task: int) -> tuple[PartitionRef, ...]:
        if self.kind == "broadcast" or self.kind == "gather":
            return self.refs[0]
        return self.refs[task] if task < len(self.refs) else ()


def task_inputs(consumed: Sequence[int], task: int, outputs: dict[int, Output]) -> list[tuple[int, tuple]]:
    """``[(producing stage id, its refs for this task)]`` for each stage the task's stage consumes."""
    return [(stage_id, outputs[stage_id].for_task(task)) for stage_id in consumed]


def consumed(op: PhysicalOperator) -> tuple[int, ...]:
    """The exchange ids a stage reads (its ExchangeSourceExec leaves)."""
    return consumed_exchanges(op)


def submission_order(stages: Sequence[StageSpec],
                     consumed_of: Optional[Callable[[StageSpec], Sequence[int]]] = None) -> list[StageSpec]:
    """Stages by their depth (longest chain of exchanges below them), keeping the plan's order among
    equals. A Ray leaf runs its tasks in the order they were submitted, so a stage that reads only
    tables (a broadcast's build side) must not queue behind one waiting for another stage's output.
    ``consumed_of``: a stage's consumed exchange ids (a runner may cache them per plan)."""
    consumed_of = consumed_of or (lambda spec: spec.consumed)
    depth: dict[int, int] = {}
    for spec in stages:                     # producers come before their consumers
        depth[spec.stage_id] = 1 + max((depth[i] for i in consumed_of(spec)), default=-1)
    return sorted(stages, key=lambda spec: depth[spec.stage_id])


class LeafDied(ExecutionError):
    """A leaf died under a query (``leaf``: its index); its executor may bring it back and retry."""

    def __init__(self, message: str, leaf: int):
        super().__init__(message)
        self.leaf = leaf


@dataclasses.dataclass
class Query:
    """One query as the scheduler and its executor share it. ``query_id`` is per attempt (a retry is a
    new query to the leaves); ``state``: the executor's own (pinned snapshots, an epoch, its tasks)."""
    params: tuple
    deadline: Optional[Deadline]
    profile: Any = None                 # an engine.exec.profile.QueryProfile to fill (EXPLAIN ANALYZE)
    progress: Any = None                # an engine.exec.progress bar to tell of every task
    query_id: str = ""
    attempt: int = 0
    state: Any = None
    warnings: Any = None                # the engine.exec.statement_warnings sink of the statement


# task -> [(producing stage id, the refs it reads)], as task_inputs gives them
Inputs = dict[int, list[tuple[int, tuple[PartitionRef, ...]]]]


class Executor(ABC):
    """What the scheduler needs of a runner: run the tasks of one stage where :func:`where` places
    them, and stop them. ``run_stage`` may return before the tasks end (Ray: refs to outputs still
    being made); ``run_final`` returns the query's result."""
    num_leaves: int
    partitions_per_leaf: int

    def consumed(self, stage: StageSpec) -> tuple[int, ...]:
        """The exchange ids ``stage`` reads."""
        return stage.consumed

    def open(self, query: Query, stages: Sequence[StageSpec]) -> None:
        """Before the first attempt: pin what the query reads."""

    def start_attempt(self, query: Query) -> None:
        """Before each attempt (``query.query_id`` is new)."""

    @abstractmethod
    def run_stage(self, query: Query, stage: StageSpec, tasks: Sequence[TaskSpec], inputs: Inputs) -> Output:
        """Run (or submit) ``tasks``; their output routed by ``tasks[i].exchange``."""

    @abstractmethod
    def run_final(self, query: Query, stage: StageSpec, tasks: Sequence[TaskSpec], inputs: Inputs) -> pa.Table:
        """Run the final stage's one task; the query's result."""

    def complete(self, query: Query) -> None:
        """The attempt succeeded: collect what it measured (profile counters)."""

    @abstractmethod
    def cancel_query(self, query: Query) -> None:
        """Stop every task of the current attempt (queued ones never start, running ones stop at their
        next batch), so no task outlives the query."""

    def recover(self, query: Query, error: LeafDied) -> bool:
        """A leaf died under the attempt: bring it back and keep what can be reused for one more
        attempt (True), or not (False: the error stands)."""
        return False

    def close(self, query: Query) -> None:
        """After the last attempt, whatever its outcome."""


class Scheduler:
    """Runs queries' stages on an :class:`Executor`: the stage walk, task specs, input routing, the
    deadline, cancellation and the one retry, written once for both runners."""

    def __init__(self, executor: Executor):
        self.executor = executor
        self.retries = 0            # queries that succeeded on a retry after a leaf died

    def run(self, stages: Sequence[StageSpec], params: Sequence = (), profile=None) -> pa.Table:
        executor = self.executor
        query = Query(tuple(params), statement_deadline.get(), profile, query_progress.get(),
                      warnings=statement_sink.get())
        if query.progress is not None:
            query.progress.start(sum(executor.num_leaves if s.parallel else 1 for s in stages), len(stages))
        executor.open(query, stages)
        mark = query.warnings.mark() if query.warnings is not None else None
        try:
            for attempt in range(2):
                query.query_id, query.attempt = f"{_QUERY_PREFIX}-{next(_QUERY_NUMBERS)}", attempt
                if profile is not None:             # a retry counts the whole query again
                    profile.operators.clear()
                    profile.exchanges.clear()
                    profile.spilled.clear()
                if mark is not None:                # and warns again (SHOW WARNINGS counts it once)
                    query.warnings.rollback(mark)
                executor.start_attempt(query)
                try:
                    table = self._walk(query, stages)
                    executor.complete(query)
                    self.retries += attempt
                    return table
                except LeafDied as error:
                    if attempt or not executor.recover(query, error):
                        executor.cancel_query(query)
                        if attempt:
                            raise ExecutionError(f"{error} (the query was already retried once after leaf "
                                                 f"{error.leaf} restarted)") from None
                        raise
                except BaseException:
                    # Ctrl-C, statement_timeout, a leaf's error: stop the query's other tasks too
                    executor.cancel_query(query)
                    raise
        finally:
            executor.close(query)
        raise CanopyInternalError("unreachable")

    def _walk(self, query: Query, stages: Sequence[StageSpec]) -> pa.Table:
        executor = self.executor
        leaves, per_leaf = executor.num_leaves, executor.partitions_per_leaf
        deadline = query.deadline
        memory_limit = statement_memory_limit.get()      # each task's memory pool (engine.exec.memory)
        outputs: dict[int, Output] = {}
        for stage in submission_order(stages, executor.consumed):
            if deadline is not None:
                deadline.check()
            timed = deadline is not None and deadline.timeout_ms is not None
            exchange = ExchangeSpec.of(stage, leaves, per_leaf)
            reads = executor.consumed(stage)
            inputs = {t: task_inputs(reads, t, outputs) for t in tasks_of(stage, leaves)}
            tasks = [TaskSpec.make(query_id=query.query_id, stage_id=stage.stage_id, task=t,
                                   num_partitions=leaves * per_leaf, params=query.params, exchange=exchange,
                                   inputs=tuple((stage_id, len(refs)) for stage_id, refs in inputs[t]),
                                   profile=query.profile is not None,
                                   deadline=(deadline.timeout_ms, deadline.remaining()) if timed else None,
                                   memory_limit=memory_limit)
                     for t in inputs]
            if stage.output_kind is None:
                return executor.run_final(query, stage, tasks, inputs)
            outputs[stage.stage_id] = executor.run_stage(query, stage, tasks, inputs)
        raise CanopyInternalError("a plan without a final stage")


class ScheduledRunner(Runner, Executor):
    """A runner whose queries go through the one :class:`Scheduler`, itself the executor."""

    @property
    def scheduler(self) -> Scheduler:
        scheduler = self.__dict__.get("_scheduler")
        if scheduler is None:
            scheduler = self.__dict__["_scheduler"] = Scheduler(self)
        return scheduler

    def run(self, stages: Sequence[StageSpec], params: Sequence = (), profile=None) -> pa.Table:
        """``profile``: an engine.exec.profile.QueryProfile that receives every task's operator
        counters and every exchange's rows and bytes (EXPLAIN ANALYZE)."""
        return self.scheduler.run(stages, params, profile)
