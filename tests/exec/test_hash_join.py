"""HashJoinExec on the join kernel: every kind (inner, left, semi, anti, NOT IN) with NULL keys,
several key columns, strings, dates and decimals, residuals, both build sides; results against
DuckDB. And the runtime Bloom filter: EXPLAIN names it, EXPLAIN ANALYZE counts the rows it kept, and
results do not change with it."""
import re
from collections import Counter

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import engine

A = [(1, "x", "2024-01-01", "1.50", 10), (2, "y", "2024-01-02", "2.00", 20), (2, "y", "2024-01-02", "2.00", 21),
     (3, None, "2024-01-03", None, 30), (None, "z", None, "4.25", 40), (5, "w", "2024-01-05", "5.00", None),
     (6, "v", "2024-01-06", "6.10", 60), (7, "u", "2024-01-07", "7.00", 70)]
B = [(2, "y", "2024-01-02", "2.00", 200), (2, "y", "2024-01-02", "2.00", 201), (3, "q", "2024-01-03", None, 300),
     (None, "z", None, "4.25", 400), (5, "w", "2024-01-05", "5.00", 500), (8, "t", "2024-01-08", "8.00", 800)]
BIG = [(i % 9, "s%d" % (i % 5), "2024-01-01", "1.00", i) for i in range(60)]

DDL = "CREATE TABLE {} (k BIGINT, s VARCHAR(10), d DATE, m DECIMAL(10,2), v BIGINT{})"

QUERIES = [
    "SELECT a.v, b.v FROM a JOIN b ON a.k = b.k",
    "SELECT a.v, b.v FROM a JOIN b ON a.k = b.k AND a.s = b.s",
    "SELECT a.v, b.v FROM a JOIN b ON a.s = b.s",
    "SELECT a.v, b.v FROM a JOIN b ON a.d = b.d AND a.m = b.m",
    "SELECT a.v, b.v FROM a LEFT JOIN b ON a.k = b.k",
    "SELECT a.v, b.v FROM a LEFT JOIN b ON a.k = b.k AND b.v > 200",
    "SELECT a.v, b.v FROM a JOIN b ON a.k = b.k AND a.v * 10 < b.v",
    "SELECT a.v FROM a WHERE EXISTS (SELECT 1 FROM b WHERE b.k = a.k)",
    "SELECT a.v FROM a WHERE NOT EXISTS (SELECT 1 FROM b WHERE b.k = a.k)",
    "SELECT a.v FROM a WHERE EXISTS (SELECT 1 FROM b WHERE b.k = a.k AND b.v > a.v * 10)",
    "SELECT a.v FROM a WHERE NOT EXISTS (SELECT 1 FROM b WHERE b.k = a.k AND b.v > a.v * 10)",
    "SELECT a.v FROM a WHERE a.k IN (SELECT k FROM b)",
    "SELECT a.v FROM a WHERE a.k NOT IN (SELECT k FROM b)",
    "SELECT a.v FROM a WHERE a.k NOT IN (SELECT k FROM b WHERE k IS NOT NULL)",
    "SELECT a.v FROM a WHERE a.k NOT IN (SELECT k FROM b WHERE v > 10000)",
    # the left input much smaller than the right: the table is built on the left
    "SELECT a.v, big.v FROM a JOIN big ON a.k = big.k",
    "SELECT a.v, big.v FROM a LEFT JOIN big ON a.k = big.k",
    "SELECT a.v FROM a WHERE EXISTS (SELECT 1 FROM big WHERE big.k = a.k)",
    "SELECT a.v FROM a WHERE NOT EXISTS (SELECT 1 FROM big WHERE big.k = a.k)",
    "SELECT a.v, big.v FROM a JOIN big ON a.s = big.s",
    # residuals: only their columns are gathered for every key-matched pair, the output's for the kept
    "SELECT a.v, b.v, a.s, b.s FROM a FULL JOIN b ON a.k = b.k AND a.v * 10 < b.v",
    "SELECT a.s, a.m, big.s, big.v FROM a JOIN big ON a.k = big.k AND big.v > a.v",
    "SELECT a.v, a.d, big.v FROM a LEFT JOIN big ON a.k = big.k AND big.v > a.v + 20",
    "SELECT a.v, a.s FROM a WHERE EXISTS (SELECT 1 FROM big WHERE big.k = a.k AND big.s <> a.s)",
]


@pytest.fixture(scope="module")
def both():
    con = engine.connect()
    duck = duckdb.connect()
    for name, rows, shard in (("a", A, ", SHARD KEY (v)"), ("b", B, ", SHARD KEY (v)"), ("big", BIG, ", SHARD KEY (v)")):
        con.execute(DDL.format(name, shard))
        duck.execute(DDL.format(name, ""))
        con.executemany(f"INSERT INTO {name} VALUES (%s, %s, %s, %s, %s)", rows)
        duck.executemany(f"INSERT INTO {name} VALUES (?, ?, ?, ?, ?)", rows)
    return con, duck


@pytest.mark.parametrize("sql", QUERIES)
def test_matches_duckdb(both, sql):
    con, duck = both
    assert Counter(con.execute(sql).fetchall()) == Counter(duck.execute(sql).fetchall())


@pytest.fixture(scope="module")
def selective():
    """A big probe side (fact) and a few build keys (dim), as TPC-H's lineitem and a filtered part."""
    con = engine.connect()
    con.execute("CREATE TABLE fact (id BIGINT, fk BIGINT, qty BIGINT, SHARD KEY (id))")
    con.execute("CREATE TABLE dim (pk BIGINT, name VARCHAR(10), SHARD KEY (pk))")
    rows = 200_000
    ids = np.arange(rows, dtype=np.int64)
    con.load_table("fact", pa.table({"id": ids, "fk": ids % 5000, "qty": ids % 50}))
    con.load_table("dim", pa.table({"pk": np.arange(5000, dtype=np.int64),
                                    "name": ["n%d" % (i % 100) for i in range(5000)]}))
    return con


SELECTIVE = "SELECT SUM(qty), COUNT(*) FROM fact JOIN dim ON fk = pk WHERE name = 'n7'"


def test_bloom_filter_in_explain(selective):
    plan = "\n".join(r[0] for r in selective.execute("EXPLAIN " + SELECTIVE).fetchall())
    # the planner placed the filter: one id on the join and on the probe side's scan
    join = re.search(r"bloom filter #(\d+) -> Scan fact\.fact\.fk", plan)
    assert join, plan
    assert re.search(r"Scan fact \[.*\] bloom filter #" + join.group(1) + " on fk", plan), plan


def test_bloom_filter_drops_rows_in_the_scan(selective):
    lines = [r[0] for r in selective.execute("EXPLAIN ANALYZE " + SELECTIVE).fetchall()]
    scan = next(line for line in lines if line.lstrip().startswith("Scan fact"))
    assert "bloom filter kept" in scan, lines
    kept, tested = (int(x.replace(",", "")) for x in
                    scan.split("bloom filter kept ")[1].split(" rows")[0].split(" of "))
    assert tested == 200_000 and 2_000 <= kept < 0.1 * tested, scan     # 50 keys of 5000: 1% + false positives
    assert selective.execute(SELECTIVE).fetchall() == [(sum(i % 50 for i in range(200_000) if i % 5000 % 100 == 7),
                                                       2_000)]


def test_bloom_filter_through_a_renaming_projection(selective):
    # the probe key is a derived table's column: the filter must name the scan's own column (it once
    # named the derived column, and the scan failed with 'Field "f.k#.." does not exist in schema')
    sql = ("SELECT SUM(f.q), COUNT(*) FROM (SELECT fk AS k, qty AS q FROM fact) f "
           "JOIN (SELECT pk FROM dim WHERE name = 'n7') d ON f.k = d.pk")
    plan = "\n".join(r[0] for r in selective.execute("EXPLAIN " + sql).fetchall())
    assert re.search(r"bloom filter #\d+ -> Scan fact\.fact\.fk", plan), plan
    assert selective.execute(sql).fetchall() == selective.execute(SELECTIVE).fetchall()


def test_bloom_filter_on_each_key_of_several(selective):
    # a two-key join (TPC-H Q2's partsupp probe) filters its scan on each key (fk drops most rows);
    # the scan's counts sum its filters' (the one on a dictionary column, probed per distinct value,
    # tests every row; the one on the plain column those that the first kept, or every row when first)
    sql = ("SELECT SUM(qty), COUNT(*) FROM fact JOIN (SELECT pk, pk % 50 AS q FROM dim WHERE name = 'n7') d "
           "ON fk = d.pk AND qty = d.q")
    lines = [r[0] for r in selective.execute("EXPLAIN ANALYZE " + sql).fetchall()]
    assert any(re.search(r"bloom filter #\d+ -> Scan fact\.fact\.fk", line) for line in lines), lines
    scan = next(line for line in lines if line.lstrip().startswith("Scan fact"))
    kept, tested = (int(x.replace(",", "")) for x in
                    scan.split("bloom filter kept ")[1].split(" rows")[0].split(" of "))
    assert re.search(r"bloom filters #\d+ on fk, #\d+ on qty", scan), scan
    assert 200_000 <= tested <= 400_000 and kept < 0.1 * tested, scan
    assert selective.execute(sql).fetchall() == selective.execute(SELECTIVE).fetchall()


def test_bloom_filter_switches_off_when_it_keeps_most_rows(selective):
    sql = "SELECT COUNT(*) FROM fact JOIN dim ON fk = pk WHERE name <> 'n7'"
    lines = [r[0] for r in selective.execute("EXPLAIN ANALYZE " + sql).fetchall()]
    scan = next(line for line in lines if line.lstrip().startswith("Scan fact"))
    tested = int(scan.split("bloom filter kept ")[1].split(" of ")[1].split(" rows")[0].replace(",", ""))
    assert tested < 200_000, scan        # stopped after its trial rows on each task
    assert selective.execute(sql).fetchall() == [(198_000,)]


def test_unique_build_keys_every_probe_row_kept(selective):
    """Unique build keys and every probe row matched: the probe rows are runs of consecutive rows
    (gathered as slices), over a probe side of many batches; against the sums computed here."""
    fk = np.arange(200_000) % 5000
    names = np.array(["n%d" % (i % 100) for i in range(5000)])[fk]
    qty = np.arange(200_000) % 50
    got = selective.execute("SELECT name, SUM(qty), COUNT(*) FROM fact JOIN dim ON fk = pk GROUP BY name").fetchall()
    want = {n: (int(qty[names == n].sum()), int((names == n).sum())) for n in np.unique(names)}
    assert {n: (int(s), c) for n, s, c in got} == want
    got = selective.execute("SELECT COUNT(*), SUM(qty), COUNT(name) FROM fact LEFT JOIN dim ON fk = pk").fetchall()
    assert got == [(200_000, int(qty.sum()), 200_000)]
    assert selective.execute("SELECT COUNT(*), SUM(qty) FROM fact WHERE NOT EXISTS "
                             "(SELECT 1 FROM dim WHERE pk = fk + 5000)").fetchall() == [(200_000, int(qty.sum()))]
    assert selective.execute("SELECT COUNT(*), SUM(qty) FROM fact WHERE EXISTS "
                             "(SELECT 1 FROM dim WHERE pk = fk)").fetchall() == [(200_000, int(qty.sum()))]
