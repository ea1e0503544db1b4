"""``python -m engine.demo [--sf 0.1]``: TPC-H end to end on an embedded Canopy cluster.

Generates the data with ``tpchgen-cli`` (cached under ``.data/tpch``), starts the embedded cluster,
creates the tables from ``shared/tpch/schema.sql``, loads them with ``LOAD DATA``, runs the 22 queries
and prints rows and seconds per query. Exits non-zero when a query fails.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import engine
from engine.workloads import tpch


def _parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m engine.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--sf", type=float, default=0.1, help="TPC-H scale factor (default 0.1)")
    parser.add_argument("--leaves", type=int, default=2, help="leaves in the embedded cluster")
    parser.add_argument("--partitions-per-leaf", type=int, default=4)
    parser.add_argument("--queries", default="", help="comma-separated subset, e.g. q01,q06")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="cache for generated data (default .data/tpch in the repository)")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = _parse_args(argv)
    wanted = {q.strip() for q in args.queries.split(",") if q.strip()}
    selected = [(n, sql) for n, sql in tpch.queries() if not wanted or n in wanted]
    if wanted - {n for n, _ in selected}:
        print(f"unknown queries: {', '.join(sorted(wanted - {n for n, _ in selected}))}", file=sys.stderr)
        return 2

    cache = args.data_dir or tpch.default_cache_dir()
    print(f"TPC-H SF {args.sf:g}: generating with tpchgen-cli (cached in {cache}) ...", flush=True)
    start = time.perf_counter()
    data_dir = tpch.generate(args.sf, cache)
    print(f"  data in {data_dir} ({time.perf_counter() - start:.1f} s)\n")

    con = engine.connect(leaves=args.leaves, partitions_per_leaf=args.partitions_per_leaf, load_dir=str(data_dir))
    print(f"embedded cluster: 1 aggregator, {args.leaves} leaves x {args.partitions_per_leaf} partitions")
    tpch.create_schema(con)
    print(f"created {len(tpch.TABLES)} tables from {tpch.shared_dir() / 'tpch' / 'schema.sql'}\n")

    print(f"{'table':<10} {'rows':>12} {'load s':>9}")
    load_start = time.perf_counter()
    tpch.load(con, data_dir,
              on_table=lambda t, rows, s: print(f"{t:<10} {rows:>12,} {s:>9.3f}", flush=True))
    print(f"{'total':<10} {'':>12} {time.perf_counter() - load_start:>9.3f}\n")

    print(f"{'query':<6} {'rows':>8} {'seconds':>9}")
    total, failures = 0.0, []
    for name, sql in selected:
        start = time.perf_counter()
        try:
            rows = len(con.execute(sql).fetchall())
        except engine.Error as exc:  # report and go on: the table should show every query's fate
            failures.append(name)
            first_line = (str(exc).splitlines() or [""])[0]
            print(f"{name:<6} {'ERROR':>8} {time.perf_counter() - start:>9.3f}  {type(exc).__name__}: {first_line}")
            continue
        seconds = time.perf_counter() - start
        total += seconds
        print(f"{name:<6} {rows:>8} {seconds:>9.3f}", flush=True)
    print(f"{'total':<6} {'':>8} {total:>9.3f}")
    con.close()
    if failures:
        print(f"\n{len(failures)} of {len(selected)} queries failed: {', '.join(failures)}")
        return 1
    print(f"\n{len(selected)} queries ran")
    return 0


if __name__ == "__main__":
    sys.exit(main())
