from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import pyarrow as pa

from engine.exec.distribution import ANY, hash_compatible, hashed
from engine.exec.operators.base import PhysicalOperator, TaskContext, conform
from engine.core.fields import Field


@dataclass(frozen=True)
class UnionExec(PhysicalOperator):
    inputs: tuple[PhysicalOperator, ...]
    fields: tuple[Field, ...]
    requires: tuple = ()          # Required per input (None: as it is), chosen by the planner

    def output_distribution(self, inputs):
        """Inputs gathered: one task. Inputs spread over the partitions: each task unions its share;
        all hashed on the same columns (by position, of one type) make the union hashed on them
        (INTERSECT of two SELECT DISTINCTs then counts without moving rows again: TPC-DS q38)."""
        if not all(d.partitioned for d in inputs):
            return inputs[0]
        positions = set()
        for child, dist in zip(self.inputs, inputs):
            if dist.kind != "hashed":
                return ANY
            ids = [f.id for f in child.fields]
            if not all(k in ids for k in dist.keys):        # a collated key not computed here
                return ANY
            positions.add(tuple(ids.index(k) for k in dist.keys))
        if len(positions) != 1:
            return ANY
        (keys,) = positions
        for i in keys:
            types = [child.fields[i].type for child in self.inputs]
            if not all(hash_compatible(types[0], t) and types[0].to_arrow() == t.to_arrow() for t in types):
                return ANY
        return hashed(self.fields[i].id for i in keys)

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
