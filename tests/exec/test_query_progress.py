"""Query progress and Ctrl-C on the embedded runner (the Ray runner's are in
tests/cluster/test_ray_progress.py): a watched query reports every task of every stage with the rows
it produced; Ctrl-C stops the tasks running on the leaf pool and reaches the caller as one
KeyboardInterrupt with no engine frames under it; the connection stays usable."""
from __future__ import annotations

import signal
import threading
import time

import numpy as np
import pyarrow as pa
import pytest

import engine
from cluster.leaf import Leaf
from engine.exec import progress as progress_module


@pytest.fixture(scope="module")
def con():
    con = engine.connect(leaves=2, partitions_per_leaf=2)
    con.execute("CREATE TABLE big (a BIGINT, b BIGINT, SHARD KEY (a))")
    n = 400_000
    con.load_table("big", pa.table({"a": np.arange(n), "b": np.arange(n) % 100}))
    # statistics now: collected in the background they run on the leaf pool too (the Ctrl-C test
    # finds no task queued there)
    con.execute("ANALYZE TABLE big")
    yield con
    con.close()


class Recorder(progress_module.QueryProgress):
    def __init__(self):
        super().__init__()
        self.done: list[tuple[int, int]] = []

    def task_done(self, stage_id, rows):
        super().task_done(stage_id, rows)
        self.done.append((stage_id, rows))


def test_a_watched_query_reports_every_task(con, monkeypatch):
    recorders = []

    def make():
        recorders.append(Recorder())
        return recorders[-1]

    monkeypatch.setattr("engine.session.TqdmQueryProgress", make)
    monkeypatch.setattr(con.session, "progress", True)
    rows = con.execute("SELECT b, COUNT(*) FROM big GROUP BY b").fetchall()
    assert len(rows) == 100
    (recorder,) = recorders
    assert recorder.total_tasks == recorder.tasks_done > 0
    assert len(recorder.stages_seen) == recorder.stages >= 2      # leaves' partial, aggregator's final
    final_rows = [r for stage, r in recorder.done if stage == max(recorder.stages_seen)]
    assert final_rows == [100]


def test_the_bar_appears_only_after_a_second(monkeypatch):
    made = []

    class FakeBar:
        def __init__(self, **kwargs):
            made.append(self)
            self.n, self.total = 0, 0

        def set_postfix_str(self, text, refresh=False):
            self.postfix = text

        def refresh(self):
            pass

        def close(self):
            self.closed = True

    import tqdm.auto
    monkeypatch.setattr(tqdm.auto, "tqdm", FakeBar)
    progress = progress_module.TqdmQueryProgress()
    progress.start(4, 2)
    progress.task_done(0, 10)
    assert not made                                   # a short query draws nothing
    monkeypatch.setattr(progress_module, "PROGRESS_DELAY_S", 0.0)
    progress.task_done(0, 5)
    (bar,) = made
    assert (bar.n, bar.total) == (2, 4) and bar.postfix == "stage 2/2, 15 rows"
    progress.close()
    assert bar.closed


def ctrl_c_once(running, timeout: float = 120) -> None:
    """Ctrl-C in the main thread once ``running()`` (a task of the query has begun on a leaf), polled,
    not after a fixed delay: under load that fired before the query had started, or after it had ended.
    A real SIGINT to the main thread, as a terminal's Ctrl-C: it also wakes a wait blocked in C."""
    main = threading.main_thread().ident

    def fire():
        until = time.monotonic() + timeout
        while not running():
            if time.monotonic() > until:
                return
            time.sleep(0.02)
        signal.pthread_kill(main, signal.SIGINT)
    threading.Thread(target=fire, daemon=True).start()


def test_ctrl_c_stops_the_query_and_the_connection_goes_on(con, monkeypatch):
    slow = "SELECT COUNT(DISTINCT x.a * 7 % 1000003) FROM big x JOIN big y ON x.b = y.b WHERE x.a % 97 = y.a % 89"
    con.execute("EXPLAIN " + slow).fetchall()     # any statistics its plan wants: collected before, not during
    assert con.session.statistics.wait(60)
    runner = con._runner
    if hasattr(runner, "leaf_info"):            # Ray: the leaves count their running tasks
        def running():
            return any(leaf["tasks_running"] for leaf in runner.leaf_info())
    else:       # embedded: a leaf was handed a task of the query (Ctrl-C may land while the driver still
        # hands the stage's tasks to the pool, routes a stage's output, or waits: none is left behind)
        started, task_batches = threading.Event(), Leaf.task_batches

        def first_task_starts(self, *args, **kwargs):
            started.set()
            return task_batches(self, *args, **kwargs)
        monkeypatch.setattr(Leaf, "task_batches", first_task_starts)
        running = started.is_set
    ctrl_c_once(running)
    began = time.monotonic()
    with pytest.raises(KeyboardInterrupt, match="statement cancelled on every leaf") as caught:
        con.execute(slow).fetchall()
    assert time.monotonic() - began < 60
    # the user's frame and the DB-API's: nothing of the scheduler under it
    frames = []
    tb = caught.value.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame.f_code.co_filename)
        tb = tb.tb_next
    assert frames[-1].endswith("dbapi.py") and not any("cluster" in f for f in frames)
    runner = con._runner
    if hasattr(runner, "_pool"):     # the embedded runner: no task of it left queued on the leaf pool (the
        assert runner._pool._work_queue.qsize() == 0   # Ray runner's leaves: tests/cluster/test_ray_progress.py)
    assert con.execute("SELECT COUNT(*) FROM big").fetchall() == [(400_000,)]


def test_ctrl_c_while_the_tasks_are_handed_to_the_pool_leaves_none_behind(con, monkeypatch):
    """A real SIGINT that lands inside ThreadPoolExecutor.submit, after the stage's first task was queued
    and before its future came back: the query still waits for (or never starts) every task it queued."""
    slow = "SELECT COUNT(DISTINCT x.a * 7 % 1000003) FROM big x JOIN big y ON x.b = y.b WHERE x.a % 97 = y.a % 89"
    if not hasattr(con._runner, "_pool"):
        pytest.skip("the embedded runner's leaf pool (Ray's leaves: tests/cluster/test_ray_progress.py)")
    pool = con._runner._pool
    submit, futures, main = pool.submit, [], threading.main_thread().ident

    def interrupted_submit(fn, *args, **kwargs):
        future = submit(fn, *args, **kwargs)
        futures.append(future)
        if len(futures) == 1:           # queued; Ctrl-C before submit() returns it to the driver
            signal.pthread_kill(main, signal.SIGINT)
            time.sleep(0.2)             # the handler runs here, inside submit()
        return future
    con.execute("EXPLAIN " + slow).fetchall()
    assert con.session.statistics.wait(60)
    monkeypatch.setattr(pool, "submit", interrupted_submit)
    with pytest.raises(KeyboardInterrupt, match="statement cancelled on every leaf"):
        con.execute(slow).fetchall()
    monkeypatch.undo()
    assert futures and all(f.done() for f in futures)      # no task of the query outlives it
    assert pool._work_queue.qsize() == 0
    assert con.execute("SELECT COUNT(*) FROM big").fetchall() == [(400_000,)]
