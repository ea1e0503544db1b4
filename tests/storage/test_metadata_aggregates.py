"""COUNT(*), COUNT(col), MIN and MAX with and without a WHERE from segment metadata: segments every
row of which matches are answered from their manifest entry, only the others are read; deletions
are honoured. Results are compared with DuckDB on the same rows and statements."""
from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import engine
from engine.storage.columnstore import segment

SMALL = dict(flush_rows=1000, segment_rows=2000, chunk_rows=500)
N = 16_000
INSERT = "INSERT INTO t VALUES (3, 'red', 1, 0.5), (59, NULL, NULL, NULL), (70, 'green', 5, 2.5)"


def _table() -> pa.Table:
    rng = np.random.default_rng(5)
    k = np.sort(rng.integers(0, 60, N)).astype(np.int32)
    tags = np.array(["red", "green", "blue", None], dtype=object)
    v = rng.integers(-10**6, 10**6, N).astype(np.int64)
    return pa.table({"k": pa.array(k), "tag": pa.array(tags[rng.integers(0, 4, N)], pa.string()),
                     "v": pa.array(v, mask=rng.random(N) < 0.05), "x": pa.array(rng.random(N))})


@pytest.fixture(scope="module")
def cons(tmp_path_factory):
    table = _table()
    con = engine.connect(data_dir=str(tmp_path_factory.mktemp("meta")), progress=False, **SMALL)
    # tag is utf8mb4_bin: its zone maps order values as its MIN / MAX do (a _ci string's MIN / MAX
    # compares collation keys, which zone maps do not hold: those read the values, test_collations.py)
    con.execute("CREATE TABLE t (k INT, tag VARCHAR(10) COLLATE utf8mb4_bin, v BIGINT, x DOUBLE, SORT KEY (k))")
    con.load_table("t", table)
    con.execute("OPTIMIZE TABLE t")
    con.execute(INSERT)                                                     # write buffer
    duck = duckdb.connect(":memory:")
    duck.register("src", table)
    duck.execute("CREATE TABLE t AS SELECT * FROM src")
    duck.execute(INSERT)
    yield con, duck
    con.close()


QUERIES = [
    "SELECT COUNT(v), COUNT(tag), COUNT(k), COUNT(*) FROM t",
    "SELECT COUNT(v), MIN(v), MAX(v) FROM t WHERE k BETWEEN 10 AND 20",
    "SELECT MIN(tag), MAX(tag), COUNT(tag) FROM t WHERE k > 40",
    "SELECT MIN(k), MAX(k) FROM t WHERE k >= 7 AND k < 33",
    "SELECT MIN(v), MAX(v), COUNT(v) FROM t WHERE tag = 'red'",
    "SELECT MIN(k), MAX(v), COUNT(v) FROM t WHERE k = 1000",
    "SELECT MIN(x), MAX(x), COUNT(x) FROM t WHERE k < 5",
    "SELECT COUNT(v) FROM t WHERE v > 0 AND k IN (1, 2, 3, 70)",
]


def _check(con, duck):
    for sql in QUERIES:
        got = con.execute(sql).fetchall()
        want = duck.execute(sql).fetchall()
        assert [tuple(pytest.approx(v) if isinstance(v, float) else v for v in row) for row in got] == want, sql


def test_results_match_duckdb(cons):
    _check(*cons)


def _reads(monkeypatch) -> list:
    seen = []
    batches = segment.Segment.batches

    def recording(self, names, batch_rows, encoded=False, with_deleted=False):
        seen.append(self.info.file)
        yield from batches(self, names, batch_rows, encoded, with_deleted)
    monkeypatch.setattr(segment.Segment, "batches", recording)
    return seen


def test_only_undecided_segments_are_read(cons, monkeypatch):
    con, duck = cons
    stores = [s for leaf in con.session.runner.leaves for s in leaf.storage.all_stores()]
    infos = [i for s in stores for i in s.segment_infos()]
    assert len(infos) >= 8
    queries = ["SELECT COUNT(v), COUNT(tag), MIN(v), MAX(tag) FROM t",
               "SELECT COUNT(v), MIN(v), MAX(v) FROM t WHERE k BETWEEN 10 AND 20"]
    # The optimizer's estimates for k's range schedule a background statistics collection that reads
    # segments too (and a merge may be under way): run the queries once and let both finish, so the
    # reads recorded below are the queries' own.
    for sql in queries:
        con.execute(sql).fetchall()
    assert con.session.statistics.wait(60)
    merger = getattr(con.session.runner, "_committer", None) and con.session.runner._committer.merger
    assert merger is None or merger.wait_idle(60)
    seen = _reads(monkeypatch)
    sql = queries[0]
    assert con.execute(sql).fetchall() == duck.execute(sql).fetchall()
    assert seen == []                                     # every segment from its manifest entry
    sql = queries[1]
    assert con.execute(sql).fetchall() == duck.execute(sql).fetchall()
    straddling = [i.file for i in infos if i.columns["k"].min < 10 <= i.columns["k"].max
                  or i.columns["k"].min <= 20 < i.columns["k"].max]
    assert set(seen) == set(straddling)                   # the segments inside the range are not read


def test_deleted_rows_are_honoured(cons):
    con, duck = cons
    for sql in ["DELETE FROM t WHERE k = 0 OR k = 59", "DELETE FROM t WHERE v > 900000",
                "DELETE FROM t WHERE tag IS NULL AND k BETWEEN 10 AND 12"]:
        assert con.execute(sql).rowcount == duck.execute(sql).fetchone()[0]
    _check(con, duck)
