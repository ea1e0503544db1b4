"""A WITH query referenced more than once is computed once and read by every reference (TPC-H Q15's
revenue0); referenced once, or too cheap to be worth it, it stays inlined. Results against DuckDB."""
import numpy as np
import pyarrow as pa
import pytest

from oracle import canopy_and_duckdb


@pytest.fixture(scope="module")
def both():
    rng = np.random.default_rng(11)
    n = 30_000
    data = pa.table({"a": np.arange(n), "b": rng.integers(0, 400, n), "c": rng.integers(-50, 50, n)})
    con, duck = canopy_and_duckdb("CREATE TABLE t (a BIGINT, b BIGINT, c BIGINT, SHARD KEY (a))", "t", data)
    yield con, duck
    con.close()


def plan_of(con, sql: str) -> str:
    return "\n".join(row[0] for row in con.execute("EXPLAIN " + sql).fetchall())


# (query, CTE name -> times read, or {} where nothing may be materialized)
CASES = [
    # in FROM twice (a self join) and in a scalar subquery
    ("WITH g AS (SELECT b, SUM(c) AS s, COUNT(*) AS n FROM t GROUP BY b) "
     "SELECT x.b, x.s, y.s FROM g x JOIN g y ON x.b = y.b + 1 "
     "WHERE x.n > (SELECT MIN(n) FROM g) + 60 ORDER BY x.b", {"g": 3}),
    # in IN (...) and in a scalar subquery; the table itself read inline
    ("WITH g AS (SELECT b, COUNT(*) AS n FROM t WHERE c > 0 GROUP BY b) "
     "SELECT a, b FROM t WHERE b IN (SELECT b FROM g WHERE n > 40) "
     "AND a < (SELECT MAX(n) FROM g) * 100 ORDER BY a", {"g": 2}),
    # TPC-H Q15's shape: the rows whose total equals the largest total
    ("WITH r AS (SELECT b AS k, SUM(c) AS total FROM t WHERE a % 7 <> 3 GROUP BY b) "
     "SELECT k, total FROM r WHERE total = (SELECT MAX(total) FROM r) ORDER BY k", {"r": 2}),
    # nested: h reads g twice, h is read twice; g is then computed inside h's single computation
    ("WITH g AS (SELECT b, SUM(c) AS s FROM t GROUP BY b), "
     "h AS (SELECT g1.b, g1.s + g2.s AS s2 FROM g g1 JOIN g g2 ON g1.b = g2.b + 200) "
     "SELECT COUNT(*), SUM(s2) FROM h WHERE s2 > (SELECT MIN(s2) FROM h)", {"h": 2}),
    # a join whose bound MultiJoin is estimated far above the broadcast limit (30k x 3k rows at a default
    # selectivity) but, ordered, is a key join of ~3k rows: estimated as optimized, it is materialized
    ("WITH j AS (SELECT x.b, y.c FROM t x, t y WHERE x.a = y.a AND y.c > 40) "
     "SELECT COUNT(*), SUM(j1.c) FROM j j1 JOIN j j2 ON j1.b = j2.b AND j1.c = j2.c", {"j": 2}),
    # referenced once: inlined (filters and pruning reach into it)
    ("WITH g AS (SELECT b, SUM(c) AS s FROM t GROUP BY b) SELECT b, s FROM g WHERE b < 20 ORDER BY b", {}),
    # referenced twice but only a filtered scan: cheaper to read again than to move
    ("WITH p AS (SELECT a, b FROM t WHERE c = 7) "
     "SELECT COUNT(*) FROM p x JOIN p y ON x.b = y.b", {}),
]


@pytest.mark.parametrize("sql, reads", CASES)
def test_matches_duckdb_and_materializes_when_read_more_than_once(both, sql, reads):
    con, duck = both
    assert con.execute(sql).fetchall() == duck.execute(sql).fetchall()
    plan = plan_of(con, sql)
    for name, times in reads.items():
        assert f"CTE {name} materialized once, read {times}x" in plan
        assert plan.count(f"CteScan {name} ") == times
    assert ("materialized once" in plan) == bool(reads)


def test_other_literals_reuse_the_plan_correctly(both):
    # the plan cache lifts literals: a value inside the materialized CTE must be substituted there too
    con, duck = both
    template = ("SELECT k, total FROM (WITH r AS (SELECT b AS k, SUM(c) AS total FROM t WHERE a > {} GROUP BY b) "
                "SELECT k, total FROM r WHERE total = (SELECT MAX(total) FROM r)) q ORDER BY k")
    for bound in (100, 20_000, 100, 29_000):
        sql = template.format(bound)
        assert con.execute(sql).fetchall() == duck.execute(sql).fetchall()


def test_empty_cte_is_read_as_empty(both):
    con, duck = both
    sql = ("WITH g AS (SELECT b, SUM(c) AS s FROM t WHERE a < 0 GROUP BY b) "
           "SELECT COUNT(*), (SELECT COUNT(*) FROM g) FROM g x JOIN g y ON x.b = y.b")
    assert con.execute(sql).fetchall() == duck.execute(sql).fetchall()
    assert "CTE g materialized once, read 3x" in plan_of(con, sql)


# -- CTEs above the broadcast limit: kept on the leaves where the planner prices that cheaper -------------

@pytest.fixture(scope="module")
def big():
    """250k rows: a CTE grouping by ``a`` is estimated at 250k groups, above ``broadcast_row_limit``."""
    rng = np.random.default_rng(12)
    n = 250_000
    data = pa.table({"a": np.arange(n), "b": rng.integers(0, 50, n), "c": rng.integers(-50, 50, n)})
    con, duck = canopy_and_duckdb("CREATE TABLE u (a BIGINT, b BIGINT, c BIGINT, SHARD KEY (a))", "u", data)
    yield con, duck
    con.close()


KEPT = [
    # the same aggregate read twice in full: computed once, each reference reads it where it was computed
    ("WITH g AS (SELECT a, b, SUM(c) AS s FROM u GROUP BY a, b) "
     "SELECT x.b, COUNT(*), SUM(x.s - y.s) FROM g x JOIN g y ON x.a = y.a + 1 GROUP BY x.b ORDER BY x.b", True),
    # a window over it (no filter reaches through), read three times
    ("WITH g AS (SELECT a, b, SUM(c) AS s, RANK() OVER (PARTITION BY b ORDER BY a) AS r FROM u GROUP BY a, b) "
     "SELECT x.b, SUM(x.s + y.s + z.s) FROM g x JOIN g y ON x.b = y.b AND x.r = y.r + 1 "
     "JOIN g z ON x.b = z.b AND x.r = z.r - 1 GROUP BY x.b ORDER BY x.b", True),
    # each reference wants a few rows: inlined, its filter reaches the scan
    ("WITH g AS (SELECT a, b, SUM(c) AS s FROM u GROUP BY a, b) "
     "SELECT x.a, x.s, y.s FROM g x JOIN g y ON x.a = y.a + 1 WHERE x.a < 50 AND y.a < 50 ORDER BY x.a", False),
    # read only by IN: inlined, where it becomes a semi join (no pairs)
    ("WITH p AS (SELECT x.a, x.b AS b1, y.b AS b2 FROM u x JOIN u y ON x.a = y.a + 3 AND x.b <> y.b) "
     "SELECT COUNT(*), SUM(c) FROM u WHERE a IN (SELECT a FROM p) AND a + 1 IN (SELECT a FROM p)", False),
]


@pytest.mark.parametrize("sql, kept", KEPT)
def test_a_big_cte_is_kept_where_cheaper(big, sql, kept):
    con, duck = big
    assert con.execute(sql).fetchall() == duck.execute(sql).fetchall()
    plan = plan_of(con, sql)
    assert ("Exchange keep (CTE " in plan) == kept, plan
    assert "materialized once" not in plan       # too big to gather
    if kept:
        assert plan.count("computed once, shown above") >= 1
