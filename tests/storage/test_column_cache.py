"""The column cache (engine/storage/columnstore/cache.py): decompressed encoded columns of segments
kept between queries. Answers after DELETE, UPDATE, INSERT, merges, OPTIMIZE and reopening are
compared with DuckDB running the same statements, with the cache warm before every change; the
cache keeps within its byte budget, evicts least recently used, and drops retired files."""
from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import engine
from engine.errors import ProgrammingError
from engine.storage.columnstore.cache import ColumnCache, array_bytes

SMALL = dict(flush_rows=1000, segment_rows=4000, chunk_rows=500)
N = 12_000


def _table() -> pa.Table:
    rng = np.random.default_rng(5)
    symbols = np.array([f"S{i:03d}" for i in range(300)], dtype=object)
    sym = symbols[np.minimum(rng.zipf(1.4, N) - 1, 299)]
    sym[rng.random(N) < 0.02] = None
    return pa.table({"id": pa.array(np.arange(N, dtype=np.int64)),
                     "sym": pa.array(sym, pa.string()),                                  # dictionary
                     "k": pa.array(np.sort(rng.integers(0, 50, N)).astype(np.int32)),      # run-end
                     "v": pa.array(rng.integers(-10**5, 10**5, N).astype(np.int64)),      # bit-packed
                     "price": pa.array(rng.random(N))})                                  # plain


def _stores(con):
    return [s for leaf in con.session.runner.leaves for s in leaf.storage.all_stores()]


def _cache(con) -> ColumnCache:
    caches = {id(s.options.column_cache): s.options.column_cache for s in _stores(con)}
    assert len(caches) == 1, "every partition of a data directory shares one cache"
    return next(iter(caches.values()))


CHECKS = [
    "SELECT sym, COUNT(*) c FROM t GROUP BY sym ORDER BY c DESC, sym LIMIT 10",
    "SELECT sym, COUNT(*) FROM t GROUP BY sym",
    "SELECT k, COUNT(*), SUM(v) FROM t GROUP BY k",
    "SELECT COUNT(*) FROM t WHERE k = 7",
    "SELECT COUNT(*) FROM t WHERE sym = 'S001'",
    "SELECT sym, k, SUM(v), MIN(v), MAX(price) FROM t WHERE v > 0 GROUP BY sym, k",
    "SELECT id, sym, k, v, price FROM t",
]


def _same(con, duck):
    for sql in CHECKS:
        got = con.execute(sql).fetchall()
        want = duck.execute(sql).fetchall()
        if "LIMIT" in sql:
            assert got == want, sql
        else:
            assert sorted(got, key=repr) == sorted(want, key=repr), sql


def _open(path, **options):
    return engine.connect(data_dir=str(path), progress=False, **{**SMALL, **options})


@pytest.fixture
def cons(tmp_path):
    table = _table()
    con = _open(tmp_path)
    con.execute("CREATE TABLE t (id BIGINT, sym VARCHAR(8), k INT, v BIGINT, price DOUBLE, "
                "SHARD KEY (id), SORT KEY (k))")
    con.load_table("t", table)
    con.execute("OPTIMIZE TABLE t")
    duck = duckdb.connect()
    duck.register("src", table)
    duck.execute("CREATE TABLE t AS SELECT * FROM src")
    yield con, duck, tmp_path
    con.close()
    duck.close()


def test_encodings_are_the_cached_ones(cons):
    con, _, _ = cons
    encodings = {c: {i.columns[c].encoding for s in _stores(con) for i in s.segment_infos()}
                 for c in ("sym", "k", "v", "price")}
    assert encodings == {"sym": {"dictionary"}, "k": {"run_end"}, "v": {"bitpack"}, "price": {"plain"}}


def test_second_query_reads_no_file(cons):
    con, duck, _ = cons
    sql = "SELECT sym, COUNT(*) c FROM t GROUP BY sym ORDER BY c DESC, sym LIMIT 10"
    cache = _cache(con)
    first = con.execute(sql).fetchall()
    misses, entries = cache.stats()["misses"], len(cache)
    assert entries >= len([i for s in _stores(con) for i in s.segment_infos()])
    for segment in (seg for s in _stores(con) for seg in s.snapshot()[0]):
        segment.close()          # unmapped: a read of the file would map it again
    assert con.execute(sql).fetchall() == first == duck.execute(sql).fetchall()
    assert cache.stats()["misses"] == misses and cache.stats()["hits"] > 0
    assert all(seg._file.source is None for s in _stores(con) for seg in s.snapshot()[0])
    codes = {a.type.index_type for a, _ in cache._entries.values() if pa.types.is_dictionary(a.type)}
    assert codes == {pa.int16()}           # 300 symbols: int16 codes, not dictionary_encode's int32


def test_answers_after_changes_match_duckdb(cons):
    con, duck, path = cons
    _same(con, duck)                                # warm: every encoded column cached
    for sql in ["DELETE FROM t WHERE sym = 'S000' AND k < 20",
                "UPDATE t SET sym = 'S299', v = v + 1 WHERE id % 7 = 0",
                "INSERT INTO t VALUES (100000, 'NEW', 3, 5, 0.5), (100001, NULL, 49, -5, 0.25)",
                "DELETE FROM t WHERE v BETWEEN -500 AND 500"]:
        con.execute(sql)
        duck.execute(sql)
        _same(con, duck)
    con.execute("OPTIMIZE TABLE t")                 # merges: the marked rows leave, files are retired
    _same(con, duck)
    named = {str(seg.path) for s in _stores(con) for seg in s.snapshot()[0]}
    assert {key[0] for key in _cache(con)._entries} <= named, "entries of retired files were dropped"
    con.close()
    con = _open(path)
    _same(con, duck)
    con.execute("DELETE FROM t WHERE k = 30")
    duck.execute("DELETE FROM t WHERE k = 30")
    _same(con, duck)
    con.close()


def test_cache_keeps_within_its_budget(tmp_path):
    table = _table()
    budget = 24_000        # a few segment columns: the queries evict
    con = _open(tmp_path, column_cache_bytes=budget)
    con.execute("CREATE TABLE t (id BIGINT, sym VARCHAR(8), k INT, v BIGINT, price DOUBLE, "
                "SHARD KEY (id), SORT KEY (k))")
    con.load_table("t", table)
    duck = duckdb.connect()
    duck.register("src", table)
    duck.execute("CREATE TABLE t AS SELECT * FROM src")
    for _ in range(2):
        _same(con, duck)
    cache = _cache(con)
    stats = cache.stats()
    assert stats["budget"] == budget and 0 < stats["bytes"] <= budget and stats["evictions"] > 0
    assert stats["bytes"] == sum(array_bytes(a) for a, _ in cache._entries.values())
    con.close()
    duck.close()


def test_budget_zero_caches_nothing(tmp_path):
    table = _table()
    con = _open(tmp_path, column_cache_bytes=0)
    con.execute("CREATE TABLE t (id BIGINT, sym VARCHAR(8), k INT, v BIGINT, price DOUBLE, SORT KEY (k))")
    con.load_table("t", table)
    duck = duckdb.connect()
    duck.register("src", table)
    duck.execute("CREATE TABLE t AS SELECT * FROM src")
    _same(con, duck)
    assert len(_cache(con)) == 0
    con.close()


def test_lru_order_and_oversized_arrays():
    one = pa.array(np.arange(100, dtype=np.int64))          # 800 bytes
    cache = ColumnCache(2000)
    cache.put(("a", None, "x"), one)
    cache.put(("b", None, "x"), one)
    assert cache.get(("a", None, "x")) is not None           # a is now the most recently used
    cache.put(("c", None, "x"), one)                          # 2400 > 2000: b goes
    assert cache.get(("b", None, "x")) is None and cache.get(("a", None, "x")) is not None
    assert cache.bytes == 1600 and cache.evictions == 1
    cache.put(("d", None, "x"), pa.array(np.arange(1000, dtype=np.int64)))   # larger than the budget
    assert cache.get(("d", None, "x")) is None and cache.bytes == 1600
    cache.put(("a", "dels-1", "x"), one)                     # c is the least recently used now
    assert cache.get(("c", None, "x")) is None and cache.evictions == 2
    cache.discard("a", None)
    assert cache.get(("a", None, "x")) is None and cache.get(("a", "dels-1", "x")) is not None
    cache.put(("e", None, "x"), one)
    cache.discard("a", any_deletes=True)
    assert len(cache) == 1 and cache.bytes == 800 and cache.get(("e", None, "x")) is not None


def test_dictionary_bytes_count_the_dictionary():
    small = pa.array(["x" * 1000, "y" * 1000] * 10).dictionary_encode()
    assert array_bytes(small) >= 2000


@pytest.mark.parametrize("bad", [-1, "1GB", 1.5, True])
def test_bad_budget_is_rejected(tmp_path, bad):
    with pytest.raises(ProgrammingError, match="connect: column_cache_bytes must be a non-negative integer"):
        _open(tmp_path, column_cache_bytes=bad)
    with pytest.raises(ValueError, match="column_cache_bytes"):
        ColumnCache(bad)


def test_point_lookups_keep_the_batches_they_read(tmp_path, monkeypatch):
    """An index lookup reads the stored batch (chunk_rows rows, zstd) holding its row once: the
    batch's columns stay in the column cache, so looking up another key of that batch reads no file,
    after a DELETE too (the batch is kept with its deleted rows), and after the segment is unmapped."""
    from engine.storage.columnstore.segment import Segment
    con = _open(tmp_path)
    try:
        ids = np.random.default_rng(3).permutation(N).astype(np.int64)
        con.execute("CREATE TABLE p (id BIGINT PRIMARY KEY, v BIGINT, price DOUBLE)")
        con.load_table("p", pa.table({"id": ids, "v": ids * 3, "price": ids / 4}))
        con.execute("OPTIMIZE TABLE p")
        reads = []
        stored_chunk = Segment._stored_chunk
        monkeypatch.setattr(Segment, "_stored_chunk", lambda self, wanted, index: reads.append(index) or
                            stored_chunk(self, wanted, index))

        def lookup(key):
            return con.execute("SELECT id, v, price FROM p WHERE id = %s", (key,)).fetchall()

        for key in range(0, N, 97):
            assert lookup(int(key)) == [(key, key * 3, key / 4)]
        assert reads                                  # the first lookups read their batches
        reads.clear()
        for key in range(0, N, 97):                   # the same batches again: none is read
            assert lookup(int(key)) == [(key, key * 3, key / 4)]
        assert reads == []
        con.execute("DELETE FROM p WHERE id IN (0, 194, 388)")       # a few: no merge rewrites the files
        for segment in (seg for s in _stores(con) for seg in s.snapshot()[0]):
            segment.close()
        for key in range(0, N, 97):
            assert lookup(int(key)) == ([] if key in (0, 194, 388) else [(key, key * 3, key / 4)])
        assert lookup(N + 5) == []
        assert reads == []
    finally:
        con.close()
