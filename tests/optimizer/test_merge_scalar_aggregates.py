"""merge_scalar_aggregates against DuckDB: one-row aggregates over one tree (scalar subqueries, derived
tables cross-joined) merged into one aggregation must answer as each would alone, with NULLs in every
column, filters that keep no row, DISTINCT, joins; and the merged query reads its table once (EXPLAIN).
Plan shapes: tests/fixtures/optimizer/merge_scalar_aggregates.sql."""
import re
from decimal import Decimal

import pyarrow as pa
import pytest

from oracle import assert_same_rows, canopy_and_duckdb

T = pa.table({
    "k": pa.array([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], pa.int64()),
    "i": pa.array([1, None, 3, 0, -2, 5, None, 3, 7, 2], pa.int64()),
    "j": pa.array([None, 2, 3, 0, 4, None, 1, 3, 3, 8], pa.int64()),
    "s": pa.array(["ab", None, "Cde", "", "x", "ab", None, "zz", "q", "ab"], pa.string()),
    "d": pa.array([Decimal("1.50"), None, Decimal("0.00"), Decimal("3.25"), None, Decimal("1.50"),
                   Decimal("-2.00"), Decimal("9.99"), Decimal("4.00"), Decimal("0.10")], pa.decimal128(10, 2)),
})
U = pa.table({
    "uk": pa.array([1, 2, 3, 5, 8, 13, None], pa.int64()),
    "g": pa.array(["a", "b", "a", None, "b", "a", "b"], pa.string()),
})
DDL = "CREATE TABLE t (k BIGINT, i BIGINT, j BIGINT, s VARCHAR(10), d DECIMAL(10, 2))"

# (query, how many times the merged plan scans t)
QUERIES = [
    # scalar subqueries side by side, as q09: one init plan
    ("SELECT (SELECT COUNT(*) FROM t WHERE i < 3), (SELECT SUM(j) FROM t WHERE i >= 3), "
     "(SELECT AVG(d) FROM t WHERE i >= 3), (SELECT MIN(s) FROM t WHERE i IS NULL), (SELECT MAX(d) FROM t)", 1),
    # in a CASE, and over a table of the main query
    ("SELECT uk, CASE WHEN (SELECT COUNT(*) FROM t WHERE j > 2) > 3 THEN (SELECT AVG(i) FROM t WHERE j > 2) "
     "ELSE (SELECT AVG(j) FROM t WHERE j > 2) END FROM u", 1),
    # in WHERE
    ("SELECT k FROM t WHERE j > (SELECT AVG(j) FROM t WHERE i > 0) AND j <= (SELECT MAX(j) FROM t WHERE i < 5)", 2),
    # filters that keep no row: COUNT 0, SUM / AVG / MIN NULL, COUNT(DISTINCT) 0 (over one table, apart:
    # its rows go to one task)
    ("SELECT (SELECT COUNT(*) FROM t WHERE i > 100), (SELECT SUM(j) FROM t WHERE i > 100), "
     "(SELECT COUNT(DISTINCT j) FROM t WHERE i > 100), (SELECT AVG(d) FROM t WHERE i < 100)", 2),
    # derived tables cross-joined, as q28: DISTINCT aggregates (apart over one table), NULL comparisons
    ("SELECT * FROM (SELECT AVG(j) a1, COUNT(j) c1, COUNT(DISTINCT j) cd1 FROM t WHERE i BETWEEN 0 AND 3) x, "
     "(SELECT AVG(j) a2, COUNT(j) c2, COUNT(DISTINCT j) cd2 FROM t WHERE i > 3 OR s = 'ab') y, "
     "(SELECT COUNT(*) n3, MIN(s) m3 FROM t WHERE s IS NULL) z", 3),
    # one with no filter of its own beside filtered ones; statistics and bit aggregates
    ("SELECT * FROM (SELECT COUNT(*) n, STDDEV_SAMP(j) sd FROM t) x, (SELECT VAR_POP(i) v, BIT_OR(j) b FROM t "
     "WHERE k > 4) y, (SELECT SUM(d) sm FROM t WHERE k > 4) z", 1),
    # the same aggregate twice with equal filters
    ("SELECT * FROM (SELECT SUM(j) a FROM t WHERE i > 1) x, (SELECT SUM(j) b FROM t WHERE i > 1) y", 1),
    # expressions over the aggregates, and a regular table beside them, joined on a merged value
    ("SELECT uk, c + 1, s2 * 2 FROM u, (SELECT COUNT(*) c FROM t WHERE i > 2) x, "
     "(SELECT SUM(j) s2 FROM t WHERE i <= 2) y WHERE uk > c", 1),
    # the same join tree (t joined to u), own filters on t, shared one on u, as q88
    ("SELECT * FROM (SELECT COUNT(*) c1 FROM t, u WHERE k = uk AND g = 'a' AND i > 0) x, "
     "(SELECT COUNT(*) c2 FROM t, u WHERE k = uk AND g = 'a' AND i <= 0) y, "
     "(SELECT SUM(j) s3 FROM t, u WHERE k = uk AND g = 'a' AND j IS NOT NULL) z", 1),
    # DISTINCT over a join tree: merged (the joins are what is shared)
    ("SELECT * FROM (SELECT COUNT(DISTINCT j) c1 FROM t, u WHERE k = uk AND i > 0) x, "
     "(SELECT COUNT(DISTINCT j) c2, SUM(i) s2 FROM t, u WHERE k = uk AND i <= 0) y", 1),
    # different trees: one joins u, the other reads t alone; not merged
    ("SELECT * FROM (SELECT COUNT(*) c1 FROM t, u WHERE k = uk) x, (SELECT COUNT(*) c2 FROM t WHERE i > 0) y", 2),
    # a scalar subquery reading another's value is not merged; the one it reads is, with a third
    ("SELECT (SELECT COUNT(*) FROM t WHERE i > (SELECT MIN(j) FROM t WHERE k > 2)), (SELECT SUM(i) FROM t WHERE k > 2)",
     2),
    # GROUP BY: not one row, not merged
    ("SELECT * FROM (SELECT COUNT(*) c1 FROM t WHERE i > 0) x, (SELECT i, COUNT(*) c2 FROM t GROUP BY i) y", 2),
]


@pytest.fixture(scope="module")
def engines():
    con, duck = canopy_and_duckdb(DDL, "t", T)
    con.execute("CREATE TABLE u (uk BIGINT, g VARCHAR(4))")
    con.load_table("u", U)
    duck.register("u", U)
    yield con, duck
    con.close()
    duck.close()


@pytest.mark.parametrize("sql,scans", QUERIES)
def test_merged_aggregates_answer_as_duckdb(engines, sql, scans):
    con, duck = engines
    # AVG of a DECIMAL is MySQL's DECIMAL (4 more digits), DuckDB's a DOUBLE
    assert_same_rows(con.execute(sql).fetchall(), duck.execute(sql).fetchall(), rel=1e-6)
    plan = "\n".join(str(r[0]) for r in con.execute("EXPLAIN " + sql).fetchall())
    assert len(re.findall(r"\bScan t \[", plan)) == scans, plan


def test_scalar_subqueries_become_one_init_plan(engines):
    con, _ = engines
    plan = "\n".join(str(r[0]) for r in con.execute(
        "EXPLAIN SELECT (SELECT COUNT(*) FROM t, u WHERE k = uk AND i < 3) + "
        "(SELECT SUM(j) FROM t, u WHERE k = uk AND i >= 3)").fetchall())
    assert "Init plan $subquery0, $subquery1 (scalar, one plan computes all 2, runs first)" in plan, plan
    assert plan.count("Init plan") == 1, plan


def test_a_subquery_over_another_table_stays_its_own(engines):
    con, duck = engines
    sql = ("SELECT (SELECT COUNT(*) FROM t, u WHERE k = uk AND i < 3), (SELECT COUNT(*) FROM u), "
           "(SELECT SUM(j) FROM t, u WHERE k = uk AND i >= 3)")
    assert_same_rows(con.execute(sql).fetchall(), duck.execute(sql).fetchall())
    plan = "\n".join(str(r[0]) for r in con.execute("EXPLAIN " + sql).fetchall())
    assert "Init plan $subquery0, $subquery2 " in plan and "Init plan $subquery1 (scalar" in plan, plan
