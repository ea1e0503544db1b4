"""statement_timeout on the embedded runner: the session variable (and MySQL's max_execution_time), the
connect() option, the deadline checked at operators' batch boundaries, no partial write, a usable
connection afterwards. The Ray runner's version is in test_ray_failures.py.

A 1 ms timeout cannot be met by any query here (planning alone takes longer), so these tests do not
depend on the machine's speed; the generous timeouts are three orders of magnitude above the queries."""
from __future__ import annotations

import pyarrow as pa
import pytest

import engine
from cluster.specs import ExchangeSpec, TaskSpec
from engine.core.deadline import Deadline
from engine.storage import memory

ROWS = 200_000
GROUPED = "SELECT k % 7, COUNT(*) FROM t GROUP BY 1 ORDER BY 1"


@pytest.fixture(scope="module")
def con():
    con = engine.connect(cluster="local")
    con.execute("CREATE TABLE t (k BIGINT, v BIGINT, SHARD KEY (k))")
    data = pa.table({"k": pa.array(range(ROWS), pa.int64()),
                     "v": pa.array([i % 100 for i in range(ROWS)], pa.int64())})
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(memory, "_TAIL_PIECES", 1 << 30)     # keep them apart: many batches per partition
        for chunk in data.to_batches(max_chunksize=ROWS // 40):
            con.load_table("t", chunk)
    con.execute("CREATE TABLE copy (k BIGINT, v BIGINT, SHARD KEY (k))")
    yield con
    con.close()


def _expected():
    return [(r, sum(1 for k in range(ROWS) if k % 7 == r)) for r in range(7)]


@pytest.mark.parametrize("variable", ["statement_timeout", "max_execution_time", "@@session.max_execution_time"])
def test_set_timeout_cancels_and_the_connection_goes_on(con, variable):
    con.execute(f"SET {variable} = 1")
    try:
        with pytest.raises(engine.OperationalError, match=r"query exceeded statement_timeout of 1 ms"):
            con.execute(GROUPED)
    finally:
        con.execute(f"SET {variable} = 0")
    assert con.execute(GROUPED).fetchall() == _expected()


def test_a_timeout_the_query_meets_changes_nothing(con):
    con.execute("SET statement_timeout = 600000")
    try:
        assert con.execute(GROUPED).fetchall() == _expected()
    finally:
        con.execute("SET statement_timeout = DEFAULT")
    assert con.session.statement_timeout is None


def test_insert_select_past_the_timeout_writes_nothing(con):
    con.execute("SET statement_timeout = 1")
    with pytest.raises(engine.OperationalError, match="statement_timeout"):
        con.execute("INSERT INTO copy SELECT k, v FROM t WHERE v < 50")
    con.execute("SET statement_timeout = 0")
    assert con.execute("SELECT COUNT(*) FROM copy").fetchall() == [(0,)]
    con.execute("INSERT INTO copy SELECT k, v FROM t WHERE v < 50")
    assert con.execute("SELECT COUNT(*) FROM copy").fetchall() == [(ROWS // 2,)]


def test_connect_option():
    with engine.connect(cluster="local", statement_timeout=1) as c:
        c.execute("CREATE TABLE s (k BIGINT)")
        c.load_table("s", pa.table({"k": pa.array(range(50_000), pa.int64())}))
        with pytest.raises(engine.OperationalError, match="statement_timeout of 1 ms"):
            c.execute("SELECT k % 3, COUNT(*) FROM s GROUP BY 1")
        c.execute("SET statement_timeout = 0")
        assert c.execute("SELECT COUNT(*) FROM s").fetchall() == [(50_000,)]


@pytest.mark.parametrize("value", ["-1", "1.5", "'soon'", "'-3'"])
def test_bad_timeouts_are_refused(con, value):
    with pytest.raises(engine.ProgrammingError, match="whole number of milliseconds"):
        con.execute(f"SET statement_timeout = {value}")
    with pytest.raises(engine.ProgrammingError, match="whole number of milliseconds"):
        engine.connect(cluster="local", statement_timeout=-5)


def test_the_deadline_is_checked_at_every_operators_batch_boundaries(con):
    """A deadline whose cancel flag turns true after a few checks stops a task in the middle of its
    scan: the checks happen per batch inside the stage, not only between stages."""
    runner = con.session.runner
    planned = con.session._plan(_select(GROUPED))
    leaf_stage = next(s for s in planned.stages if s.parallel)
    checks = []

    def cancelled() -> bool:
        checks.append(1)
        return len(checks) > 5

    leaf = runner.leaves[0]
    batches = leaf.storage.store(con.session.catalog.table("canopy", "t").table_id, 0).scan(["k"])
    assert sum(1 for _ in batches) > 10          # the scan has many batches to stop between
    with pytest.raises(engine.OperationalError, match="query cancelled"):
        task = TaskSpec("q", leaf_stage.stage_id, 0, runner.num_partitions, (),
                        ExchangeSpec.of(leaf_stage, runner.num_leaves, runner.partitions_per_leaf))
        leaf.run_task(leaf_stage, task, {}, deadline=Deadline(None, cancelled=cancelled))
    assert len(checks) == 6
    assert Deadline.after(None).remaining() is None and not Deadline.after(None).expired()


def _select(sql: str):
    from engine.sql.parser import parse
    return parse(sql)[0].node


def test_the_timeout_covers_parsing_and_planning(con):
    """A statement that takes far longer to read than to run (an IN list of 300,000 values: seconds
    of tokenizing and parsing) stops at its timeout, not after it was read."""
    import time
    values = ",".join(str(i) for i in range(300_000))
    con.execute("SET statement_timeout = 300")
    try:
        started = time.monotonic()
        with pytest.raises(engine.OperationalError, match=r"query exceeded statement_timeout of 300 ms"):
            con.execute(f"SELECT COUNT(*) FROM t WHERE k IN ({values})")
        assert time.monotonic() - started < 2.5
    finally:
        con.execute("SET statement_timeout = 0")
    assert con.execute("SELECT COUNT(*) FROM t WHERE k IN (1, 2, 3)").fetchall() == [(3,)]
