"""Writes: INSERT ... VALUES, INSERT ... SELECT, LOAD DATA, TRUNCATE.

Every write first builds the complete Arrow table of the target's schema (casting, filling defaults,
checking NOT NULL and string lengths), and only then hands it to the runner, which places all rows or
none. A bad value therefore fails the statement with nothing written.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine import types as T
from engine.catalog import ColumnDef, TableDef
from engine.errors import BadDataError, BindError, ConstraintError, unknown_name_error
from engine.exec.evaluate import evaluate_array
from engine.plan.expressions import Call, ColumnRef


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
            source_type = source_types[index]
            array = batch.column(index)
            if array.type != target:
                ref = ColumnRef(batch.schema.names[index], source_type, column.name)
                try:
                    array = evaluate_array(Call("cast", (ref,), column.type), batch)
                except BadDataError as error:
                    raise BadDataError(f"value for column {column.name!r} of {table.name} does not fit "
                                       f"{column.type}: {error}") from None
            _check_length(array, column, table, first_row)
        if not column.nullable and array.null_count:
            row = first_row + int(np.flatnonzero(pc.is_null(array).to_numpy(zero_copy_only=False))[0])
            raise ConstraintError(f"column {column.name!r} of {table.name} cannot be NULL (row {row})")
        arrays.append(array)
    return pa.Table.from_arrays(arrays, schema=table.arrow_schema)


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
