"""Subexpressions shared by a projection's expressions, or by an aggregate's arguments, are computed
once per batch (engine.exec.evaluate.shared_subexpressions / evaluate_arrays), and an aggregate state
equal to an earlier one (the SUM of AVG(x) beside SUM(x)) is accumulated once: the answers stay
DuckDB's, NULLs, CASE branches and several batches included, and a text read as a number still warns
once per mention (MySQL's count)."""
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

from engine.core.expressions import Call, ColumnRef, Literal
from engine.exec import evaluate as ev
from engine.types import BIGINT
from tests.oracle import assert_same_rows, canopy_and_duckdb

N = 5000
DDL = "CREATE TABLE t (g INT, a DECIMAL(12,2), b DECIMAL(12,2), x BIGINT, s VARCHAR(8))"


@pytest.fixture(scope="module")
def both():
    rng = np.random.default_rng(7)
    data = pa.table({
        "g": pa.array(rng.integers(0, 5, N), pa.int32()),
        "a": pa.array([Decimal(int(v)).scaleb(-2) for v in rng.integers(-10**6, 10**6, N)], pa.decimal128(12, 2)),
        "b": pa.array([None if v % 11 == 0 else Decimal(int(v % 100)).scaleb(-2) for v in rng.integers(0, 10**4, N)],
                      pa.decimal128(12, 2)),
        "x": pa.array(rng.integers(-50, 50, N), pa.int64(), mask=rng.random(N) < 0.1),
        "s": pa.array([["7", "12x", "abc", None][v] for v in rng.integers(0, 4, N)], pa.string()),
    })
    con, duck = canopy_and_duckdb(DDL, "t", data)
    yield con, duck
    con.close()
    duck.close()


QUERIES = [
    "SELECT g, SUM(a * (1 - b)), SUM(a * (1 - b) * (1 + b)), AVG(a), SUM(a), COUNT(b), AVG(b), COUNT(*), "
    "COUNT(*) + 0 FROM t GROUP BY g",
    "SELECT SUM(a * (1 - b)), SUM(a * (1 - b) * (1 + b)), SUM(a), AVG(a), MIN(x * 2), MAX(x * 2) FROM t",
    "SELECT a * (1 - b), a * (1 - b) * (1 + b), x * 2 + 1, x * 2 - 1 FROM t",
    "SELECT CASE WHEN x * 2 > 10 THEN x * 2 ELSE -(x * 2) END, x * 2 FROM t",
    "SELECT g, SUM(x * 2), SUM(CASE WHEN x * 2 > 0 THEN x * 2 END) FROM t WHERE x * 2 <> 4 GROUP BY g",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_shared_subexpressions_keep_duckdbs_answers(both, sql):
    con, duck = both
    # AVG: MySQL keeps 4 more digits of scale (DuckDB: a double)
    assert_same_rows(con.execute(sql).fetchall(), duck.execute(sql).fetchall(), rel=1e-5)


def test_a_text_read_as_a_number_warns_once_per_mention(both):
    con, _ = both
    where = " FROM t WHERE g = 1 AND x BETWEEN 7 AND 9"       # a few rows: under SHOW WARNINGS' 64
    once = con.execute("SELECT CAST(s AS SIGNED)" + where).fetchall()
    one = len(con.execute("SHOW WARNINGS").fetchall())
    assert 0 < one <= 32
    twice = con.execute("SELECT CAST(s AS SIGNED), CAST(s AS SIGNED) + 0" + where).fetchall()
    assert [r[0] for r in twice] == [r[0] for r in once]
    assert len(con.execute("SHOW WARNINGS").fetchall()) == 2 * one


def test_equal_calls_share_a_slot_and_are_computed_once():
    x = ColumnRef("x", BIGINT, "x")
    doubled = [Call("multiply", (x, Literal(2, BIGINT)), BIGINT) for _ in range(2)]     # equal, distinct
    exprs = [Call("add", (doubled[0], Literal(1, BIGINT)), BIGINT), Call("add", (doubled[1], x), BIGINT), x]
    slots = ev.shared_subexpressions(exprs)
    assert set(slots) == {id(doubled[0]), id(doubled[1])} and len(set(slots.values())) == 1
    assert ev.shared_subexpressions([x, Call("add", (x, x), BIGINT)]) == {}
    calls = []
    original = ev._FUNCTIONS["multiply"]
    ev._FUNCTIONS["multiply"] = lambda expr, *args: calls.append(expr) or original(expr, *args)
    try:
        batch = pa.record_batch([pa.array([1, None, 3])], names=["x"])
        got = ev.evaluate_arrays(exprs, batch, (), slots)
    finally:
        ev._FUNCTIONS["multiply"] = original
    assert len(calls) == 1
    assert [c.to_pylist() for c in got] == [[3, None, 7], [3, None, 9], [1, None, 3]]
