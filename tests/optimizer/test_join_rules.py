"""Plan-shape tests of the join rules on TPC-H queries (SF 0.01): the EXPLAIN text shows the rewrite."""
from engine.workloads import tpch

QUERIES = dict(tpch.queries())


def explain(con, name: str) -> str:
    return "\n".join(row[0] for row in con.execute("EXPLAIN " + QUERIES[name]).fetchall())


def _line_index(plan: str, fragment: str) -> int:
    return next(i for i, line in enumerate(plan.splitlines()) if fragment in line)


def test_q17_aggregates_only_the_parts_the_join_keeps(tpch_canopy_sf001):
    plan = explain(tpch_canopy_sf001, "q17")
    # the per-part average is computed over lineitems semi-joined with the filtered parts
    aggregate = max(i for i, line in enumerate(plan.splitlines())
                    if "HashAggregate" in line and "keys=[l_partkey]" in line)
    semi = _line_index(plan, "HashJoin semi ON l_partkey = p_partkey")
    assert semi > aggregate


def test_q21_exists_checks_run_after_the_supplier_join(tpch_canopy_sf001):
    plan = explain(tpch_canopy_sf001, "q21")
    supplier_join = _line_index(plan, "HashJoin inner ON l_suppkey = s_suppkey")
    assert _line_index(plan, "HashJoin anti") < supplier_join
    assert _line_index(plan, "HashJoin semi") < supplier_join


def test_q19_or_factoring_makes_partkey_a_join_key(tpch_canopy_sf001):
    plan = explain(tpch_canopy_sf001, "q19")
    assert "HashJoin inner ON l_partkey = p_partkey" in plan
    assert "NestedLoop" not in plan


def test_q20_sums_only_the_lineitems_of_the_parts_the_semi_join_keeps(tpch_canopy_sf001):
    plan = explain(tpch_canopy_sf001, "q20")
    # the correlated SUM(l_quantity) groups lineitems semi-joined first with the 'forest%' partsupps
    aggregate = _line_index(plan, "keys=[l_partkey, l_suppkey]")
    semi = _line_index(plan, "HashJoin semi ON l_partkey = ps_partkey AND l_suppkey = ps_suppkey")
    assert semi > aggregate
