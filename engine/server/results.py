"""Engine results as MySQL result sets: column definitions and rows for the text and binary protocols.

Text protocol rows are built column by column in Arrow (each column cast once to MySQL's text form:
``1``/``0`` for booleans, ``YYYY-MM-DD hh:mm:ss`` for DATETIME, decimals with their scale), then handed
to mysql-mimic's row writer as tuples of strings. The binary protocol needs typed values, converted
per column at the same boundary as the DB-API's fetch.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pyarrow as pa
import pyarrow.compute as pc
from mysql_mimic.charset import CharacterSet
from mysql_mimic.results import ResultColumn
from mysql_mimic.types import ColumnDefinition, ColumnType

from engine.result import ColumnInfo, Result

# MySQL column type for each SQL type name Canopy reports (ColumnInfo.sql_type's base name)
COLUMN_TYPES = {
    "BOOLEAN": ColumnType.TINY, "BOOL": ColumnType.TINY, "TINYINT": ColumnType.TINY,
    "SMALLINT": ColumnType.SHORT, "MEDIUMINT": ColumnType.INT24, "INT": ColumnType.LONG,
    "INTEGER": ColumnType.LONG, "BIGINT": ColumnType.LONGLONG, "FLOAT": ColumnType.FLOAT,
    "DOUBLE": ColumnType.DOUBLE, "REAL": ColumnType.DOUBLE, "DECIMAL": ColumnType.NEWDECIMAL,
    "NUMERIC": ColumnType.NEWDECIMAL, "DATE": ColumnType.DATE, "DATETIME": ColumnType.DATETIME,
    "TIMESTAMP": ColumnType.TIMESTAMP, "TIME": ColumnType.TIME, "YEAR": ColumnType.YEAR,
    "JSON": ColumnType.JSON, "CHAR": ColumnType.STRING, "VARCHAR": ColumnType.VAR_STRING,
    "TEXT": ColumnType.BLOB, "TINYTEXT": ColumnType.BLOB, "MEDIUMTEXT": ColumnType.BLOB,
    "LONGTEXT": ColumnType.BLOB, "BINARY": ColumnType.STRING, "VARBINARY": ColumnType.VAR_STRING,
    "BLOB": ColumnType.BLOB, "TINYBLOB": ColumnType.BLOB, "MEDIUMBLOB": ColumnType.BLOB,
    "LONGBLOB": ColumnType.BLOB, "NULL": ColumnType.NULL,
}
BINARY_TYPES = {"BINARY", "VARBINARY", "BLOB", "TINYBLOB", "MEDIUMBLOB", "LONGBLOB"}
# display widths MySQL reports (clients size their columns by them; the mysql CLI aligns on them)
LENGTHS = {ColumnType.TINY: 4, ColumnType.SHORT: 6, ColumnType.INT24: 9, ColumnType.LONG: 11,
           ColumnType.LONGLONG: 20, ColumnType.FLOAT: 12, ColumnType.DOUBLE: 22, ColumnType.DATE: 10,
           ColumnType.DATETIME: 19, ColumnType.TIMESTAMP: 19, ColumnType.TIME: 10, ColumnType.YEAR: 4}


@dataclass(frozen=True)
class WireColumn:
    """One column as MySQL's column definition packet describes it."""

    name: str
    result_column: ResultColumn
    length: int
    flags: ColumnDefinition
    decimals: int


def wire_columns(result: Result) -> list[WireColumn]:
    infos = result.columns or [_info(f) for f in result.table.schema]
    return [_wire_column(info, result.table.schema.field(i).type) for i, info in enumerate(infos)]


def _info(f: pa.Field) -> ColumnInfo:
    from engine.types import from_arrow
    return ColumnInfo(f.name, f.type, from_arrow(f.type).name, f.nullable)


def _wire_column(info: ColumnInfo, arrow_type: pa.DataType) -> WireColumn:
    base = info.sql_type.split("(", 1)[0].strip().upper()
    unsigned = base.endswith(" UNSIGNED")
    base = base.removesuffix(" UNSIGNED")
    column_type = COLUMN_TYPES.get(base, ColumnType.VAR_STRING)
    binary = base in BINARY_TYPES
    charset = CharacterSet.binary if binary else CharacterSet.utf8mb4
    flags = ColumnDefinition(0)
    if unsigned:
        flags |= ColumnDefinition.UNSIGNED_FLAG
    if not info.nullable:
        flags |= ColumnDefinition.NOT_NULL_FLAG
    if binary:
        flags |= ColumnDefinition.BINARY_FLAG | ColumnDefinition.BLOB_FLAG
    decimals = 0
    length = LENGTHS.get(column_type, 0)
    if column_type == ColumnType.NEWDECIMAL:
        precision = info.precision or getattr(arrow_type, "precision", 38)
        decimals = info.scale if info.scale is not None else getattr(arrow_type, "scale", 0)
        length = precision + 2
    elif column_type in (ColumnType.FLOAT, ColumnType.DOUBLE):
        decimals = 31                       # MySQL: "not fixed"
    elif column_type in (ColumnType.VAR_STRING, ColumnType.STRING, ColumnType.BLOB, ColumnType.JSON):
        length = (info.display_size or 65535) * (1 if binary else 4)
    return WireColumn(info.name, ResultColumn(info.name, column_type, charset), length, flags, decimals)


def text_rows(table: pa.Table) -> list[tuple]:
    """The rows of ``table`` as tuples of MySQL text values (str, bytes, int or None), built per
    column. Integers stay ints: mysql-mimic's row writer prints them as Arrow's cast would, without
    the cast's string column (a compute call that was most of a one-row result's cost)."""
    if table.num_columns == 0:
        return [()] * table.num_rows
    return list(zip(*((column if pa.types.is_integer(column.type) else _text_column(column)).to_pylist()
                      for column in table.columns)))


def _text_column(column: pa.ChunkedArray) -> pa.ChunkedArray:
    t = column.type
    if pa.types.is_boolean(t):
        return pc.if_else(column, "1", "0")
    if pa.types.is_timestamp(t):
        # %S prints fractional seconds for sub-second units; DATETIME is shown to the second
        return pc.utf8_slice_codeunits(pc.strftime(column, format="%Y-%m-%d %H:%M:%S"), 0, 19)
    if pa.types.is_time(t):
        return pc.utf8_slice_codeunits(pc.strftime(column, format="%H:%M:%S"), 0, 8)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_string(t) \
            or pa.types.is_large_string(t):
        return column
    if pa.types.is_dictionary(t):
        return _text_column(column.cast(t.value_type))
    return column.cast(pa.string())


def binary_rows(table: pa.Table, columns: Optional[list[WireColumn]] = None) -> list[tuple]:
    """The rows of ``table`` as typed Python values (the binary protocol's encoders take them)."""
    if table.num_columns == 0:
        return [()] * table.num_rows
    if columns is not None:
        table = pa.Table.from_arrays([_binary_column(c, w) for c, w in zip(table.columns, columns)],
                                     names=table.column_names)
    return list(zip(*(column.to_pylist() for column in table.columns)))


# the binary protocol's encoders pack integers signed: an UNSIGNED value goes as the signed integer
# of the same bits (two's complement), which the client reads back as unsigned by the column's flag
_SIGNED_WIDTH = {ColumnType.SHORT: 16, ColumnType.LONG: 32, ColumnType.LONGLONG: 64}


def _binary_column(column: pa.ChunkedArray, wire: WireColumn) -> pa.ChunkedArray:
    bits = _SIGNED_WIDTH.get(wire.result_column.type)
    if bits is None or not wire.flags & ColumnDefinition.UNSIGNED_FLAG:
        return column
    if pa.types.is_decimal(column.type):
        from engine.exec.unsigned import to_signed
        return to_signed(column)
    big = pc.greater(column, pa.scalar(2 ** (bits - 1) - 1, column.type))
    return pc.if_else(big, pc.subtract(column, pa.scalar(2 ** bits, pa.int64())), column)
