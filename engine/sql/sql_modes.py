"""``sql_mode`` and ``time_zone``: the values whose behaviour Canopy has, and refusals naming the rest.

Clients and ORMs send ``SET sql_mode = '...'`` and ``SET time_zone = '+00:00'`` on connect. Canopy
accepts a value when it behaves as that value says, reports it back in ``@@sql_mode`` / ``@@time_zone``,
and refuses any other with ``NotSupportedError`` naming the mode or zone:

* strict mode is how Canopy always runs (a bad value fails the statement), so a ``sql_mode`` must keep
  ``STRICT_TRANS_TABLES`` or ``STRICT_ALL_TABLES``; ``ERROR_FOR_DIVISION_BY_ZERO`` is honoured either
  way (an INSERT / UPDATE computing x / 0 fails with it, stores NULL without it);
* ``ONLY_FULL_GROUP_BY``, ``NO_ZERO_DATE``, ``NO_ZERO_IN_DATE`` describe what Canopy always refuses;
  leaving them out only makes MySQL accept more, and Canopy still refuses those statements with an
  error (never a different answer), so their absence is accepted;
* modes that change how SQL reads or what a query returns (``ANSI_QUOTES``, ``PIPES_AS_CONCAT``,
  ``NO_BACKSLASH_ESCAPES``, ``NO_UNSIGNED_SUBTRACTION``, ...) are refused;
* time zones: Canopy's clock and its UNIX_TIMESTAMP / FROM_UNIXTIME are UTC (``system_time_zone``), so
  ``SYSTEM``, ``UTC`` and a zero offset are accepted; any other zone is refused.

>>> normalized_sql_mode("NO_ENGINE_SUBSTITUTION, strict_trans_tables")
'STRICT_TRANS_TABLES,NO_ENGINE_SUBSTITUTION'
>>> normalized_sql_mode("TRADITIONAL")         # as MySQL 8.0 reports it
'STRICT_TRANS_TABLES,STRICT_ALL_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,TRADITIONAL,NO_ENGINE_SUBSTITUTION'
>>> normalized_time_zone("+0:00")
'+00:00'
"""
from __future__ import annotations

import re

from engine.errors import UnsupportedError, VariableError

STRICT = ("STRICT_TRANS_TABLES", "STRICT_ALL_TABLES")
# modes Canopy follows when they are set (and, for all but strict mode, whose absence it tolerates), in
# the order MySQL lists them in @@sql_mode whatever order they were set in
HONOURED = ("ONLY_FULL_GROUP_BY", *STRICT, "NO_ZERO_IN_DATE", "NO_ZERO_DATE", "ERROR_FOR_DIVISION_BY_ZERO",
            "TRADITIONAL", "NO_AUTO_CREATE_USER", "NO_ENGINE_SUBSTITUTION")
# MySQL's and MariaDB's other modes: each changes parsing or results in a way Canopy does not
NOT_IMPLEMENTED = {
    "ALLOW_INVALID_DATES", "ANSI_QUOTES", "HIGH_NOT_PRECEDENCE", "IGNORE_SPACE", "NO_AUTO_VALUE_ON_ZERO",
    "NO_BACKSLASH_ESCAPES", "NO_DIR_IN_CREATE", "NO_UNSIGNED_SUBTRACTION", "PAD_CHAR_TO_FULL_LENGTH",
    "PIPES_AS_CONCAT", "REAL_AS_FLOAT", "TIME_TRUNCATE_FRACTIONAL", "NO_FIELD_OPTIONS", "NO_KEY_OPTIONS",
    "NO_TABLE_OPTIONS", "EMPTY_STRING_IS_NULL", "SIMULTANEOUS_ASSIGNMENT", "TIME_ROUND_FRACTIONAL",
    "ANSI", "DB2", "MAXDB", "MSSQL", "MYSQL323", "MYSQL40", "ORACLE", "POSTGRESQL",
}
# combination modes Canopy can honour, as MySQL 8.0 expands them
COMBINED = {"TRADITIONAL": ("STRICT_TRANS_TABLES", "STRICT_ALL_TABLES", "NO_ZERO_IN_DATE", "NO_ZERO_DATE",
                            "ERROR_FOR_DIVISION_BY_ZERO", "TRADITIONAL", "NO_ENGINE_SUBSTITUTION")}
UTC_ZONES = {"SYSTEM", "UTC", "+00:00", "-00:00"}


def normalized_sql_mode(value) -> str:
    """``value`` as MySQL reports it back (upper case, combinations expanded, no repeats), or an error:
    VariableError for a name MySQL does not know, UnsupportedError for a mode Canopy does not follow."""
    if value is None:
        raise VariableError("variable 'sql_mode' can't be set to the value of 'NULL'", wrong_value=True)
    modes: list[str] = []
    for word in str(value).split(","):
        word = word.strip().upper()
        if not word:
            continue
        expanded = COMBINED.get(word, (word,))
        for mode in expanded:
            if mode in NOT_IMPLEMENTED:
                raise UnsupportedError(f"SET sql_mode = '{value}': Canopy does not implement the SQL mode {mode}")
            if mode not in HONOURED:
                raise VariableError(f"variable 'sql_mode' can't be set to the value of '{mode}'",
                                    wrong_value=True)
            if mode not in modes:
                modes.append(mode)
    if not any(mode in modes for mode in STRICT):
        raise UnsupportedError(f"SET sql_mode = '{value}' without STRICT_TRANS_TABLES: Canopy always runs in "
                               f"strict mode (a value that does not fit its column fails the statement)")
    return ",".join(sorted(modes, key=HONOURED.index))


def normalized_time_zone(value) -> str:
    """``value`` when it names UTC (Canopy's only zone), in MySQL's spelling; otherwise
    UnsupportedError naming it."""
    text = str(value).strip()
    offset = re.fullmatch(r"([+-])(\d{1,2}):(\d{2})", text)
    if offset:
        text = f"{offset.group(1)}{int(offset.group(2)):02d}:{offset.group(3)}"
    if text.upper() in UTC_ZONES:
        return text.upper() if text.upper() in ("SYSTEM", "UTC") else text
    raise UnsupportedError(f"SET time_zone = '{value}': Canopy's session time zone is UTC (NOW(), CURDATE(), "
                           f"UNIX_TIMESTAMP and FROM_UNIXTIME do not shift by a zone); use '+00:00', 'UTC' "
                           f"or 'SYSTEM'")


def divides_strictly(sql_mode: str) -> bool:
    """MySQL: in strict mode with ERROR_FOR_DIVISION_BY_ZERO, an INSERT or UPDATE that divides by zero fails."""
    modes = sql_mode.split(",")
    return "ERROR_FOR_DIVISION_BY_ZERO" in modes and any(m in modes for m in STRICT)
