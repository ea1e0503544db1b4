"""Seed workloads a-f of ``shared/bench/WORKLOADS.md`` (and s, string group-by) through Canopy's SQL and
the peers, in one run.

    python -m benchmarks.seed                 # every workload at the sizes WORKLOADS.md gives
    python -m benchmarks.seed e f --scale 0.1 # some workloads, a tenth of the rows
    python -m benchmarks.seed a b --ray       # also Canopy on a local Ray (2 leaf actors), same run
    python -m benchmarks.seed d f --data-dir  # also Canopy with a data_dir (durable columnstore), same run
    make bench-peers                          # installs the peers (.[peers]) and runs the above

Each workload's data is built once (NumPy, fixed seeds) and written to an Arrow IPC file; then each
engine runs in a fresh Python process of its own (``--child``): Canopy (embedded local cluster) and
every installed peer, DuckDB, Polars, DataFusion, chDB (embedded ClickHouse), all holding the table in
memory, peers at 2 threads. A peer that is not installed is reported and skipped. The process reads the
table into memory, resets its peak RSS (``/proc/self/clear_refs``), imports the engine, loads the table
and runs each query twice to warm up (the first result checked), then ``--repeat`` times (default 5):
the median wall time and the median CPU time of the process (every thread's, ``time.process_time``;
steadier than wall time on a loaded machine) of the same runs are printed per engine, each with the
ratio ``canopy / best peer`` by that clock (``--clock`` picks the one printed first), and Canopy's
rows per second. Beside it, each engine's
**peak RSS**: the process's high-water mark (``VmHWM``) from the reset to the last query, so it counts
the engine's import, its copy of the table, its working memory and the source Arrow table the process
holds throughout (printed as "source table": python, numpy, pyarrow and the data read back). Every
engine's result is checked against DuckDB's (a digest of the rows, numbers as float64, sorted unless
the query orders them) before its times count; a mismatch is printed, not timed silently.

Canopy's tables are in memory (``connect()`` with no ``data_dir``, as the peers), which keeps the
columnstore's encoded segments (run-end encoded sorted column for d, dictionary-encoded symbols for f).
``--data-dir`` also times Canopy holding the table in its durable columnstore (``connect(data_dir=...)``
in a temporary directory, ``OPTIMIZE TABLE`` after loading) as ``canopy-dir`` (not a peer), with the
ratio ``memory / data_dir``.
"""
from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa


REPEAT = 5
THREADS = 2


@dataclass
class Workload:
    table: str
    data: pa.Table
    ddl: str
    queries: dict[str, str]
    notes: list[str] = field(default_factory=list)


def _rows(n: int, scale: float) -> int:
    return max(1000, int(n * scale))


def workload_a(scale: float) -> Workload:
    rows = _rows(20_000_000, scale)
    rng = np.random.default_rng(1)
    data = pa.table({"a": np.arange(rows, dtype=np.int64), "b": rng.permutation(rows).astype(np.int64)})
    return Workload("t", data, "CREATE TABLE t (a BIGINT, b BIGINT, SHARD KEY (a))",
                    {"a: COUNT(DISTINCT b)": "SELECT COUNT(DISTINCT b) FROM t"})


def workload_b(scale: float) -> Workload:
    rows = _rows(20_000_000, scale)
    rng = np.random.default_rng(2)
    data = pa.table({"k": rng.integers(0, rows // 4, rows), "v": rng.integers(0, 1000, rows)})
    return Workload("t", data, "CREATE TABLE t (k BIGINT, v BIGINT)", {
        "b: GROUP BY k (5M groups)": "SELECT k, COUNT(*), SUM(v) FROM t GROUP BY k",
        "b: ... ORDER BY 2 DESC LIMIT 10": "SELECT k, COUNT(*), SUM(v) FROM t GROUP BY k ORDER BY 2 DESC, 1 LIMIT 10",
    })


def workload_c(scale: float) -> Workload:
    rows = _rows(8_000_000, scale)
    rng = np.random.default_rng(0)
    data = pa.table({"i": pa.array(rng.permutation(rows).astype(np.int32))})
    list_904 = ", ".join(str(v) for v in sorted(np.random.default_rng(904).choice(rows, 904, replace=False)))
    return Workload("t", data, "CREATE TABLE t (i INT)", {
        "c: IN (1,100,200)": "SELECT COUNT(*) FROM t WHERE i IN (1, 100, 200)",
        "c: IN (904 values)": f"SELECT COUNT(*) FROM t WHERE i IN ({list_904})",
    })


def workload_d(scale: float) -> Workload:
    rows = _rows(10_000_000, scale)
    data = pa.table({"i": pa.array(np.repeat(np.arange(1000, dtype=np.int32), rows // 1000))})
    return Workload("t", data, "CREATE TABLE t (i INT, SORT KEY (i))",
                    {"d: i = 2 (sorted, 1000 runs)": "SELECT COUNT(*) FROM t WHERE i = 2"})


def workload_e(scale: float) -> Workload:
    rows = _rows(10_000_000, scale)
    rng = np.random.default_rng(5)
    lengths = rng.integers(15, 26, rows)                      # ~20 characters, ASCII
    offsets = np.zeros(rows + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    alphabet = np.frombuffer(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ", dtype=np.uint8)
    chars = alphabet[rng.integers(0, len(alphabet), int(offsets[-1]))]
    strings = pa.StringArray.from_buffers(rows, pa.py_buffer(offsets), pa.py_buffer(chars))
    return Workload("t", pa.table({"s": strings}), "CREATE TABLE t (s VARCHAR(32))",
                    {"e: SUM(LENGTH(SUBSTR(s, 1, 9)))": "SELECT SUM(LENGTH(SUBSTR(s, 1, 9))) FROM t"})


def workload_f(scale: float) -> Workload:
    rows = _rows(20_000_000, scale)
    rng = np.random.default_rng(6)
    symbols = np.array([f"S{i:04d}" for i in range(5000)])
    codes = np.minimum(rng.zipf(1.3, rows) - 1, 4999)
    data = pa.table({"id": np.arange(rows, dtype=np.int64), "stock_symbol": pa.array(symbols[codes]),
                     "price": np.round(rng.random(rows) * 100, 2)})
    return Workload("trade", data,
                    "CREATE TABLE trade (id BIGINT, stock_symbol VARCHAR(8), price DOUBLE, SHARD KEY (id))",
                    {"f: GROUP BY symbol top 10": "SELECT stock_symbol, COUNT(*) c FROM trade "
                                                  "GROUP BY stock_symbol ORDER BY c DESC, stock_symbol LIMIT 10"})


def workload_s(scale: float) -> Workload:
    """Not in WORKLOADS.md: issue 17's low-cardinality string group-by (10M rows, 100 string keys)."""
    rows = _rows(10_000_000, scale)
    rng = np.random.default_rng(17)
    keys = np.array([f"id{i:03d}" for i in range(100)])
    data = pa.table({"id1": pa.array(keys[rng.integers(0, 100, rows)]), "id2": pa.array(keys[rng.integers(0, 100, rows)]),
                     "v": rng.integers(0, 100, rows)})
    return Workload("t", data, "CREATE TABLE t (id1 VARCHAR(8), id2 VARCHAR(8), v BIGINT)", {
        "s: SUM(v) GROUP BY id1": "SELECT id1, SUM(v) FROM t GROUP BY id1",
        "s: SUM(v) GROUP BY id1, id2": "SELECT id1, id2, SUM(v) FROM t GROUP BY id1, id2",
    })


WORKLOADS = {"a": workload_a, "b": workload_b, "c": workload_c, "d": workload_d, "e": workload_e,
             "f": workload_f, "s": workload_s}


# --- engines: name -> run(sql) returning a pyarrow Table ------------------------------------------
def _duckdb(w: Workload):
    import duckdb

    con = duckdb.connect(":memory:")
    con.execute(f"SET threads TO {THREADS}")
    con.register("src", w.data)
    con.execute(f"CREATE TABLE {w.table} AS SELECT * FROM src")
    con.unregister("src")
    return lambda sql: con.sql(sql).to_arrow_table()


def _polars(w: Workload):
    import polars as pl

    ctx = pl.SQLContext({w.table: pl.from_arrow(w.data)})
    return lambda sql: ctx.execute(sql, eager=True).to_arrow()


def _datafusion(w: Workload):
    import datafusion

    ctx = datafusion.SessionContext(datafusion.SessionConfig().with_target_partitions(THREADS))
    batches = w.data.combine_chunks().to_batches(max_chunksize=max(1, math.ceil(w.data.num_rows / THREADS)))
    ctx.register_record_batches(w.table, [batches[i::THREADS] for i in range(THREADS)])
    return lambda sql: pa.Table.from_batches(ctx.sql(sql).collect())


def _chdb(w: Workload):
    from chdb import session as chs

    sess = chs.Session()
    source = w.data      # noqa: F841  (read by name by chDB's Python() table function)
    sess.query(f"CREATE TABLE {w.table} ENGINE = Memory AS SELECT * FROM Python(source)")
    return lambda sql: sess.query(f"{sql} SETTINGS max_threads = {THREADS}", "ArrowTable")


PEERS = {"duckdb": _duckdb, "polars": _polars, "datafusion": _datafusion, "chdb": _chdb}


class Canopy:
    def __init__(self, w: Workload, cluster=None, durable: bool = False):
        import engine

        self.directory = tempfile.mkdtemp(prefix="canopy-seed-") if durable else None
        self.con = engine.connect(database="seed", progress=False, data_dir=self.directory, cluster=cluster)
        self.con.execute(w.ddl)
        self.con.load_table(w.table, w.data)
        if durable:
            self.con.execute(f"OPTIMIZE TABLE {w.table}")

    def __call__(self, sql):
        return self.con.execute(sql).fetch_arrow_table()

    def close(self):
        self.con.close()
        if self.directory:
            shutil.rmtree(self.directory, ignore_errors=True)


ENGINES = {"canopy": Canopy, "canopy-ray": lambda w: Canopy(w, cluster="ray"),
           "canopy-dir": lambda w: Canopy(w, durable=True), **PEERS}


IMPORTS = {"duckdb": "duckdb", "polars": "polars", "datafusion": "datafusion", "chdb": "chdb.session"}


def _canonical(table: pa.Table, ordered: bool) -> tuple[str, int, str]:
    """(digest, rows, summary) of a result: numbers as float64 (engines differ in integer, decimal and
    float result types), strings as large_string, rows sorted unless the query orders them."""
    import hashlib

    import pyarrow.compute as pc

    columns = []
    for i, column in enumerate(table.columns):
        if pa.types.is_integer(column.type) or pa.types.is_floating(column.type) or pa.types.is_decimal(column.type):
            column = pc.cast(column, pa.float64())
        elif not pa.types.is_large_string(column.type):
            column = pc.cast(column, pa.large_string())
        columns.append(column)
    table = pa.table(columns, names=[f"c{i}" for i in range(len(columns))])
    if not ordered and table.num_rows > 1:
        table = table.sort_by([(name, "ascending") for name in table.column_names])
    digest = hashlib.sha256()
    for column in table.combine_chunks().columns:
        array = column.chunk(0) if column.num_chunks else pa.array([], column.type)
        digest.update(array.null_count.to_bytes(8, "little"))
        if pa.types.is_large_string(array.type):
            offsets = np.frombuffer(array.buffers()[1], np.int64)[array.offset:array.offset + len(array) + 1]
            digest.update((offsets - offsets[0]).tobytes())
            digest.update(memoryview(array.buffers()[2])[offsets[0]:offsets[-1]] if len(array) else b"")
        else:
            digest.update(array.fill_null(float("nan")).to_numpy().tobytes())
    if table.num_rows == 1:
        summary = ", ".join(f"{v:,.0f}" if isinstance(v, float) else str(v) for v in table.to_pylist()[0].values())
    else:
        summary = f"{table.num_rows:,} rows"
    return digest.hexdigest(), table.num_rows, summary


def _memory_kb(field_name: str) -> int:
    """``VmRSS`` / ``VmHWM`` of this process from /proc (Linux), in KiB; 0 where there is no /proc."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(field_name + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _reset_peak_rss() -> bool:
    """Reset the kernel's peak RSS of this process (VmHWM) to its current RSS (Linux >= 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w") as clear:
            clear.write("5")
        return True
    except OSError:
        return False


CLOCKS = {"wall": "seconds", "cpu": "cpu_seconds"}


def _timed(fn, repeat: int) -> tuple[float, float]:
    """Medians of ``repeat`` calls of ``fn`` (after the caller's warm-up): wall seconds and the CPU
    seconds of this process, every thread's (``time.process_time``), measured on the same calls."""
    walls, cpus = [], []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def run_engine(engine_name: str, data_path: str, spec: dict, repeat: int) -> dict:
    """One engine's whole life on one workload, in this (fresh) process: read the data from an Arrow
    IPC file into memory, reset the peak RSS, load it into the engine, run every query (one warm-up
    checked against the others' results, then the median of ``repeat``); return the times, each
    result's digest and the peak RSS from the load to the last query."""
    with pa.OSFile(data_path) as source:
        data = pa.ipc.open_file(source).read_all()
    w = Workload(spec["table"], data, spec["ddl"], spec["queries"])
    reset = _reset_peak_rss()
    base_kb = _memory_kb("VmRSS")
    try:
        importlib.import_module(IMPORTS.get(engine_name, "engine"))
    except ImportError:
        return {"missing": True}
    start = time.perf_counter()
    run = ENGINES[engine_name](w)
    out = {"load_s": time.perf_counter() - start, "base_mb": base_kb / 1024, "queries": {}}
    for title, sql in w.queries.items():
        digest, rows, summary = _canonical(run(sql), "ORDER BY" in sql.upper())
        run(sql)                                    # the warm-up (the run above was checked)
        seconds, cpu_seconds = _timed(lambda: run(sql), repeat)
        out["queries"][title] = {"digest": digest, "rows": rows, "summary": summary, "seconds": seconds,
                                 "cpu_seconds": cpu_seconds}
    peak_kb = _memory_kb("VmHWM") if reset else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out["peak_mb"] = peak_kb / 1024
    if hasattr(run, "close"):
        run.close()
    return out


def _run_child(engine_name: str, data_path: str, spec: dict, repeat: int) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as spec_file:
        json.dump(spec, spec_file)
    try:
        done = subprocess.run([sys.executable, "-m", "benchmarks.seed", "--child", engine_name, data_path,
                               spec_file.name, "--repeat", str(repeat)], stdout=subprocess.PIPE, text=True)
    finally:
        os.unlink(spec_file.name)
    if done.returncode != 0:
        return {"failed": f"exit status {done.returncode}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_workload(name: str, scale: float, repeat: int, ray: bool = False,
                 data_dir: bool = False, primary: str = "wall") -> list[tuple]:
    """Print and return (query title, {clock: (best peer, its seconds, canopy's seconds)}, canopy's
    peak RSS MB, duckdb's peak RSS MB) per query; each query's times are printed by both clocks,
    ``primary`` first, the best peer chosen by each. Each engine runs in a fresh process (so its peak RSS is its own);
    ``ray``: Canopy on a local Ray (2 leaf actors) is timed too, as ``canopy-ray`` (not a peer);
    ``data_dir``: so is Canopy with a durable columnstore, as ``canopy-dir``."""
    w = WORKLOADS[name](scale)
    rows = w.data.num_rows
    spec = {"table": w.table, "ddl": w.ddl, "queries": w.queries}
    names = ["canopy"] + (["canopy-ray"] if ray else []) + (["canopy-dir"] if data_dir else []) + list(PEERS)
    with tempfile.TemporaryDirectory(prefix="seed-data-") as directory:
        data_path = os.path.join(directory, "data.arrow")
        with pa.OSFile(data_path, "wb") as sink, pa.ipc.new_file(sink, w.data.schema) as writer:
            writer.write_table(w.data)
        data_mb = w.data.nbytes / 2**20
        del w
        results = {}
        for engine_name in names:
            results[engine_name] = _run_child(engine_name, data_path, spec, repeat)
    print(f"workload {name}: {rows:,} rows ({data_mb:,.0f} MB in Arrow), each engine in a fresh process:")
    for engine_name, result in results.items():
        if result.get("missing"):
            print(f"  {engine_name}: not installed (pip install -e '.[peers]'), skipped")
        elif result.get("failed"):
            print(f"  {engine_name}: FAILED ({result['failed']})")
        else:
            print(f"  {engine_name:10s} load {result['load_s']:6.2f} s  peak RSS {result['peak_mb']:7,.0f} MB"
                  f"  (source table {result['base_mb']:,.0f} MB)")
    ran = {e: r for e, r in results.items() if "queries" in r}
    out = []
    for title in spec["queries"]:
        expected = ran["duckdb"]["queries"][title] if "duckdb" in ran else None
        wrong = [e for e, r in ran.items()
                 if expected is not None and r["queries"][title]["digest"] != expected["digest"]]
        best = {}                   # clock -> (best peer, its seconds, canopy's seconds)
        for clock in sorted(CLOCKS, key=lambda c: c != primary):
            times = {e: r["queries"][title][CLOCKS[clock]] for e, r in ran.items() if e not in wrong}
            peers = {p: t for p, t in times.items() if not p.startswith("canopy")}
            cells = "  ".join(f"{p} {t * 1e3:8.2f} ms" for p, t in times.items())
            line = f"  {title if clock == primary else '':34s} {clock:4s} {cells}"
            if "canopy" in times and peers:
                peer = min(peers, key=peers.get)
                best[clock] = (peer, peers[peer], times["canopy"])
                line += f"  canopy/{peer} {times['canopy'] / peers[peer]:.2f}"
                if clock == primary:
                    line += f"  canopy {rows / times['canopy'] / 1e6:,.0f}M rows/s"
                if "canopy-ray" in times:
                    line += (f"  canopy-ray/{peer} {times['canopy-ray'] / peers[peer]:.2f}"
                             f"  ray/embedded {times['canopy-ray'] / times['canopy']:.2f}")
                if "canopy-dir" in times:
                    line += f"  memory/data_dir {times['canopy'] / times['canopy-dir']:.2f}"
            if expected is not None and clock == primary:
                line += f"  (result {expected['summary']})"
            if wrong and clock == primary:
                line += f"  WRONG RESULT from {', '.join(wrong)} (not timed)"
            print(line, flush=True)
        if len(best) == len(CLOCKS):
            out.append((title, best, ran["canopy"]["peak_mb"], ran["duckdb"]["peak_mb"] if "duckdb" in ran else math.nan))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("workloads", nargs="*", help=f"any of {sorted(WORKLOADS)} (default: all)")
    parser.add_argument("--scale", type=float, default=1.0,
                        help="fraction of WORKLOADS.md's row counts (default 1: the published sizes)")
    parser.add_argument("--repeat", type=int, default=REPEAT, help="timed runs per query after a warm-up")
    parser.add_argument("--ray", action="store_true", help="also time Canopy on a local Ray (2 leaf actors)")
    parser.add_argument("--data-dir", action="store_true",
                        help="also time Canopy with a data_dir (durable columnstore, OPTIMIZE TABLE after loading)")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                        help="the clock the ratios are led by: wall time (default) or the CPU time of the "
                             "engine's process, every thread's (steadier on a loaded machine); both are printed")
    parser.add_argument("--child", nargs=3, metavar=("ENGINE", "DATA", "SPEC"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:                          # one engine in this process: print its figures as JSON
        engine_name, data_path, spec_path = args.child
        with open(spec_path) as spec_file:
            spec = json.load(spec_file)
        print(json.dumps(run_engine(engine_name, data_path, spec, args.repeat)), flush=True)
        return
    unknown = set(args.workloads) - set(WORKLOADS)
    if unknown:
        parser.error(f"unknown workloads {sorted(unknown)}; choose from {sorted(WORKLOADS)}")
    if not 0 < args.scale <= 10:
        parser.error(f"--scale must be in (0, 10], not {args.scale}")
    results = []
    for name in args.workloads or list(WORKLOADS):
        results += run_workload(name, args.scale, args.repeat, args.ray, args.data_dir, args.clock)
    if results:
        print(f"summary (canopy / best peer by {args.clock} time, then by the other clock; "
              "peak RSS of each engine's process, MB):")
        for title, best, canopy_mb, duckdb_mb in results:
            cells = []
            for clock in sorted(CLOCKS, key=lambda c: c != args.clock):
                peer, peer_s, canopy_s = best[clock]
                cells.append(f"{clock} {canopy_s * 1e3:9.2f} ms vs {peer} {peer_s * 1e3:9.2f} ms ratio {canopy_s / peer_s:5.2f}")
            print(f"  {title:34s} " + "  |  ".join(cells) + f"  |  peak RSS canopy {canopy_mb:6,.0f} duckdb {duckdb_mb:6,.0f}")

if __name__ == "__main__":
    main()
