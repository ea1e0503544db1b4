"""Storage benchmarks (issue 4): bytes on disk for TPC-H lineitem against Parquet (zstd) and a DuckDB
file, and flush / merge / scan throughput of the durable columnstore.

    python -m benchmarks.storage                 # SF1 (generated once under .data/tpch)
    python -m benchmarks.storage --sf 0.1
    python -m benchmarks.storage --all-tables    # and all 8 tables' bytes against Parquet and DuckDB
    python -m benchmarks.storage --workload d    # workload d on persisted tables, beside DuckDB's file
    python -m benchmarks.storage --workload delete [--rows N]   # DELETE of 1%: delete bitmaps vs rewrite
    python -m benchmarks.storage --workload reopen [--rows N]   # open + first query after reopening
    python -m benchmarks.storage --workload f [--rows N]        # workload f on persisted segments
    python -m benchmarks.storage --workload first [--rows N]    # first query on a new table: statistics
    python -m benchmarks.storage --workload wide [--rows N]     # first scan of 1 of 170 columns: checksums
    python -m benchmarks.storage --workload tpch-first [--sf S] [--statistics inline|background]
                                                                # TPC-H's 22 queries, first run

Workload d (``../shared/bench/WORKLOADS.md``): ``t(i INT)``, 10M rows sorted by ``SORT KEY (i)``,
``COUNT(*) WHERE i = 2``, through SQL on a reopened data directory and on a reopened DuckDB database
file, in the same run: the first query after opening and the median of the warm ones. The query runs
once before the data directory is closed (the first query on a new table plans from quick statistics
while the histogram is collected in the background; it is persisted, so reopening does not collect it
again). The same 10M
rows with 100x more runs (100,000 values) shows the cost growing with the runs, not the rows.

Canopy: ``engine.connect(data_dir=...)`` (2 leaves x 4 partitions), ``LOAD DATA`` of lineitem.csv, then
``OPTIMIZE TABLE``; bytes = every file under the data directory. Parquet: the same Arrow table written
by pyarrow with zstd (one file, default row groups). DuckDB: ``COPY`` of the same CSV into a database
file, then ``CHECKPOINT``. Flush = sort by the SORT KEY + encode + write one partition's rows as
segments; merge = 16 small segments combined; scan = every column decoded, and one column.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

import engine
from engine.storage.columnstore import ColumnstorePartitionStore, CommitLog, Committer, StoreOptions
from engine.workloads import tpch


def _bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file())


def _timed(fn):
    start = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - start


def _median_wall_and_cpu(fn, repeat: int) -> tuple[float, float]:
    """Median wall and process CPU seconds of ``repeat`` calls of ``fn``."""
    walls, cpus = [], []
    for _ in range(repeat):
        cpu = time.process_time()
        walls.append(_timed(fn)[1])
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def _median_ms(fn, repeat: int = 21) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def workload_d(work: Path, rows: int = 10_000_000) -> None:
    import numpy as np

    sql = "SELECT COUNT(*) FROM t WHERE i = 2"
    print(f"workload d: {sql}, {rows:,} rows sorted by i, persisted; first query after opening, then median of 21")
    for values in (1000, 100_000):
        table = pa.table({"i": pa.array(np.repeat(np.arange(values, dtype=np.int32), rows // values))})
        canopy_dir = work / f"d-canopy-{values}"
        shutil.rmtree(canopy_dir, ignore_errors=True)
        con = engine.connect(data_dir=str(canopy_dir), progress=False)
        con.execute("CREATE TABLE t (i INT, SORT KEY (i))")
        con.load_table("t", table)
        con.execute("OPTIMIZE TABLE t")
        _, ever = _timed(lambda: con.execute(sql).fetchall())      # quick statistics of i; the histogram
        con.session.statistics.wait()           # collected in the background, and persisted, before closing
        con.close()
        con = engine.connect(data_dir=str(canopy_dir), progress=False)
        (answer,), first = _timed(lambda: con.execute(sql).fetchall())
        warm = _median_ms(lambda: con.execute(sql).fetchall())
        floor = _median_ms(lambda: con.execute("SELECT COUNT(*) FROM t WHERE i = -1").fetchall())
        segments = len(list(canopy_dir.rglob("seg-*.arrow")))
        con.close()
        line = (f"  {values:>7,} values: canopy {warm:6.2f} ms (first after reopening {first * 1e3:6.1f} ms, first on"
                f" the new table {ever * 1e3:6.1f} ms; {segments} segments, count {answer[0]:,}; every segment"
                f" eliminated: {floor:.2f} ms)")
        try:
            import duckdb

            duck_file = work / f"d-{values}.duckdb"
            duck_file.unlink(missing_ok=True)
            duck = duckdb.connect(str(duck_file))
            duck.register("src", table)
            duck.execute("CREATE TABLE t AS SELECT * FROM src ORDER BY i")
            duck.execute("CHECKPOINT")
            duck.close()
            duck = duckdb.connect(str(duck_file))
            (duck_answer,), duck_first = _timed(lambda: duck.execute(sql).fetchall())
            duck_warm = _median_ms(lambda: duck.execute(sql).fetchall())
            duck.close()
            assert duck_answer == answer, (duck_answer, answer)
            line += f"; duckdb {duckdb.__version__} file {duck_warm:6.2f} ms (first {duck_first * 1e3:6.1f} ms)"
        except ImportError:
            line += "; duckdb not installed"
        print(line)


def workload_delete(work: Path, rows: int = 10_000_000) -> None:
    """DELETE of 1% of a persisted table (rows spread over every segment): in place with delete
    bitmaps, against the rewrite every DELETE did before them (still the path of a WHERE with a
    subquery: ``(SELECT 8)`` forces it here, same work otherwise), and DuckDB's file in the same run."""
    import numpy as np

    rng = np.random.default_rng(1)
    table = pa.table({"id": pa.array(rng.permutation(rows).astype(np.int64)),
                      "k": pa.array(np.sort(rng.integers(0, 10_000, rows)).astype(np.int32)),
                      "tag": pa.array(np.array(["red", "green", "blue", "gray"])[rng.integers(0, 4, rows)]),
                      "v": pa.array(rng.random(rows))})
    canopy_dir = work / "delete-canopy"
    shutil.rmtree(canopy_dir, ignore_errors=True)
    con = engine.connect(data_dir=str(canopy_dir), progress=False)
    con.execute("CREATE TABLE t (id BIGINT, k INT, tag VARCHAR(8), v DOUBLE, SHARD KEY (id), SORT KEY (k))")
    con.load_table("t", table)
    con.execute("OPTIMIZE TABLE t")
    segments = len(list(canopy_dir.rglob("seg-*.arrow")))
    print(f"DELETE of 1% of {rows:,} rows (id % 100 = c: rows in every one of {segments} segments), persisted")
    cur, in_place = _timed(lambda: con.execute("DELETE FROM t WHERE id % 100 = 7"))
    deleted = cur.rowcount
    dels = _bytes_of(canopy_dir, "dels-*.bin")
    cur, rewrite = _timed(lambda: con.execute("DELETE FROM t WHERE id % 100 = (SELECT 8)"))
    assert cur.rowcount == deleted == rows // 100, (cur.rowcount, deleted)
    (count,), count_s = _timed(lambda: con.execute("SELECT COUNT(*) FROM t").fetchall())
    assert count[0] == rows - 2 * deleted, count
    con.close()
    line = (f"  canopy in place (delete bitmaps): {in_place:6.2f} s ({dels / 1e3:.0f} KB of delete files written); "
            f"rewrite (before): {rewrite:6.2f} s; ratio {rewrite / in_place:.1f}x")
    try:
        import duckdb

        duck_file = work / "delete.duckdb"
        duck_file.unlink(missing_ok=True)
        duck = duckdb.connect(str(duck_file))
        duck.register("src", table)
        duck.execute("CREATE TABLE t AS SELECT * FROM src ORDER BY k")
        duck.execute("CHECKPOINT")
        (n,), duck_s = _timed(lambda: duck.execute("DELETE FROM t WHERE id % 100 = 7").fetchall())
        duck.close()
        assert n[0] == deleted
        line += f"; duckdb {duckdb.__version__} file {duck_s:6.2f} s"
    except ImportError:
        line += "; duckdb not installed"
    print(line)


def workload_reopen(work: Path, rows: int = 10_000_000, repeat: int = 7) -> None:
    """Reopening a data directory: ``engine.connect(data_dir=...)`` then the first query (workload d's
    ``COUNT(*) WHERE i = 2``), median of ``repeat`` reopen cycles in this process (imports warm), with
    the column statistics persisted (``statistics.json``, now) and without them (removed before each
    reopen: what every reopen did before, collecting them in the first query's planning); the warm
    query and DuckDB's file reopened in the same run as peers."""
    import numpy as np

    sql = "SELECT COUNT(*) FROM t WHERE i = 2"
    table = pa.table({"i": pa.array(np.repeat(np.arange(1000, dtype=np.int32), rows // 1000))})
    canopy_dir = work / "reopen-canopy"
    shutil.rmtree(canopy_dir, ignore_errors=True)
    con = engine.connect(data_dir=str(canopy_dir), progress=False)
    con.execute("CREATE TABLE t (i INT, SORT KEY (i))")
    con.load_table("t", table)
    con.execute("OPTIMIZE TABLE t")
    (answer,) = con.execute(sql).fetchall()          # quick statistics of i; the histogram collected
    con.session.statistics.wait()                    # in the background, and persisted
    con.close()
    print(f"reopen: connect(data_dir) + first `{sql}` on {rows:,} rows, median of {repeat} reopens")
    for label, keep_stats in (("statistics persisted", True), ("statistics removed", False)):
        opens, firsts, warms = [], [], []
        for _ in range(repeat):
            if not keep_stats:
                (canopy_dir / "statistics.json").unlink(missing_ok=True)
            con, open_s = _timed(lambda: engine.connect(data_dir=str(canopy_dir), progress=False))
            (got,), first_s = _timed(lambda: con.execute(sql).fetchall())
            _, warm_s = _timed(lambda: con.execute(sql).fetchall())
            con.close()
            assert got == answer
            opens.append(open_s)
            firsts.append(first_s)
            warms.append(warm_s)
        med = lambda xs: statistics.median(xs) * 1e3  # noqa: E731
        print(f"  canopy, {label:21}: open {med(opens):6.1f} ms, first query {med(firsts):6.1f} ms"
              f" (warm {med(warms):5.1f} ms)")
    try:
        import duckdb

        duck_file = work / "reopen.duckdb"
        duck_file.unlink(missing_ok=True)
        duck = duckdb.connect(str(duck_file))
        duck.register("src", table)
        duck.execute("CREATE TABLE t AS SELECT * FROM src ORDER BY i")
        duck.close()
        opens, firsts = [], []
        for _ in range(repeat):
            duck, open_s = _timed(lambda: duckdb.connect(str(duck_file)))
            _, first_s = _timed(lambda: duck.execute(sql).fetchall())
            duck.close()
            opens.append(open_s)
            firsts.append(first_s)
        print(f"  duckdb {duckdb.__version__} file             : open {statistics.median(opens) * 1e3:6.1f} ms,"
              f" first query {statistics.median(firsts) * 1e3:6.1f} ms")
    except ImportError:
        print("  duckdb not installed")


def workload_f(work: Path, rows: int = 20_000_000, repeat: int = 11) -> None:
    """Workload f (``../shared/bench/WORKLOADS.md``) on persisted data: ``trade(id, stock_symbol,
    price)``, 5000 Zipf-distributed symbols (``benchmarks.bench_groupby.workload_f``), stored in
    segments where ``stock_symbol`` is dictionary-encoded; the top-10 GROUP BY on the reopened data
    directory and on DuckDB's reopened database file in the same run (first query, median of warm),
    with the column cache off and on (its default budget): wall time, rows/s/core = rows / (wall x
    the runner's threads), and the process CPU time of a query (rows per CPU second, which a loaded
    machine disturbs less than wall time).
    The query runs once before closing: the first query on a new table collects the column
    statistics its plan estimates from (persisted since, so not again after reopening)."""
    from benchmarks.bench_groupby import workload_f as trades

    sql = "SELECT stock_symbol, COUNT(*) c FROM trade GROUP BY stock_symbol ORDER BY c DESC LIMIT 10"
    table = trades(rows)
    canopy_dir = work / "f-canopy"
    shutil.rmtree(canopy_dir, ignore_errors=True)
    con = engine.connect(data_dir=str(canopy_dir), progress=False)
    con.execute("CREATE TABLE trade (id BIGINT, stock_symbol VARCHAR(8), price DOUBLE, SHARD KEY (id))")
    _, load_s = _timed(lambda: con.load_table("trade", table))
    con.execute("OPTIMIZE TABLE trade")
    stores = [s for leaf in con.session.runner.leaves for s in leaf.storage.all_stores()]
    encodings = {i.columns["stock_symbol"].encoding for s in stores for i in s.segment_infos()}
    _, collecting = _timed(lambda: con.execute(sql).fetchall())    # the first query ever: quick statistics
    con.session.statistics.wait()       # the histograms collected in the background (and persisted)
    con.close()
    cores = min(os.cpu_count() or 1, 8)      # the local runner's threads (2 leaves x 4 partitions)
    runs = {}
    for label, options in (("no column cache", {"column_cache_bytes": 0}), ("column cache", {})):
        con = engine.connect(data_dir=str(canopy_dir), progress=False, **options)
        got, first = _timed(lambda: con.execute(sql).fetchall())
        warm, cpu = _median_wall_and_cpu(lambda: con.execute(sql).fetchall(), repeat)
        cache = stores_cache(con)
        con.close()
        runs[label] = (got, first, warm, cpu, cache)
    print(f"workload f on persisted data, {rows:,} rows (load {load_s:.1f} s; stock_symbol stored as "
          f"{'/'.join(sorted(encodings))}; first on the new table, from quick statistics, "
          f"{collecting * 1e3:.1f} ms): {sql}")
    for label, (got, first, warm, cpu, cache) in runs.items():
        print(f"  canopy data_dir, {label:15}: {warm * 1e3:7.1f} ms = {rows / warm / 1e6:7.1f} M rows/s"
              f" = {rows / warm / cores / 1e6:6.1f} M rows/s/core over {cores} cores;"
              f" {cpu * 1e3:6.1f} ms CPU = {rows / cpu / 1e6:6.1f} M rows per CPU second"
              f" (first after reopen {first * 1e3:6.1f} ms; cache {cache['bytes'] / 1e6:.1f} MB)")
    got, _, warm, _, _ = runs["column cache"]
    line = "  "
    try:
        import duckdb

        duck_file = work / "f.duckdb"
        duck_file.unlink(missing_ok=True)
        duck = duckdb.connect(str(duck_file))
        duck.register("src", table)
        duck.execute("CREATE TABLE trade AS SELECT * FROM src")
        duck.close()
        duck = duckdb.connect(str(duck_file))
        duck.execute("SET threads TO 2")
        want, duck_first = _timed(lambda: duck.execute(sql).fetchall())
        duck_warm, duck_cpu = _median_wall_and_cpu(lambda: duck.execute(sql).fetchall(), repeat)
        duck.close()
        assert [c for _, c in got] == [c for _, c in want], (got, want)
        line += (f"duckdb {duckdb.__version__} file (2 threads) {duck_warm * 1e3:7.1f} ms, {duck_cpu * 1e3:6.1f} ms CPU"
                 f" (first {duck_first * 1e3:7.1f} ms); canopy (column cache) / duckdb: wall"
                 f" {warm / duck_warm:.2f}, CPU {runs['column cache'][3] / duck_cpu:.2f}")
    except ImportError:
        line += "duckdb not installed"
    print(line)


def workload_first(work: Path, rows: int = 10_000_000) -> None:
    """The first query on a new table, alone: ``COUNT(*) WHERE i = 2`` on ``rows`` persisted rows
    (1000 values sorted, workload d's table) and on the same rows in memory, with the column's
    statistics collected inside the query (``background=False``: what every first query did before)
    and with the quick statistics of engine.stats.quick (segment metadata / a sample) while the
    histogram is collected in the background (the time until it is done printed beside)."""
    import numpy as np

    sql = "SELECT COUNT(*) FROM t WHERE i = 2"
    table = pa.table({"i": pa.array(np.repeat(np.arange(1000, dtype=np.int32), rows // 1000)),
                      "x": pa.array(np.random.default_rng(1).integers(0, rows, rows))})
    print(f"first query on a new table of {rows:,} rows: {sql}")
    for where in ("persisted", "in memory"):
        for background in (False, True):
            canopy_dir = work / f"first-{background}"
            shutil.rmtree(canopy_dir, ignore_errors=True)
            con = engine.connect(data_dir=str(canopy_dir) if where == "persisted" else None, progress=False)
            con.execute("CREATE TABLE t (i INT, x BIGINT, SORT KEY (i))")
            con.load_table("t", table)
            con.execute("OPTIMIZE TABLE t")
            stats = con.session.statistics
            stats.background = background
            (answer,), first = _timed(lambda: con.execute(sql).fetchall())
            _, done = _timed(stats.wait)
            source = stats.cached(con.session.catalog.table("canopy", "t"), "i").source
            _, second = _timed(lambda: con.execute(sql).fetchall())
            con.close()
            label = "quick statistics, histogram in background" if background else "statistics collected in the query"
            print(f"  {where:9}, {label:42}: first query {first * 1e3:7.1f} ms"
                  + (f" (histogram done {done * 1e3:6.0f} ms later)" if background else "")
                  + f"; next {second * 1e3:6.1f} ms from {source}; answer {answer[0]:,}")


def workload_wide(work: Path, rows: int = 500_000, columns: int = 170, repeat: int = 5) -> None:
    """The first scan of one column of a wide persisted segment (workload h's shape: ``columns``
    columns, a third each of BIGINT, DOUBLE and short strings): reading one column verifies its
    per-column checksum and the file's structure, against the whole-file CRC32 (what a segment of an
    older manifest still gets) — both on the same file in the page cache, fresh Segment objects each
    time (first open). Median of ``repeat``."""
    import dataclasses

    import numpy as np

    from engine.storage.columnstore.segment import Segment, write_segment

    rng = np.random.default_rng(3)
    arrays = {}
    for c in range(columns):
        kind = c % 3
        arrays[f"c{c}"] = (pa.array(rng.integers(0, 1 << 40, rows)) if kind == 0 else
                           pa.array(rng.random(rows)) if kind == 1 else
                           pa.array(rng.integers(0, 1 << 30, rows).astype(str)))
    table = pa.table(arrays)
    directory = work / "wide"
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    info, write_s = _timed(lambda: write_segment(directory / "seg-wide.arrow", table, 1 << 16))
    size = (directory / info.file).stat().st_size
    print(f"wide segment: {rows:,} rows x {columns} columns, {size / 1e6:.0f} MB (written in {write_s:.1f} s);"
          f" first scan of one column (c1, DOUBLE), fresh open each time, median of {repeat}")
    results = {}
    for label, entry in (("per-column checksums", info), ("whole-file CRC32", dataclasses.replace(info, checksums=None))):
        times = []
        for _ in range(repeat):
            segment = Segment(directory, entry, table.schema)
            _, took = _timed(lambda: sum(b.num_rows for b in segment.batches(["c1"], None)))
            times.append(took)
            segment.close()
        results[label] = statistics.median(times)
        print(f"  {label:21}: {results[label] * 1e3:7.1f} ms")
    print(f"  whole-file / per-column: {results['whole-file CRC32'] / results['per-column checksums']:.1f}x")


def workload_tpch_first(sf: float, modes: str = "inline,background") -> None:
    """TPC-H's 22 queries, each run once on freshly loaded tables (no statistics yet), in memory: the
    statistics collected inside the queries that ask (``inline``: ``background=False``, before)
    against quick statistics with the histograms collected in the background (``background``). Each
    mode on its own fresh load, in the order of ``modes``. The first mode of a process pays its
    warm-up (seconds on the shared box): compare modes each run first in a process of its own."""
    data = tpch.generate(sf, tpch.default_cache_dir())
    print(f"TPC-H SF{sf:g}, first run of the 22 queries on a fresh load (in memory)")
    totals = {}
    for background in [m == "background" for m in modes.split(",")]:
        con = engine.connect(progress=False, load_dir=str(data))
        tpch.create_schema(con)
        tpch.load(con, data)
        stats = con.session.statistics
        stats.background = background
        start = time.perf_counter()
        for i in range(1, 23):
            con.execute(tpch.query(f"q{i:02d}")).fetchall()
        totals[background] = time.perf_counter() - start
        _, done = _timed(stats.wait)
        con.close()
        print(f"  {'quick statistics, background histograms' if background else 'statistics collected in the queries':40}:"
              f" {totals[background]:6.2f} s" + (f" (background done {done:.1f} s after)" if background else ""))
    if len(totals) == 2:
        print(f"  before / after: {totals[False] / totals[True]:.2f}x")


def all_tables(work: Path, data: Path) -> None:
    """Bytes on disk of all 8 TPC-H tables: a Canopy data directory (LOAD DATA, OPTIMIZE TABLE), one
    zstd Parquet file per table (pyarrow), one DuckDB file (COPY, CHECKPOINT)."""
    canopy_dir = work / "canopy-all"
    shutil.rmtree(canopy_dir, ignore_errors=True)
    con = engine.connect(data_dir=str(canopy_dir), progress=False, load_dir=str(data))
    tpch.create_schema(con)
    tpch.load(con, data)
    parquet_bytes = 0
    for name in tpch.TABLES:
        con.execute(f"OPTIMIZE TABLE {name}")
        path = work / f"{name}.parquet"
        pq.write_table(con.session.execute(f"SELECT * FROM {name}").table, path, compression="zstd")
        parquet_bytes += path.stat().st_size
    con.close()
    line = f"all 8 tables: canopy {_bytes(canopy_dir) / 1e6:8.1f} MB, parquet (zstd) {parquet_bytes / 1e6:8.1f} MB"
    try:
        import duckdb
        duck_file = work / "all.duckdb"
        duck_file.unlink(missing_ok=True)
        duck = duckdb.connect(str(duck_file))
        tpch.load_duckdb(duck, data)
        duck.execute("CHECKPOINT")
        duck.close()
        line += f", duckdb {duck_file.stat().st_size / 1e6:8.1f} MB"
    except ImportError:
        line += ", duckdb not installed"
    print(line)


def stores_cache(con) -> dict:
    """The column cache's statistics of a connection's data directory (one cache for all its stores)."""
    stores = [s for leaf in con.session.runner.leaves for s in leaf.storage.all_stores()]
    return stores[0].options.column_cache.stats() if stores else {"bytes": 0}


def _bytes_of(path: Path, pattern: str) -> int:
    return sum(p.stat().st_size for p in Path(path).rglob(pattern))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sf", type=float, default=1.0)
    parser.add_argument("--workdir", default=None, help="where the data directories go (default: a temp dir)")
    parser.add_argument("--workload", choices=["d", "f", "delete", "reopen", "first", "wide", "tpch-first"], default=None,
                        help="run only this workload (d or f of WORKLOADS.md, DELETE of 1%%, reopen latency) on "
                             "persisted tables")
    parser.add_argument("--statistics", default="inline,background",
                        help="--workload tpch-first: the modes to run, in order (inline, background)")
    parser.add_argument("--all-tables", action="store_true",
                        help="also bytes on disk of all 8 TPC-H tables (Canopy, Parquet, DuckDB)")
    parser.add_argument("--rows", type=int, default=None,
                        help="rows of the --workload f/delete/reopen table (default 20M for f, else 10M)")
    args = parser.parse_args()
    if args.workload is not None:
        work = Path(args.workdir or tempfile.mkdtemp(prefix="canopy-storage-"))
        work.mkdir(parents=True, exist_ok=True)
        if args.workload == "d":
            workload_d(work)
        elif args.workload == "f":
            workload_f(work, args.rows or 20_000_000)
        elif args.workload == "delete":
            workload_delete(work, args.rows or 10_000_000)
        elif args.workload == "first":
            workload_first(work, args.rows or 10_000_000)
        elif args.workload == "wide":
            workload_wide(work, args.rows or 500_000)
        elif args.workload == "tpch-first":
            workload_tpch_first(args.sf, args.statistics)
        else:
            workload_reopen(work, args.rows or 10_000_000)
        return
    data = tpch.generate(args.sf, tpch.default_cache_dir())
    csv = data / "lineitem.csv"
    work = Path(args.workdir or tempfile.mkdtemp(prefix="canopy-storage-"))
    work.mkdir(parents=True, exist_ok=True)
    lineitem_sql = next(s for s in tpch.schema_statements() if "lineitem" in s.split("(")[0].lower())
    print(f"TPC-H SF{args.sf:g} lineitem ({csv.stat().st_size / 1e6:.0f} MB CSV); work dir {work}")

    canopy_dir = work / "canopy"
    shutil.rmtree(canopy_dir, ignore_errors=True)
    con = engine.connect(data_dir=str(canopy_dir), load_dir=str(data))
    con.execute(lineitem_sql)
    _, load_s = _timed(lambda: tpch.load_table(con, data, "lineitem"))
    _, optimize_s = _timed(lambda: con.execute("OPTIMIZE TABLE lineitem"))
    rows = con.execute("SELECT COUNT(*) FROM lineitem").fetchall()[0][0]
    table = con.session.execute("SELECT * FROM lineitem").table
    _, q_all = _timed(lambda: con.execute("SELECT SUM(l_quantity), MAX(l_comment) FROM lineitem").fetchall())
    _, q_day = _timed(lambda: con.execute(
        "SELECT COUNT(*) FROM lineitem WHERE l_shipdate = '1995-03-15'").fetchall())
    con.close()
    canopy_bytes = _bytes(canopy_dir)
    stores = sorted(canopy_dir.glob("leaf-*/table-*/part-*"))
    segments = len(list(canopy_dir.rglob("seg-*.arrow")))
    print(f"canopy   : {canopy_bytes / 1e6:8.1f} MB  ({rows:,} rows, {segments} segments in {len(stores)} partitions;"
          f" LOAD DATA {load_s:.1f} s = {rows / load_s / 1e6:.2f} M rows/s incl. CSV parse, OPTIMIZE {optimize_s:.2f} s)")

    parquet = work / "lineitem.parquet"
    pq.write_table(table, parquet, compression="zstd")
    print(f"parquet  : {parquet.stat().st_size / 1e6:8.1f} MB  (pyarrow, zstd)")

    try:
        import duckdb
        duck_file = work / "lineitem.duckdb"
        duck_file.unlink(missing_ok=True)
        duck = duckdb.connect(str(duck_file))
        duck.execute(next(s for s in tpch.duckdb_schema_statements() if "lineitem" in s.split("(")[0].lower()))
        duck.execute(f"COPY lineitem FROM '{csv}' (HEADER, DELIMITER ',', QUOTE '\"')")
        duck.execute("CHECKPOINT")
        duck.close()
        print(f"duckdb   : {duck_file.stat().st_size / 1e6:8.1f} MB  (duckdb {duckdb.__version__} file)")
    except ImportError:
        print("duckdb   : not installed")

    print(f"queries on the data dir: SUM+MAX over all rows {q_all * 1e3:.0f} ms; "
          f"COUNT WHERE l_shipdate = day (zone maps) {q_day * 1e3:.0f} ms")

    # flush / merge / scan throughput of one partition store
    part = table.slice(0, min(table.num_rows, 1_000_000))
    schema = table.schema
    store_dir = work / "store"
    shutil.rmtree(store_dir, ignore_errors=True)
    store_dir.mkdir()
    # flush_rows=1: every append becomes segments directly; no automatic merge
    options = StoreOptions(flush_rows=1, merge_segments=1 << 30)
    store = ColumnstorePartitionStore(store_dir / "part", schema, ("l_shipdate",), options,
                                      Committer(CommitLog(store_dir / "commit.log")))
    _, flush_s = _timed(lambda: store._write_segments(part))
    print(f"flush    : {part.num_rows / flush_s / 1e6:6.2f} M rows/s (sort + encode + zstd + fsync of {part.num_rows:,} rows)")
    small = part.num_rows // 16
    for i in range(16):
        store.append(part.slice(i * small, small).combine_chunks().to_batches()[0])
    merged_rows = store.row_count()
    count, merge_s = _timed(lambda: store.merge(force=True))
    print(f"merge    : {count} segments, {merged_rows / merge_s / 1e6:6.2f} M rows/s (read, decode, re-sort, write)")
    _, scan_all = _timed(lambda: sum(b.num_rows for b in store.scan()))
    _, scan_one = _timed(lambda: sum(b.num_rows for b in store.scan(["l_quantity"])))
    total = store.row_count()
    print(f"scan     : all 16 columns {total / scan_all / 1e6:6.1f} M rows/s, one column {total / scan_one / 1e6:6.1f} M rows/s"
          f" ({total:,} rows, memory-mapped, decoded)")
    store.close()
    if args.all_tables:
        all_tables(work, data)


if __name__ == "__main__":
    main()
