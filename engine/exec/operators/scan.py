from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional

import pyarrow as pa

from engine.exec.kernel_filters import KernelFilter
from engine.exec.operators.base import PhysicalOperator, TaskContext
from engine.plan.expressions import Expr, and_all
from engine.plan.logical import Field
from engine.storage.columnstore.encoding import decode_batch


@dataclass(frozen=True)
class ScanExec(PhysicalOperator):
    """Read one partition of a table (every row of a reference table) with pushed-down filters."""

    table_id: int
    table_name: str
    fields: tuple[Field, ...]
    column_names: tuple[str, ...]
    filters: tuple[Expr, ...] = ()
    replicated: bool = False
    batch_rows: Optional[int] = None

    def describe(self) -> str:
        where = f" filter={and_all(list(self.filters))}" if self.filters else ""
        kind = "reference " if self.replicated else ""
        return f"Scan {kind}{self.table_name} [{', '.join(self.column_names)}]{where}"

    def execute(self, partition: int, ctx: TaskContext) -> Iterator[pa.RecordBatch]:
        ids = [f.id for f in self.fields]
        # Simple conjuncts (column <op> constant, IN, LIKE 'abc%') run in the filter kernels.
        predicate = KernelFilter.of(and_all(list(self.filters))) if self.filters else None
        bounds = _storage_bounds(predicate, dict(zip(ids, self.column_names))) if predicate else None
        # Columns come as stored (run-end / dictionary encoded): the kernel conjuncts compare them
        # encoded and only the surviving rows are decoded. Every batch leaving the scan is plain.
        for batch in ctx.scan(self.table_id, partition, self.column_names, self.replicated, self.batch_rows,
                              bounds, encoded=True):
            batch = pa.RecordBatch.from_arrays(batch.columns, names=ids)
            batch = predicate.apply(batch, ctx.params) if predicate is not None else decode_batch(batch)
            if batch.num_rows:
                yield batch


def _storage_bounds(predicate: KernelFilter, names: dict[str, str]) -> list[tuple[str, str, object]]:
    """The kernel conjuncts storage can check against zone maps, by stored column name."""
    bounds = []
    for p in predicate.kernel:
        if p.negated or p.column not in names:
            continue
        if p.kind == "compare":
            bounds.append((names[p.column], p.op, p.args if p.op == "between" else p.args[0]))
        elif p.kind == "in":
            bounds.append((names[p.column], "in", p.args))
    return bounds
