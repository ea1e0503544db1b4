"""Unique-key checks of INSERT / INSERT IGNORE / REPLACE on a string primary key (issue 16): the
check looks the new keys up in the key column's hash index (the plain one for utf8mb4_general_ci /
_bin, the UCA one for 0900_ai_ci / 0900_as_cs: engine.load.keys.index_bound) instead of reading every
stored key.

    python -m benchmarks.key_check --rows 1000000 --new 1000
    python -m benchmarks.key_check --rows 1000000 --scan          # the check without the index (before)

``t(k VARCHAR(16) PRIMARY KEY, v INT)`` under each collation, ``--rows`` keys in a random order loaded
in one step; then each statement inserts ``--new`` rows from a staging table (``INSERT INTO t SELECT
* FROM n``: the check, not SQL parsing, is timed), the new keys all absent for INSERT, half of them
present (differing in case: duplicates under a _ci collation, new rows under a _bin / _cs one) for
INSERT IGNORE and REPLACE. The figure is the median of ``--repeat`` runs, after a first run that
builds the in-memory segments' indexes; the inserted rows are deleted between runs (not timed).
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import engine
from engine.load import keys as key_checks

COLLATIONS = ("utf8mb4_general_ci", "utf8mb4_bin", "utf8mb4_0900_ai_ci", "utf8mb4_0900_as_cs")


def _keys(numbers: np.ndarray) -> pa.Array:
    return pc.binary_join_element_wise("user-", pc.utf8_lpad(pc.cast(pa.array(numbers), pa.string()), 8, "0"), "")


def run(collation: str, rows: int, new: int, repeat: int) -> str:
    rng = np.random.default_rng(7)
    con = engine.connect(progress=False)
    try:
        con.execute(f"CREATE TABLE t (k VARCHAR(16) COLLATE {collation} PRIMARY KEY, v INT)")
        con.load_table("t", pa.table({"k": _keys(rng.permutation(rows)), "v": pa.array(np.zeros(rows, np.int32))}))
        absent = _keys(rows + np.arange(new))
        # half present, spelled in capitals: a duplicate under _ci, a new key under _bin / _cs
        mixed = pa.concat_arrays([pc.utf8_upper(_keys(rng.integers(0, rows, new // 2))), _keys(2 * rows + np.arange(new - new // 2))])
        con.execute(f"CREATE TABLE n_absent (k VARCHAR(16) COLLATE {collation}, v INT)")
        con.load_table("n_absent", pa.table({"k": absent, "v": pa.array(np.ones(new, np.int32))}))
        con.execute(f"CREATE TABLE n_mixed (k VARCHAR(16) COLLATE {collation}, v INT)")
        con.load_table("n_mixed", pa.table({"k": mixed, "v": pa.array(np.ones(new, np.int32))}))
        out = []
        for statement, source in (("INSERT", "n_absent"), ("INSERT IGNORE", "n_mixed")):
            times, counts = [], set()
            for _ in range(repeat + 1):
                start = time.perf_counter()
                counts.add(con.execute(f"{statement} INTO t SELECT * FROM {source}").rowcount)
                times.append(time.perf_counter() - start)
                con.execute("DELETE FROM t WHERE v = 1")        # back to the loaded rows (not timed)
            out.append(f"{statement} {statistics.median(times[1:]) * 1e3:.1f} ms (rows {sorted(counts)})")
        return f"  {collation:20s} " + ", ".join(out)
    finally:
        con.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--new", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--scan", action="store_true", help="check by reading every stored key (no index)")
    parser.add_argument("--collations", default=",".join(COLLATIONS))
    args = parser.parse_args()
    if args.scan:
        key_checks.INDEX_CHECK_KEYS = 0
    print(f"{args.new} rows into {args.rows} ({'scan' if args.scan else 'hash index'}):")
    for collation in args.collations.split(","):
        print(run(collation, args.rows, args.new, args.repeat), flush=True)


if __name__ == "__main__":
    main()
