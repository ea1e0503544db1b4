"""COUNT(DISTINCT b) without GROUP BY shuffles by b and adds per-leaf counts (workload a's plan)."""
import numpy as np
import pyarrow as pa
import pytest

from oracle import canopy_and_duckdb


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    b = rng.integers(0, 5_000, 40_000)
    return pa.table({"a": np.arange(40_000), "b": pa.array(b, mask=(b % 13 == 0))})


@pytest.fixture(scope="module")
def both(data):
    con, duck = canopy_and_duckdb("CREATE TABLE t (a BIGINT, b BIGINT, SHARD KEY (a))", "t", data)
    yield con, duck
    con.close()


@pytest.mark.parametrize("sql", [
    "SELECT COUNT(DISTINCT b) FROM t",
    "SELECT COUNT(DISTINCT b) FROM t WHERE a < 0",
    "SELECT COUNT(DISTINCT a) FROM t",
    "SELECT COUNT(DISTINCT b), COUNT(DISTINCT b) FROM t WHERE a % 3 = 1",
])
def test_matches_duckdb(both, sql):
    con, duck = both
    assert con.execute(sql).fetchall() == duck.execute(sql).fetchall()


def test_shuffles_by_the_distinct_column(both):
    con, _ = both
    plan = "\n".join(row[0] for row in con.execute("EXPLAIN SELECT COUNT(DISTINCT b) FROM t").fetchall())
    assert "Exchange repartition by [t.b" in plan
    assert "HashAggregate single keys=[] aggs=[count(DISTINCT b)] path=distinct_count  [leaves]" in plan
    # sharded on a: COUNT(DISTINCT a) needs no shuffle at all
    plan_a = "\n".join(row[0] for row in con.execute("EXPLAIN SELECT COUNT(DISTINCT a) FROM t").fetchall())
    assert "repartition" not in plan_a
