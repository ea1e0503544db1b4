"""Estimates through the Estimator on bound plans, against the true row counts.

Workload g of ../shared/bench/WORKLOADS.md: 326,662 rows of ``v`` with a few very frequent and a few
very rare values, shuffled. Issue 7 asks for a q-error (max(est/true, true/est)) of at most 1.05 on
every ``v = k`` and 1.5 on the ranges, ``<>`` and IN. DuckDB and DataFusion estimate rows/NDV for every
value and are off by 15,556x on ``v = 5``.
"""
import re

import numpy as np
import pyarrow as pa
import pytest

import engine
from engine.optimizer import optimize_logical
from engine.optimizer.cardinality import Estimator
from engine.optimizer.context import OptimizerContext
from engine.plan.binder import Binder
from engine.plan.logical import Aggregate, Filter, Join, LogicalPlan, Scan
from engine.sql.parser import parse

COUNTS = {1: 320000, 2: 320, 3: 352, 4: 256, 5: 1, 6: 512, 7: 512, 8: 544, 9: 512, 10: 608, 11: 3, 12: 608,
          13: 576, 14: 288, 15: 288, 16: 288, 17: 160, 18: 352, 19: 2, 20: 480}
V = np.repeat(np.array(list(COUNTS), dtype=np.int32), list(COUNTS.values()))
assert len(V) == 326_662


def q_error(estimate: float, actual: float) -> float:
    estimate, actual = max(estimate, 1.0), max(actual, 1.0)
    return max(estimate / actual, actual / estimate)


@pytest.fixture(scope="module")
def g():
    con = engine.connect()
    con.execute("CREATE TABLE g (v INT)")
    rng = np.random.default_rng(6)
    table = con.session.catalog.table("canopy", "g")
    con.session.runner.insert(table, pa.table({"v": pa.array(rng.permutation(V))}))
    con.execute("ANALYZE TABLE g")
    return con


def estimate(con, sql: str, optimized: bool = False) -> tuple[float, str, LogicalPlan]:
    """Rows the Estimator gives the first filter, join or aggregate of ``sql``'s bound plan (after the
    logical rewrites when ``optimized``: joins are ordered there), and the estimate's source."""
    session = con.session
    for attempt in range(2):
        root = Binder(session.catalog, session.database).bind_statement(parse(sql)[0].node).root
        estimator = Estimator(session.statistics)
        if optimized:
            root = optimize_logical(root, OptimizerContext(estimator))
        node = _first(root, (Filter, Join, Aggregate))
        rows, source = estimator.rows(node), estimator.source(node)
        # the first estimate of a column not analyzed yet rests on its quick statistics while its
        # histogram is collected in the background: estimate again from the histogram
        session.statistics.wait()
    return rows, source, node


def _first(plan, kinds):
    if isinstance(plan, kinds):
        return plan
    for child in plan.inputs:
        found = _first(child, kinds)
        if found is not None:
            return found
    return None


@pytest.mark.parametrize("k", list(COUNTS) + [0, 21])
def test_every_equality_within_5_percent(g, k):
    rows, source, _ = estimate(g, f"SELECT * FROM g WHERE v = {k}")
    assert source == "histogram"
    assert q_error(rows, COUNTS.get(k, 0)) <= 1.05, (k, rows)


RANGES = {
    "v < 3": V < 3,
    "v BETWEEN 2 AND 4": (V >= 2) & (V <= 4),
    "v > 10": V > 10,
    "v <> 1": V != 1,
    "v IN (5, 11, 19)": np.isin(V, [5, 11, 19]),
    "v NOT IN (1, 2)": ~np.isin(V, [1, 2]),
    "CAST(v AS DECIMAL(10, 2)) >= 19.5": V >= 19.5,
    "v >= 3 AND v < 3": V < 0,
    "(v = 5 OR v = 11)": np.isin(V, [5, 11]),
    "NOT (v < 20)": V >= 20,
    # conjuncts on one column that imply each other (a factored OR's or a transitive predicate's
    # IN list beside the equality it came from) are one set of values, not independent filters
    "v IN (2, 3) AND v = 3": V == 3,
    "v IN (2, 3, 4) AND v IN (3, 4, 6)": np.isin(V, [3, 4]),
    "v IN (2, 3, 4) AND v >= 3": np.isin(V, [3, 4]),
    "v IN (1, 2) AND v BETWEEN 2 AND 9": V == 2,
}


@pytest.mark.parametrize("where", list(RANGES))
def test_ranges_in_and_inequality_within_half(g, where):
    rows, source, _ = estimate(g, f"SELECT * FROM g WHERE {where}")
    assert source == "histogram"
    assert q_error(rows, RANGES[where].sum()) <= 1.5, (where, rows)


def test_group_by_estimate_is_the_ndv(g):
    rows, source, node = estimate(g, "SELECT v, COUNT(*) FROM g GROUP BY v")
    assert isinstance(node, Aggregate) and source == "ndv" and rows == pytest.approx(20)


@pytest.mark.parametrize("sql, actual", [
    # a filter below left v two values: v = 3 is v's rows among those, not among the table's
    ("SELECT * FROM (SELECT v FROM g WHERE v IN (2, 3)) s WHERE v = 3", COUNTS[3]),
    # through GROUP BY: the groups of v IN (2, 3, 6) that are 3 or 6
    ("SELECT * FROM (SELECT v, COUNT(*) AS c FROM g WHERE v IN (2, 3, 6) GROUP BY v) s WHERE v IN (3, 6)", 2),
    # a tag column, a constant in each input of a union: one input's rows
    ("SELECT * FROM (SELECT v, 'a' AS tag FROM g UNION ALL SELECT v, 'b' AS tag FROM g) u WHERE tag = 'a'", len(V)),
])
def test_filter_on_values_a_filter_below_pinned(g, sql, actual):
    rows, _, node = estimate(g, sql)
    assert isinstance(node, Filter)
    assert q_error(rows, actual) <= 1.5, rows


def test_self_join_on_a_skewed_key_counts_the_frequent_values(g):
    # 320,000^2 rows come from v = 1 alone; rows/NDV would say 326,662^2 / 20 = 5.3e9
    actual = sum(c * c for c in COUNTS.values())
    rows, source, node = estimate(g, "SELECT * FROM g a JOIN g b ON a.v = b.v", optimized=True)
    assert isinstance(node, Join)
    assert source == "histogram"
    assert q_error(rows, actual) <= 1.05


def test_without_statistics_the_defaults_apply():
    class RowsOnly:            # a provider with no histograms: System R defaults, said so
        def table_rows(self, table):
            return 1000

        def column_ndv(self, table, column):
            return 10

    con = engine.connect()
    con.execute("CREATE TABLE t (v INT)")
    root = Binder(con.session.catalog, "canopy").bind_statement(
        parse("SELECT * FROM t WHERE v < 5 AND v = 3")[0].node).root
    estimator = Estimator(RowsOnly())
    node = _first(root, (Filter,))
    assert estimator.rows(node) == pytest.approx(1000 / 3 / 10)
    assert estimator.source(node) == "default"
    assert estimator.source(_first(root, (Scan,))) == "rows"


def test_q_error_table(g, capsys):
    """Print the workload g table (`pytest -s -k q_error_table`); the assertions are above."""
    wheres = [f"v = {k}" for k in COUNTS] + list(RANGES)[:5]
    truths = [COUNTS[k] for k in COUNTS] + [int(RANGES[w].sum()) for w in list(RANGES)[:5]]
    lines = []
    for where, actual in zip(wheres, truths):
        rows, source, _ = estimate(g, f"SELECT * FROM g WHERE {where}")
        lines.append(f"{where:<22} actual {actual:>7}  estimate {rows:>11.1f}  q-error {q_error(rows, actual):.3f}")
    with capsys.disabled():
        print("\n" + "\n".join(lines))
    assert len(lines) == 25


# -- TPC-H predicates (SF 0.01, the suite's shared load): estimates against COUNT(*) ------------------
TPCH_PREDICATES = [
    ("lineitem", "l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1995-01-01'"),
    ("lineitem", "l_discount BETWEEN 0.05 AND 0.07"),
    ("lineitem", "l_quantity < 24"),
    ("lineitem", "l_shipmode IN ('MAIL', 'SHIP')"),
    ("lineitem", "l_returnflag = 'R'"),
    ("lineitem", "l_shipinstruct <> 'DELIVER IN PERSON'"),
    ("orders", "o_orderdate < DATE '1995-03-15'"),
    ("orders", "o_orderpriority = '1-URGENT'"),
    ("part", "p_type LIKE 'PROMO%'"),
    ("part", "p_size IN (49, 14, 23, 45, 19, 3, 36, 9)"),
    ("part", "p_brand = 'Brand#23' AND p_container = 'MED BOX'"),
    ("customer", "c_mktsegment = 'BUILDING'"),
    ("customer", "c_acctbal > 0.00"),
]


@pytest.mark.parametrize("table, where", TPCH_PREDICATES, ids=[w for _, w in TPCH_PREDICATES])
def test_tpch_single_table_estimates(tpch_canopy_sf001, table, where):
    actual = tpch_canopy_sf001.execute(f"SELECT COUNT(*) FROM {table} WHERE {where}").fetchall()[0][0]
    rows, source, _ = estimate(tpch_canopy_sf001, f"SELECT * FROM {table} WHERE {where}")
    assert source == "histogram"
    assert q_error(rows, actual) <= 1.5, (rows, actual)


def test_tpch_explain_estimates_every_operator(tpch_canopy_sf001):
    """Every operator of the plan carries an estimate and its source."""
    from engine.workloads import tpch
    for name in ("q03", "q05", "q06", "q18"):
        lines = [r[0] for r in tpch_canopy_sf001.execute("EXPLAIN " + tpch.query(name)).fetchall()]
        for line in lines:
            assert re.search(r"\(est\. [\d,]+ rows: (rows|histogram|segment metadata|sample|ndv|default)\)$", line), (name, line)


@pytest.mark.parametrize("where, actual", [("a.v = 5", 1), ("a.v = 1", 320000 ** 2), ("a.v IN (5, 11)", 1 + 9)])
def test_join_on_a_key_pinned_by_a_filter(g, where, actual):
    rows, source, node = estimate(g, f"SELECT * FROM g a JOIN g b ON a.v = b.v WHERE {where}", optimized=True)
    assert isinstance(node, Join) and source == "histogram"
    assert q_error(rows, actual) <= 1.5, rows


# -- star schemas: a fact table's foreign keys into dimensions whose keys are unique ---------------------
@pytest.fixture(scope="module")
def star():
    """``d``: 20,000 rows, key ``k`` unique (a date dimension: most of its keys no fact row uses);
    ``f``: 60,000 rows whose ``dk`` takes 300 of them; ``item``: 400 rows whose (brand, klass, cat)
    take 400 combinations of 40 x 20 x 10 values (correlated columns of one table)."""
    rng = np.random.default_rng(17)
    con = engine.connect()
    con.execute("CREATE TABLE d (k BIGINT, y INT)")
    con.execute("CREATE TABLE f (dk BIGINT, ik BIGINT, x INT)")
    con.execute("CREATE TABLE item (ik BIGINT, brand INT, klass INT, cat INT)")
    k = np.arange(20_000)
    con.load_table("d", pa.table({"k": k, "y": (k // 365).astype(np.int32)}))
    con.load_table("f", pa.table({"dk": rng.choice(np.arange(5_000, 5_300), 60_000),
                                  "ik": rng.integers(0, 400, 60_000),
                                  "x": rng.integers(0, 100, 60_000).astype(np.int32)}))
    ik = np.arange(400)
    con.load_table("item", pa.table({"ik": ik, "brand": (ik // 10).astype(np.int32),
                                     "klass": (ik % 20).astype(np.int32), "cat": (ik // 3 % 10).astype(np.int32)}))
    for table in ("d", "f", "item"):
        con.execute(f"ANALYZE TABLE {table}")
    return con


@pytest.mark.parametrize("where", ["f.x < 10", "f.x < 90"])
def test_foreign_key_join_to_an_unfiltered_dimension_keeps_the_fact_rows(star, where):
    """Each fact row meets one dimension row: the join has the fact side's rows. Capping the unique key's
    distinct values by the 300 the fact column uses said 20,000 / 300 = 67 times as many (TPC-DS q64 and
    q72 joined date_dim unfiltered and were estimated at 17M rows for 37)."""
    sql = f"SELECT * FROM f JOIN d ON f.dk = d.k WHERE {where}"
    actual = star.execute(f"SELECT COUNT(*) FROM f JOIN d ON f.dk = d.k WHERE {where}").fetchall()[0][0]
    rows, _, node = estimate(star, sql, optimized=True)
    assert isinstance(node, Join)
    assert q_error(rows, actual) <= 1.5, (rows, actual)


def test_group_by_columns_of_one_table_has_at_most_its_rows(star):
    """GROUP BY three columns of ``item`` after the fact join: at most item's 400 rows of combinations,
    not the 40 x 20 x 10 = 8,000 the product of their NDVs says (TPC-DS q22: 42M groups for 9,000)."""
    sql = "SELECT brand, klass, cat, COUNT(*) FROM f JOIN item ON f.ik = item.ik GROUP BY brand, klass, cat"
    actual = len(star.execute(sql).fetchall())
    rows, _, node = estimate(star, sql, optimized=True)
    assert isinstance(node, Aggregate)
    assert q_error(rows, actual) <= 1.5, (rows, actual)


# -- semi and anti joins: the share of left rows with a match (issue 17) ------------------------------
@pytest.fixture(scope="module")
def returns(star):
    """``r``: 20,000 returns of the fact table ``f`` whose ``dk`` takes 100 of f's 300 values (a returns
    table's order numbers are a part of the sales' order numbers)."""
    rng = np.random.default_rng(23)
    star.execute("CREATE TABLE r (dk BIGINT)")
    star.load_table("r", pa.table({"dk": rng.choice(np.arange(5_000, 5_100), 20_000)}))
    star.execute("ANALYZE TABLE r")
    return star


SEMI_JOINS = [
    # a filtered fact semi-joined to a filtered dimension on its unique key: a third of f's dk values
    "SELECT * FROM f WHERE f.x < 10 AND f.dk IN (SELECT k FROM d WHERE d.k < 5100)",
    "SELECT * FROM f WHERE f.x < 10 AND EXISTS (SELECT 1 FROM r WHERE r.dk = f.dk)",
    # anti: the old estimate took every key of the filtered left side as found and kept 5%
    "SELECT * FROM f WHERE f.x < 10 AND NOT EXISTS (SELECT 1 FROM d WHERE d.k = f.dk AND d.k < 5100)",
    "SELECT * FROM f WHERE f.x < 10 AND NOT EXISTS (SELECT 1 FROM r WHERE r.dk = f.dk)",
    "SELECT * FROM f WHERE f.x < 10 AND f.dk NOT IN (SELECT dk FROM r)",
]


@pytest.mark.parametrize("sql", SEMI_JOINS)
def test_semi_and_anti_join_estimates_within_2x(returns, sql):
    """NDV(right keys) over the larger unfiltered key domain: q16's filtered catalog_sales anti-joined to
    catalog_returns was estimated at 5% of its rows where about 40% survive."""
    actual = returns.execute(f"SELECT COUNT(*) FROM ({sql}) s").fetchall()[0][0]
    rows, _, node = estimate(returns, sql, optimized=True)
    assert isinstance(node, Join) and node.kind in ("semi", "anti", "anti_null_aware"), node
    assert q_error(rows, actual) <= 2.0, (rows, actual)
