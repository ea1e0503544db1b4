from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Optional, Union

import pyarrow as pa

from engine.errors import InternalError
from engine.exec.distribution import REPLICATED
from engine.exec.memory import SpilledRows
from engine.exec.operators.base import PhysicalOperator, TaskContext
from engine.core.fields import Field


@dataclass(frozen=True)
class CteScanExec(PhysicalOperator):
    """The rows of a WITH query computed once for the statement (``engine.optimizer.ctes``), read by
    one of its references. Replicated, like VALUES: every task that runs it sees all rows.

    The plan holds only the CTE's number; ``engine.sql.query.run_query`` runs the CTE first and puts
    its result (``table``, columns by position) into the stages that read it before they are sent to
    the aggregator or the leaves, so no runner keeps query state between plans. A result that does
    not fit in ``memory_limit`` is on disk (``SpilledRows``: its file's path) and read as a stream."""

    fields: tuple[Field, ...]
    name: str
    index: int
    # the CTE's rows: a Table, or SpilledRows when they did not fit in memory_limit
    table: Optional[Union[pa.Table, SpilledRows]] = field(default=None, compare=False, repr=False)

    def output_distribution(self, inputs):
        return REPLICATED

    def describe(self) -> str:
        return f"CteScan {self.name} (materialized cte{self.index})"

    def execute(self, partition: int, ctx: TaskContext) -> Iterator[pa.RecordBatch]:
        if self.table is None:
            raise InternalError(f"CTE {self.name} (cte{self.index}) was not materialized before it was read")
        schema = self.schema
        if isinstance(self.table, SpilledRows):     # past memory_limit: read from disk as a stream
            for batch in self.table.read(f"the materialized CTE {self.name}"):
                yield _conformed(batch.columns, schema).to_batches()[0] if batch.num_rows else batch
            return
        yield from _conformed(self.table.columns, schema).to_batches()


def _conformed(columns, schema: pa.Schema) -> pa.Table:
    """The CTE's columns (by position) named and typed as this reference's fields."""
    return pa.Table.from_arrays([c if c.type == t else c.cast(t) for c, t in zip(columns, schema.types)],
                                schema=schema)
