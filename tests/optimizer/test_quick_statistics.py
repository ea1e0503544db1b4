"""A column's first statistics come at once, without a pass over its rows (engine.stats.quick):
from the segments' write-time statistics and sketches (durable and in-memory tables alike); EXPLAIN
names that source, and the histogram collected in the background replaces them."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import engine
from engine.stats import quick


def _scan_line(con, sql):
    return next(r[0] for r in con.execute("EXPLAIN " + sql).fetchall() if r[0].lstrip().startswith("Scan"))


@pytest.fixture()
def durable(tmp_path):
    con = engine.connect(data_dir=str(tmp_path), progress=False, flush_rows=20_000, segment_rows=40_000)
    con.execute("CREATE TABLE t (k BIGINT, v INT, s VARCHAR(10), SORT KEY (v))")
    rng = np.random.default_rng(5)
    k = rng.integers(0, 60_000, 200_000)
    con.load_table("t", pa.table({"k": k, "v": pa.array(rng.integers(0, 100, 200_000), pa.int32()),
                                  "s": pa.array(np.array(["a", "b", None, "d"], dtype=object)[k % 4])}))
    con.execute("INSERT INTO t VALUES (7, 50, 'a'), (8, NULL, NULL)")          # rows in write buffers too
    yield con, k
    con.close()


def test_durable_table_first_statistics_from_segment_metadata(durable):
    con, k = durable
    stats = con.session.statistics
    table = con.session.catalog.table("canopy", "t")
    first = stats.column_stats(table, "k")
    assert first.source == "segment metadata" and first.rows == 200_002
    assert (first.min, first.max) == (int(k.min()), int(k.max()))
    assert first.ndv == pytest.approx(len(np.unique(k)), rel=0.1)     # merged 1 KiB sketches, ~3% error
    s = stats.column_stats(table, "s")
    assert (s.nulls, round(s.ndv)) == (int(np.count_nonzero(k % 4 == 2)) + 1, 3)
    assert _scan_line(con, "SELECT * FROM t WHERE v = 50").endswith("rows: segment metadata)")
    assert stats.wait(timeout=120)
    assert stats.column_stats(table, "k").source == "histogram"
    assert _scan_line(con, "SELECT * FROM t WHERE v = 50").endswith("rows: histogram)")


def test_deleted_rows_leave_the_row_counts(durable):
    con, _ = durable
    con.execute("DELETE FROM t WHERE v < 50")
    live = con.execute("SELECT COUNT(*), COUNT(s) FROM t").fetchall()[0]
    table = con.session.catalog.table("canopy", "t")
    first = con.session.statistics.column_stats(table, "s")
    assert first.source == "segment metadata" and first.rows == live[0]
    assert first.valid == pytest.approx(live[1], rel=0.02)     # nulls taken off in proportion


def test_memory_table_first_statistics_from_its_segments():
    con = engine.connect()
    con.execute("CREATE TABLE m (id BIGINT, g INT)")
    n = 1_000_000
    con.load_table("m", pa.table({"id": np.arange(n), "g": pa.array(np.arange(n) % 5000, pa.int32())}))
    stats, table = con.session.statistics, con.session.catalog.table("canopy", "m")
    ids, groups = stats.column_stats(table, "id"), stats.column_stats(table, "g")
    # in memory as on disk: the segments' write-time statistics and sketches
    assert ids.source == groups.source == "segment metadata"
    assert (ids.min, ids.max, ids.rows) == (0, n - 1, n)
    assert ids.ndv == pytest.approx(n, rel=0.06)          # a key
    assert groups.ndv == pytest.approx(5000, rel=0.06)
    assert stats.wait(timeout=120)
    assert stats.column_stats(table, "g").source == "histogram"


def test_a_forgotten_table_drops_the_background_result():
    con = engine.connect()
    con.execute("CREATE TABLE m (g INT)")
    con.execute("INSERT INTO m VALUES (1), (2), (2)")
    stats, table = con.session.statistics, con.session.catalog.table("canopy", "m")
    assert stats.column_stats(table, "g").source == "segment metadata"    # the tail's rows, hashed
    stats.forget(table)                 # what a write does: the running collection is of older rows
    assert stats.wait(timeout=60)
    assert stats.cached(table, "g") is None


@pytest.mark.parametrize("domain, rows", [(1000, 50_000), (40_000, 50_000), (10**9, 50_000)])
def test_scaled_ndv_of_a_uniform_sample(domain, rows):
    values = np.random.default_rng(2).integers(0, domain, rows)
    sample = values[:5000]
    estimate = quick._scale_ndv(float(len(np.unique(sample))), len(sample), rows)
    assert estimate == pytest.approx(len(np.unique(values)), rel=0.1)
