from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

import pyarrow as pa

from engine.exec.distribution import REPLICATED
from engine.exec.operators.base import PhysicalOperator, TaskContext
from engine.core.fields import Field


@dataclass(frozen=True)
class ValuesExec(PhysicalOperator):
    """Constant rows (SELECT without FROM, VALUES). Replicated: every task that runs it sees all rows."""

    fields: tuple[Field, ...]
    rows: tuple[tuple[Any, ...], ...]

    def output_distribution(self, inputs):
        return REPLICATED

    def describe(self) -> str:
        return f"Values {len(self.rows)} rows"

    def execute(self, partition: int, ctx: TaskContext) -> Iterator[pa.RecordBatch]:
        columns = [pa.array([r[i] for r in self.rows], type=f.type.to_arrow()) for i, f in enumerate(self.fields)]
        yield pa.RecordBatch.from_arrays(columns, schema=self.schema)
