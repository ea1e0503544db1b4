"""kill -9 at random moments: reopening recovers every committed statement and nothing else.

A writer subprocess (crash_writer.py) runs a deterministic stream of INSERTs (small ones into the WAL,
large ones straight into segments), DELETEs (delete bitmaps, WAL rewrites), UPDATEs (delete + re-insert)
and OPTIMIZE TABLEs, printing each
statement's number once ``execute`` returned. The test SIGKILLs it after a random delay (during start-up
and recovery too), reopens the data directory and compares the table with the same history replayed in
memory: it must equal the statements printed, or those plus the one in flight (committed but not yet
printed) — never a part of a statement.
"""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import engine

WRITER = Path(__file__).with_name("crash_writer.py")
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(WRITER.parent))
import crash_writer  # noqa: E402

QUERY = "SELECT id, k, v FROM t ORDER BY id, k, v"


def _rows(con) -> list:
    cur = con.cursor()
    cur.execute(QUERY)
    return cur.fetchall()


def _run_writer(data_dir: Path, start: int, delay: float, after_ready: bool) -> int:
    """Start the writer, SIGKILL it ``delay`` seconds after its start (or after it reported the data
    directory open); the last statement it reported (start - 1 when none)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    process = subprocess.Popen([sys.executable, str(WRITER), str(data_dir), str(start)], cwd=ROOT, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    ready = threading.Event()

    def read() -> None:
        for line in process.stdout:
            lines.append(line)
            if line.startswith("ready"):
                ready.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    if after_ready:
        ready.wait(60)
    time.sleep(delay)
    process.send_signal(signal.SIGKILL)
    process.wait()
    reader.join()
    errors = process.stderr.read()
    process.stderr.close()
    assert process.returncode == -signal.SIGKILL, errors
    done = [int(line) for line in lines if line.strip().isdigit()]
    return done[-1] if done else start - 1


def _crash_rounds(tmp_path: Path, rounds: int, seed: int, anywhere: float = 0.25) -> int:
    rng = random.Random(seed)
    data_dir = tmp_path / "data"
    model = engine.connect()
    model.cursor().execute(crash_writer.CREATE)
    applied = 0                       # statements 1..applied are in the model
    for _ in range(rounds):
        # mostly mid-statement; a share ``anywhere`` of the rounds from start-up (recovery) on
        after_ready = rng.random() >= anywhere
        last = _run_writer(data_dir, applied + 1, rng.uniform(0.3, 2.0) if after_ready else rng.uniform(0.0, 2.5),
                           after_ready)
        for k in range(applied + 1, last + 1):
            model.cursor().execute(crash_writer.statement(k))
        applied = last
        con = engine.connect(data_dir=str(data_dir), **crash_writer.OPTIONS)
        con.cursor().execute(crash_writer.CREATE)     # the writer may have died before creating it
        recovered = _rows(con)
        con.close()
        if recovered != _rows(model):
            # the statement in flight may have committed without being reported: all of it, then
            applied += 1
            model.cursor().execute(crash_writer.statement(applied))
            assert recovered == _rows(model), f"after statement {applied - 1}: neither it nor {applied}"
    model.close()
    return applied


def test_kill_9_recovers_committed_statements(tmp_path):
    applied = _crash_rounds(tmp_path, rounds=3, seed=1, anywhere=0.0)
    assert applied > 0


@pytest.mark.slow
def test_kill_9_many_times(tmp_path):
    applied = _crash_rounds(tmp_path, rounds=40, seed=int(os.environ.get("CANOPY_CRASH_SEED", "7")))
    assert applied > 100
