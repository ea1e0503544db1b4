"""TPC-DS on Canopy and DuckDB in the same run: ``python -m benchmarks.tpcds --sf 1``.

As ``benchmarks.tpch`` (whose helpers this uses): both engines load the same CSV files
(``engine.workloads.tpcds``: DuckDB's dsdgen, cached under ``.data/tpcds``; ``--data-dir`` for
another cache) with the same column types; each query runs once as a warm-up per engine, then
``--repeat`` times; the median is printed with the ratio Canopy / DuckDB, then the totals and the
geometric mean of the ratios over the queries both answered. Queries Canopy refuses (a feature it
lacks) are listed as such.

    python -m benchmarks.tpcds --sf 1 --data-dir /work/tpcds-data --queries q03,q07 --json out.json
"""
from __future__ import annotations

import sys

from benchmarks.tpch import compare_queries, load_both, parse_args, print_header, print_totals, \
    select_queries, write_json


def main(argv=None) -> int:
    import duckdb

    import engine
    from engine.workloads import tpcds

    args = parse_args(argv, "python -m benchmarks.tpcds", __doc__.splitlines()[0], ".data/tpcds")
    selected = select_queries(tpcds.queries(), args.queries)
    if selected is None:
        return 2

    data_dir = tpcds.generate(args.sf, args.data_dir or tpcds.default_cache_dir())
    canopy = engine.connect(leaves=args.leaves, partitions_per_leaf=args.partitions_per_leaf, load_dir=str(data_dir))
    duck = duckdb.connect(":memory:")
    duck_threads = print_header(f"TPC-DS SF {args.sf:g} from {data_dir}", args, duck)

    def load_canopy():
        tpcds.create_schema(canopy)
        return tpcds.load(canopy, data_dir)

    load_s = load_both(load_canopy, lambda: tpcds.load_duckdb(duck, data_dir))
    results = compare_queries(canopy, duck, selected, args.repeat)
    totals = print_totals(results)
    if args.json:
        write_json(args.json, args, duck_threads, load_s, results, totals)
    canopy.close()
    duck.close()
    return 1 if totals["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
