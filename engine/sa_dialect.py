"""SQLAlchemy 2 dialect ``canopy://``: the embedded engine through SQLAlchemy, with no server.

    sqlalchemy.create_engine("canopy://")                     # a private embedded cluster
    sqlalchemy.create_engine("canopy:///sales?leaves=4")     # database "sales", 4 leaves
    sqlalchemy.create_engine("canopy:///canopy?data_dir=/var/lib/canopy")

Canopy speaks MySQL's dialect, so this is SQLAlchemy's MySQL dialect with :mod:`engine` as its DB-API
module: SQL compilation, types and reflection (``inspect()``: SHOW CREATE TABLE, information_schema)
are MySQL's, answered by the engine session. SQLAlchemy's pool keeps one connection per engine here
(``SingletonThreadPool`` is not used: one embedded cluster is shared by the connections a URL opens,
see :func:`_shared_runner`). Registered as the ``canopy`` entry point of ``sqlalchemy.dialects``.
"""
from __future__ import annotations

import threading
from typing import Any

from sqlalchemy.dialects.mysql.base import MySQLDialect
from sqlalchemy.pool import StaticPool

_RUNNERS: dict[tuple, Any] = {}
_LOCK = threading.Lock()
OPTIONS = {"leaves": int, "partitions_per_leaf": int, "data_dir": str, "load_dir": str, "cluster": str}


class CanopyDialect(MySQLDialect):
    name = "mysql"               # MySQL's compiler, types and reflection
    driver = "canopy"
    supports_statement_cache = True
    supports_server_side_cursors = False
    default_paramstyle = "pyformat"
    supports_native_decimal = True
    supports_sane_rowcount = True
    supports_sane_multi_rowcount = True

    @classmethod
    def import_dbapi(cls):
        import engine
        return engine

    @classmethod
    def get_pool_class(cls, url):
        return StaticPool          # one embedded session, reused (an in-process database has no sockets)

    def create_connect_args(self, url):
        options: dict[str, Any] = {}
        for key, value in url.query.items():
            if key not in OPTIONS:
                from engine.errors import ProgrammingError
                raise ProgrammingError(f"canopy:// URL option {key!r}; known: {', '.join(OPTIONS)}")
            options[key] = OPTIONS[key](value)
        options["database"] = url.database or "canopy"
        return (), options

    def connect(self, *args, **options):
        """One :class:`engine.dbapi.Connection` on the cluster these options name (started once)."""
        from engine.dbapi import Connection
        from engine.runner import start_runner
        from engine.session import Session
        shape = tuple(sorted((k, v) for k, v in options.items() if k not in ("database", "load_dir")))
        with _LOCK:
            runner = _RUNNERS.get(shape)
            if runner is None:
                start = {k: v for k, v in options.items() if k not in ("database", "load_dir", "cluster")}
                runner = start_runner(options.get("cluster"), **start)
                _RUNNERS[shape] = runner
        session = Session(runner, database=options["database"], load_dir=options.get("load_dir"))
        return Connection(session)

    def _detect_charset(self, connection) -> str:
        return "utf8mb4"

    def _extract_error_code(self, exception) -> Any:
        """MySQL's code for an engine error (the MySQL dialect checks 1146 in has_table, ...)."""
        from engine.server.errors import mysql_error
        return mysql_error(exception)[0]

    def is_disconnect(self, e, connection, cursor) -> bool:
        return False

    def do_ping(self, dbapi_connection) -> bool:
        return not dbapi_connection.closed

    def do_rollback(self, dbapi_connection) -> None:
        dbapi_connection.rollback()

    def do_commit(self, dbapi_connection) -> None:
        dbapi_connection.commit()


dialect = CanopyDialect
