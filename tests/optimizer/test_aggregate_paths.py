"""How each hash aggregate computes is the planner's choice, made once the stages are known
(engine.optimizer.aggregate_paths), and is in the plan: whether it reads its input's store instead of
its rows, its path over the rows (AggregatePath), the key columns it reads as stored dictionaries and
whether it presizes its table. The operator no longer looks at its input at run time to decide."""
import numpy as np
import pyarrow as pa
import pytest

import engine
from engine.exec.aggregate_mode import AggregateMode, AggregatePath
from engine.exec.operators.hash_aggregate import HashAggregateExec
from engine.sql.parser import parse
from engine.sql.query import plan_query

PARTIAL, FINAL, SINGLE = AggregateMode.PARTIAL, AggregateMode.FINAL, AggregateMode.SINGLE
KERNELS, ARROW, DISTINCT_COUNT, GROUP_IDS = (AggregatePath.KERNELS, AggregatePath.ARROW,
                                             AggregatePath.DISTINCT_COUNT, AggregatePath.GROUP_IDS)
SYMBOLS = np.array(["ab", "cd", "ef", "gh"])


@pytest.fixture(scope="module")
def con():
    con = engine.connect()
    con.execute("CREATE TABLE t (k BIGINT, v BIGINT, s VARCHAR(8), SHARD KEY (v))")
    con.load_table("t", pa.table({"k": np.arange(1000) % 7, "v": np.arange(1000),
                                  "s": SYMBOLS[np.arange(1000) % 4]}))
    yield con
    con.close()


def aggregates(con, sql):
    session = con.session
    planned = plan_query(parse(sql)[0].node, session.catalog, session.database, session.statistics, 8)

    def walk(op):
        return ([op] if isinstance(op, HashAggregateExec) else []) + [a for c in op.children for a in walk(c)]
    return [a for stage in planned.stages for a in walk(stage.root)]


@pytest.mark.parametrize("sql, expected, rows", [
    ("SELECT COUNT(*), MAX(v) FROM t", [(PARTIAL, "metadata", KERNELS), (FINAL, "", ARROW)],
     [(1000, 999)]),
    ("SELECT k, COUNT(*) FROM t GROUP BY k ORDER BY k", [(PARTIAL, "key counts", KERNELS), (FINAL, "", KERNELS)],
     [(k, len(range(k, 1000, 7))) for k in range(7)]),
    # SUM is not answered from the store; a filter is not a bare scan for the key counts
    ("SELECT k, SUM(v) FROM t GROUP BY k ORDER BY k", [(PARTIAL, "", KERNELS), (FINAL, "", KERNELS)],
     [(k, sum(range(k, 1000, 7))) for k in range(7)]),
    ("SELECT k, COUNT(*) FROM t WHERE v + 1 > 500 GROUP BY k ORDER BY k", [(PARTIAL, "", KERNELS), (FINAL, "", KERNELS)],
     [(k, len([v for v in range(k, 1000, 7) if v + 1 > 500])) for k in range(7)]),
    # DISTINCT aggregates: the kernels' distinct counters without keys, Arrow's group_by with them
    ("SELECT COUNT(DISTINCT k) FROM t", [(SINGLE, "", DISTINCT_COUNT), (SINGLE, "", KERNELS)], [(7,)]),
    ("SELECT k, COUNT(DISTINCT v % 3) FROM t GROUP BY k ORDER BY k", [(SINGLE, "", ARROW)],
     [(k, 3) for k in range(7)]),
])
def test_the_path_is_in_the_plan(con, sql, expected, rows):
    assert [(a.mode, a.stored, a.path) for a in aggregates(con, sql)] == expected
    assert [tuple(int(x) for x in r) for r in con.execute(sql).fetchall()] == rows


def test_extended_aggregates_go_by_group_ids(con):
    sql = "SELECT k, VAR_POP(v) FROM t GROUP BY k ORDER BY k"
    assert {a.path for a in aggregates(con, sql)} == {GROUP_IDS}
    got = con.execute(sql).fetchall()
    assert [k for k, _ in got] == list(range(7))
    for k, variance in got:
        assert variance == pytest.approx(np.var(np.arange(k, 1000, 7)))


def test_string_keys_read_as_stored_dictionaries_and_explain_says_so(con):
    sql = "SELECT s, SUM(v) FROM t GROUP BY s ORDER BY s"
    partial = next(a for a in aggregates(con, sql) if a.mode == PARTIAL)
    assert partial.path == KERNELS and len(partial.coded) == 1
    # the key column's id; read beside SUM's argument, v is not coded
    assert partial.coded[0] in {f.id for f in partial.input.fields if f.name == "s"}
    plan = "\n".join(r[0] for r in con.execute("EXPLAIN " + sql).fetchall())
    assert "path=kernels coded=[" in plan, plan
    assert con.execute(sql).fetchall() == [(s, sum(range(i, 1000, 4))) for i, s in enumerate(SYMBOLS)]


def test_one_key_over_an_exchange_is_presized(con):
    sql = "SELECT k, SUM(v) FROM t GROUP BY k"
    final = next(a for a in aggregates(con, sql) if a.mode == FINAL)
    partial = next(a for a in aggregates(con, sql) if a.mode == PARTIAL)
    assert final.presize and not partial.presize
