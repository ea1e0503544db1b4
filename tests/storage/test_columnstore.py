"""The durable columnstore: reopen, encodings, zone maps, WAL tail, checksums, atomic statements."""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

import engine
from engine.errors import Error, StorageCorruptionError
from engine.storage.columnstore import ColumnstorePartitionStore, CommitLog, Committer, StoreOptions
from engine.storage.columnstore.wal import encode_wal_record

SMALL = dict(flush_rows=1000, segment_rows=4000, chunk_rows=500)


def _connect(path, **options):
    return engine.connect(data_dir=str(path), **{**SMALL, **options})


def _rows(con, sql):
    cur = con.cursor()
    cur.execute(sql)
    return cur.fetchall()


def _store(path, schema, sort_key=(), committed=frozenset(), **options):
    log = CommitLog(path / "commit.log")
    store = ColumnstorePartitionStore(path / "part", schema, sort_key, StoreOptions(**{**SMALL, **options}),
                                      Committer(log), committed or frozenset(log.committed))
    for csn in store.csns_seen:          # what DataDirectory.finish_recovery does for every partition
        log.observe(csn)
    return store, log


def test_tables_and_rows_survive_reopen(tmp_path):
    con = _connect(tmp_path)
    cur = con.cursor()
    cur.execute("CREATE DATABASE shop")
    cur.execute("CREATE TABLE shop.t (id BIGINT NOT NULL, name VARCHAR(20), price DECIMAL(10,2) DEFAULT 1.50,"
                " day DATE, SHARD KEY (id), SORT KEY (day))")
    cur.execute("CREATE REFERENCE TABLE shop.r (k INT, v TEXT)")
    cur.execute("INSERT INTO shop.t VALUES (1, 'a', 2.25, '2024-01-02'), (2, NULL, NULL, NULL)")
    cur.execute("INSERT INTO shop.t (id, name, day) SELECT id + 10, name, day FROM shop.t")
    cur.execute("INSERT INTO shop.r VALUES (1, 'x'), (2, 'y')")
    expected = _rows(con, "SELECT id, name, price, day FROM shop.t ORDER BY id")
    con.close()

    con = _connect(tmp_path)
    assert _rows(con, "SELECT id, name, price, day FROM shop.t ORDER BY id") == expected
    assert _rows(con, "SELECT count(*) FROM shop.r") == [(2,)]
    con.cursor().execute("USE shop")
    create = _rows(con, "SHOW CREATE TABLE t")[0][1]
    assert "SHARD KEY" in create and "SORT KEY" in create
    cur = con.cursor()
    cur.execute("CREATE TABLE shop.u (a INT)")          # ids continue above the persisted ones
    assert con.session.catalog.table("shop", "u").table_id > con.session.catalog.table("shop", "r").table_id
    cur.execute("DROP TABLE shop.r")
    con.close()
    con = _connect(tmp_path)
    assert [r[0] for r in _rows(con, "SHOW TABLES FROM shop")] == ["t", "u"]
    assert not list(tmp_path.glob("leaf-*/table-*[!0-9]"))
    con.close()


def test_delete_update_truncate_are_durable(tmp_path):
    con = _connect(tmp_path)
    cur = con.cursor()
    cur.execute("CREATE TABLE t (a INT, b INT, SHARD KEY (a))")
    cur.executemany("INSERT INTO t VALUES (%s, %s)", [(i, i % 7) for i in range(3000)])
    cur.execute("DELETE FROM t WHERE b = 3")
    assert cur.rowcount == sum(1 for i in range(3000) if i % 7 == 3)
    cur.execute("UPDATE t SET b = 100 WHERE a < 10")
    assert cur.rowcount == 9
    con.close()
    con = _connect(tmp_path)
    assert _rows(con, "SELECT count(*), sum(b) FROM t") == _expected_after_dml()
    con.cursor().execute("TRUNCATE TABLE t")
    con.close()
    con = _connect(tmp_path)
    assert _rows(con, "SELECT count(*) FROM t") == [(0,)]
    con.close()


def _expected_after_dml():
    kept = [(i, i % 7) for i in range(3000) if i % 7 != 3]
    total = sum(100 if a < 10 else b for a, b in kept)
    return [(len(kept), total)]


def test_flush_sorts_encodes_and_merges(tmp_path):
    schema = pa.schema([("k", pa.int64()), ("tag", pa.string()), ("x", pa.float64())])
    store, _ = _store(tmp_path, schema, sort_key=("k",))
    for part in range(6):
        n = 1000
        store.append(pa.record_batch([pa.array([(i * 7919) % 50 for i in range(n)], pa.int64()),
                                      pa.array([f"t{i % 7}" for i in range(n)]),
                                      pa.array([float(i * part) for i in range(n)])], schema=schema))
    infos = store.segment_infos()
    assert len(infos) < 6                         # flushed at 1000 rows each, small segments merged
    assert store.row_count() == 6000
    info = infos[0]
    assert info.columns["k"].encoding == "run_end" and info.columns["tag"].encoding == "dictionary"
    assert info.columns["x"].encoding == "plain"
    with pa.memory_map(str(store.directory / info.file)) as source:
        stored = ipc.open_file(source).schema
    assert pa.types.is_run_end_encoded(stored.field("k").type)
    assert pa.types.is_dictionary(stored.field("tag").type)
    keys = pa.concat_arrays([b.column(0) for b in store.scan(["k"])]).to_pylist()
    first = keys[:info.rows]
    assert first == sorted(first)
    assert all(b.num_rows <= 300 for b in store.scan(["tag", "k"], batch_rows=300))
    manifest = json.loads((store.directory / "manifest.json").read_text())["document"]
    assert manifest["version"] == 4 and {"min", "max", "nulls", "distinct", "sketch"} <= set(manifest["segments"][0]["columns"]["k"])
    assert set(manifest["segments"][0]["checksums"]["columns"]) == set(schema.names)


def test_segment_elimination_by_zone_maps(tmp_path):
    con = _connect(tmp_path, flush_rows=100)
    cur = con.cursor()
    cur.execute("CREATE TABLE t (a INT, b VARCHAR(5), SORT KEY (a))")
    for start in range(0, 2000, 500):
        cur.execute("INSERT INTO t SELECT a + %s, b FROM (SELECT 0 AS a, 'x' AS b) s" % start)
        cur.executemany("INSERT INTO t VALUES (%s, 'y')", [(start + i,) for i in range(1, 500)])
    cur.execute("OPTIMIZE TABLE t")
    stores = [s for leaf in con.session.runner.leaves for _, s in leaf.storage.stores_of(con.session.catalog.table("canopy", "t").table_id)]
    segments = [i for s in stores for i in s.segment_infos()]
    assert len(segments) >= 4
    read = sum(1 for s in stores for i in s.segment_infos() if i.may_match([("a", "between", (10, 20))]))
    assert 1 <= read < len(segments)
    assert _rows(con, "SELECT count(*) FROM t WHERE a BETWEEN 10 AND 20") == [(11,)]
    assert _rows(con, "SELECT count(*) FROM t WHERE a > 1998") == [(1,)]
    assert _rows(con, "SELECT count(*) FROM t WHERE a IN (3, 1500, 99999)") == [(2,)]
    assert _rows(con, "SELECT count(*) FROM t WHERE b = 'x'") == [(4,)]
    con.close()


def test_torn_wal_tail_is_dropped(tmp_path):
    """A crash between a statement's WAL record and its commit record can tear that record: the torn
    tail is dropped. The same cut in a committed statement's record is damage: refused, untouched."""
    schema = pa.schema([("a", pa.int64())])
    store, log = _store(tmp_path, schema)
    store.append(pa.record_batch([pa.array([1, 2, 3], pa.int64())], schema=schema))
    store.append(pa.record_batch([pa.array([4], pa.int64())], schema=schema))
    wal = store.directory / json.loads((store.directory / "manifest.json").read_text())["document"]["wal"]
    store.close()
    log.close()
    committed = wal.read_bytes()
    wal.write_bytes(committed[:-3])                  # the committed second record cut short
    with pytest.raises(StorageCorruptionError, match=f"{wal.name} is corrupt at byte"):
        _store(tmp_path, schema)
    assert wal.read_bytes() == committed[:-3]        # left for inspection
    uncommitted = encode_wal_record(10**6, schema, [pa.record_batch([pa.array([9], pa.int64())], schema=schema)],
                                    seen=None)
    data = committed + uncommitted
    wal.write_bytes(data[:-3])                       # a record whose commit record never came, torn
    store, log = _store(tmp_path, schema)
    assert [b.column(0).to_pylist() for b in store.scan(["a"])] == [[1, 2, 3], [4]]
    assert wal.stat().st_size == len(committed)      # truncated to the valid prefix
    store.append(pa.record_batch([pa.array([5], pa.int64())], schema=schema))
    store.close()
    log.close()
    store, _ = _store(tmp_path, schema)
    assert sorted(v for b in store.scan(["a"]) for v in b.column(0).to_pylist()) == [1, 2, 3, 4, 5]


def test_uncommitted_statement_is_not_recovered(tmp_path):
    """WAL records of a statement whose commit record never made it (a crash between prepare and
    commit) are ignored on every partition."""
    schema = pa.schema([("a", pa.int64())])
    store, log = _store(tmp_path, schema)
    store.append(pa.record_batch([pa.array([1], pa.int64())], schema=schema))
    csn = log.next_csn()
    store.prepare_append(csn, [pa.record_batch([pa.array([2], pa.int64())], schema=schema)]).sync()
    store.prepare_replace(log.next_csn(), [])          # a rewrite prepared, never committed
    store.close()
    log.close()
    store, log = _store(tmp_path, schema)
    assert [v for b in store.scan(["a"]) for v in b.column(0).to_pylist()] == [1]
    assert log.next_csn() > csn


def test_corrupt_segment_byte_names_the_file(tmp_path):
    con = _connect(tmp_path)
    cur = con.cursor()
    cur.execute("CREATE TABLE t (a INT, SORT KEY (a))")
    cur.execute("INSERT INTO t VALUES " + ",".join(f"({i})" for i in range(2000)))
    cur.execute("OPTIMIZE TABLE t")
    con.close()
    segment = sorted(tmp_path.glob("leaf-*/table-*/part-*/seg-*.arrow"))[0]
    data = bytearray(segment.read_bytes())
    data[len(data) // 2] ^= 0x40
    segment.write_bytes(bytes(data))
    con = _connect(tmp_path)
    with pytest.raises(Error, match=segment.name):
        _rows(con, "SELECT sum(a) FROM t")
    con.close()


def test_catalog_format_version(tmp_path):
    con = _connect(tmp_path)
    con.close()
    document = json.loads((tmp_path / "catalog.json").read_text())["document"]
    assert document["format"] == "canopy-catalog" and document["version"] == 2
    document["version"] = 99
    (tmp_path / "catalog.json").write_text(json.dumps(document))
    with pytest.raises(Error, match="format version 99"):
        _connect(tmp_path)


def test_data_dir_is_locked_and_shape_checked(tmp_path):
    con = _connect(tmp_path)
    with pytest.raises(Error, match="another process"):
        _connect(tmp_path)
    con.close()
    with pytest.raises(Error, match="leaves=2"):
        engine.connect(data_dir=str(tmp_path), leaves=3)
