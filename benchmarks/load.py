"""Loading benchmarks (issue 6): LOAD DATA MB/s against DuckDB, Polars and pyarrow in the same run, and
the latency of an S3 pipeline from put_object to queryable.

    python -m benchmarks.load                      # workload h + lineitem SF1 + pipeline latency
    python -m benchmarks.load --only h --repeat 3
    python -m benchmarks.load --only pipeline --objects 10,10000

Workload h (../shared/bench/WORKLOADS.md): 500k rows x 170 columns (~600 MB, double-quoted strings with
commas inside), generated here once under .data/bench/. Canopy's figure is `LOAD DATA` into a table
(rows routed to partitions and appended), the peers' is parsing the file into memory: DuckDB
`read_csv(...).to_arrow_table()`, Polars `read_csv`, `pyarrow.csv.read_csv`, all with the same column
types. With --durable (default: on) Canopy's figure is also taken into a fresh ``data_dir`` table
(``engine.connect(data_dir=...)`` at --data-dir, default a fresh directory under /tmp): the load is
durable when the statement returns (WAL written and fsynced, commit logged). Medians of --repeat runs
after one warm-up, the contenders taking turns in each round. Pipeline latency: moto's server on 127.0.0.1 with N
objects already loaded; then `put_object` of a new key and the time until `SELECT COUNT(*)` sees it,
--samples times, with the pipeline's full re-listing every --full-listing-s seconds running meanwhile
(so the samples include ticks that overlap a full listing of all N keys), and, for comparison, the time
of one bare `list_objects_v2(StartAfter=<last key>)` request: the endpoint's own share of each tick.
"""
from __future__ import annotations

import argparse
import os
import platform
import shutil
import tempfile
import statistics
import sys
import time
from pathlib import Path
from typing import Optional

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

import engine
from engine.workloads import tpch

DATA = Path(os.environ.get("CANOPY_DATA") or Path(__file__).resolve().parents[1] / ".data") / "bench"
H_INTS, H_DOUBLES, H_STRINGS = 70, 50, 50   # ~1.2 KB a line


# -- data -----------------------------------------------------------------------------------------
def workload_h(rows: int) -> Path:
    path = DATA / f"h-{rows}.csv"
    if path.exists():
        return path
    DATA.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(6)
    words = ["alpha", "beta", "gamma", "delta", "omega", "kappa", "sigma", "theta"]
    pool = pa.array([f"{rng.choice(words)}, {i}" for i in range(4096)])
    tmp = path.with_suffix(".tmp")
    with pacsv.CSVWriter(tmp, _h_schema(), write_options=pacsv.WriteOptions(
            include_header=False, quoting_style="needed")) as writer:
        for start in range(0, rows, 50_000):
            n = min(50_000, rows - start)
            arrays = [pa.array(rng.integers(0, 100_000, n)) for _ in range(H_INTS)]
            arrays += [pa.array(np.round(rng.random(n) * 1_000, 2)) for _ in range(H_DOUBLES)]
            arrays += [pool.take(pa.array(rng.integers(0, len(pool), n))) for _ in range(H_STRINGS)]
            writer.write_table(pa.Table.from_arrays(arrays, schema=_h_schema()))
    tmp.rename(path)
    return path


def _h_schema() -> pa.Schema:
    return pa.schema([(f"i{k}", pa.int64()) for k in range(H_INTS)] + [(f"d{k}", pa.float64()) for k in range(H_DOUBLES)]
                     + [(f"s{k}", pa.string()) for k in range(H_STRINGS)])


def _h_ddl() -> str:
    columns = [f"i{k} BIGINT" for k in range(H_INTS)] + [f"d{k} DOUBLE" for k in range(H_DOUBLES)] \
        + [f"s{k} VARCHAR(40)" for k in range(H_STRINGS)]
    return f"CREATE TABLE h ({', '.join(columns)}, SHARD KEY (i0))"


# -- runners --------------------------------------------------------------------------------------
def _once(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def canopy_load(ddl: str, table: str, path: Path, clauses: str, data_dir: Optional[Path] = None):
    """A LOAD DATA into a new table, timed alone (not connect / DDL); into a fresh ``data_dir`` when
    given (emptied before and after each run, so every run writes the same)."""
    def run():
        options = {}
        if data_dir is not None:
            _remove_data_dir(data_dir)
            options["data_dir"] = str(data_dir)
        try:
            _load_once(options)
        finally:
            if data_dir is not None:
                _remove_data_dir(data_dir)

    def _load_once(options):
        with engine.connect(progress=False, load_dir=str(Path(path).parent), **options) as con:
            con.execute(ddl)
            started = time.perf_counter()
            con.execute(f"LOAD DATA INFILE '{path}' INTO TABLE {table} {clauses}")
            run.elapsed = time.perf_counter() - started       # the load alone, not connect / DDL
    return run


def _remove_data_dir(path: Path) -> None:
    """Remove a data directory a durable run left, refusing anything else (a mistyped --data-dir must
    not delete, say, the TPC-H cache)."""
    if not path.exists():
        return
    if any(path.iterdir()) and not (path / "catalog.json").exists():
        raise SystemExit(f"--data-dir {path} exists and is not a Canopy data directory; not removing it")
    shutil.rmtree(path)


def bench_csv(name: str, path: Path, schema: pa.Schema, ddl: str, table: str, clauses: str, header: bool,
              repeat: int, data_dir: Optional[Path] = None) -> None:
    """Every contender once as a warm-up, then --repeat rounds that run each contender in turn (on a
    shared machine a burst of load then hits all of them alike, not whichever ran during it); the
    median per contender."""
    size_mb = path.stat().st_size / 1e6
    contenders = {}                       # name -> a function that runs once and returns its seconds
    load = canopy_load(ddl, table, path, clauses)
    contenders["canopy LOAD DATA"] = lambda: _elapsed(load)
    if data_dir is not None:
        durable = canopy_load(ddl, table, path, clauses, data_dir)
        contenders["canopy into data_dir"] = lambda: _elapsed(durable)
    types = {f.name: f.type for f in schema}
    contenders["pyarrow read_csv"] = lambda: _once(lambda: pacsv.read_csv(
        path, read_options=pacsv.ReadOptions(column_names=schema.names, skip_rows=1 if header else 0),
        convert_options=pacsv.ConvertOptions(column_types=types)))
    try:
        import duckdb
        duck_types = {f.name: _duck_type(f.type) for f in schema}
        con = duckdb.connect()
        contenders["duckdb read_csv"] = lambda: _once(lambda: con.read_csv(
            str(path), header=header, names=schema.names, dtype=duck_types, quotechar='"',
            delimiter=",").to_arrow_table())
    except ImportError:
        pass
    try:
        import polars as pl
        pl_types = {f.name: _polars_type(pl, f.type) for f in schema}
        contenders["polars read_csv"] = lambda: _once(lambda: pl.read_csv(
            path, has_header=header, new_columns=schema.names, schema_overrides=pl_types))
    except ImportError:
        pass
    times: dict[str, list[float]] = {who: [] for who in contenders}
    for run in contenders.values():
        run()                             # warm-up
    for _ in range(repeat):
        for who, run in contenders.items():
            times[who].append(run())
    results = {who: statistics.median(seconds) for who, seconds in times.items()}
    best_peer = min(v for k, v in results.items() if not k.startswith("canopy"))
    print(f"\n{name}: {size_mb:,.0f} MB")
    for who, seconds in results.items():
        print(f"  {who:<22} {seconds:7.2f} s  {size_mb / seconds:8.1f} MB/s")
    for who in [k for k in results if k.startswith("canopy")]:
        line = f"  {who} / best peer (time): {results[who] / best_peer:.2f}"
        if "polars read_csv" in results:
            line += f"; / polars: {results[who] / results['polars read_csv']:.2f}"
        print(line)


def _elapsed(load) -> float:
    load()
    return load.elapsed


def _duck_type(t: pa.DataType) -> str:
    if pa.types.is_int64(t):
        return "BIGINT"
    if pa.types.is_int32(t):
        return "INTEGER"
    if pa.types.is_floating(t):
        return "DOUBLE"
    if pa.types.is_decimal(t):
        return f"DECIMAL({t.precision},{t.scale})"
    if pa.types.is_date(t):
        return "DATE"
    return "VARCHAR"


def _polars_type(pl, t: pa.DataType):
    if pa.types.is_int64(t):
        return pl.Int64
    if pa.types.is_int32(t):
        return pl.Int32
    if pa.types.is_floating(t):
        return pl.Float64
    if pa.types.is_decimal(t):
        return pl.Decimal(t.precision, t.scale)
    if pa.types.is_date(t):
        return pl.Date
    return pl.Utf8


def lineitem(repeat: int, data_dir: Optional[Path] = None) -> None:
    path = Path(tpch.generate(1, tpch.default_cache_dir())) / "lineitem.csv"
    ddl = next(s for s in tpch.schema_statements() if "lineitem" in s.lower().split("(")[0])
    with engine.connect(progress=False) as con:
        con.execute(ddl)
        schema = con.session.catalog.table("canopy", "lineitem").arrow_schema
    clauses = tpch.LOAD_DATA_SQL.split("INTO TABLE {table} ", 1)[1]
    bench_csv("TPC-H lineitem SF1", path, schema, ddl, "lineitem", clauses, True, repeat, data_dir)


def pipeline_latency(counts: list[int], samples: int, full_listing_s: float) -> None:
    import json
    import socket
    import subprocess
    from concurrent.futures import ThreadPoolExecutor

    import boto3
    from botocore.config import Config

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        creds = {"aws_access_key_id": "bench", "aws_secret_access_key": "bench"}
        s3 = boto3.client("s3", endpoint_url=url, region_name="us-east-1", config=Config(max_pool_connections=32),
                          **creds)
        print("\npipeline latency, put_object -> visible to SELECT COUNT(*) (moto server on 127.0.0.1)")
        for n in counts:
            bucket = f"bench-{n}"
            s3.create_bucket(Bucket=bucket)
            started = time.perf_counter()
            with ThreadPoolExecutor(16) as pool:
                list(pool.map(lambda i: s3.put_object(Bucket=bucket, Key=f"in/{i:08d}.csv",
                                                      Body=f"{i},x\n".encode()), range(n)))
            put_s = time.perf_counter() - started
            # The endpoint's own cost of one incremental listing (StartAfter = the last key, nothing
            # after it): moto's server scans and sorts every key of the bucket on each request.
            bare = []
            for _ in range(20):
                listed = time.perf_counter()
                s3.list_objects_v2(Bucket=bucket, Prefix="in/", StartAfter=f"in/{n - 1:08d}.csv")
                bare.append(time.perf_counter() - listed)
            with engine.connect(progress=False) as con:
                con.execute("CREATE TABLE t (id BIGINT, s TEXT)")
                config = json.dumps({"region": "us-east-1", "endpoint_url": url,
                                     "full_listing_interval_s": full_listing_s})
                con.execute(f"CREATE PIPELINE p AS LOAD DATA S3 '{bucket}/in/' CONFIG '{config}' "
                            f"CREDENTIALS '{json.dumps(creds)}' BATCH_INTERVAL 100 INTO TABLE t "
                            f"FIELDS TERMINATED BY ','")
                started = time.perf_counter()
                con.execute("START PIPELINE p")
                while con.execute("SELECT COUNT(*) FROM t").fetchone()[0] < n:
                    time.sleep(0.01)
                initial_s = time.perf_counter() - started
                latencies = []
                for k in range(samples):
                    key = n + k
                    started = time.perf_counter()
                    s3.put_object(Bucket=bucket, Key=f"in/{key:08d}.csv", Body=f"{key},new\n".encode())
                    while con.execute("SELECT COUNT(*) FROM t").fetchone()[0] < n + k + 1:
                        time.sleep(0.02)        # polling harder steals the pipeline threads' GIL
                    latencies.append(time.perf_counter() - started)
                    time.sleep(0.2)
                from engine.pipelines import pipelines_of
                full_listings = pipelines_of(con.session.runner).get("canopy", "p").full_listings
                con.execute("STOP PIPELINE p")
            latencies.sort()
            p95 = latencies[min(len(latencies) - 1, int(round(0.95 * (len(latencies) - 1))))]
            print(f"  {n:>6} objects in the prefix: latency median {statistics.median(latencies):.3f} s, "
                  f"p95 {p95:.3f} s, max {latencies[-1]:.3f} s over {samples} (BATCH_INTERVAL 100 ms, "
                  f"{full_listings} full listings of the prefix meanwhile); "
                  f"first load of the {n} objects {initial_s:.1f} s (put took {put_s:.1f} s); one bare "
                  f"list_objects_v2(StartAfter=last key) request: median {statistics.median(bare):.3f} s")
    finally:
        server.terminate()
        server.wait(10)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=["h", "lineitem", "pipeline"], action="append")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--h-rows", type=int, default=500_000)
    parser.add_argument("--durable", action=argparse.BooleanOptionalAction, default=True,
                        help="also time LOAD DATA into a data_dir table (--no-durable: in memory only)")
    parser.add_argument("--data-dir", type=Path,
                        default=Path(tempfile.gettempdir()) / f"canopy-bench-load-{os.getpid()}",
                        help="where the durable runs put their data directory (removed after each run)")
    parser.add_argument("--objects", default="10,10000", help="objects already in the prefix, comma-separated")
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--full-listing-s", type=float, default=5.0,
                        help="the pipeline's full re-listing interval during the latency samples")
    args = parser.parse_args(argv)
    only = set(args.only or ["h", "lineitem", "pipeline"])
    data_dir = args.data_dir if args.durable else None
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, pyarrow {pa.__version__}")
    if "h" in only:
        path = workload_h(args.h_rows)
        clauses = "FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"'"
        bench_csv("workload h", path, _h_schema(), _h_ddl(), "h", clauses, False, args.repeat, data_dir)
    if "lineitem" in only:
        lineitem(args.repeat, data_dir)
    if "pipeline" in only:
        pipeline_latency([int(n) for n in args.objects.split(",")], args.samples, args.full_listing_s)


if __name__ == "__main__":
    main()
