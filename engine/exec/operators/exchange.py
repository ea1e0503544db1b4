"""Exchanges: where data moves between stages. The stage splitter cuts the plan at each ExchangeExec;
the producing stage's output is routed by ``kind`` (gather to one task, broadcast to all, repartition by
the hash of ``keys`` with the same kernel that places rows of sharded tables, keep: each task's output
stays with the same task of the consuming stages, as a materialized CTE's rows stay on their leaves),
and the consuming stage reads its share through an ExchangeSourceExec."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import pyarrow as pa

from engine.exec.distribution import REPLICATED, SINGLE, hashed
from engine.exec.operators.base import PhysicalOperator, TaskContext, conform


@dataclass(frozen=True)
class ExchangeExec(PhysicalOperator):
    input: PhysicalOperator
    kind: str                      # gather | broadcast | repartition | keep
    keys: tuple[str, ...] = ()     # field ids hashed by repartition
    parallel_input: bool = True    # does the producing stage run on every partition, or once
    label: str = ""                # what a keep holds, for EXPLAIN (a CTE's name)
    # Bloom filters of a semi / anti join above that runs its probe side first (HashJoinExec
    # probe_first), applied where the consuming stage reads the rows (ExchangeSourceExec)
    runtime_filters: tuple = ()

    def output_distribution(self, inputs):
        if self.kind == "gather":
            return SINGLE
        if self.kind == "broadcast":
            return REPLICATED
        if self.kind == "repartition":
            return hashed(self.keys)
        return inputs[0] if inputs[0].partitioned else SINGLE      # keep: each task's rows stay with it

    @property
    def fields(self):
        return self.input.fields

    @property
    def schema(self):
        return self.input.schema

    @property
    def children(self):
        return (self.input,)

    def describe(self) -> str:
        keys = f" by [{', '.join(self.keys)}]" if self.keys else ""
        label = f" (CTE {self.label})" if self.label else ""
        return f"Exchange {self.kind}{keys}{label}{_bloom_words(self.runtime_filters, self)}"

    def execute(self, partition: int, ctx: TaskContext) -> Iterator[pa.RecordBatch]:
        raise RuntimeError("ExchangeExec is replaced by the stage splitter and never executed")


@dataclass(frozen=True)
class ExchangeSourceExec(PhysicalOperator):
    exchange_id: int
    kind: str
    source_schema: pa.Schema
    fields: tuple = ()
    runtime_filters: tuple = ()     # ExchangeExec.runtime_filters: dropped here, as they are read

    @property
    def schema(self):
        return self.source_schema

    def describe(self) -> str:
        return f"ExchangeSource #{self.exchange_id} ({self.kind}){_bloom_words(self.runtime_filters, self)}"

    def execute(self, partition: int, ctx: TaskContext) -> Iterator[pa.RecordBatch]:
        from engine.exec.runtime_filtering import BloomProbe, bloom_filtered
        names = self.source_schema.names
        probes = [BloomProbe(f.column, ctx.runtime_filters[f.filter_id])
                  for f in self.runtime_filters if f.filter_id in ctx.runtime_filters and f.column in names]
        for batch in ctx.exchange_inputs.get(self.exchange_id, []):
            if batch.num_rows and probes:
                batch = bloom_filtered(batch, probes)
            if batch.num_rows:
                yield conform(batch, self.source_schema)


def _bloom_words(filters, op: PhysicalOperator) -> str:
    if not filters:
        return ""
    names = {f.id: f.name for f in op.fields}
    return " bloom filter" + ("s" if len(filters) > 1 else "") + " " + ", ".join(
        f"#{f.filter_id} on {names.get(f.column, f.column)}" for f in filters)
