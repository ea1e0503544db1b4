"""ROLLUP, CUBE, GROUPING SETS, MySQL's WITH ROLLUP and GROUPING(...) against DuckDB: NULL keys that are
genuine beside rolled-up ones, empty input, one-row groups, many groups spread over the partitions,
DISTINCT aggregates (aggregated per set), and EXPLAIN showing the grouping-set expansion over one
partial aggregate by the finest grouping."""
import numpy as np
import pyarrow as pa
import pytest

from oracle import assert_same_rows, canopy_and_duckdb


@pytest.fixture(scope="module")
def both():
    rng = np.random.default_rng(13)
    n = 3000
    data = pa.table({
        "id": np.arange(n, dtype=np.int64),
        "a": pa.array(rng.integers(0, 40, n), mask=rng.random(n) < 0.05),        # many groups
        "b": pa.array([f"b{i}" for i in rng.integers(0, 6, n)], mask=rng.random(n) < 0.1),
        "c": pa.array(rng.integers(0, 3, n).astype(np.int32)),
        "v": pa.array(rng.integers(-500, 500, n), mask=rng.random(n) < 0.05),
        "d": pa.array(rng.integers(0, 10**6, n).astype(np.int32)).cast(pa.decimal128(10, 0)).cast(pa.decimal128(12, 2)),
        "x": pa.array(rng.normal(10, 3, n), mask=rng.random(n) < 0.05),
    })
    con, duck = canopy_and_duckdb("CREATE TABLE t (id BIGINT, a BIGINT, b VARCHAR(4), c INT, v BIGINT, "
                                  "d DECIMAL(12,2), x DOUBLE, SHARD KEY (id))", "t", data)
    yield con, duck
    con.close()


CASES = [
    "SELECT a, b, SUM(v), COUNT(*), COUNT(v), AVG(d), MIN(x), MAX(b) FROM t GROUP BY ROLLUP(a, b)",
    "SELECT a, b, c, SUM(d), GROUPING(a), GROUPING(b), GROUPING(a, b, c) FROM t GROUP BY CUBE(a, b, c)",
    "SELECT b, c, AVG(x), GROUPING(c, b) FROM t GROUP BY GROUPING SETS ((b, c), (b), (c), ())",
    "SELECT b, COUNT(*) FROM t GROUP BY GROUPING SETS ((b), (b), ())",            # duplicates kept
    "SELECT c, b, a, SUM(v) FROM t GROUP BY c, ROLLUP(b, a)",
    "SELECT c, b, SUM(v) FROM t GROUP BY ROLLUP(c), CUBE(b)",
    "SELECT a + 1, SUM(v) FROM t GROUP BY ROLLUP(a + 1)",
    "SELECT b, COUNT(DISTINCT a), SUM(v) FROM t GROUP BY ROLLUP(b)",
    "SELECT b, SUM(v) FROM t GROUP BY ROLLUP(b) HAVING GROUPING(b) = 1 OR b = 'b1'",
    "SELECT b, SUM(v) FROM t GROUP BY ROLLUP(b) HAVING b IS NULL",                # genuine NULL and total
    "SELECT c, SUM(v) FROM t WHERE id < 0 GROUP BY ROLLUP(c)",                    # empty: the total row
    "SELECT id, SUM(v) FROM t WHERE id < 3 GROUP BY ROLLUP(id)",                  # one-row groups
    "SELECT COUNT(*), SUM(v) FROM t GROUP BY GROUPING SETS (())",
    # each set rolled up from the merged states of the finer set before it (three levels, AVG's two
    # states, MIN / MAX of strings, a set reached through two others)
    "SELECT c, b, a, SUM(v), AVG(d), COUNT(x), MIN(b), MAX(x) FROM t GROUP BY ROLLUP(c, b, a)",
    "SELECT a, b, c, SUM(d) FROM t GROUP BY GROUPING SETS ((a, b, c), (a, c), (b, c), (c), (a, b), ())",
    "SELECT c, a, SUM(v) FROM t WHERE id < 0 GROUP BY ROLLUP(c, a)",             # empty through the chain
]


@pytest.mark.parametrize("sql", CASES)
def test_grouping_sets_match_duckdb(both, sql):
    con, duck = both
    assert_same_rows(con.execute(sql).fetchall(), duck.execute(sql).fetchall())


def test_with_rollup_is_rollup(both):
    """MySQL's GROUP BY a, b WITH ROLLUP (it used to return the plain GROUP BY)."""
    con, duck = both
    got = con.execute("SELECT b, c, SUM(v), COUNT(*) FROM t GROUP BY b, c WITH ROLLUP").fetchall()
    want = duck.execute("SELECT b, c, SUM(v), COUNT(*) FROM t GROUP BY ROLLUP(b, c)").fetchall()
    assert_same_rows(got, want)


def test_grouping_in_order_by(both):
    con, duck = both
    sql = "SELECT b, c, SUM(v) FROM t GROUP BY ROLLUP(b, c) ORDER BY GROUPING(b, c) DESC, b NULLS FIRST, c NULLS FIRST"
    got = con.execute(sql.replace(" NULLS FIRST", "")).fetchall()      # MySQL: NULL first ascending
    want = duck.execute(sql).fetchall()
    assert [r[:2] for r in got] == [r[:2] for r in want]
    assert_same_rows(got, want)


def test_explain_shows_the_sets(both):
    con, _ = both
    text = "\n".join(r[0] for r in con.execute("EXPLAIN SELECT b, c, SUM(v) FROM t GROUP BY ROLLUP(b, c)"))
    # b is a string: grouped by its collation key (utf8mb4_general_ci), its value one row's
    assert "GroupingSets rolled up from merged states sets=[(collation_key(b), c), (collation_key(b)), ()]" in text, text
    assert "HashAggregate partial keys=[collation_key(b), c]" in text, text
    text = "\n".join(r[0] for r in con.execute("EXPLAIN SELECT b, COUNT(DISTINCT a) FROM t GROUP BY ROLLUP(b)"))
    assert "GroupingSets each set from the rows sets=[(collation_key(b)), ()]" in text, text


@pytest.mark.parametrize("sql, message", [
    ("SELECT GROUPING(b) FROM t", "only with GROUP BY"),
    ("SELECT b, GROUPING(c) FROM t GROUP BY ROLLUP(b)", "must be GROUP BY expressions"),
    ("SELECT b FROM t WHERE GROUPING(b) = 0 GROUP BY ROLLUP(b)", "not allowed in WHERE"),
])
def test_grouping_errors(both, sql, message):
    import engine
    con, _ = both
    with pytest.raises(engine.Error, match=message):
        con.execute(sql)


def test_grouping_of_plain_group_by_is_zero(both):
    con, duck = both
    sql = "SELECT b, GROUPING(b), COUNT(*) FROM t GROUP BY b"
    assert_same_rows(con.execute(sql).fetchall(), duck.execute(sql).fetchall())


@pytest.mark.parametrize("sql", [
    # TPC-DS q36 / q86's shape: a rank within each level of the rollup
    "SELECT b, c, SUM(v) AS total, GROUPING(b) + GROUPING(c) AS level, "
    "RANK() OVER (PARTITION BY GROUPING(b) + GROUPING(c), CASE WHEN GROUPING(c) = 0 THEN b END "
    "ORDER BY SUM(v) DESC) AS r FROM t GROUP BY ROLLUP(b, c)",
    # q70's shape: a rollup filtered by IN over a ranked, grouped subquery
    "SELECT b, c, SUM(v) FROM t WHERE b IN (SELECT b FROM (SELECT b, RANK() OVER (ORDER BY SUM(v) DESC) AS r "
    "FROM t WHERE b IS NOT NULL GROUP BY b) ranked WHERE r <= 3) GROUP BY ROLLUP(b, c)",
])
def test_grouping_with_windows_matches_duckdb(both, sql):
    con, duck = both
    assert_same_rows(con.execute(sql).fetchall(), duck.execute(sql).fetchall())


def test_estimate_counts_the_rows_of_every_set():
    """EXPLAIN estimates a ROLLUP at the groups of each set added up: (b, c) + (b) + ()."""
    import engine
    con = engine.connect()
    con.execute("CREATE TABLE e (id BIGINT, b VARCHAR(4), c INT, v BIGINT, SHARD KEY (id))")
    con.executemany("INSERT INTO e VALUES (%s, %s, %s, %s)", [(i, f"b{i % 6}", i % 3, i) for i in range(3000)])
    con.execute("ANALYZE TABLE e")
    plain = "\n".join(r[0] for r in con.execute("EXPLAIN SELECT b, c, SUM(v) FROM e GROUP BY b, c"))
    rollup = "\n".join(r[0] for r in con.execute("EXPLAIN SELECT b, c, SUM(v) FROM e GROUP BY ROLLUP(b, c)"))
    con.close()
    groups = int(plain.splitlines()[0].split("est. ")[1].split()[0].replace(",", ""))
    assert f"(est. {groups + 6 + 1} rows" in rollup.splitlines()[1], rollup
