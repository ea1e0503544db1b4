"""A plan of one stage that reads nothing (``SELECT 1``, a client's ping or ``SELECT NOW()``), run
in the calling thread instead of through a runner's scheduler.

Such a stage has no table to read and no exchange to wait for: the scheduler's task specs, leaf
placement and snapshot pinning are all for nothing, and cost more than the query (about 40 us of a
``SELECT 1``'s 70 us in process). :class:`InlineRunner` has the one method ``run_query`` needs
(``run``); the task runs as a leaf would run it: the statement's deadline, memory_limit and warnings.

>>> inline_stage(())            # nothing to run
"""
from __future__ import annotations

from typing import Optional, Sequence

import pyarrow as pa

from engine.core.deadline import statement_deadline
from engine.exec import statement_warnings
from engine.exec.memory import MemoryPool, statement_memory_limit
from engine.exec.operators.base import TaskContext, conform
from engine.exec.stages import StageSpec


def inline_stage(stages: Sequence[StageSpec]) -> Optional[StageSpec]:
    """The stage of ``stages`` when it is the only one, runs once and reads no table and no exchange;
    None otherwise."""
    if len(stages) != 1:
        return None
    stage = stages[0]
    if stage.output_kind is not None or stage.parallel or stage.scans_tables or stage.consumed or stage.scanned:
        return None
    return stage


class InlineRunner:
    """Runs a plan :func:`inline_stage` accepts, in this thread (``num_partitions``: the cluster's,
    which the task sees as a leaf's task would)."""

    def __init__(self, num_partitions: int):
        self.num_partitions = num_partitions

    def run(self, stages: Sequence[StageSpec], params: Sequence = (), profile=None) -> pa.Table:
        stage = inline_stage(stages)
        if stage is None or profile is not None:
            raise ValueError("InlineRunner runs one stage reading nothing, without a profile")
        memory = MemoryPool(statement_memory_limit.get())
        ctx = TaskContext(0, self.num_partitions, params, deadline=statement_deadline.get(), memory=memory)
        schema = stage.root.schema
        try:
            batches = [conform(b, schema)
                       for b in statement_warnings.collected(stage.root.execute(0, ctx),
                                                             statement_warnings.statement_sink.get())
                       if b.num_rows]
        finally:
            memory.close()
        return pa.Table.from_batches(batches, schema=schema)
