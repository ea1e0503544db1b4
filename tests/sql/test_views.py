"""CREATE [OR REPLACE] VIEW / DROP VIEW: views expand in the binder (filters push through them), are
checked against DuckDB running the same view definitions, persist in a data_dir and see a
transaction's own writes. Runs on either runner (``CANOPY_RUNNER=ray``)."""
from __future__ import annotations

import os

import pyarrow as pa
import pytest

import engine
from engine.errors import NotSupportedError, ProgrammingError
from tests.oracle import assert_same_rows, canopy_and_duckdb

DATA = pa.table({"id": list(range(1, 41)), "g": [f"g{i % 4}" for i in range(40)],
                 "v": [None if i % 7 == 0 else (i * 37) % 100 for i in range(40)]})
VIEWS = [
    "CREATE VIEW per_group AS SELECT g, COUNT(*) AS n, SUM(v) AS total, MAX(v) AS top FROM t GROUP BY g",
    "CREATE VIEW big (ident, val) AS SELECT id, v FROM t WHERE v > 50",
    "CREATE VIEW big_groups AS SELECT b.ident, t.g FROM big b JOIN t ON t.id = b.ident",   # a view of a view
]
QUERIES = [
    "SELECT * FROM per_group",
    "SELECT g, total FROM per_group WHERE n > 9 AND g <> 'g1'",
    "SELECT ident, val FROM big WHERE ident < 30",
    "SELECT g, COUNT(*) FROM big_groups GROUP BY g",
    "SELECT p.g, p.top, COUNT(b.ident) FROM per_group p LEFT JOIN big_groups b ON b.g = p.g GROUP BY p.g, p.top",
    "SELECT ident FROM big WHERE val IN (SELECT top FROM per_group)",
]


@pytest.fixture(scope="module")
def both():
    con, duck = canopy_and_duckdb("CREATE TABLE t (id INT, g TEXT, v INT, SHARD KEY (id))", "t", DATA)
    duck.execute("CREATE TABLE t_copy AS SELECT * FROM t")
    duck.unregister("t")
    duck.execute("ALTER TABLE t_copy RENAME TO t")
    for ddl in VIEWS:
        con.execute(ddl)
        duck.execute(ddl)
    yield con, duck
    con.close()
    duck.close()


@pytest.mark.parametrize("sql", QUERIES)
def test_views_match_duckdb(both, sql):
    con, duck = both
    assert_same_rows(con.execute(sql).fetchall(), duck.execute(sql).fetchall())


def test_filters_push_through_a_view(both):
    con, _ = both
    plan = "\n".join(r[0] for r in con.execute("EXPLAIN SELECT ident FROM big WHERE ident = 7").fetchall())
    scan = next(line for line in plan.splitlines() if "Scan t" in line)
    assert "id = 7" in scan and "v > 50" in scan, plan


def test_replace_drop_and_names(both):
    con, _ = both
    con.execute("CREATE VIEW tmp_v AS SELECT id FROM t WHERE id <= 2")
    assert con.execute("SELECT * FROM tmp_v ORDER BY id").fetchall() == [(1,), (2,)]
    with pytest.raises(ProgrammingError, match="already exists"):
        con.execute("CREATE VIEW tmp_v AS SELECT 1")
    con.execute("CREATE OR REPLACE VIEW tmp_v AS SELECT id * 10 AS x FROM t WHERE id = 3")
    assert con.execute("SELECT x FROM tmp_v").fetchall() == [(30,)]        # no stale cached plan
    assert ("tmp_v",) in con.execute("SHOW TABLES").fetchall()
    assert con.execute("DESCRIBE tmp_v").fetchall()[0][0] == "x"
    with pytest.raises(ProgrammingError, match="refer to itself"):
        con.execute("CREATE OR REPLACE VIEW tmp_v AS SELECT * FROM tmp_v")
    with pytest.raises(NotSupportedError, match="is a view"):
        con.execute("INSERT INTO tmp_v VALUES (1)")
    with pytest.raises(ProgrammingError, match="is a view"):
        con.execute("CREATE TABLE tmp_v (a INT)")
    with pytest.raises(ProgrammingError, match="unknown view 'nope'"):
        con.execute("DROP VIEW tmp_v, nope")
    assert con.execute("SELECT COUNT(*) FROM tmp_v").fetchall() == [(1,)]  # nothing dropped
    con.execute("DROP VIEW IF EXISTS tmp_v, nope")
    with pytest.raises(ProgrammingError, match="unknown table 'tmp_v'"):
        con.execute("SELECT * FROM tmp_v")


def test_a_view_keeps_its_database(both):
    con, _ = both
    con.execute("CREATE DATABASE IF NOT EXISTS other")
    con.execute("USE other")
    try:
        assert con.execute("SELECT COUNT(*) FROM canopy.big").fetchall() == \
            con.execute("SELECT COUNT(*) FROM canopy.t WHERE v > 50").fetchall()
    finally:
        con.execute("USE canopy")


def test_a_view_reads_the_transactions_own_writes(both):
    con, _ = both
    before = con.execute("SELECT COUNT(*) FROM big").fetchone()[0]
    con.execute("BEGIN")
    con.execute("INSERT INTO t VALUES (1000, 'g9', 99)")
    assert con.execute("SELECT COUNT(*) FROM big").fetchone()[0] == before + 1
    con.execute("ROLLBACK")
    assert con.execute("SELECT COUNT(*) FROM big").fetchone()[0] == before


def test_views_survive_a_restart(tmp_path):
    if os.environ.get("CANOPY_RUNNER", "local") != "local":
        pytest.skip("data_dir reopening runs on the embedded runner here")
    data_dir = str(tmp_path / "data")
    with engine.connect(data_dir=data_dir) as first:
        first.execute("CREATE TABLE t (a INT)")
        first.execute("INSERT INTO t VALUES (1), (2), (3)")
        first.execute("CREATE VIEW odd (x) AS SELECT a FROM t WHERE a % 2 = 1")
    with engine.connect(data_dir=data_dir) as again:
        assert again.execute("SELECT x FROM odd ORDER BY x").fetchall() == [(1,), (3,)]
        again.execute("DROP VIEW odd")
    with engine.connect(data_dir=data_dir) as third:
        assert ("odd",) not in third.execute("SHOW TABLES").fetchall()
