"""The TPC-DS comparison must accept what shared/tpcds/README.md allows (tied rows in any order, a
LIMIT cutting through ties) and reject everything else."""
import pytest

from engine.workloads import tpcds
from tpcds.compare import Ordering, ResultMismatch, assert_same_tpcds_result, diff_tpcds, outer_ordering, \
    with_duckdb_null_order

SQL = "select k, v from t order by k limit 4"
EXPECTED = [(1, "a"), (2, "b"), (2, "c"), (3, "d")]


def test_identical_results_match():
    assert_same_tpcds_result(list(EXPECTED), EXPECTED, SQL)


def test_tied_rows_in_another_order_match():
    assert_same_tpcds_result([(1, "a"), (2, "c"), (2, "b"), (3, "d")], EXPECTED, SQL)


def test_rows_out_of_key_order_fail():
    with pytest.raises(ResultMismatch):
        assert_same_tpcds_result([(2, "b"), (1, "a"), (2, "c"), (3, "d")], EXPECTED, SQL)


def test_wrong_value_in_a_tie_fails():
    with pytest.raises(ResultMismatch, match="col 1"):
        assert_same_tpcds_result([(1, "a"), (2, "b"), (2, "x"), (3, "d")], EXPECTED, SQL)


def test_limit_cutting_through_ties_compares_only_the_keys_of_the_last_run():
    expected = [(1, "a"), (3, "d"), (3, "e")]
    sql = "select k, v from t order by k limit 3"
    assert_same_tpcds_result([(1, "a"), (3, "f"), (3, "g")], expected, sql)
    with pytest.raises(ResultMismatch):                              # but not before it
        assert_same_tpcds_result([(1, "z"), (3, "d"), (3, "e")], expected, sql)
    with pytest.raises(ResultMismatch):                              # nor without a cut
        assert_same_tpcds_result([(1, "a"), (3, "f"), (3, "g")], expected, "select k, v from t order by k")


def test_unordered_results_are_compared_as_multisets():
    sql = "select k, v from t"
    assert_same_tpcds_result(list(reversed(EXPECTED)), EXPECTED, sql)
    with pytest.raises(ResultMismatch, match="row count"):
        assert_same_tpcds_result(EXPECTED[:3], EXPECTED, sql)


def test_sort_keys_found_by_alias_position_and_expression():
    ordering = outer_ordering('select a as "x y", b, sum(c) from t group by a, b order by "x y", 2, sum(c) desc limit 10')
    assert ordering == Ordering((0, 1, 2), 3, 10)
    assert outer_ordering("select a from t") is None
    union = outer_ordering("select a, b from t union all select c, d from u order by b")
    assert union == Ordering((1,), 1, None)


def test_a_key_not_selected_leaves_coarser_runs():
    ordering = outer_ordering("select a, b from t order by a, c")
    assert ordering.key_columns == (0,)
    assert diff_tpcds([(1, "y"), (1, "x")], [(1, "x"), (1, "y")], ordering) == []


def test_every_query_has_an_ordering_we_understand():
    for name, sql in tpcds.queries():
        ordering = outer_ordering(sql)
        if ordering is not None:
            assert ordering.key_columns, f"{name}: no sort key found in the output"


def test_duckdb_null_order_is_written_out_where_unsaid():
    sql = ("select a, rank() over (partition by b order by c desc, d) r from t "
           "where x in (select y from u order by y limit 1) order by a nulls first, r limit 100")
    assert with_duckdb_null_order(sql) == (
        "select a, rank() over (partition by b order by c desc NULLS LAST, d NULLS LAST) r from t "
        "where x in (select y from u order by y NULLS LAST limit 1) order by a nulls first, r NULLS LAST limit 100")
    assert with_duckdb_null_order("select 'order by' from t") == "select 'order by' from t"
