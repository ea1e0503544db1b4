from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional

import numpy as np
import pyarrow as pa

from engine.exec.evaluate import evaluate_predicate
from engine.exec.distribution import join_output
from engine.exec.operators.base import PhysicalOperator, TaskContext, collect, table_to_batches
from engine.core.expressions import Expr
from engine.core.fields import Field

_CHUNK_PAIRS = 1 << 20


@dataclass(frozen=True)
class NestedLoopJoinExec(PhysicalOperator):
    """Every left row against every right row (in chunks), then the condition. Used for cross joins
    and non-equi conditions (with a small, broadcast right side), and for equi-joins of inputs so tiny
    that setting up a hash join costs more than the pairs (the planner's cost choice). A full join
    (both sides in one task) also keeps the right rows no pair kept, NULL on the left."""

    left: PhysicalOperator
    right: PhysicalOperator
    kind: str
    condition: Optional[Expr]
    fields: tuple[Field, ...]
    strategy: str = ""            # where the sides meet (for EXPLAIN), as HashJoinExec's
    requires: tuple = ()          # Required per input (None: as it is), chosen by the planner

    @property
    def children(self):
        return (self.left, self.right)

    def output_distribution(self, inputs):
        return join_output(self.kind, *inputs)

    def describe(self) -> str:
        strategy = f" [{self.strategy}]" if self.strategy else ""
        return f"NestedLoopJoin {self.kind}" + (f" ON {self.condition}" if self.condition is not None else "") \
            + strategy

    def execute(self, partition: int, ctx: TaskContext) -> Iterator[pa.RecordBatch]:
        # what it collects counts against the query's memory_limit until it has produced its output
        with ctx.memory.reservation("NestedLoopJoin") as memory:
            yield from self._execute(partition, ctx, memory)

    def _execute(self, partition: int, ctx: TaskContext, memory) -> Iterator[pa.RecordBatch]:
        right = collect(self.right, partition, ctx, memory).combine_chunks()
        left = collect(self.left, partition, ctx, memory).combine_chunks()
        out_names = [f.id for f in self.fields]
        if left.num_rows == 0:
            if self.kind == "full":
                yield from table_to_batches(_padded(right, self.fields).select(out_names))
            return
        if self.kind in ("semi", "anti") and self.condition is None:
            if (right.num_rows > 0) == (self.kind == "semi"):
                yield from table_to_batches(left.select(out_names))
            return
        matched = np.zeros(left.num_rows, dtype=bool)
        matched_right = np.zeros(right.num_rows, dtype=bool)
        rows_per_chunk = max(1, _CHUNK_PAIRS // max(1, right.num_rows))
        for start in range(0, left.num_rows, rows_per_chunk):
            stop = min(left.num_rows, start + rows_per_chunk)
            if right.num_rows == 0:
                break
            left_idx = np.repeat(np.arange(start, stop), right.num_rows)
            right_idx = np.tile(np.arange(right.num_rows), stop - start)
            pairs = _combine(left.take(left_idx), right.take(right_idx))
            if self.condition is not None:
                mask = evaluate_predicate(self.condition, pairs.combine_chunks().to_batches()[0], ctx.params) \
                    if pairs.num_rows else pa.array([], pa.bool_())
                pairs = pairs.filter(mask)
                kept = np.asarray(mask.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)
                matched[left_idx[kept]] = True
                matched_right[right_idx[kept]] = True
            else:
                matched[start:stop] = True
                matched_right[:] = True
            if self.kind in ("inner", "cross", "left", "full"):
                yield from table_to_batches(pairs.select(out_names))
        if self.kind == "semi":
            yield from table_to_batches(left.filter(pa.array(matched)).select(out_names))
        elif self.kind == "anti":
            yield from table_to_batches(left.filter(pa.array(~matched)).select(out_names))
        elif self.kind in ("left", "full"):
            yield from table_to_batches(_padded(left.filter(pa.array(~matched)), self.fields).select(out_names))
            if self.kind == "full":
                yield from table_to_batches(_padded(right.filter(pa.array(~matched_right)), self.fields)
                                            .select(out_names))


def _padded(rows: pa.Table, fields) -> pa.Table:
    """``rows`` of one side with NULL columns for the other side's ``fields``."""
    return pa.table({f.id: rows.column(f.id) if f.id in rows.schema.names else pa.nulls(rows.num_rows, f.type.to_arrow())
                     for f in fields})


def _combine(left: pa.Table, right: pa.Table) -> pa.Table:
    columns = list(left.columns) + list(right.columns)
    names = left.schema.names + right.schema.names
    return pa.table(columns, names=names)
