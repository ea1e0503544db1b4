"""WITH RECURSIVE (engine/plan/recursive_ctes.py, run by engine/sql/query.py run_recursive): series,
hierarchies, graph walks with UNION DISTINCT, against DuckDB's answers on the same tree; MySQL's
rules and errors for the recursive part and cte_max_recursion_depth."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import engine
from tests.oracle import assert_same_rows, canopy_and_duckdb

# a random forest of 300 nodes (each parent id below its child's) and a graph with cycles
_rng = np.random.default_rng(7)
_ids = np.arange(1, 301)
_parents = np.where(_ids <= 5, 0, _rng.integers(1, np.maximum(_ids, 2)))
TREE = pa.table({"id": pa.array(_ids, pa.int64()),
                 "parent": pa.array([None if p == 0 else int(p) for p in _parents], pa.int64()),
                 "w": pa.array(_rng.integers(1, 10, 300), pa.int64())})


@pytest.fixture(scope="module")
def both():
    con, duck = canopy_and_duckdb("CREATE TABLE tree (id BIGINT, parent BIGINT, w BIGINT, SHARD KEY (id))",
                                  "tree", TREE)
    yield con, duck
    con.close()
    duck.close()


QUERIES = [
    # a number series
    "WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 100) "
    "SELECT COUNT(*), SUM(n), MAX(n) FROM s",
    # every node with its depth and path weight from its root
    "WITH RECURSIVE walk AS (SELECT id, 0 AS depth, w AS total FROM tree WHERE parent IS NULL "
    "UNION ALL SELECT t.id, walk.depth + 1, walk.total + t.w FROM tree t JOIN walk ON t.parent = walk.id) "
    "SELECT id, depth, total FROM walk",
    # descendants of a few nodes, counted per ancestor (the recursive result joined and grouped)
    "WITH RECURSIVE down(top, id) AS (SELECT id, id FROM tree WHERE id IN (1, 2, 3, 40) "
    "UNION ALL SELECT down.top, t.id FROM down JOIN tree t ON t.parent = down.id) "
    "SELECT top, COUNT(*) FROM down GROUP BY top",
    # a cycle: UNION DISTINCT stops when a round adds nothing new
    "WITH RECURSIVE r(k) AS (SELECT 1 UNION SELECT (k * 7) % 23 FROM r) SELECT k FROM r",
    # two anchors, the result read twice
    "WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT 10 UNION ALL SELECT n + 1 FROM s WHERE n % 10 <> 5) "
    "SELECT a.n, b.n FROM s a JOIN s b ON a.n = b.n + 1",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_recursive_matches_duckdb(both, sql):
    con, duck = both
    assert_same_rows(con.execute(sql).fetchall(), duck.execute(sql).fetchall())


def test_types_come_from_the_anchor(both):
    con, _ = both
    rows = con.execute("WITH RECURSIVE d(x, s) AS (SELECT DATE '2020-02-27', CAST('a' AS CHAR(10)) "
                       "UNION ALL SELECT x + INTERVAL 1 DAY, CONCAT(s, 'b') FROM d WHERE x < '2020-03-01') "
                       "SELECT x, s FROM d").fetchall()
    assert [str(x) for x, _ in rows] == ["2020-02-27", "2020-02-28", "2020-02-29", "2020-03-01"]
    assert [s for _, s in rows] == ["a", "ab", "abb", "abbb"]


def test_depth_limit_is_mysqls(both):
    con, _ = both
    with pytest.raises(engine.DataError, match="Recursive query aborted after 1001 iterations"):
        con.execute("WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s) SELECT COUNT(*) FROM s")
    cur = con.cursor()
    cur.execute("SET cte_max_recursion_depth = 5000")
    cur.execute("WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 3000) "
                "SELECT COUNT(*) FROM s")
    assert cur.fetchall() == [(3000,)]
    cur.execute("SET cte_max_recursion_depth = DEFAULT")


def test_literal_changes_reach_the_recursive_part(both):
    """The plan cache: the same statement with another bound value must not reuse the last one's."""
    cur = both[0].cursor()
    for k in (5, 8, 3, 8):
        cur.execute("WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < %s) "
                    "SELECT MAX(n) FROM s", (k,))
        assert cur.fetchall() == [(k,)]


@pytest.mark.parametrize("sql, message", [
    ("WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT COUNT(*) FROM s) SELECT * FROM s", "neither aggregation"),
    ("WITH RECURSIVE s(n) AS (SELECT n FROM s UNION ALL SELECT 1) SELECT * FROM s", "non-recursive query blocks"),
    ("WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT a.n FROM s a JOIN s b ON a.n = b.n) SELECT * FROM s",
     "referenced only once"),
])
def test_mysqls_rules_for_the_recursive_part(both, sql, message):
    with pytest.raises(engine.ProgrammingError, match=message):
        both[0].execute(sql)


def test_mixed_union_kinds_refused(both):
    with pytest.raises(engine.NotSupportedError, match="mixing UNION ALL and UNION DISTINCT"):
        both[0].execute("WITH RECURSIVE s(n) AS (SELECT 1 UNION SELECT 2 UNION ALL SELECT n + 1 FROM s "
                        "WHERE n < 3) SELECT * FROM s")
