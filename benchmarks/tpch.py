"""TPC-H on Canopy and DuckDB in the same run: ``python -m benchmarks.tpch --sf 1``.

Both engines get the same CSV files (``tpchgen-cli``, cached under ``.data/tpch``) with the same column
types, loaded before any timing. Each query runs once as a warm-up on each engine, then ``--repeat``
times alternating between them; the median is reported with the ratio Canopy / DuckDB (below 1 means
Canopy is faster). Results are fetched as Arrow tables on both sides, the cheapest form for each.
DuckDB runs with its default thread count (printed); Canopy runs its embedded cluster.

    python -m benchmarks.tpch --sf 1 --queries q01,q06 --repeat 5 --json out.json
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import time
from pathlib import Path


def _time_query(run, sql, repeat, settle=None):
    """(median seconds, rows) of ``repeat`` runs after one warm-up; ``run(sql)`` returns an Arrow table.
    ``settle``: called after the warm-up, then a second warm-up runs. Canopy collects the histograms a
    new query's estimates ask for on a background thread, and replans once they land; the timed runs
    measure the steady state, not that one-time collection competing with them for the CPUs."""
    rows = run(sql).num_rows
    if settle is not None:
        settle()
        run(sql)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run(sql)
        times.append(time.perf_counter() - start)
    return statistics.median(times), rows


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def parse_args(argv, prog: str, description: str, default_cache: str):
    """The options every workload runner takes (``benchmarks.tpch``, ``benchmarks.tpcds``)."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--sf", type=float, default=1.0, help="scale factor (default 1)")
    parser.add_argument("--queries", default="", help="comma-separated subset, e.g. q01,q06")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per query after one warm-up")
    parser.add_argument("--leaves", type=int, default=2)
    parser.add_argument("--partitions-per-leaf", type=int, default=4)
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    parser.add_argument("--data-dir", type=Path, default=None, help=f"data cache (default {default_cache})")
    return parser.parse_args(argv)


def select_queries(all_queries, wanted_text: str):
    """The queries named in ``--queries`` (all when empty), or None after printing the unknown names."""
    wanted = {q.strip() for q in wanted_text.split(",") if q.strip()}
    selected = [(n, sql) for n, sql in all_queries if not wanted or n in wanted]
    if wanted - {n for n, _ in selected}:
        print(f"unknown queries: {', '.join(sorted(wanted - {n for n, _ in selected}))}", file=sys.stderr)
        return None
    return selected


def print_header(title: str, args, duck):
    import duckdb

    import engine

    threads = duck.execute("SELECT current_setting('threads')").fetchone()[0]
    print(f"{title}; median of {args.repeat} after one warm-up")
    print(f"machine: {_cpu_name()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    print(f"Canopy {engine.__version__}: embedded cluster, {args.leaves} leaves x {args.partitions_per_leaf} partitions")
    print(f"DuckDB {duckdb.__version__}: {threads} threads (default)\n")
    return threads


def load_both(canopy_load, duck_load):
    """Time ``canopy_load()`` and ``duck_load()`` (each returns ``{table: rows}``) and print both."""
    start = time.perf_counter()
    canopy_rows = canopy_load()
    canopy_s = time.perf_counter() - start
    start = time.perf_counter()
    duck_rows = duck_load()
    duck_s = time.perf_counter() - start
    print(f"load: Canopy {canopy_s:.2f} s, DuckDB {duck_s:.2f} s")
    if canopy_rows != duck_rows:
        print(f"  row counts differ: Canopy {canopy_rows} DuckDB {duck_rows}")
    print()
    return canopy_s, duck_s


def compare_queries(canopy, duck, selected, repeat: int) -> dict:
    """Time each query on both engines, print one line per query, return ``{name: entry}``.

    A query Canopy refuses (``NotSupportedError``: a feature it lacks) is listed as ``REFUSED``, one
    that fails otherwise as ``ERROR``; DuckDB's time is still printed and the run goes on."""
    import engine

    def run_canopy(sql):
        return canopy.execute(sql).fetch_arrow_table()

    def run_duckdb(sql):
        return duck.sql(sql).to_arrow_table()

    results = {}
    print(f"{'query':<6} {'canopy s':>10} {'duckdb s':>10} {'ratio':>8} {'rows':>8}")
    for name, sql in selected:
        duck_s, duck_n = _time_query(run_duckdb, sql, repeat)
        entry = {"duckdb_s": duck_s, "duckdb_rows": duck_n}
        try:
            canopy_s, canopy_n = _time_query(run_canopy, sql, repeat, settle=canopy.session.statistics.wait)
        except engine.Error as exc:  # keep timing the other queries; the error is reported and counted
            entry["refused" if isinstance(exc, engine.NotSupportedError) else "error"] = \
                f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0]}"
            word = "REFUSED" if "refused" in entry else "ERROR"
            print(f"{name:<6} {word:>10} {duck_s:>10.4f} {'':>8} {duck_n:>8}  {entry.get('refused') or entry['error']}")
        else:
            entry.update(canopy_s=canopy_s, canopy_rows=canopy_n, ratio=canopy_s / duck_s)
            flag = "" if canopy_n == duck_n else f"  rows differ: DuckDB {duck_n}"
            print(f"{name:<6} {canopy_s:>10.4f} {duck_s:>10.4f} {entry['ratio']:>8.2f} {canopy_n:>8}{flag}")
        results[name] = entry
        sys.stdout.flush()
    return results


def print_totals(results: dict) -> dict:
    """Totals over the queries both engines answered, with the geometric mean of their ratios."""
    timed = [e for e in results.values() if "canopy_s" in e]
    totals = {
        "queries": len(timed),
        "failed": sorted(n for n, e in results.items() if "error" in e),
        "refused": sorted(n for n, e in results.items() if "refused" in e),
        "canopy_s": sum(e["canopy_s"] for e in timed),
        "duckdb_s": sum(e["duckdb_s"] for e in timed),
    }
    totals["ratio"] = totals["canopy_s"] / totals["duckdb_s"] if timed else None
    totals["geomean_ratio"] = math.exp(statistics.fmean(math.log(e["ratio"]) for e in timed)) if timed else None
    ratio = f"{totals['ratio']:>8.2f}" if timed else f"{'n/a':>8}"
    print(f"{'total':<6} {totals['canopy_s']:>10.4f} {totals['duckdb_s']:>10.4f} {ratio}  ({len(timed)} queries)")
    if timed:
        print(f"geometric mean of the ratios: {totals['geomean_ratio']:.2f}")
    for kind in ("refused", "failed"):
        if totals[kind]:
            print(f"{kind} ({len(totals[kind])}): {', '.join(totals[kind])}")
    return totals


def write_json(path: Path, args, duck_threads, load_s, results, totals) -> None:
    import duckdb

    import engine

    path.write_text(json.dumps({
        "sf": args.sf, "repeat": args.repeat,
        "machine": {"cpus": os.cpu_count(), "processor": _cpu_name(), "python": platform.python_version()},
        "canopy": {"version": engine.__version__, "leaves": args.leaves,
                   "partitions_per_leaf": args.partitions_per_leaf, "load_s": load_s[0]},
        "duckdb": {"version": duckdb.__version__, "threads": duck_threads, "load_s": load_s[1]},
        "queries": results, "totals": totals,
    }, indent=2))
    print(f"wrote {path}")


def main(argv=None) -> int:
    import duckdb

    import engine
    from engine.workloads import tpch

    args = parse_args(argv, "python -m benchmarks.tpch", __doc__.splitlines()[0], ".data/tpch")
    selected = select_queries(tpch.queries(), args.queries)
    if selected is None:
        return 2

    data_dir = tpch.generate(args.sf, args.data_dir or tpch.default_cache_dir())
    canopy = engine.connect(leaves=args.leaves, partitions_per_leaf=args.partitions_per_leaf, load_dir=str(data_dir))
    duck = duckdb.connect(":memory:")
    duck_threads = print_header(f"TPC-H SF {args.sf:g} from {data_dir}", args, duck)

    def load_canopy():
        tpch.create_schema(canopy)
        return tpch.load(canopy, data_dir)

    load_s = load_both(load_canopy, lambda: tpch.load_duckdb(duck, data_dir))
    results = compare_queries(canopy, duck, selected, args.repeat)
    totals = print_totals(results)
    if args.json:
        write_json(args.json, args, duck_threads, load_s, results, totals)
    canopy.close()
    duck.close()
    return 1 if totals["failed"] or totals["refused"] else 0


if __name__ == "__main__":
    sys.exit(main())
