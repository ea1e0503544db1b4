"""All 99 TPC-DS queries on Canopy, each result checked against DuckDB's answer on the same data.

SF 0.1 runs in the default suite (embedded, and on Ray in ``make test-ray``); SF 1 is marked ``slow``.
The answers come from the generator (DuckDB 1.5.5, ``answers/qNN.parquet``); comparison rules:
``compare.py``. DuckDB's ``ORDER BY x`` puts NULLs last, MySQL's (Canopy's) first: each query is sent
with ``NULLS LAST`` written after the keys that do not say (``with_duckdb_null_order``).
"""
import pytest

import engine
from engine.workloads import tpcds
from tpcds.compare import assert_same_tpcds_result, with_duckdb_null_order

# THE one list to edit: each query that fails today for want of a feature, with the features it
# lacks in the words of the SQL, e.g. "q70": ("a window function in an IN (subquery)",). Marked
# xfail(strict=True, raises=NotSupportedError): whoever implements a feature sees XPASS for the
# queries it completes and removes them here (a query that then runs but answers wrongly fails
# outright, as it should). Empty since all 99 answer.
MISSING_FEATURE: dict[str, tuple[str, ...]] = {
}

QUERIES = tpcds.queries()
IDS = [name for name, _ in QUERIES]


def _cases():
    for name, sql in QUERIES:
        marks = ()
        if name in MISSING_FEATURE:
            marks = (pytest.mark.xfail(strict=True, raises=engine.NotSupportedError,
                                       reason="needs " + ", ".join(MISSING_FEATURE[name])),)
        yield pytest.param(name, sql, id=name, marks=marks)


CASES = list(_cases())


def _check(con, data_dir, name, sql):
    expected = tpcds.answer(data_dir, name).to_pylist()
    expected = [tuple(row.values()) for row in expected]
    # The answers sort NULLs last (DuckDB's default); Canopy speaks MySQL, so that order is written out.
    actual = con.execute(with_duckdb_null_order(sql)).fetchall()
    assert_same_tpcds_result(actual, expected, sql, label=name)


def test_every_entry_names_a_query_and_its_features():
    assert set(MISSING_FEATURE) <= set(IDS)
    assert all(isinstance(features, tuple) and features for features in MISSING_FEATURE.values())


@pytest.mark.parametrize("name, sql", CASES)
def test_tpcds_sf01(name, sql, tpcds_canopy_sf01, tpcds_dir_sf01):
    _check(tpcds_canopy_sf01, tpcds_dir_sf01, name, sql)


@pytest.mark.slow
@pytest.mark.parametrize("name, sql", CASES)
def test_tpcds_sf1(name, sql, tpcds_canopy_sf1, tpcds_dir_sf1):
    _check(tpcds_canopy_sf1, tpcds_dir_sf1, name, sql)
