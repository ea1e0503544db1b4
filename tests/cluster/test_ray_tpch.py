"""The 22 TPC-H queries at SF 0.01 on the Ray runner (2 leaf actors), checked against DuckDB, and the same
plans as the embedded runner. The whole SQL suite runs under Ray with ``CANOPY_RUNNER=ray``."""
from __future__ import annotations

import pytest

from engine.workloads import tpch
from tpch.compare import assert_same_result, has_order_by

QUERIES = tpch.queries()


@pytest.fixture(scope="module")
def ray_tpch(ray_session, tpch_dir_sf001):
    import engine

    con = engine.connect(cluster="ray")
    tpch.create_schema(con)
    tpch.load(con, tpch_dir_sf001)
    yield con
    con.close()


@pytest.mark.parametrize("name, sql", QUERIES, ids=[name for name, _ in QUERIES])
def test_tpch_sf001_on_ray(name, sql, ray_tpch, tpch_duckdb_sf001):
    expected = tpch_duckdb_sf001.execute(sql).fetchall()
    actual = ray_tpch.execute(sql).fetchall()
    assert_same_result(actual, expected, ordered=has_order_by(sql), label=name)


def test_same_plans_as_the_embedded_runner(ray_tpch, tpch_canopy_sf001):
    for name, sql in QUERIES:
        if name in ("q03", "q09", "q13", "q18"):
            local = tpch_canopy_sf001.execute("EXPLAIN " + sql).fetchall()
            assert ray_tpch.execute("EXPLAIN " + sql).fetchall() == local, name


def test_exchanges_are_counted_per_link(ray_tpch):
    ray_tpch.execute(dict(QUERIES)["q13"]).fetchall()        # customer ⟕ orders: a repartition
    profile = ray_tpch.session.runner.last_profile
    assert {p["leaf"] for p in profile} == {0, 1}
    links = [link for p in profile for link in p["links"]]
    assert sum(link["rows"] for link in links) > 0
    assert all(link["bytes_sent"] >= link["bytes_raw"] for link in links if not link["batches_compressed"])
