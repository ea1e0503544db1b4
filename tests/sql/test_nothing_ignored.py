"""Nothing parsed is ignored: every construct sqlglot's MySQL dialect parses is either bound or
refused with NotSupportedError that names it in the SQL's words (never a sqlglot class name).

The walk covers every ``sqlglot.expressions`` class: a function class is written as a call by its
SQL name with 0 to 3 arguments, any other class is built and written as MySQL text by sqlglot's own
generator; each text that parses back to that class is run in a SELECT over a small table. Clauses
that are not expressions (``INTO @v``, optimizer hints, ``PARTITION``, ...) are listed below.
"""
from __future__ import annotations

import inspect
import re

import pytest
import sqlglot
from sqlglot import exp

import engine

COLUMNS = {"i": exp.column("i"), "j": exp.column("j"), "s": exp.column("s"), "d": exp.column("d")}
ARGUMENTS = ["", "i", "s", "d", "i, j", "s, i", "d, i", "s, s", "i, j, i", "s, i, i"]

# A sqlglot class name leaking into a message: a CamelCase word ("StddevSamp", "JSONExtract").
CLASS_NAME = re.compile(r"\b[A-Z]+[a-z]+[A-Z]\w*\b|\b\w+ expression is not supported")

CLAUSES = [
    "SELECT SQL_CALC_FOUND_ROWS i FROM t", "SELECT i INTO @v FROM t", "SELECT /*+ BKA(t) */ i FROM t",
    "SELECT i FROM t PARTITION (p0)", "SELECT i FROM t TABLESAMPLE (10 PERCENT)",
]


@pytest.fixture(scope="module")
def con():
    con = engine.connect()
    con.execute("CREATE TABLE t (i BIGINT, j BIGINT, s VARCHAR(20), d DATE)")
    con.execute("INSERT INTO t VALUES (1, 2, 'a', '2020-01-31'), (NULL, 3, NULL, NULL)")
    yield con
    con.close()


def _parses_to(text: str, cls) -> bool:
    try:
        tree = sqlglot.parse_one(f"SELECT {text} FROM t", read="mysql")
    except Exception:      # noqa: BLE001 - sqlglot raises several kinds; any means "not this text"
        return False
    return tree is not None and tree.find(cls) is not None


def _function_text(cls) -> str | None:
    for name in cls.sql_names()[:1]:
        for arguments in ARGUMENTS:
            text = f"{name}({arguments})"
            if _parses_to(text, cls):
                return text
    return None


def _generated_text(cls) -> str | None:
    """Let sqlglot write the class as MySQL, with column operands, and keep texts that parse back."""
    i, j = COLUMNS["i"], COLUMNS["j"]
    for args in ({"this": i, "expression": j}, {"this": i}, {"expressions": [i, j]}, {}):
        try:
            text = cls(**args).sql(dialect="mysql", unsupported_level=sqlglot.ErrorLevel.RAISE)
        except Exception:  # noqa: BLE001 - a class that needs other operands: not written this way
            continue
        if text and _parses_to(text, cls):
            return text
    return None


def _walk() -> list[tuple[str, str]]:
    cases = []
    for name, cls in inspect.getmembers(exp, inspect.isclass):
        if not issubclass(cls, exp.Expression) or cls is exp.Expression or inspect.isabstract(cls):
            continue
        text = _function_text(cls) if issubclass(cls, exp.Func) and cls.sql_names() else None
        text = text or _generated_text(cls)
        if text is not None:
            cases.append((name, f"SELECT {text} FROM t"))
    return cases


CASES = _walk()


def test_the_walk_reaches_most_classes():
    # A floor, so the walk cannot shrink to nothing unnoticed (sqlglot 30: over 500 classes reached).
    assert len(CASES) > 400, len(CASES)


def _check(con, sql: str, class_name: str = "") -> None:
    try:
        con.execute(sql).fetchall()
    except engine.NotSupportedError as error:
        message = str(error)
        leaked = CLASS_NAME.search(message) or (class_name != class_name.upper() and class_name in message)
        assert not leaked, f"{sql}: the refusal names sqlglot's class, not the SQL: {message}"
        quoted = re.sub(r" is not supported.*| with .*", "", message).upper()
        words = {w.upper() for w in re.findall(r"\w+|[^\w\s(),']+|\(\)", sql)} - {"SELECT", "FROM", "T"}
        words |= {w.split("_")[0] for w in words if "_" in w}          # REGEXP for REGEXP_LIKE
        assert any(w in quoted for w in words), f"{sql}: the refusal names nothing of it: {message}"
    except (engine.ProgrammingError, engine.DataError, engine.OperationalError) as error:
        # Bound (the binder knows the construct) but these operands are wrong for it, or a value is.
        assert not CLASS_NAME.search(str(error)), f"{sql}: {error}"


@pytest.mark.parametrize("class_name, sql", CASES, ids=[name for name, _ in CASES])
def test_expression_is_bound_or_refused_by_name(con, class_name, sql):
    _check(con, sql, class_name)


@pytest.mark.parametrize("sql", CLAUSES)
def test_clause_is_refused_by_name(con, sql):
    with pytest.raises(engine.NotSupportedError) as error:
        con.execute(sql).fetchall()
    assert not CLASS_NAME.search(str(error.value))


@pytest.mark.parametrize("sql", ["SELECT i, FROM t", "SELECT FROM t", "SELECT i FROM t,", "SELECT DISTINCT FROM t",
                                 "SELECT i FROM t GROUP BY i,", "SELECT i FROM t ORDER BY i, LIMIT 1",
                                 "SELECT COUNT(i,) FROM t"])
def test_empty_list_items_are_syntax_errors(con, sql):
    with pytest.raises(engine.ProgrammingError, match="syntax error"):
        con.execute(sql)


def test_nulls_first_and_last_are_obeyed(con):
    assert con.execute("SELECT i FROM t ORDER BY i").fetchall() == [(None,), (1,)]          # MySQL's default
    assert con.execute("SELECT i FROM t ORDER BY i NULLS LAST").fetchall() == [(1,), (None,)]
    assert con.execute("SELECT i FROM t ORDER BY i DESC").fetchall() == [(1,), (None,)]
    assert con.execute("SELECT i FROM t ORDER BY i DESC NULLS FIRST").fetchall() == [(None,), (1,)]
