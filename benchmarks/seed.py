"""Seed workloads of ``shared/bench/WORKLOADS.md`` through Canopy's SQL and the peers, in one run.

``python -m benchmarks.seed [c d]`` builds each workload's data once, loads it into Canopy (embedded
local cluster), DuckDB, and Polars / DataFusion / chDB when they are installed, runs each query
(one warm-up, median of 5) and prints every time and ``canopy / best peer``. Absolute times drift
with the machine; the ratio is the number to track.

Workloads here: c (8M unique shuffled INT: COUNT(*) WHERE i IN (3 values) and IN (904 values)) and
d (10M sorted INT, 1000 values: COUNT(*) WHERE i = 2). For d, Canopy's storage does not run-end
encode yet, so the SQL figure scans plain batches; the kernel figure (``count_matches`` over the
run-end-encoded column) is what a run-end-encoded segment will cost.
"""
from __future__ import annotations

import argparse

import numpy as np
import pyarrow as pa

from benchmarks.timing import median_seconds

REPEAT = 5


def workload_c():
    rng = np.random.default_rng(0)
    table = pa.table({"i": pa.array(rng.permutation(8_000_000).astype(np.int32))})
    list_904 = ", ".join(str(v) for v in sorted(np.random.default_rng(904).choice(8_000_000, 904, replace=False)))
    return table, {
        "c: IN (1,100,200)": "SELECT COUNT(*) FROM t WHERE i IN (1, 100, 200)",
        "c: IN (904 values)": f"SELECT COUNT(*) FROM t WHERE i IN ({list_904})",
    }


def workload_d():
    table = pa.table({"i": pa.array(np.repeat(np.arange(1000, dtype=np.int32), 10_000))})
    return table, {"d: i = 2 (sorted, 1000 runs)": "SELECT COUNT(*) FROM t WHERE i = 2"}


WORKLOADS = {"c": workload_c, "d": workload_d}


def peers(table):
    """name -> run(sql) for every installed peer, each holding ``table`` as ``t`` in memory."""
    out = {}
    import duckdb

    duck = duckdb.connect(":memory:")
    duck.execute("SET threads TO 2")
    duck.register("src", table)
    duck.execute("CREATE TABLE t AS SELECT * FROM src")
    out["duckdb"] = lambda sql: duck.sql(sql).fetchall()
    try:
        import polars as pl

        frame = pl.from_arrow(table)
        ctx = pl.SQLContext(t=frame)
        out["polars"] = lambda sql: ctx.execute(sql, eager=True)
    except ImportError:
        pass
    try:
        import datafusion

        df_ctx = datafusion.SessionContext()
        df_ctx.register_record_batches("t", [table.to_batches()])
        out["datafusion"] = lambda sql: df_ctx.sql(sql).collect()
    except ImportError:
        pass
    try:
        import chdb  # noqa: F401  (embedded ClickHouse; queries an Arrow table through Python())
        from chdb import session as chs

        sess = chs.Session()
        globals()["_chdb_table"] = table
        out["chdb"] = lambda sql: sess.query(sql.replace("FROM t", "FROM Python(_chdb_table)"), "CSV")
    except ImportError:
        pass
    return out


def canopy(table):
    import engine

    con = engine.connect(database="seed", progress=False)
    con.execute("CREATE TABLE t (i INT)")
    con.load_table("t", table)
    return con, lambda sql: con.execute(sql).fetchall()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("workloads", nargs="*", help=f"any of {sorted(WORKLOADS)} (default: all)")
    args = parser.parse_args(argv)
    unknown = set(args.workloads) - set(WORKLOADS)
    if unknown:
        parser.error(f"unknown workloads {sorted(unknown)}; choose from {sorted(WORKLOADS)}")
    for name in args.workloads or list(WORKLOADS):
        table, queries = WORKLOADS[name]()
        con, run_canopy = canopy(table)
        others = peers(table)
        for title, sql in queries.items():
            expected = run_canopy(sql)
            times = {"canopy": median_seconds(lambda: run_canopy(sql))}
            for peer, run in others.items():
                times[peer] = median_seconds(lambda: run(sql))
            best = min((t, p) for p, t in times.items() if p != "canopy")
            cells = "  ".join(f"{p} {t * 1e3:8.2f} ms" for p, t in times.items())
            print(f"{title:32s} {cells}  canopy/{best[1]} {times['canopy'] / best[0]:.2f}  (count {expected[0][0]})")
        if name == "d":
            import pyarrow.compute as pc

            import kernels

            runs = pc.run_end_encode(table.column("i").combine_chunks())
            seconds = median_seconds(lambda: kernels.count_matches(runs, "eq", 2))
            print(f"{'d: kernel count_matches over REE':32s} {seconds * 1e3:8.3f} ms "
                  f"({len(runs.run_ends)} runs, count {kernels.count_matches(runs, 'eq', 2)})")
        con.close()


if __name__ == "__main__":
    main()
