"""The values of a COM_STMT_EXECUTE (MySQL's binary protocol), as the Python values the engine binds.

mysql-mimic reads integers, floats and strings only; a client's DATE, DATETIME, TIMESTAMP, TIME and
DECIMAL parameters (mysql-connector-python's ``cursor(prepared=True)``, JDBC, Go's driver) arrive in
their binary forms and are read here:

* DATE / DATETIME / TIMESTAMP: a length byte (0, 4, 7 or 11), then year (2 bytes), month, day, and for
  7 and 11 hour, minute, second, and for 11 microseconds (4 bytes): ``datetime.date`` for a DATE,
  ``datetime.datetime`` otherwise (the engine binds them as typed literals, as ``CAST(.. AS DATE)``);
  MySQL's zero date (length 0) has no Python value and is refused;
* TIME: a length byte (0, 8 or 12), sign, days (4 bytes), hour, minute, second, microseconds: a
  ``datetime.time`` when it lies within a day, else its ``[-]H:MM:SS[.ffffff]`` text (MySQL's TIME
  range is ±838 hours; the engine compares such text with TIME values as MySQL does);
* DECIMAL / NEWDECIMAL: the digits as text, bound as ``decimal.Decimal`` (exact, its scale kept);
* BLOB kinds and BIT: bytes; every other string kind (VARCHAR, STRING, JSON, ENUM, SET): text in the
  client's character set.

The parameter types come with the first execution (``new_params_bound_flag``); a client may leave them
out of later ones, which reuse the types kept on the statement, as a MySQL server does.
"""
from __future__ import annotations

import datetime
import decimal
import io
import struct
from typing import Any, Optional

from mysql_mimic.errors import MysqlError
from mysql_mimic.types import Capabilities, ColumnType, read_str_len, read_uint_len

from engine.sql.parameters import ParameterError

_NOT_SUPPORTED = 1235          # ER_NOT_SUPPORTED_YET
_INTEGERS = {ColumnType.TINY: (1, "b", "B"), ColumnType.BOOL: (1, "b", "B"), ColumnType.SHORT: (2, "<h", "<H"),
             ColumnType.YEAR: (2, "<h", "<H"), ColumnType.LONG: (4, "<i", "<I"), ColumnType.INT24: (4, "<i", "<I"),
             ColumnType.LONGLONG: (8, "<q", "<Q")}
_BYTES = {ColumnType.TINY_BLOB, ColumnType.MEDIUM_BLOB, ColumnType.LONG_BLOB, ColumnType.BLOB, ColumnType.BIT,
          ColumnType.GEOMETRY}
_TEXT = {ColumnType.VARCHAR, ColumnType.VAR_STRING, ColumnType.STRING, ColumnType.JSON, ColumnType.ENUM,
         ColumnType.SET}
_DATES = {ColumnType.DATE, ColumnType.NEWDATE}
_DATETIMES = {ColumnType.DATETIME, ColumnType.TIMESTAMP, ColumnType.DATETIME2, ColumnType.TIMESTAMP2}
_DECIMALS = {ColumnType.DECIMAL, ColumnType.NEWDECIMAL}


def read_execute_params(reader: io.BytesIO, count: int, capabilities: Capabilities, charset, stmt) -> list[Any]:
    """The ``count`` values that follow COM_STMT_EXECUTE's iteration count in ``reader`` (statement
    parameters, then any query attributes the client sent), NULLs as None. ``stmt``: mysql-mimic's
    PreparedStatement: its ``param_buffers`` (COM_STMT_SEND_LONG_DATA) stand for their parameters'
    values, and the types read are kept on it for executions that leave them out."""
    if not count:
        return []
    null_bitmap = reader.read((count + 7) // 8)
    new_types = reader.read(1)[:1] == b"\x01"
    if new_types:
        types = []
        for _ in range(count):
            code, flags = reader.read(2)
            if Capabilities.CLIENT_QUERY_ATTRIBUTES in capabilities:
                read_str_len(reader)           # a name: query attributes have one, parameters ""
            types.append((_column_type(code), bool(flags & 0x80)))
        stmt.param_types = types
    else:
        types = getattr(stmt, "param_types", None)
        if types is None or len(types) != count:
            raise MysqlError("COM_STMT_EXECUTE without parameter types, and none sent before",
                             code=_NOT_SUPPORTED)
    buffers = stmt.param_buffers or {}
    values: list[Any] = []
    for i, (kind, unsigned) in enumerate(types):
        if null_bitmap[i // 8] & (1 << (i % 8)) or kind == ColumnType.NULL:
            values.append(None)
        elif i in buffers:                 # sent ahead in pieces: its bytes as the type reads them
            values.append(_from_text(kind, bytes(buffers[i]), charset))
        else:
            values.append(_read_value(reader, kind, unsigned, charset))
    return values


def _column_type(code: int) -> ColumnType:
    try:
        return ColumnType(code)
    except ValueError:
        raise MysqlError(f"unknown parameter type {code}", code=_NOT_SUPPORTED) from None


def _read_value(reader: io.BytesIO, kind: ColumnType, unsigned: bool, charset) -> Any:
    integer = _INTEGERS.get(kind)
    if integer is not None:
        size, signed_format, unsigned_format = integer
        return struct.unpack(unsigned_format if unsigned else signed_format, reader.read(size))[0]
    if kind == ColumnType.DOUBLE:
        return struct.unpack("<d", reader.read(8))[0]
    if kind == ColumnType.FLOAT:
        return struct.unpack("<f", reader.read(4))[0]
    if kind in _DATES or kind in _DATETIMES:
        return _read_datetime(reader, kind)
    if kind in (ColumnType.TIME, ColumnType.TIME2):
        return _read_time(reader)
    if kind in _DECIMALS or kind in _BYTES or kind in _TEXT:
        return _from_text(kind, read_str_len(reader), charset)
    raise MysqlError(f"parameters of type {kind.name} are not supported", code=_NOT_SUPPORTED)


def _from_text(kind: ColumnType, data: bytes, charset) -> Any:
    """A value the client sent as bytes (a length-prefixed string, or long data)."""
    if kind in _BYTES:
        return data
    text = charset.decode(data)
    if kind in _DECIMALS:
        try:
            return decimal.Decimal(text)
        except decimal.InvalidOperation:
            raise ParameterError(f"the DECIMAL parameter {text!r} is not a number") from None
    return text


def _read_datetime(reader: io.BytesIO, kind: ColumnType) -> "datetime.date | datetime.datetime":
    length = reader.read(1)[0]
    if length not in (0, 4, 7, 11):
        raise MysqlError(f"a {kind.name} parameter of {length} bytes", code=_NOT_SUPPORTED)
    if length == 0:
        raise ParameterError(f"the zero {kind.name} ('0000-00-00') is not a valid parameter value")
    year, month, day = struct.unpack("<HBB", reader.read(4))
    hour = minute = second = micro = 0
    if length >= 7:
        hour, minute, second = reader.read(3)
    if length == 11:
        micro = struct.unpack("<I", reader.read(4))[0]
    try:
        if kind in _DATES:
            return datetime.date(year, month, day)
        return datetime.datetime(year, month, day, hour, minute, second, micro)
    except ValueError as error:
        raise ParameterError(f"the {kind.name} parameter {year:04}-{month:02}-{day:02}: {error}") from None


def _read_time(reader: io.BytesIO) -> "datetime.time | str":
    length = reader.read(1)[0]
    if length not in (0, 8, 12):
        raise MysqlError(f"a TIME parameter of {length} bytes", code=_NOT_SUPPORTED)
    if length == 0:
        return datetime.time(0)
    negative, days, hour, minute, second = struct.unpack("<BIBBB", reader.read(8))
    micro = struct.unpack("<I", reader.read(4))[0] if length == 12 else 0
    if not negative and days == 0:
        return datetime.time(hour, minute, second, micro)
    fraction = f".{micro:06}" if micro else ""
    return f"{'-' if negative else ''}{days * 24 + hour}:{minute:02}:{second:02}{fraction}"


def parameter_count(reader: io.BytesIO, statement_params: int, count_available: bool,
                    capabilities: Capabilities) -> int:
    """How many values follow: the statement's parameters, or with query attributes the count the
    client sends (parameters first, then its attributes)."""
    if Capabilities.CLIENT_QUERY_ATTRIBUTES in capabilities and (statement_params or count_available):
        return read_uint_len(reader)
    return statement_params


def check_count(values: list, statement_params: int) -> Optional[list]:
    """The statement's parameters of the values read (query attributes after them are dropped)."""
    if len(values) < statement_params:
        raise MysqlError(f"the statement has {statement_params} parameters but {len(values)} were sent",
                         code=1210)      # ER_WRONG_ARGUMENTS
    return values[:statement_params]
