"""Semi-join reduction of a joined GROUP BY (reduce_aggregates, magic sets), checked against DuckDB
on each join kind it applies to: the aggregate's input is restricted to the keys of a small outer side
(the EXPLAIN shows the semi join under the aggregate), and the answers stay DuckDB's, NULL keys
included. Runs embedded and, with ``CANOPY_RUNNER=ray``, on Ray."""
import numpy as np
import pyarrow as pa
import pytest

from oracle import canopy_and_duckdb


@pytest.fixture(scope="module")
def both():
    rng = np.random.default_rng(11)
    n, m = 20_000, 2_000

    def ints(size, high, nulls=0.0):
        return pa.array(rng.integers(0, high, size), pa.int64(), mask=rng.random(size) < nulls)

    lines = pa.table({"a": ints(n, m, 0.01), "b": ints(n, 4, 0.01), "q": ints(n, 50, 0.05)})
    outer = pa.table({"id": pa.array(np.arange(m), pa.int64()), "a": ints(m, m, 0.05),
                      "b": ints(m, 4, 0.05), "x": ints(m, 100)})
    con, duck = canopy_and_duckdb("CREATE TABLE lines (a BIGINT, b BIGINT, q BIGINT)", "lines", lines)
    con.execute("CREATE TABLE outer_t (id BIGINT, a BIGINT, b BIGINT, x BIGINT)")
    con.load_table("outer_t", outer)
    duck.register("outer_t", outer)
    con.execute("ANALYZE TABLE lines, outer_t")
    yield con, duck
    con.close()


QUERIES = {
    # semi join with a residual (TPC-H Q20's shape): the aggregate is its right side
    "semi": "SELECT id FROM outer_t WHERE x < 3 AND x * 10 > "
            "(SELECT SUM(q) * 0.05 FROM lines WHERE lines.a = outer_t.a AND lines.b = outer_t.b)",
    # a scalar subquery in the select list: a left join, the aggregate on the right
    "left": "SELECT id, (SELECT SUM(q) FROM lines WHERE lines.a = outer_t.a), "
            "(SELECT COUNT(*) FROM lines WHERE lines.a = outer_t.a) FROM outer_t WHERE x < 3",
    # an inner join with a grouped derived table, either side
    "inner": "SELECT o.id, g.s FROM outer_t o JOIN (SELECT a, b, SUM(q) AS s FROM lines GROUP BY a, b) g "
             "ON g.a = o.a AND g.b = o.b WHERE o.x < 3",
    "inner_left_side": "SELECT o.id, g.s FROM (SELECT a, SUM(q) AS s FROM lines GROUP BY a) g "
                       "JOIN outer_t o ON g.a = o.a WHERE o.x < 3",
    "left_join": "SELECT o.id, g.s FROM outer_t o LEFT JOIN (SELECT a, SUM(q) AS s FROM lines GROUP BY a) g "
                 "ON g.a = o.a WHERE o.x < 3",
    # HAVING above the aggregate; the outer side's NULL keys; NOT EXISTS over a grouped subquery
    "having": "SELECT o.id, g.s FROM outer_t o JOIN (SELECT a, SUM(q) AS s FROM lines GROUP BY a "
              "HAVING SUM(q) > 100) g ON g.a = o.a WHERE o.x < 3",
    "not_exists": "SELECT id FROM outer_t WHERE x < 3 AND NOT EXISTS (SELECT a FROM lines "
                  "WHERE lines.a = outer_t.a GROUP BY a HAVING SUM(q) > 150)",
}


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_same_rows_as_duckdb(both, name):
    con, duck = both
    sql = QUERIES[name]
    got = sorted(con.execute(sql).fetchall(), key=repr)
    expected = sorted(duck.execute(sql).fetchall(), key=repr)
    assert len(got) > 0
    assert [tuple(float(v) if v is not None else None for v in r) for r in got] == \
        [tuple(float(v) if v is not None else None for v in r) for r in expected], sql


@pytest.mark.parametrize("name", ["semi", "left", "inner", "inner_left_side", "left_join"])
def test_the_aggregate_reads_only_the_outer_keys(both, name):
    con, _ = both
    plan = [row[0] for row in con.execute("EXPLAIN " + QUERIES[name]).fetchall()]
    aggregate = next(i for i, line in enumerate(plan) if "HashAggregate" in line and "sum(q)" in line)
    assert any("HashJoin semi ON" in line for line in plan[aggregate + 1:]), "\n".join(plan)
