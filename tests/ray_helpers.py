"""Helpers shared by the Ray runner tests (tests/cluster)."""
from __future__ import annotations

import time

import engine


def wait_restarted(runner, leaf: int, timeout: float = 60) -> dict:
    """The leaf's info once Ray has restarted it (its actor answers and says so)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            info = runner.leaf_info()[leaf]
            if info["restarted"]:
                return info
        except engine.OperationalError:
            pass            # still restarting
        time.sleep(0.2)
    raise AssertionError(f"leaf {leaf} was not restarted within {timeout} s")
