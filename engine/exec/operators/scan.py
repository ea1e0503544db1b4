from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Iterator, Optional

import numpy as np
import pyarrow as pa

import kernels
from engine.core.collation_keys import collation_keys
from engine.exec.distribution import ANY, REPLICATED, collated_id, hashed
from engine.exec.kernel_filters import KernelFilter
from engine.exec.runtime_filtering import BloomProbe, ScanFilters
from engine.exec.operators.base import PhysicalOperator, TaskContext
from engine.core.expressions import Expr, and_all
from engine.core.fields import Field
from engine.storage.columnstore.encoding import decode_batch, decode_column
from engine.storage.hash_index import index_column, index_name, uca_lookup_keys

@dataclass(frozen=True)
class RuntimeFilter:
    """A runtime join filter placed by the planner (:mod:`engine.optimizer.runtime_filters`): the hash
    join holding it builds a Bloom filter over its build side's values of key number ``key``, under
    ``filter_id``; the scan holding it drops the rows whose ``column`` (its field id) is not in it."""

    filter_id: int
    key: int
    table: str                      # the scan's table (EXPLAIN)
    column: str


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
    # stored names of the columns a hash index answers equality on (TableDef.indexed_columns)
    indexed: tuple[str, ...] = ()
    # the table's shard key (stored names): its rows are placed by their hash (a sharded table)
    shard_key: tuple[str, ...] = ()
    # per shard key column, the collation whose keys place its rows (TableDef.shard_key_collations)
    shard_key_collations: tuple[Optional[str], ...] = ()
    runtime_filters: tuple[RuntimeFilter, ...] = ()     # join filters this scan applies, when built
    # columns read for ``filters`` only: filtered on, then dropped (not in ``fields``, the output)
    filter_fields: tuple[Field, ...] = ()
    filter_columns: tuple[str, ...] = ()

    def stored_names(self) -> dict[str, str]:
        """The stored column name of every field the scan reads, by field id (its filter-only ones too)."""
        return self.derived("stored_names", (self.fields, self.filter_fields), lambda: dict(zip(
            [f.id for f in self.fields + self.filter_fields], self.column_names + self.filter_columns)))

    def output_distribution(self, inputs):
        if self.replicated:
            return REPLICATED
        by_name = {c.lower(): f.id for f, c in zip(self.fields, self.column_names)}
        if self.shard_key and all(k.lower() in by_name for k in self.shard_key):
            # a string key placed by its collation keys is hashed as collation_key(column)
            collations = self.shard_key_collations or (None,) * len(self.shard_key)
            return hashed(by_name[k.lower()] if name is None else collated_id(by_name[k.lower()], name)
                          for k, name in zip(self.shard_key, collations))
        return ANY

    def describe(self) -> str:
        where = f" filter={and_all(list(self.filters))}" if self.filters else ""
        kind = "reference " if self.replicated else ""
        lookup = self.index_lookup_column()
        via = f" index lookup on {lookup}" if lookup else ""
        names = dict(zip((f.id for f in self.fields), self.column_names))
        bloom = (" bloom filter" + ("s" if len(self.runtime_filters) > 1 else "") + " " + ", ".join(
            f"#{f.filter_id} on {names[f.column]}" for f in self.runtime_filters)) if self.runtime_filters else ""
        return f"Scan {kind}{self.table_name} [{', '.join(self.column_names)}]{where}{via}{bloom}"

    def kernel_filter(self) -> Optional[KernelFilter]:
        """The filters split into kernel conjuncts and a residual (None without filters)."""
        return self.derived("kernel_filter", (self.filters,),
                            lambda: KernelFilter.of(and_all(list(self.filters))) if self.filters else None)

    def index_lookup_column(self) -> Optional[str]:
        """The indexed column an equality / IN conjunct of the filter looks up, if any."""
        if not self.indexed or not self.filters:
            return None
        predicate = self.kernel_filter()
        bounds = _storage_bounds(predicate, self.stored_names(), self.indexed)
        return next((index_column(name)[0] for name, op, _ in bounds if op == "index"), None)

    def key_partitions(self, num_partitions: int) -> Optional[frozenset]:
        """The partitions that can hold the rows of an equality (or IN) on the shard key, or None
        (every partition): rows are placed by the hash of their key (cluster.placement), so the
        constants' hashes name the only partitions a point query needs to read."""
        if self.replicated or len(self.shard_key) != 1 or not self.filters:
            return None
        return self.derived("key_partitions", (self.filters, num_partitions),
                            lambda: _key_partitions(self, num_partitions))

    def execute(self, partition: int, ctx: TaskContext) -> Iterator[pa.RecordBatch]:
        return self.execute_keeping_dictionaries(partition, ctx, frozenset())

    def execute_keeping_dictionaries(self, partition: int, ctx: TaskContext,
                                     keep: frozenset) -> Iterator[pa.RecordBatch]:
        """:meth:`execute`, except that the columns of fields ``keep`` stored dictionary- or
        run-end-encoded leave the scan as dictionary arrays of their type (a group-by above
        factorizes the codes, not the strings; ``HashAggregateExec``). Every other column is plain."""
        ids = [f.id for f in self.fields + self.filter_fields]
        # the output's columns, where the filter-only ones are dropped once the filters ran
        output = [f.id for f in self.fields] if self.filter_fields else None
        # Simple conjuncts (column <op> constant, IN, LIKE 'abc%') run in the filter kernels.
        predicate = self.kernel_filter()
        bounds = _storage_bounds(predicate, self.stored_names(), self.indexed) if predicate else None
        # Columns come as stored (run-end / dictionary encoded): the kernel conjuncts compare them
        # encoded and only the surviving rows are decoded. Every batch leaving the scan is plain.
        # Runtime join filters (Bloom filters from hash joins above) run with the kernel conjuncts as
        # one selection, cheapest per row first, on the stored (encoded) columns: the rows they drop
        # are never decoded (engine.exec.runtime_filtering).
        runtime = [BloomProbe(f.column, ctx.runtime_filters[f.filter_id]) for f in self.runtime_filters
                   if f.filter_id in ctx.runtime_filters]
        filters = ScanFilters(runtime, predicate)
        # EXPLAIN ANALYZE: what the stores read for this scan, counted by the scan itself (the stores'
        # own counters also move with other queries' scans and the background statistics collection)
        read = {"segments_read": 0, "rows_read": 0, "index_lookups": 0} if ctx.profile is not None else None
        holding = self.key_partitions(ctx.num_partitions)
        stored = ctx.scan(self.table_id, partition, self.column_names + self.filter_columns, self.replicated,
                          self.batch_rows, bounds, encoded=True, only=holding, stats=read)
        for batch in coalesced(stored, min(COALESCE_ROWS, self.batch_rows or COALESCE_ROWS)):
            batch = pa.RecordBatch.from_arrays(batch.columns, names=ids)
            if runtime:
                batch = filters.apply(batch, ctx.params, keep, output)
            elif predicate is not None:
                batch = predicate.apply(batch, ctx.params, keep, output)
            else:
                batch = decode_batch(batch if output is None else batch.select(output), keep=keep)
            if batch.num_rows:
                yield batch
        if ctx.profile is not None:
            for f in runtime:
                ctx.profile.runtime_filter(self, f.rows_in, f.rows_kept)
            ctx.profile.storage_read(self, read["segments_read"], read["rows_read"])


# Stored batches smaller than this (a small table's partitions: one segment each) are concatenated,
# still encoded, into batches of up to this many rows before the filters run: a task reads all of its
# leaf's partitions, and each batch costs the filter kernels and every operator above the scan a
# fixed amount (tens of Python calls) whatever its rows. TPC-H at SF 0.01 on 2 leaves x 4 partitions
# ran every operator over 4 batches per task where 1 does. A concatenation never exceeds it, so no
# batch holds more than a stored batch of that many rows would (what an operator asks of memory_limit
# at once).
COALESCE_ROWS = 8_192


def coalesced(batches: Iterator[pa.RecordBatch], limit: int) -> Iterator[pa.RecordBatch]:
    """``batches`` (as stored: columns may be run-end or dictionary encoded), consecutive ones
    concatenated into batches of at most ``limit`` rows; a larger one passes as it is."""
    pending: list[pa.RecordBatch] = []
    rows = 0
    for batch in batches:
        if pending and rows + batch.num_rows > limit:
            yield _concatenated(pending)
            pending, rows = [], 0
        if batch.num_rows >= limit:
            yield batch
            continue
        pending.append(batch)
        rows += batch.num_rows
    if pending:
        yield _concatenated(pending)


def _concatenated(batches: list[pa.RecordBatch]) -> pa.RecordBatch:
    """One batch of ``batches`` (the same columns), each column as stored where every batch stores it
    alike (dictionaries unified by Arrow), decoded where two partitions encoded it differently."""
    if len(batches) == 1:
        return batches[0]
    first = batches[0].schema
    if any(not b.schema.equals(first) for b in batches[1:]):
        differ = {i for b in batches[1:] for i, (f, g) in enumerate(zip(first, b.schema)) if f.type != g.type}
        batches = [pa.RecordBatch.from_arrays([decode_column(c) if i in differ else c
                                               for i, c in enumerate(b.columns)], names=first.names)
                   for b in batches]
    return pa.concat_batches(batches)


def _key_partitions(scan: ScanExec, num_partitions: int) -> Optional[frozenset]:
    """:meth:`ScanExec.key_partitions`, computed: the shard key column's hash as its rows were
    placed (a string key by its collation's keys, raw values otherwise), of the constants of its
    first equality / IN conjunct whose equality implies the placement's (None: none does)."""
    predicate = scan.kernel_filter()
    if predicate is None:
        return None
    names = scan.stored_names()
    types = {f.id: f.type.to_arrow() for f in scan.fields + scan.filter_fields}
    key = scan.shard_key[0].lower()
    collation = (scan.shard_key_collations or (None,))[0]
    for p in predicate.kernel:
        if p.negated or names.get(p.column, "").lower() != key \
                or not (p.kind == "in" or (p.kind == "compare" and p.op == "eq")):
            continue
        # a comparison of collation keys finds the placement's rows only under its collation (with
        # PAD SPACE), and its constants are those keys already; a raw comparison always does (equal
        # values have equal keys)
        keyed = p.key is not None
        if keyed and (collation is None or p.key[0] != collation or (len(p.key) > 1 and not p.key[1])):
            continue
        if any(v is None for v in p.args):
            continue
        try:
            partitions = _hashed_partitions(tuple(p.args), pa.string() if keyed else types[p.column],
                                            None if keyed else collation, num_partitions)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError,
                OverflowError):
            continue
        return partitions
    return None


@functools.lru_cache(maxsize=4096)
def _hashed_partitions(values: tuple, arrow_type: pa.DataType, collation: Optional[str],
                       num_partitions: int) -> frozenset:
    """The partitions placement sends rows with these key values to (their collation's keys hashed
    when ``collation``). Kept: a point query's plan is bound anew for each value, the value recurs."""
    array = pa.array(list(values), type=arrow_type)
    if collation is not None:
        array = collation_keys(array, collation)
    return frozenset(int(i) for i in np.asarray(kernels.partition_ids(kernels.hash_columns([array]), num_partitions)))


def _storage_bounds(predicate: KernelFilter, names: dict[str, str],
                    indexed: tuple[str, ...] = ()) -> list[tuple[str, str, object]]:
    """The kernel conjuncts storage can check against zone maps, by stored column name; an equality
    or IN on a column of ``indexed`` also as ``(column, "index", values)``: a hash index lookup."""
    bounds = []
    with_index = {c.lower() for c in indexed}
    for p in predicate.kernel:
        if p.negated or p.column not in names:
            continue
        if p.key is None:               # zone maps hold stored values, not collation keys
            if p.kind == "compare":
                bounds.append((names[p.column], p.op, p.args if p.op == "between" else p.args[0]))
            elif p.kind == "in":
                bounds.append((names[p.column], "in", p.args))
        # A collated equality looks up its keys in the column's index for its collation
        # (engine.storage.hash_index): the plain one hashes utf8mb4_general_ci keys (a key's key is
        # itself), the UCA one utf8mb4_0900_ai_ci keys; either way the candidates are a superset of
        # the rows the filter keeps.
        if names[p.column].lower() in with_index and (p.kind == "in" or (p.kind == "compare" and p.op == "eq")):
            collation = p.key[0] if p.key is not None else None
            name = index_name(names[p.column], collation)
            bounds.append((name, "index", uca_lookup_keys(tuple(p.args), collation) if name != names[p.column]
                           else tuple(p.args)))
    return bounds
