"""Planning cost of TPC-H and TPC-DS queries: parse, bind, each optimizer rule, physical planning.

Loads a suite's tables (in memory, embedded runner), plans every query once so the statistics are
collected, waits for the background histograms, then plans each query ``--repeat`` times and prints
per query the best run's total and its phases (milliseconds), then the median, p90 and max of the
totals over the queries. Nothing runs: the times are those of ``EXPLAIN`` without its text.

    python -m benchmarks.planning --suite tpcds --sf 0.1 [--queries q05,q33] [--repeat 3]
    python -m benchmarks.planning --suite tpch --sf 0.1 --explain-dir /tmp/plans   # EXPLAIN texts, to diff

``--explain-dir`` writes each query's EXPLAIN text to ``DIR/<suite>_<query>.txt`` (plans and their
estimates), so a planner change can be checked to leave the plans as they were.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path


class Phases:
    """Seconds per phase of the planning being measured (nested phases are not subtracted: the
    optimizer rules run inside plan_query, and are reported beside its total). ``clock``: wall
    time, or this thread's CPU time (steadier on a machine other processes load)."""

    def __init__(self, clock=time.perf_counter) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.clock = clock

    def timed(self, name: str, fn):
        def wrapper(*args, **kwargs):
            start = self.clock()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[name] += self.clock() - start
        wrapper.__name__ = getattr(fn, "__name__", name)
        return wrapper


def instrument(phases: Phases) -> None:
    """Wrap the binder, each optimizer rule and the physical planner so their time goes to ``phases``."""
    import engine.optimizer as optimizer
    from engine.optimizer.physical import PhysicalPlanner
    from engine.plan.binder import Binder

    optimizer.RULES = tuple(phases.timed(f"rule {i:02d} {rule.__name__}", rule)
                            for i, rule in enumerate(optimizer.RULES))
    Binder.bind_statement = phases.timed("bind", Binder.bind_statement)
    PhysicalPlanner.plan = phases.timed("physical", PhysicalPlanner.plan)


def connect(suite: str, sf: float, data_dir):
    import engine
    from engine.workloads import tpcds, tpch

    workload = tpcds if suite == "tpcds" else tpch
    if data_dir is None:
        data_dir = Path("/work/tpcds-data" if suite == "tpcds" else workload.default_cache_dir())
    path = workload.generate(sf, Path(data_dir))
    con = engine.connect(load_dir=str(path))
    workload.create_schema(con)
    workload.load(con, path)
    return con, workload


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.planning", description=__doc__.splitlines()[0])
    parser.add_argument("--suite", choices=("tpch", "tpcds"), default="tpcds")
    parser.add_argument("--sf", type=float, default=0.1)
    parser.add_argument("--data-dir", default=None, help="the suite's data cache (default: its usual one)")
    parser.add_argument("--queries", default=None, help="comma-separated names (q01,q05); default: all")
    parser.add_argument("--repeat", type=int, default=3, help="plannings per query; the fastest is shown")
    parser.add_argument("--explain-dir", default=None, help="write each query's EXPLAIN text here")
    parser.add_argument("--phases", action="store_true", help="print the slowest rules of every query")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="wall time, or the planning thread's CPU time (steadier under load)")
    args = parser.parse_args(argv)

    from engine.sql.parser import parse
    from engine.sql.query import plan_query

    con, workload = connect(args.suite, args.sf, args.data_dir)
    session = con.session
    queries = workload.queries()
    if args.queries:
        wanted = set(args.queries.split(","))
        queries = [(name, sql) for name, sql in queries if name in wanted]

    def plan(sql: str):
        node = parse(sql)[0].node
        return plan_query(node, session.catalog, session.database, session.statistics,
                          session.runner.num_partitions)

    for _, sql in queries:         # the statistics every plan asks for, collected before timing
        plan(sql)
    session.statistics.wait()
    if args.explain_dir:
        out = Path(args.explain_dir)
        out.mkdir(parents=True, exist_ok=True)
        cur = con.cursor()
        for name, sql in queries:
            cur.execute("EXPLAIN " + sql)
            (out / f"{args.suite}_{name}.txt").write_text("\n".join(row[0] for row in cur.fetchall()) + "\n")

    clock = time.perf_counter if args.clock == "wall" else time.thread_time
    phases = Phases(clock)
    instrument(phases)
    totals: dict[str, float] = {}
    for name, sql in queries:
        best = None
        for _ in range(args.repeat):
            phases.seconds.clear()
            start = clock()
            node = parse(sql)[0].node
            parsed = clock()
            plan_query(node, session.catalog, session.database, session.statistics, session.runner.num_partitions)
            end = clock()
            run = {"total": end - start, "parse": parsed - start, **phases.seconds}
            if best is None or run["total"] < best["total"]:
                best = run
        totals[name] = best["total"]
        rules = sum(v for k, v in best.items() if k.startswith("rule"))
        line = (f"{name}: total {best['total'] * 1000:7.1f} ms  parse {best['parse'] * 1000:5.1f}  "
                f"bind {best.get('bind', 0) * 1000:5.1f}  rules {rules * 1000:6.1f}  "
                f"physical {best.get('physical', 0) * 1000:5.1f}")
        if args.phases:
            slow = sorted(((v, k) for k, v in best.items() if k.startswith("rule")), reverse=True)[:4]
            line += "   " + ", ".join(f"{k[8:]} {v * 1000:.1f}" for v, k in slow if v >= 0.0005)
        print(line, flush=True)
    values = sorted(totals.values())
    if values:
        p90 = values[min(len(values) - 1, int(round(0.9 * (len(values) - 1))))]
        print(f"{args.suite} SF {args.sf:g}, {len(values)} queries, planning (parse to physical plan, {args.clock} "
              f"time), best of "
              f"{args.repeat}: median {statistics.median(values) * 1000:.1f} ms, p90 {p90 * 1000:.1f} ms, "
              f"max {values[-1] * 1000:.1f} ms ({max(totals, key=totals.get)}), sum {sum(values) * 1000:.0f} ms")
    con.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
