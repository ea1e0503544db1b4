"""Canopy: a distributed SQL analytics database. This module is its PEP 249 (DB-API 2.0) surface.

>>> import engine
>>> with engine.connect() as con:                                    # doctest: +SKIP
...     con.execute("CREATE TABLE t (a INT, b VARCHAR(10))")
...     con.executemany("INSERT INTO t VALUES (%s, %s)", [(1, "x"), (2, "y")])
...     con.execute("SELECT b FROM t WHERE a = %s", (2,)).fetchall()
[('y',)]

Every submodule (``engine.errors``, ``engine.types`` ...) imports this package first, so it must stay
light: the session and the runner are imported inside :func:`connect`, never here.
"""
from __future__ import annotations

from engine.dbapi import (
    BINARY, DATETIME, NUMBER, ROWID, STRING,
    Binary, Connection, Cursor, Date, DateFromTicks, Time, TimeFromTicks, Timestamp, TimestampFromTicks,
    connect,
)
from engine.errors import (  # noqa: A004 - PEP 249 requires the name Warning
    DatabaseError, DataError, Error, IntegrityError, InterfaceError, InternalError, NotSupportedError,
    OperationalError, ProgrammingError, Warning,
)

__version__ = "0.1.0"

# PEP 249 module globals.
apilevel = "2.0"
threadsafety = 1          # threads may share the module, not connections or cursors
paramstyle = "pyformat"   # %s and %(name)s; the session binds values into the parsed statement

__all__ = [
    "__version__", "apilevel", "threadsafety", "paramstyle", "connect", "Connection", "Cursor",
    "Warning", "Error", "InterfaceError", "DatabaseError", "DataError", "OperationalError",
    "IntegrityError", "InternalError", "ProgrammingError", "NotSupportedError",
    "STRING", "BINARY", "NUMBER", "DATETIME", "ROWID",
    "Date", "Time", "Timestamp", "DateFromTicks", "TimeFromTicks", "TimestampFromTicks", "Binary",
]
