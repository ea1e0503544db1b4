"""Fair writers (issue 14): with a data_dir, UPDATEs and INSERTs of one table make progress together,
and every statement's effect is exact after the data_dir is reopened.

Before the fair locks (engine.fair_locks) four threads rewriting a table with UPDATE left three
INSERT threads 21 statements in 15 s (a released lock went to whichever thread ran first: usually the
updater that had just released it) and an INSERT waited up to 6.4 s; now the inserts append beside an
in-place UPDATE, and a writer waits only for those ahead of it.

The invariants: every row has a = 100 - (updates that matched it) and b = (updates that matched it),
inserted rows start at (7, 0); so SUM(b) is the sum of the UPDATEs' row counts, SUM(a + b) is 100 per
first row plus 7 per inserted one, and COUNT(*) the first rows plus the inserted ones, ids unique.
"""
from __future__ import annotations

import threading
import time

import pytest

import engine
from engine.session import Session

FIRST_ROWS = 2000


def _run(data_dir, seconds: float, updaters: int = 4, inserters: int = 3) -> dict:
    con = engine.connect(data_dir=str(data_dir))
    try:
        con.execute("CREATE TABLE t (id BIGINT, a BIGINT, b BIGINT, SHARD KEY (id))")
        con.execute("INSERT INTO t VALUES " + ", ".join(f"({i}, 100, 0)" for i in range(FIRST_ROWS)))
        stop = time.monotonic() + seconds
        done = {"updated": 0, "updates": [0] * updaters, "inserts": [0] * inserters}
        errors: list = []
        guard = threading.Lock()

        def updater(k: int) -> None:
            session = Session(con.session.runner)
            n = 0
            while time.monotonic() < stop:
                # the whole table (storage rewrites every row in place) or a quarter of it
                where = "" if n % 2 else f" WHERE id % {updaters} = {k}"
                rowcount = session.execute(f"UPDATE t SET a = a - 1, b = b + 1{where}").rowcount
                n += 1
                with guard:
                    done["updated"] += rowcount
                    done["updates"][k] += 1

        def inserter(k: int) -> None:
            session = Session(con.session.runner)
            n = 0
            while time.monotonic() < stop:
                session.execute(f"INSERT INTO t VALUES ({(k + 1) * 10_000_000 + n}, 7, 0)")
                n += 1
                with guard:
                    done["inserts"][k] += 1

        def guarded(fn, k):
            try:
                fn(k)
            except BaseException as error:      # noqa: BLE001 - reported by the test
                errors.append(error)

        threads = [threading.Thread(target=guarded, args=(updater, k)) for k in range(updaters)] + \
                  [threading.Thread(target=guarded, args=(inserter, k)) for k in range(inserters)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(seconds + 120)
        assert not errors, errors
        done["runner"] = con.session.runner
    finally:
        con.close()
    return done


def _check(data_dir, done: dict) -> None:
    inserted = sum(done["inserts"])
    con = engine.connect(data_dir=str(data_dir))        # reopened: recovery keeps exactly what committed
    try:
        row = con.execute("SELECT COUNT(*), COUNT(DISTINCT id), SUM(a + b), SUM(b), "
                          "SUM(CASE WHEN id >= 10000000 THEN 1 ELSE 0 END) FROM t").fetchone()
    finally:
        con.close()
    assert tuple(int(v) for v in row) == (FIRST_ROWS + inserted, FIRST_ROWS + inserted,
                                          100 * FIRST_ROWS + 7 * inserted, done["updated"], inserted)


def _assert_both_progress(done: dict, runner) -> None:
    print(f"updates per thread {done['updates']}, inserts per thread {done['inserts']}, rows updated {done['updated']}")
    assert all(done["updates"]) and all(done["inserts"]), done
    if type(runner).__name__ == "RayRunner":
        # the Ray runner commits one write at a time (its driver's write lock): the writers take
        # turns, so 3 inserters do about 3 statements for the updaters' 4
        assert 2 * sum(done["inserts"]) >= sum(done["updates"]), done
    else:
        # an INSERT of one row costs a fraction of an UPDATE of thousands and runs beside it: when
        # a waiting INSERT is not overtaken by later UPDATEs, the inserters complete more statements
        assert sum(done["inserts"]) >= sum(done["updates"]), done


def test_updates_and_inserts_both_progress(tmp_path):
    done = _run(tmp_path / "data", seconds=3)
    _assert_both_progress(done, done.pop("runner"))
    _check(tmp_path / "data", done)


@pytest.mark.slow
def test_updates_and_inserts_both_progress_for_30s(tmp_path):
    done = _run(tmp_path / "data", seconds=30)
    _assert_both_progress(done, done.pop("runner"))
    _check(tmp_path / "data", done)
