"""Fixtures of the Ray runner tests: each test module opens its own deployments (leaf actors) on the
session's one local Ray (``ray_session``, tests/conftest.py)."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def ray_con(ray_session):
    import engine

    con = engine.connect(cluster="ray")
    yield con
    con.close()
