"""TPC-H under a small memory_limit: ``python -m benchmarks.tpch_memory --sf 1 --memory-limit 64MB``.

Every query runs once on Canopy with ``SET memory_limit`` (its operators spill past it, see
docs/memory.md) and its answer is checked against DuckDB's (same rows in any order, floats and
decimals to 1e-6 relative). Printed per query: seconds, rows, whether it spilled (bytes written under
the spill directory) and the process' peak RSS while it ran (sampled from /proc every 20 ms); at the
end the RSS after loading and the peak over all queries. Not a test: it loads SF 1 (minutes).
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import threading
import time
from decimal import Decimal
from pathlib import Path


def _rss() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


class _PeakRss:
    """The most VmRSS seen between ``start`` and ``stop`` (a sampling thread)."""

    def __init__(self, every_s: float = 0.02):
        self.every_s = every_s
        self.peak = 0
        self._stop = threading.Event()

    def __enter__(self):
        self.peak = _rss()
        self._stop.clear()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self):
        while not self._stop.wait(self.every_s):
            self.peak = max(self.peak, _rss())

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss())


def _same(got: list, want: list) -> bool:
    def norm(row):
        return tuple(float(v) if isinstance(v, (Decimal, float)) else v for v in row)

    def key(row):
        return repr(tuple((v is None, round(v, 4) if isinstance(v, float) else v) for v in row))

    if len(got) != len(want):
        return False
    for g, w in zip(sorted(map(norm, got), key=key), sorted(map(norm, want), key=key)):
        for a, b in zip(g, w):
            if isinstance(a, float) and isinstance(b, float):
                if not math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6):
                    return False
            elif a != b:
                return False
    return True


def main(argv=None) -> int:
    import duckdb

    import engine
    from engine.exec import memory
    from engine.workloads import tpch

    parser = argparse.ArgumentParser(prog="python -m benchmarks.tpch_memory", description=__doc__.splitlines()[0])
    parser.add_argument("--sf", type=float, default=1.0)
    parser.add_argument("--memory-limit", default="64MB", help="the limit the queries run under (default 64MB)")
    parser.add_argument("--queries", default="", help="comma-separated subset, e.g. q01,q09")
    parser.add_argument("--leaves", type=int, default=2)
    parser.add_argument("--partitions-per-leaf", type=int, default=4)
    parser.add_argument("--data-dir", type=Path, default=None)
    args = parser.parse_args(argv)

    wanted = {q.strip() for q in args.queries.split(",") if q.strip()}
    selected = [(n, sql) for n, sql in tpch.queries() if not wanted or n in wanted]
    data_dir = tpch.generate(args.sf, args.data_dir or tpch.default_cache_dir())
    canopy = engine.connect(leaves=args.leaves, partitions_per_leaf=args.partitions_per_leaf, load_dir=str(data_dir))
    tpch.create_schema(canopy)
    tpch.load(canopy, data_dir)
    duck = duckdb.connect(":memory:")
    tpch.load_duckdb(duck, data_dir)
    answers = {name: duck.execute(sql).fetchall() for name, sql in selected}
    duck.close()
    loaded_rss = _rss()

    spilled = [0]
    finish = memory.SpillFile.finish

    def counting_finish(self):
        open_before = self._writer is not None
        result = finish(self)
        if open_before:
            spilled[0] += os.path.getsize(self.path) if os.path.exists(self.path) else 0
        return result

    memory.SpillFile.finish = counting_finish
    canopy.execute(f"SET memory_limit = '{args.memory_limit}'")
    limit = canopy.execute("SELECT @@memory_limit").fetchall()[0][0]
    print(f"TPC-H SF {args.sf:g}, memory_limit = {args.memory_limit} ({limit} bytes), "
          f"{args.leaves} leaves x {args.partitions_per_leaf} partitions, embedded runner")
    print(f"RSS after loading Canopy (and DuckDB's answers, DuckDB closed): {loaded_rss / 2**20:.0f} MiB\n")
    print(f"{'query':<6} {'seconds':>8} {'rows':>8} {'spilled MiB':>12} {'peak RSS MiB':>13}  result")
    failures, peak = [], 0
    for name, sql in selected:
        spilled[0] = 0
        with _PeakRss() as rss:
            start = time.perf_counter()
            try:
                rows = canopy.execute(sql).fetchall()
                outcome = "correct" if _same(rows, answers[name]) else "WRONG"
            except engine.Error as error:
                rows, outcome = [], f"{type(error).__name__}: {str(error)[:100]}"
            seconds = time.perf_counter() - start
        peak = max(peak, rss.peak)
        if outcome != "correct":
            failures.append(name)
        print(f"{name:<6} {seconds:>8.2f} {len(rows):>8} {spilled[0] / 2**20:>12.1f} {rss.peak / 2**20:>13.0f}  {outcome}")
        sys.stdout.flush()
    print(f"\n{len(selected) - len(failures)} of {len(selected)} correct; peak RSS during the queries "
          f"{peak / 2**20:.0f} MiB ({(peak - loaded_rss) / 2**20:+.0f} MiB over the loaded process)")
    canopy.close()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
