from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional

import pyarrow as pa

from engine.exec.operators.base import PhysicalOperator, TaskContext


@dataclass(frozen=True)
class LimitExec(PhysicalOperator):
    """Skip ``offset`` rows then pass at most ``count``; stops pulling its input once satisfied."""

    input: PhysicalOperator
    count: Optional[int]
    offset: int = 0
    requires: tuple = ()          # Required per input (None: as it is), chosen by the planner

    @property
    def fields(self):
        return self.input.fields

    @property
    def children(self):
        return (self.input,)

    def describe(self) -> str:
        return f"Limit {self.count}" + (f" offset {self.offset}" if self.offset else "")

    def execute(self, partition: int, ctx: TaskContext) -> Iterator[pa.RecordBatch]:
        skip, remaining = self.offset, self.count
        if remaining == 0:
            return
        for batch in self.input.execute(partition, ctx):
            if skip:
                if batch.num_rows <= skip:
                    skip -= batch.num_rows
                    continue
                batch, skip = batch.slice(skip), 0
            if remaining is not None:
                batch = batch.slice(0, remaining)
                remaining -= batch.num_rows
            if batch.num_rows:
                yield batch
            if remaining is not None and remaining <= 0:
                return
