"""Point lookups by primary key (issue 16): ``SELECT * FROM t WHERE pk = ?`` through the DB-API on a
big table, in memory and in a ``data_dir`` (after ``OPTIMIZE TABLE``), beside DuckDB (a PRIMARY KEY:
its ART index) on the same rows in the same run.

    python -m benchmarks.point_lookup --rows 10000000          # both tables, 1000 lookups each
    python -m benchmarks.point_lookup --rows 1000000 --lookups 200 --only int --no-data-dir

Two tables: ``t(id BIGINT PRIMARY KEY, v INT, s VARCHAR(16))`` and ``ts(k VARCHAR(16) PRIMARY KEY, v
INT)`` (the key under the default utf8mb4_general_ci collation). The keys are a random permutation,
so no segment's min/max rules a key out: only the hash indexes can. Rows are loaded in one columnar
step (``Connection.load_table`` of a generated Arrow table: what ``INSERT ... SELECT`` and ``LOAD
DATA`` feed the same loader with, without a CSV parse in the timing), and the keys are checked unique
as for any insert. Each lookup is a parameterised query with a random key, half of them present, half
missing; the figure is the median per lookup (the first lookup is timed apart: in memory it builds the
segments' indexes; a data_dir built them when the segments were written and kept them in files, and the
data_dir is then reopened and its first lookup timed too). Per lookup the store's scan statistics are printed: segments read (those whose index
holds a candidate), rows read, and segment indexes probed. Answers are checked against DuckDB's.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import engine


def _tables(rows: int, seed: int = 7) -> dict[str, pa.Table]:
    rng = np.random.default_rng(seed)
    ids = rng.permutation(rows).astype(np.int64)
    keys = pc.binary_join_element_wise("user-", pc.utf8_lpad(pc.cast(pa.array(ids), pa.string()), 8, "0"), "")
    v = rng.integers(0, 1_000_000, rows).astype(np.int32)
    s = pc.take(pa.array([f"tag{i}" for i in range(1000)]), pa.array(ids % 1000))
    return {"t": pa.table({"id": ids, "v": v, "s": s}), "ts": pa.table({"k": keys, "v": v})}


DDL = {"t": "CREATE TABLE t (id BIGINT PRIMARY KEY, v INT, s VARCHAR(16))",
       "ts": "CREATE TABLE ts (k VARCHAR(16) PRIMARY KEY, v INT)"}
QUERY = {"t": "SELECT * FROM t WHERE id = {}", "ts": "SELECT * FROM ts WHERE k = {}"}


def _probe_keys(name: str, rows: int, lookups: int, seed: int = 11) -> list:
    """``lookups`` keys, alternately present and missing."""
    rng = np.random.default_rng(seed)
    present = rng.integers(0, rows, lookups)
    missing = rows + rng.integers(0, rows, lookups)
    numbers = [int(present[i]) if i % 2 == 0 else int(missing[i]) for i in range(lookups)]
    return numbers if name == "t" else [f"user-{n:08d}" for n in numbers]


def _stores(con, name):
    table = con.session.catalog.table("canopy", name)
    return [s for leaf in con.session.runner.leaves for _, s in leaf.storage.stores_of(table.table_id)]


def _stats(stores) -> np.ndarray:
    return np.array([[s.scan_stats[k] for k in ("segments_read", "rows_read", "index_lookups")] for s in stores]).sum(0)


def _time_lookups(run, keys) -> tuple[list, list[float]]:
    answers, times = [], []
    for key in keys:
        start = time.perf_counter()
        answers.append(run(key))
        times.append(time.perf_counter() - start)
    return answers, times


def canopy(name: str, table: pa.Table, keys: list, data_dir) -> tuple[list, str]:
    where = "data_dir, after OPTIMIZE TABLE" if data_dir else "in memory"
    con = engine.connect(data_dir=str(data_dir) if data_dir else None, progress=False)
    try:
        con.execute(DDL[name])
        start = time.perf_counter()
        con.load_table(name, table)
        if data_dir:
            con.execute(f"OPTIMIZE TABLE {name}")
        load = time.perf_counter() - start
        con.execute(f"ANALYZE TABLE {name}")        # statistics now, not inside the timed lookups
        stores = _stores(con, name)
        segments = sum(len(s.segment_infos()) for s in stores)
        sql = QUERY[name].format("%s")
        cursor = con.cursor()
        run = lambda key: cursor.execute(sql, (key,)).fetchall()      # noqa: E731
        start = time.perf_counter()
        run(keys[0])        # in memory: builds each segment's index of the key (a data_dir wrote them at load)
        first = time.perf_counter() - start
        before = _stats(stores)
        answers, times = _time_lookups(run, keys)
        read = (_stats(stores) - before) / len(keys)
        line = (f"  canopy {where}: median {statistics.median(times) * 1e3:.2f} ms per lookup "
                f"(first: {first:.3f} s; load {load:.1f} s); per lookup "
                f"{read[0]:.2f} segments read of {segments}, {read[1]:.2f} rows read, "
                f"{read[2]:.1f} segment indexes probed")
    finally:
        con.close()
    if data_dir:
        line += "\n" + _after_reopen(name, data_dir, keys[0])
    return answers, line


def _after_reopen(name: str, data_dir, key) -> str:
    """The first lookup of a reopened data_dir: its segments' indexes come from their files."""
    start = time.perf_counter()
    con = engine.connect(data_dir=str(data_dir), progress=False)
    try:
        opened = time.perf_counter() - start
        stores = _stores(con, name)
        before = _stats(stores)
        start = time.perf_counter()
        con.cursor().execute(QUERY[name].format("%s"), (key,)).fetchall()
        first = time.perf_counter() - start
        read = _stats(stores) - before
        return (f"  canopy data_dir reopened ({opened:.2f} s): first lookup {first * 1e3:.1f} ms, "
                f"{read[0]} segments read, {read[1]} rows read, {read[2]} segment indexes probed")
    finally:
        con.close()


def duck(name: str, table: pa.Table, keys: list) -> tuple[list, str]:
    import duckdb

    con = duckdb.connect()
    con.execute(DDL[name])
    con.register("src", table)
    start = time.perf_counter()
    con.execute(f"INSERT INTO {name} SELECT * FROM src")
    load = time.perf_counter() - start
    sql = QUERY[name].format("?")
    answers, times = _time_lookups(lambda key: con.execute(sql, [key]).fetchall(), keys)
    con.close()
    return answers, (f"  duckdb {duckdb.__version__} in memory (PRIMARY KEY: ART index): median "
                     f"{statistics.median(times) * 1e3:.2f} ms per lookup (load {load:.1f} s)")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--lookups", type=int, default=1000)
    parser.add_argument("--only", choices=["int", "varchar"], help="one table only")
    parser.add_argument("--no-data-dir", action="store_true", help="in memory only")
    parser.add_argument("--work", help="where the data_dir goes (default: a temporary directory)")
    args = parser.parse_args(argv)
    work = Path(args.work or tempfile.mkdtemp(prefix="point-lookup-"))
    print(f"point lookups, {args.rows:,} rows, {args.lookups} parameterised lookups (half present, half missing); "
          f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    tables = _tables(args.rows)
    names = {"int": ["t"], "varchar": ["ts"], None: ["t", "ts"]}[args.only]
    try:
        for name in names:
            keys = _probe_keys(name, args.rows, args.lookups)
            print(f"{QUERY[name].format('?')}  ({DDL[name]})")
            expected, line = duck(name, tables[name], keys)
            print(line)
            for data_dir in ([None] if args.no_data_dir else [None, work / f"canopy-{name}"]):
                answers, line = canopy(name, tables[name], keys, data_dir)
                assert [sorted(a) for a in answers] == [sorted(e) for e in expected], "answers differ from DuckDB's"
                print(line)
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
