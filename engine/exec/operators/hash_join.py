from __future__ import annotations

from dataclasses import dataclass
import itertools
from typing import Iterator, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import kernels
from engine.exec.evaluate import evaluate_array, evaluate_predicate
from engine.exec.gather import take, take_ascending
from engine.exec.kernel_filters import mask_indices
from engine.exec.memory import Reservation
from engine.exec.distribution import join_output
from engine.exec.operators.base import PhysicalOperator, TaskContext, conform, one_array
from engine.exec.operators.scan import RuntimeFilter
from engine.exec.operators.spill_partitions import SpillPartitions, hash_type
from engine.core.expressions import ColumnRef, Expr
from engine.core.fields import Field

# No case is left on Acero: TPC-H SF1 CPU time (process_time, median of 5, same process,
# A/B of this operator against the Acero one) is 0.81-0.84x Acero's over all 22 queries
# with the runtime filter, 0.91-0.98x without it; the worst queries are Q2 and Q20 (1.17x with the
# filter, many small joins: not yet isolated).
# The build side is the right input unless the left one is this many times smaller (both are known
# exactly once collected): EXISTS over a big subquery (TPC-H Q4: 57k orders against 3.8M lineitems)
# then builds on the orders.
_SWAP_RATIO = 2
# Runtime Bloom filter: built from the build side's keys when there are at most this many rows
# (16 bits a row: 512 KiB, L2-resident; a bigger build side rarely filters a probe side much, and
# hashing it costs: TPC-H Q4 at SF1 with 1.9M lineitem keys a task went 1.62x slower in CPU time).
BLOOM_MAX_KEYS = 1 << 18
# What kernels.JoinTable holds per build row (its slots and chain links) and per probe row (the ids
# of its match), for memory_limit's accounting.
_TABLE_BYTES_PER_ROW = 24
_PROBE_BYTES_PER_ROW = 8


@dataclass(frozen=True)
class HashJoinExec(PhysicalOperator):
    """Equi-join of one partition of ``left`` (probe) with ``right`` (build, hashed).

    Kinds: inner, left (outer), full (outer), semi, anti, anti_null_aware (NOT IN). ``residual`` is
    evaluated on key-matched pairs; for outer/semi/anti joins a pair failing it counts as no match. Rows
    with a NULL key never match. A full join builds on the right side always and, once every probe row
    is paired, emits the build rows no pair kept (``JoinTable.build_hits``), NULL on the left. The hash table is the compiled join kernel's (``kernels.JoinTable``), built on
    the smaller input; the result's columns are gathered with the index pairs it returns, in batches of
    at most ``kernels.join.DEFAULT_MAX_PAIRS`` rows.

    Runtime join filter: where the planner placed one (``runtime_filters``, by
    :mod:`engine.optimizer.runtime_filters`: a probe key that is a column of a scan in the same stage),
    a Bloom filter over that key's build-side values is handed, under the filter's id, to the scan
    through ``TaskContext.runtime_filters`` before the probe side runs, so the scan drops rows that
    cannot match before decoding their other columns (the scan stops applying it when it does not
    drop enough: see ``ScanExec``).
    """

    left: PhysicalOperator
    right: PhysicalOperator
    kind: str
    left_keys: tuple[Expr, ...]
    right_keys: tuple[Expr, ...]
    residual: Optional[Expr]
    fields: tuple[Field, ...]
    strategy: str = ""            # colocated / broadcast / repartition (for EXPLAIN)
    requires: tuple = ()          # Required per input (None: as it is), chosen by the planner
    runtime_filters: tuple[RuntimeFilter, ...] = ()     # Bloom filters this join builds for a probe-side scan
    # semi / anti join whose probe (left) side is the much smaller one: it runs first, and Bloom
    # filters over its keys (``probe_filters``, key numbers of ``left_keys``) reach the build side's
    # scans and exchanges before that side runs (see ``_execute_probe_first``)
    probe_first: bool = False
    probe_filters: tuple[RuntimeFilter, ...] = ()

    @property
    def children(self):
        return (self.left, self.right)

    def output_distribution(self, inputs):
        return join_output(self.kind, *inputs)

    def describe(self) -> str:
        keys = " AND ".join(f"{l} = {r}" for l, r in zip(self.left_keys, self.right_keys))
        residual = f" residual {self.residual}" if self.residual is not None else ""
        strategy = f" [{self.strategy}]" if self.strategy else ""
        bloom = "".join(f" bloom filter #{f.filter_id} -> Scan {f.table}.{f.column}" for f in self.runtime_filters)
        if self.probe_first:
            bloom += " probe side first" + "".join(
                f" bloom filter #{f.filter_id} (probe keys) -> {f.table}.{f.column}" for f in self.probe_filters)
        return f"HashJoin {self.kind} ON {keys}{residual}{strategy}{bloom}"

    def execute(self, partition: int, ctx: TaskContext) -> Iterator[pa.RecordBatch]:
        # what it holds counts against the query's memory_limit until it has produced its output;
        # past it, a grace hash join (NOT IN needs the whole build side: it cannot spill)
        with ctx.memory.reservation("HashJoin", spillable=self.kind != "anti_null_aware") as memory:
            yield from self._execute(partition, ctx, memory)

    def _execute(self, partition: int, ctx: TaskContext, memory: Reservation) -> Iterator[pa.RecordBatch]:
        if self.probe_first:
            yield from self._execute_probe_first(partition, ctx, memory)
            return
        held, rest = _hold(self.right.execute(partition, ctx), memory, _TABLE_BYTES_PER_ROW)
        if rest is not None:
            yield from self._grace(itertools.chain(held, rest), self.left.execute(partition, ctx), ctx, memory)
            return
        right = _table(held, self.right.schema, self.right, ctx)
        del held
        if right.num_rows == 0 and self.kind in ("inner", "semi"):
            return
        plain_right = right
        right, right_names = _with_keys(right, self.right_keys, "__rk", ctx)
        self._push_bloom_filter(right, right_names, ctx)
        held, rest = _hold(self.left.execute(partition, ctx), memory, _PROBE_BYTES_PER_ROW)
        if rest is not None:
            del right
            yield from self._grace(plain_right.to_batches(), itertools.chain(held, rest), ctx, memory)
            return
        del plain_right
        left = _table(held, self.left.schema, self.left, ctx)
        del held
        yield from self._join(left, right, right_names, ctx, memory)

    def _execute_probe_first(self, partition: int, ctx: TaskContext, memory: Reservation) -> Iterator[pa.RecordBatch]:
        """Semi / anti join, probe side first: only build rows whose key some probe row has can decide
        a probe row's answer, so once the (small) probe side is collected, Bloom filters over its keys
        let the build side's scans and exchanges drop the others before they are decoded, joined or
        grouped (TPC-H Q21: the orders of 156k late lines of one nation's suppliers, against 3.8M
        and 6M lineitem rows). No probe row: no output, and the build side never runs."""
        held, rest = _hold(self.left.execute(partition, ctx), memory, _PROBE_BYTES_PER_ROW)
        if rest is not None:
            yield from self._grace(self.right.execute(partition, ctx), itertools.chain(held, rest), ctx, memory)
            return
        left = _table(held, self.left.schema, self.left, ctx)
        del held
        if left.num_rows == 0:
            return
        if left.num_rows <= BLOOM_MAX_KEYS and self.probe_filters:
            keyed, names = _with_keys(left, self.left_keys, "__lk", ctx)
            blooms = {}
            for f in self.probe_filters:
                if f.filter_id not in blooms:
                    blooms[f.filter_id] = kernels.JoinBloom(keyed.column(names[f.key]))
            ctx.runtime_filters.update(blooms)
            del keyed
        held, rest = _hold(self.right.execute(partition, ctx), memory, _TABLE_BYTES_PER_ROW)
        if rest is not None:
            yield from self._grace(itertools.chain(held, rest), left.to_batches(), ctx, memory)
            return
        right = _table(held, self.right.schema, self.right, ctx)
        del held
        if right.num_rows == 0 and self.kind == "semi":
            return
        right, right_names = _with_keys(right, self.right_keys, "__rk", ctx)
        yield from self._join(left, right, right_names, ctx, memory)

    def _grace(self, right_batches, left_batches, ctx: TaskContext, memory: Reservation) -> Iterator[pa.RecordBatch]:
        """The inputs did not fit: write both to hash partitions of their keys on disk, then join
        partition by partition (equal keys share a partition; a NULL key matches nothing in any)."""
        hash_types = [hash_type(l.type.to_arrow(), r.type.to_arrow()) or _common_type(l.type.to_arrow(), r.type.to_arrow())
                      for l, r in zip(self.left_keys, self.right_keys)]
        sides = []
        for batches, op, keys in ((right_batches, self.right, self.right_keys), (left_batches, self.left, self.left_keys)):
            parts = SpillPartitions(ctx.memory, op.schema, keys, hash_types, ctx.params, operator="HashJoin")
            for batch in batches:
                parts.add(batch)
            memory.free()               # what was held is on disk now
            sides.append(parts)
        yield from self._join_partitions(*sides, ctx, memory)

    def _join_partitions(self, right_parts: SpillPartitions, left_parts: SpillPartitions, ctx: TaskContext,
                         memory: Reservation) -> Iterator[pa.RecordBatch]:
        """Join the spilled partitions pair by pair; a pair that does not fit is split again, both
        sides alike (``SpillPartitions.split``), and joined recursively, until a split no longer
        spreads either side (one key's rows: then it fails past the limit)."""
        try:
            for index in range(len(right_parts.files)):
                if right_parts.rows(index) == 0 and self.kind in ("inner", "semi"):
                    left_parts.read(index)
                    continue
                need = right_parts.bytes(index) + left_parts.bytes(index) + \
                    _TABLE_BYTES_PER_ROW * right_parts.rows(index) + _PROBE_BYTES_PER_ROW * left_parts.rows(index)
                memory.free()
                if (right_parts.splittable(index) or left_parts.splittable(index)) and not memory.try_grow(need):
                    right_split, left_split = right_parts.split(index), left_parts.split(index)
                    yield from self._join_partitions(right_split, left_split, ctx, memory)
                    continue
                right = right_parts.read(index)
                left = left_parts.read(index)
                memory.free()
                memory.grow(right.nbytes + left.nbytes + _TABLE_BYTES_PER_ROW * right.num_rows
                            + _PROBE_BYTES_PER_ROW * left.num_rows, spilled=True)
                right, right_names = _with_keys(right, self.right_keys, "__rk", ctx)
                yield from self._join(left, right, right_names, ctx, memory)
        finally:
            right_parts.discard()
            left_parts.discard()

    def _join(self, left: pa.Table, right: pa.Table, right_names, ctx: TaskContext,
              memory: Reservation) -> Iterator[pa.RecordBatch]:
        """Join the collected inputs (``right`` with its key columns ``right_names``)."""
        if left.num_rows == 0:
            if self.kind == "full" and right.num_rows:
                yield _right_only(right.combine_chunks(), np.arange(right.num_rows), self.schema)
            return
        left, left_names = _with_keys(left, self.left_keys, "__lk", ctx)
        left_keys, right_keys = _comparable(left, left_names, right, right_names)
        out_names = [f.id for f in self.fields]
        kind = self.kind

        if kind in ("semi", "anti") and self.residual is not None:
            inequality = _column_inequality(self.residual, left.schema.names, right.schema.names)
            if inequality is not None:
                yield from _batches(self._semi_anti_inequality(
                    left, right, left_keys, right_keys, *inequality).select(out_names))
                return
        swap = self.residual is None and kind not in ("anti_null_aware", "full") and \
            right.num_rows > _SWAP_RATIO * left.num_rows
        if swap:
            yield from self._build_left(left, right, left_keys, right_keys, out_names, memory)
            return
        table = kernels.JoinTable(right_keys)
        ids = table.lookup(left_keys)
        right = right.combine_chunks()      # the build side: its rows are gathered in any order
        if kind == "anti_null_aware":
            yield from _batches(_take(left, out_names, table.anti(ids, null_aware=True)))
            return
        if self.residual is None:
            if kind == "semi":
                yield from _batches(_take(left, out_names, table.semi(ids)))
            elif kind == "anti":
                yield from _batches(_take(left, out_names, table.anti(ids)))
            else:
                distinct = _unique_keys(table)
                for p, b in table.pairs(ids, outer=kind in ("left", "full")):
                    yield _gather(left, right, out_names, p, b, self.schema, distinct=distinct)
                if kind == "full":
                    unmatched = np.flatnonzero(~table.build_hits(ids))
                    if len(unmatched):
                        yield _right_only(right, unmatched, self.schema)
            return
        yield from self._with_residual(left, right, table, ids, out_names, ctx)

    def _push_bloom_filter(self, right: pa.Table, right_names, ctx: TaskContext) -> None:
        """Build the Bloom filters placed on this join, for the probe side's scans to read by id.
        Built from the build rows as they are (a key repeated sets the same bits), before the probe
        side runs; the hash table itself is built later, on whichever side is smaller."""
        if not 0 < right.num_rows <= BLOOM_MAX_KEYS:
            return
        for f in self.runtime_filters:
            ctx.runtime_filters[f.filter_id] = kernels.JoinBloom(right.column(right_names[f.key]))

    def _build_left(self, left, right, left_keys, right_keys, out_names, memory) -> Iterator[pa.RecordBatch]:
        """No residual, the left input much smaller: hash the left keys, probe with the right."""
        table = kernels.JoinTable(left_keys)
        ids = table.lookup(right_keys)
        if self.kind in ("semi", "anti"):
            hits = table.build_hits(ids)
            yield from _batches(_take(left, out_names, np.flatnonzero(hits if self.kind == "semi" else ~hits)))
            return
        left = left.combine_chunks()
        distinct = _unique_keys(table)
        for r, l in table.pairs(ids):
            yield _gather(left, right, out_names, l, r, self.schema, left_ascending=False, distinct=distinct)
        if self.kind == "left":
            unmatched = np.flatnonzero(~table.build_hits(ids))
            if len(unmatched):
                yield _gather(left, right, out_names, unmatched, np.full(len(unmatched), -1, np.int64), self.schema)

    def _with_residual(self, left, right, table, ids, out_names, ctx) -> Iterator[pa.RecordBatch]:
        """Key-matched pairs filtered by the residual; outer / semi / anti from the probe rows that
        kept a pair. Only the residual's columns are gathered for every key-matched pair; the
        output's, for the pairs it keeps (a residual keeping few of a big fan-out's pairs, TPC-DS
        q72's inventory against catalog_sales, gathered every output column of every pair)."""
        kind = self.kind
        available = set(left.schema.names) | set(right.schema.names)
        # a residual of no column (a constant one) still needs a batch of the pairs' length
        needed = sorted(self.residual.column_ids() & available) or [left.schema.names[0]]
        matched = np.zeros(left.num_rows, dtype=bool) if kind != "inner" else None
        matched_build = np.zeros(right.num_rows, dtype=bool) if kind == "full" else None
        distinct = _unique_keys(table)
        for p, b in table.pairs(ids):
            pairs = _gather(left, right, needed, p, b, None, distinct=distinct)
            keep = mask_indices(evaluate_predicate(self.residual, pairs, ctx.params))
            if not len(keep):
                continue
            p, b = p[keep], b[keep]
            if matched is not None:
                matched[p] = True
            if matched_build is not None:
                matched_build[b] = True
            if kind in ("inner", "left", "full"):
                yield _gather(left, right, out_names, p, b, self.schema, distinct=distinct)
        if kind == "semi":
            yield from _batches(_take(left, out_names, np.flatnonzero(matched)))
        elif kind == "anti":
            yield from _batches(_take(left, out_names, np.flatnonzero(~matched)))
        elif kind in ("left", "full"):
            unmatched = np.flatnonzero(~matched)
            if len(unmatched):
                yield _gather(left, right, out_names, unmatched, np.full(len(unmatched), -1, np.int64), self.schema)
            if kind == "full":
                unmatched = np.flatnonzero(~matched_build)
                if len(unmatched):
                    yield _right_only(right, unmatched, self.schema)

    def _semi_anti_inequality(self, left: pa.Table, right: pa.Table, left_keys, right_keys,
                              left_column: str, right_column: str) -> pa.Table:
        """Semi/anti join whose residual is ``left_column <> right_column`` (TPC-H Q21's "another
        supplier of the same order"), without materializing the key-matched pairs.

        Some right row with an equal key has a different value exactly when the group of right rows
        with that key has non-null values whose MIN or MAX differs from the left value. So the build
        side shrinks to one row per key (MIN, MAX) and the join becomes a one-to-one lookup.
        """
        names = [f"__rk{i}" for i in range(len(right_keys))]
        right = pa.table({**dict(zip(names, right_keys)), right_column: right.column(right_column)})
        if len(names) == 1 and right.num_rows > 4 * left.num_rows:
            # Only keys the probe side has matter: drop the other build rows before grouping them.
            probe = kernels.JoinTable(left_keys)
            right = right.filter(pa.array(probe.lookup([right.column(names[0])]) >= 0))
        groups = right.group_by(names, use_threads=False).aggregate(
            [(right_column, "min"), (right_column, "max")])
        table = kernels.JoinTable([groups.column(n) for n in names])
        ids = table.lookup(left_keys)
        found = np.flatnonzero(ids >= 0)
        value = take_ascending(left.column(left_column), found)
        group = pa.array(table.first_rows[ids[found]])
        lo = groups.column(f"{right_column}_min").take(group)
        hi = groups.column(f"{right_column}_max").take(group)
        differs = pc.or_(pc.not_equal(lo, value), pc.not_equal(hi, value)).fill_null(False)
        hit = np.zeros(left.num_rows, dtype=bool)
        hit[found[differs.to_numpy(zero_copy_only=False)]] = True
        return left.filter(pa.array(hit if self.kind == "semi" else ~hit))


def _hold(batches, memory: Reservation, per_row: int):
    """(the batches held, None) when all of ``batches`` fit in ``memory`` (each batch and ``per_row``
    bytes a row: the hash table's share); else (those held, an iterator over the rest, starting with
    the batch that did not fit). A reservation that cannot spill raises MemoryLimitError instead."""
    held = []
    batches = iter(batches)
    for batch in batches:
        if not batch.num_rows:
            continue
        size = batch.nbytes + per_row * batch.num_rows
        if not memory.spillable:
            memory.grow(size)
        elif not memory.try_grow(size):
            return held, itertools.chain([batch], batches)
        held.append(batch)
    return held, None


def _table(batches: list, schema: pa.Schema, op: PhysicalOperator, ctx: TaskContext) -> pa.Table:
    """The held batches of ``op``'s output as one table (EXPLAIN ANALYZE shows what was held)."""
    table = pa.Table.from_batches([conform(b, schema) for b in batches], schema=schema) if batches \
        else schema.empty_table()
    if ctx.profile is not None and table.num_rows:
        ctx.profile.held(op, table)
    return table


def _with_keys(table: pa.Table, keys: tuple[Expr, ...], prefix: str, ctx: TaskContext):
    names = []
    batch = None
    for i, key in enumerate(keys):
        if isinstance(key, ColumnRef):
            names.append(key.id)
            continue
        if batch is None:
            batch = table.combine_chunks().to_batches()[0] if table.num_rows else \
                pa.RecordBatch.from_pylist([], schema=table.schema)
        name = f"{prefix}{i}"
        table = table.append_column(name, evaluate_array(key, batch, ctx.params))
        names.append(name)
    return table, names


def _comparable(left: pa.Table, left_names, right: pa.Table, right_names):
    """The key columns of both sides, cast where their types differ beyond what the kernel compares
    (decimals of different scales, an integer against a decimal, ...): to the type Arrow unifies
    them to."""
    lk, rk = [left.column(n) for n in left_names], [right.column(n) for n in right_names]
    for i, (a, b) in enumerate(zip(lk, rk)):
        ta, tb = a.type, b.type
        if ta == tb or (pa.types.is_integer(ta) and pa.types.is_integer(tb)):
            continue
        if _string_like(ta) and _string_like(tb):
            continue
        common = _common_type(ta, tb)
        lk[i], rk[i] = a.cast(common), b.cast(common)
    for i, (a, b) in enumerate(zip(lk, rk)):
        if _floating(a.type) or _floating(b.type):
            lk[i], rk[i] = _float_words(a), _float_words(b)
    return lk, rk


def _floating(t) -> bool:
    return pa.types.is_floating(t.value_type if pa.types.is_dictionary(t) else t)


def _float_words(column: pa.ChunkedArray) -> pa.Array:
    """A DOUBLE key (a DOUBLE column, or MySQL's comparison of a number with a string, both cast to
    DOUBLE) as the int64 words the join kernels compare: the bits of the value, with -0.0 made 0.0
    and every NaN one NaN, so equal values have equal words. Nulls stay null (they never match)."""
    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    values = pc.add(column.cast(pa.float64()), 0.0)            # -0.0 + 0.0 is +0.0
    values = pc.if_else(pc.is_nan(values), float("nan"), values).combine_chunks()
    return values.view(pa.int64())


def _string_like(t) -> bool:
    t = t.value_type if pa.types.is_dictionary(t) else t
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _common_type(a: pa.DataType, b: pa.DataType) -> pa.DataType:
    a = a.value_type if pa.types.is_dictionary(a) else a
    b = b.value_type if pa.types.is_dictionary(b) else b
    if a == b:
        return a
    if pa.types.is_decimal(a) or pa.types.is_decimal(b):
        da = a if pa.types.is_decimal(a) else pa.decimal128(20, 0)
        db = b if pa.types.is_decimal(b) else pa.decimal128(20, 0)
        scale = max(da.scale, db.scale)
        return pa.decimal128(min(38, max(da.precision - da.scale, db.precision - db.scale) + scale), scale)
    return pa.unify_schemas([pa.schema([pa.field("k", a)]), pa.schema([pa.field("k", b)])],
                            promote_options="permissive").field("k").type


def _take(table: pa.Table, names, indices: np.ndarray) -> pa.Table:
    """Rows ``indices`` (strictly ascending: a selection) of the columns ``names``."""
    return pa.table({name: take_ascending(table.column(name), indices, distinct=True) for name in names})


def _gather(left: pa.Table, right: pa.Table, names, left_rows: np.ndarray, right_rows: np.ndarray,
            schema: Optional[pa.Schema], left_ascending: bool = True, distinct: bool = False) -> pa.RecordBatch:
    """One batch of ``names`` from the pairs (left row ``left_rows[k]``, right row ``right_rows[k]``);
    a right row of -1 gives NULLs (left outer join). The probe side's rows are ascending (the
    kernel's pair order): the left's when ``left_ascending``, else the right's; the other side should
    be one chunk per column (its rows are taken in any order). ``distinct``: no probe row repeats (the
    build keys are unique), so a run of consecutive probe rows is a slice of its columns."""
    missing = right_rows < 0
    unmatched = int(np.count_nonzero(missing))
    all_missing = unmatched == len(right_rows) > 0
    if not unmatched:
        missing = None          # (an inner join's pairs) not looked at again per column
    left_names = set(left.schema.names)
    columns = []
    for name in names:
        if name in left_names:
            column = left.column(name)
            column = take_ascending(column, left_rows, distinct) if left_ascending else \
                take(column, left_rows)
        else:
            column = right.column(name)
            if all_missing:
                column = pa.nulls(len(right_rows), column.type)
            elif not left_ascending:
                column = take_ascending(column, right_rows, distinct)
            else:
                column = take(column, right_rows, missing)
        columns.append(one_array(column))
    if schema is not None:
        columns = [c if c.type == f.type else c.cast(f.type) for c, f in zip(columns, schema)]
        return pa.RecordBatch.from_arrays(columns, schema=schema)
    return pa.RecordBatch.from_arrays(columns, names=list(names))


def _unique_keys(table) -> bool:
    """Whether every build row of ``table`` (a ``kernels.JoinTable``) with a key has a key of its own:
    then each probe row has at most one pair."""
    return table.num_keys == table.num_rows - table.null_rows


def _right_only(right: pa.Table, rows: np.ndarray, schema: pa.Schema) -> pa.RecordBatch:
    """The build rows ``rows`` of a full join that no probe row matched: their own columns, NULL for
    the probe side's (``schema``'s other fields)."""
    names = set(right.schema.names)
    columns = [take(right.column(f.name), rows) if f.name in names
               else pa.nulls(len(rows), f.type) for f in schema]
    columns = [c if c.type == f.type else c.cast(f.type) for c, f in zip(columns, schema)]
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _batches(table: pa.Table, max_rows: int = 1 << 20) -> Iterator[pa.RecordBatch]:
    for batch in table.to_batches(max_chunksize=max_rows):
        if batch.num_rows:
            yield batch


def _column_inequality(residual: Expr, left_names, right_names) -> Optional[tuple[str, str]]:
    """(left column, right column) when ``residual`` is ``l <> r`` between a column of each side."""
    from engine.core.expressions import Call
    if not (isinstance(residual, Call) and residual.op == "ne"):
        return None
    a, b = residual.args
    if not (isinstance(a, ColumnRef) and isinstance(b, ColumnRef)):
        return None
    if a.id in left_names and b.id in right_names:
        return a.id, b.id
    if b.id in left_names and a.id in right_names:
        return b.id, a.id
    return None
