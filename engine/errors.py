"""Canopy's one error tree, and its mapping onto the PEP 249 exception classes.

Every error a user can cause derives from :class:`CanopyError` and says *what* went wrong and *where*
(line/column of the SQL, the name that was not found, the file and line of a bad CSV row). Engine bugs are
:class:`InternalError`. The DB-API module exposes the PEP 249 names; each engine class below *is* one of
them (its second base class), so ``except engine.ProgrammingError`` catches
a parse error and an unknown column alike.
"""
from __future__ import annotations

import difflib
from typing import Iterable, Optional


# --- PEP 249 hierarchy ------------------------------------------------------------------------------
class Warning(Exception):  # noqa: A001 - PEP 249 name
    """Important warnings such as data truncation."""


class Error(Exception):
    """Base of every Canopy error (PEP 249 ``Error``)."""


class InterfaceError(Error):
    """Misuse of the driver itself (closed cursor, bad parameter count)."""


class DatabaseError(Error):
    """An error reported by the database engine."""


class DataError(DatabaseError):
    """Bad data: a value out of range, an unparsable number or date, a type mismatch in data."""


class OperationalError(DatabaseError):
    """The database could not carry out the operation (a leaf died, a file is missing, a timeout)."""


class IntegrityError(DatabaseError):
    """A constraint was violated (NULL into NOT NULL)."""


class InternalError(DatabaseError):
    """A bug in Canopy. Never caused by bad input; please report it."""


class ProgrammingError(DatabaseError):
    """Bad SQL: a syntax error, an unknown table or column, a wrong number of parameters."""


class NotSupportedError(DatabaseError):
    """Valid SQL that Canopy does not support (yet); the message names the construct."""


# --- engine errors (each is one of the PEP 249 classes) ---------------------------------------------
class CanopyError(Error):
    """Mixin marking errors raised by the engine (as opposed to Python's own)."""


class ParseError(CanopyError, ProgrammingError):
    """SQL text that does not parse. ``line`` and ``column`` are 1-based."""

    def __init__(self, message: str, line: Optional[int] = None, column: Optional[int] = None,
                 token: Optional[str] = None):
        self.line, self.column, self.token = line, column, token
        where = f" at line {line}, column {column}" if line is not None else ""
        near = f" near {token!r}" if token else ""
        super().__init__(f"syntax error{where}{near}: {message}")


class BindError(CanopyError, ProgrammingError):
    """A name that does not resolve, an ambiguous column, a misuse of an aggregate."""


class TypeMismatchError(CanopyError, ProgrammingError):
    """An expression whose operand types do not fit its operator or function."""


class UnsupportedError(CanopyError, NotSupportedError):
    """A construct Canopy recognises but does not implement."""


class ExecutionError(CanopyError, OperationalError):
    """A query failed while running for a reason other than its data (a dead leaf, a timeout)."""


class LockWaitTimeoutError(ExecutionError):
    """A write waited longer than ``lock_wait_timeout`` for a table another transaction is writing."""

class QueryCancelledError(ExecutionError):
    """The query was stopped from outside: ``KILL QUERY``, its client went away, an interrupt."""


class QueryTimeoutError(ExecutionError):
    """The query ran past ``statement_timeout`` / ``max_execution_time``."""


class MemoryLimitError(ExecutionError):
    """A query needed more memory than ``memory_limit`` allows, also after spilling what its operators
    can spill to disk. ``operator`` names the operator that asked (``HashJoin``, ``Sort`` ...) and
    ``limit`` is the limit in bytes. Only the query fails: the session and the process go on."""

    def __init__(self, message: str, operator: str = "", limit: Optional[int] = None):
        self.operator, self.limit = operator, limit
        super().__init__(message)


class VariableError(CanopyError, ProgrammingError):
    """``SET`` or ``@@name`` of an unknown system variable, a read-only one, or a value it cannot take."""

    def __init__(self, message: str, read_only: bool = False, wrong_value: bool = False):
        super().__init__(message)
        self.read_only, self.wrong_value = read_only, wrong_value


class AccessDeniedError(CanopyError, OperationalError):
    """The session's user lacks the privilege a statement needs. ``scope``: ``database`` (no privilege
    at all on it), ``table`` (a command on a table), ``column`` (SELECT on a column a DELETE / UPDATE
    reads) or ``global`` (user administration)."""

    def __init__(self, message: str, scope: str = "table"):
        super().__init__(message)
        self.scope = scope


class StorageCorruptionError(ExecutionError):
    """A durable file failed its checksum or cannot be parsed (a data directory's WAL, commit log,
    manifest, catalog, statistics, segment or delete file). ``path`` names the file and ``offset``
    the byte where the damage was found (None: somewhere in the file). Nothing was changed: the files
    stay as they were for inspection (``python -m engine.fsck DATA_DIR`` lists every problem)."""

    def __init__(self, message: str, path=None, offset: Optional[int] = None):
        self.path, self.offset = (str(path) if path is not None else None), offset
        super().__init__(message)


class BadDataError(CanopyError, DataError):
    """Data that does not fit: an overflowing value, an unparsable CSV field, a division overflow.
    ``code``: MySQL's error code where it is not 1264 'Out of range value' (1292 'Truncated incorrect
    INTEGER value' of a strict write's CAST)."""

    def __init__(self, message: str, code: Optional[int] = None):
        self.code = code
        super().__init__(message)


class ConstraintError(CanopyError, IntegrityError):
    """NULL into NOT NULL and friends."""


class CanopyInternalError(CanopyError, InternalError):
    """An engine bug surfaced as a typed error instead of a raw traceback."""


def unknown_name_error(kind: str, name: str, candidates: Iterable[str], where: str = "") -> BindError:
    """A :class:`BindError` for an unknown ``name`` that suggests the closest of ``candidates``.

    >>> str(unknown_name_error("column", "l_orderky", ["l_orderkey", "l_partkey"]))
    "unknown column 'l_orderky'; did you mean 'l_orderkey'?"
    """
    candidates = list(candidates)
    close = difflib.get_close_matches(name.lower(), [c.lower() for c in candidates], n=1, cutoff=0.6)
    hint = ""
    if close:
        original = next(c for c in candidates if c.lower() == close[0])
        hint = f"; did you mean {original!r}?"
    location = f" in {where}" if where else ""
    error = BindError(f"unknown {kind} {name!r}{location}{hint}")
    error.unknown = kind          # the MySQL wire server's error code follows it (1049 / 1146 / 1054)
    return error
