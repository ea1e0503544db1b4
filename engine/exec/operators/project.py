from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import pyarrow as pa

from engine.exec.distribution import projected
from engine.exec.evaluate import evaluate_array, evaluate_arrays, shared_subexpressions
from engine.exec.operators.base import PhysicalOperator, TaskContext
from engine.core.expressions import ColumnRef, Expr
from engine.core.fields import Field


@dataclass(frozen=True)
class ProjectExec(PhysicalOperator):
    input: PhysicalOperator
    exprs: tuple[tuple[Field, Expr], ...]

    def output_distribution(self, inputs):
        return projected(inputs[0], self.exprs)

    @property
    def fields(self):
        return self.derived("fields", (self.exprs,), lambda: tuple(f for f, _ in self.exprs))

    @property
    def children(self):
        return (self.input,)

    def describe(self) -> str:
        return "Project " + ", ".join(
            str(e) if isinstance(e, ColumnRef) and e.name == f.name else f"{e} AS {f.name}" for f, e in self.exprs)

    def execute(self, partition: int, ctx: TaskContext) -> Iterator[pa.RecordBatch]:
        schema = self.schema
        exprs = [e for _, e in self.exprs]
        # a subexpression two of the expressions share is computed once per batch
        slots = self.derived("shared_subexpressions", (self.exprs,), lambda: shared_subexpressions(exprs))
        for batch in self.input.execute(partition, ctx):
            columns = evaluate_arrays(exprs, batch, ctx.params, slots) if slots else \
                [evaluate_array(e, batch, ctx.params) for e in exprs]
            yield pa.RecordBatch.from_arrays(columns, schema=schema)
