"""``agg(x) FILTER (WHERE c)`` against DuckDB: each aggregate over the rows where its own condition is
TRUE (NULL and FALSE drop the row), grouped and not, with DISTINCT, NULL arguments, conditions that keep
no row, and several filters in one aggregation (the masked arguments of engine.exec.evaluate._masked);
and the aggregates a FILTER cannot apply to are refused by name."""
from decimal import Decimal

import pyarrow as pa
import pytest

from engine.errors import BindError, NotSupportedError
from oracle import assert_same_rows, canopy_and_duckdb

T = pa.table({
    "k": pa.array([1, 1, 2, 2, 2, 3, 3, 4, 4, 4, 4, 5], pa.int64()),
    "i": pa.array([1, None, 3, 0, -2, 5, None, 3, 7, 2, 2, None], pa.int64()),
    "f": pa.array([0.5, 1.5, None, 2.0, -1.0, 3.5, 0.0, None, 1.25, 9.0, 2.5, 1.0], pa.float64()),
    "s": pa.array(["ab", None, "Cd", "", "x", "ab", None, "zz", "q", "ab", "x", "y"], pa.string()),
    "d": pa.array([Decimal("1.50"), None, Decimal("0.00"), Decimal("3.25"), None, Decimal("1.50"),
                   Decimal("-2.00"), Decimal("9.99"), Decimal("4.00"), Decimal("0.10"), Decimal("0.10"),
                   Decimal("7.00")], pa.decimal128(10, 2)),
})
DDL = "CREATE TABLE t (k BIGINT, i BIGINT, f DOUBLE, s VARCHAR(10), d DECIMAL(10, 2))"

QUERIES = [
    # grouped: COUNT(*), SUM / AVG / MIN / MAX of integers, decimals, doubles and strings, each its own filter
    "SELECT k, COUNT(*) FILTER (WHERE i > 0), SUM(d) FILTER (WHERE i > 0), AVG(i) FILTER (WHERE d > 1), "
    "MIN(s) FILTER (WHERE f < 3), MAX(f) FILTER (WHERE s <> 'ab'), COUNT(i) FILTER (WHERE d IS NOT NULL), "
    "SUM(f) FILTER (WHERE k = 4) FROM t GROUP BY k",
    # keyless, beside an unfiltered aggregate; a condition that keeps no row (COUNT 0, SUM NULL)
    "SELECT COUNT(*), COUNT(*) FILTER (WHERE i > 100), SUM(i) FILTER (WHERE i > 100), SUM(i) FILTER (WHERE i < 100), "
    "MAX(d) FILTER (WHERE k = 2), MIN(d) FILTER (WHERE s IS NULL) FROM t",
    # DISTINCT under a filter, and the statistics
    "SELECT k, COUNT(DISTINCT s) FILTER (WHERE i >= 0), SUM(DISTINCT i) FILTER (WHERE f > 0) FROM t GROUP BY k",
    "SELECT STDDEV_SAMP(f) FILTER (WHERE i > 0), VAR_POP(i) FILTER (WHERE k < 4), "
    "CORR(i, f) FILTER (WHERE s IS NOT NULL) FROM t",
    # the same filter for several aggregates, an expression argument, HAVING on a filtered aggregate
    "SELECT k, SUM(i * 2) FILTER (WHERE f > 1), COUNT(*) FILTER (WHERE f > 1), AVG(d) FILTER (WHERE f > 1) "
    "FROM t GROUP BY k HAVING COUNT(*) FILTER (WHERE f > 1) > 0",
]


@pytest.fixture(scope="module")
def engines():
    con, duck = canopy_and_duckdb(DDL, "t", T)
    yield con, duck
    con.close()
    duck.close()


@pytest.mark.parametrize("sql", QUERIES)
def test_filtered_aggregates_answer_as_duckdb(engines, sql):
    con, duck = engines
    # AVG of a DECIMAL is MySQL's DECIMAL (4 more digits), DuckDB's a DOUBLE
    assert_same_rows(con.execute(sql).fetchall(), duck.execute(sql).fetchall(), rel=1e-6)


@pytest.mark.parametrize("sql,error,words", [
    ("SELECT ANY_VALUE(i) FILTER (WHERE i > 0) FROM t", NotSupportedError, "ANY_VALUE"),
    ("SELECT GROUP_CONCAT(s) FILTER (WHERE i > 0) FROM t", NotSupportedError, "GROUP_CONCAT"),
    ("SELECT SUM(i) FILTER (WHERE i > 0) OVER (PARTITION BY k) FROM t", NotSupportedError, "FILTER"),
    ("SELECT SUM(i) FILTER (WHERE COUNT(*) > 1) FROM t", BindError, "FILTER"),
])
def test_what_a_filter_cannot_apply_to_is_refused(engines, sql, error, words):
    con, _ = engines
    with pytest.raises(error, match=words):
        con.execute(sql)
