"""COUNT / MIN / MAX of an in-memory table under kernel conjuncts come from the kernels' selection,
without the scan materializing matching rows; answers checked against DuckDB."""
import numpy as np
import pyarrow as pa
import pytest

from engine.exec.operators.scan import ScanExec
from oracle import canopy_and_duckdb

QUERIES = [
    "SELECT COUNT(*) FROM t WHERE i IN (1, 100, 200, 5000)",
    "SELECT COUNT(*) FROM t WHERE i = 7",
    "SELECT COUNT(*) FROM t WHERE i BETWEEN 10 AND 500 AND s = 'b'",
    "SELECT COUNT(*) FROM t WHERE s LIKE 'a%'",
    "SELECT COUNT(*) FROM t",
    "SELECT COUNT(j), MIN(j), MAX(j) FROM t WHERE i > 900",
    "SELECT COUNT(*), COUNT(j), MIN(s), MAX(i) FROM t WHERE i < 0",
    # COUNT of a NOT NULL column counts rows; of a column with no NULL in it, the selected rows
    "SELECT COUNT(k) FROM t WHERE i > 900",
    "SELECT COUNT(k), COUNT(i), COUNT(j), COUNT(s) FROM t WHERE i BETWEEN 10 AND 500",
]


@pytest.fixture(scope="module")
def both():
    rng = np.random.default_rng(11)
    n = 20_000
    i = rng.integers(-5, 1000, n)
    j = pa.array(rng.integers(0, 50, n), mask=rng.random(n) < 0.2)
    s = pa.array(rng.choice(["a", "ab", "b", "c"], n), mask=rng.random(n) < 0.1)
    con, duck = canopy_and_duckdb("CREATE TABLE t (i BIGINT, j BIGINT, s VARCHAR(4), k BIGINT NOT NULL)", "t",
                                  pa.table({"i": i, "j": j, "s": s, "k": np.arange(n)}))
    yield con, duck
    con.close()


@pytest.mark.parametrize("sql", QUERIES)
def test_answers_without_materializing_the_scan(both, sql, monkeypatch):
    con, duck = both
    expected = duck.execute(sql).fetchall()

    def refuse(self, partition, ctx):
        raise AssertionError("the scan was read row by row")
    monkeypatch.setattr(ScanExec, "execute", refuse)
    assert con.execute(sql).fetchall() == expected


def test_other_predicates_still_read_the_scan(both):
    con, duck = both
    sql = "SELECT COUNT(*) FROM t WHERE i NOT IN (1, 100, 200) OR j + 1 = 3"
    assert con.execute(sql).fetchall() == duck.execute(sql).fetchall()
