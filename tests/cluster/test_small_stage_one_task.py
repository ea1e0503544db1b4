"""The embedded runner runs a small stage on the leaves as one task over every leaf's partitions (and
every task's inputs) where that answers the same: each leaf's task would set up every operator and push
its own batches through it. Answers checked against DuckDB over joins that repartition, broadcast,
colocate and read reference tables, and a scalar aggregate of no row."""
import re

import numpy as np
import pyarrow as pa
import pytest

import engine
from tests.oracle import assert_same_rows

duckdb = pytest.importorskip("duckdb")


@pytest.fixture(scope="module")
def both():
    rng = np.random.default_rng(23)
    n = 2000
    facts = pa.table({"id": np.arange(n), "k": rng.integers(0, 50, n), "g": rng.integers(0, 7, n),
                      "v": rng.integers(-100, 100, n), "s": [f"s{i % 13}" for i in range(n)]})
    dims = pa.table({"k": np.arange(50), "name": [f"d{i % 9}" for i in range(50)], "w": rng.integers(0, 10, 50)})
    regions = pa.table({"g": np.arange(7), "label": [f"r{i}" for i in range(7)]})
    con = engine.connect(leaves=2, partitions_per_leaf=4)
    con.execute("CREATE TABLE facts (id BIGINT NOT NULL, k BIGINT, g BIGINT, v BIGINT, s VARCHAR(10), "
                "PRIMARY KEY (id))")
    con.execute("CREATE TABLE dims (k BIGINT NOT NULL, name VARCHAR(10), w BIGINT, PRIMARY KEY (k))")
    con.execute("CREATE REFERENCE TABLE regions (g BIGINT NOT NULL, label VARCHAR(10), PRIMARY KEY (g))")
    duck = duckdb.connect()
    for name, data in (("facts", facts), ("dims", dims), ("regions", regions)):
        con.load_table(name, data)
        duck.register(name, data)
    yield con, duck
    con.close()


QUERIES = [
    # repartition of both sides on k (facts are placed by id), a broadcast or a repartition of dims
    "SELECT d.name, SUM(f.v), COUNT(*) FROM facts f JOIN dims d ON f.k = d.k WHERE d.w > 3 GROUP BY d.name",
    # a reference table joined locally, then grouped
    "SELECT r.label, MIN(f.v), MAX(f.v) FROM facts f JOIN regions r ON f.g = r.g GROUP BY r.label",
    # a self join on the shard key: colocated
    "SELECT COUNT(*), SUM(a.v * b.v) FROM facts a JOIN facts b ON a.id = b.id WHERE a.v > 0",
    # semi and anti joins, a subquery's aggregate
    "SELECT COUNT(*) FROM facts f WHERE f.k IN (SELECT k FROM dims WHERE w < 2)",
    "SELECT COUNT(*) FROM facts f WHERE NOT EXISTS (SELECT 1 FROM dims d WHERE d.k = f.k AND d.w > 5)",
    "SELECT s, COUNT(DISTINCT k) FROM facts WHERE v > (SELECT AVG(v) FROM facts) GROUP BY s",
    # a scalar aggregate over no row: one row, emitted once
    "SELECT COUNT(*), SUM(v) FROM facts WHERE v > 1000",
    "SELECT f.g, COUNT(*) FROM facts f JOIN dims d ON f.k = d.k GROUP BY f.g ORDER BY 2 DESC, 1 LIMIT 3",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_answers_as_duckdb(both, sql):
    con, duck = both
    assert_same_rows(con.execute(sql).fetchall(), duck.execute(sql).fetchall())


def test_a_small_leaves_stage_runs_as_one_task(both):
    con, _ = both
    if type(con.session.runner).__name__ != "LocalRunner":
        pytest.skip("the embedded runner's choice (a Ray leaf runs its own partitions)")
    plan = [r[0] for r in con.execute("EXPLAIN ANALYZE " + QUERIES[0]).fetchall()]
    leaves = [line for line in plan if "[leaves]" in line]
    assert leaves
    for line in leaves:
        assert re.search(r", 1 tasks", line), line
