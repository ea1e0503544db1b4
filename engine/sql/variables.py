"""System and user variables of a session: ``SET``, ``SHOW VARIABLES``, ``@@name`` and ``@name``.

MySQL clients read and set a handful of variables on connect (``SELECT @@version_comment``,
``SET NAMES utf8mb4``, ``SELECT @@session.transaction_isolation``, ``SHOW VARIABLES LIKE 'sql_mode'``),
so every front end — the DB-API, the MySQL wire server, a notebook — answers them from the session's
own state here, never from a per-client fake.

Each system variable is declared once in :data:`SYSTEM_VARIABLES` with its default and how Canopy
treats a ``SET``:

* ``settable``: any value is recorded and reported back; Canopy honours it (``character_set_*`` and
  ``collation_connection`` drive the wire server's encoding) or it only describes the client
  (``wait_timeout`` ... which MySQL clients set on connect); ``sql_mode`` and ``time_zone`` take only the
  values Canopy behaves as (engine/sql/sql_modes.py);
* ``read_only``: ``SET`` fails with MySQL's "read only" error (``version``, ``lower_case_table_names``);
* ``fixed``: only the value Canopy actually behaves as is accepted (``sql_select_limit`` = DEFAULT), any
  other raises :class:`~engine.errors.UnsupportedError` naming the variable.

A ``SET`` of a name not declared here fails (MySQL's ``Unknown system variable``): nothing is silently
accepted. ``@@name`` reads go through :func:`substitute`, which replaces them (and ``@user_var``,
``DATABASE()``, ``VERSION()``, ``USER()``, ``CONNECTION_ID()``) by literals in the statement's tree
before it is bound.
"""
from __future__ import annotations

import datetime
import re
from dataclasses import dataclass
from typing import Any, Optional

from sqlglot import exp

from engine.errors import UnsupportedError, VariableError
from engine.exec.memory import default_memory_limit

VERSION = "8.0.32-canopy-0.1.0"        # MySQL 8.0 for clients' feature checks, then Canopy's own
VERSION_COMMENT = "Canopy 0.1.0: a distributed SQL analytics database (MySQL protocol)"


@dataclass(frozen=True)
class Variable:
    default: Any
    mode: str = "settable"              # settable | read_only | fixed


_V = Variable
SYSTEM_VARIABLES: dict[str, Variable] = {
    # what the server is
    "version": _V(VERSION, "read_only"),
    "version_comment": _V(VERSION_COMMENT, "read_only"),
    "version_compile_os": _V("Linux", "read_only"),
    "version_compile_machine": _V("x86_64", "read_only"),
    "protocol_version": _V(10, "read_only"),
    "hostname": _V("localhost", "read_only"),
    "port": _V(3306, "read_only"),
    "license": _V("Apache-2.0", "read_only"),
    "have_ssl": _V("DISABLED", "read_only"),
    "default_authentication_plugin": _V("mysql_native_password", "read_only"),
    "lower_case_table_names": _V(2, "read_only"),       # names compare case-insensitively, kept as given
    "max_allowed_packet": _V(67108864, "read_only"),
    "performance_schema": _V(0, "read_only"),
    "have_query_cache": _V("NO", "read_only"),
    "query_cache_type": _V("OFF", "read_only"),
    "query_cache_size": _V(0, "read_only"),
    "secure_file_priv": _V(None, "read_only"),          # the server's --load-dir (set per session)
    "system_time_zone": _V("UTC", "read_only"),
    "local_infile": _V(1, "read_only"),
    # character sets: Canopy stores UTF-8; the wire server encodes results in character_set_results
    "character_set_client": _V("utf8mb4"),
    "character_set_connection": _V("utf8mb4"),
    "character_set_results": _V("utf8mb4"),
    "character_set_server": _V("utf8mb4", "read_only"),
    "character_set_database": _V("utf8mb4", "read_only"),
    "character_set_system": _V("utf8mb3", "read_only"),
    "collation_connection": _V("utf8mb4_general_ci"),
    "collation_server": _V("utf8mb4_general_ci", "read_only"),
    "collation_database": _V("utf8mb4_general_ci", "read_only"),
    # what clients set on connect to describe themselves
    "sql_mode": _V("ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,"
                   "ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION"),
    "time_zone": _V("SYSTEM"),
    "sql_auto_is_null": _V(0, "fixed"),
    "sql_select_limit": _V(18446744073709551615, "fixed"),
    "sql_safe_updates": _V(0, "fixed"),
    "sql_quote_show_create": _V(1, "fixed"),
    "names": _V("utf8mb4"),
    "wait_timeout": _V(28800),
    "interactive_timeout": _V(28800),
    "net_read_timeout": _V(30),
    "net_write_timeout": _V(60),
    "net_buffer_length": _V(16384),
    "session_track_schema": _V(1),
    "session_track_state_change": _V(0),
    "session_track_system_variables": _V("time_zone,autocommit,character_set_client,"
                                         "character_set_results,character_set_connection"),
    "session_track_transaction_info": _V("OFF"),
    "init_connect": _V("", "read_only"),
    "auto_increment_increment": _V(1, "fixed"),
    "auto_increment_offset": _V(1, "fixed"),
    "div_precision_increment": _V(4, "fixed"),
    "default_storage_engine": _V("Columnstore", "read_only"),
    "storage_engine": _V("Columnstore", "read_only"),
    "group_concat_max_len": _V(1024, "fixed"),
    "foreign_key_checks": _V(1),                         # Canopy has no foreign keys to check
    "unique_checks": _V(1, "fixed"),
    "sql_notes": _V(1),
    "sql_warnings": _V(0),
    "cte_max_recursion_depth": _V(1000),                 # honoured: WITH RECURSIVE's rounds (engine.sql.query)
    "max_execution_time": _V(0),                         # honoured: engine.session's statement_timeout
    "statement_timeout": _V(0),
    "memory_limit": _V(default_memory_limit()),          # honoured: engine.exec.memory (bytes)
    # transactions: the session's own, see engine.session
    "autocommit": _V(1),
    "lock_wait_timeout": _V(50),
    "innodb_lock_wait_timeout": _V(50),
    "transaction_isolation": _V("READ-COMMITTED"),
    "tx_isolation": _V("READ-COMMITTED"),
    "transaction_read_only": _V(0, "fixed"),
    "tx_read_only": _V(0, "fixed"),
    "last_insert_id": _V(0),
    "timestamp": _V(None, "read_only"),
    "warning_count": _V(0, "read_only"),
    "error_count": _V(0, "read_only"),
}
# SET names another spelling of these
ALIASES = {"tx_isolation": "transaction_isolation", "tx_read_only": "transaction_read_only"}
BOOLEAN = {"autocommit", "foreign_key_checks", "unique_checks", "sql_notes", "sql_warnings",
           "sql_auto_is_null", "sql_safe_updates", "sql_quote_show_create", "transaction_read_only",
           "tx_read_only", "local_infile", "performance_schema", "session_track_schema",
           "session_track_state_change"}


class Variables:
    """One session's system variables (values differing from the defaults) and user variables.
    ``live``: variables whose value is the session's own state (``autocommit``, the statement timeout),
    read through a function so they can never disagree with what the session does."""

    def __init__(self, overrides: Optional[dict[str, Any]] = None, live: Optional[dict[str, Any]] = None):
        self.system: dict[str, Any] = dict(overrides or {})
        self.user: dict[str, Any] = {}
        self.live: dict[str, Any] = dict(live or {})

    def get(self, name: str) -> Any:
        key = ALIASES.get(name.lower(), name.lower())
        if key in self.live:
            return self.live[key]()
        if key in self.system:
            return self.system[key]
        if key not in SYSTEM_VARIABLES:
            raise VariableError(f"unknown system variable {name!r}")
        return SYSTEM_VARIABLES[key].default

    def set(self, name: str, value: Any, force: bool = False) -> None:
        """``SET name = value``; ``force``: the front end records what it knows (e.g. the client's
        character set from the handshake), bypassing the read-only check."""
        key = ALIASES.get(name.lower(), name.lower())
        declared = SYSTEM_VARIABLES.get(key)
        if declared is None:
            raise VariableError(f"unknown system variable {name!r}")
        if isinstance(value, str) and value.upper() == "DEFAULT" or value is DEFAULT:
            self.system.pop(key, None)
            return
        if key in BOOLEAN:
            value = _boolean(name, value)
        if not force and declared.mode == "read_only":
            raise VariableError(f"variable {name!r} is a read only variable", read_only=True)
        if not force and declared.mode == "fixed" and _normal(value) != _normal(declared.default):
            raise UnsupportedError(f"SET {name} = {value!r}: Canopy always runs with "
                                   f"{name} = {declared.default!r}")
        self.system[key] = value

    def __setitem__(self, name: str, value: Any) -> None:
        """What a SET handler that already checked the value records (``SET NAMES``, character sets)."""
        self.set(name, value, force=True)

    def __getitem__(self, name: str) -> Any:
        return self.get(name)

    def rows(self) -> list[tuple[str, str]]:
        """(Variable_name, Value) for SHOW VARIABLES, sorted by name as MySQL does."""
        out = []
        for name in sorted(SYSTEM_VARIABLES):
            value = self.get(name)
            out.append((name, "" if value is None else _shown(value)))
        return out


DEFAULT = object()


def _boolean(name: str, value: Any) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int) and value in (0, 1):
        return value
    if isinstance(value, str) and value.upper() in ("ON", "OFF", "TRUE", "FALSE", "1", "0"):
        return int(value.upper() in ("ON", "TRUE", "1"))
    raise VariableError(f"variable {name!r} can't be set to the value of {value!r}", wrong_value=True)


def _normal(value: Any) -> Any:
    return value.upper() if isinstance(value, str) else value


def _shown(value: Any) -> str:
    return str(value)


# --- reading variables in a statement -----------------------------------------------------------
def literal(value: Any) -> exp.Expression:
    """A Python value as a sqlglot literal (what a variable read becomes in the tree)."""
    if value is None:
        return exp.Null()
    if isinstance(value, bool):
        return exp.Literal.number(int(value))
    if isinstance(value, (int, float)):
        return exp.Literal.number(value)
    if isinstance(value, datetime.datetime):
        return exp.Cast(this=exp.Literal.string(value.isoformat(sep=" ")), to=exp.DataType.build("DATETIME"))
    return exp.Literal.string(str(value))


_SESSION_FUNCTIONS = {"CONNECTION_ID", "USER", "SESSION_USER", "SYSTEM_USER", "LAST_INSERT_ID", "ROW_COUNT",
                      "FOUND_ROWS"}


def reads_session_state(node: exp.Expression) -> bool:
    """Whether ``node`` reads a variable or a session function (its plan depends on session state, so
    it must not come from the shared plan cache)."""
    for found in node.find_all(exp.SessionParameter, exp.Parameter, exp.CurrentSchema, exp.CurrentVersion,
                               exp.CurrentUser, exp.Anonymous):
        if not isinstance(found, exp.Anonymous) or found.name.upper() in _SESSION_FUNCTIONS:
            return True
    return False


def substitute(node: exp.Expression, session) -> exp.Expression:
    """``node`` with every variable read and session function replaced by its current value.

    ``@@version``, ``@@session.sql_mode``, ``@@global.x`` (global scope reads the default: Canopy has no
    server-wide SET GLOBAL), ``@name`` (NULL when never set, as MySQL), ``DATABASE()`` / ``SCHEMA()``,
    ``VERSION()``, ``USER()`` / ``CURRENT_USER()``, ``CONNECTION_ID()``, ``LAST_INSERT_ID()``, ``ROW_COUNT()``,
    ``FOUND_ROWS()``.
    Column names given to such expressions keep the text the user wrote (``@@version_comment``)."""
    if not reads_session_state(node):
        return node
    variables: Variables = session.variables

    def value_of(found: exp.Expression):
        if isinstance(found, exp.SessionParameter):
            scope = (found.args.get("kind") or "").upper()
            if scope == "GLOBAL":
                key = ALIASES.get(found.name.lower(), found.name.lower())
                if key not in SYSTEM_VARIABLES:
                    raise VariableError(f"unknown system variable {found.name!r}")
                return SYSTEM_VARIABLES[key].default
            return variables.get(found.name)
        if isinstance(found, exp.Parameter):
            return variables.user.get(found.name.lower())
        if isinstance(found, exp.CurrentSchema):
            return session.database
        if isinstance(found, exp.CurrentVersion):
            return variables.get("version")
        if isinstance(found, exp.CurrentUser):
            return session.user_at_host()
        name = found.name.upper()
        if name in ("USER", "SESSION_USER", "SYSTEM_USER"):
            return session.user_at_host()
        if name == "CONNECTION_ID":
            return session.connection_id
        if name == "LAST_INSERT_ID":
            return session.last_insert_id
        if name == "ROW_COUNT":
            return session.row_count
        if name == "FOUND_ROWS":
            return session.found_rows
        return DEFAULT

    def replace(found: exp.Expression) -> exp.Expression:
        if not isinstance(found, (exp.SessionParameter, exp.Parameter, exp.CurrentSchema, exp.CurrentVersion,
                                  exp.CurrentUser, exp.Anonymous)):
            return found
        if isinstance(found, exp.Anonymous) and found.expressions:
            if found.name.upper() == "LAST_INSERT_ID":
                raise UnsupportedError("LAST_INSERT_ID(expr)")
            return found
        value = value_of(found)
        if value is DEFAULT:
            return found
        replaced = literal(value)
        parent = found.parent
        if isinstance(parent, (exp.Select,)) or (parent is not None and parent.key == "select"):
            return exp.alias_(replaced, _column_name(found), quoted=True)
        return replaced

    return node.transform(replace, copy=True)


def _column_name(found: exp.Expression) -> str:
    """The result column name MySQL gives an unaliased read: the text as written (``@@version``)."""
    if isinstance(found, exp.CurrentSchema):
        return "DATABASE()"            # sqlglot spells it SCHEMA(); DATABASE() is what clients send
    return found.sql(dialect="mysql")


# --- SET -------------------------------------------------------------------------------------------
def value_of_set(expression: exp.Expression) -> Any:
    """The value a SET assigns: a literal, ON/OFF, DEFAULT, NULL, a negative number."""
    if isinstance(expression, exp.Literal):
        return expression.to_py()
    if isinstance(expression, exp.Neg) and isinstance(expression.this, exp.Literal):
        return -expression.this.to_py()
    if isinstance(expression, exp.Null):
        return None
    if isinstance(expression, exp.Boolean):
        return int(expression.this)
    if isinstance(expression, (exp.Var, exp.Column, exp.Identifier)):
        return expression.name            # ON, OFF, DEFAULT, utf8mb4 ...
    raise UnsupportedError(f"SET to an expression ({expression.sql(dialect='mysql')[:60]}); "
                           "give a literal value")


def like_filter(pattern: Optional[str]):
    """A predicate on names for SHOW ... LIKE 'pattern' (MySQL: case-insensitive, % and _)."""
    if pattern is None:
        return lambda name: True
    regex = re.compile("".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern),
                       re.IGNORECASE | re.DOTALL)
    return lambda name: regex.fullmatch(name) is not None
