"""GROUP BY a unique key and columns of its row groups on the key alone (engine.optimizer.rules.group_by_keys):
the EXPLAIN text shows the narrower keys where a declared key makes the other columns dependent, and
only there; results match DuckDB's (the same tables, no keys declared there) either way."""
from __future__ import annotations

import pyarrow as pa
import pytest

import engine
from tests.oracle import assert_same_rows

duckdb = pytest.importorskip("duckdb")

CUSTOMERS = pa.table({"ck": pa.array(range(1, 41), pa.int64()),
                      "name": [f"Name{i % 7}" for i in range(1, 41)],
                      "nk": pa.array([i % 4 for i in range(1, 41)], pa.int64()),
                      "bal": pa.array([i * 1.5 for i in range(1, 41)], pa.float64())})
ORDERS = pa.table({"ok": pa.array(range(300), pa.int64()),
                   "ock": pa.array([(i * 7) % 50 for i in range(300)], pa.int64()),   # 41..49 match nothing
                   "amt": pa.array([i % 13 for i in range(300)], pa.int64())})
PAIRS = pa.table({"a": pa.array([1, 2, 3, None, None], pa.int64()), "b": pa.array([1, 1, 2, 3, 4], pa.int64())})


@pytest.fixture(scope="module")
def cons():
    con = engine.connect()
    con.execute("CREATE TABLE c (ck BIGINT PRIMARY KEY, name VARCHAR(20), nk BIGINT, bal DOUBLE)")
    con.execute("CREATE TABLE o (ok BIGINT, ock BIGINT, amt BIGINT)")
    con.execute("CREATE TABLE u (a BIGINT, b BIGINT, UNIQUE KEY (a), SHARD KEY (a))")   # a may be NULL
    duck = duckdb.connect()
    for name, data in (("c", CUSTOMERS), ("o", ORDERS), ("u", PAIRS)):
        con.load_table(name, data)
        duck.register(name, data)
    yield con, duck
    con.close()
    duck.close()


def _aggregate_keys(con, sql: str) -> list[str]:
    lines = [line for (line,) in con.execute("EXPLAIN " + sql).fetchall() if "Aggregate" in line]
    return [line.split("keys=[", 1)[1].split("]", 1)[0] for line in lines]


def _same_as_duckdb(cons, sql: str) -> None:
    con, duck = cons
    assert_same_rows(con.execute(sql).fetchall(), duck.execute(sql).fetchall())


@pytest.mark.parametrize("sql, keys", [
    # the key and columns of its row: grouped on the key alone
    ("SELECT ck, name, bal, COUNT(*) FROM c GROUP BY ck, name, bal", "ck"),
    ("SELECT ck, name, SUM(amt) FROM c JOIN o ON ck = ock GROUP BY ck, name, nk", "ck"),
    # the preserved side of a left join pads nothing; the padded side's key is NULL with all its columns
    ("SELECT ck, name, COUNT(ok) FROM c LEFT JOIN o ON ck = ock GROUP BY ck, name", "ck"),
    ("SELECT ock, ck, name, COUNT(*) FROM o LEFT JOIN c ON ock = ck GROUP BY ock, ck, name", "ock, ck"),
    # DISTINCT groups too
    ("SELECT DISTINCT ck, name, bal FROM c JOIN o ON ck = ock", "ck"),
])
def test_columns_of_a_keyed_row_leave_the_group_keys(cons, sql, keys):
    assert keys in _aggregate_keys(cons[0], sql)
    _same_as_duckdb(cons, sql)


@pytest.mark.parametrize("sql", [
    # the key of one scan of c says nothing of the other scan's columns (two rows)
    "SELECT c1.ck, c2.name, COUNT(*) FROM c c1 JOIN c c2 ON c1.nk = c2.nk GROUP BY c1.ck, c2.name",
    # a UNIQUE key whose column may be NULL: several rows share the NULL key
    "SELECT a, b, COUNT(*) FROM u GROUP BY a, b",
    # no key among the group keys
    "SELECT nk, name, COUNT(*) FROM c GROUP BY nk, name",
    # grouping sets: a rolled-up key is NULL, not one of its values
    "SELECT ck, name, COUNT(*) FROM c GROUP BY ROLLUP (ck, name)",
])
def test_no_key_no_change(cons, sql):
    for keys in _aggregate_keys(cons[0], sql):
        assert keys.count(",") >= 1 or "ROLLUP" in sql, keys
    _same_as_duckdb(cons, sql)
