"""Fixtures of the Ray runner tests: one local Ray for the whole session (2 CPUs, as on CI), started on
first use and shut down at the end if these fixtures started it; each test module opens its own
deployments (leaf actors) on it."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def ray_session():
    ray = pytest.importorskip("ray")
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING")
    yield ray
    if started:
        ray.shutdown()


@pytest.fixture(scope="module")
def ray_con(ray_session):
    import engine

    con = engine.connect(cluster="ray")
    yield con
    con.close()
