"""MySQL's function library (bit operators, TRUNCATE, trigonometry, SUBSTRING_INDEX, FIELD, FIND_IN_SET,
ELT, STRCMP, INSERT, SPACE, TRIM of a string, ASCII / ORD, CONV, CRC32, TO_BASE64, QUOTE, FORMAT,
INTERVAL(), time parts, WEEK modes, YEARWEEK, MAKEDATE, FROM_DAYS, TO_SECONDS, ADDDATE / SUBDATE,
DATE_FORMAT's week directives) against MariaDB's answers, NULLs and edge values included. The answers
are MariaDB's (tests/sql/function_library_cases.py); under ``-m mariadb`` they are checked against a
live MariaDB server too."""
from __future__ import annotations

import datetime
import math
from decimal import Decimal

import pytest

import engine
from tests.sql.function_library_cases import EXPECTED, EXPRESSIONS, SETUP, mariadb_answers
from tests.sql.test_mariadb_oracle import mariadb  # noqa: F401 - the server fixture


@pytest.fixture(scope="module")
def cursor():
    connection = engine.connect()
    cur = connection.cursor()
    for statement in SETUP:
        cur.execute(statement)
    yield cur
    connection.close()


def _same(got, expected) -> bool:
    if isinstance(expected, bytes):
        expected = expected.decode("utf-8")
    if isinstance(expected, float) or isinstance(got, float):
        return got is not None and expected is not None and math.isclose(float(got), float(expected),
                                                                          rel_tol=1e-12, abs_tol=1e-12)
    if isinstance(expected, Decimal) and isinstance(got, (int, Decimal)):
        return Decimal(got) == expected
    if isinstance(expected, datetime.datetime) != isinstance(got, datetime.datetime):
        return False
    return got == expected


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_function_agrees_with_mariadb(cursor, expression):
    cursor.execute(f"SELECT {expression} FROM lib ORDER BY id")
    rows = [tuple(row) for row in cursor.fetchall()]
    expected = EXPECTED[expression]
    assert len(rows) == len(expected)
    for number, (got, want) in enumerate(zip(rows, expected), start=1):
        assert len(got) == len(want)
        for column, (g, w) in enumerate(zip(got, want), start=1):
            assert _same(g, w), f"row {number}, column {column} of {expression}: {g!r}, MariaDB {w!r}"


def test_refused_in_the_users_words(cursor):
    with pytest.raises(engine.NotSupportedError, match="FORMAT with the locale 'de_DE'"):
        cursor.execute("SELECT FORMAT(x, 2, 'de_DE') FROM lib")
    with pytest.raises(engine.NotSupportedError, match="TRUNCATE with a non-constant number of digits"):
        cursor.execute("SELECT TRUNCATE(x, i) FROM lib")
    with pytest.raises(engine.NotSupportedError, match="SUBSTRING_INDEX count with a non-constant argument"):
        cursor.execute("SELECT SUBSTRING_INDEX(s, ',', i) FROM lib")


@pytest.mark.mariadb
def test_expected_answers_are_mariadbs(mariadb):  # noqa: F811 - the imported fixture
    answers = mariadb_answers(mariadb)
    for expression in EXPRESSIONS:
        assert [tuple(_normal(v) for v in row) for row in answers[expression]] == \
            [tuple(_normal(v) for v in row) for row in EXPECTED[expression]], expression


def _normal(value):
    return value.decode("utf-8") if isinstance(value, bytes) else value


def test_from_dual(cursor):
    cursor.execute("SELECT 1 + 1 FROM DUAL")
    assert cursor.fetchall() == [(2,)]


def test_row_operand_counts_must_match(cursor):
    with pytest.raises(engine.ProgrammingError, match="Operand should contain 2 column"):
        cursor.execute("SELECT (i, s) IN ((1, 2, 3)) FROM lib")


def test_collation_charset_coercibility(cursor):
    cursor.execute("SELECT COLLATION(s), COLLATION(s COLLATE utf8mb4_bin), COLLATION(i), CHARSET(s), CHARSET(i), "
                   "COERCIBILITY(s), COERCIBILITY('x'), COERCIBILITY(s COLLATE utf8mb4_bin), COERCIBILITY(NULL) "
                   "FROM lib WHERE id = 1")
    assert cursor.fetchall() == [("utf8mb4_general_ci", "utf8mb4_bin", "binary", "utf8mb4", "binary", 2, 4, 0, 6)]


def test_union_of_text_and_numbers_is_text(cursor):
    """MySQL's type aggregation: a UNION column of text and numbers is text ('a', '1'), never DOUBLE 0."""
    cursor.execute("SELECT 'a' UNION ALL SELECT 1 UNION ALL SELECT 2.50 UNION ALL SELECT DATE '2020-01-02'")
    assert sorted(r[0] for r in cursor.fetchall()) == ["1", "2.50", "2020-01-02", "a"]
