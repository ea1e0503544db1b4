from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Optional

import pyarrow as pa

from engine.errors import InternalError
from engine.exec.distribution import REPLICATED
from engine.exec.operators.base import PhysicalOperator, TaskContext
from engine.plan.logical import Field


@dataclass(frozen=True)
class CteScanExec(PhysicalOperator):
    """The rows of a WITH query computed once for the statement (``engine.optimizer.ctes``), read by
    one of its references. Replicated, like VALUES: every task that runs it sees all rows.

    The plan holds only the CTE's number; ``engine.sql.query.run_query`` runs the CTE first and puts
    its result (``table``, columns by position) into the stages that read it before they are sent to
    the aggregator or the leaves, so no runner keeps query state between plans."""

    fields: tuple[Field, ...]
    name: str
    index: int
    table: Optional[pa.Table] = field(default=None, compare=False, repr=False)

    def output_distribution(self, inputs):
        return REPLICATED

    def describe(self) -> str:
        return f"CteScan {self.name} (materialized cte{self.index})"

    def execute(self, partition: int, ctx: TaskContext) -> Iterator[pa.RecordBatch]:
        if self.table is None:
            raise InternalError(f"CTE {self.name} (cte{self.index}) was not materialized before it was read")
        schema = self.schema
        columns = [c if c.type == t else c.cast(t) for c, t in zip(self.table.columns, schema.types)]
        table = pa.Table.from_arrays(columns, schema=schema)
        yield from table.to_batches()
