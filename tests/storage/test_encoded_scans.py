"""Scans of columnstore tables filter run-end and dictionary columns encoded; COUNT(*), MIN and MAX
come from segment metadata and run counts. Results are compared with DuckDB on the same rows."""
from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import engine
from engine.storage.columnstore import encoding, segment

SMALL = dict(flush_rows=1000, segment_rows=4000, chunk_rows=500)
N = 12_000


def _table() -> pa.Table:
    rng = np.random.default_rng(7)
    k = np.sort(rng.integers(0, 60, N)).astype(np.int32)            # sorted: run-end encoded
    tags = np.array(["red", "green", "blue", None], dtype=object)
    tag = tags[rng.integers(0, 4, N)]                                # few values: dictionary
    v = rng.integers(-10**6, 10**6, N).astype(np.int64)              # 21 of 64 bits: bit-packed
    v_null = pa.array(v, mask=rng.random(N) < 0.05)
    return pa.table({"k": pa.array(k), "tag": pa.array(tag, pa.string()), "v": v_null})


@pytest.fixture(scope="module")
def cons(tmp_path_factory):
    table = _table()
    con = engine.connect(data_dir=str(tmp_path_factory.mktemp("enc")), progress=False, **SMALL)
    con.execute("CREATE TABLE t (k INT, tag VARCHAR(10), v BIGINT, SORT KEY (k))")
    con.load_table("t", table)
    con.execute("OPTIMIZE TABLE t")
    con.execute("INSERT INTO t VALUES (3, 'red', 1), (59, NULL, NULL), (70, 'green', 5)")   # write buffer
    duck = duckdb.connect(":memory:")
    duck.register("src", table)
    duck.execute("CREATE TABLE t AS SELECT * FROM src")
    duck.execute("INSERT INTO t VALUES (3, 'red', 1), (59, NULL, NULL), (70, 'green', 5)")
    yield con, duck
    con.close()


def test_segments_hold_encoded_columns(cons):
    con, _ = cons
    stores = [s for leaf in con.session.runner.leaves for s in leaf.storage.all_stores()]
    encodings = {name: st.encoding for s in stores for info in s.segment_infos() for name, st in info.columns.items()}
    assert encodings["k"] == "run_end" and encodings["tag"] == "dictionary" and encodings["v"] == "bitpack"


QUERIES = [
    "SELECT k, tag, v FROM t WHERE k = 17",
    "SELECT k, tag, v FROM t WHERE k BETWEEN 10 AND 12 AND tag = 'red'",
    "SELECT k, tag, v FROM t WHERE tag <> 'blue' AND k > 55",
    "SELECT k, tag, v FROM t WHERE k IN (3, 40, 70) AND v > 0",
    "SELECT k, tag FROM t WHERE tag LIKE 'gr%' AND k < 5",
    "SELECT k, v FROM t WHERE k + 1 = 8",                        # residual only: decoded first
    "SELECT k, tag, v FROM t WHERE k = 1000",
    "SELECT tag, COUNT(*), SUM(v), MIN(k), MAX(k) FROM t WHERE k >= 30 GROUP BY tag",
    "SELECT COUNT(*) FROM t WHERE k = 2",
    "SELECT COUNT(*) FROM t WHERE k >= 0",
    "SELECT COUNT(*) FROM t WHERE k > 20 AND k <= 41 AND tag = 'green'",
    "SELECT COUNT(*) FROM t WHERE tag IN ('red', 'blue')",
    "SELECT COUNT(*) FROM t WHERE v < 0",
    "SELECT COUNT(*) FROM t WHERE k = 1000",
    "SELECT COUNT(*), MIN(k), MAX(k), MIN(tag), MAX(v) FROM t",
    "SELECT MIN(k), MAX(k) FROM t WHERE k > 50",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_results_match_duckdb(cons, sql):
    con, duck = cons
    got = sorted(con.execute(sql).fetchall(), key=repr)
    want = sorted(duck.execute(sql).fetchall(), key=repr)
    assert got == want


def test_scan_batches_are_plain(cons):
    con, _ = cons
    result = con.session.execute("SELECT k, tag, v FROM t WHERE k < 30").table
    assert not any(pa.types.is_run_end_encoded(f.type) or pa.types.is_dictionary(f.type) for f in result.schema)


def test_filtered_count_never_decodes(cons, monkeypatch):
    con, duck = cons
    sql = "SELECT COUNT(*) FROM t WHERE k BETWEEN 5 AND 9"
    want = duck.execute(sql).fetchall()

    def refuse(array):
        raise AssertionError("decoded a column for a COUNT(*) answered from runs and zone maps")
    monkeypatch.setattr(encoding, "decode_column", refuse)
    monkeypatch.setattr(segment, "decode_batch", refuse)
    assert con.execute(sql).fetchall() == want
    assert con.execute("SELECT COUNT(*), MIN(k), MAX(k) FROM t").fetchall() == \
        duck.execute("SELECT COUNT(*), MIN(k), MAX(k) FROM t").fetchall()



def test_limit_reads_a_small_first_batch(tmp_path, monkeypatch):
    con = engine.connect(data_dir=str(tmp_path), progress=False)          # default 64k-row chunks
    con.execute("CREATE TABLE t (k INT, SORT KEY (k))")
    con.load_table("t", pa.table({"k": pa.array(np.arange(80_000, dtype=np.int32))}))
    con.execute("OPTIMIZE TABLE t")
    sizes = []
    batches = segment.Segment.batches

    def recording(self, names, batch_rows, encoded=False):
        for batch in batches(self, names, batch_rows, encoded):
            sizes.append(batch.num_rows)
            yield batch
    monkeypatch.setattr(segment.Segment, "batches", recording)
    assert len(con.execute("SELECT k FROM t LIMIT 10").fetchall()) == 10
    assert sizes and max(sizes) <= 1024
    sizes.clear()
    assert con.execute("SELECT k FROM t WHERE k >= 79990 LIMIT 5").fetchall() != []
    sizes.clear()
    assert con.execute("SELECT COUNT(*) FROM (SELECT k FROM t) s").fetchall() == [(80_000,)]
    assert max(sizes) > 1024                  # without a LIMIT: whole chunks
    con.close()
