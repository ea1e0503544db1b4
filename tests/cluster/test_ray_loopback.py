"""A Ray that ``connect(cluster="ray")`` starts listens on 127.0.0.1 only (issue 14: its ports bound
0.0.0.0, so anyone on the network could reach them). Run in a fresh process: the test session's own
Ray (tests/cluster/conftest.py) is already started."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import json, psutil, ray, engine
con = engine.connect(cluster="ray", leaves=1, partitions_per_leaf=1, num_cpus=1)
con.execute("CREATE TABLE t (a INT)")
con.execute("INSERT INTO t VALUES (1)")
assert con.execute("SELECT COUNT(*) FROM t").fetchall() == [(1,)]
node = ray._private.worker.global_worker.node
pids = {p.process.pid for infos in node.all_processes.values() for p in infos}
pids |= {c.pid for pid in list(pids) for c in psutil.Process(pid).children(recursive=True)}
listening = sorted({c.laddr.ip for c in psutil.net_connections(kind="inet")
                    if c.status == "LISTEN" and c.pid in pids})
origin = con.session.runner.ray_origin
con.close()
print(json.dumps({"origin": origin, "node_ip": node.node_ip_address, "listening": listening}))
"""


def test_a_ray_started_by_connect_listens_on_loopback_only():
    out = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    if not seen["origin"].startswith("started a private"):
        pytest.skip(f"this machine runs a Ray cluster started outside Canopy: {seen['origin']}")
    assert seen["node_ip"] == "127.0.0.1"
    assert seen["listening"] and all(ip in ("127.0.0.1", "::ffff:127.0.0.1") for ip in seen["listening"]), seen
