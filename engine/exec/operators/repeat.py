from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np
import pyarrow as pa

from engine.exec.evaluate import evaluate_array
from engine.exec.operators.base import PhysicalOperator, TaskContext
from engine.core.expressions import Expr

# An output batch holds at most this many rows: a few rows repeated millions of times stream out.
_MAX_ROWS = 1 << 20


@dataclass(frozen=True)
class RepeatExec(PhysicalOperator):
    """Each input row ``count`` times, in place (INTERSECT ALL / EXCEPT ALL); a count that is NULL,
    zero or negative drops the row. Streams: one input batch at a time, row indices built by NumPy."""

    input: PhysicalOperator
    count: Expr

    @property
    def fields(self):
        return self.input.fields

    @property
    def children(self):
        return (self.input,)

    def describe(self) -> str:
        return f"Repeat {self.count} times"

    def execute(self, partition: int, ctx: TaskContext) -> Iterator[pa.RecordBatch]:
        for batch in self.input.execute(partition, ctx):
            counts = evaluate_array(self.count, batch, ctx.params).fill_null(0)
            counts = np.maximum(counts.to_numpy(zero_copy_only=False).astype(np.int64), 0)
            if counts.sum() == batch.num_rows and (counts == 1).all():
                yield batch
                continue
            rows = np.repeat(np.arange(batch.num_rows, dtype=np.int64), counts)
            for start in range(0, len(rows), _MAX_ROWS):
                yield batch.take(pa.array(rows[start:start + _MAX_ROWS]))
