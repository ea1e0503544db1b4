"""What a hash aggregate holds of its input, or spills past memory_limit (engine/exec/memory.py): the
input's batches held until one does not fit, then hash partitions on disk; for keyless DISTINCT
aggregates, each argument's values partitioned by themselves."""
from __future__ import annotations


import pyarrow as pa
import pyarrow.compute as pc

from engine import types as T
from engine.exec import decimal128
from engine.core.expressions import ColumnRef
from engine.exec.evaluate import evaluate_array
from engine.exec.operators.base import TaskContext
from engine.exec.operators.spill_partitions import SpillPartitions

from engine.exec.aggregate_states import _state_input


_DISTINCT = ("count", "sum", "avg")                              # DISTINCT: partitions of the values
_RUNNING = ("count_star", "count", "sum", "avg", "min", "max")   # others: running states, per batch


def spills_by_argument(calls) -> bool:
    """Whether keyless aggregates ``calls`` spill by argument (``_ArgumentPartitions``): some
    COUNT / SUM / AVG (DISTINCT x), and any others COUNT, SUM, AVG, MIN, MAX (not of text: their
    collation orders it) that add up batch by batch."""
    return any(call.distinct for call in calls) and all(
        call.func in _DISTINCT if call.distinct else
        call.func in _RUNNING and not (call.func in ("min", "max") and call.arg.type.kind == "string")
        for call in calls)


class _ArgumentPartitions:
    """Keyless DISTINCT aggregates past memory_limit: each aggregate's argument values (as its state
    takes them) in hash partitions of themselves (``parts``, one SpillPartitions per aggregate; None
    for an aggregate without DISTINCT, whose state ``running`` keeps batch by batch: its count, sum,
    minimum and maximum)."""

    def __init__(self, ctx: TaskContext, calls):
        self.ctx = ctx
        self.calls = list(calls)
        self.parts = []
        self.running: list[dict] = []
        for call in self.calls:
            self.running.append({"count": 0, "sum": None, "min": None, "max": None, "type": None})
            if not call.distinct:
                self.parts.append(None)
                continue
            arrow_type = _state_input(call, pa.array([], call.arg.type.to_arrow())).type
            schema = pa.schema([pa.field("v", arrow_type)])
            self.parts.append(SpillPartitions.over(ctx.memory, schema, [ColumnRef("v", T.from_arrow(arrow_type))],
                                                   ctx.params, "HashAggregate"))

    def add(self, batch: pa.RecordBatch) -> None:
        for call, parts, running in zip(self.calls, self.parts, self.running):
            if call.func == "count_star":
                running["count"] += batch.num_rows
                continue
            values = _state_input(call, evaluate_array(call.arg, batch, self.ctx.params))
            if isinstance(values, pa.ChunkedArray):
                values = values.combine_chunks()
            if parts is not None:
                parts.add(pa.RecordBatch.from_arrays([values.cast(parts.schema.field(0).type)], schema=parts.schema))
                continue
            running["type"] = values.type
            valid = len(values) - values.null_count
            if not valid:
                continue
            running["count"] += valid
            if call.func in ("sum", "avg"):
                part = pc.sum(decimal128.widen_for_sum(values)).as_py()
                running["sum"] = part if running["sum"] is None else running["sum"] + part
            elif call.func in ("min", "max"):
                low, high = pc.min_max(values).values()
                low, high = low.as_py(), high.as_py()
                running["min"] = low if running["min"] is None else min(running["min"], low)
                running["max"] = high if running["max"] is None else max(running["max"], high)
