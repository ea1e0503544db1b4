"""Which aggregates read their input's store instead of its rows is the planner's choice, made once the
stages are known (engine.optimizer.stored_aggregates), and is in the plan: the operator no longer
looks at its input at run time to decide."""
import numpy as np
import pyarrow as pa
import pytest

import engine
from engine.exec.aggregate_mode import AggregateMode
from engine.exec.operators.hash_aggregate import HashAggregateExec
from engine.sql.parser import parse
from engine.sql.query import plan_query


@pytest.fixture(scope="module")
def con():
    con = engine.connect()
    con.execute("CREATE TABLE t (k BIGINT, v BIGINT, SHARD KEY (v))")
    con.load_table("t", pa.table({"k": np.arange(1000) % 7, "v": np.arange(1000)}))
    yield con
    con.close()


def aggregates(con, sql):
    session = con.session
    planned = plan_query(parse(sql)[0].node, session.catalog, session.database, session.statistics, 8)

    def walk(op):
        return ([op] if isinstance(op, HashAggregateExec) else []) + [a for c in op.children for a in walk(c)]
    return [(a.mode, a.stored) for stage in planned.stages for a in walk(stage.root)]


@pytest.mark.parametrize("sql, expected, rows", [
    ("SELECT COUNT(*), MAX(v) FROM t", [(AggregateMode.PARTIAL, "metadata"), (AggregateMode.FINAL, "")],
     [(1000, 999)]),
    ("SELECT k, COUNT(*) FROM t GROUP BY k ORDER BY k", [(AggregateMode.PARTIAL, "key counts"), (AggregateMode.FINAL, "")],
     [(k, len(range(k, 1000, 7))) for k in range(7)]),
    # SUM is not answered from the store; a filter is not a bare scan for the key counts
    ("SELECT k, SUM(v) FROM t GROUP BY k ORDER BY k", [(AggregateMode.PARTIAL, ""), (AggregateMode.FINAL, "")],
     [(k, sum(range(k, 1000, 7))) for k in range(7)]),
    ("SELECT k, COUNT(*) FROM t WHERE v + 1 > 500 GROUP BY k ORDER BY k", [(AggregateMode.PARTIAL, ""), (AggregateMode.FINAL, "")],
     [(k, len([v for v in range(k, 1000, 7) if v + 1 > 500])) for k in range(7)]),
])
def test_stored_access_is_in_the_plan(con, sql, expected, rows):
    assert aggregates(con, sql) == expected
    assert [tuple(int(x) for x in r) for r in con.execute(sql).fetchall()] == rows
