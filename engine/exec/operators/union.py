from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import pyarrow as pa

from engine.exec.operators.base import PhysicalOperator, TaskContext, conform
from engine.plan.logical import Field


@dataclass(frozen=True)
class UnionExec(PhysicalOperator):
    inputs: tuple[PhysicalOperator, ...]
    fields: tuple[Field, ...]

    @property
    def children(self):
        return self.inputs

    def describe(self) -> str:
        return "UnionAll"

    def execute(self, partition: int, ctx: TaskContext) -> Iterator[pa.RecordBatch]:
        schema = self.schema
        for child in self.inputs:
            for batch in child.execute(partition, ctx):
                yield conform(pa.RecordBatch.from_arrays(batch.columns, names=schema.names), schema)
