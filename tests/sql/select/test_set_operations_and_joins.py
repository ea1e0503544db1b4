"""INTERSECT / EXCEPT (DISTINCT and ALL), FULL and RIGHT OUTER JOIN, JOIN ... USING, NATURAL JOIN and
parenthesised joins, checked against DuckDB on small tables full of NULLs and duplicates, sharded on
different columns (so the plans move rows), plus a reference table and an empty one."""
import doctest

import numpy as np
import pyarrow as pa
import pytest

import engine.plan.set_operations
from oracle import canopy_and_duckdb


def _column(rng, n, high, null_every):
    values = rng.integers(0, high, n)
    return pa.array(values, mask=(np.arange(n) % null_every == 0))


@pytest.fixture(scope="module")
def both():
    rng = np.random.default_rng(13)
    t = pa.table({"a": _column(rng, 300, 12, 7), "b": pa.array(rng.choice(["x", "y", "z", None], 300)),
                  "c": pa.array(rng.integers(0, 5, 300), pa.int32())})
    u = pa.table({"a": pa.array(_column(rng, 200, 15, 5), pa.int32()), "b": pa.array(rng.choice(["x", "y", "w", None], 200)),
                  "d": pa.array(rng.integers(0, 5, 200), pa.int32())})
    r = pa.table({"a": pa.array([1, 2, 2, 40, None], pa.int32()), "e": pa.array([1, 2, 2, 3, 4], pa.int32())})
    empty = pa.table({"a": pa.array([], pa.int64()), "b": pa.array([], pa.string())})
    con, duck = canopy_and_duckdb("CREATE TABLE t (a BIGINT, b VARCHAR(4), c INT, SHARD KEY (a))", "t", t)
    for name, ddl, data in [("u", "CREATE TABLE u (a INT, b VARCHAR(4), d INT, SHARD KEY (b))", u),
                            ("r", "CREATE REFERENCE TABLE r (a INT, e INT)", r),
                            ("empty", "CREATE TABLE empty (a BIGINT, b VARCHAR(4), SHARD KEY (a))", empty)]:
        con.execute(ddl)
        con.load_table(name, data)
        duck.register(name, data)
    yield con, duck
    con.close()


def _same(con, duck, sql, ordered=False):
    got, expected = con.execute(sql).fetchall(), duck.execute(sql).fetchall()
    if not ordered:
        got, expected = sorted(got, key=repr), sorted(expected, key=repr)
    assert got == expected, sql
    assert expected or "empty" in sql, f"the oracle returned no rows: the test of {sql} is vacuous"


SET_OPERATIONS = [
    "SELECT a, b FROM t {op} SELECT a, b FROM u",
    "SELECT b FROM t {op} SELECT b FROM u",
    "SELECT a FROM u {op} SELECT a FROM t",
    "SELECT a, c FROM t {op} SELECT a, e FROM r",
    "SELECT a, b FROM t {op} SELECT a, b FROM empty",
    "SELECT a, b FROM t WHERE c < 2 {op} SELECT a, b FROM t WHERE c > 1",
]
OPERATORS = ["INTERSECT", "INTERSECT ALL", "EXCEPT", "EXCEPT ALL"]


@pytest.mark.parametrize("op", OPERATORS)
@pytest.mark.parametrize("template", SET_OPERATIONS)
def test_set_operation_matches_duckdb(both, template, op):
    _same(*both, template.format(op=op))


@pytest.mark.parametrize("sql", [
    # INTERSECT binds tighter than UNION and EXCEPT; parentheses override
    "SELECT a FROM t UNION SELECT a FROM r INTERSECT SELECT a FROM u",
    "(SELECT a FROM t UNION ALL SELECT a FROM r) INTERSECT ALL SELECT a FROM u",
    "SELECT c FROM t EXCEPT SELECT d FROM u WHERE d > 2 EXCEPT SELECT e FROM r WHERE e > 3",
    "SELECT a FROM t EXCEPT ALL (SELECT a FROM u EXCEPT ALL SELECT a FROM r)",
    "SELECT count(*), count(a) FROM (SELECT a, b FROM t INTERSECT ALL SELECT a, b FROM u) s",
    "SELECT b, count(*) FROM (SELECT a, b FROM t EXCEPT ALL SELECT a, b FROM u) s GROUP BY b",
    "SELECT * FROM (SELECT a FROM t INTERSECT SELECT a FROM u) s WHERE a > 3",
    "SELECT NULL INTERSECT SELECT NULL",
    "SELECT 1.5 EXCEPT SELECT 1",
])
def test_composed_set_operations(both, sql):
    _same(*both, sql)


def test_set_operation_order_and_limit(both):
    # NULLs sort first in Canopy (MySQL) and last in DuckDB: keep them out of the ordered results
    _same(*both, "SELECT a, b FROM t WHERE a IS NOT NULL AND b IS NOT NULL INTERSECT ALL SELECT a, b FROM u "
                 "ORDER BY a DESC, b LIMIT 5", ordered=True)
    _same(*both, "SELECT c FROM t EXCEPT SELECT d FROM u WHERE d > 1 ORDER BY 1", ordered=True)


def test_set_operation_column_types_unify(both):
    con, _ = both
    cur = con.execute("SELECT a FROM u INTERSECT SELECT 2.5")
    assert cur.fetchall() == []
    assert cur.description[0][1] == "DECIMAL"


def test_set_operation_column_count_mismatch(both):
    con, _ = both
    with pytest.raises(Exception, match="INTERSECT have 2 and 1 columns"):
        con.execute("SELECT a, b FROM t INTERSECT SELECT a FROM u")


JOINS = [
    "SELECT t.a, t.b, u.b, u.d FROM t FULL OUTER JOIN u ON t.a = u.a",
    "SELECT t.a, t.c, u.a, u.d FROM t FULL JOIN u ON t.a = u.a AND t.c < u.d",
    "SELECT t.b, u.b FROM t FULL JOIN u ON t.b = u.b AND t.c = 1",
    "SELECT t.a, r.e FROM t FULL JOIN r ON t.a = r.a",
    "SELECT t.a, e.b FROM t FULL JOIN empty e ON t.a = e.a",
    "SELECT e.a, t.b FROM empty e FULL JOIN t ON t.a = e.a",
    "SELECT x.a, y.a FROM t x FULL JOIN t y ON x.a = y.a AND x.c = y.c",
    "SELECT r.a, r.e, u.d FROM r FULL JOIN u ON r.a < u.d",
    "SELECT count(*), count(t.a), count(u.a) FROM t FULL JOIN u ON t.a = u.a WHERE u.d IS NULL OR t.c > 2",
    "SELECT t.a, t.c, u.d FROM t RIGHT JOIN u ON t.a = u.a AND t.c = u.d",
    "SELECT t.a, u.a, r.e FROM t RIGHT JOIN u ON t.a = u.a LEFT JOIN r ON r.a = u.a",
    "SELECT * FROM t JOIN u USING (a)",
    "SELECT * FROM t LEFT JOIN u USING (a, b)",
    "SELECT b, t.a, t.c, u.a, u.d FROM t RIGHT JOIN u USING (b)",
    "SELECT * FROM t FULL JOIN u USING (a)",
    "SELECT a, t.a, u.a, count(*) FROM t FULL JOIN u USING (a) GROUP BY a, t.a, u.a",
    "SELECT * FROM t NATURAL JOIN u",
    "SELECT * FROM t NATURAL FULL JOIN u",
    "SELECT * FROM t JOIN u USING (a, b) JOIN r USING (a)",
    "SELECT * FROM t FULL JOIN u USING (a) FULL JOIN r USING (a)",
    "SELECT * FROM (t AS x CROSS JOIN r y) WHERE x.c = 1",
    "SELECT t.c, u.d, r.e FROM t JOIN (u JOIN r ON u.a = r.a) ON t.a = u.a",
    "SELECT t.c, u.d, r.e FROM t LEFT JOIN (u JOIN r ON u.a = r.a) ON t.a = r.a",
]


@pytest.mark.parametrize("sql", JOINS)
def test_join_matches_duckdb(both, sql):
    _same(*both, sql)


@pytest.mark.parametrize("sql, columns, listed", [
    # MySQL's order: the merged columns, then the left table's others, then the right table's
    # (DuckDB orders them otherwise: its rows are read through the explicit list ``listed``)
    ("SELECT * FROM t FULL JOIN u USING (a)", "a b c b d", "a, t.b, t.c, u.b, u.d"),
    ("SELECT * FROM t JOIN u USING (b)", "b a c a d", "b, t.a, t.c, u.a, u.d"),
    ("SELECT * FROM u NATURAL JOIN t", "a b d c", "a, b, u.d, t.c"),
    ("SELECT * FROM t JOIN u USING (a, b) JOIN r USING (a)", "a b c d e", "a, b, t.c, u.d, r.e"),
    ("SELECT * FROM r JOIN (t JOIN u USING (b)) ON r.a = t.a", "a e b a c a d", "r.a, r.e, b, t.a, t.c, u.a, u.d"),
    # ... and a RIGHT JOIN's is a LEFT JOIN's with the tables swapped
    ("SELECT * FROM t RIGHT JOIN u USING (b)", "b a d a c", "b, u.a, u.d, t.a, t.c"),
])
def test_star_shows_the_merged_columns_once_and_first(both, sql, columns, listed):
    con, duck = both
    assert " ".join(d[0] for d in con.execute(sql).description) == columns
    got = sorted(con.execute(sql).fetchall(), key=repr)
    assert got == sorted(duck.execute(sql.replace("*", listed, 1)).fetchall(), key=repr)


def test_using_errors(both):
    con, _ = both
    with pytest.raises(Exception, match="unknown column 'e' in the USING clause"):
        con.execute("SELECT * FROM t JOIN u USING (e)")
    with pytest.raises(Exception, match="ambiguous"):
        con.execute("SELECT a FROM t JOIN u ON t.a = u.a")


def _explain(con, sql):
    return "\n".join(row[0] for row in con.execute("EXPLAIN " + sql).fetchall())


def test_explain_set_operation_repartitions_on_all_columns(both):
    con, _ = both
    plan = _explain(con, "SELECT a, c FROM t INTERSECT SELECT a, d FROM u")
    assert "UnionAll  [leaves]" in plan
    assert "aggs=[count(l), count(r)]" in plan
    assert "Exchange repartition by [a#" in plan or "Exchange gather" in plan
    # a string column groups by its collation key, an expression: partial counts, states moved
    plan = _explain(con, "SELECT a, b FROM t INTERSECT SELECT a, b FROM u")
    assert "keys=[a, collation_key(b)] aggs=[count(l), count(r), any_value(b)]" in plan
    # both inputs hashed on the first column already (t is sharded on a): counted where they are
    sql = "SELECT a, c FROM t WHERE c > 1 INTERSECT ALL SELECT a, c FROM t WHERE c < 3"
    assert "Exchange repartition" not in _explain(con, sql)
    _same(*both, sql)


def test_set_operation_groups_are_estimated_from_the_inputs_columns(both):
    con, _ = both
    con.execute("ANALYZE TABLE t")
    con.execute("ANALYZE TABLE u")
    # a handful of distinct (b, c) values: aggregated where the rows are, not shuffled row by row
    plan = _explain(con, "SELECT b, c FROM t INTERSECT SELECT b, d FROM u")
    assert "HashAggregate partial keys=[collation_key(b), c] aggs=[count(l), count(r), any_value(b)]" in plan, plan


def test_explain_full_join_repartitions_both_sides(both):
    con, _ = both
    plan = _explain(con, "SELECT t.c, u.d FROM t FULL JOIN u ON t.b = u.b")
    assert "HashJoin full ON" in plan and "[repartition]" in plan
    # u is sharded on b, placed by b's collation keys (the keys the join matches, 'x' = 'X'): only t moves
    assert plan.count("Exchange repartition") == 1
    assert "Exchange repartition by [lkey0" in plan, plan
    plan = _explain(con, "SELECT x.c, y.c FROM t x FULL JOIN t y ON x.a = y.a")
    assert "[colocated]" in plan and "Exchange repartition" not in plan
    plan = _explain(con, "SELECT t.c, r.e FROM t FULL JOIN r ON t.a = r.a")
    assert "Exchange broadcast" not in plan                # a reference table is not joined locally either


def test_set_operation_doctest():
    assert doctest.testmod(engine.plan.set_operations).failed == 0
