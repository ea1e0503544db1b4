"""DELETE and UPDATE whose rows a planned query finds (engine.sql.matched_rows): subqueries in WHERE
and SET (uncorrelated, correlated, IN, EXISTS), MySQL's multi-table ``UPDATE t JOIN u ... SET`` and
``DELETE t FROM t JOIN u`` / ``DELETE FROM t USING ...``, on sharded, keyless and reference tables with
repeated rows and NULLs, checked against DuckDB running the same change (in its own syntax where MySQL's
differs); the rowcount, atomicity, ROLLBACK, unique keys and the refusals. Runs on either runner
(``CANOPY_RUNNER=ray``)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import engine
from engine.errors import BindError, ConstraintError, NotSupportedError
from engine.sql.matched_rows import RowSetMatcher, distinct_rows, matcher_of
from tests.oracle import assert_same_rows

duckdb = pytest.importorskip("duckdb")

KINDS = ("sharded", "keyless", "reference")


def _rows(n: int = 400) -> pa.Table:
    k = np.arange(n, dtype=np.int32) % 150              # repeated keys: equal rows exist
    x = (k * 37 % 11).astype(np.int32)
    s = pa.array([None if i % 9 == 0 else f"s{i % 7}" for i in range(n)])
    return pa.table({"k": k, "x": pa.array(x, mask=(k % 13 == 0)), "s": s})


@pytest.fixture(scope="module")
def con():
    connection = engine.connect()
    yield connection
    connection.close()


@pytest.fixture(params=KINDS)
def tables(request, con):
    """(canopy connection, duckdb connection) with t (k, x, s) of ``kind`` and u (k, y) in both."""
    kind = request.param
    duck = duckdb.connect()
    for name in ("t", "u"):
        con.execute(f"DROP TABLE IF EXISTS {name}")
    prefix = "CREATE REFERENCE TABLE" if kind == "reference" else "CREATE TABLE"
    con.execute(f"{prefix} t (k INT, x INT, s VARCHAR(10){', SHARD KEY (k)' if kind == 'sharded' else ''})")
    con.execute("CREATE TABLE u (k INT, y INT, SHARD KEY (k))")
    data = _rows()
    con.load_table("t", data)
    extra = pa.table({"k": pa.array([5, 5, 7], pa.int32()), "x": pa.array([1, 1, None], pa.int32()),
                      "s": pa.array(["a", "a", None])})
    con.execute("INSERT INTO t VALUES (5, 1, 'a'), (5, 1, 'a'), (7, NULL, NULL)")    # write-buffer rows
    u = pa.table({"k": pa.array(np.arange(0, 150, 3), pa.int32()),
                  "y": pa.array(np.arange(0, 150, 3) * 2, pa.int32())})
    con.load_table("u", u)
    duck.register("t_src", pa.concat_tables([data, extra]))
    duck.register("u_src", u)
    duck.execute("CREATE TABLE t AS SELECT * FROM t_src")
    duck.execute("CREATE TABLE u AS SELECT * FROM u_src")
    yield con, duck
    duck.close()


def _same_tables(con, duck) -> None:
    assert_same_rows(con.execute("SELECT k, x, s FROM t").fetchall(), duck.execute("SELECT k, x, s FROM t").fetchall())


CHANGES = [
    # (Canopy's statement, DuckDB's statement when it differs)
    ("DELETE FROM t WHERE k IN (SELECT k FROM u WHERE y > 100)", None),
    ("DELETE FROM t WHERE k NOT IN (SELECT k FROM u)", None),
    ("DELETE FROM t WHERE EXISTS (SELECT 1 FROM u WHERE u.k = t.k AND u.y < 60)", None),
    ("DELETE FROM t WHERE x > (SELECT AVG(x) FROM t)", None),
    ("DELETE FROM t WHERE x = (SELECT MAX(y) FROM u WHERE u.k = t.k) OR s IS NULL", None),
    ("UPDATE t SET x = (SELECT MAX(y) FROM u) WHERE k < 20", None),
    ("UPDATE t SET x = x + 1, s = 'in' WHERE k IN (SELECT k FROM u WHERE y BETWEEN 30 AND 90)", None),
    ("UPDATE t SET s = (SELECT CAST(MIN(y) AS CHAR) FROM u WHERE u.k = t.k)", None),
    ("DELETE t FROM t JOIN u ON t.k = u.k WHERE u.y > 50", "DELETE FROM t USING u WHERE t.k = u.k AND u.y > 50"),
    ("DELETE FROM t USING t JOIN u ON t.k = u.k", "DELETE FROM t USING u WHERE t.k = u.k"),
    ("DELETE a FROM u JOIN t AS a ON a.k = u.k AND a.s IS NULL",
     "DELETE FROM t AS a USING u WHERE a.k = u.k AND a.s IS NULL"),
    ("UPDATE t JOIN u ON t.k = u.k SET t.x = u.y, t.s = 'j' WHERE u.y < 200",
     "UPDATE t SET x = u.y, s = 'j' FROM u WHERE t.k = u.k AND u.y < 200"),
    ("UPDATE t, u SET t.x = t.x + u.y WHERE t.k = u.k", "UPDATE t SET x = t.x + u.y FROM u WHERE t.k = u.k"),
]


@pytest.mark.parametrize("mysql,duck_sql", CHANGES, ids=[c[0][:60] for c in CHANGES])
def test_change_matches_duckdb(tables, mysql, duck_sql):
    con, duck = tables
    count = con.execute(mysql).rowcount
    want = duck.execute(duck_sql or mysql).fetchone()[0]
    assert count == want
    _same_tables(con, duck)


def test_statements_in_a_row_and_a_rollback(tables):
    con, duck = tables
    con.execute("UPDATE t SET x = 1000 WHERE k IN (SELECT k FROM u)")
    duck.execute("UPDATE t SET x = 1000 WHERE k IN (SELECT k FROM u)")
    con.execute("BEGIN")
    con.execute("DELETE t FROM t JOIN u ON t.k = u.k")
    con.execute("UPDATE t SET s = 'gone' WHERE k IN (SELECT k + 1 FROM u)")
    assert con.execute("SELECT COUNT(*) FROM t WHERE x = 1000").fetchone()[0] == 0
    con.execute("ROLLBACK")
    _same_tables(con, duck)


def test_a_failing_new_value_changes_nothing(tables):
    con, duck = tables
    with pytest.raises(engine.Error):
        con.execute("UPDATE t SET s = (SELECT 'far too long for ten' FROM u LIMIT 1) WHERE k IN (SELECT k FROM u)")
    _same_tables(con, duck)


def test_a_scalar_subquery_of_several_rows_changes_nothing(tables):
    con, duck = tables
    with pytest.raises(engine.Error, match="more than 1 row"):
        con.execute("UPDATE t SET x = (SELECT y FROM u) WHERE k < 10")
    with pytest.raises(engine.Error, match="more than 1 row"):
        con.execute("DELETE FROM t WHERE x = (SELECT y FROM u)")
    _same_tables(con, duck)


def test_unique_key_checked(con):
    con.execute("DROP TABLE IF EXISTS kt")
    con.execute("DROP TABLE IF EXISTS ku")
    con.execute("CREATE TABLE kt (id INT PRIMARY KEY, v INT)")
    con.execute("CREATE TABLE ku (id INT)")
    con.execute("INSERT INTO kt VALUES (1, 10), (2, 20), (3, 30)")
    con.execute("INSERT INTO ku VALUES (1), (2)")
    with pytest.raises(ConstraintError):
        con.execute("UPDATE kt SET id = 3 WHERE id IN (SELECT id FROM ku)")
    with pytest.raises(NotSupportedError, match="unique key"):
        con.execute("UPDATE kt JOIN ku ON kt.id = ku.id SET kt.id = kt.id + 10")
    assert con.execute("UPDATE kt SET id = id + 10 WHERE id IN (SELECT id FROM ku)").rowcount == 2
    assert sorted(con.execute("SELECT id, v FROM kt").fetchall()) == [(3, 30), (11, 10), (12, 20)]


def test_refusals(tables):
    con, duck = tables
    with pytest.raises(NotSupportedError, match="several tables"):
        con.execute("DELETE t, u FROM t JOIN u ON t.k = u.k")
    with pytest.raises(NotSupportedError, match="several tables"):
        con.execute("UPDATE t JOIN u ON t.k = u.k SET t.x = 1, u.y = 2")
    with pytest.raises(BindError, match="Unknown table"):
        con.execute("DELETE v FROM t JOIN u ON t.k = u.k")
    with pytest.raises(BindError, match="Unknown table"):
        con.execute("DELETE v FROM t WHERE k = 1")
    for modifier in ("QUICK", "LOW_PRIORITY"):
        with pytest.raises(NotSupportedError, match=modifier):
            con.execute(f"DELETE {modifier} FROM t WHERE k = 1")
    assert con.execute("DELETE a FROM t AS a WHERE a.k = -1").rowcount == 0
    _same_tables(con, duck)


def test_matcher_finds_equal_rows_nulls_and_hash_collisions():
    rows = pa.table({"a": pa.array([1, None, 3], pa.int64()), "b": pa.array(["x", "y", None])})
    matcher = RowSetMatcher(("a", "b"), rows)
    batch = pa.record_batch({"a": pa.array([1, None, 3, 3, None, 1], pa.int64()),
                             "b": pa.array(["x", "y", None, "z", None, None])})
    assert matcher.positions(batch).tolist() == [0, 1, 2, -1, -1, -1]
    # every row of one hash: the comparison alone tells them apart
    matcher._index.update(order=np.arange(3), hashes=np.zeros(3, np.uint64), hashed=[])
    assert matcher.positions(batch).tolist() == [0, 1, 2, -1, -1, -1]
    # zone-map bounds: a column with a NULL among the rows has none
    assert matcher_of(("a", "b"), rows).bounds == ()
    assert matcher_of(("a",), rows.slice(0, 1).select(["a"]).append_column("b", pa.array(["q"]))).bounds == \
        (("a", "between", (1, 1)),)
    # the matcher travels (to a Ray leaf) without its index
    import pickle
    again = pickle.loads(pickle.dumps(matcher))
    assert again._index == {} and again.positions(batch).tolist() == [0, 1, 2, -1, -1, -1]
    assert matcher.positions(batch).tolist() == [0, 1, 2, -1, -1, -1]
    distinct, first = distinct_rows(pa.concat_tables([rows, rows]), pa.table({"n": list(range(6))}))
    assert distinct.num_rows == 3 and sorted(first.column(0).to_pylist()) == [0, 1, 2]


def test_explain_shows_the_strategy_and_the_plan(tables):
    con, duck = tables

    def text(sql: str) -> str:
        return "\n".join(row[0] for row in con.execute(sql).fetchall())

    assert "in storage" in text("EXPLAIN DELETE FROM t WHERE k < 5")
    plan = text("EXPLAIN UPDATE t SET x = (SELECT MAX(y) FROM u) WHERE x > (SELECT AVG(x) FROM t)")
    assert "in storage" in plan and "$subquery1 (run first)" in plan       # init plans, then storage
    assert "emptied" in text("EXPLAIN DELETE FROM t")
    plan = text("EXPLAIN DELETE FROM t WHERE k IN (SELECT k FROM u)")
    assert "removed by content" in plan and "Scan u" in plan and " t [k, x, s]" in plan
    plan = text("EXPLAIN UPDATE t JOIN u ON t.k = u.k SET t.x = u.y")
    assert plan.startswith("Update t SET x = u.y") and "Scan u" in plan
    with pytest.raises(NotSupportedError, match="EXPLAIN ANALYZE"):
        con.execute("EXPLAIN ANALYZE DELETE FROM t WHERE k < 5")
    _same_tables(con, duck)             # EXPLAIN changed nothing


TYPED = [("TINYINT", "1"), ("SMALLINT UNSIGNED", "2"), ("BIGINT UNSIGNED", "18446744073709551615"),
         ("DECIMAL(12,3)", "1.5"), ("DECIMAL(30,5)", "12345678901234567890.12345"), ("DOUBLE", "0.1"),
         ("FLOAT", "0.3"), ("DATE", "'2020-01-02'"), ("DATETIME", "'2020-01-02 03:04:05.5'"),
         ("TIMESTAMP", "'2020-01-02 03:04:05'"), ("CHAR(5)", "'ab '"), ("VARCHAR(10)", "'Ab'"), ("TEXT", "'text'"),
         ("BOOLEAN", "TRUE"), ("BIT(8)", "5")]


@pytest.mark.parametrize("sql_type,value", TYPED, ids=[t for t, _ in TYPED])
def test_rows_of_every_type_are_found_by_content(con, sql_type, value):
    """Equal rows (here two of the value, one NULL) are matched by their stored values, of any type."""
    con.execute("DROP TABLE IF EXISTS typed")
    con.execute(f"CREATE TABLE typed (id INT, c {sql_type})")
    con.execute(f"INSERT INTO typed VALUES (1, {value}), (2, NULL), (3, {value}), (4, {value})")
    assert con.execute("DELETE FROM typed WHERE id IN (SELECT 1 UNION SELECT 2)").rowcount == 2
    assert con.execute("UPDATE typed SET id = id * 10 WHERE id IN (SELECT 3)").rowcount == 1
    assert sorted(con.execute("SELECT id FROM typed").fetchall()) == [(4,), (30,)]


def test_a_multi_table_change_needs_the_write_privilege_on_its_target_only(con):
    """``UPDATE a.t JOIN b.u ... SET u.y``: UPDATE on u's database, SELECT on t's (MySQL's rule)."""
    from engine.errors import AccessDeniedError
    from engine.session import Session

    for ddl in ["DROP DATABASE IF EXISTS pa", "DROP DATABASE IF EXISTS pb", "CREATE DATABASE pa", "CREATE DATABASE pb",
                "CREATE TABLE pa.t (k INT, x INT)", "CREATE TABLE pb.u (k INT, y INT)",
                "INSERT INTO pa.t VALUES (1, 10)", "INSERT INTO pb.u VALUES (1, 20)",
                "CREATE USER changer IDENTIFIED BY 'pw'", "GRANT SELECT ON pa.* TO changer",
                "GRANT SELECT, UPDATE, DELETE ON pb.* TO changer"]:
        con.execute(ddl)
    session = Session(con.session.runner, "pa", user="changer")
    try:
        assert session.execute("UPDATE pa.t JOIN pb.u ON t.k = u.k SET u.y = t.x").rowcount == 1
        with pytest.raises(AccessDeniedError):
            session.execute("UPDATE pa.t JOIN pb.u ON t.k = u.k SET t.x = u.y")
        with pytest.raises(AccessDeniedError):
            session.execute("DELETE t FROM pb.u JOIN pa.t ON t.k = u.k")
        assert session.execute("DELETE u FROM pa.t JOIN pb.u ON t.k = u.k").rowcount == 1
        for ddl in ["DROP DATABASE IF EXISTS pc", "CREATE DATABASE pc", "CREATE TABLE pc.w (k INT)",
                    "GRANT DELETE ON pc.* TO changer"]:
            con.execute(ddl)
        with pytest.raises(AccessDeniedError):     # the subquery reads w: SELECT on it, which it lacks
            session.execute("DELETE FROM pc.w WHERE k IN (SELECT k FROM pc.w)")
    finally:
        session.close()
        con.execute("DROP USER changer")
    assert con.execute("SELECT k, x FROM pa.t").fetchall() == [(1, 10)]
