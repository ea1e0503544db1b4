"""The TPC-H result comparison must accept what the README allows and reject everything else."""
import datetime
from decimal import Decimal

import pytest

from engine.workloads import tpch
from tpch.compare import ResultMismatch, assert_same_result, diff_results, has_order_by, values_match

EXPECTED = [
    ("A", "F", Decimal("380456.00"), 25.575154611454693, datetime.date(1995, 3, 11), 14876),
    ("N", "O", Decimal("7305.10"), 25.5, datetime.date(1996, 1, 2), 3),
]


def test_identical_results_match():
    assert diff_results(EXPECTED, list(EXPECTED), ordered=True) == []


def test_wrong_value_fails():
    actual = [EXPECTED[0], ("N", "O", Decimal("7305.10"), 25.5, datetime.date(1996, 1, 2), 4)]
    with pytest.raises(ResultMismatch, match=r"row 1: col 5: 4 != expected 3"):
        assert_same_result(actual, EXPECTED, ordered=True)


def test_missing_row_fails_ordered_and_unordered():
    for ordered in (True, False):
        with pytest.raises(ResultMismatch, match="row count: actual 1 != expected 2"):
            assert_same_result(EXPECTED[:1], EXPECTED, ordered=ordered)


def test_extra_row_fails():
    with pytest.raises(ResultMismatch, match="row count: actual 3 != expected 2"):
        assert_same_result(EXPECTED + [EXPECTED[0]], EXPECTED, ordered=False)


def test_swapped_order_fails_only_when_ordered():
    swapped = [EXPECTED[1], EXPECTED[0]]
    with pytest.raises(ResultMismatch):
        assert_same_result(swapped, EXPECTED, ordered=True)
    assert_same_result(swapped, EXPECTED, ordered=False)


def test_duplicate_rows_count_when_unordered():
    with pytest.raises(ResultMismatch):
        assert_same_result([EXPECTED[0], EXPECTED[0]], EXPECTED, ordered=False)


def test_column_count_mismatch_fails():
    with pytest.raises(ResultMismatch, match="columns"):
        assert_same_result([row[:-1] for row in EXPECTED], EXPECTED, ordered=True)


@pytest.mark.parametrize("actual, expected", [
    (1.0000005, 1.0),                                # within 1e-6 relative
    (Decimal("1161099.4636"), 1161099.4636),         # decimal against float
    (Decimal("0.0501"), Decimal("0.0500")),          # one unit in the last place of scale 4
    (Decimal("0.050813"), 0.05081339),               # one unit at scale 6 against a double
    (Decimal("2.50"), Decimal("2.5000")),            # same number, different scales
    (14876, Decimal("14876")),
    (0, 0.0),
    (None, None),
    (datetime.date(1995, 3, 11), "1995-03-11"),      # dates as ISO text
    ("BUILDING  ", "BUILDING"),                      # CHAR padding
])
def test_values_that_match(actual, expected):
    assert values_match(actual, expected)


@pytest.mark.parametrize("actual, expected", [
    (1.00001, 1.0),                                  # 1e-5 relative
    (Decimal("0.0502"), Decimal("0.0500")),          # two units in the last place
    (Decimal("7305.12"), Decimal("7305.10")),
    (None, 0),                                       # NULL equals only NULL
    (0, None),
    (None, ""),
    ("1", 1),                                        # text is not a number
    (datetime.date(1995, 3, 12), "1995-03-11"),
    (" BUILDING", "BUILDING"),                       # leading spaces are data
    ("building", "BUILDING"),
])
def test_values_that_differ(actual, expected):
    assert not values_match(actual, expected)


def test_order_by_detection_on_the_22_queries():
    unordered = {name for name, sql in tpch.queries() if not has_order_by(sql)}
    assert unordered == {"q06", "q14", "q17", "q19"}


def test_order_by_in_subquery_only_is_unordered():
    assert not has_order_by("select * from (select a from t order by a limit 3) x")
    assert has_order_by("select a from t order by a")
