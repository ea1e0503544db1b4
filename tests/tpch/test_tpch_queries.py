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


def test_tpch_sf001_from_the_plan_cache(tpch_canopy_sf001, tpch_duckdb_sf001):
    """Queries written with literals are cached by shape once seen twice: the third run of each query
    comes from its template where the query is cacheable, and every run still matches DuckDB. Most
    TPC-H shapes are not cacheable: planned with other literals (a name no row has, a larger
    decimal) their estimates pick another join order or literal type, and such a plan is not reused."""
    cache = tpch_canopy_sf001.session.plan_cache
    hits = cache.hits
    for name, sql in QUERIES:
        for _ in range(3):
            _check(tpch_canopy_sf001, tpch_duckdb_sf001, name, sql)
    assert cache.hits - hits >= 4, "Q1, Q5, Q13 and Q15 should be served from the plan cache"


# Q6 and Q14 with other literals than the spec's: one cached shape, each answer its own.
OTHER_LITERALS = [
    ("Q06", "SELECT SUM(l_extendedprice * l_discount) FROM lineitem WHERE l_shipdate >= DATE '{d}' "
            "AND l_shipdate < DATE '{d}' + INTERVAL '1' YEAR AND l_discount BETWEEN {lo} AND {hi} "
            "AND l_quantity < {q}",
     [dict(d="1994-01-01", lo="0.05", hi="0.07", q=24), dict(d="1994-01-01", lo="0.02", hi="0.04", q=30),
      dict(d="1994-01-01", lo="0.00", hi="0.09", q=2), dict(d="1994-01-01", lo="0.09", hi="0.01", q=50)]),
    ("names", "SELECT n_name, COUNT(*) FROM nation JOIN region ON n_regionkey = r_regionkey "
              "WHERE r_name = '{r}' GROUP BY n_name ORDER BY n_name",
     [dict(r="ASIA"), dict(r="EUROPE"), dict(r="NOWHERE"), dict(r="AMERICA")]),
]


@pytest.mark.parametrize("name, template, bindings", OTHER_LITERALS, ids=[n for n, *_ in OTHER_LITERALS])
def test_other_literals_reuse_the_cached_shape(name, template, bindings, tpch_canopy_sf001, tpch_duckdb_sf001):
    cache = tpch_canopy_sf001.session.plan_cache
    hits = cache.hits
    for values in bindings:
        _check(tpch_canopy_sf001, tpch_duckdb_sf001, name, template.format(**values))
    assert cache.hits - hits == len(bindings) - 2     # seen once, templated on the second, then hits
