"""Scalar and query semantics checked against DuckDB as an oracle, where MySQL and DuckDB agree.

The same small table (with NULLs, empty strings, negative numbers, month ends) is loaded into Canopy and
DuckDB; each case runs ``SELECT id, <expression> FROM t ORDER BY id`` (or a whole query) on both and
compares the rows. Where the two dialects spell a function differently, a case gives both spellings.
Where MySQL and DuckDB differ (``/`` on integers, ``LENGTH`` in bytes, ROUND of .5 on doubles), the
expected MySQL behaviour lives in ``tests/sql/semantics/*.test`` instead.
"""
from __future__ import annotations

import datetime
import decimal
import math

import pytest

import engine

duckdb = pytest.importorskip("duckdb")

SCHEMA = "CREATE TABLE t (id INT, i INT, j BIGINT, d DECIMAL(10,2), s VARCHAR(20), dt DATE, ts TIMESTAMP)"
ROWS = [
    (1, 7, 3, "12.34", "Hello World", "2024-01-31", "2024-01-31 10:20:30"),
    (2, -7, 2, "-0.50", "  padded  ", "2023-02-28", "2023-02-28 23:59:59"),
    (3, 0, -4, "0.00", "", "2000-02-29", "2000-02-29 00:00:00"),
    (4, None, None, None, None, None, None),
    (5, 100, 7, "99999.99", "MiXeD cAsE", "1999-12-31", "1999-12-31 12:00:00"),
]

# (Canopy SQL, DuckDB SQL or None when the same text works there)
EXPRESSIONS = [
    ("i + j", None), ("i - j", None), ("i * j", None), ("-i", None), ("ABS(i)", None),
    ("i % j", None), ("MOD(i, j)", None),
    ("d + 1", None), ("d - d", None), ("d * 2", None), ("d * d", None), ("ABS(d)", None),
    ("i > j", None), ("i = j", None), ("i <> j", None), ("i BETWEEN 0 AND 10", None),
    ("i IN (7, 100)", None), ("i NOT IN (7, 100)", None), ("s IS NULL", None), ("d IS NOT NULL", None),
    ("i > 0 AND j > 0", None), ("i > 0 OR j > 0", None), ("NOT (i > 0)", None),
    ("i <=> j", "i IS NOT DISTINCT FROM j"),
    ("COALESCE(i, j, -1)", None), ("IFNULL(s, 'none')", "COALESCE(s, 'none')"), ("NULLIF(i, 7)", None),
    ("IF(i > 0, 'pos', 'other')", "CASE WHEN i > 0 THEN 'pos' ELSE 'other' END"),
    ("CASE WHEN i > 50 THEN 'big' WHEN i > 0 THEN 'small' ELSE 'none' END", None),
    ("CASE i WHEN 7 THEN 'seven' WHEN 0 THEN 'zero' END", None),
    ("GREATEST(i, j)", None), ("LEAST(i, j)", None),
    ("FLOOR(d)", None), ("CEIL(d)", None), ("ROUND(d, 1)", None), ("ROUND(d)", None),
    ("SQRT(ABS(i))", None), ("POWER(j, 2)", None), ("SIGN(i)", None),
    ("UPPER(s)", None), ("LOWER(s)", None), ("CHAR_LENGTH(s)", "LENGTH(s)"),
    ("SUBSTRING(s, 2, 3)", None), ("SUBSTRING(s, 3)", None), ("SUBSTRING(s, -3)", None),
    ("CONCAT(s, '!')", "s || '!'"), ("TRIM(s)", None), ("LTRIM(s)", None), ("RTRIM(s)", None),
    ("REPLACE(s, 'l', 'L')", None), ("LEFT(s, 2)", None), ("RIGHT(s, 2)", None), ("REVERSE(s)", None),
    ("LOCATE('o', s)", "INSTR(s, 'o')"), ("s LIKE '%o%'", None), ("s NOT LIKE 'H%'", None),
    ("s = 'Hello World'", None), ("s < 'M'", None),
    ("YEAR(dt)", None), ("MONTH(dt)", None), ("DAY(dt)", None), ("EXTRACT(YEAR FROM ts)", None),
    ("EXTRACT(HOUR FROM ts)", None), ("EXTRACT(MINUTE FROM ts)", None), ("QUARTER(dt)", None),
    ("dt + INTERVAL 1 DAY", "CAST(dt + INTERVAL 1 DAY AS DATE)"),
    ("dt - INTERVAL 10 DAY", "CAST(dt - INTERVAL 10 DAY AS DATE)"),
    ("dt + INTERVAL 1 MONTH", "CAST(dt + INTERVAL 1 MONTH AS DATE)"),
    ("dt - INTERVAL 1 MONTH", "CAST(dt - INTERVAL 1 MONTH AS DATE)"),
    ("dt + INTERVAL 1 YEAR", "CAST(dt + INTERVAL 1 YEAR AS DATE)"),
    ("ts + INTERVAL 1 DAY", None), ("ts + INTERVAL 1 MONTH", None),
    ("DATEDIFF(dt, DATE '2000-01-01')", "DATEDIFF('day', DATE '2000-01-01', dt)"),
    ("dt < DATE '2020-01-01'", None), ("dt = '2024-01-31'", "dt = DATE '2024-01-31'"),
    ("CAST(i AS CHAR)", "CAST(i AS VARCHAR)"), ("CAST(d AS SIGNED)", "CAST(ROUND(d) AS BIGINT)"),
    ("CAST(i AS DECIMAL(6,2))", None), ("CAST(ts AS DATE)", None),
]

QUERIES = [
    "SELECT s, COUNT(*) FROM t GROUP BY s ORDER BY s NULLS FIRST",
    "SELECT i > 0, SUM(d), MIN(dt), MAX(ts), COUNT(s) FROM t GROUP BY i > 0 ORDER BY 1 NULLS FIRST",
    "SELECT COUNT(*), COUNT(i), SUM(i), MIN(s), MAX(s), MIN(d), MAX(d) FROM t",
    "SELECT a.id, b.id FROM t a JOIN t b ON a.i = -b.i ORDER BY 1, 2",
    "SELECT a.id, b.id FROM t a LEFT JOIN t b ON a.i = b.j ORDER BY 1, 2 NULLS FIRST",
    "SELECT id FROM t WHERE i IN (SELECT j FROM t) ORDER BY id",
    "SELECT id FROM t WHERE i NOT IN (SELECT j FROM t WHERE j IS NOT NULL) ORDER BY id",
    "SELECT id FROM t a WHERE EXISTS (SELECT 1 FROM t b WHERE b.j = a.i - 4) ORDER BY id",
    "SELECT id FROM t WHERE d > (SELECT AVG(d) FROM t) ORDER BY id",
    "SELECT DISTINCT i > 0 FROM t ORDER BY 1 NULLS FIRST",
    "SELECT i FROM t UNION SELECT j FROM t ORDER BY 1 NULLS FIRST",
    "SELECT i FROM t UNION ALL SELECT j FROM t ORDER BY 1 NULLS FIRST",
    "SELECT id FROM t ORDER BY s NULLS FIRST, id LIMIT 2 OFFSET 1",
    "SELECT id, i FROM t ORDER BY i DESC NULLS LAST, id",
]


@pytest.fixture(scope="module")
def both():
    con = engine.connect(database="semantics")
    duck = duckdb.connect(":memory:")
    for db in (con, duck):
        db.execute(SCHEMA)
    placeholders = ", ".join(["%s"] * len(ROWS[0]))
    con.executemany(f"INSERT INTO t VALUES ({placeholders})", ROWS)
    duck.executemany(f"INSERT INTO t VALUES ({', '.join(['?'] * len(ROWS[0]))})", ROWS)
    yield con, duck
    con.close()
    duck.close()


def normalize(value):
    """Make a Canopy value and a DuckDB value comparable: numbers by value, temporals by their text."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float, decimal.Decimal)):
        number = float(value)
        return round(number, 9) if math.isfinite(number) else number
    if isinstance(value, datetime.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, datetime.date):
        return value.isoformat()
    return value


def rows_of(cursor_rows):
    return [tuple(normalize(v) for v in row) for row in cursor_rows]


@pytest.mark.parametrize("canopy_sql, duckdb_sql", EXPRESSIONS, ids=[e for e, _ in EXPRESSIONS])
def test_expression_matches_duckdb(both, canopy_sql, duckdb_sql):
    con, duck = both
    ours = rows_of(con.execute(f"SELECT id, {canopy_sql} FROM t ORDER BY id").fetchall())
    theirs = rows_of(duck.execute(f"SELECT id, {duckdb_sql or canopy_sql} FROM t ORDER BY id").fetchall())
    assert ours == theirs


@pytest.mark.parametrize("sql", QUERIES)
def test_query_matches_duckdb(both, sql):
    con, duck = both
    # MySQL's default NULL order (first ascending, last descending) is DuckDB's with explicit NULLS
    ours = rows_of(con.execute(sql.replace(" NULLS FIRST", "").replace(" NULLS LAST", "")).fetchall())
    theirs = rows_of(duck.execute(sql).fetchall())
    assert ours == theirs


def test_oracle_comparison_can_fail(both):
    con, duck = both
    ours = rows_of(con.execute("SELECT id, i + 1 FROM t ORDER BY id").fetchall())
    theirs = rows_of(duck.execute("SELECT id, i + 2 FROM t ORDER BY id").fetchall())
    assert ours != theirs
