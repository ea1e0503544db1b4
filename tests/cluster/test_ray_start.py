"""Which Ray ``connect(cluster="ray")`` runs on (cluster.ray_start), each case in a fresh process:

- a recorded cluster that is gone (RAY_ADDRESS naming a dead port, as a stale current-cluster file
  would) starts a private Ray and says so, where ``ray.init`` refused ``num_cpus``;
- a running cluster from ``ray start --head`` is joined (slow: it starts a second Ray);
- no Ray token warning is printed on either path.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import pytest

pytest.importorskip("ray")

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = """
import engine
con = engine.connect(cluster="ray", leaves=1, partitions_per_leaf=1)
print("ORIGIN:", con._runner.ray_origin)
print("ROWS:", con.execute("SELECT 40 + 2").fetchall())
con.close()
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _connect_in_subprocess(ray_address: str, tmp_path) -> subprocess.CompletedProcess:
    env = {**os.environ, "RAY_ADDRESS": ray_address, "PYTHONPATH": REPO}
    env.pop("RAY_AUTH_MODE", None)
    return subprocess.run([sys.executable, "-c", SCRIPT], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)


def test_a_recorded_cluster_that_is_gone_starts_a_private_ray(tmp_path):
    dead = f"127.0.0.1:{_free_port()}"
    done = _connect_in_subprocess(dead, tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"ORIGIN: the Ray cluster recorded at {dead} is not running: started a private local Ray" \
        in done.stdout
    assert "ROWS: [(42,)]" in done.stdout
    assert "is not running: started a private local Ray" in done.stderr        # said once, as a warning
    assert "Token authentication is enabled" not in done.stderr


@pytest.mark.slow
def test_a_running_cluster_from_ray_start_is_joined(tmp_path):
    port = _free_port()
    # Ray's socket paths live under its temp dir and must fit a Unix socket name (107 bytes): pytest's
    # tmp_path is too deep for that
    ray_temp = tempfile.mkdtemp(prefix="rayh", dir="/tmp")
    ray_bin = os.path.join(os.path.dirname(sys.executable), "ray")
    head = subprocess.Popen(
        [ray_bin, "start", "--head", f"--port={port}", "--num-cpus=2", "--include-dashboard=false",
         "--disable-usage-stats", f"--temp-dir={ray_temp}", "--block"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "ray start --head did not come up"
                time.sleep(1)
        done = _connect_in_subprocess(f"127.0.0.1:{port}", tmp_path)
        assert done.returncode == 0, done.stderr[-2000:]
        assert f"ORIGIN: joined the running Ray cluster at 127.0.0.1:{port}" in done.stdout
        assert "ROWS: [(42,)]" in done.stdout
        assert "Token authentication is enabled" not in done.stderr
    finally:
        head.terminate()      # `ray start --block` drains and stops the processes it started
        head.wait(timeout=90)
        shutil.rmtree(ray_temp, ignore_errors=True)
