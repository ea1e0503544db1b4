"""All 22 TPC-H queries on Canopy, each result checked against DuckDB's over the same CSV files.

SF 0.01 runs in the default suite; SF 0.1 is marked ``slow``. Comparison rules: ``compare.py``.
"""
import pytest

from engine.workloads import tpch
from tpch.compare import assert_same_result, has_order_by

QUERIES = tpch.queries()
IDS = [name for name, _ in QUERIES]


def _check(canopy, duck, name, sql):
    expected = duck.execute(sql).fetchall()
    actual = canopy.execute(sql).fetchall()
    assert_same_result(actual, expected, ordered=has_order_by(sql), label=name)


def test_tables_loaded_alike(tpch_canopy_sf001, tpch_duckdb_sf001):
    for table in tpch.TABLES:
        query = f"SELECT COUNT(*) FROM {table}"
        assert tpch_canopy_sf001.execute(query).fetchall() == tpch_duckdb_sf001.execute(query).fetchall()


@pytest.mark.parametrize("name, sql", QUERIES, ids=IDS)
def test_tpch_sf001(name, sql, tpch_canopy_sf001, tpch_duckdb_sf001):
    _check(tpch_canopy_sf001, tpch_duckdb_sf001, name, sql)


@pytest.mark.slow
@pytest.mark.parametrize("name, sql", QUERIES, ids=IDS)
def test_tpch_sf01(name, sql, tpch_canopy_sf01, tpch_duckdb_sf01):
    _check(tpch_canopy_sf01, tpch_duckdb_sf01, name, sql)
