"""DELETE and UPDATE on a 1M-row table (issue 15): the seconds of each statement, the table reloaded
before each run (the load is not timed).

    python -m benchmarks.dml [--rows 1000000] [--repeat 3] [--data-dir]

Statements: row-local ones (storage evaluates the WHERE), and ones whose rows a query finds (an IN
subquery, a scalar subquery over the table itself, MySQL's multi-table UPDATE ... JOIN), which before
planned DML read and rewrote the whole table. A statement the code under test refuses prints so.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time

import numpy as np
import pyarrow as pa

import engine

STATEMENTS = [
    ("delete row-local 1%", "DELETE FROM t WHERE k < 10"),
    ("update row-local 1%", "UPDATE t SET v = v + 1 WHERE k < 10"),
    ("delete IN subquery 1%", "DELETE FROM t WHERE id IN (SELECT id FROM u)"),
    ("update IN subquery 1%", "UPDATE t SET v = v + 1 WHERE id IN (SELECT id FROM u)"),
    ("delete scalar subquery 1%", "DELETE FROM t WHERE v > (SELECT MAX(v) - 20000 FROM t)"),
    ("update JOIN 1%", "UPDATE t JOIN u ON t.id = u.id SET t.v = u.w"),
]


def _data(rows: int) -> tuple[pa.Table, pa.Table]:
    rng = np.random.default_rng(7)
    ids = np.arange(rows, dtype=np.int64)
    t = pa.table({"id": ids, "k": pa.array(rng.integers(0, 1000, rows).astype(np.int32)),
                  "v": pa.array(rng.integers(0, 2_000_000, rows)),
                  "s": pa.array(np.array(["red", "green", "blue", "grey"])[rng.integers(0, 4, rows)])})
    picked = np.sort(rng.choice(rows, rows // 100, replace=False)).astype(np.int64)
    u = pa.table({"id": picked, "w": pa.array(picked * 3)})
    return t, u


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--data-dir", action="store_true", help="durable tables (a temporary data_dir)")
    args = parser.parse_args()
    t, u = _data(args.rows)
    for label, sql in STATEMENTS:
        times, count = [], None
        for _ in range(args.repeat):
            path = tempfile.mkdtemp(prefix="canopy-dml-") if args.data_dir else None
            con = engine.connect(data_dir=path) if path else engine.connect()
            try:
                con.execute("CREATE TABLE t (id BIGINT, k INT, v BIGINT, s VARCHAR(8), SHARD KEY (id))")
                con.execute("CREATE TABLE u (id BIGINT, w BIGINT, SHARD KEY (id))")
                con.load_table("t", t)
                con.load_table("u", u)
                start = time.perf_counter()
                try:
                    count = con.execute(sql).rowcount
                except engine.Error as error:
                    count = f"refused: {error}"
                    break
                times.append(time.perf_counter() - start)
            finally:
                con.close()
                if path:
                    shutil.rmtree(path, ignore_errors=True)
        took = f"{statistics.median(times):7.3f} s (median of {len(times)})" if times else "      -"
        print(f"{label:28s} {took}  rows {count}", flush=True)


if __name__ == "__main__":
    main()
