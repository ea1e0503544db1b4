"""Workload j (../shared/bench/WORKLOADS.md): latency from Python of
``SELECT COUNT(id) FROM sbtest1 WHERE big_int_col > %s`` on 10k rows sorted by big_int_col, with the
plan cache on and off, on the embedded runner.

    .venv/bin/python -m benchmarks.plan_cache [--queries 2000]
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import pyarrow as pa

from cluster.local import LocalRunner
from engine.session import Session

SQL = "SELECT COUNT(id) FROM sbtest1 WHERE big_int_col > %s"


def measure(session: Session, queries: int) -> float:
    """Median latency in ms over ``queries`` runs with varying parameter values (after a warm-up)."""
    for i in range(50):
        session.execute(SQL, (i,))
    times = []
    for i in range(queries):
        start = time.perf_counter()
        session.execute(SQL, ((i * 7919) % 20000 - 10000,))
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", type=int, default=2000)
    args = parser.parse_args()
    runner = LocalRunner()
    session = Session(runner)
    session.execute("CREATE TABLE sbtest1 (id BIGINT NOT NULL, big_int_col BIGINT NOT NULL, "
                    "pad VARCHAR(60), SORT KEY (big_int_col))")
    n = 10_000
    session.load_table("sbtest1", pa.table({"id": np.arange(n),
                                            "big_int_col": np.random.default_rng(0).integers(-10000, 10000, n),
                                            "pad": ["x" * 60] * n}))
    session.plan_cache.enabled = False
    off = measure(session, args.queries)
    session.plan_cache.enabled = True
    on = measure(session, args.queries)
    print(f"workload j, median of {args.queries}: plan cache off {off:.3f} ms, on {on:.3f} ms "
          f"(hits {session.plan_cache.hits}, misses {session.plan_cache.misses})")
    runner.shutdown()


if __name__ == "__main__":
    main()
