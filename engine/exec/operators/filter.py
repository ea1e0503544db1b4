from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import pyarrow as pa

from engine.exec.kernel_filters import KernelFilter
from engine.exec.operators.base import PhysicalOperator, TaskContext
from engine.core.expressions import Expr


@dataclass(frozen=True)
class FilterExec(PhysicalOperator):
    input: PhysicalOperator
    predicate: Expr

    @property
    def fields(self):
        return self.input.fields

    @property
    def children(self):
        return (self.input,)

    def describe(self) -> str:
        return f"Filter {self.predicate}"

    def execute(self, partition: int, ctx: TaskContext) -> Iterator[pa.RecordBatch]:
        # Simple conjuncts (column <op> constant, IN, LIKE 'abc%') run in the filter kernels.
        predicate = KernelFilter.of(self.predicate)
        for batch in self.input.execute(partition, ctx):
            batch = predicate.apply(batch, ctx.params)
            if batch.num_rows:
                yield batch
