"""Ray leaves with a data_dir: a leaf process killed after writes comes back with exactly the committed
statements (the commit record in the driver's log decides), and a new driver on the same data_dir, after
the deployment is shut down, sees the tables.

One deployment serves the module until the last test replaces it (the reconnect)."""
from __future__ import annotations

import os
import signal
import threading
import uuid
from decimal import Decimal

import pyarrow as pa
import pytest

import engine
from ray_helpers import wait_restarted

SMALL = {"flush_rows": 64, "segment_rows": 256, "chunk_rows": 32}   # WAL, deltas and flushes all occur


@pytest.fixture(scope="module")
def durable(ray_session, tmp_path_factory):
    path = tmp_path_factory.mktemp("ray-data")
    state = {"path": path, "con": engine.connect(cluster="ray", data_dir=str(path), **SMALL)}
    yield state
    state["con"].close()


def _kill_and_wait(runner, leaf: int) -> None:
    victim = runner.leaf_info()[leaf]
    os.kill(victim["pid"], signal.SIGKILL)
    assert wait_restarted(runner, leaf)["pid"] != victim["pid"]


def _totals(con) -> list[tuple]:
    return con.execute("SELECT COUNT(*), SUM(v) FROM t").fetchall()


def test_a_killed_leaf_recovers_its_committed_partitions(durable):
    con = durable["con"]
    con.execute("CREATE TABLE t (k INT, v INT, SHARD KEY (k))")
    con.execute("CREATE REFERENCE TABLE r (k INT, name VARCHAR(10))")
    con.execute("INSERT INTO t VALUES " + ", ".join(f"({i}, {i % 10})" for i in range(600)))   # segments
    for start in range(600, 640, 8):                                                            # WAL records
        con.execute("INSERT INTO t VALUES " + ", ".join(f"({i}, 1)" for i in range(start, start + 8)))
    con.execute("DELETE FROM t WHERE k < 100")                                                  # a rewrite
    con.execute("INSERT INTO r VALUES (0, 'zero'), (1, 'one')")
    expected = _totals(con)
    assert expected == [(540, Decimal(sum(i % 10 for i in range(100, 600)) + 40))]
    joined = "SELECT r.name, COUNT(*) FROM t JOIN r ON t.v = r.k GROUP BY r.name ORDER BY 1"
    expected_join = con.execute(joined).fetchall()

    _kill_and_wait(con.session.runner, 1)
    assert _totals(con) == expected
    assert con.execute(joined).fetchall() == expected_join     # leaf 1's copy of r came back too
    con.execute("INSERT INTO t VALUES (1000, 5)")                # and it takes writes again
    assert _totals(con) == [(541, expected[0][1] + 5)]


def test_only_statements_with_a_commit_record_survive_a_restart(durable):
    """Two statements cut short by hand on leaf 0: one prepared without a commit record (the driver
    died before committing), one with its commit record but never applied (the leaf died first)."""
    con = durable["con"]
    runner = con.session.runner
    before = _totals(con)
    schema = con.session.catalog.table("canopy", "t").arrow_schema
    table_id = con.session.catalog.table("canopy", "t").table_id
    leaf = runner.leaves[0]

    def prepare(values) -> int:
        csn = runner._data.log.next_csn()
        batch = pa.record_batch([pa.array(values, pa.int32()), pa.array([7] * len(values), pa.int32())],
                                schema=schema)
        runner._get(leaf.prepare_write.remote(uuid.uuid4().hex, table_id, [(0, [batch])], False, csn))
        return csn

    prepare([2000, 2001, 2002])                                       # no commit record: dropped
    runner._data.log.commit(prepare([3000, 3001]))                    # committed, not applied: kept
    assert _totals(con) == before                                     # neither is visible yet

    _kill_and_wait(runner, 0)
    runner._forget()            # the driver's cached counts: this test wrote behind its back
    assert _totals(con) == [(before[0][0] + 2, before[0][1] + 14)]
    assert con.execute("SELECT COUNT(*) FROM t WHERE k >= 2000").fetchall() == [(2,)]


def test_a_leaf_restarted_between_prepare_and_commit_applies_the_statement_from_disk(durable, monkeypatch):
    """The restarted leaf read the log before the commit record existed, and its prepared write died
    with the old process: the driver has it reopen its partitions once the record is durable."""
    con = durable["con"]
    runner = con.session.runner
    before = _totals(con)
    commit = runner._data.log.commit

    def kill_then_commit(csn: int, participants=()) -> None:
        _kill_and_wait(runner, 1)
        commit(csn, participants)

    monkeypatch.setattr(runner._data.log, "commit", kill_then_commit)
    con.execute("INSERT INTO t VALUES " + ", ".join(f"({i}, 2)" for i in range(4000, 4040)))
    monkeypatch.undo()
    assert _totals(con) == [(before[0][0] + 40, before[0][1] + 80)]


def test_a_leaf_killed_mid_query_is_retried_on_its_restarted_process(ray_session, tmp_path):
    """SIGKILL a durable leaf while a query runs (every leaf task waits 1 s first, so the query is
    surely running): the read-only query is retried once on the restarted leaf, which reopened its
    partitions, and returns the right answer; or, if the restart outlasts the retry, fails naming the
    leaf. Either way the next query works."""
    con = engine.connect(cluster="ray", data_dir=str(tmp_path), debug_task_delay_s=1.0, **SMALL)
    try:
        runner = con.session.runner
        con.execute("CREATE TABLE m (k INT, v INT, SHARD KEY (k))")
        con.execute("INSERT INTO m VALUES " + ", ".join(f"({i}, {i % 7})" for i in range(700)))
        query = "SELECT v, COUNT(*), SUM(k) FROM m GROUP BY v ORDER BY v"
        expected = [(v, 100, Decimal(sum(range(v, 700, 7)))) for v in range(7)]
        assert con.execute(query).fetchall() == expected
        victim = runner.leaf_info()[1]
        threading.Timer(0.3, os.kill, (victim["pid"], signal.SIGKILL)).start()
        try:
            assert con.execute(query).fetchall() == expected
            assert runner.retries == 1
        except engine.OperationalError as error:
            assert "leaf 1" in str(error) and "died during the query" in str(error)
        assert wait_restarted(runner, 1)["pid"] != victim["pid"]
        assert con.execute(query).fetchall() == expected
        con.execute("INSERT INTO m VALUES (700, 0)")        # writes go on (never retried themselves)
        assert con.execute("SELECT COUNT(*) FROM m").fetchall() == [(701,)]
    finally:
        con.close()


def test_a_new_driver_on_the_data_dir_sees_the_tables(durable):
    con = durable["con"]
    expected = _totals(con)
    con.execute("CREATE TABLE kl (x INT)")
    con.execute("INSERT INTO kl VALUES (1), (2), (3)")
    con.close()                 # the deployment ends; its leaves' files stay

    durable["con"] = con = engine.connect(cluster="ray", data_dir=str(durable["path"]), **SMALL)
    assert _totals(con) == expected
    assert con.execute("SELECT SUM(x) FROM kl").fetchall() == [(Decimal(6),)]
    assert con.execute("SELECT name FROM r ORDER BY k").fetchall() == [("zero",), ("one",)]
    assert sorted(p.name for p in durable["path"].iterdir()) == \
        ["LOCK", "catalog.json", "cluster.json", "commit.log", "leaf-0", "leaf-1"]
