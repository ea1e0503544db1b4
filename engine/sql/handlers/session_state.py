"""Session-state statements: SET, the transaction statements (BEGIN / START TRANSACTION, COMMIT,
ROLLBACK), KILL, and SHOW VARIABLES / STATUS / PROCESSLIST.

A mixin of :class:`engine.session.Session`. Every SET variable listed in ``_SETTERS`` has its real
effect; any other is refused with NotSupportedError naming it (``sql_mode`` and ``time_zone`` take the
values Canopy behaves as, see engine/sql/sql_modes.py), a name MySQL does not know with its
"unknown system variable" error, a read-only one with "read only". ``SET @name`` sets a user variable.
Reads (``@@name``, ``SHOW VARIABLES``) come from :mod:`engine.sql.variables`.
"""
from __future__ import annotations

from decimal import Decimal
from typing import Callable, Optional

from sqlglot import exp

import time

from engine import collation
from engine.errors import BindError, UnsupportedError, VariableError
from engine.result import Result
from engine.sessions import processlist_rows
from engine.sql import ddl
from engine.sql.variables import SYSTEM_VARIABLES, Variables, like_filter

# Character sets whose text Canopy returns as it is (UTF-8); NULL for character_set_results means
# "send results as stored", which is UTF-8 too.
_UTF8 = {"utf8", "utf8mb4", "utf8mb3"}
_ISOLATION = "READ COMMITTED"       # SingleStore's only isolation level, and Canopy's


class SessionStatements:
    # -- transactions ------------------------------------------------------------------------------
    def _stmt_Transaction(self, node: exp.Transaction, statement) -> Result:
        modes = [str(m).upper() for m in node.args.get("modes") or []]
        if any(m != "READ WRITE" for m in modes):
            raise UnsupportedError(f"START TRANSACTION {', '.join(modes)}")
        self.begin()
        return Result(None, rowcount=0)

    def _stmt_Commit(self, node: exp.Commit, statement) -> Result:
        if node.args.get("chain") is not None or node.args.get("durability"):
            raise UnsupportedError("COMMIT AND CHAIN / RELEASE")
        self.commit()
        return Result(None, rowcount=0)

    def _stmt_Rollback(self, node: exp.Rollback, statement) -> Result:
        savepoint = node.args.get("savepoint")
        if savepoint is not None:
            if self._txn is None:
                raise BindError(f"SAVEPOINT {savepoint.name} does not exist")
            self._txn.rollback_to(savepoint.name)
            return Result(None, rowcount=0)
        self.rollback()
        return Result(None, rowcount=0)

    def _stmt_SavepointStatement(self, node, statement) -> Result:
        """SAVEPOINT name / RELEASE SAVEPOINT name (engine.transactions.Transaction.savepoint). With
        autocommit on and no transaction open, SAVEPOINT has nothing to mark (MySQL accepts it too)."""
        if node.action == "SAVEPOINT":
            if self._txn is None and not self.autocommit:
                self.begin()
            if self._txn is not None:
                self._txn.savepoint(node.name, self._read_all)
        elif self._txn is None:
            raise BindError(f"SAVEPOINT {node.name} does not exist")
        else:
            self._txn.release(node.name)
        return Result(None, rowcount=0)

    # -- SET -----------------------------------------------------------------------------------------
    def _stmt_Set(self, node: exp.Set, statement) -> Result:
        """All items are checked before any takes effect: ``SET autocommit = 0, sql_mode = ''`` changes
        nothing when ``sql_mode`` is refused."""
        if node.args.get("unset") or node.args.get("tag"):
            raise UnsupportedError("UNSET / SET TAG")
        effects = [self._set_item(item) for item in node.expressions]
        for effect in effects:
            effect()
        return Result(None, rowcount=0)

    def _set_item(self, item: exp.Expression) -> Callable[[], None]:
        kind = str(item.args.get("kind") or "").upper()
        if kind in ("NAMES", "CHARACTER SET"):
            charset = item.this.name.lower() if item.this is not None else ""
            collate = item.args.get("collate")
            if charset not in _UTF8:
                raise UnsupportedError(f"SET {kind} {item.this.sql() if item.this else ''}: Canopy sends and "
                                       f"reads text as UTF-8 only (utf8mb4)")
            # the connection's collation is string literals' (engine.collation.connection): one Canopy
            # does not compare by is refused, not recorded
            connection = collation.resolve(collate.name, charset) if collate is not None \
                else collation.of_charset(charset)
            names = ("character_set_client", "character_set_connection", "character_set_results") \
                if kind == "NAMES" else ("character_set_client", "character_set_results")

            def set_names():
                for name in names:
                    self.variables[name] = charset
                if kind == "NAMES":
                    self.variables["collation_connection"] = connection
            return set_names
        if kind == "TRANSACTION":
            text = " ".join(str(e.this if isinstance(e, exp.Var) else e).upper() for e in item.expressions)
            if text not in (f"ISOLATION LEVEL {_ISOLATION}", "READ WRITE"):
                raise UnsupportedError(f"SET TRANSACTION {text}: Canopy's transactions are {_ISOLATION}")
            return lambda: None
        if kind in ("GLOBAL", "PERSIST", "PERSIST_ONLY"):
            raise UnsupportedError(f"SET {kind} (server-wide variables)")
        if kind not in ("", "SESSION", "LOCAL"):
            raise UnsupportedError(f"SET {kind}")
        assignment = item.this
        if not isinstance(assignment, exp.EQ):
            raise UnsupportedError(f"SET {item.sql(dialect='mysql')}")
        target, value = assignment.this, assignment.expression
        if isinstance(target, exp.Parameter):            # SET @name = constant: a user variable
            user_value = None if isinstance(value, exp.Null) else _constant(value, f"@{target.name}")
            return lambda: self.variables.user.__setitem__(target.name.lower(), user_value)
        if isinstance(target, exp.SessionParameter) and str(target.args.get("kind") or "session").lower() \
                not in ("session", "local"):
            raise UnsupportedError(f"SET @@{target.args.get('kind')}.{target.name} (server-wide variables)")
        name = target.name.lower()
        setter = _SETTERS.get(name)
        if setter is None:
            declared = SYSTEM_VARIABLES.get(name)
            if declared is None:
                raise VariableError(f"unknown system variable {name!r}")
            if declared.mode == "read_only":
                raise VariableError(f"variable {name!r} is a read only variable", read_only=True)
            raise UnsupportedError(f"SET {name}: Canopy does not implement this variable")
        if isinstance(value, exp.Var) and value.name.upper() == "DEFAULT":
            value = "DEFAULT" if name == "collation_connection" else None     # there NULL is refused
        else:
            value = _constant(value, name)
        return setter(self, name, value)


    # -- KILL and SHOW -------------------------------------------------------------------------------
    def _stmt_Kill(self, node: exp.Kill, statement) -> Result:
        """KILL [CONNECTION | QUERY] id (MySQL: a bare KILL is KILL CONNECTION)."""
        kind = (node.text("kind") or "CONNECTION").upper()
        try:
            target_id = int(node.this.name)
        except ValueError:
            raise UnsupportedError(f"KILL {node.this.sql()}: give a connection id") from None
        target = self.sessions.get(target_id)
        self.check_kill(target)
        target.kill(query_only=kind == "QUERY")
        return Result(None, rowcount=0)

    # -- SHOW ---------------------------------------------------------------------------------------
    def _show_variables(self, node: exp.Show) -> Result:
        _refuse_where(node, "VARIABLES")
        like = like_filter(node.text("like") or None)
        rows = self.variables.rows() if not node.args.get("global_") else _global_rows()
        return ddl.text_result(["Variable_name", "Value"], [r for r in rows if like(r[0])])

    def _show_status(self, node: exp.Show) -> Result:
        _refuse_where(node, "STATUS")
        like = like_filter(node.text("like") or None)
        rows = [(name, str(value)) for name, value in self._status()]
        return ddl.text_result(["Variable_name", "Value"], [r for r in rows if like(r[0])])

    def _status(self) -> list[tuple[str, object]]:
        sessions = self.sessions.sessions()
        started = getattr(self.runner, "started_at", None)
        cache = self.plan_cache
        return sorted([
            ("Threads_connected", len(sessions)),
            ("Threads_running", sum(1 for s in sessions if s.activity.command == "Query")),
            ("Uptime", int(time.monotonic() - started) if started else 0),
            ("Questions", self.questions),
            ("Connections", max((s.connection_id for s in sessions), default=0)),
            ("Qcache_hits", cache.hits),
            ("Qcache_inserts", cache.misses),
        ])

    def _show_processlist(self, node: exp.Show) -> Result:
        rows = processlist_rows(self.sessions, full=bool(node.args.get("full")))
        return ddl.text_result(["Id", "User", "Host", "db", "Command", "Time", "State", "Info"],
                               [tuple(None if v is None else str(v) for v in row) for row in rows])


def _constant(value: exp.Expression, name: str):
    """A SET value as Python: numbers, strings, TRUE/FALSE, ON/OFF (as 1/0), NULL."""
    if isinstance(value, exp.Null):
        return "NULL"
    if isinstance(value, exp.Boolean):
        return int(value.this)
    if isinstance(value, (exp.Literal, exp.Neg)):
        return value.to_py()
    if isinstance(value, (exp.Var, exp.Column, exp.Identifier)):
        word = value.name
        return {"ON": 1, "OFF": 0}.get(word.upper(), word)
    raise BindError(f"SET {name}: the value must be a constant, not {value.sql(dialect='mysql')}")


def _set_autocommit(session, name: str, value):
    on = True if value is None else value
    if on not in (0, 1, True, False):
        raise BindError(f"SET autocommit takes 0 or 1 (ON / OFF), not {on!r}")
    return lambda: session.set_autocommit(bool(on))


def _set_statement_timeout(session, name: str, value):
    timeout = None if value is None else timeout_ms(value)
    return lambda: setattr(session, "statement_timeout", timeout)


def _set_memory_limit(session, name: str, value):
    from engine.exec.memory import default_memory_limit, parse_memory_limit
    limit = default_memory_limit() if value is None else parse_memory_limit(value)
    return lambda: setattr(session, "memory_limit", limit)


def timeout_ms(value) -> Optional[int]:
    """A statement timeout in whole milliseconds; 0 and None mean no limit."""
    if value is None:
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BindError(f"statement_timeout must be a whole number of milliseconds >= 0 (0: no limit), "
                        f"not {value!r}")
    return value or None


def _set_lock_wait_timeout(session, name: str, value):
    from engine.transactions import DEFAULT_LOCK_WAIT_TIMEOUT
    seconds = DEFAULT_LOCK_WAIT_TIMEOUT if value is None else value
    if isinstance(seconds, Decimal):
        seconds = float(seconds)
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
        raise BindError(f"SET {name} takes a number of seconds >= 0, not {value!r}")
    return lambda: setattr(session, "lock_wait_timeout", float(seconds))


def _set_recursion_depth(session, name: str, value):
    """cte_max_recursion_depth: rounds a WITH RECURSIVE query may run (engine.sql.query.run_recursive)."""
    depth = 1000 if value is None else value
    if isinstance(depth, bool) or not isinstance(depth, int) or not 0 <= depth <= 4294967295:
        raise BindError(f"SET {name} takes a whole number from 0 to 4294967295, not {value!r}")
    return lambda: session.variables.__setitem__(name, depth)


def _set_charset(session, name: str, value):
    text = str(value).lower() if value is not None else None
    if name == "collation_connection":
        # string literals' collation (engine.collation.connection): one Canopy does not compare by is
        # refused by name (collation.resolve), never recorded
        if text == "default":
            return lambda: session.variables.__setitem__(name, "DEFAULT")
        if value is None or text == "null":
            raise BindError("Variable 'collation_connection' can't be set to the value of 'NULL'")
        canonical = collation.resolve(text)
        return lambda: session.variables.__setitem__(name, canonical)
    if value is None or value == "NULL" or text in _UTF8:
        def set_charset():
            session.variables[name] = value
            if name == "character_set_connection" and text in _UTF8:
                # as in MySQL: the connection's collation becomes the character set's default
                session.variables["collation_connection"] = collation.of_charset(text)
        return set_charset
    raise UnsupportedError(f"SET {name} = {value}: Canopy sends and reads text as UTF-8 only (utf8mb4)")


def _set_sql_mode(session, name: str, value):
    from engine.sql.sql_modes import normalized_sql_mode
    if value is None:                            # SET sql_mode = DEFAULT
        return lambda: session.variables.system.pop("sql_mode", None)
    mode = normalized_sql_mode(value)
    return lambda: session.variables.__setitem__("sql_mode", mode)


def _set_time_zone(session, name: str, value):
    from engine.sql.sql_modes import normalized_time_zone
    if value is None:
        return lambda: session.variables.system.pop("time_zone", None)
    zone = normalized_time_zone(value)
    return lambda: session.variables.__setitem__("time_zone", zone)


def _set_isolation(session, name: str, value):
    if value is None or str(value).upper().replace("-", " ") == _ISOLATION:
        return lambda: None
    raise UnsupportedError(f"SET {name} = {value}: Canopy's transactions are {_ISOLATION}")


_SETTERS = {
    "autocommit": _set_autocommit,
    # milliseconds, as PostgreSQL and SingleStore name it, and MySQL's max_execution_time
    "statement_timeout": _set_statement_timeout,
    "max_execution_time": _set_statement_timeout,
    "memory_limit": _set_memory_limit,
    "lock_wait_timeout": _set_lock_wait_timeout,
    "innodb_lock_wait_timeout": _set_lock_wait_timeout,
    "character_set_client": _set_charset,
    "character_set_connection": _set_charset,
    "character_set_results": _set_charset,
    "collation_connection": _set_charset,
    "sql_mode": _set_sql_mode,
    "time_zone": _set_time_zone,
    "transaction_isolation": _set_isolation,
    "tx_isolation": _set_isolation,
    "cte_max_recursion_depth": _set_recursion_depth,
}


def _refuse_where(node: exp.Show, what: str) -> None:
    if node.args.get("where") is not None:
        raise UnsupportedError(f"SHOW {what} WHERE; use SHOW {what} LIKE 'pattern' or "
                               f"information_schema")


def _global_rows() -> list[tuple[str, str]]:
    return Variables().rows()
