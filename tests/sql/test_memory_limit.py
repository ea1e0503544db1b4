"""memory_limit (docs/memory.md): the setting, operators that spill past it with the answer of the
unlimited run (checked against DuckDB), and a clear MemoryLimitError naming the operator when a query
cannot fit, the session going on. Runs on either runner (``CANOPY_RUNNER=ray``)."""
from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pytest

import engine
from engine.errors import MemoryLimitError, OperationalError, ProgrammingError
from engine.exec.memory import SpillFile, physical_memory
from tests.oracle import assert_same_rows, canopy_and_duckdb

ROWS = 60_000
TINY = "2MiB"           # far below what the queries below hold: they must spill (or fail)


def _data(rows: int = ROWS) -> pa.Table:
    rng = np.random.default_rng(7)
    a = rng.integers(0, 5_000, rows)
    return pa.table({
        "id": np.arange(rows, dtype=np.int64),
        "a": pa.array(a, pa.int64()),
        "s": pa.array(np.char.add("a longer name, number ", (a % 1_000).astype(str))),
        "x": pa.array(rng.random(rows)),
    })


@pytest.fixture(scope="module")
def both():
    con, duck = canopy_and_duckdb("CREATE TABLE t (id BIGINT, a BIGINT, s TEXT, x DOUBLE, SHARD KEY (id))",
                                  "t", _data())
    yield con, duck
    con.close()
    duck.close()


def _run(con, sql, limit=None):
    cur = con.cursor()
    if limit is not None:
        cur.execute(f"SET memory_limit = '{limit}'")
    try:
        cur.execute(sql)
        return cur.fetchall()
    finally:
        cur.execute("SET memory_limit = DEFAULT")


def test_memory_limit_is_a_session_variable_with_a_default_below_physical_memory():
    con = engine.connect(memory_limit="64MiB")
    try:
        cur = con.cursor()
        cur.execute("SHOW VARIABLES LIKE 'memory_limit'")
        assert cur.fetchall() == [("memory_limit", str(64 << 20))]
        cur.execute("SET memory_limit = '2GB'")
        cur.execute("SELECT @@memory_limit")
        assert cur.fetchall() == [(2_000_000_000,)]
        cur.execute("SET memory_limit = 134217728")
        cur.execute("SELECT @@session.memory_limit")
        assert cur.fetchall() == [(128 << 20,)]
        cur.execute("SET memory_limit = DEFAULT")
        cur.execute("SELECT @@memory_limit")
        default = cur.fetchall()[0][0]
        total = physical_memory()
        assert 0 < default < (total or float("inf"))
        for bad in ("'lots'", "'12 parsecs'", "0", "'-1GB'", "NULL"):
            with pytest.raises(ProgrammingError, match="memory_limit"):
                cur.execute(f"SET memory_limit = {bad}")
    finally:
        con.close()
    with pytest.raises(ProgrammingError, match="memory_limit"):
        engine.connect(memory_limit="a lot")


# Each leaf's sort holds its whole input (MiBs); what it returns, and so the final sort's input and
# the answer (which is held whole), fit in the limit.
WINDOW = "SELECT id, s, ROW_NUMBER() OVER (PARTITION BY id ORDER BY x) FROM t"   # by the shard key: no exchange
ORDERED = [
    "SELECT id, a, s, x FROM t ORDER BY a, x DESC LIMIT 3000",
    "SELECT s, a, id FROM t ORDER BY s DESC, a, id LIMIT 9000",
    "SELECT id, x FROM t WHERE a > 100 ORDER BY x LIMIT 8000",
]


@pytest.mark.parametrize("sql", ORDERED)
def test_sort_spills_past_the_limit_with_the_unlimited_answer(both, sql):
    con, duck = both
    unlimited = _run(con, sql)
    limited = _run(con, sql, TINY)
    want = duck.execute(sql).fetchall()
    assert limited == unlimited
    assert [tuple(r) for r in limited] == [tuple(r) for r in want]


# Joins on the shard key run where the rows are (no exchange holds them): each leaf's hash join holds
# MiBs of both inputs and must spill (grace hash join) under the limit; answers are small aggregates.
JOINS = [
    "SELECT COUNT(*), SUM(l.a - r.a), MIN(r.x) FROM t l JOIN t r ON l.id = r.id",
    "SELECT COUNT(*), COUNT(r.id), SUM(r.x) FROM t l LEFT JOIN t r ON l.id = r.id AND r.a > 2500",
    "SELECT COUNT(*), SUM(l.a) FROM t l WHERE EXISTS (SELECT 1 FROM t r WHERE r.id = l.id AND r.s < l.s)",
    "SELECT COUNT(*), SUM(l.a) FROM t l WHERE NOT EXISTS (SELECT 1 FROM t r WHERE r.id = l.id AND r.x < l.x)",
    "SELECT COUNT(*), SUM(l.x), MAX(l.id) FROM t l JOIN (SELECT DISTINCT s FROM t WHERE a < 4000) d ON l.s = d.s",
]


# GROUP BYs of tens of thousands of groups per leaf: the partial and the final aggregates spill
# (partitioned hash aggregation); an outer aggregate keeps the answers small.
AGGREGATES = [
    ("SELECT COUNT(*), SUM(n), SUM(m), MIN(lo) FROM (SELECT id % 50000 AS g, COUNT(*) AS n, MAX(x) AS m, "
     "MIN(a) AS lo FROM t GROUP BY id % 50000) q", "2MiB"),
    ("SELECT COUNT(*), SUM(av) FROM (SELECT id, AVG(a) AS av FROM t GROUP BY id HAVING COUNT(*) = 1) q", "2MiB"),
]


@pytest.mark.parametrize("sql, limit", AGGREGATES)
def test_hash_aggregate_spills_past_the_limit_with_the_unlimited_answer(both, sql, limit):
    con, duck = both
    unlimited = _run(con, sql)
    assert_same_rows(_run(con, sql, limit), unlimited)
    assert_same_rows(unlimited, duck.execute(sql).fetchall())


@pytest.mark.parametrize("sql", JOINS)
def test_hash_join_spills_past_the_limit_with_the_unlimited_answer(both, sql):
    con, duck = both
    unlimited = _run(con, sql)
    assert_same_rows(_run(con, sql, "2MiB"), unlimited)
    assert_same_rows(unlimited, duck.execute(sql).fetchall())


def test_a_query_that_cannot_fit_fails_clearly_and_the_session_goes_on(both):
    con, duck = both
    # a window holds its partition whole (here one partition): not spilled, so past the limit the
    # query fails with an error naming the operator that asked and the limit
    with pytest.raises(MemoryLimitError, match=r"needs more memory than memory_limit = 2\.0 MiB") as info:
        _run(con, WINDOW, "2MiB")
    assert isinstance(info.value, OperationalError) and info.value.limit == 2 << 20
    assert info.value.operator and str(info.value).startswith(info.value.operator)
    got = _run(con, "SELECT COUNT(*), SUM(a) FROM t")
    assert_same_rows(got, duck.execute("SELECT COUNT(*), SUM(a) FROM t").fetchall())


def test_the_error_names_the_operator():
    # one leaf, one partition: the window runs in the stage that scans, so it is the first to ask
    con = engine.connect(leaves=1, partitions_per_leaf=1, memory_limit="2MiB")
    try:
        con.execute("CREATE TABLE t (id BIGINT, a BIGINT, s TEXT, x DOUBLE, SHARD KEY (id))")
        con.load_table("t", _data())
        with pytest.raises(MemoryLimitError, match=r"^Window needs more memory than memory_limit = 2\.0 MiB") as info:
            con.execute(WINDOW)
        assert info.value.operator == "Window"
        assert con.execute("SELECT COUNT(*) FROM t").fetchall() == [(ROWS,)]
    finally:
        con.close()


def test_an_exploding_join_stops_at_the_limit(both):
    con, _ = both
    # ~700 rows per key value: hundreds of millions of pairs unless it stops at the limit
    with pytest.raises(MemoryLimitError, match="memory_limit = 8.0 MiB"):
        _run(con, "SELECT l.id, r.id FROM t l JOIN t r ON l.s = r.s", "8MiB")
    assert _run(con, "SELECT COUNT(*) FROM t") == [(ROWS,)]


@pytest.mark.skipif(os.environ.get("CANOPY_RUNNER") == "ray", reason="the leaves' spill directories are "
                    "in their own processes' environment")
def test_spill_files_are_removed_after_the_query(both, tmp_path, monkeypatch):
    con, _ = both
    monkeypatch.setenv("CANOPY_SPILL_DIR", str(tmp_path))
    written = []
    finish = SpillFile.finish
    monkeypatch.setattr(SpillFile, "finish", lambda self: written.append(self.path) or finish(self))
    _run(con, ORDERED[0], TINY)
    assert written and all(path.startswith(str(tmp_path)) for path in written)
    assert list(tmp_path.iterdir()) == []
    written.clear()
    _run(con, JOINS[0], "1MiB")
    assert written
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(MemoryLimitError):
        _run(con, WINDOW, "2MiB")
    assert list(tmp_path.iterdir()) == []
