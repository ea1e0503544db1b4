from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional

import numpy as np
import pyarrow as pa

from engine.exec.evaluate import evaluate_predicate
from engine.exec.distribution import join_output
from engine.exec.operators.base import PhysicalOperator, TaskContext, conform, table_to_batches
from engine.exec.operators.spill_partitions import hold_or_spill
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
        # what it collects counts against the query's memory_limit until it has produced its output;
        # past it, a block nested loop join (each side on disk, the right side read a block at a time)
        with ctx.memory.reservation("NestedLoopJoin", spillable=True) as memory, \
                ctx.memory.reservation("NestedLoopJoin", spillable=True) as left_memory:
            yield from self._execute(partition, ctx, memory, left_memory)

    def _execute(self, partition: int, ctx: TaskContext, memory, left_memory) -> Iterator[pa.RecordBatch]:
        right_held, right_spilled = hold_or_spill(
            self.right.execute(partition, ctx), memory, lambda: _Rows(ctx, self.right.schema),
            hold=lambda batch: conform(batch, self.right.schema))
        left_held, left_spilled = hold_or_spill(
            self.left.execute(partition, ctx), left_memory, lambda: _Rows(ctx, self.left.schema),
            hold=lambda batch: conform(batch, self.left.schema))
        right = _Rows.of_batches(self.right.schema, right_held) if right_spilled is None else right_spilled
        left = _Rows.of_batches(self.left.schema, left_held) if left_spilled is None else left_spilled
        del right_held, left_held
        yield from self._join(left, right, ctx, memory, spilled=right_spilled is not None)

    def _join(self, left: "_Rows", right: "_Rows", ctx: TaskContext, memory, spilled: bool) -> Iterator[pa.RecordBatch]:
        out_names = [f.id for f in self.fields]
        if left.rows == 0:
            if self.kind == "full":
                for block in right.blocks(memory, spilled):
                    yield from table_to_batches(_padded(block, self.fields).select(out_names))
            return
        if self.kind in ("semi", "anti") and self.condition is None:
            if (right.rows > 0) == (self.kind == "semi"):
                for batch in left.batches():
                    yield batch.select(out_names)
            return
        matched = np.zeros(left.rows, dtype=bool)          # over every left row, across the blocks
        used = self.condition.column_ids() if self.condition is not None else frozenset()
        for right_block in right.blocks(memory, spilled):
            matched_right = np.zeros(right_block.num_rows, dtype=bool)
            rows_per_chunk = max(1, _CHUNK_PAIRS // max(1, right_block.num_rows))
            offset = 0
            for batch in left.batches():
                left_part = pa.Table.from_batches([batch])
                for start in range(0, batch.num_rows, rows_per_chunk):
                    stop = min(batch.num_rows, start + rows_per_chunk)
                    left_idx = np.repeat(np.arange(start, stop), right_block.num_rows)
                    right_idx = np.tile(np.arange(right_block.num_rows), stop - start)
                    if self.condition is not None and len(left_idx):
                        # the condition over the pairs of the columns it reads; whole rows for the
                        # pairs it keeps only (a wide row is not copied once per candidate pair)
                        probe = _combine(left_part.select(_used(left_part, used)).take(left_idx),
                                         right_block.select(_used(right_block, used)).take(right_idx))
                        if probe.num_columns == 0:      # a condition of no column (RAND() < 0.5): one per pair
                            probe = pa.table({"__pair": pa.nulls(len(left_idx))})
                        mask = evaluate_predicate(self.condition, probe.combine_chunks().to_batches()[0], ctx.params)
                        kept = np.asarray(mask.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)
                        left_idx, right_idx = left_idx[kept], right_idx[kept]
                        matched[offset + left_idx] = True
                        matched_right[right_idx] = True
                    elif right_block.num_rows:
                        matched[offset + start:offset + stop] = True
                        matched_right[:] = True
                    if self.kind in ("inner", "cross", "left", "full") and len(left_idx):
                        pairs = _combine(left_part.take(left_idx), right_block.take(right_idx))
                        yield from table_to_batches(pairs.select(out_names))
                offset += batch.num_rows
            if self.kind == "full":
                yield from table_to_batches(_padded(right_block.filter(pa.array(~matched_right)), self.fields)
                                            .select(out_names))
        if self.kind not in ("semi", "anti", "left", "full"):
            return
        keep = matched if self.kind == "semi" else ~matched
        offset = 0
        for batch in left.batches():
            rows = pa.Table.from_batches([batch]).filter(pa.array(keep[offset:offset + batch.num_rows]))
            offset += batch.num_rows
            yield from table_to_batches((rows if self.kind in ("semi", "anti") else _padded(rows, self.fields))
                                        .select(out_names))


class _Rows:
    """One side of the join: held batches, or (past memory_limit) a spill file of them, read back
    as often as the join needs (the left side once per block of the right)."""

    def __init__(self, ctx: Optional[TaskContext], schema: pa.Schema):
        self.schema = schema
        self.rows = 0
        self.held: list = []
        self.file = ctx.memory.spill_file(schema, "NestedLoopJoin") if ctx is not None else None

    @classmethod
    def of_batches(cls, schema: pa.Schema, batches: list) -> "_Rows":
        rows = cls(None, schema)
        rows.held = batches
        rows.rows = sum(b.num_rows for b in batches)
        return rows

    def add(self, batch: pa.RecordBatch) -> None:
        self.file.write(conform(batch, self.schema))
        self.rows += batch.num_rows

    def batches(self) -> Iterator[pa.RecordBatch]:
        if self.file is None:
            yield from self.held
        elif self.rows:
            yield from self.file.read()

    def blocks(self, memory, spilled: bool) -> Iterator[pa.Table]:
        """The rows as tables: all at once when held; from disk, blocks of about a quarter of the
        reservation's share of the limit (each reserved while the left side passes it)."""
        if not spilled:
            yield pa.Table.from_batches(self.held, schema=self.schema)
            return
        budget = max(1 << 16, (memory.pool.share() or (64 << 20)) // 4)
        block, size = [], 0
        for batch in self.batches():
            block.append(batch)
            size += batch.nbytes
            if size >= budget:
                memory.free()
                memory.grow(size, spilled=True)
                yield pa.Table.from_batches(block, schema=self.schema)
                block, size = [], 0
        if block:
            memory.free()
            memory.grow(size, spilled=True)
            yield pa.Table.from_batches(block, schema=self.schema)


def _padded(rows: pa.Table, fields) -> pa.Table:
    """``rows`` of one side with NULL columns for the other side's ``fields``."""
    return pa.table({f.id: rows.column(f.id) if f.id in rows.schema.names else pa.nulls(rows.num_rows, f.type.to_arrow())
                     for f in fields})


def _used(side: pa.Table, used: frozenset) -> list[str]:
    """The columns of ``side`` the condition reads."""
    return [name for name in side.schema.names if name in used]


def _combine(left: pa.Table, right: pa.Table) -> pa.Table:
    columns = list(left.columns) + list(right.columns)
    names = left.schema.names + right.schema.names
    return pa.table(columns, names=names)
