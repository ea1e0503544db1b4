"""All 99 TPC-DS queries on Canopy, each result checked against DuckDB's answer on the same data.

SF 0.1 runs in the default suite (embedded, and on Ray in ``make test-ray``); SF 1 is marked ``slow``.
The answers come from the generator (DuckDB 1.5.5, ``answers/qNN.parquet``); comparison rules:
``compare.py``.
"""
import pytest

import engine
from engine.workloads import tpcds
from tpcds.compare import assert_same_tpcds_result

# The features TPC-DS needs that Canopy lacks today, in the words of the SQL.
WINDOW = "window functions (OVER ...)"
STDDEV = "STDDEV_SAMP"
EXISTS_UNDER_OR = "EXISTS under OR"
IN_UNDER_OR = "IN (subquery) under OR"
SCALAR_IN_EXPRESSION = "correlated scalar subquery inside an expression"
NON_EQUI_CORRELATION = "correlated subquery with a non-equality correlation"

# THE one list to edit: each query that fails today for want of a feature, with every feature it
# lacks. Marked xfail(strict=True, raises=NotSupportedError): whoever implements a feature sees
# XPASS for the queries it completes and removes them here (a query that then runs but answers
# wrongly fails outright, as it should).
MISSING_FEATURE = {
    "q06": (SCALAR_IN_EXPRESSION,),
    "q10": (EXISTS_UNDER_OR,),
    "q12": (WINDOW,),
    "q17": (STDDEV,),
    "q20": (WINDOW,),
    "q35": (EXISTS_UNDER_OR,),
    "q36": (WINDOW,),
    "q39": (STDDEV,),
    "q41": (NON_EQUI_CORRELATION,),
    "q44": (WINDOW,),
    "q45": (IN_UNDER_OR,),
    "q47": (WINDOW,),
    "q49": (WINDOW,),
    "q51": (WINDOW,),
    "q53": (WINDOW,),
    "q57": (WINDOW,),
    "q63": (WINDOW,),
    "q67": (WINDOW,),
    "q70": (WINDOW,),
    "q86": (WINDOW,),
    "q89": (WINDOW,),
    "q98": (WINDOW,),
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
    actual = con.execute(sql).fetchall()
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
