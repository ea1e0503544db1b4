"""Subqueries inside a join's ON (inner, LEFT, RIGHT, FULL; correlated to either side or not) and
ROLLUP / CUBE / GROUPING SETS / FULL OUTER JOIN inside correlated subqueries, checked against DuckDB.
Runs embedded and, with ``CANOPY_RUNNER=ray``, on Ray."""
import numpy as np
import pyarrow as pa
import pytest

from oracle import canopy_and_duckdb


def _column(rng, n, low, high, nulls):
    return pa.array(rng.integers(low, high, n), pa.int32(), mask=rng.random(n) < nulls)


@pytest.fixture(scope="module")
def both():
    rng = np.random.default_rng(11)
    n, m = 50, 40
    t1 = pa.table({"id": pa.array(np.arange(n), pa.int64()), "a": _column(rng, n, 0, 12, 0.15),
                   "g": _column(rng, n, 0, 5, 0.1)})
    t2 = pa.table({"a": _column(rng, m, 0, 12, 0.15), "g": _column(rng, m, 0, 6, 0.1),
                   "v": _column(rng, m, 0, 20, 0.1)})      # duplicate rows likely: the anti joins see them
    con, duck = canopy_and_duckdb("CREATE TABLE t1 (id BIGINT, a INT, g INT, SHARD KEY (id))", "t1", t1)
    con.execute("CREATE TABLE t2 (a INT, g INT, v INT)")
    con.load_table("t2", t2)
    duck.register("t2", t2)
    yield con, duck
    con.close()


def check(both, sql):
    con, duck = both
    got = sorted(con.execute(sql).fetchall(), key=repr)
    expected = sorted(duck.execute(sql).fetchall(), key=repr)
    assert got == expected, sql


IN_ON = [
    # inner joins: ON filters the rows joined so far
    "SELECT t1.id, t2.v FROM t1 JOIN t2 ON t1.a = t2.a AND t1.g IN (SELECT g FROM t2 WHERE v > 10)",
    "SELECT t1.id, t2.v FROM t1 JOIN t2 ON t1.a = t2.a AND EXISTS (SELECT 1 FROM t2 x WHERE x.g = t1.g AND x.v > t2.v)",
    "SELECT t1.id, t2.v, y.id FROM t1 JOIN t2 ON t1.a = t2.a AND t2.v > (SELECT AVG(v) FROM t2 x WHERE x.g = t1.g) "
    "JOIN t1 y ON y.id = t2.v",
    "SELECT t1.id, t2.v FROM t1, t2 WHERE t1.a = t2.a AND t1.id IN (SELECT t1.id FROM t1 JOIN t2 z ON z.a = t1.g "
    "AND z.v NOT IN (SELECT a FROM t2 WHERE a IS NOT NULL))",
    # LEFT: a condition on the right side alone filters the right input
    "SELECT t1.id, t2.v FROM t1 LEFT JOIN t2 ON t1.a = t2.a AND t2.v IN (SELECT a FROM t1 WHERE g = 2)",
    "SELECT t1.id, t2.v FROM t1 LEFT JOIN t2 ON t1.a = t2.a AND t2.v NOT IN (SELECT a FROM t1 x WHERE x.g = t2.g)",
    # LEFT / RIGHT reading the preserved side: matched pairs plus the unmatched rows padded
    "SELECT t1.id, t2.v FROM t1 LEFT JOIN t2 ON t1.a = t2.a AND EXISTS (SELECT 1 FROM t2 x WHERE x.g = t1.g AND x.v > 15)",
    "SELECT t1.id, t2.v FROM t1 LEFT JOIN t2 ON t1.a = t2.a AND t2.v > (SELECT AVG(v) FROM t2 x WHERE x.g = t1.g)",
    "SELECT t1.id, t2.v FROM t1 LEFT JOIN t2 ON t2.v < (SELECT MIN(x.v) FROM t2 x WHERE x.g = t1.g)",
    "SELECT t1.id, t2.a, t2.v FROM t2 RIGHT JOIN t1 ON t1.a = t2.a AND t1.g IN (SELECT g FROM t2 x WHERE x.v = t2.v)",
    # FULL
    "SELECT t1.id, t1.a, t2.v, t2.a FROM t1 FULL JOIN t2 ON t1.a = t2.a AND t2.g IN (SELECT g FROM t1 x WHERE x.id < 20)",
    "SELECT t1.id, t1.a, t2.v, t2.a FROM t1 FULL JOIN t2 ON t1.a = t2.a AND t2.v > (SELECT AVG(v) FROM t2 x WHERE x.g = t1.g)",
    "SELECT t2.a, COUNT(*), COUNT(t1.id) FROM t1 FULL JOIN t2 ON t1.a = t2.a "
    "AND EXISTS (SELECT 1 FROM t1 x WHERE x.g = t2.g) GROUP BY t2.a",
    # inside a correlated subquery: a join's ON with a subquery correlated two levels out
    "SELECT id, (SELECT COUNT(*) FROM t2 JOIN t1 x ON x.a = t2.a AND x.g IN (SELECT g FROM t2 z WHERE z.v = t1.a)) FROM t1",
]

CORRELATED = [
    # ROLLUP / CUBE / GROUPING SETS: the domain joins every set; () yields its row over no rows too
    "SELECT id, (SELECT SUM(v) FROM t2 WHERE t2.g = t1.g GROUP BY ROLLUP(a) ORDER BY 1 DESC LIMIT 1) FROM t1",
    "SELECT id FROM t1 WHERE a IN (SELECT a FROM t2 WHERE t2.g = t1.g GROUP BY ROLLUP(a, v))",
    "SELECT id, (SELECT COUNT(*) FROM t2 WHERE t2.g = t1.g + 3 GROUP BY ROLLUP(a) ORDER BY COUNT(*) DESC LIMIT 1) FROM t1",
    "SELECT id, EXISTS (SELECT 1 FROM t2 WHERE t2.g = t1.g + 3 GROUP BY ROLLUP(a)) FROM t1",
    "SELECT id, (SELECT GROUPING(a) * 10 + COUNT(*) FROM t2 WHERE t2.g = t1.g + 3 GROUP BY ROLLUP(a) "
    "ORDER BY 1 DESC LIMIT 1) FROM t1",
    "SELECT id, a IN (SELECT COUNT(*) FROM t2 WHERE t2.g = t1.g GROUP BY CUBE(a, v)) FROM t1",
    "SELECT id, (SELECT SUM(v) FROM t2 WHERE t2.g < t1.g GROUP BY GROUPING SETS ((a), ()) ORDER BY 1 DESC LIMIT 1) FROM t1",
    # FULL OUTER JOIN: the domain pushed into both sides
    "SELECT id, (SELECT COUNT(*) FROM t2 FULL OUTER JOIN t1 x ON x.a = t2.a AND x.g = t1.g) FROM t1",
    "SELECT id, (SELECT COUNT(x.id) + 100 * COUNT(t2.v) FROM t2 FULL JOIN t1 x ON x.a = t2.g AND t2.v > t1.a) FROM t1",
    "SELECT id, (SELECT COUNT(*) FROM t2 FULL JOIN t1 x ON x.a = t2.a WHERE x.g = t1.g OR t2.g = t1.g) FROM t1",
    "SELECT id FROM t1 WHERE EXISTS (SELECT 1 FROM t2 FULL JOIN t1 x ON x.id = t2.v WHERE COALESCE(t2.a, x.a) = t1.a)",
]


@pytest.mark.parametrize("sql", IN_ON + CORRELATED)
def test_matches_duckdb(both, sql):
    check(both, sql)
