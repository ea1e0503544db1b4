"""DELETE and UPDATE mark rows in per-segment delete bitmaps instead of rewriting segments: scans,
COUNT(*), MIN/MAX from metadata, reopening and merging honour them. Results are compared with DuckDB
running the same statements."""
from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import engine
from engine.storage.columnstore import StorageCorruptionError

SMALL = dict(flush_rows=1000, segment_rows=4000, chunk_rows=500)
N = 12_000


def _table() -> pa.Table:
    rng = np.random.default_rng(11)
    k = np.sort(rng.integers(0, 60, N)).astype(np.int32)             # run-end encoded
    tags = np.array(["red", "green", "blue", None], dtype=object)
    v = rng.integers(-10**6, 10**6, N).astype(np.int64)               # bit-packed
    return pa.table({"id": pa.array(np.arange(N, dtype=np.int64)), "k": pa.array(k),
                     "tag": pa.array(tags[rng.integers(0, 4, N)], pa.string()),
                     "v": pa.array(v, mask=rng.random(N) < 0.05)})


def _stores(con):
    return [s for leaf in con.session.runner.leaves for s in leaf.storage.all_stores()]


def _segment_files(con) -> set[str]:
    return {i.file for s in _stores(con) for i in s.segment_infos()}


def _open(path):
    return engine.connect(data_dir=str(path), progress=False, **SMALL)


def _same(con, duck, sql):
    got = con.execute(sql).fetchall()
    want = duck.execute(sql).fetchall()
    assert sorted(got, key=repr) == sorted(want, key=repr), sql


CHECKS = [
    "SELECT id, k, tag, v FROM t",
    "SELECT COUNT(*) FROM t",
    "SELECT COUNT(*) FROM t WHERE k = 7",
    "SELECT COUNT(*) FROM t WHERE k BETWEEN 10 AND 20",
    "SELECT COUNT(*) FROM t WHERE k >= 0",
    "SELECT MIN(k), MAX(k), MIN(id), MAX(id), MIN(tag), MAX(tag) FROM t",
    "SELECT tag, COUNT(*), SUM(v) FROM t WHERE k > 30 GROUP BY tag",
]


@pytest.fixture
def cons(tmp_path):
    table = _table()
    con = _open(tmp_path)
    con.execute("CREATE TABLE t (id BIGINT, k INT, tag VARCHAR(10), v BIGINT, SHARD KEY (id), SORT KEY (k))")
    con.load_table("t", table)
    con.execute("OPTIMIZE TABLE t")
    con.execute("INSERT INTO t VALUES (100000, 3, 'red', 1), (100001, 59, NULL, NULL), (100002, 70, 'green', 5)")
    duck = duckdb.connect(":memory:")
    duck.register("src", table)
    duck.execute("CREATE TABLE t AS SELECT * FROM src")
    duck.execute("INSERT INTO t VALUES (100000, 3, 'red', 1), (100001, 59, NULL, NULL), (100002, 70, 'green', 5)")
    yield con, duck, tmp_path
    con.close()


def test_delete_marks_rows_without_rewriting_segments(cons):
    con, duck, path = cons
    before = _segment_files(con)
    statements = ["DELETE FROM t WHERE k = 7 OR (tag = 'blue' AND v > 0)",   # segments only
                  "DELETE FROM t WHERE id = 100001",                 # a write-buffer row
                  "DELETE FROM t WHERE k = 0",                       # the minimum of some segments
                  "DELETE FROM t WHERE k = 59",                      # the maximum (and a buffer row)
                  "DELETE FROM t WHERE id % 5 = 1 AND k < 30"]
    for n, sql in enumerate(statements):
        cur = con.execute(sql)
        assert cur.rowcount == duck.execute(sql).fetchone()[0], sql
        if n == 1:          # under a quarter of any segment deleted: no segment rewritten, delete files only
            assert _segment_files(con) == before
            deletes = {i.deletes for s in _stores(con) for i in s.segment_infos() if i.deleted}
            assert deletes and deletes <= {p.name for p in path.rglob("dels-*.bin")}
    for sql in CHECKS:
        _same(con, duck, sql)
    assert con.execute("DELETE FROM t WHERE k = 7").rowcount == 0     # already gone
    con.close()
    con = _open(path)                                   # the bitmaps survive reopening
    for sql in CHECKS:
        _same(con, duck, sql)
    con.execute("OPTIMIZE TABLE t")                     # a merge drops deleted rows
    assert not any(i.deleted for s in _stores(con) for i in s.segment_infos())
    assert not any(p.name.startswith("dels-") for p in path.rglob("*"))
    for sql in CHECKS:
        _same(con, duck, sql)
    con.close()


def test_update_deletes_and_reinserts(cons):
    con, duck, path = cons
    before = _segment_files(con)
    for sql in ["UPDATE t SET v = v + 1, tag = 'new' WHERE k BETWEEN 5 AND 6",
                "UPDATE t SET id = id + 1000000 WHERE k = 20",            # moves rows to other partitions
                "UPDATE t SET k = k * 2 WHERE tag IS NULL AND k < 3",
                "UPDATE t SET v = 0 WHERE id = 100000"]:
        cur = con.execute(sql)
        assert cur.rowcount == duck.execute(sql).fetchone()[0], sql
    assert before <= _segment_files(con)
    for sql in CHECKS + ["SELECT COUNT(*) FROM t WHERE tag = 'new'"]:
        _same(con, duck, sql)
    con.close()
    con = _open(path)
    for sql in CHECKS:
        _same(con, duck, sql)
    con.close()


def test_failed_update_changes_nothing(cons):
    con, duck, _ = cons
    with pytest.raises(engine.Error):
        con.execute("UPDATE t SET tag = 'far too long for ten' WHERE k = 4")
    for sql in CHECKS:
        _same(con, duck, sql)


def test_subquery_delete_marks_the_rows_a_query_found(cons):
    con, duck, _ = cons
    for sql in ["UPDATE t SET tag = 'sub' WHERE id IN (SELECT id FROM t WHERE v < 0 AND k < 10)",
                "DELETE FROM t WHERE k > (SELECT AVG(k) FROM t)"]:
        assert con.execute(sql).rowcount == duck.execute(sql).fetchone()[0], sql
    for sql in CHECKS:
        _same(con, duck, sql)


def test_corrupt_delete_file_is_named(cons):
    con, _, path = cons
    con.execute("DELETE FROM t WHERE k = 9")
    con.close()
    victim = next(p for p in path.rglob("dels-*.bin"))
    data = bytearray(victim.read_bytes())
    data[-1] ^= 0xFF
    victim.write_bytes(bytes(data))
    con = _open(path)
    with pytest.raises(StorageCorruptionError, match=victim.name):
        con.execute("SELECT id, k FROM t").fetchall()
    con.close()


def test_in_memory_delete_and_update_in_place():
    con = engine.connect()
    duck = duckdb.connect(":memory:")
    table = _table()
    con.execute("CREATE TABLE t (id BIGINT, k INT, tag VARCHAR(10), v BIGINT, SHARD KEY (id))")
    con.load_table("t", table)
    duck.register("src", table)
    duck.execute("CREATE TABLE t AS SELECT * FROM src")
    for sql in ["DELETE FROM t WHERE k < 4", "UPDATE t SET k = k + 100 WHERE tag = 'red'"]:
        assert con.execute(sql).rowcount == duck.execute(sql).fetchone()[0]
    for sql in CHECKS:
        _same(con, duck, sql)
    con.close()


@pytest.mark.parametrize("durable", [True, False])
def test_constant_predicates(tmp_path, durable):
    con = _open(tmp_path) if durable else engine.connect()
    con.execute("CREATE TABLE c (a INT, b INT, SHARD KEY (a))")
    con.executemany("INSERT INTO c VALUES (%s, %s)", [(i, i % 3) for i in range(50)])
    assert con.execute("DELETE FROM c WHERE 1 = 0").rowcount == 0
    assert con.execute("UPDATE c SET b = 7 WHERE 2 > 1").rowcount == 50
    assert con.execute("SELECT COUNT(*), SUM(b) FROM c").fetchall() == [(50, 350)]
    assert con.execute("DELETE FROM c WHERE b = 7 AND 1 = 1").rowcount == 50
    assert con.execute("SELECT COUNT(*) FROM c").fetchall() == [(0,)]
    con.close()


def test_reference_table_counts_rows_once(tmp_path):
    con = _open(tmp_path)
    con.execute("CREATE REFERENCE TABLE r (a INT, b VARCHAR(5))")
    con.executemany("INSERT INTO r VALUES (%s, %s)", [(i, f"v{i % 4}") for i in range(40)])
    assert con.execute("DELETE FROM r WHERE b = 'v1'").rowcount == 10
    assert con.execute("UPDATE r SET a = a + 100 WHERE b = 'v2'").rowcount == 10
    copies = [s for s in _stores(con)]
    assert len(copies) == 2 and all(s.row_count() == 30 for s in copies)      # every leaf's copy
    assert con.execute("SELECT COUNT(*), SUM(a) FROM r").fetchall() == [(30, sum(range(40)) - sum(range(1, 40, 4))
                                                                          + 100 * 10)]
    con.close()
