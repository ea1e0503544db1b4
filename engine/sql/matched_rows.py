"""DELETE and UPDATE whose rows a query finds: the statement becomes ``SELECT <the target's columns>
[, <each column's new value>] FROM <its FROM clause, joins included> WHERE <its WHERE>``, planned and run
like any query (optimizer, stages, both runners: subqueries, semi-joins, multi-table
``UPDATE t JOIN u ... SET`` and ``DELETE t FROM t JOIN u``), and storage then removes the rows of the
target equal to a matched row (:class:`RowSetMatcher`), an UPDATE inserting each one's new version in
the same statement (:class:`MatchedRewrite`), through the runner's in-place delete (delete bitmaps).

Rows are matched by content: by a unique key whose columns are NOT NULL when the table has one
(:func:`identity_columns`), else by every column. That is exact: two rows of the target equal in every
column are matched by the same WHERE, join and subqueries alike, so both are in the query's result or
neither is; and the statement holds the target's exclusive write lock from the query to its commit, so
no row can be added in between. Storage reads only those columns, skips segments by their zone maps
(:func:`matcher_of`), and hashes only the rows whose most telling column holds a matched value.
A statement whose WHERE reads the target's own columns only goes to storage as a predicate instead
(:func:`engine.sql.dml.row_change`), without a query.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import kernels
from engine.catalog import TableDef
from engine.errors import CanopyInternalError


def identity_columns(table: TableDef) -> tuple[str, ...]:
    """The columns that tell ``table``'s rows apart: a unique key's, when none of them may be NULL
    (the key is enforced on every write, so it names one row), else every column."""
    for key in table.unique_keys:
        columns = [table.column(c) for c in key.columns]
        if not any(c.nullable for c in columns):
            return tuple(c.name for c in columns)
    return tuple(table.arrow_schema.names)


def matcher_of(columns: Sequence[str], rows: pa.Table) -> "RowSetMatcher":
    """A :class:`RowSetMatcher` of ``rows`` (distinct, columns ``columns``) with zone-map bounds: each
    column without NULLs among ``rows`` lies between their least and greatest value, so a segment
    whose zone map lies outside holds no match and is not read."""
    bounds = []
    for name, column in zip(columns, rows.columns):
        t = column.type
        if column.null_count or not rows.num_rows or not (pa.types.is_integer(t) or pa.types.is_decimal(t) or
                                                           pa.types.is_temporal(t) or pa.types.is_string(t)):
            continue
        low, high = pc.min_max(column).values()
        bounds.append((name, "between", (low.as_py(), high.as_py())))
    return RowSetMatcher(tuple(columns), rows, tuple(bounds))


def distinct_rows(rows: pa.Table, new: "pa.Table | None" = None) -> tuple[pa.Table, "pa.Table | None"]:
    """The distinct rows of ``rows`` (NULLs equal, as in GROUP BY) and, with ``new`` (one row per row
    of ``rows``), the new row beside each one kept: a row that a join matches several times is
    changed once, as MySQL's multi-table UPDATE does (with one of the new values, as MySQL's)."""
    rows = rows.combine_chunks()
    if not rows.num_rows:
        return rows, new
    batch = pa.RecordBatch.from_arrays([c.chunk(0) if c.num_chunks else pa.array([], c.type) for c in rows.columns],
                                       schema=rows.schema)
    # each row's first equal row (in the matcher's order): a row is kept where that is itself
    kept = pa.array(np.flatnonzero(RowSetMatcher(tuple(rows.column_names), rows).positions(batch)
                                   == np.arange(rows.num_rows)))
    return rows.take(kept), (None if new is None else new.take(kept))


@dataclass(frozen=True)
class RowSetMatcher:
    """A storage matcher (see ``engine.storage.memory.MemoryPartitionStore.delete_rows``) selecting the
    rows equal in every column to one of ``rows`` (distinct, of the table's schema): a row's hash
    (``kernels.hash_columns``) finds its candidates, which are then compared column by column, NULL
    equal to NULL."""

    columns: tuple[str, ...]
    rows: pa.Table
    bounds: tuple = ()
    _index: dict = field(default_factory=dict, compare=False, repr=False)

    def __call__(self, batch: pa.RecordBatch) -> np.ndarray:
        return self.positions(batch) >= 0

    def __getstate__(self):         # the index is rebuilt where the matcher runs (a Ray leaf)
        return {"columns": self.columns, "rows": self.rows, "bounds": self.bounds}

    def __setstate__(self, state) -> None:
        for name, value in {**state, "_index": {}}.items():
            object.__setattr__(self, name, value)

    def positions(self, batch: pa.RecordBatch) -> np.ndarray:
        """Per row of ``batch``, the index of the equal row of ``rows``, or -1."""
        out = np.full(batch.num_rows, -1, dtype=np.int64)
        if not batch.num_rows or not self.rows.num_rows:
            return out
        order, hashes, hashed = self._sorted()
        # the rows whose most telling column holds a value of ``rows`` are the only ones hashed
        probe, values = self._index["probe"]
        column = batch.column(probe)
        if values.type != column.type:
            values = self._index["probe"][1] = values.cast(column.type)
        maybe = np.flatnonzero(pc.is_in(column, value_set=values, skip_nulls=False).to_numpy(zero_copy_only=False))
        if not len(maybe):
            return out
        some = batch.take(pa.array(maybe)) if len(maybe) < batch.num_rows else batch
        mine = _row_hashes([some.column(i) for i in hashed], some.num_rows)
        at = np.searchsorted(hashes, mine)
        found = at < len(hashes)
        found[found] = hashes[at[found]] == mine[found]
        candidates, slot = np.flatnonzero(found), at[found]
        matched = np.full(some.num_rows, -1, dtype=np.int64)
        rows = self._index["rows"]
        while len(candidates):
            targets = order[slot]
            equal = _rows_equal(some.take(pa.array(candidates)), rows.take(pa.array(targets)))
            matched[candidates[equal]] = targets[equal]
            # a hash shared by several rows (a collision): try the next row of the same hash
            candidates, slot = candidates[~equal], slot[~equal] + 1
            more = slot < len(hashes)
            candidates, slot = candidates[more], slot[more]
            same = hashes[slot] == mine[candidates]
            candidates, slot = candidates[same], slot[same]
        out[maybe] = matched
        return out

    def _sorted(self) -> tuple[np.ndarray, np.ndarray, list[int]]:
        """(row order by hash, the sorted hashes, the columns hashed) of ``rows``, made once."""
        if "order" not in self._index:
            rows = self.rows.combine_chunks()
            hashed = [i for i, f in enumerate(rows.schema) if _hashable(f.type)]
            hashes = _row_hashes([rows.column(i) for i in hashed], rows.num_rows)
            order = np.argsort(hashes, kind="stable")
            distinct = [pc.count_distinct(c, mode="all").as_py() for c in rows.columns]
            probe = int(np.argmax(distinct))
            self._index.update(order=order, hashes=hashes[order], hashed=hashed, rows=rows,
                               probe=[probe, pc.unique(rows.column(probe))])
        return self._index["order"], self._index["hashes"], self._index["hashed"]


@dataclass(frozen=True)
class MatchedRewrite:
    """UPDATE's new versions of the rows ``matcher`` deletes: per deleted row, the row of ``new`` beside
    the row of ``matcher.rows`` it equals (``new`` is conformed to the table already)."""

    matcher: RowSetMatcher
    new: pa.Table

    def __call__(self, batches: Sequence[pa.RecordBatch]) -> pa.Table:
        if not batches:
            return self.new.schema.empty_table()
        columns = list(self.matcher.columns)
        found = np.concatenate([self.matcher.positions(b.select(columns)) for b in batches])
        if (found < 0).any():       # storage deleted a row the matcher does not match
            raise CanopyInternalError("UPDATE: a deleted row has no new version")
        return self.new.take(pa.array(found))


_UNHASHED = (pa.types.is_struct, pa.types.is_list, pa.types.is_map, pa.types.is_large_list)


def _hashable(t: pa.DataType) -> bool:
    return not any(test(t) for test in _UNHASHED) and not isinstance(t, pa.ExtensionType)


def _row_hashes(columns: list, rows: int) -> np.ndarray:
    """One hash per row over ``columns`` (none: every row alike, each then compared in full)."""
    if not columns:
        return np.zeros(rows, dtype=np.uint64)
    return kernels.hash_columns(columns)


def _rows_equal(a: pa.RecordBatch, b: pa.Table) -> np.ndarray:
    """Row by row, whether ``a`` and ``b`` hold the same values (NULL equal to NULL, NaN to NaN)."""
    equal = np.ones(a.num_rows, dtype=bool)
    for x, y in zip(a.columns, b.columns):
        y = y.combine_chunks() if isinstance(y, pa.ChunkedArray) else y
        if y.type != x.type:
            y = y.cast(x.type)
        same = pc.fill_null(pc.equal(x, y), False)
        if x.null_count or y.null_count:
            same = pc.or_(same, pc.and_(pc.is_null(x), pc.is_null(y)))
        if pa.types.is_floating(x.type):
            same = pc.or_(same, pc.and_(pc.is_nan(x), pc.is_nan(y)).fill_null(False))
        equal &= same.to_numpy(zero_copy_only=False)
    return equal
