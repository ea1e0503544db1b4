"""Column statistics: what ANALYZE collects, that summaries computed per partition and merged equal
the statistics of the whole column, and when statistics are collected again."""
import datetime
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

import engine
from engine.stats.collect import FREQUENT_KEPT, collect_column
from engine.stats.histogram import ColumnStats, join_rows


def _on(parts):
    """``on_partitions`` over in-memory partitions (what Runner.map_column_partitions does on leaves)."""
    return lambda fn: [fn(pa.chunked_array([p])) for p in parts]


def _split(array: pa.Array, n: int) -> list[pa.Array]:
    size = -(-len(array) // n)
    return [array.slice(i * size, size) for i in range(n)]


ZIPF = np.random.default_rng(3).zipf(1.3, 200_000) % 5_000


def test_counts_min_max_and_nulls():
    column = pa.array([3, None, 1, 7, None, 3, 3])
    s = collect_column(_on(_split(column, 3)))
    assert (s.rows, s.nulls, s.min, s.max, s.ndv) == (7, 2, 1, 7, 3)
    assert s.frequent == {3: 3, 1: 1, 7: 1}


def test_frequent_values_are_exact_however_the_rows_are_placed():
    values = pa.array(ZIPF)
    whole = collect_column(_on([values]))
    # each partition proposes its own top values; a value frequent overall is counted everywhere
    placed = collect_column(_on(_split(pa.array(np.sort(ZIPF)), 8)))
    true = dict(zip(*np.unique(ZIPF, return_counts=True)))
    assert len(whole.frequent) == FREQUENT_KEPT >= 50
    for stats in (whole, placed):
        assert all(true[v] == n for v, n in stats.frequent.items())
        assert stats.valid == sum(stats.frequent.values()) + sum(b.rows for b in stats.buckets)
    assert whole.frequent == placed.frequent
    top = sorted(true.items(), key=lambda kv: -kv[1])[:FREQUENT_KEPT]
    assert {v for v, _ in top[:50]} <= set(whole.frequent)


def test_ndv_from_the_merged_sketch():
    values = np.random.default_rng(1).integers(0, 300_000, 400_000)
    s = collect_column(_on(_split(pa.array(values), 8)))
    assert s.ndv == pytest.approx(len(np.unique(values)), rel=0.03)


def test_equi_depth_buckets_answer_ranges():
    values = np.random.default_rng(2).normal(1000.0, 100.0, 100_000)
    s = collect_column(_on(_split(pa.array(values), 4)))
    for lo, hi in [(900, 1100), (1200, 1300), (None, 800)]:
        actual = ((values >= (lo if lo is not None else -np.inf)) & (values <= hi)).sum()
        assert s.range_rows(lo, True, hi, True) == pytest.approx(actual, rel=0.1, abs=50)


@pytest.mark.parametrize("values, lo, hi", [
    ([f"name#{i % 700:04d}" for i in range(20_000)], "name#0100", "name#0300"),
    ([datetime.date(1994, 1, 1) + datetime.timedelta(days=i % 900) for i in range(20_000)],
     datetime.date(1994, 6, 1), datetime.date(1995, 1, 1)),
    ([Decimal(i % 1000) / 100 for i in range(20_000)], Decimal("1.50"), Decimal("4.00")),
])
def test_strings_dates_and_decimals(values, lo, hi):
    s = collect_column(_on(_split(pa.array(values), 4)))
    actual = sum(lo <= v < hi for v in values)
    assert s.range_rows(lo, True, hi, False) == pytest.approx(actual, rel=0.1)
    assert s.eq_rows(values[5]) == pytest.approx(values.count(values[5]), rel=0.2)
    assert s.eq_rows(7) is None if isinstance(values[0], (str, datetime.date)) else True


def test_like_prefix_is_a_string_range():
    values = [f"{p}-{i}" for p in ("PROMO", "STANDARD", "ECONOMY") for i in range(3000)]
    s = collect_column(_on(_split(pa.array(values), 3)))
    assert s.prefix_rows("PROMO") == pytest.approx(3000, rel=0.1)
    assert s.prefix_rows("ZZZ") == 0


def test_all_null_and_empty_columns():
    s = collect_column(_on([pa.array([None, None], type=pa.int64()), pa.array([], type=pa.int64())]))
    assert (s.rows, s.nulls, s.ndv, s.min) == (2, 2, 0.0, None)
    assert s.eq_rows(1) is None


def test_join_rows_of_skewed_keys():
    a = ColumnStats(110, 0, 3.0, 1, 3, {1: 100, 2: 5, 3: 5})
    b = ColumnStats(12, 0, 2.0, 1, 2, {1: 2, 2: 10})
    assert join_rows(a, b) == 100 * 2 + 5 * 10


# -- through a cluster ----------------------------------------------------------------------------

@pytest.fixture()
def con():
    c = engine.connect()
    c.execute("CREATE TABLE t (k INT, s VARCHAR(20), SHARD KEY (k))")
    c.execute("CREATE TABLE r (k INT)")
    return c


def _table(con, name):
    return con.session.catalog.table("canopy", name)


def test_analyze_table_collects_every_column(con):
    con.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b'), (2, NULL)")
    assert con.execute("ANALYZE TABLE t, r").fetchall() == [
        ("canopy.t", "analyze", "status", "OK"), ("canopy.r", "analyze", "status", "OK")]
    stats = con.session.statistics
    assert stats.cached(_table(con, "t"), "K").frequent == {2: 2, 1: 1}
    assert stats.cached(_table(con, "t"), "s").nulls == 1
    assert stats.cached(_table(con, "r"), "k").rows == 0


def test_analyze_unknown_table_changes_nothing(con):
    with pytest.raises(engine.ProgrammingError, match="nope"):
        con.execute("ANALYZE TABLE t, nope")
    assert con.session.statistics.cached(_table(con, "t"), "k") is None


def test_refreshed_after_a_fifth_more_rows(con):
    stats, table = con.session.statistics, _table(con, "t")
    con.session.runner.insert(table, pa.table({"k": pa.array(np.arange(1000, dtype=np.int32)),
                                               "s": pa.array(["x"] * 1000)}))
    assert stats.column_stats(table, "k").source == "segment metadata"      # at once; the histogram in the background
    stats.wait()
    first = stats.column_stats(table, "k")
    assert first.source == "histogram"
    con.session.runner.insert(table, pa.table({"k": pa.array(np.zeros(150, dtype=np.int32)),
                                               "s": pa.array(["y"] * 150)}))
    assert stats.column_stats(table, "k") is first          # 15% more: kept
    con.session.runner.insert(table, pa.table({"k": pa.array(np.zeros(100, dtype=np.int32)),
                                               "s": pa.array(["y"] * 100)}))
    quick = stats.column_stats(table, "k")                  # 25% more: collected again
    assert quick.source == "segment metadata" and quick.rows == 1250
    stats.wait()
    fresh = stats.column_stats(table, "k")
    assert fresh is not first and fresh.rows == 1250 and fresh.frequent[0] == 251


def test_explain_shows_estimates_and_their_source(con):
    con.session.runner.insert(_table(con, "t"), pa.table({"k": pa.array(np.arange(1000, dtype=np.int32) % 10),
                                                          "s": pa.array(["x"] * 1000)}))
    sql = "EXPLAIN SELECT k, COUNT(*) FROM t WHERE k = 3 AND s LIKE '%z%' GROUP BY k"
    # first: the quick statistics of the in-memory table (k: 10 values in [0, 9] -> 100 rows), computed
    # by this EXPLAIN (the histogram may be there by the next statement)
    scan = next(r[0] for r in con.execute("EXPLAIN SELECT * FROM t WHERE k = 3").fetchall() if "Scan t" in r[0])
    assert scan.endswith("(est. 100 rows: segment metadata)"), scan
    con.execute(sql)
    con.session.statistics.wait()
    lines = [r[0] for r in con.execute(sql).fetchall()]
    scan = next(l for l in lines if l.lstrip().startswith("Scan t"))
    assert scan.endswith("(est. 1 rows: histogram)")         # no sampled s contains 'z': at least 1 row
    final = next(l for l in lines if "HashAggregate" in l and "partial" not in l)
    assert final.endswith("(est. 1 rows: ndv)")


def test_update_forgets_the_statistics(con):
    con.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    con.execute("ANALYZE TABLE t")
    con.execute("UPDATE t SET k = 5")
    stats = con.session.statistics
    assert stats.cached(_table(con, "t"), "k") is None
    assert (stats.column_stats(_table(con, "t"), "k").min, stats.column_stats(_table(con, "t"), "k").max) == (5, 5)
    stats.wait()
    assert stats.column_stats(_table(con, "t"), "k").frequent == {5: 2}


def test_boolean_flags_and_all_null_columns(con):
    con.execute("CREATE TABLE f (flag BOOLEAN, nothing INT)")
    con.session.runner.insert(_table(con, "f"), pa.table({"flag": pa.array([True] * 30 + [False] * 970),
                                                          "nothing": pa.array([None] * 1000, type=pa.int32())}))
    for where, rows in [("flag", 30), ("NOT flag", 970), ("nothing = 5", 1)]:
        con.execute(f"EXPLAIN SELECT * FROM f WHERE {where}")
        con.session.statistics.wait()
        scan = next(r[0] for r in con.execute(f"EXPLAIN SELECT * FROM f WHERE {where}").fetchall() if "Scan f" in r[0])
        assert scan.endswith(f"(est. {rows} rows: histogram)"), (where, scan)


def test_like_inside_the_text_comes_from_the_sample(con):
    s = np.where(np.arange(20000) % 10 == 0, "a green part", "a red part")
    con.session.runner.insert(_table(con, "t"), pa.table({"k": pa.array(np.zeros(20000, dtype=np.int32)),
                                                          "s": pa.array(s)}))
    con.execute("EXPLAIN SELECT k FROM t WHERE s LIKE '%green%'")
    con.session.statistics.wait()
    lines = [r[0] for r in con.execute("EXPLAIN SELECT k FROM t WHERE s LIKE '%green%'").fetchall()]
    scan = next(l for l in lines if l.lstrip().startswith("Scan t"))
    estimated = int(scan.rsplit("(est. ", 1)[1].split(" rows")[0].replace(",", ""))
    assert scan.endswith("rows: histogram)") and 1000 <= estimated <= 3000, scan       # true: 2,000


def test_sampled_buckets_of_a_column_with_many_values(monkeypatch):
    """Above FULL_COUNT_NDV distinct values the buckets come from each partition's row sample (here
    2,048 of 50,000 rows) while the frequent values stay exact and the rows add up."""
    from engine.stats import collect
    monkeypatch.setattr(collect, "SAMPLE_ROWS", 2048)
    monkeypatch.setattr(collect, "FULL_COUNT_NDV", 1000)
    rng = np.random.default_rng(11)
    # 40% of rows on 20 heavy values, the rest spread thinly over 0..60,000 with a dense block at the low end
    values = np.concatenate([np.repeat(np.arange(20) * 1000, 4000), rng.integers(0, 60_000, 90_000),
                             rng.integers(0, 500, 30_000) + 100_000])
    rng.shuffle(values)
    s = collect_column(_on(_split(pa.array(values), 4)))
    true = dict(zip(*np.unique(values, return_counts=True)))
    assert all(true[v] == n for v, n in s.frequent.items()) and {k * 1000 for k in range(20)} <= set(s.frequent)
    assert s.valid == len(values) == sum(s.frequent.values()) + sum(b.rows for b in s.buckets)
    assert s.ndv == pytest.approx(len(true), rel=0.03)
    for lo, hi in [(0, 30_000), (10_500, 11_500), (100_000, 100_250)]:
        actual = ((values >= lo) & (values <= hi)).sum()
        assert s.range_rows(lo, True, hi, True) == pytest.approx(actual, rel=0.3), (lo, hi)
    # values that are not frequent: rows per distinct value of their bucket; the dense block's values
    # hold ~60 rows each, the thin range's ~1.5: the buckets' distinct counts keep them apart
    dense = int(np.setdiff1d(np.arange(100_000, 100_500), list(s.frequent))[-1])
    assert s.eq_rows(dense) == pytest.approx(60, rel=0.3)
    thin = int(np.setdiff1d(np.arange(30_001, 30_100), list(s.frequent))[0])
    assert s.eq_rows(thin) == pytest.approx(90_000 / 60_000, rel=0.5)


def test_text_ranges_inside_a_bucket_come_from_the_sample():
    """A LIKE prefix inside a text bucket: byte-order interpolation put 'forest%' at ~0 rows of a
    bucket spanning 'almond'..'green'; the bucket's sampled values give its share."""
    words = ["almond", "antique", "aquamarine", "azure", "beige", "bisque", "black", "blanched", "blue",
             "blush", "brown", "burlywood", "chartreuse", "chiffon", "chocolate", "coral", "cornflower",
             "cream", "cyan", "dark", "deep", "dim", "dodger", "drab", "firebrick", "floral", "forest",
             "frosted", "gainsboro", "ghost", "goldenrod", "green"]
    rng = np.random.default_rng(5)
    names = [f"{words[a]} {words[b]} {i}" for i, (a, b) in enumerate(rng.integers(0, len(words), (40_000, 2)))]
    s = collect_column(_on(_split(pa.array(names), 4)))
    for prefix in ("forest", "blu", "dark g"):
        actual = sum(n.startswith(prefix) for n in names)
        estimate = s.prefix_rows(prefix)            # interpolated: 698, 1,795 and 1 of 1,254, 2,461, 159
        assert max(estimate / actual, actual / estimate) <= 1.5, (prefix, estimate, actual)
