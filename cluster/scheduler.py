"""The stage graph of one query, as both runners walk it.

A plan arrives as StageSpecs, producers before consumers (engine.exec.stages). The scheduler decides for
every stage where its tasks run (:func:`where`), in which order stages are handed out
(:func:`submission_order`), and which outputs each task reads (:func:`task_inputs`): a stage's output is
an :class:`Output`, one list of :class:`cluster.specs.PartitionRef` per destination, and a consuming
task ``t`` reads destination ``t`` of each stage it consumes (every task reads destination 0 of a
broadcast or a gather). The runners only execute: the embedded one runs a stage's tasks on its thread
pool and keeps the routed batches in memory, the Ray one submits them to leaf actors as object refs.
"""
from __future__ import annotations

import dataclasses
import enum
from typing import Callable, Optional, Sequence

from cluster.specs import PartitionRef
from engine.exec.operators.base import PhysicalOperator
from engine.exec.operators.exchange import ExchangeSourceExec
from engine.exec.stages import StageSpec


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
    """A stage's routed output: ``refs[d]``, the refs bound for destination ``d``."""
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
    """The exchange ids a stage reads (its ExchangeSourceExec leaves), found the way ``split_stages``
    walks operators: through every operator-valued dataclass field."""
    found: set[int] = set()

    def walk(node) -> None:
        if isinstance(node, ExchangeSourceExec):
            found.add(node.exchange_id)
            return
        for f in dataclasses.fields(node):
            value = getattr(node, f.name)
            if isinstance(value, PhysicalOperator):
                walk(value)
            elif isinstance(value, tuple):
                for v in value:
                    if isinstance(v, PhysicalOperator):
                        walk(v)

    walk(op)
    return tuple(sorted(found))


def submission_order(stages: Sequence[StageSpec],
                     consumed_of: Optional[Callable[[StageSpec], Sequence[int]]] = None) -> list[StageSpec]:
    """Stages by their depth (longest chain of exchanges below them), keeping the plan's order among
    equals. A Ray leaf runs its tasks in the order they were submitted, so a stage that reads only
    tables (a broadcast's build side) must not queue behind one waiting for another stage's output.
    ``consumed_of``: a stage's consumed exchange ids (a runner may cache them per plan)."""
    consumed_of = consumed_of or (lambda spec: consumed(spec.root))
    depth: dict[int, int] = {}
    for spec in stages:                     # producers come before their consumers
        depth[spec.stage_id] = 1 + max((depth[i] for i in consumed_of(spec)), default=-1)
    return sorted(stages, key=lambda spec: depth[spec.stage_id])


def scanned_tables(op: PhysicalOperator) -> list[tuple[int, bool]]:
    """(table id, replicated) of every scan in an operator tree."""
    from engine.exec.operators.scan import ScanExec
    if isinstance(op, ScanExec):
        return [(op.table_id, op.replicated)]
    return [t for child in op.children for t in scanned_tables(child)]
