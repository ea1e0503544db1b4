"""Seed workloads a-f of ``shared/bench/WORKLOADS.md`` (and s, string group-by) through Canopy's SQL and
the peers, in one run.

    python -m benchmarks.seed                 # every workload at the sizes WORKLOADS.md gives
    python -m benchmarks.seed e f --scale 0.1 # some workloads, a tenth of the rows
    python -m benchmarks.seed a b --ray       # also Canopy on a local Ray (2 leaf actors), same run
    python -m benchmarks.seed d f --data-dir  # also Canopy with a data_dir (durable columnstore), same run
    make bench-peers                          # installs the peers (.[peers]) and runs the above

Each workload's data is built once (NumPy, fixed seeds) and loaded into Canopy (embedded local
cluster) and into every installed peer: DuckDB, Polars, DataFusion, chDB (embedded ClickHouse), all
holding the table in memory, peers at 2 threads. A peer that is not installed is reported and
skipped. Each query runs once to warm up, then 5 times; the median is printed per engine with the
ratio ``canopy / best peer`` and Canopy's rows per second. Every engine's result is checked against
DuckDB's before timing; a mismatch is printed, not timed silently.

Canopy's tables are in memory (``connect()`` with no ``data_dir``, as the peers), which keeps the
columnstore's encoded segments (run-end encoded sorted column for d, dictionary-encoded symbols for f).
``--data-dir`` also times Canopy holding the table in its durable columnstore (``connect(data_dir=...)``
in a temporary directory, ``OPTIMIZE TABLE`` after loading) as ``canopy-dir`` (not a peer), with the
ratio ``memory / data_dir``.
"""
from __future__ import annotations

import argparse
import math
import shutil
import tempfile
import time
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from benchmarks.timing import median_seconds

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


def _canonical(table: pa.Table, ordered: bool) -> list[tuple]:
    """Rows as Python tuples, numbers as float (engines differ in integer/decimal result types),
    sorted unless the query orders them."""
    def value(v):
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(v)
        if hasattr(v, "as_tuple"):          # Decimal
            return float(v)
        return v
    columns = [table.column(i).to_pylist() for i in range(table.num_columns)]
    rows = [tuple(value(v) for v in row) for row in zip(*columns)]
    return rows if ordered else sorted(rows, key=repr)


def _summary(rows: list[tuple]) -> str:
    if len(rows) == 1:
        return ", ".join(f"{v:,.0f}" if isinstance(v, float) else str(v) for v in rows[0])
    return f"{len(rows):,} rows"


def run_workload(name: str, scale: float, repeat: int, ray: bool = False,
                 data_dir: bool = False) -> list[tuple[str, float, str, float]]:
    """Print and return (query title, canopy seconds, best peer, best peer seconds) per query.
    ``ray``: Canopy on a local Ray (2 leaf actors) is timed too, as ``canopy-ray`` (not a peer);
    ``data_dir``: so is Canopy with a durable columnstore, as ``canopy-dir``."""
    w = WORKLOADS[name](scale)
    rows = w.data.num_rows
    start = time.perf_counter()
    canopy = Canopy(w)
    load_s = time.perf_counter() - start
    engines = {"canopy-ray": Canopy(w, cluster="ray")} if ray else {}
    if data_dir:
        engines["canopy-dir"] = Canopy(w, durable=True)
    for peer, make in PEERS.items():
        try:
            engines[peer] = make(w)
        except ImportError:
            print(f"  {peer}: not installed (pip install -e '.[peers]'), skipped")
    print(f"workload {name}: {rows:,} rows, Canopy load (in memory) {load_s:.1f} s")
    out = []
    try:
        for title, sql in w.queries.items():
            ordered = "ORDER BY" in sql.upper()
            expected = _canonical(engines["duckdb"](sql), ordered) if "duckdb" in engines else None
            times, wrong = {}, []
            for engine_name, run in [("canopy", canopy)] + list(engines.items()):
                got = _canonical(run(sql), ordered)
                if expected is not None and got != expected:
                    wrong.append(engine_name)
                    continue
                times[engine_name] = median_seconds(lambda: run(sql), repeat)
            peers = {p: t for p, t in times.items() if not p.startswith("canopy")}
            cells = "  ".join(f"{p} {t * 1e3:8.2f} ms" for p, t in times.items())
            line = f"  {title:34s} {cells}"
            if "canopy" in times and peers:
                best = min(peers, key=peers.get)
                line += (f"  canopy/{best} {times['canopy'] / peers[best]:.2f}"
                         f"  canopy {rows / times['canopy'] / 1e6:,.0f}M rows/s")
                out.append((title, times["canopy"], best, peers[best]))
                if "canopy-ray" in times:
                    line += (f"  canopy-ray/{best} {times['canopy-ray'] / peers[best]:.2f}"
                             f"  ray/embedded {times['canopy-ray'] / times['canopy']:.2f}")
                if "canopy-dir" in times:
                    line += f"  memory/data_dir {times['canopy'] / times['canopy-dir']:.2f}"
            if expected is not None:
                line += f"  (result {_summary(expected)})"
            if wrong:
                line += f"  WRONG RESULT from {', '.join(wrong)} (not timed)"
            print(line, flush=True)
    finally:
        canopy.close()
        for extra in ("canopy-ray", "canopy-dir"):
            if extra in engines:
                engines[extra].close()
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
    args = parser.parse_args(argv)
    unknown = set(args.workloads) - set(WORKLOADS)
    if unknown:
        parser.error(f"unknown workloads {sorted(unknown)}; choose from {sorted(WORKLOADS)}")
    if not 0 < args.scale <= 10:
        parser.error(f"--scale must be in (0, 10], not {args.scale}")
    results = []
    for name in args.workloads or list(WORKLOADS):
        results += run_workload(name, args.scale, args.repeat, args.ray, args.data_dir)
    if results:
        print("summary (canopy / best peer):")
        for title, canopy_s, best, best_s in results:
            print(f"  {title:34s} {canopy_s * 1e3:9.2f} ms vs {best} {best_s * 1e3:9.2f} ms  ratio {canopy_s / best_s:.2f}")


if __name__ == "__main__":
    main()
