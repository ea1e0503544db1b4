"""SUM / AVG / COUNT / MIN / MAX (DISTINCT ...) with and without GROUP BY, NULLs included, against DuckDB."""
import duckdb
import pytest

import engine

ROWS = "(1,1,1.50),(1,1,1.50),(1,2,2.25),(2,NULL,NULL),(NULL,3,3.00),(NULL,3,3.00),(3,5,1.00)"


@pytest.fixture(scope="module")
def both():
    con, duck = engine.connect(), duckdb.connect()
    for c in (con, duck):
        c.execute("CREATE TABLE t (k INT, v INT, p DECIMAL(10,2))")
        c.execute(f"INSERT INTO t VALUES {ROWS}")
    yield con, duck
    con.close()


@pytest.mark.parametrize("sql", [
    "SELECT k, SUM(DISTINCT v), AVG(DISTINCT v), COUNT(DISTINCT v), SUM(v), COUNT(*) FROM t GROUP BY k ORDER BY k",
    "SELECT SUM(DISTINCT v), AVG(DISTINCT p), SUM(DISTINCT p), COUNT(*) FROM t",
    "SELECT SUM(DISTINCT v), COUNT(*) FROM t WHERE k > 100",
    "SELECT k, MIN(DISTINCT v), MAX(DISTINCT p) FROM t GROUP BY k ORDER BY k",
])
def test_matches_duckdb(both, sql):
    con, duck = both
    # MySQL sorts NULL first; DuckDB needs to be told
    assert con.execute(sql).fetchall() == duck.execute(sql.replace("ORDER BY k", "ORDER BY k NULLS FIRST")).fetchall()
