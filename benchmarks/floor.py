"""The per-query floor (issue 17): what a tiny query costs from Python, Canopy against the peers in one run.

    python -m benchmarks.floor                      # SELECT 1, workload j, start-up
    python -m benchmarks.floor --queries 5000 --ray # more runs; also Ray's connect() in a fresh process

1. ``SELECT 1`` and workload j (``../shared/bench/WORKLOADS.md``: ``SELECT COUNT(id) FROM sbtest1 WHERE
   big_int_col > 0`` on 10k rows with an index / sort key on big_int_col): the median of ``--queries``
   runs after a warm-up, each run executing the statement and fetching its rows as Python values: Canopy
   through its DB-API (``cursor.execute`` + ``fetchall``), sqlite3 (an index on big_int_col, id), DuckDB,
   Polars (``SQLContext``) and DataFusion where installed; the ratio is Canopy / the best peer.
2. Start-up: ``import`` + connect + the first ``SELECT 1`` in a fresh interpreter, the median of
   ``--starts`` processes importing compiled bytecode (an unmeasured start writes it first), Canopy against DuckDB and sqlite3; with ``--ray`` also Canopy's
   ``connect(cluster="ray")`` (a private local Ray started and stopped each time).
"""
from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import time

import numpy as np
import pyarrow as pa

ROWS = 10_000
SELECT_1 = "SELECT 1"
QUERY_J = "SELECT COUNT(id) FROM sbtest1 WHERE big_int_col > 0"


def _data() -> pa.Table:
    rng = np.random.default_rng(0)
    return pa.table({"id": np.arange(ROWS, dtype=np.int64),
                     "big_int_col": rng.integers(-10_000, 10_000, ROWS),
                     "pad": ["x" * 60] * ROWS})


def _median_ms(run, queries: int) -> float:
    for _ in range(min(200, queries)):
        run()
    times = []
    for _ in range(queries):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def _engines(data: pa.Table) -> dict:
    """name -> callable(sql) returning the rows, for every engine installed (Canopy first)."""
    import engine
    con = engine.connect()
    cur = con.cursor()
    cur.execute("CREATE TABLE sbtest1 (id BIGINT NOT NULL, big_int_col BIGINT NOT NULL, pad VARCHAR(60), "
                "SORT KEY (big_int_col))")
    con.load_table("sbtest1", data)
    engines = {"canopy": lambda sql: cur.execute(sql).fetchall()}

    lite = sqlite3.connect(":memory:")
    lite.execute("CREATE TABLE sbtest1 (id INTEGER NOT NULL, big_int_col INTEGER NOT NULL, pad TEXT)")
    lite.executemany("INSERT INTO sbtest1 VALUES (?, ?, ?)", zip(*(c.to_pylist() for c in data.columns)))
    lite.execute("CREATE INDEX k ON sbtest1 (big_int_col, id)")      # covering: its best plan for j
    engines["sqlite3"] = lambda sql: lite.execute(sql).fetchall()
    try:
        import duckdb
        duck = duckdb.connect(":memory:")
        duck.execute("SET threads = 2")
        duck.register("source", data)
        duck.execute("CREATE TABLE sbtest1 AS SELECT * FROM source ORDER BY big_int_col")
        engines["duckdb"] = lambda sql: duck.execute(sql).fetchall()
    except ImportError:
        print("duckdb: not installed")
    try:
        import polars as pl
        context = pl.SQLContext(sbtest1=pl.from_arrow(data).sort("big_int_col"))
        engines["polars"] = lambda sql: context.execute(sql, eager=True).rows()
    except ImportError:
        print("polars: not installed")
    try:
        import datafusion
        ctx = datafusion.SessionContext()
        ctx.register_record_batches("sbtest1", [data.sort_by("big_int_col").to_batches()])
        engines["datafusion"] = lambda sql: ctx.sql(sql).to_arrow_table().to_pylist()
    except ImportError:
        print("datafusion: not installed")
    engines["_close"] = con.close
    return engines


STARTS = {
    "canopy": "import engine\ncon = engine.connect()\ncon.execute('SELECT 1').fetchall()",
    "duckdb": "import duckdb\nduckdb.connect().execute('SELECT 1').fetchall()",
    "sqlite3": "import sqlite3\nsqlite3.connect(':memory:').execute('SELECT 1').fetchall()",
    "canopy ray": "import engine\ncon = engine.connect(cluster='ray')\ncon.execute('SELECT 1').fetchall()\n"
                  "print(time.perf_counter() - start)\ncon.close()",
}


def _start_seconds(code: str, starts: int) -> float:
    """Median seconds of ``code`` in fresh interpreters (the time it prints last), each importing
    compiled bytecode as an installed program does: one unmeasured start first writes the
    ``__pycache__`` files (where PYTHONDONTWRITEBYTECODE is set, as on the dev box, every start
    would compile each module's source again: about half of Canopy's start-up)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    times = []
    for attempt in range(starts + 1):
        program = f"import time\nstart = time.perf_counter()\n{code}\nprint(time.perf_counter() - start)"
        done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=600,
                              env=env)
        if done.returncode:
            raise RuntimeError(done.stderr[-2000:])
        if attempt:
            times.append(float(done.stdout.split()[-2 if "ray" in code else -1]))
    return statistics.median(times)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=3000, help="timed runs per query and engine")
    parser.add_argument("--starts", type=int, default=5, help="fresh interpreters per start-up figure")
    parser.add_argument("--ray", action="store_true", help="also time connect(cluster='ray')")
    args = parser.parse_args(argv)

    engines = _engines(_data())
    close = engines.pop("_close")
    expected = engines["sqlite3"](QUERY_J)
    for name, run in engines.items():
        got = [tuple(r.values()) if isinstance(r, dict) else tuple(r) for r in run(QUERY_J)]
        if got != expected:
            print(f"{name}: workload j answered {got}, sqlite3 {expected}")
    print(f"median ms of {args.queries} runs (execute + fetch as Python rows), ratio canopy / best peer")
    print(f"{'query':10}" + "".join(f"{name:>12}" for name in engines) + f"{'ratio':>8}")
    for label, sql in (("SELECT 1", SELECT_1), ("j", QUERY_J)):
        ms = {name: _median_ms(lambda: run(sql), args.queries) for name, run in engines.items()}
        best = min(v for k, v in ms.items() if k != "canopy")
        print(f"{label:10}" + "".join(f"{ms[name]:12.3f}" for name in engines) + f"{ms['canopy'] / best:8.2f}")
    close()

    print(f"\nstart-up: import + connect + SELECT 1 in a fresh interpreter (compiled bytecode), "
          f"median of {args.starts} (s)")
    for name, code in STARTS.items():
        if name == "canopy ray" and not args.ray:
            continue
        try:
            print(f"{name:12} {_start_seconds(code, args.starts):8.3f}")
        except (ImportError, RuntimeError) as error:
            print(f"{name:12} failed: {str(error).splitlines()[-1] if str(error) else error}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
