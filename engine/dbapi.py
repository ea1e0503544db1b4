"""PEP 249 connections and cursors over an :class:`engine.session.Session`.

The driver is a thin shell: SQL text and parameters go to the session unchanged (the session binds
``pyformat`` parameters into the parsed statement, so a value can never change a statement's
structure), and an :class:`engine.result.Result` comes back. The only data work done here is at the
fetch boundary, where the requested slice of the Arrow result is converted column by column to Python
values.

Transactions: a connection autocommits by default (each statement commits on its own, as Canopy's
notebooks and tools expect); ``connect(autocommit=False)`` or ``con.autocommit = False`` gives PEP 249's
behaviour, where the first write opens a transaction that :meth:`Connection.commit` makes visible and
:meth:`Connection.rollback` drops (see :mod:`engine.transactions`). Closing a connection rolls back an
open transaction.

This module imports neither the session nor pyarrow at import time; ``engine`` re-exports it and every
engine submodule imports ``engine`` first.
"""
from __future__ import annotations

import datetime
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Iterator, Optional

from engine import errors
from engine.errors import Error, InterfaceError, InternalError, ProgrammingError

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from engine.result import ColumnInfo, Result
    from engine.session import Session


# --- type objects and constructors (PEP 249 "Type Objects and Constructors") -------------------------
class DBAPITypeObject:
    """A set of SQL type names that compares equal to each of them.

    ``cursor.description[i][1]`` is the column's SQL type name (``"BIGINT"``, ``"VARCHAR"`` ...), so
    ``description[i][1] == engine.NUMBER`` holds for every numeric column, as PEP 249 asks.
    """

    def __init__(self, name: str, *sql_types: str):
        self.name = name
        self.values = frozenset(sql_types)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DBAPITypeObject):
            return self.values == other.values
        if isinstance(other, str):
            return base_type_name(other) in self.values
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return hash(self.values)

    def __repr__(self) -> str:
        return f"<DBAPITypeObject {self.name}>"


def base_type_name(sql_type: str) -> str:
    """``"DECIMAL(15,2)"`` -> ``"DECIMAL"``: type objects compare by the bare, upper-case name."""
    return sql_type.split("(", 1)[0].strip().upper()


STRING = DBAPITypeObject("STRING", "CHAR", "VARCHAR", "TEXT", "TINYTEXT", "MEDIUMTEXT", "LONGTEXT",
                         "ENUM", "SET", "JSON")
BINARY = DBAPITypeObject("BINARY", "BINARY", "VARBINARY", "BLOB", "TINYBLOB", "MEDIUMBLOB", "LONGBLOB")
NUMBER = DBAPITypeObject("NUMBER", "BOOLEAN", "BOOL", "BIT", "TINYINT", "SMALLINT", "MEDIUMINT", "INT",
                         "INTEGER", "BIGINT", "DECIMAL", "NUMERIC", "FLOAT", "DOUBLE", "REAL",
                         "TINYINT UNSIGNED", "SMALLINT UNSIGNED", "MEDIUMINT UNSIGNED", "INT UNSIGNED",
                         "BIGINT UNSIGNED")
DATETIME = DBAPITypeObject("DATETIME", "DATE", "DATETIME", "TIMESTAMP", "TIME", "YEAR")
ROWID = DBAPITypeObject("ROWID")  # Canopy has no row-id type; this equals no column type

Date = datetime.date
Time = datetime.time
Timestamp = datetime.datetime
Binary = bytes


def DateFromTicks(ticks: float) -> datetime.date:  # noqa: N802 - PEP 249 name
    return Date(*time.localtime(ticks)[:3])


def TimeFromTicks(ticks: float) -> datetime.time:  # noqa: N802 - PEP 249 name
    return Time(*time.localtime(ticks)[3:6])


def TimestampFromTicks(ticks: float) -> datetime.datetime:  # noqa: N802 - PEP 249 name
    return Timestamp(*time.localtime(ticks)[:6])


# --- connect -------------------------------------------------------------------------------------
def connect(database: Optional[str] = "canopy", *, leaves: int = 2, partitions_per_leaf: int = 4,
            cluster: Optional[str] = None, load_dir: Optional[str] = None, progress: Optional[bool] = None,
            statement_timeout: Optional[int] = None, autocommit: bool = True, multi_statements: bool = False,
            memory_limit: Any = None, **options: Any) -> "Connection":
    """Start a runner (``cluster="local"`` runs leaves in-process, ``"ray"`` as Ray actors; None reads
    ``$CANOPY_RUNNER``, default local) and open a connection on it.

    The connection owns the runner and shuts it down on :meth:`Connection.close`. ``load_dir`` confines
    LOAD DATA to files inside that directory (MySQL's ``secure_file_priv``); without it LOAD DATA is
    refused. ``multi_statements``: one ``execute`` may run several statements separated by ``;``
    (default: one statement per call, so an injected ``; DROP TABLE t`` fails); ``progress`` forces the
    progress bar of long loads on or off (default: on a terminal or in a notebook); ``statement_timeout``
    (milliseconds, also ``SET statement_timeout = N``) cancels a query running longer; ``autocommit=False``
    opens a transaction at the first write, ended by ``commit()`` / ``rollback()``. ``memory_limit``
    (bytes or a size such as ``'4GB'``, also ``SET memory_limit = '4GB'``): what one query may hold in
    each process before its operators spill to disk; past it, MemoryLimitError (default: half the
    machine's memory; docs/memory.md). Extra ``options``
    go to :func:`engine.runner.start_runner` unchanged.
    """
    # Imported here: engine.session pulls in the whole SQL stack, and engine/__init__ must stay light.
    from engine.runner import start_runner
    from engine.session import Session

    try:
        runner = start_runner(cluster, leaves=leaves, partitions_per_leaf=partitions_per_leaf, **options)
    except ValueError as exc:   # a bad cluster shape is the caller's mistake; PEP 249 wants an Error
        raise ProgrammingError(f"connect: {exc}") from exc
    try:
        session = Session(runner, database=database, load_dir=load_dir, progress=progress,
                          statement_timeout=statement_timeout, multi_statements=multi_statements,
                          memory_limit=memory_limit)
        session.set_autocommit(autocommit)
        from engine.pipelines import resume_pipelines
        resume_pipelines(runner)       # a data_dir's pipelines, started again if they were running
    except BaseException:
        runner.shutdown()
        raise
    return Connection(session, runner=runner)


def _check_parameters(parameters: Any) -> None:
    """PEP 249 allows a sequence or a mapping; a bare string would bind one character per ``%s``."""
    if parameters is None or isinstance(parameters, Mapping):
        return
    if isinstance(parameters, Sequence) and not isinstance(parameters, (str, bytes, bytearray)):
        return
    raise ProgrammingError(
        f"parameters must be a sequence (tuple, list) or a mapping, not {type(parameters).__name__}")


def _run(call, *args) -> "Result":
    """Call into the session; anything that is not a Canopy/PEP 249 error is an engine bug."""
    try:
        return call(*args)
    except Error:
        raise
    except KeyboardInterrupt:
        # Ctrl-C / Jupyter's interrupt button: the runner has stopped the statement on every leaf by
        # now. A fresh exception with no engine frames under it, so the user sees one line, not the
        # scheduler's stack.
        raise KeyboardInterrupt("statement cancelled on every leaf") from None
    except Exception as exc:
        raise InternalError(f"internal error ({type(exc).__name__}): {exc}") from exc


# --- Connection ----------------------------------------------------------------------------------
class Connection:
    """A PEP 249 connection: one session on one runner.

    ``session`` is public so other front ends (notebooks, the wire server) can share it.
    """

    # PEP 249 optional extension: the exception classes as connection attributes.
    Warning = errors.Warning
    Error = errors.Error
    InterfaceError = errors.InterfaceError
    DatabaseError = errors.DatabaseError
    DataError = errors.DataError
    OperationalError = errors.OperationalError
    IntegrityError = errors.IntegrityError
    InternalError = errors.InternalError
    ProgrammingError = errors.ProgrammingError
    NotSupportedError = errors.NotSupportedError

    def __init__(self, session: "Session", runner: Any = None):
        """Wrap ``session``; when ``runner`` is given, the connection owns it and shuts it down."""
        self.session = session
        self._runner = runner
        self._closed = False

    # -- lifecycle ---------------------------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise InterfaceError("connection is closed")

    def close(self) -> None:
        """Close the session and shut down an owned runner. Closing twice is allowed."""
        if self._closed:
            return
        self._closed = True
        try:
            self.session.close()
        finally:
            if self._runner is not None:
                from engine.pipelines import shutdown_pipelines   # their threads use the runner
                shutdown_pipelines(self._runner)
                self._runner.shutdown()

    def __enter__(self) -> "Connection":
        self._check_open()
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    # -- transactions (engine.transactions) ------------------------------------------------------
    @property
    def autocommit(self) -> bool:
        return self.session.autocommit

    @autocommit.setter
    def autocommit(self, value: bool) -> None:
        """Turning autocommit on commits an open transaction (as MySQL's ``SET autocommit = 1``)."""
        self._check_open()
        _run(self.session.set_autocommit, bool(value))

    def commit(self) -> None:
        """Make the open transaction's writes visible, all at once (nothing to do without one)."""
        self._check_open()
        _run(self.session.commit)

    def rollback(self) -> None:
        """Drop the open transaction's writes (nothing to do without one)."""
        self._check_open()
        _run(self.session.rollback)

    # -- cursors and shortcuts ---------------------------------------------------------------
    @property
    def database(self) -> Optional[str]:
        return self.session.database

    def cursor(self) -> "Cursor":
        self._check_open()
        return Cursor(self)

    def execute(self, operation: str, parameters: Any = None) -> "Cursor":
        """Execute on a new cursor and return it, so ``con.execute(q).fetchall()`` chains."""
        return self.cursor().execute(operation, parameters)

    def executemany(self, operation: str, seq_of_parameters: Any) -> "Cursor":
        return self.cursor().executemany(operation, seq_of_parameters)

    def explain(self, operation: str, parameters: Any = None, *, analyze: bool = False):
        """The plan of one query as a :class:`engine.sql.plan_picture.PlanPicture`: a Graphviz picture
        of its stages, operators and exchanges in Jupyter (estimated rows, and with ``analyze=True``
        the query is run and each operator's actual rows and time are shown too); ``str()`` of it is
        the EXPLAIN text."""
        prefix = "EXPLAIN ANALYZE " if analyze else "EXPLAIN "
        self._check_open()
        _check_parameters(parameters)
        return _run(self.session.execute, prefix + operation, parameters).picture

    def load_table(self, table: str, data: Any) -> int:
        """Append ``data`` (a pyarrow Table or RecordBatch, a pandas or Polars DataFrame) to ``table``
        (``"t"`` or ``"db.t"``) in one atomic step, columns matched by name; returns the rows added."""
        self._check_open()
        return _run(self.session.load_table, table, data)


# --- Cursor --------------------------------------------------------------------------------------
class Cursor:
    """A PEP 249 cursor over the result of the last statement it executed.

    The result is held as one Arrow table; ``_pos`` is the next row to return. Rows are converted to
    Python only when fetched, column-wise over the fetched slice. ``fetchone`` and iteration convert a
    chunk ahead (``_cache``) so a row-at-a-time loop does not pay Arrow's per-call overhead per row.
    """

    _CHUNK = 1024  # rows converted at once for fetchone / iteration

    def __init__(self, connection: Connection):
        self.connection = connection
        self.arraysize = 1
        self.lastrowid = None
        self.messages: list[tuple[type, Any]] = []
        self._closed = False
        self._reset()

    def _reset(self) -> None:
        if getattr(self, "_table", None) is not None and hasattr(self._table, "close"):
            self._table.close()         # an answer on disk (engine.exec.answer.SpilledAnswer): its file goes
        self._result: Optional["Result"] = None
        self._table: Optional["pa.Table"] = None
        self._pos = 0
        self._cache_start = 0
        self._cache: list[tuple] = []
        self.messages = []

    # -- lifecycle ---------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise InterfaceError("cursor is closed")
        self.connection._check_open()

    def close(self) -> None:
        """Release the result. Closing twice is allowed; any other use afterwards raises."""
        self._closed = True
        self._reset()

    def __enter__(self) -> "Cursor":
        self._check_open()
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    # -- execution ---------------------------------------------------------------------------
    def execute(self, operation: str, parameters: Any = None) -> "Cursor":
        """Run one statement; returns the cursor itself so calls chain."""
        self._check_open()
        _check_parameters(parameters)
        self._reset()
        self._set_result(_run(self.connection.session.execute, operation, parameters))
        return self

    def executemany(self, operation: str, seq_of_parameters: Any) -> "Cursor":
        """Run one statement for each parameter set; ``rowcount`` is the total affected."""
        self._check_open()
        if isinstance(seq_of_parameters, (str, bytes, Mapping)) or not hasattr(seq_of_parameters, "__iter__"):
            raise ProgrammingError("executemany needs a sequence of parameter sets")
        seq_of_parameters = list(seq_of_parameters)
        for parameters in seq_of_parameters:
            _check_parameters(parameters)
        self._reset()
        self._set_result(_run(self.connection.session.execute_many, operation, seq_of_parameters))
        return self

    def _set_result(self, result: "Result") -> None:
        self._result = result
        self.lastrowid = result.last_insert_id        # an INSERT's first AUTO_INCREMENT value, else None
        if result.table is not None:
            self._table = _user_named(result)
        self.messages = [(errors.Warning, errors.Warning(message)) for _level, _code, message in result.warnings]

    # -- result metadata ---------------------------------------------------------------------
    @property
    def description(self) -> Optional[list[tuple]]:
        """PEP 249 7-tuples, or None when the last statement returned no result set."""
        if self._result is None or self._table is None:
            return None
        return [(c.name, base_type_name(c.sql_type), c.display_size, None, c.precision, c.scale, c.nullable)
                for c in _columns(self._result)]

    @property
    def rowcount(self) -> int:
        """Rows affected (DML, LOAD) or returned (queries); -1 before the first execute."""
        return -1 if self._result is None else self._result.rowcount

    @property
    def rownumber(self) -> Optional[int]:
        """PEP 249 extension: index of the next row in the result set."""
        return None if self._table is None else self._pos

    # -- fetching ----------------------------------------------------------------------------
    def _check_result(self) -> "pa.Table":
        self._check_open()
        if self._result is None:
            raise ProgrammingError("no statement has been executed on this cursor")
        if self._table is None:
            raise ProgrammingError("the last statement did not return a result set")
        return self._table

    def fetchone(self) -> Optional[tuple]:
        table = self._check_result()
        if self._pos >= table.num_rows:
            return None
        if not self._cache_start <= self._pos < self._cache_start + len(self._cache):
            self._cache_start = self._pos
            self._cache = _to_rows(table.slice(self._pos, self._CHUNK))
        row = self._cache[self._pos - self._cache_start]
        self._pos += 1
        return row

    def fetchmany(self, size: Optional[int] = None) -> list[tuple]:
        table = self._check_result()
        size = self.arraysize if size is None else size
        if size < 0:
            raise ProgrammingError(f"fetchmany size must not be negative, got {size}")
        return self._take(table, size)

    def fetchall(self) -> list[tuple]:
        table = self._check_result()
        return self._take(table, table.num_rows - self._pos)

    def _take(self, table: "pa.Table", size: int) -> list[tuple]:
        start, stop = self._pos, min(self._pos + size, table.num_rows)
        cache_stop = self._cache_start + len(self._cache)
        if self._cache_start <= start and stop <= cache_stop:   # within rows fetchone already converted
            rows = self._cache[start - self._cache_start:stop - self._cache_start]
        else:
            rows = _to_rows(table.slice(start, stop - start))
        self._pos = stop
        return rows

    def __iter__(self) -> Iterator[tuple]:
        return self

    def __next__(self) -> tuple:
        row = self.fetchone()
        if row is None:
            raise StopIteration
        return row

    # -- DuckDB-style extensions ------------------------------------------------------------
    def fetch_arrow_table(self) -> "pa.Table":
        """The remaining rows as a pyarrow.Table with the result's column names."""
        table = self._check_result()
        rest = table.slice(self._pos)
        self._pos = table.num_rows
        return rest

    def fetch_df(self) -> "pd.DataFrame":
        """The remaining rows as a pandas DataFrame."""
        return self.fetch_arrow_table().to_pandas()

    df = fetch_df

    def fetchnumpy(self) -> dict[str, Any]:
        """The remaining rows as ``{column name: numpy array}`` (a later duplicate name wins)."""
        table = self.fetch_arrow_table()
        return {name: column.to_numpy() for name, column in zip(table.column_names, table.columns)}

    # -- PEP 249 no-ops ---------------------------------------------------------------------
    def setinputsizes(self, sizes: Any) -> None:
        """No-op: the session infers parameter types from the values."""

    def setoutputsize(self, size: int, column: Optional[int] = None) -> None:
        """No-op: results arrive whole as Arrow data."""


# --- Arrow -> Python at the fetch boundary ------------------------------------------------------
def _columns(result: "Result") -> list["ColumnInfo"]:
    """The result's columns; derived from the Arrow schema if the session did not supply them."""
    if result.columns:
        return result.columns
    from engine.result import ColumnInfo
    from engine.types import from_arrow

    return [ColumnInfo(f.name, f.type, from_arrow(f.type).name, f.nullable) for f in result.table.schema]


def _user_named(result: "Result") -> "pa.Table":
    """The result table with the user-visible column names (Arrow allows duplicates). An answer on disk
    (engine.exec.answer.SpilledAnswer, read as it is fetched) gets a view that does the same per batch."""
    import pyarrow as pa

    columns = _columns(result)
    names = [c.name for c in columns]
    if len(names) != result.table.num_columns:
        raise InternalError(f"result has {result.table.num_columns} columns but {len(names)} descriptions")
    # held as DECIMAL(20, 0); a client gets integers (Python int, Arrow uint64), as from MySQL
    unsigned = [i for i, c in enumerate(columns)
                if c.sql_type == "BIGINT UNSIGNED" and pa.types.is_decimal(result.table.schema.field(i).type)]
    # named so already (a query's result): no new table
    if result.table.column_names == names and not unsigned:
        return result.table
    if hasattr(result.table, "map"):
        schema = pa.schema([f.with_name(name).with_type(pa.uint64()) if i in unsigned else f.with_name(name)
                            for i, (f, name) in enumerate(zip(result.table.schema, names))])
        return result.table.map(lambda batch: pa.RecordBatch.from_arrays(
            [c.cast(pa.uint64()) if i in unsigned else c for i, c in enumerate(batch.columns)], schema=schema), schema)
    table = result.table if result.table.column_names == names else result.table.rename_columns(names)
    for i in unsigned:
        table = table.set_column(i, table.schema.field(i).with_type(pa.uint64()), table.column(i).cast(pa.uint64()))
    return table


def _to_rows(table: "pa.Table") -> list[tuple]:
    """Convert a (fetched) slice column-wise: one Arrow conversion per column, then zip into tuples."""
    if table.num_columns == 0:
        return [()] * table.num_rows
    return list(zip(*(column.to_pylist() for column in table.columns)))
