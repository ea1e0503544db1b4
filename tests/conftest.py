"""Session-wide fixtures: TPC-H data generated once (cached under ``.data/tpch``), loaded into Canopy
and into DuckDB, the reference the query results are compared with.

SF 0.01 backs the default suite; SF 0.1 backs the tests marked ``slow`` (``pytest -m slow``).
The engine and DuckDB are imported inside the fixtures so that tests that need neither (the kernels)
can run without them.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

# Every plan the tests run goes through the stage codec, as it would to a remote leaf (the embedded
# runner skips the round trip otherwise). Set before engine imports read it.
os.environ.setdefault("CANOPY_CHECK_STAGE_CODEC", "1")

from engine.workloads import tpch

REPO_ROOT = Path(__file__).resolve().parents[1]


def _tpch_dir(sf: float) -> Path:
    return tpch.generate(sf, tpch.default_cache_dir())


def _canopy_with_tpch(data_dir: Path):
    import engine

    con = engine.connect(load_dir=str(data_dir))
    tpch.create_schema(con)
    counts = tpch.load(con, data_dir)
    assert all(rows > 0 for rows in counts.values()), counts
    return con


def _duckdb_with_tpch(data_dir: Path):
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect(":memory:")
    tpch.load_duckdb(con, data_dir)
    return con


@pytest.fixture(scope="session", autouse=True)
def _ray_for_the_ray_runner():
    """Under CANOPY_RUNNER=ray every fixture's connect() deploys leaves on one local Ray, started here
    with 8 logical CPUs. Ray's CPUs are scheduling tokens (0.5 per leaf), not cores: with the 2 of
    CI's machine, the session's long-lived clusters (TPC-H's, TPC-DS's, a module's own) took them all
    and the next connect() waited out its start timeout."""
    if os.environ.get("CANOPY_RUNNER") != "ray":
        yield
        return
    ray = pytest.importorskip("ray")
    started = not ray.is_initialized()
    if started:
        from cluster.ray_start import init_ray

        init_ray(None, num_cpus=8)
    yield
    if started:
        ray.shutdown()


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def tpch_dir_sf001() -> Path:
    return _tpch_dir(0.01)


@pytest.fixture(scope="session")
def tpch_canopy_sf001(tpch_dir_sf001):
    con = _canopy_with_tpch(tpch_dir_sf001)
    yield con
    con.close()


@pytest.fixture(scope="session")
def tpch_duckdb_sf001(tpch_dir_sf001):
    con = _duckdb_with_tpch(tpch_dir_sf001)
    yield con
    con.close()


@pytest.fixture(scope="session")
def tpch_dir_sf01() -> Path:
    return _tpch_dir(0.1)


@pytest.fixture(scope="session")
def tpch_canopy_sf01(tpch_dir_sf01):
    con = _canopy_with_tpch(tpch_dir_sf01)
    yield con
    con.close()


@pytest.fixture(scope="session")
def tpch_duckdb_sf01(tpch_dir_sf01):
    con = _duckdb_with_tpch(tpch_dir_sf01)
    yield con
    con.close()


@pytest.fixture(scope="session")
def ray_session():
    """One local Ray for the whole session (2 CPUs, as on CI), started on first use and shut down at
    the end if this fixture started it."""
    ray = pytest.importorskip("ray")
    started = not ray.is_initialized()
    if started:
        from cluster.ray_start import init_ray

        init_ray(None, num_cpus=2)
    yield ray
    if started:
        ray.shutdown()
