"""TPC-DS data generated once (cached under ``.data/tpcds``) and loaded into Canopy once per session.

SF 0.1 backs the default suite; SF 1 the tests marked ``slow``. The reference is DuckDB's answers,
written by the generator beside the data (``answers/qNN.parquet``), so DuckDB does not run here.
Without the generator's interpreter (``make tpcds-venv``) and no cached data the tests are skipped,
saying so.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from engine.workloads import tpcds


def _data_dir(sf: float) -> Path:
    try:
        return tpcds.generate(sf, tpcds.default_cache_dir())
    except FileNotFoundError as exc:
        pytest.skip(f"TPC-DS SF {sf:g} data cannot be generated: {exc}")


def _canopy_with_tpcds(data_dir: Path):
    import engine

    con = engine.connect(load_dir=str(data_dir))      # LOAD DATA reads only under a load directory
    tpcds.create_schema(con)
    counts = tpcds.load(con, data_dir)
    assert all(rows > 0 for rows in counts.values()), counts
    return con


@pytest.fixture(scope="session")
def tpcds_dir_sf01() -> Path:
    return _data_dir(0.1)


# The loaded clusters are per module, not per session: on Ray each holds its leaves' CPUs, and with
# TPC-H's session cluster beside it a 2-CPU Ray had none left, so every later connect() waited out
# its start timeout (the DB-API tests after tests/tpcds in `make test-ray`).
@pytest.fixture(scope="module")
def tpcds_canopy_sf01(tpcds_dir_sf01):
    con = _canopy_with_tpcds(tpcds_dir_sf01)
    yield con
    con.close()


@pytest.fixture(scope="session")
def tpcds_dir_sf1() -> Path:
    return _data_dir(1)


@pytest.fixture(scope="module")
def tpcds_canopy_sf1(tpcds_dir_sf1):
    con = _canopy_with_tpcds(tpcds_dir_sf1)
    yield con
    con.close()
