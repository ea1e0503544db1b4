"""Arrow data from outside the SQL path (a Parquet file, a Python caller's Arrow table or DataFrame) made
into a table's exact schema, with the same checks LOAD DATA applies to a text file.

Columns match the table's by name, case-insensitively; a table column the source lacks gets its DEFAULT
(or NULL); a source column the table lacks is an error, as is a value that does not convert, a NULL in a
NOT NULL column, text longer than CHAR(n)/VARCHAR(n) or a DECIMAL wider than its precision. Errors name
the source, the 1-based row and the column.

>>> from engine.catalog import ColumnDef, TableDef
>>> from engine.types import BIGINT, TEXT
>>> t = TableDef("db", "t", (ColumnDef("a", BIGINT), ColumnDef("b", TEXT)))
>>> conform_arrow(pa.table({"B": ["x"], "a": ["7"]}), t, "input").to_pylist()
[{'a': 7, 'b': 'x'}]
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from engine.catalog import ColumnDef, TableDef
from engine.errors import BadDataError, BindError, ConstraintError, UnsupportedError
from engine.exec.arrow_errors import sql_message, sql_type_word
from engine.exec.integer_range import first_out_of_range
from engine.load.failing_rows import first_failing


def to_arrow_table(data: Any) -> pa.Table:
    """An Arrow table from what a Python caller passes: an Arrow table or record batch, a pandas or Polars
    DataFrame, or anything speaking the Arrow C stream protocol."""
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    module = type(data).__module__.split(".")[0]
    if module == "pandas":
        return pa.Table.from_pandas(data, preserve_index=False)
    if module == "polars" and hasattr(data, "to_arrow"):
        return data.to_arrow()
    if hasattr(data, "__arrow_c_stream__"):
        return pa.table(data)
    raise BindError(f"cannot load a {type(data).__name__}: pass a pyarrow Table or RecordBatch, or a pandas "
                    f"or Polars DataFrame")


def conform_arrow(data: "pa.Table | pa.RecordBatch", table: TableDef, source: str,
                  columns: Optional[Sequence[str]] = None, first_row: int = 0) -> pa.Table:
    """``data`` as a table of ``table.arrow_schema`` (see the module docstring). ``columns`` limits which
    source columns are read (LOAD DATA's column list); ``first_row`` numbers rows of a later batch."""
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    by_name: dict[str, int] = {}
    for i, name in enumerate(data.column_names):
        if name.lower() in by_name:
            raise BindError(f"{source}: column {name!r} appears twice")
        by_name[name.lower()] = i
    wanted = [c.lower() for c in columns] if columns else list(by_name)
    for name in wanted:
        if name.startswith("@"):
            raise UnsupportedError(f"{source}: @variables in the column list of a columnar load")
        table.column_index(name)                           # BindError, with a did-you-mean
        if name not in by_name:
            raise BindError(f"{source}: the file has no column {name!r} (it has "
                            f"{', '.join(data.column_names)})")
    arrays = []
    for column in table.columns:
        index = by_name.get(column.name.lower()) if column.name.lower() in wanted else None
        if index is None:
            arrays.append(_default(column, data.num_rows, source))
            continue
        arrays.append(_converted(data.column(index), column, source, first_row))
    return pa.Table.from_arrays(arrays, schema=table.arrow_schema)


def _converted(values: pa.ChunkedArray, column: ColumnDef, source: str, first_row: int) -> pa.ChunkedArray:
    target = column.type.to_arrow()
    if values.type != target:
        if pa.types.is_dictionary(values.type):
            values = values.cast(values.type.value_type)
        if pa.types.is_integer(values.type) or pa.types.is_decimal(values.type) and values.type.scale == 0:
            _check_range(values, column, source, first_row)     # before a narrowing cast can fail on it
        try:
            values = values.cast(target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
            row = first_failing(values, lambda chunk: chunk.cast(target))
            if row is None:
                raise BadDataError(f"{source}: column {column.name!r}: cannot convert "
                                   f"{sql_type_word(str(values.type))} to {column.type}: "
                                   f"{sql_message(str(error), str(column.type))}") from None
            raise BadDataError(f"{source}: row {first_row + row + 1}, column {column.name!r}: cannot "
                               f"convert {values[row].as_py()!r} to {column.type}") from None
    _check(values, column, source, first_row)
    return values


def _check(values: pa.ChunkedArray, column: ColumnDef, source: str, first_row: int) -> None:
    sql_type = column.type
    if not column.nullable and values.null_count:
        row = pc.index(pc.is_null(values), True).as_py()
        raise ConstraintError(f"{source}: row {first_row + row + 1}: NULL in NOT NULL column {column.name!r}")
    if sql_type.kind == "string" and sql_type.length is not None and len(values):
        lengths = pc.utf8_length(values)
        longest = pc.max(lengths).as_py()
        if longest is not None and longest > sql_type.length:
            row = pc.index(pc.greater(lengths, sql_type.length), True).as_py()
            raise BadDataError(f"{source}: row {first_row + row + 1}, column {column.name!r}: value of "
                               f"{lengths[row].as_py()} characters is too long for {sql_type}")
    _check_range(values, column, source, first_row)         # INT UNSIGNED in int64, MEDIUMINT in int32
    if sql_type.kind == "decimal" and len(values) > values.null_count:
        limit = 10 ** (sql_type.precision - sql_type.scale)
        low, high = pc.min_max(values).values()
        if high.as_py() >= limit or low.as_py() <= -limit:
            wide = pa.decimal256(76, sql_type.scale)
            row = pc.index(pc.greater_equal(pc.abs(values.cast(wide)), pa.scalar(limit).cast(wide)), True).as_py()
            raise BadDataError(f"{source}: row {first_row + row + 1}, column {column.name!r}: value "
                               f"{values[row].as_py()} is out of range for {sql_type}")


def _check_range(values: pa.ChunkedArray, column: ColumnDef, source: str, first_row: int) -> None:
    row = first_out_of_range(values, column.type)
    if row is not None:
        raise BadDataError(f"{source}: row {first_row + row + 1}, column {column.name!r}: Out of range value "
                           f"{values[row].as_py()} for {column.type}")


def _default(column: ColumnDef, num_rows: int, source: str) -> pa.Array:
    arrow_type = column.type.to_arrow()
    if column.has_default and column.default is not None:
        return pa.repeat(pa.scalar(column.default, arrow_type), num_rows)
    if not column.nullable and num_rows:
        raise ConstraintError(f"{source}: column {column.name!r} is NOT NULL, is not in the input and has no "
                              f"non-NULL DEFAULT")
    return pa.nulls(num_rows, arrow_type)
