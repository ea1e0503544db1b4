from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.exec.evaluate import evaluate_array, evaluate_predicate
from engine.exec.operators.base import PhysicalOperator, TaskContext, collect, table_to_batches
from engine.plan.expressions import ColumnRef, Expr
from engine.plan.logical import Field

_ROW_ID = "__canopy_row_id"
_ACERO_KIND = {"inner": "inner", "left": "left outer", "semi": "left semi", "anti": "left anti"}
# The same join with the inputs swapped: Acero builds its hash table on the right input, so the smaller
# input (known exactly once both are collected) goes right. EXISTS over a big subquery (TPC-H Q4: 57k
# orders against 3.8M lineitems) then builds on the orders.
_SWAPPED_KIND = {"inner": "inner", "left": "right outer", "semi": "right semi", "anti": "right anti"}


@dataclass(frozen=True)
class HashJoinExec(PhysicalOperator):
    """Equi-join of one partition of ``left`` (probe) with ``right`` (build, hashed).

    Kinds: inner, left (outer), semi, anti, anti_null_aware (NOT IN). ``residual`` is evaluated on
    key-matched pairs; for outer/semi/anti joins a pair failing it counts as no match. Rows with a NULL
    key never match. The hash table is built by Arrow's Acero engine on the right input.
    """

    left: PhysicalOperator
    right: PhysicalOperator
    kind: str
    left_keys: tuple[Expr, ...]
    right_keys: tuple[Expr, ...]
    residual: Optional[Expr]
    fields: tuple[Field, ...]
    strategy: str = ""            # colocated / broadcast / repartition (for EXPLAIN)

    @property
    def children(self):
        return (self.left, self.right)

    def describe(self) -> str:
        keys = " AND ".join(f"{l} = {r}" for l, r in zip(self.left_keys, self.right_keys))
        residual = f" residual {self.residual}" if self.residual is not None else ""
        strategy = f" [{self.strategy}]" if self.strategy else ""
        return f"HashJoin {self.kind} ON {keys}{residual}{strategy}"

    def execute(self, partition: int, ctx: TaskContext) -> Iterator[pa.RecordBatch]:
        right = collect(self.right, partition, ctx)
        if right.num_rows == 0 and self.kind in ("inner", "semi"):
            return
        left = collect(self.left, partition, ctx)
        if left.num_rows == 0:
            return
        left, left_names = _with_keys(left, self.left_keys, "__lk", ctx)
        right, right_names = _with_keys(right, self.right_keys, "__rk", ctx)
        out_names = [f.id for f in self.fields]
        kind = self.kind

        if kind == "anti_null_aware":
            yield from table_to_batches(self._not_in(left, right, left_names, right_names).select(out_names))
            return
        if self.residual is None:
            yield from table_to_batches(_acero_join(left, right, left_names, right_names, kind).select(out_names))
            return
        if kind in ("semi", "anti"):
            inequality = _column_inequality(self.residual, left.schema.names, right.schema.names)
            if inequality is not None:
                yield from table_to_batches(self._semi_anti_inequality(
                    left, right, left_names, right_names, *inequality).select(out_names))
                return
        # residual: inner-join on the keys, filter, then derive outer / semi / anti from matched row ids
        left = left.append_column(_ROW_ID, pa.array(np.arange(left.num_rows, dtype=np.int64)))
        pairs = left.join(right, keys=left_names, right_keys=right_names, join_type="inner",
                          coalesce_keys=False, use_threads=False)
        pairs = _filter_table(pairs, self.residual, ctx)
        if kind == "inner":
            yield from table_to_batches(pairs.select(out_names))
            return
        matched = pc.unique(pairs.column(_ROW_ID))
        hit = pc.is_in(left.column(_ROW_ID), value_set=matched)
        if kind == "semi":
            yield from table_to_batches(left.filter(hit).select(out_names))
        elif kind == "anti":
            yield from table_to_batches(left.filter(pc.invert(hit)).select(out_names))
        elif kind == "left":
            unmatched = left.filter(pc.invert(hit))
            right_fields = [f for f in self.fields if f.id not in left.schema.names]
            pad = {f.id: pa.nulls(unmatched.num_rows, f.type.to_arrow()) for f in right_fields}
            padded = pa.table({**{n: unmatched.column(n) for n in out_names if n in unmatched.schema.names}, **pad})
            yield from table_to_batches(pairs.select(out_names))
            yield from table_to_batches(padded.select(out_names).cast(pairs.select(out_names).schema))

    def _semi_anti_inequality(self, left: pa.Table, right: pa.Table, left_names, right_names,
                              left_column: str, right_column: str) -> pa.Table:
        """Semi/anti join whose residual is ``left_column <> right_column`` (TPC-H Q21's "another
        supplier of the same order"), without materializing the key-matched pairs.

        Some right row with an equal key has a different value exactly when the group of right rows
        with that key has non-null values whose MIN or MAX differs from the left value. So the build
        side shrinks to one row per key (MIN, MAX) and the join becomes a one-to-one lookup.
        """
        if len(right_names) == 1 and right.num_rows > 4 * left.num_rows:
            # Only keys the probe side has matter: drop the other build rows before grouping them.
            wanted = pc.unique(left.column(left_names[0]).combine_chunks())
            right = right.filter(pc.is_in(right.column(right_names[0]), value_set=wanted))
        groups = right.group_by(right_names, use_threads=False).aggregate(
            [(right_column, "min"), (right_column, "max")])
        lo, hi = f"{right_column}_min", f"{right_column}_max"
        left = left.append_column(_ROW_ID, pa.array(np.arange(left.num_rows, dtype=np.int64)))
        probe = left.select(left_names + [left_column, _ROW_ID])
        joined = probe.join(groups, keys=left_names, right_keys=right_names, join_type="inner",
                            coalesce_keys=False, use_threads=False)
        value = joined.column(left_column)
        differs = pc.or_(pc.not_equal(joined.column(lo), value), pc.not_equal(joined.column(hi), value))
        matched = joined.column(_ROW_ID).filter(differs.fill_null(False))
        hit = np.zeros(left.num_rows, dtype=bool)
        hit[matched.to_numpy()] = True
        return left.filter(pa.array(hit if self.kind == "semi" else ~hit))

    def _not_in(self, left: pa.Table, right: pa.Table, left_names, right_names) -> pa.Table:
        """NOT IN: no row survives if the subquery returned a NULL; a NULL probe survives only an empty set."""
        if right.num_rows == 0:
            return left
        if any(right.column(n).null_count for n in right_names):
            return left.slice(0, 0)
        result = left.join(right, keys=left_names, right_keys=right_names, join_type="left anti",
                           coalesce_keys=False, use_threads=False)
        for n in left_names:
            result = result.filter(pc.is_valid(result.column(n)))
        return result


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


def _filter_table(table: pa.Table, predicate: Expr, ctx: TaskContext) -> pa.Table:
    if table.num_rows == 0:
        return table
    batch = table.combine_chunks().to_batches()[0]
    return table.filter(evaluate_predicate(predicate, batch, ctx.params))


def _column_inequality(residual: Expr, left_names, right_names) -> Optional[tuple[str, str]]:
    """(left column, right column) when ``residual`` is ``l <> r`` between a column of each side."""
    from engine.plan.expressions import Call
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


def _acero_join(left: pa.Table, right: pa.Table, left_names, right_names, kind: str) -> pa.Table:
    """``left <kind> right`` on the key columns, building the hash table on the smaller input."""
    if right.num_rows > 2 * left.num_rows:
        return right.join(left, keys=right_names, right_keys=left_names, join_type=_SWAPPED_KIND[kind],
                          coalesce_keys=False, use_threads=False)
    return left.join(right, keys=left_names, right_keys=right_names, join_type=_ACERO_KIND[kind],
                     coalesce_keys=False, use_threads=False)
