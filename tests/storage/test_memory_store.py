"""The in-memory partition store: the columnstore's encoded segments without files, plus a tail."""
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.storage import memory
from engine.storage.columnstore.store import StoreOptions
from engine.storage.memory import MemoryPartitionStore

SCHEMA = pa.schema([("a", pa.int64())])
SMALL = StoreOptions(segment_rows=4096, flush_rows=1024, chunk_rows=512, column_cache_bytes=0)


def _one_row(i: int) -> pa.RecordBatch:
    return pa.record_batch([pa.array([i])], schema=SCHEMA)


def _rows(store, columns=None) -> list:
    return pa.Table.from_batches(list(store.scan(columns)), schema=store.schema if columns is None else
                                 pa.schema([store.schema.field(c) for c in columns])).to_pylist()


class _Matcher:
    """DELETE matcher (see ColumnstorePartitionStore.prepare_delete): rows where ``column`` < limit."""

    def __init__(self, column, limit):
        self.columns, self.limit = (column,), limit

    def __call__(self, batch):
        return pc.fill_null(pc.less(batch.column(0), self.limit), False).to_numpy(zero_copy_only=False)


def test_many_one_row_appends_leave_few_batches_in_order():
    """Single-row INSERTs must not leave thousands of tiny batches for every scan; order is kept."""
    store = MemoryPartitionStore(SCHEMA)
    for i in range(10_000):
        store.append(_one_row(i))
    segments, tail = store.snapshot()
    assert len(tail) <= memory._TAIL_PIECES
    assert store.row_count() == 10_000
    assert [v for b in store.scan() for v in b.column(0).to_pylist()] == list(range(10_000))


def test_small_appends_flush_into_encoded_segments_and_snapshots_stay_immutable():
    schema = pa.schema([("k", pa.string()), ("v", pa.int64())])
    store = MemoryPartitionStore(schema, options=SMALL)
    before = store.snapshot()
    expected = []
    for start in range(0, 5000, 100):
        keys = [f"key{i % 7}" for i in range(start, start + 100)]
        store.append(pa.record_batch([pa.array(keys), pa.array(range(start, start + 100))], schema=schema))
        expected += list(zip(keys, range(start, start + 100)))
    segments, tail = store.snapshot()
    assert before == ((), ())                                   # an older snapshot does not change
    assert segments and sum(s.info.rows for s in segments) + sum(b.num_rows for b in tail) == 5000
    assert all(s.info.columns["k"].encoding == "dictionary" for s in segments)
    assert store.row_count() == 5000
    assert sorted((r["k"], r["v"]) for r in _rows(store)) == sorted(expected)
    # encoded scans hand out the stored form: dictionary codes, not strings
    first = next(store.scan(["k"], encoded=True))
    assert pa.types.is_dictionary(first.column(0).type)
    store.replace([pa.record_batch([pa.array(["x"]), pa.array([7])], schema=schema)])
    assert _rows(store) == [{"k": "x", "v": 7}]
    assert sum(s.info.rows for s in segments) > 1000           # the old snapshot still reads its rows


def test_bulk_append_is_sorted_by_the_sort_key_into_runs_and_bit_packed():
    rng = np.random.default_rng(3)
    schema = pa.schema([("s", pa.int32()), ("n", pa.int64()), ("f", pa.float64())])
    s = rng.integers(0, 20, 3000).astype(np.int32)
    n = rng.integers(1000, 1_000_000, 3000)
    f = rng.random(3000)
    nulls = rng.random(3000) < 0.1
    table = pa.table({"s": s, "n": pa.array(n, mask=nulls), "f": f}, schema=schema)
    store = MemoryPartitionStore(schema, sort_key=("s",), options=SMALL)
    store.prepare_write(table.to_batches()).apply()
    segments, tail = store.snapshot()
    assert not tail and len(segments) == 1
    stats = segments[0].info.columns
    assert (stats["s"].encoding, stats["n"].encoding, stats["f"].encoding) == ("run_end", "bitpack", "plain")
    assert stats["s"].min == int(s.min()) and stats["s"].max == int(s.max())
    assert stats["n"].nulls == int(nulls.sum())
    got = pa.Table.from_batches(list(store.scan()), schema=schema)
    assert got.column("s").to_pylist() == sorted(s.tolist())          # sorted, as on disk
    oracle = sorted(zip(s.tolist(), [None if m else v for v, m in zip(n.tolist(), nulls)], f.tolist()),
                    key=repr)
    assert sorted(zip(*[got.column(c).to_pylist() for c in schema.names]), key=repr) == oracle
    # zone maps skip a segment no row of which can match
    assert list(store.scan(["s"], bounds=[("s", "gt", 100)])) == []


def test_delete_marks_rows_in_segments_and_filters_the_tail():
    store = MemoryPartitionStore(SCHEMA, options=SMALL)
    store.prepare_write([pa.record_batch([pa.array(range(2000))], schema=SCHEMA)]).apply()
    for i in range(2000, 2010):
        store.append(_one_row(i))
    old = store.snapshot()
    part = store.delete_rows(_Matcher("a", 1500), collect=True)
    assert part.deleted == 1500 and sum(b.num_rows for b in part.deleted_rows) == 1500
    part.apply()
    assert store.row_count() == 510
    assert [r["a"] for r in _rows(store)] == list(range(1500, 2010))
    assert sum(b.num_rows for b in store.scan(snapshot=old)) == 2010      # an older snapshot keeps its rows
    store.delete_rows(_Matcher("a", 2005), collect=False).apply()
    assert [r["a"] for r in _rows(store)] == list(range(2005, 2010))
    store.merge(force=True)
    assert [r["a"] for r in _rows(store)] == list(range(2005, 2010))


def test_a_scan_counts_only_its_own_reads():
    """EXPLAIN ANALYZE's rows from storage: a scan given ``stats`` counts what it read, however other
    scans of the store (another query's, the background statistics collection) interleave with it;
    the store's own scan_stats count both."""
    store = MemoryPartitionStore(pa.schema([("k", pa.int64())]))
    for start in range(0, 3000, 1000):
        store.append(pa.record_batch([pa.array(np.arange(start, start + 1000))], names=["k"]))
    mine = {"segments_read": 0, "rows_read": 0, "index_lookups": 0}
    before = store.scan_stats["rows_read"]
    scan, other = store.scan(["k"], stats=mine), store.scan(["k"])
    rows = 0
    for batch, _ in zip(scan, other):       # the two scans read batch for batch, interleaved
        rows += batch.num_rows
    rows += sum(b.num_rows for b in scan)
    assert rows == 3000 and mine["rows_read"] == 3000
    assert store.scan_stats["rows_read"] - before > mine["rows_read"]     # the other scan's reads too
