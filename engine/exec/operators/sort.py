from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional

import pyarrow as pa
import pyarrow.compute as pc

from engine.exec.evaluate import evaluate_array
from engine.exec.operators.base import PhysicalOperator, TaskContext, collect, table_to_batches
from engine.plan.logical import SortKey


@dataclass(frozen=True)
class SortExec(PhysicalOperator):
    """Sort a partition; with ``limit`` keep only the first rows (top-N)."""

    input: PhysicalOperator
    keys: tuple[SortKey, ...]
    limit: Optional[int] = None

    @property
    def fields(self):
        return self.input.fields

    @property
    def children(self):
        return (self.input,)

    def describe(self) -> str:
        top = f"TopN {self.limit} " if self.limit is not None else "Sort "
        return top + ", ".join(str(k) for k in self.keys)

    def execute(self, partition: int, ctx: TaskContext) -> Iterator[pa.RecordBatch]:
        table = collect(self.input, partition, ctx)
        if table.num_rows == 0:
            return
        batch_like = table.combine_chunks().to_batches()[0] if table.num_rows else None
        key_columns, sort_keys = [], []
        for i, key in enumerate(self.keys):
            key_columns.append(evaluate_array(key.expr, batch_like, ctx.params))
            sort_keys.append((f"k{i}", "ascending" if key.ascending else "descending",
                              "at_start" if key.nulls_first else "at_end"))
        keys_table = pa.table(key_columns, names=[k[0] for k in sort_keys])
        if self.limit is not None and self.limit < table.num_rows // 8 and not any(
                c.null_count for c in key_columns):
            indices = pc.select_k_unstable(keys_table, k=self.limit, sort_keys=[k[:2] for k in sort_keys])
            indices = pc.take(indices, pc.sort_indices(pc.take(keys_table, indices), sort_keys=sort_keys))
        else:
            indices = pc.sort_indices(keys_table, sort_keys=sort_keys)
            if self.limit is not None:
                indices = indices.slice(0, self.limit)
        yield from table_to_batches(table.take(indices))
