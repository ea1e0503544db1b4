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

    con = engine.connect(cluster="ray", load_dir=str(tpch_dir_sf001))
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
            for con in (tpch_canopy_sf001, ray_tpch):   # both from histograms (not the first, quick statistics)
                con.execute("EXPLAIN " + sql)
                con.session.statistics.wait()
            local = tpch_canopy_sf001.execute("EXPLAIN " + sql).fetchall()
            assert ray_tpch.execute("EXPLAIN " + sql).fetchall() == local, name


def test_exchanges_are_counted_per_link(ray_tpch):
    ray_tpch.execute(dict(QUERIES)["q13"]).fetchall()        # customer ⟕ orders: a repartition
    profile = ray_tpch.session.runner.last_profile
    assert {p["leaf"] for p in profile} == {0, 1}
    links = [link for p in profile for link in p["links"]]
    assert sum(link["rows"] for link in links) > 0
    assert all(link["bytes_sent"] >= link["bytes_raw"] for link in links if not link["batches_compressed"])


@pytest.mark.parametrize("name", ["q03", "q13"])
def test_explain_analyze_counts_the_same_rows_as_the_embedded_runner(name, ray_tpch, tpch_canopy_sf001):
    """Operators' and exchanges' actual rows come from the leaf actors and match the embedded run line
    by line; exchange lines add the per-link transport counters."""
    import re

    sql = "EXPLAIN ANALYZE " + dict(QUERIES)[name]
    ray_lines = [r[0] for r in ray_tpch.execute(sql).fetchall()]
    local_lines = [r[0] for r in tpch_canopy_sf001.execute(sql).fetchall()]
    rows = re.compile(r"\(actual ([\d,]+) rows")
    assert [rows.search(line) and rows.search(line).group(1) for line in ray_lines] == \
        [rows.search(line) and rows.search(line).group(1) for line in local_lines]
    exchanges = [line for line in ray_lines if line.lstrip().startswith("Exchange")]
    assert exchanges
    link = re.compile(r"moved, [\d.,]+ (B|KiB|MiB) sent over (\d+) links, (\d+) of (\d+) batches LZ4, "
                      r"busiest link [\d,]+ rows [\d.,]+ (B|KiB|MiB)\)$")
    for line in exchanges:
        found = link.search(line)
        assert found and int(found.group(2)) >= 1 and int(found.group(3)) <= int(found.group(4)), line
    assert "never ran" not in "\n".join(ray_lines)
    assert ray_lines[-1].startswith("Execution:")
