r"""A sqllogictest runner for ``tests/sql/**/*.test`` (the DuckDB / SQLite format, trimmed to what Canopy needs).

Each ``.test`` file runs top to bottom on one fresh connection (its own database, so files never see each
other's tables) and is one pytest item. Records are separated by blank lines::

    # a comment
    statement ok
    CREATE TABLE t (a INT, b VARCHAR(10))

    statement error ProgrammingError: unknown column 'c'
    SELECT c FROM t

    query IT rowsort
    SELECT a, b FROM t
    ----
    1	x
    2	NULL

``statement error [Class:] fragment``: the statement must raise ``engine.<Class>`` (when named) whose message
contains ``fragment`` (case-insensitive). Every error message is also checked for what must never reach a
user: a Python traceback or the words "internal error". Since the file goes on on the same connection,
every later record also checks that the connection survived the error.

``query <types> [rowsort]``: one letter per column, checked against the column's SQL type: ``I`` integer,
``R`` DECIMAL/FLOAT/DOUBLE, ``T`` text, ``D`` DATE/DATETIME, ``B`` BOOLEAN. Expected rows follow ``----``, one
per line, values separated by a tab. Values print as MySQL's client shows them: ``NULL``; decimals with
their exact scale (``0.3333``); floats by ``repr``; dates ``YYYY-MM-DD``; datetimes
``YYYY-MM-DD HH:MM:SS``; booleans ``1``/``0``; the empty string as ``(empty)``; a backslash, newline or tab
inside a string as ``\\``, ``\n``, ``\t``. ``rowsort`` sorts both
sides' rows before comparing (for results without ORDER BY).

``xfail <reason>`` on the line before a record marks a known engine bug: the record must still fail as
described (otherwise the runner reports that the bug is fixed and the marker should go). The reason names
the bug so it can be tracked.
"""
from __future__ import annotations

import datetime
import decimal
import itertools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import pytest

import engine

HERE = Path(__file__).resolve().parent
TEST_FILES = sorted(HERE.rglob("*.test"))
_database_ids = itertools.count(1)

TYPE_LETTERS = {
    "I": {"TINYINT", "SMALLINT", "MEDIUMINT", "INT", "INTEGER", "BIGINT"},
    "R": {"DECIMAL", "NUMERIC", "FLOAT", "DOUBLE", "REAL"},
    "T": {"CHAR", "VARCHAR", "TEXT", "TINYTEXT", "MEDIUMTEXT", "LONGTEXT"},
    "D": {"DATE", "DATETIME", "TIMESTAMP"},
    "B": {"BOOLEAN", "BOOL"},
}
FORBIDDEN_IN_MESSAGES = ("traceback", "internal error", 'file "')


@dataclass
class Record:
    kind: str                  # "statement" or "query"
    line: int                  # 1-based line of the record's header, for messages
    sql: str
    expect_error: bool = False
    error_class: Optional[str] = None
    error_fragment: str = ""
    types: str = ""
    rowsort: bool = False
    expected: tuple[str, ...] = ()
    xfail: Optional[str] = None


def parse_test_file(path: Path) -> list[Record]:
    lines = path.read_text().splitlines()
    records: list[Record] = []
    i, xfail = 0, None
    while i < len(lines):
        line = lines[i].rstrip()
        if not line or line.lstrip().startswith("#"):
            i += 1
            continue
        header_line = i + 1
        words = line.split()
        if words[0] == "xfail":
            xfail = line[len("xfail"):].strip() or "known bug"
            i += 1
            continue
        i += 1
        body: list[str] = []
        while i < len(lines) and lines[i].strip() and lines[i].rstrip() != "----":
            body.append(lines[i])
            i += 1
        sql = "\n".join(body)
        if not sql.strip():
            raise ValueError(f"{path.name}:{header_line}: record without SQL")
        if words[0] == "statement":
            record = Record("statement", header_line, sql, xfail=xfail)
            if words[1:2] == ["error"]:
                record.expect_error = True
                rest = line.split(None, 2)[2] if len(words) > 2 else ""
                match = re.match(r"(\w+)(?::\s*(.*)|\s*)$", rest)      # "Class: fragment" or "Class"
                if match and isinstance(getattr(engine, match.group(1), None), type):
                    record.error_class, rest = match.group(1), match.group(2) or ""
                record.error_fragment = rest.strip()
            elif words[1:2] != ["ok"]:
                raise ValueError(f"{path.name}:{header_line}: expected 'statement ok' or 'statement error'")
        elif words[0] == "query":
            if len(words) < 2 or not set(words[1]) <= set(TYPE_LETTERS):
                raise ValueError(f"{path.name}:{header_line}: 'query' needs column type letters "
                                 f"({''.join(TYPE_LETTERS)})")
            record = Record("query", header_line, sql, types=words[1], rowsort="rowsort" in words[2:],
                            xfail=xfail)
            if i >= len(lines) or lines[i].rstrip() != "----":
                raise ValueError(f"{path.name}:{header_line}: query without a ---- result separator")
            i += 1
            expected = []
            while i < len(lines) and lines[i].strip():
                expected.append(lines[i].rstrip("\n"))
                i += 1
            record.expected = tuple(expected)
        else:
            raise ValueError(f"{path.name}:{header_line}: unknown record type {words[0]!r}")
        records.append(record)
        xfail = None
    return records


def format_value(value) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, datetime.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, datetime.date):
        return value.isoformat()
    text = str(value).replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t")  # one row per line
    return text if text else "(empty)"


def base_type(type_code: str) -> str:
    return str(type_code).split("(", 1)[0].strip().upper()


def run_record(con, record: Record) -> Optional[str]:
    """Run one record; return what went wrong, or None."""
    try:
        cursor = con.execute(record.sql)
        rows = cursor.fetchall() if cursor.description else []
    except engine.Error as error:
        message = str(error)
        if any(word in message.lower() for word in FORBIDDEN_IN_MESSAGES):
            return f"error message leaks engine internals: {type(error).__name__}: {message}"
        if isinstance(error, engine.InternalError):
            return f"engine bug (InternalError): {message}"
        if not record.expect_error:
            return f"unexpected {type(error).__name__}: {message}"
        if record.error_class and not isinstance(error, getattr(engine, record.error_class)):
            return f"expected {record.error_class}, got {type(error).__name__}: {message}"
        if record.error_fragment.lower() not in message.lower():
            return f"error message {message!r} lacks {record.error_fragment!r}"
        return None
    if record.expect_error:
        return f"expected an error containing {record.error_fragment!r}, but the statement succeeded"
    if record.kind == "statement":
        return None
    description = cursor.description
    if len(description) != len(record.types):
        return f"expected {len(record.types)} columns, got {len(description)}: {[d[0] for d in description]}"
    for letter, column in zip(record.types, description):
        # a bare NULL literal has no type of its own and fits any letter
        if base_type(column[1]) != "NULL" and base_type(column[1]) not in TYPE_LETTERS[letter]:
            return f"column {column[0]!r} has type {column[1]}, but the record says {letter}"
    actual = ["\t".join(format_value(v) for v in row) for row in rows]
    expected = list(record.expected)
    if record.rowsort:
        actual, expected = sorted(actual), sorted(expected)
    if actual != expected:
        return "wrong result\n  expected:\n" + "\n".join(f"    {r!r}" for r in expected) + \
            "\n  actual:\n" + "\n".join(f"    {r!r}" for r in actual)
    return None


@pytest.mark.parametrize("path", TEST_FILES, ids=[str(p.relative_to(HERE)) for p in TEST_FILES])
def test_sqllogic(path: Path):
    records = parse_test_file(path)
    assert records, f"{path.name} has no records"
    database = f"sqllogic_{next(_database_ids)}"
    con = engine.connect(database=database)
    failures = []
    try:
        for record in records:
            problem = run_record(con, record)
            where = f"{path.name}:{record.line}"
            if record.xfail is not None:
                if problem is None:
                    failures.append(f"{where}: marked 'xfail {record.xfail}' but it passes now; "
                                    f"remove the marker\n  {record.sql}")
            elif problem is not None:
                failures.append(f"{where}: {problem}\n  SQL: {record.sql}")
    finally:
        con.close()
    assert not failures, f"{len(failures)} failing record(s):\n" + "\n\n".join(failures)


def test_runner_parses_and_compares():
    """The runner itself must be able to fail: a wrong expected value and a missing error are caught."""
    con = engine.connect(database="sqllogic_self_check")
    try:
        ok = Record("query", 1, "SELECT 1, 'a', NULL, 0.50", types="ITTR", expected=("1\ta\tNULL\t0.50",))
        assert run_record(con, ok) is None
        wrong = Record("query", 1, "SELECT 1", types="I", expected=("2",))
        assert "wrong result" in run_record(con, wrong)
        wrong_type = Record("query", 1, "SELECT 1.5", types="I", expected=("1.5",))
        assert "has type DECIMAL" in run_record(con, wrong_type)
        missing_error = Record("statement", 1, "SELECT 1", expect_error=True, error_fragment="x")
        assert "succeeded" in run_record(con, missing_error)
        wrong_class = Record("statement", 1, "SELEC 1", expect_error=True, error_class="DataError")
        assert "expected DataError" in run_record(con, wrong_class)
    finally:
        con.close()
