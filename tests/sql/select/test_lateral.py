"""LATERAL derived tables (MySQL 8.0.14+) against DuckDB, which has them too: a comma, [CROSS] JOIN and
LEFT JOIN LATERAL, aggregates (one row per left row, COUNT 0 and MAX NULL where nothing matches),
top-N per left row (ORDER BY ... LIMIT), correlation on several columns and tables, NULLs in the
correlated columns, non-equality correlation; and a derived table without LATERAL that names its left
gets MySQL's error (MariaDB agrees: tests/sql/test_mysql_compat_mariadb.py). Both runners
(``CANOPY_RUNNER=ray``)."""
import numpy as np
import pyarrow as pa
import pytest

from engine.errors import ProgrammingError
from oracle import assert_same_rows, canopy_and_duckdb


@pytest.fixture(scope="module")
def both():
    rng = np.random.default_rng(11)
    n, m = 60, 400
    t = pa.table({
        "a": pa.array(rng.integers(0, 20, n), mask=rng.random(n) < 0.1),
        "b": pa.array(rng.integers(0, 5, n).astype(np.int32)),
        "k": np.arange(n, dtype=np.int64),
    })
    s = pa.table({
        "x": pa.array(rng.integers(0, 15, m), mask=rng.random(m) < 0.05),
        "y": pa.array(rng.integers(-50, 50, m)),
        "z": pa.array(rng.integers(0, 5, m).astype(np.int32)),
        "id": np.arange(m, dtype=np.int64),
    })
    con, duck = canopy_and_duckdb("CREATE TABLE t (a BIGINT, b INT, k BIGINT, SHARD KEY (k))", "t", t)
    con.execute("CREATE TABLE s (x BIGINT, y BIGINT, z INT, id BIGINT, SHARD KEY (id))")
    con.load_table("s", s)
    duck.register("s", s)
    yield con, duck
    con.close()


QUERIES = [
    "SELECT t.k, d.m, d.c FROM t, LATERAL (SELECT MAX(y) AS m, COUNT(*) AS c FROM s WHERE s.x = t.a) d",
    "SELECT t.k, d.y FROM t JOIN LATERAL (SELECT y FROM s WHERE s.x = t.a AND s.z = t.b) d ON TRUE",
    "SELECT t.k, d.y FROM t CROSS JOIN LATERAL (SELECT y FROM s WHERE s.x = t.a) AS d",
    "SELECT t.k, d.y FROM t LEFT JOIN LATERAL (SELECT y FROM s WHERE s.x = t.a) AS d ON TRUE",
    "SELECT t.k, d.y FROM t LEFT JOIN LATERAL (SELECT y FROM s WHERE s.x = t.a) AS d ON d.y > 0",
    "SELECT t.k, d.y FROM t JOIN LATERAL (SELECT y FROM s WHERE s.x = t.a) AS d ON d.y > t.b",
    # the two largest y per left row (ORDER BY ... LIMIT inside: a ROW_NUMBER per left value)
    "SELECT t.k, d.y FROM t, LATERAL (SELECT y FROM s WHERE s.x = t.a ORDER BY y DESC, id LIMIT 2) d",
    # non-equality correlation, a GROUP BY inside
    "SELECT t.k, d.z, d.n FROM t, LATERAL (SELECT z, COUNT(*) AS n FROM s WHERE s.y < t.a - 10 GROUP BY z) d",
    # two left tables, the lateral reading both
    "SELECT u.k, v.k, d.c FROM t u JOIN t v ON u.b = v.b AND v.k < 5, "
    "LATERAL (SELECT COUNT(*) AS c FROM s WHERE s.x = u.a AND s.z = v.b) d",
    # reading nothing of its left: an ordinary derived table
    "SELECT t.k, d.c FROM t, LATERAL (SELECT COUNT(*) AS c FROM s) d",
    # column aliases, and the lateral's columns used outside
    "SELECT d.total, COUNT(*) FROM t, LATERAL (SELECT SUM(y) FROM s WHERE s.x = t.a) AS d (total) "
    "GROUP BY d.total",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_lateral_matches_duckdb(both, sql):
    con, duck = both
    assert_same_rows(con.execute(sql).fetchall(), duck.execute(sql).fetchall())


def test_lateral_aggregate_has_a_row_per_left_row(both):
    """A keyless aggregate in LATERAL: every left row once, NULL a (the NULL matches nothing)."""
    con, _ = both
    rows = con.execute("SELECT t.k, d.c FROM t, LATERAL (SELECT COUNT(*) AS c FROM s WHERE s.x = t.a) d").fetchall()
    assert sorted(k for k, _ in rows) == list(range(60))
    nulls = {k for (k,) in con.execute("SELECT k FROM t WHERE a IS NULL").fetchall()}
    assert nulls and all(c == 0 for k, c in rows if k in nulls)


@pytest.mark.parametrize("sql, clause", [
    ("SELECT * FROM t, (SELECT y FROM s WHERE s.x = t.a) d", "WHERE"),
    ("SELECT * FROM t, (SELECT t.a FROM s) d", "SELECT"),
])
def test_derived_table_without_lateral_cannot_see_its_left(both, sql, clause):
    con, _ = both
    with pytest.raises(ProgrammingError, match=f"unknown column 't.a' in '{clause}'"):
        con.execute(sql)


def test_lateral_refusals(both):
    con, _ = both
    with pytest.raises(ProgrammingError, match="LATERAL derived table that reads the left side of a RIGHT JOIN"):
        con.execute("SELECT * FROM t RIGHT JOIN LATERAL (SELECT y FROM s WHERE s.x = t.a) d ON TRUE")
    with pytest.raises(ProgrammingError, match="every derived table must have its own alias"):
        con.execute("SELECT * FROM t, LATERAL (SELECT y FROM s WHERE s.x = t.a)")
