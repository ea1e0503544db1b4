"""Subqueries in every position (select list, WHERE under OR / NOT, CASE, HAVING, ORDER BY), correlated
by equalities or not, one or two levels deep, with ANY / ALL / SOME and row values, checked against
DuckDB, whose NULL semantics for IN / ANY / ALL are the standard's and MySQL's: ``1 NOT IN (NULL, 2)``
is NULL, ``x > ALL (empty)`` is TRUE. Runs embedded and, with ``CANOPY_RUNNER=ray``, on Ray."""
import numpy as np
import pyarrow as pa
import pytest

from engine.errors import DataError
from oracle import canopy_and_duckdb


def _column(rng, n, low, high, nulls):
    values = rng.integers(low, high, n)
    return pa.array(values, pa.int32(), mask=rng.random(n) < nulls)


@pytest.fixture(scope="module")
def both():
    rng = np.random.default_rng(7)
    n = 60
    t1 = pa.table({"id": pa.array(np.arange(n), pa.int64()), "a": _column(rng, n, 0, 12, 0.15),
                   "g": _column(rng, n, 0, 5, 0.1),
                   "s": pa.array([f"s{i % 7}" if i % 11 else None for i in range(n)], pa.string())})
    m = 40
    t2 = pa.table({"a": _column(rng, m, 0, 12, 0.15), "g": _column(rng, m, 0, 6, 0.1),
                   "v": _column(rng, m, 0, 20, 0.1)})
    con, duck = canopy_and_duckdb("CREATE TABLE t1 (id BIGINT, a INT, g INT, s VARCHAR(8), SHARD KEY (id))",
                                  "t1", t1)
    con.execute("CREATE TABLE t2 (a INT, g INT, v INT)")
    con.load_table("t2", t2)
    duck.register("t2", t2)
    con.execute("CREATE TABLE e (a INT, v INT)")          # empty
    duck.execute("CREATE TABLE e (a INT, v INT)")
    yield con, duck
    con.close()


def check(both, sql):
    con, duck = both
    got = sorted(con.execute(sql).fetchall(), key=repr)
    expected = sorted(duck.execute(sql).fetchall(), key=repr)
    assert got == expected, sql


SELECT_LIST = [
    "SELECT id, (SELECT MAX(v) FROM t2 WHERE t2.g = t1.g) FROM t1",
    "SELECT id, (SELECT COUNT(*) FROM t2 WHERE t2.g = t1.g) FROM t1",
    "SELECT id, (SELECT COUNT(v) + 1 FROM t2 WHERE t2.a = t1.a AND t2.g = t1.g) FROM t1",
    "SELECT id, (SELECT SUM(v) FROM t2 WHERE t2.a < t1.a) FROM t1",                 # not an equality
    "SELECT id, (SELECT COUNT(DISTINCT v) FROM t2 WHERE t2.g = t1.g OR t2.a = t1.a) FROM t1",
    "SELECT id, (SELECT v FROM t2 WHERE t2.a = t1.id + 100) FROM t1",               # no row: NULL
    "SELECT id, (SELECT MIN(v) FROM e WHERE e.a = t1.a), (SELECT COUNT(*) FROM e WHERE e.a = t1.a) FROM t1",
    "SELECT id, EXISTS (SELECT 1 FROM t2 WHERE t2.a = t1.a) FROM t1",
    "SELECT id, NOT EXISTS (SELECT 1 FROM t2 WHERE t2.a = t1.a AND t2.v > t1.g) FROM t1",
    "SELECT id, a IN (SELECT a FROM t2) FROM t1",
    "SELECT id, a NOT IN (SELECT a FROM t2) FROM t1",
    "SELECT id, a IN (SELECT a FROM t2 WHERE a IS NOT NULL) FROM t1",
    "SELECT id, a NOT IN (SELECT a FROM t2 WHERE t2.g = t1.g) FROM t1",
    "SELECT id, a IN (SELECT v FROM t2 WHERE t2.g = t1.g AND v IS NOT NULL) FROM t1",
    "SELECT id, a IN (SELECT a FROM e) , a NOT IN (SELECT a FROM e) FROM t1",
    "SELECT id, CASE WHEN EXISTS (SELECT 1 FROM t2 WHERE t2.g = t1.g AND t2.v > 15) THEN 'hi' "
    "WHEN a IN (SELECT a FROM t2 WHERE t2.v < 3) THEN 'lo' ELSE s END FROM t1",
    "SELECT id, COALESCE((SELECT MAX(v) FROM t2 WHERE t2.a = t1.a), -1) * 2 FROM t1",
    "SELECT id, EXISTS (SELECT 1 FROM t2 WHERE t2.a + 1 = t1.a AND t2.g = t1.g) FROM t1",
    "SELECT id, (SELECT COUNT(*) FROM t2 WHERE t2.a = t1.a OR (t1.a IS NULL AND t2.a IS NULL)) FROM t1",
    "SELECT id, EXISTS (SELECT 1 FROM t2 WHERE t2.a = t1.a AND t1.g IS NULL) FROM t1",
    # ORDER BY ... LIMIT per outer row (ROW_NUMBER over the domain); DESC puts NULLs last in both
    "SELECT id, (SELECT v FROM t2 WHERE t2.g = t1.g ORDER BY v DESC LIMIT 1) FROM t1",
    "SELECT id, (SELECT v FROM t2 WHERE t2.g = t1.g AND v IS NOT NULL ORDER BY v LIMIT 1 OFFSET 1) FROM t1",
    "SELECT id, (SELECT v FROM t2 WHERE t2.a < t1.a ORDER BY v DESC LIMIT 1) FROM t1",
    "SELECT id, a IN (SELECT a FROM t2 WHERE t2.g = t1.g ORDER BY v DESC, a DESC LIMIT 2) FROM t1",
    "SELECT id, (SELECT MAX(v) FROM t2 WHERE t2.g = t1.g AND t2.v < (SELECT AVG(v) FROM t2)) FROM t1",
]

WHERE = [
    "SELECT id FROM t1 WHERE EXISTS (SELECT 1 FROM t2 WHERE t2.a = t1.a) OR g = 2",
    "SELECT id FROM t1 WHERE NOT EXISTS (SELECT 1 FROM t2 WHERE t2.a = t1.a) OR a IN (SELECT v FROM t2)",
    "SELECT id FROM t1 WHERE a IN (SELECT a FROM t2 WHERE t2.g = 1) OR a IN (SELECT a FROM t2 WHERE t2.g = 2)",
    "SELECT id FROM t1 WHERE NOT (a IN (SELECT a FROM t2 WHERE t2.v > 10))",
    "SELECT id FROM t1 WHERE a NOT IN (SELECT a FROM t2 WHERE t2.g = t1.g)",         # correlated NOT IN
    "SELECT id FROM t1 WHERE (SELECT COUNT(*) FROM t2 WHERE t2.a = t1.a AND (t2.g = t1.g OR t2.v > 15)) > 0",
    "SELECT id FROM t1 WHERE (SELECT COUNT(*) FROM t2 WHERE t2.a = t1.a) = 0",
    "SELECT id FROM t1 WHERE g > (SELECT AVG(g) FROM t2 WHERE t2.a <> t1.a)",
    "SELECT id FROM t1 WHERE a IN (SELECT MAX(a) FROM t2 WHERE t2.g = t1.g GROUP BY v)",
    "SELECT id FROM t1 WHERE EXISTS (SELECT a FROM t2 WHERE t2.a = t1.a UNION ALL SELECT a FROM e WHERE e.v = t1.g)",
    "SELECT id FROM t1 WHERE EXISTS (SELECT 1 FROM t2 WHERE t2.g = t1.g LIMIT 1)",
    "SELECT id FROM t1 WHERE EXISTS (SELECT 1 FROM t2 JOIN t2 AS u ON t2.a = u.g WHERE u.v = t1.a)",
    "SELECT id FROM t1 WHERE EXISTS (SELECT 1 FROM t2 LEFT JOIN e ON e.a = t2.a WHERE t2.v = t1.a OR e.v = t1.g)",
    # an inner join below IN / NOT IN read on one side only (a semi join there: existence_joins)
    "SELECT id FROM t1 WHERE a IN (SELECT x.a FROM t2 AS x, t2 AS y WHERE x.a = y.a AND x.g <> y.g)",
    "SELECT id FROM t1 WHERE a NOT IN (SELECT y.v FROM t2 AS x JOIN t2 AS y ON x.g = y.g WHERE x.v > 12)",
    "SELECT id FROM t1 WHERE g IN (SELECT DISTINCT x.g FROM t2 AS x, t1 AS y WHERE x.a = y.a AND y.g > 1)",
    "SELECT id FROM t1 WHERE NOT EXISTS (SELECT 1 FROM t2 AS x, t2 AS y WHERE x.a = y.v AND y.g = t1.g)",
]

QUANTIFIED = [
    f"SELECT id, a {op} {q} (SELECT {col} FROM {table}{where}) FROM t1"
    for op in ("=", "<>", "<", "<=", ">", ">=")
    for q in ("ANY", "ALL", "SOME")
    for col, table, where in (("a", "t2", ""), ("v", "t2", " WHERE t2.g = t1.g"), ("a", "e", ""),
                              ("a", "t2", " WHERE a IS NOT NULL AND t2.v > t1.g"))
]

NESTED = [
    # correlated to the outermost query two levels down
    "SELECT id FROM t1 WHERE a IN (SELECT a FROM t2 WHERE v IN (SELECT v FROM t2 AS x WHERE x.g = t1.g))",
    "SELECT id FROM t1 WHERE EXISTS (SELECT 1 FROM t2 WHERE t2.g = t1.g AND "
    "EXISTS (SELECT 1 FROM t2 AS x WHERE x.v = t1.a AND x.a = t2.a))",
    "SELECT id, (SELECT COUNT(*) FROM t2 WHERE t2.g = t1.g AND t2.a IN "
    "(SELECT x.a FROM t2 AS x WHERE x.v > t1.a)) FROM t1",
    "SELECT id, (SELECT MAX((SELECT MIN(x.v) FROM t2 AS x WHERE x.a = t2.a AND x.g <> t1.g)) FROM t2 "
    "WHERE t2.g = t1.g) FROM t1",
]

GROUPED = [
    "SELECT g, COUNT(*) FROM t1 GROUP BY g HAVING COUNT(*) > (SELECT COUNT(*) FROM t2 WHERE t2.g = t1.g)",
    "SELECT g, COUNT(*), (SELECT MAX(v) FROM t2 WHERE t2.g = t1.g) FROM t1 GROUP BY g",
    "SELECT g, SUM(a) IN (SELECT v FROM t2) FROM t1 GROUP BY g",
    "SELECT g FROM t1 GROUP BY g HAVING EXISTS (SELECT 1 FROM t2 WHERE t2.g = t1.g AND t2.v > 18) OR g IS NULL",
]

ROWS = [
    "SELECT id, (a, g) IN (SELECT a, g FROM t2) FROM t1",
    "SELECT id, (a, g) NOT IN (SELECT a, g FROM t2) FROM t1",
    "SELECT id FROM t1 WHERE (a, g) IN (SELECT a, g FROM t2)",
    "SELECT id FROM t1 WHERE (a, g) NOT IN (SELECT v, g FROM t2 WHERE v < 8)",
]


@pytest.mark.parametrize("sql", SELECT_LIST + WHERE + QUANTIFIED + NESTED + GROUPED + ROWS)
def test_matches_duckdb(both, sql):
    check(both, sql)


def test_order_by_a_correlated_subquery(both):
    con, duck = both
    sql = "SELECT id FROM t1 ORDER BY (SELECT COUNT(*) FROM t2 WHERE t2.a = t1.a), id"
    assert con.execute(sql).fetchall() == duck.execute(sql).fetchall()


def test_null_semantics_of_constants(both):
    con, _ = both
    rows = con.execute("SELECT 1 NOT IN (SELECT NULL UNION ALL SELECT 2), 1 IN (SELECT NULL UNION ALL SELECT 1), "
                       "1 > ALL (SELECT a FROM e), 1 > ANY (SELECT a FROM e), NULL IN (SELECT a FROM e), "
                       "NULL IN (SELECT 1)").fetchall()
    assert rows == [(None, True, True, False, False, None)]


@pytest.mark.parametrize("sql", [
    "SELECT id, (SELECT v FROM t2 WHERE t2.g = t1.g) FROM t1",
    "SELECT id FROM t1 WHERE a = (SELECT a FROM t2)",
])
def test_scalar_subquery_with_several_rows_is_an_error(both, sql):
    con, _ = both
    with pytest.raises(DataError, match="Subquery returns more than 1 row"):
        con.execute(sql).fetchall()


def _scans_of_t1(con, sql):
    return sum(" Scan t1 " in row[0] + " " for row in con.execute("EXPLAIN " + sql).fetchall())


def test_equality_correlation_needs_no_copy_of_the_outer_query(both):
    # t2.a = t1.a: t2.a is the domain column itself; t2.a < t1.a: the distinct t1.a are joined in
    con, _ = both
    assert _scans_of_t1(con, "SELECT id, EXISTS (SELECT 1 FROM t2 WHERE t2.a = t1.a) FROM t1") == 1
    assert _scans_of_t1(con, "SELECT id, EXISTS (SELECT 1 FROM t2 WHERE t2.a < t1.a) FROM t1") == 2
