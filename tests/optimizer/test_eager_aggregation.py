"""Eager aggregation (engine/optimizer/rules/eager_aggregation.py) and, under a GROUP BY that reads a
set (no aggregates, MIN / MAX, DISTINCT ones), inner joins turned semi joins
(engine/optimizer/rules/existence_joins.py) give DuckDB's answers: string keys
from the key side, its join key repeated (a fact row meets two dimension rows, before and after), NULL join keys and
NULL measures, COUNT(*) / COUNT(x) / SUM / MIN / MAX, keys from both sides, several key inputs."""
import numpy as np
import pyarrow as pa
import pytest

from oracle import assert_same_rows, canopy_and_duckdb


@pytest.fixture(scope="module")
def both():
    rng = np.random.default_rng(5)
    n = 4000
    fact = pa.table({
        "f_dim": pa.array(rng.integers(0, 60, n), pa.int64(), mask=rng.random(n) < 0.05),
        "f_day": pa.array(rng.integers(0, 30, n), pa.int64()),
        "f_grp": pa.array(rng.integers(0, 4, n), pa.int64()),
        "f_qty": pa.array(rng.integers(-5, 50, n), pa.int64(), mask=rng.random(n) < 0.1),
        "f_price": pa.array(rng.random(n) * 100, pa.float64()),
    })
    keys = np.concatenate([np.arange(50), rng.integers(0, 50, 10)])       # 10 keys twice
    dim = pa.table({"d_key": pa.array(keys, pa.int64()),
                    "d_name": pa.array([f"name{k % 17}" for k in keys], pa.string()),
                    "d_city": pa.array([None if k % 13 == 0 else f"City{k % 5}" for k in keys], pa.string()),
                    "d_group": pa.array(keys % 4, pa.int64())})
    days = pa.table({"t_day": pa.array(np.arange(30), pa.int64()), "t_month": pa.array(np.arange(30) // 7, pa.int64())})
    con, duck = canopy_and_duckdb("CREATE TABLE fact (f_dim BIGINT, f_day BIGINT, f_grp BIGINT, f_qty BIGINT, f_price DOUBLE)",
                                  "fact", fact)
    for name, table, ddl in (("dim", dim, "d_key BIGINT, d_name VARCHAR(10), d_city VARCHAR(10), d_group BIGINT"),
                             ("days", days, "t_day BIGINT, t_month BIGINT")):
        con.execute(f"CREATE TABLE {name} ({ddl})")
        con.load_table(name, table)
        duck.register(name, table)
    con.execute("ANALYZE TABLE fact, dim, days")
    yield con, duck
    con.close()


QUERIES = [
    "SELECT d_name, d_city, SUM(f_qty), COUNT(*), COUNT(f_qty), MIN(f_price), MAX(d_city) "
    "FROM fact, dim WHERE f_dim = d_key GROUP BY d_name, d_city",
    "SELECT d_name, t_month, SUM(f_price), MAX(f_qty) FROM fact, dim, days "
    "WHERE f_dim = d_key AND f_day = t_day AND t_month < 3 GROUP BY d_name, t_month",
    "SELECT d_city, d_name, SUM(f_qty) FROM fact JOIN dim ON f_dim = d_key AND d_group = f_grp "
    "GROUP BY d_city, d_name",
    "SELECT d_city, COUNT(*) FROM fact, dim WHERE f_dim = d_key AND d_name <> 'name3' GROUP BY d_city",
    # AVG: the merged sum over the merged count (integers and doubles, NULL measures)
    "SELECT d_name, AVG(f_qty), AVG(f_price), COUNT(f_qty) FROM fact, dim WHERE f_dim = d_key GROUP BY d_name",
    "SELECT d_name, AVG(CAST(f_qty AS DECIMAL(7, 2))) FROM fact, dim WHERE f_dim = d_key GROUP BY d_name",
    # grouping sets: each set (the empty one too) from the early groups
    "SELECT d_city, d_name, AVG(f_qty), SUM(f_price), COUNT(*), GROUPING(d_name) FROM fact, dim "
    "WHERE f_dim = d_key GROUP BY ROLLUP(d_city, d_name)",
    "SELECT d_name, t_month, SUM(f_qty), MIN(d_city) FROM fact, dim, days WHERE f_dim = d_key AND f_day = t_day "
    "GROUP BY CUBE(d_name, t_month)",
    "SELECT d_city, f_grp, AVG(f_qty) FROM fact, dim WHERE f_dim = d_key "
    "GROUP BY GROUPING SETS ((d_city), (f_grp), (d_city, f_grp), ())",
]


# Canopy's AVG of an exact type is DECIMAL with 4 more digits of scale (MySQL's), DuckDB's a DOUBLE
_DUCK_AVG = {"AVG(f_qty)": "CAST(AVG(f_qty) AS DECIMAL(18, 4))",
             "AVG(CAST(f_qty AS DECIMAL(7, 2)))": "CAST(AVG(CAST(f_qty AS DECIMAL(7, 2))) AS DECIMAL(18, 6))"}


def _duck(sql: str) -> str:
    for ours, theirs in _DUCK_AVG.items():
        sql = sql.replace(ours, theirs)
    return sql


@pytest.mark.parametrize("sql", QUERIES)
def test_matches_duckdb(both, sql):
    con, duck = both
    assert_same_rows(con.execute(sql).fetchall(), duck.execute(_duck(sql)).fetchall())


def test_the_fact_side_is_grouped_before_the_join(both):
    con, _ = both
    plan = "\n".join(r[0] for r in con.execute("EXPLAIN " + QUERIES[0]).fetchall())
    early = [line for line in plan.splitlines() if "HashAggregate" in line and "keys=[f_dim]" in line]
    assert early, plan


def test_every_query_here_is_rewritten(both):
    """The answers above check the rewrite only where it fires: it must fire on each of them."""
    con, _ = both
    for sql in QUERIES:
        plan = "\n".join(r[0] for r in con.execute("EXPLAIN " + sql).fetchall())
        grouped = [line for line in plan.splitlines() if "HashAggregate" in line and "f_dim" in line.split("aggs=")[0]]
        assert grouped, plan


SETS = [
    "SELECT DISTINCT d_name, d_city FROM fact, dim, days WHERE f_dim = d_key AND f_day = t_day AND t_month = 2",
    "SELECT d_name, MAX(d_city), MIN(d_group) FROM fact, dim WHERE f_dim = d_key AND f_qty > 40 GROUP BY d_name",
    "SELECT d_name, COUNT(DISTINCT d_city) FROM fact JOIN dim ON f_dim = d_key JOIN days ON t_day = f_day "
    "GROUP BY d_name",
]


@pytest.mark.parametrize("sql", SETS)
def test_a_grouping_that_reads_a_set_matches_duckdb(both, sql):
    con, duck = both
    plan = "\n".join(r[0] for r in con.execute("EXPLAIN " + sql).fetchall())
    assert "semi" in plan, plan
    assert_same_rows(con.execute(sql).fetchall(), duck.execute(sql).fetchall())
