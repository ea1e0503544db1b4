"""Semi / anti joins whose probe side is much the smaller run it first and send Bloom filters over its
keys to the build side's scans and exchanges (HashJoinExec.probe_first,
engine.optimizer.runtime_filters): EXISTS / NOT EXISTS / IN with ``<>`` residuals, NULLs in the keys
and in the compared columns, self joins read as a set, checked against DuckDB. Runs embedded and, with
``CANOPY_RUNNER=ray``, on Ray."""
import numpy as np
import pyarrow as pa
import pytest

from oracle import canopy_and_duckdb


def _column(rng, n, low, high, nulls):
    return pa.array(rng.integers(low, high, n), pa.int64(), mask=rng.random(n) < nulls)


@pytest.fixture(scope="module")
def both():
    rng = np.random.default_rng(17)
    n, m = 300, 6000
    small = pa.table({"id": pa.array(np.arange(n), pa.int64()), "k": _column(rng, n, 0, 400, 0.1),
                      "w": _column(rng, n, 0, 4, 0.1), "f": _column(rng, n, 0, 100, 0.0)})
    big = pa.table({"k": _column(rng, m, 0, 2000, 0.05), "w": _column(rng, m, 0, 4, 0.1),
                    "d": _column(rng, m, 0, 50, 0.05)})
    dim = pa.table({"d": pa.array(np.arange(50), pa.int64()), "c": _column(rng, 50, 0, 3, 0.0)})
    con, duck = canopy_and_duckdb("CREATE TABLE small (id BIGINT, k BIGINT, w BIGINT, f BIGINT, SHARD KEY (id))",
                                  "small", small)
    # big's rows reach a join on k through an exchange (the filter drops them as they are read);
    # bigk, the same rows sharded on k, from a scan in the join's stage
    for name, ddl, data in (("big", "CREATE TABLE big (k BIGINT, w BIGINT, d BIGINT)", big),
                            ("bigk", "CREATE TABLE bigk (k BIGINT, w BIGINT, d BIGINT, SHARD KEY (k))", big),
                            ("dim", "CREATE TABLE dim (d BIGINT, c BIGINT)", dim)):
        con.execute(ddl)
        con.load_table(name, data)
        duck.register(name, data)
    con.execute("ANALYZE TABLE small, big, bigk, dim")
    yield con, duck
    con.close()


def check(both, sql):
    con, duck = both
    got = sorted(con.execute(sql).fetchall(), key=repr)
    expected = sorted(duck.execute(sql).fetchall(), key=repr)
    assert got == expected, sql


QUERIES = [
    # another row of the same key with a different (non-NULL) value
    "SELECT id FROM small s WHERE s.f < 20 AND EXISTS (SELECT * FROM big b WHERE b.k = s.k AND b.w <> s.w)",
    "SELECT id FROM small s WHERE s.f < 20 AND NOT EXISTS (SELECT * FROM big b WHERE b.k = s.k AND b.w <> s.w)",
    "SELECT id FROM small s WHERE s.f < 20 AND EXISTS (SELECT * FROM big b WHERE b.k = s.k AND b.w > s.w)",
    "SELECT id FROM small s WHERE s.f < 20 AND NOT EXISTS (SELECT * FROM big b WHERE b.k = s.k AND b.w + 1 < s.w)",
    # plain semi / anti, and NOT IN (NULL-aware: a NULL among the subquery's values answers NULL)
    "SELECT id FROM small s WHERE s.f < 20 AND s.k IN (SELECT k FROM big WHERE d < 40)",
    "SELECT id FROM small s WHERE s.f < 20 AND NOT EXISTS (SELECT * FROM big b WHERE b.k = s.k)",
    "SELECT id FROM small s WHERE s.f < 20 AND s.k NOT IN (SELECT k FROM big WHERE d < 40)",
    "SELECT id FROM small s WHERE s.f < 20 AND s.k NOT IN (SELECT k FROM big WHERE k IS NOT NULL)",
    # the build side a join: the filter crosses it to the other side's equal key
    "SELECT id FROM small s WHERE s.f < 20 AND EXISTS (SELECT * FROM big b JOIN dim ON b.d = dim.d "
    "WHERE b.k = s.k AND dim.c = 1 AND b.w <> s.w)",
    "SELECT id FROM small s WHERE s.f < 20 AND s.k IN (SELECT b1.k FROM big b1 JOIN big b2 ON b1.k = b2.k "
    "AND b1.w <> b2.w)",
    "SELECT id FROM small s WHERE s.f < 20 AND s.k NOT IN (SELECT b1.k FROM big b1 JOIN big b2 ON b1.k = b2.k "
    "AND b1.w <> b2.w WHERE b1.k IS NOT NULL)",
    # nested: EXISTS and NOT EXISTS over the same table, as TPC-H Q21 asks
    "SELECT s.id FROM small s JOIN big b1 ON b1.k = s.k WHERE s.f < 20 AND "
    "EXISTS (SELECT * FROM big b2 WHERE b2.k = b1.k AND b2.w <> b1.w) AND "
    "NOT EXISTS (SELECT * FROM big b3 WHERE b3.k = b1.k AND b3.w <> b1.w AND b3.d > b1.d)",
    "WITH pairs AS (SELECT b1.k FROM big b1, big b2 WHERE b1.k = b2.k AND b1.w <> b2.w) "
    "SELECT COUNT(*), COUNT(DISTINCT id) FROM small s WHERE s.f < 20 AND s.k IN (SELECT k FROM pairs) "
    "AND s.k IN (SELECT b.k FROM big b WHERE b.k IN (SELECT k FROM pairs))",
    "SELECT id FROM small s WHERE s.f < 20 AND EXISTS (SELECT * FROM bigk b WHERE b.k = s.k AND b.w <> s.w)",
    "SELECT id FROM small s WHERE s.f < 20 AND NOT EXISTS (SELECT * FROM bigk b WHERE b.k = s.k AND b.w <> s.w)",
    "SELECT id FROM small s WHERE s.f < 20 AND s.k IN (SELECT b1.k FROM bigk b1 JOIN bigk b2 ON b1.k = b2.k "
    "AND b1.w <> b2.w)",
    # no probe row at all
    "SELECT id FROM small s WHERE s.f < 0 AND NOT EXISTS (SELECT * FROM big b WHERE b.k = s.k AND b.w <> s.w)",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_against_duckdb(both, sql):
    check(both, sql)


def test_the_small_probe_side_runs_first_and_filters_the_build_scan(both):
    con, _ = both
    sql = "SELECT id FROM small s WHERE s.f < 20 AND EXISTS (SELECT * FROM bigk b WHERE b.k = s.k AND b.w <> s.w)"
    plan = "\n".join(r[0] for r in con.execute("EXPLAIN " + sql).fetchall())
    assert "probe side first bloom filter" in plan, plan
    assert any(line.strip().startswith("Scan bigk") and "bloom filter" in line for line in plan.splitlines()), plan
    analyzed = "\n".join(str(r[0]) for r in con.execute("EXPLAIN ANALYZE " + sql).fetchall())
    scan = next(line for line in analyzed.splitlines() if line.strip().startswith("Scan bigk"))
    assert "bloom filter kept" in scan, analyzed


def test_the_filter_reaches_an_exchange_and_both_sides_of_a_self_join(both):
    con, _ = both
    plan = "\n".join(r[0] for r in con.execute("EXPLAIN " + QUERIES[0]).fetchall())
    assert any(line.strip().startswith("Exchange") and "bloom filter" in line for line in plan.splitlines()), plan
    sql = "SELECT id FROM small s WHERE s.f < 20 AND s.k IN (SELECT b1.k FROM bigk b1 JOIN bigk b2 ON b1.k = b2.k " \
        "AND b1.w <> b2.w)"
    plan = "\n".join(r[0] for r in con.execute("EXPLAIN " + sql).fetchall())
    filtered = [line for line in plan.splitlines() if line.strip().startswith("Scan bigk") and "bloom filter" in line]
    assert len(filtered) == 2, plan
