"""Each rewrite of simplify_expressions checked against DuckDB on a table with NULLs in every column:
the simplified plan must answer what the query asked (fixture plans: simplify_expressions.sql)."""
import doctest
from decimal import Decimal

import pyarrow as pa
import pytest

from oracle import assert_same_rows, canopy_and_duckdb
from engine.optimizer.rules import simplify_expressions as rule

DATA = pa.table({
    "i": pa.array([1, None, 3, 0, -2, 5, None, 3], pa.int64()),
    "j": pa.array([None, 2, 3, 0, 4, None, 1, 3], pa.int64()),
    "s": pa.array(["ab", None, "Cde ", "", " x", "ab", None, "zz"], pa.string()),
    "d": pa.array([Decimal("1.50"), None, Decimal("0.00"), Decimal("3.25"), None, Decimal("1.50"),
                   Decimal("-2.00"), Decimal("9.99")], pa.decimal128(10, 2)),
})
DDL = "CREATE TABLE t (i BIGINT, j BIGINT, s VARCHAR(10), d DECIMAL(10, 2))"

QUERIES = [
    "SELECT COUNT(SUBSTR(s, 1, 1)), COUNT(UPPER(TRIM(s))), COUNT(CHAR_LENGTH(s)) FROM t",
    "SELECT COUNT(LEFT(s, 0)), COUNT(SUBSTR(s, 10)), COUNT(CAST(i AS BIGINT)), COUNT(LOWER(s)) FROM t",
    "SELECT COUNT(DISTINCT UPPER(s)), COUNT(DISTINCT i + 0) FROM t",
    "SELECT COUNT(CAST(i AS CHAR)), COUNT(CAST(d AS CHAR)), COUNT(UPPER(CAST(j AS CHAR))) FROM t",
    "SELECT i FROM t WHERE i = i",
    "SELECT s FROM t WHERE s = s",
    "SELECT COUNT(*) FROM t WHERE (i = i) IS NULL",
    "SELECT i FROM t WHERE NOT (i = i)",
    "SELECT i FROM t WHERE i = i OR j > 2",
    "SELECT i FROM t WHERE NOT NOT (i > 0)",
    "SELECT i, j FROM t WHERE NOT (i > 0 AND j > 0)",
    "SELECT i, j FROM t WHERE NOT (i > 0 OR j > 2)",
    "SELECT COUNT(*) FROM t WHERE (NOT (i > 0 AND j > 0)) IS NULL",
    "SELECT i FROM t WHERE (i > 0 AND TRUE) AND (j > 1 OR FALSE)",
    "SELECT i FROM t WHERE i > 0 OR TRUE",
    "SELECT i FROM t WHERE j > 0 AND FALSE",
    "SELECT i FROM t WHERE i > 0 AND j > 0 AND i > 0",
    "SELECT i FROM t WHERE i BETWEEN 3 AND 3",
    "SELECT d FROM t WHERE d BETWEEN 1.5 AND 1.5",
    "SELECT i + 0, j * 1, i - 0, 0 + j, 1 * i, i + 0.0 FROM t",
    "SELECT d + 0, d * 1 FROM t",
    "SELECT CASE WHEN 1 = 0 THEN j WHEN i > 2 THEN i WHEN 2 > 1 THEN 7 ELSE 9 END FROM t",
    "SELECT CASE WHEN NULL THEN j ELSE i END, CASE WHEN 1 = 1 THEN s ELSE 'q' END FROM t",
    "SELECT i FROM t WHERE CAST(3 AS BIGINT) = i AND s IS NOT NULL",
    "SELECT COUNT(*) FROM t WHERE UPPER(s) IS NULL",
    "SELECT i FROM t WHERE i NOT IN (SELECT j FROM t WHERE j = j)",
]


@pytest.fixture(scope="module")
def engines():
    con, duck = canopy_and_duckdb(DDL, "t", DATA)
    yield con, duck
    con.close()
    duck.close()


@pytest.mark.parametrize("sql", QUERIES)
def test_simplified_queries_answer_as_duckdb(engines, sql):
    con, duck = engines
    assert_same_rows(con.execute(sql).fetchall(), duck.execute(sql).fetchall())


def test_count_of_concat_is_mysqls(engines):
    """MySQL's CONCAT is NULL when an argument is (DuckDB's skips NULLs, so Python is the oracle)."""
    con, _ = engines
    want = sum(v is not None for v in DATA.column("s").to_pylist())
    assert con.execute("SELECT COUNT(CONCAT(s, 'x')), COUNT(CONCAT('y', s, 'x')) FROM t").fetchall() == [(want, want)]


def test_the_rule_fires(engines):
    con, _ = engines
    plan = "\n".join(str(r[0]) for r in con.execute(
        "EXPLAIN SELECT COUNT(SUBSTR(s, 1, 9)) FROM t WHERE NOT NOT (i = i) AND j BETWEEN 3 AND 3").fetchall())
    assert "substring" not in plan and "is_not_null(i)" in plan and "j = 3" in plan, plan


def test_doctests():
    assert doctest.testmod(rule).failed == 0
