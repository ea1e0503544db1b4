"""Writes: INSERT ... VALUES, INSERT ... SELECT, LOAD DATA, TRUNCATE; the row predicates and rewrites
a row-local DELETE and UPDATE hand to storage (:func:`row_change`).

Every write first builds the complete Arrow table of the target's schema (casting, filling defaults,
checking NOT NULL and string lengths), and only then hands it to the runner, which places all rows or
none. A bad value therefore fails the statement with nothing written.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine import types as T
from engine.catalog import ColumnDef, TableDef
from engine.errors import BadDataError, BindError, ConstraintError
from engine.exec import integer_range
from engine.exec.json_functions import check_documents
from engine.exec.evaluate import evaluate_array
from engine.core.expressions import Call, ColumnRef, Expr, Literal, ScalarParam


def target_columns(table: TableDef, names: Optional[Sequence[str]]) -> list[ColumnDef]:
    """The columns an INSERT's column list names (all columns, in order, without a list)."""
    if not names:
        return list(table.columns)
    out, seen = [], set()
    for name in names:
        column = table.column(name)     # raises with the nearest name
        if column.name.lower() in seen:
            raise BindError(f"column {column.name!r} is listed twice")
        seen.add(column.name.lower())
        out.append(column)
    return out


def conform_to_table(data: pa.Table, source_types: Sequence[T.SqlType], table: TableDef,
                     columns: Sequence[ColumnDef], first_row: int = 1) -> pa.Table:
    """Cast ``data`` (one column per entry of ``columns``) to ``table``'s schema.

    Missing columns get their DEFAULT or NULL. Raises BadDataError for a value that does not fit its
    column and ConstraintError for a NULL in a NOT NULL column, naming the column and the row
    (``first_row`` is the number of the first row, for messages).
    """
    if data.num_columns != len(columns):
        raise BindError(f"column count ({len(columns)}) doesn't match value count ({data.num_columns})")
    rows = data.num_rows
    given = {c.name.lower(): i for i, c in enumerate(columns)}
    batch = _as_batch(data)
    arrays = []
    for column in table.columns:
        target = column.type.to_arrow()
        index = given.get(column.name.lower())
        if index is None:
            value = column.default if column.has_default else None
            array = pa.array(np.full(rows, None, dtype=object) if value is None else [value] * rows, type=target) \
                if rows else pa.array([], type=target)
        else:
            array = _converted(batch, index, source_types[index], column, first_row)
            _check_length(array, column, table, first_row)
            if column.type == T.JSON and source_types[index] != T.JSON:     # a JSON result is JSON already
                check_documents(array, lambda row: f"column '{table.name}.{column.name}' at row {first_row + row}")
        if not column.nullable and array.null_count:
            row = first_row + int(np.flatnonzero(pc.is_null(array).to_numpy(zero_copy_only=False))[0])
            raise ConstraintError(f"column {column.name!r} of {table.name} cannot be NULL (row {row})")
        arrays.append(array)
    return pa.Table.from_arrays(arrays, schema=table.arrow_schema)


# integers read from any source for the range check: every value MySQL could round into a column
_EXACT_INTEGER = T.decimal_type(30, 0)


def _converted(batch: pa.RecordBatch, index: int, source_type: T.SqlType, column: ColumnDef,
               first_row: int) -> pa.Array:
    """Column ``index`` of ``batch`` cast to ``column``'s type; a value outside an integer column's
    declared range (INT UNSIGNED and -1, MEDIUMINT and 2^23) or that does not convert is MySQL's
    strict-mode error, naming the column and the row."""
    array, target = batch.column(index), column.type.to_arrow()
    ref = ColumnRef(batch.schema.names[index], source_type, column.name)
    if not integer_range.holds(source_type, column.type):
        exact = array
        if pa.types.is_floating(array.type):
            # MySQL stores a DOUBLE into an integer column rounded half to even (2.5e0 is 2)
            batch = batch.set_column(index, batch.schema.field(index), pc.round(array, round_mode="half_to_even"))
        if not (pa.types.is_integer(array.type) or pa.types.is_decimal(array.type) and array.type.scale == 0):
            exact = _cast_or_explain(batch, ref, _EXACT_INTEGER, column, first_row)
        row = integer_range.first_out_of_range(exact, column.type)
        if row is not None:
            raise BadDataError(f"Out of range value for column {column.name!r} at row {first_row + row}")
        if exact is not array:
            return exact.cast(target)           # whole and in range: the cast is exact
    if array.type == target:
        return array
    return _cast_or_explain(batch, ref, column.type, column, first_row)


def _cast_or_explain(batch: pa.RecordBatch, ref: ColumnRef, to: T.SqlType, column: ColumnDef,
                     first_row: int) -> pa.Array:
    """``CAST(ref AS to)`` over ``batch``; a value that does not convert is named with its row (found by
    bisection, only once the cast has failed), in MySQL's words rather than Arrow's."""
    cast = Call("cast", (ref,), to, ("strict",))
    try:
        return evaluate_array(cast, batch)
    except BadDataError:
        pass
    low, high = 0, batch.num_rows               # the first bad value lies in rows [low, high)
    while high - low > 1:
        middle = (low + high) // 2
        try:
            evaluate_array(cast, batch.slice(low, middle - low))
            low = middle
        except BadDataError:
            high = middle
    value = batch.column(ref.id)[low].as_py()
    if ref.type.kind == "string":
        kind = "int" if column.type.unsigned else column.type.kind
        what = {"int": "integer", "decimal": "decimal", "float": "double"}.get(kind, str(column.type).lower())
        raise BadDataError(f"Incorrect {what} value: {value!r} for column {column.name!r} at row "
                           f"{first_row + low}") from None
    raise BadDataError(f"Out of range value for column {column.name!r} at row {first_row + low}") from None


def _as_batch(data: pa.Table) -> pa.RecordBatch:
    data = data.combine_chunks()
    names = [f"c{i}" for i in range(data.num_columns)]
    if data.num_rows == 0:
        return pa.RecordBatch.from_arrays([pa.array([], c.type) for c in data.columns], names=names)
    return pa.RecordBatch.from_arrays([c.chunk(0) if c.num_chunks else pa.array([], c.type) for c in data.columns],
                                      names=names)


def _check_length(array: pa.Array, column: ColumnDef, table: TableDef, first_row: int) -> None:
    limit = column.type.length
    if column.type.kind != "string" or limit is None or len(array) == 0:
        return
    lengths = pc.utf8_length(array)
    too_long = pc.greater(lengths, limit)
    if pc.any(too_long).as_py():
        row = int(np.flatnonzero(too_long.fill_null(False).to_numpy(zero_copy_only=False))[0])
        raise BadDataError(f"value too long for column {column.name!r} of {table.name} ({column.type}) "
                           f"at row {first_row + row}")


def rows_to_table(rows: Sequence[Sequence], types: Sequence[T.SqlType]) -> pa.Table:
    """Constant rows (already folded to Python values of ``types``) as an Arrow table."""
    arrays = [pa.array([r[i] for r in rows], type=t.to_arrow()) for i, t in enumerate(types)]
    return pa.Table.from_arrays(arrays, names=[f"c{i}" for i in range(len(types))])


@dataclass(frozen=True)
class RowMatcher:
    """A DELETE/UPDATE predicate evaluated by storage on each batch of a partition's rows (see
    ``prepare_delete``): ``columns`` are the table columns it reads, ``ids`` the bound field id of
    each, ``bounds`` the conjuncts zone maps can check. A row matches where the predicate is TRUE."""

    predicate: Expr
    columns: tuple[str, ...]
    ids: tuple[str, ...]
    bounds: tuple = ()

    def __call__(self, batch: pa.RecordBatch) -> np.ndarray:
        renamed = pa.RecordBatch.from_arrays(batch.columns, names=list(self.ids))
        result = evaluate_array(self.predicate, renamed)
        if result.null_count:
            result = result.fill_null(False)
        return result.to_numpy(zero_copy_only=False).astype(bool, copy=False)


@dataclass(frozen=True)
class RowRewrite:
    """UPDATE's new version of matched rows: one bound expression per table column, over the ids of
    ``columns``; the result is cast and checked like an INSERT's rows."""

    table: TableDef
    exprs: tuple[Expr, ...]
    columns: tuple[str, ...]
    ids: tuple[str, ...]

    def __call__(self, batches: Sequence[pa.RecordBatch]) -> pa.Table:
        schema = self.table.arrow_schema
        if not batches:
            return schema.empty_table()
        data = pa.Table.from_batches(batches, schema=schema).select(list(self.columns)).combine_chunks()
        batch = pa.RecordBatch.from_arrays([c.chunk(0) if c.num_chunks else pa.array([], c.type) for c in data.columns],
                                           names=list(self.ids))
        values = pa.Table.from_arrays([evaluate_array(e, batch) for e in self.exprs],
                                      names=[f"c{i}" for i in range(len(self.exprs))])
        return conform_to_table(values, [e.type for e in self.exprs], self.table, list(self.table.columns))


@dataclass(frozen=True)
class RowChange:
    """A row-local DELETE / UPDATE as storage runs it: the WHERE (``predicate``, over the scan's
    ``fields``) and, for an UPDATE, one new value per table column. ``subqueries``: uncorrelated scalar
    subqueries (init plans, ``$subqueryN`` in the expressions), whose values :meth:`bound` puts in
    before storage sees the expressions."""

    table: TableDef
    predicate: Expr
    exprs: Optional[tuple[Expr, ...]]           # None: DELETE, or an UPDATE that changes nothing
    column_names: tuple[str, ...]
    field_ids: tuple[str, ...]
    subqueries: tuple = ()

    def bound(self, values: Sequence = ()) -> tuple[RowMatcher, Optional[RowRewrite]]:
        """(the matcher, the rewrite or None) with ``values`` of the subqueries in place."""
        from engine.exec.kernel_filters import KernelFilter
        from engine.exec.operators.scan import _storage_bounds
        predicate = _with_values(self.predicate, values)
        name_of = dict(zip(self.field_ids, self.column_names))
        # a predicate of constants still reads one column: batches carry their row count in columns
        used = [i for i in self.field_ids if i in predicate.column_ids()] or [self.field_ids[0]]
        bounds = tuple(_storage_bounds(KernelFilter.of(predicate), name_of))
        matcher = RowMatcher(predicate, tuple(name_of[i] for i in used), tuple(used), bounds)
        if self.exprs is None:
            return matcher, None
        exprs = tuple(_with_values(e, values) for e in self.exprs)
        return matcher, RowRewrite(self.table, exprs, self.column_names, self.field_ids)


def _with_values(expr: Expr, values: Sequence) -> Expr:
    """``expr`` with each ``$subqueryN`` replaced by its value."""
    if isinstance(expr, ScalarParam):
        return Literal(values[expr.index], expr.type)
    if isinstance(expr, Call):
        args = tuple(_with_values(a, values) for a in expr.args)
        if args != expr.args:
            return Call(expr.op, args, expr.type, expr.options)
    return expr


def row_change(catalog, database: Optional[str], table: TableDef, select) -> Optional[RowChange]:
    """The storage-side form of ``select`` (``SELECT <one expression per table column, or *> FROM
    table WHERE <predicate>``), or None when the statement is not row-local (correlated subqueries,
    IN / EXISTS subqueries, aggregates): the caller runs it as a query. Uncorrelated scalar subqueries
    are row-local: their values are computed first (``RowChange.subqueries``)."""
    from engine.errors import UnsupportedError
    from engine.plan.binder import Binder
    from engine.plan.logical import Filter, Project, Scan

    binder = Binder(catalog, database)
    try:
        query = binder.bind_statement(select)
    except UnsupportedError:
        return None
    plan = query.root
    if binder.cte_uses or not isinstance(plan, Project) or any(s.subqueries for s in query.subqueries):
        return None
    scan, predicate = plan.input, None
    if isinstance(scan, Filter):
        scan, predicate = scan.input, scan.predicate
    if not isinstance(scan, Scan) or scan.filters or scan.table.table_id != table.table_id:
        return None
    if predicate is None:                   # a WHERE the binder folded to TRUE
        predicate = Literal(True, T.BOOLEAN)
    name_of = {f.id: name for f, name in zip(scan.fields, scan.column_names)}
    exprs = tuple(e for _, e in plan.exprs)
    if len(exprs) != len(table.columns):
        return None
    ids = tuple(f.id for f in scan.fields)
    if all(isinstance(e, ColumnRef) and name_of.get(e.id) == c.name for e, c in zip(exprs, table.columns)):
        exprs = None
    return RowChange(table, predicate, exprs, tuple(scan.column_names), ids, query.subqueries)
