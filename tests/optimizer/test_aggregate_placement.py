"""An aggregate whose output a join above reads by one of its group keys is hashed on that key alone
(engine.optimizer.physical PhysicalPlanner._placement): equal groups still meet, and the join then
finds that side where it needs it, so the groups are not shuffled a second time. Results against
DuckDB; the plans' exchanges counted."""
import numpy as np
import pyarrow as pa
import pytest

from oracle import assert_same_rows, canopy_and_duckdb

CUSTOMERS = 6_000


@pytest.fixture(scope="module")
def both():
    rng = np.random.default_rng(11)
    n = 400_000         # about 33 rows a group: partial aggregates, then the states moved
    sales = pa.table({"cust": rng.integers(0, CUSTOMERS, n), "y": rng.integers(2000, 2002, n),
                      "v": rng.integers(0, 1000, n)})
    customers = pa.table({"id": np.arange(CUSTOMERS), "name": [f"c{i % 997}" for i in range(CUSTOMERS)]})
    con, duck = canopy_and_duckdb("CREATE TABLE sales (cust BIGINT, y BIGINT, v BIGINT)", "sales", sales)
    con.execute("CREATE TABLE customer (id BIGINT, name TEXT, SHARD KEY (id))")
    con.load_table("customer", customers)
    duck.register("customer", customers)
    yield con, duck
    con.close()


def plan(con, sql: str) -> str:
    return "\n".join(row[0] for row in con.execute("EXPLAIN " + sql).fetchall())


JOINED = ("SELECT c.name, g.y, g.total, g.n FROM customer c JOIN "
          "(SELECT cust, y, SUM(v) AS total, COUNT(*) AS n FROM sales GROUP BY cust, y) g ON c.id = g.cust")
# groups about as many as rows: the rows are moved, aggregated once
WIDE = ("SELECT c.name, g.y, g.v, g.n FROM customer c JOIN "
        "(SELECT cust, y, v, COUNT(*) AS n FROM sales GROUP BY cust, y, v) g ON c.id = g.cust WHERE g.n > 1")
DISTINCT = ("SELECT c.name, g.y, g.k FROM customer c JOIN "
            "(SELECT cust, y, COUNT(DISTINCT v) AS k FROM sales GROUP BY cust, y) g ON c.id = g.cust")
# the key with few values (y) is joined: hashed on all keys as before (2 values would use 2 tasks)
BY_YEAR = ("SELECT g.y, g.total, t.label FROM (SELECT cust, y, SUM(v) AS total FROM sales GROUP BY cust, y) g "
           "JOIN (SELECT 2000 AS y, 'a' AS label UNION ALL SELECT 2001, 'b') t ON g.y = t.y")


@pytest.mark.parametrize("sql", [JOINED, WIDE, DISTINCT, BY_YEAR])
def test_matches_duckdb(both, sql):
    con, duck = both
    assert_same_rows(con.execute(sql).fetchall(), duck.execute(sql).fetchall())


@pytest.mark.parametrize("sql, mode", [(JOINED, "final"), (WIDE, "single"), (DISTINCT, "single")])
def test_groups_meet_on_the_join_key_once(both, sql, mode):
    con, _ = both
    text = plan(con, sql)
    assert f"HashAggregate {mode} keys=[cust, y" in text, text
    moves = [line.strip() for line in text.splitlines()
             if "Exchange repartition" in line and "HashAggregate" not in line]
    # one move of the sales rows (or states) by the customer key; customer, sharded on it, stays
    assert len(moves) == 1 and "by [cust#" in moves[0] or "by [sales.cust#" in moves[0], text
    assert "[colocated]" in text, text


def test_a_key_with_few_values_is_not_placed_alone(both):
    con, _ = both
    text = plan(con, BY_YEAR)
    assert not any("Exchange repartition by [sales.y" in line and "sales.cust" not in line
                   for line in text.splitlines()), text
