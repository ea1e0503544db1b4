"""What a hash aggregate holds of its input, or spills past memory_limit (engine/exec/memory.py): the
input's batches held until one does not fit, then hash partitions on disk; for keyless DISTINCT
aggregates, each argument's values partitioned by themselves."""
from __future__ import annotations


import pyarrow as pa

from engine import types as T
from engine.core.expressions import ColumnRef
from engine.exec.evaluate import evaluate_array
from engine.exec.operators.base import TaskContext
from engine.exec.operators.spill_partitions import SpillPartitions

from engine.exec.aggregate_states import _state_input


class _ArgumentPartitions:
    """Keyless DISTINCT aggregates past memory_limit: each aggregate's argument values (as its state
    takes them) in hash partitions of themselves (``parts``, one SpillPartitions per aggregate)."""

    def __init__(self, ctx: TaskContext, calls):
        self.ctx = ctx
        self.calls = list(calls)
        self.parts = []
        for call in self.calls:
            arrow_type = _state_input(call, pa.array([], call.arg.type.to_arrow())).type
            schema = pa.schema([pa.field("v", arrow_type)])
            self.parts.append(SpillPartitions.over(ctx.memory, schema, [ColumnRef("v", T.from_arrow(arrow_type))],
                                                   ctx.params, "HashAggregate"))

    def add(self, batch: pa.RecordBatch) -> None:
        for call, parts in zip(self.calls, self.parts):
            values = _state_input(call, evaluate_array(call.arg, batch, self.ctx.params))
            if isinstance(values, pa.ChunkedArray):
                values = values.combine_chunks()
            parts.add(pa.RecordBatch.from_arrays([values.cast(parts.schema.field(0).type)], schema=parts.schema))
