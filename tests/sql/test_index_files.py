"""Segment hash indexes kept in the data_dir (engine.storage.columnstore.index_files): a point lookup
by key on a shuffled (unclustered) key reads one segment, also as the first lookup after a reopen and
on segments written since (a flush, a merge): no lookup has to read a key column to build an index.
Damaged index files are rebuilt; a merged-away segment's index files go with it. Answers are checked
against the generated rows; the read counts look at the embedded runner's stores."""
from __future__ import annotations

import gc
import os
import re
import time

import numpy as np
import pyarrow as pa
import pytest

import engine
from engine.storage import hash_index

pytestmark = pytest.mark.skipif(os.environ.get("CANOPY_RUNNER") == "ray",
                                reason="counts the embedded runner's store reads and files")
SEGMENT_ROWS = 8192
ROWS = 100_000


def _connect(path):
    return engine.connect(data_dir=str(path), leaves=1, partitions_per_leaf=2, segment_rows=SEGMENT_ROWS,
                          flush_rows=SEGMENT_ROWS)


def _load(con, seed=0):
    keys = np.random.default_rng(seed).permutation(ROWS).astype(np.int64)      # no zone map rules a key out
    con.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, v BIGINT)")
    con.load_table("t", pa.table({"id": keys, "v": keys * 3}))
    # statistics now: collecting them later (for the optimizer) would read segments the counts include
    con.execute("ANALYZE TABLE t")
    return keys


def _index_files(path):
    return sorted(p for p in path.rglob("*.hidx-*") if not p.name.endswith(".tmp"))


def _indexed_segments(path):
    return sorted(p.with_name(p.name.split(".hidx-")[0]) for p in _index_files(path))


def _segment_files(path):
    return sorted(p for p in path.rglob("seg-*.arrow"))


def _analyzed_reads(con, key):
    """(rows answered, segments read) from EXPLAIN ANALYZE of a point lookup."""
    text = "\n".join(r[0] for r in con.execute(f"EXPLAIN ANALYZE SELECT v FROM t WHERE id = {key}").fetchall())
    found = re.search(r"read ([\d,]+) segments, ([\d,]+) rows from storage", text)
    assert found, text
    return int(found.group(1).replace(",", "")), int(found.group(2).replace(",", ""))


@pytest.fixture
def builds(monkeypatch):
    """How many hash indexes were built from a column (not read from a file)."""
    counted = []
    build = hash_index.HashIndex.build.__func__

    def counting(cls, column, *args):
        counted.append(len(column))
        return build(cls, column, *args)
    monkeypatch.setattr(hash_index.HashIndex, "build", classmethod(counting))
    return counted


def test_point_lookup_reads_one_segment_and_needs_no_build_after_reopen(tmp_path, builds):
    con = _connect(tmp_path)
    keys = _load(con)
    segments = len(_segment_files(tmp_path))
    assert segments >= 10
    # the load's unique check looked the key up: the bulk insert's segments were written with its index
    assert len(_index_files(tmp_path)) == segments
    built = len(builds)
    for key in (int(keys[7]), int(keys[ROWS // 2])):
        assert con.execute("SELECT v FROM t WHERE id = %s", (key,)).fetchall() == [(key * 3,)]
        assert _analyzed_reads(con, key) == (1, 1)
    assert len(builds) == built                 # answered from the indexes written with the segments
    con.close()

    again = _connect(tmp_path)
    try:
        key = int(keys[12345])
        assert again.execute("SELECT v FROM t WHERE id = %s", (key,)).fetchall() == [(key * 3,)]
        assert _analyzed_reads(again, key) == (1, 1)
        assert again.execute("SELECT v FROM t WHERE id = -1").fetchall() == []
        assert len(builds) == built             # read from the files, no key column scanned
    finally:
        again.close()


def test_new_segments_get_the_index_and_merged_ones_lose_it(tmp_path, builds):
    con = _connect(tmp_path)
    try:
        keys = _load(con, seed=1)
        more = np.arange(ROWS, ROWS + 3 * SEGMENT_ROWS, dtype=np.int64)
        con.load_table("t", pa.table({"id": more, "v": more * 3}))        # flushed as new segments
        assert len(_index_files(tmp_path)) == len(_segment_files(tmp_path))
        before = set(_segment_files(tmp_path))
        con.execute("DELETE FROM t WHERE id % 4 = 0")                     # a quarter deleted: merge rewrites
        con.execute("OPTIMIZE TABLE t")
        # the DELETE left every partition due, so the background merger started merging it too: it
        # reads and writes (building indexes, writing files) without a lock and finds its merge stale
        # only at install. Let it finish, or it builds an index (and adds files) during the checks below.
        assert con.session.runner._committer.merger.wait_idle(60)
        assert con.session.statistics.wait(60)
        assert set(_segment_files(tmp_path)) != before
        # the merged-away segments' files (index files with them) go when their last reader lets go,
        # a background maintenance thread's snapshot included
        # a background merge may be writing or dropping a segment meanwhile (its file and its index
        # file come and go one after the other): wait for a listing where they agree
        deadline = time.monotonic() + 30
        while True:
            indexed, segments = _indexed_segments(tmp_path), _segment_files(tmp_path)
            if indexed == segments or time.monotonic() > deadline:
                break
            gc.collect()
            time.sleep(0.1)
        assert indexed == segments
        built = len(builds)
        for key in (int(keys[3]), int(more[5]), int(more[4])):
            want = [] if key % 4 == 0 else [(key * 3,)]
            assert con.execute("SELECT v FROM t WHERE id = %s", (key,)).fetchall() == want
        assert len(builds) == built
    finally:
        con.close()


def test_a_damaged_index_file_is_rebuilt(tmp_path, builds):
    con = _connect(tmp_path)
    keys = _load(con, seed=2)
    con.close()
    for path in _index_files(tmp_path):
        data = bytearray(path.read_bytes())
        data[-3] ^= 0xFF                       # a flipped position: the CRC32 no longer matches
        path.write_bytes(bytes(data))
    again = _connect(tmp_path)
    try:
        built = len(builds)
        for key in keys[:5].tolist():
            assert again.execute("SELECT v FROM t WHERE id = %s", (key,)).fetchall() == [(key * 3,)]
        assert len(builds) > built              # rebuilt from the segments ...
        rebuilt = len(builds)
    finally:
        again.close()
    third = _connect(tmp_path)
    try:
        assert third.execute("SELECT v FROM t WHERE id = %s", (int(keys[9]),)).fetchall() == [(int(keys[9]) * 3,)]
        assert len(builds) == rebuilt           # ... and written again
    finally:
        third.close()
