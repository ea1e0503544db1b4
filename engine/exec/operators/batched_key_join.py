"""Batched key access join (MySQL's BKA over MRR): probe a side ordered by its key with sorted
batches of keys, instead of hashing either side.

The build (``right``) side is collected and put in key order once: a check that it already is (a SORT
KEY table's segment, an ORDER BY below) costs one vectorized compare, otherwise a stable sort that is
near linear over the few sorted runs a clustered table arrives in. The probe (``left``) side streams:
each batch's keys are sorted (the "multi-range read": lookups walk the build forward) and every key's
matching range comes from two binary searches (``np.searchsorted``). No hash table is built, so when
the build side is large and already ordered and the probe side is small, the join costs a sortedness
check per build row plus ``log2(build)`` per probe row — where a hash join pays a hash insert or
probe for every row of the large side. Single integer-like keys (integers, dates, timestamps);
the planner uses it only there, without a residual condition, and only where the cost model says so.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np
import pyarrow as pa

from engine.exec.evaluate import evaluate_array
from engine.exec.distribution import join_output
from engine.exec.operators.base import PhysicalOperator, TaskContext, collect, one_array
from engine.core.expressions import Expr
from engine.core.fields import Field
from engine.types import SqlType

KINDS = ("inner", "left", "semi", "anti")


def key_supported(t: SqlType) -> bool:
    return t.kind in ("int", "date", "datetime")


@dataclass(frozen=True)
class BatchedKeyJoinExec(PhysicalOperator):
    """Equi-join on one integer-like key: ``left`` probes in batches, ``right`` is ordered by its key.

    Kinds: inner, left (outer), semi, anti (NOT EXISTS: a NULL probe key never matches, so it is kept).
    Rows with a NULL key never match."""

    left: PhysicalOperator
    right: PhysicalOperator
    kind: str
    left_key: Expr
    right_key: Expr
    fields: tuple[Field, ...]
    strategy: str = ""
    requires: tuple = ()          # Required per input (None: as it is), chosen by the planner
    swapped: bool = False         # the probe side is the join's right input (an inner join turned round)

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"BatchedKeyJoinExec does not do {self.kind!r} joins (only {', '.join(KINDS)})")
        for key in (self.left_key, self.right_key):
            if not key_supported(key.type):
                raise ValueError(f"BatchedKeyJoinExec needs integer-like keys, not {key.type.name}")

    @property
    def children(self):
        return (self.left, self.right)

    def output_distribution(self, inputs):
        probe, build = inputs
        return join_output(self.kind, build, probe) if self.swapped else join_output(self.kind, probe, build)

    def describe(self) -> str:
        strategy = f" [{self.strategy}]" if self.strategy else ""
        return f"BatchedKeyJoin {self.kind} ON {self.left_key} = {self.right_key}{strategy}"

    def execute(self, partition: int, ctx: TaskContext) -> Iterator[pa.RecordBatch]:
        # what it collects counts against the query's memory_limit until it has produced its output
        with ctx.memory.reservation("BatchedKeyJoin") as memory:
            yield from self._execute(partition, ctx, memory)

    def _execute(self, partition: int, ctx: TaskContext, memory) -> Iterator[pa.RecordBatch]:
        build = collect(self.right, partition, ctx, memory)
        build_keys = _as_int64(evaluate_array(self.right_key, _one_batch(build), ctx.params)) \
            if build.num_rows else (np.zeros(0, np.int64), None)
        keys, nulls = build_keys
        if nulls is not None:
            keep = ~nulls
            build, keys = build.filter(pa.array(keep)), keys[keep]
        if len(keys) > 1 and not bool(np.all(keys[1:] >= keys[:-1])):
            order = np.argsort(keys, kind="stable")
            build, keys = build.take(pa.array(order)), keys[order]
        if self.kind in ("inner", "semi") and len(keys) == 0:
            return
        out_names = [f.id for f in self.fields]
        for batch in self.left.execute(partition, ctx):
            if not batch.num_rows:
                continue
            probe, probe_nulls = _as_int64(evaluate_array(self.left_key, batch, ctx.params))
            order = np.argsort(probe, kind="stable")            # the batch's keys, sorted
            lo = np.empty(len(probe), np.int64)
            hi = np.empty(len(probe), np.int64)
            lo[order] = np.searchsorted(keys, probe[order], "left")
            hi[order] = np.searchsorted(keys, probe[order], "right")
            counts = hi - lo
            if probe_nulls is not None:
                counts[probe_nulls] = 0
            if self.kind in ("semi", "anti"):
                hit = counts > 0
                out = batch.filter(pa.array(hit if self.kind == "semi" else ~hit))
                if out.num_rows:
                    yield out.select(out_names)
                continue
            left_rows = np.repeat(np.arange(len(probe)), counts)
            starts = np.repeat(lo - (np.cumsum(counts) - counts), counts)
            right_rows = np.arange(len(left_rows), dtype=np.int64) + starts
            columns = {}
            matched_left = batch.take(pa.array(left_rows))
            matched_right = build.take(pa.array(right_rows))
            for name in matched_left.schema.names:
                columns[name] = matched_left.column(name)
            for name in matched_right.schema.names:
                columns[name] = one_array(matched_right.column(name))
            if self.kind == "left":
                unmatched = batch.filter(pa.array(counts == 0))
                if unmatched.num_rows:
                    for name in matched_right.schema.names:
                        column = columns[name]
                        columns[name] = pa.concat_arrays([column, pa.nulls(unmatched.num_rows, column.type)])
                    for name in matched_left.schema.names:
                        columns[name] = pa.concat_arrays([columns[name], unmatched.column(name)])
            if len(columns[out_names[0]]):
                yield pa.RecordBatch.from_arrays([columns[n] for n in out_names], names=out_names)


def _one_batch(table: pa.Table) -> pa.RecordBatch:
    return table.combine_chunks().to_batches()[0]


def _as_int64(values) -> tuple[np.ndarray, "np.ndarray | None"]:
    """Key values as int64 (dates as days, timestamps as their unit), and the null mask (None: none)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    if pa.types.is_date32(values.type):
        values = values.cast(pa.int32())
    elif pa.types.is_timestamp(values.type) or pa.types.is_date64(values.type):
        values = values.cast(pa.int64())
    nulls = None
    if values.null_count:
        nulls = np.asarray(values.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        values = values.fill_null(0)
    return np.asarray(values.to_numpy(zero_copy_only=False), dtype=np.int64), nulls
