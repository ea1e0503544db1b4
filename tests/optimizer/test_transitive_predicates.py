"""Transitive predicates across equi-joins: the derivations on expressions, then on TPC-H (SF 0.01), where
the EXPLAIN text shows the derived filter in the other table's scan and the results match DuckDB."""
import doctest

import pytest

from engine import types as T
from engine.optimizer.rules import transitive_predicates as rule
from engine.optimizer.rules.transitive_predicates import implied_predicates
from engine.core.expressions import Call, ColumnRef, Literal

x, y, z = (ColumnRef(n, T.BIGINT) for n in "xyz")


def eq(a, b):
    return Call("eq", (a, b), T.BOOLEAN)


def lit(v):
    return Literal(v, T.BIGINT)


def strs(predicates) -> list[str]:
    return [str(p) for p in predicates]


def test_a_filter_on_a_join_key_holds_for_the_other_key():
    range_ = Call("and", (Call("ge", (x, lit(3)), T.BOOLEAN), Call("lt", (x, lit(9)), T.BOOLEAN)), T.BOOLEAN)
    in_list = Call("in_list", (x,), T.BOOLEAN, ((1, 2), False))
    assert strs(implied_predicates([eq(x, y)], {"x": [range_, in_list]})) == \
        ["((y >= 3) AND (y < 9))", "(y IN (1, 2))"]


def test_equal_columns_give_the_missing_join_options():
    assert strs(implied_predicates([eq(x, y), eq(y, z)], {})) == ["(x = z)"]
    assert implied_predicates([eq(x, y), eq(y, z), eq(z, x)], {}) == []


def test_nothing_is_derived_twice_or_from_what_is_not_a_comparison():
    known = {"x": [eq(x, lit(5))], "y": [eq(y, lit(5))]}
    assert implied_predicates([eq(x, y)], known) == []
    like = Call("like", (x, Literal("1%", T.TEXT)), T.BOOLEAN)
    function = Call("eq", (Call("mod", (x, lit(2)), T.BIGINT), lit(0)), T.BOOLEAN)
    known = {"x": []}
    for p in (like, function):
        rule._add_known(p, known)
    assert known["x"] == [] and implied_predicates([eq(x, y)], known) == []


def test_columns_of_different_kinds_are_not_equated():
    d = ColumnRef("d", T.DOUBLE, "d")
    assert implied_predicates([eq(x, d)], {"x": [eq(x, lit(5))]}) == []


def explain(con, sql: str) -> str:
    return "\n".join(row[0] for row in con.execute("EXPLAIN " + sql).fetchall())


CASES = [
    # a range on o_orderkey reaches the lineitem scan as a range on l_orderkey
    ("SELECT COUNT(*), SUM(l_quantity) FROM orders JOIN lineitem ON o_orderkey = l_orderkey "
     "WHERE o_orderkey < 2000", "Scan lineitem", "(l_orderkey < 2000)"),
    # an IN list on n_nationkey reaches both supplier and customer through two equalities
    ("SELECT COUNT(*) FROM nation, supplier, customer WHERE n_nationkey = s_nationkey "
     "AND s_nationkey = c_nationkey AND n_nationkey IN (3, 7)", "Scan customer", "(c_nationkey IN (3, 7))"),
]


@pytest.mark.parametrize("sql, scan, derived", CASES, ids=["range", "in-list"])
def test_tpch_derived_filters_reach_the_scans(tpch_canopy_sf001, tpch_duckdb_sf001, sql, scan, derived):
    line = next(line for line in explain(tpch_canopy_sf001, sql).splitlines() if line.lstrip().startswith(scan))
    assert derived in line
    assert tpch_canopy_sf001.execute(sql).fetchall() == [tuple(r) for r in tpch_duckdb_sf001.execute(sql).fetchall()]


def test_doctests():
    assert doctest.testmod(rule).failed == 0
