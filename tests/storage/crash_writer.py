"""The writer a crash test kills with SIGKILL: runs statement ``k`` for k = start, start + 1, ... against
``data_dir`` and prints ``k`` after ``execute`` returns (so every printed statement is committed).

``statement(k)`` depends on k alone, so the test replays the same history into an in-memory
connection to know what the table must hold. Small storage thresholds make flushes, direct-to-segment
inserts, merges, delete bitmaps (segment rows) and WAL rewrites (deleted buffer rows) happen every few
statements; UPDATE is a delete plus re-inserts in one statement.
"""
from __future__ import annotations

import random
import sys

OPTIONS = dict(flush_rows=40, segment_rows=300, chunk_rows=64, merge_segments=3)
CREATE = "CREATE TABLE IF NOT EXISTS t (id BIGINT, k BIGINT, v INT, SHARD KEY (id), SORT KEY (v))"


def statement(k: int) -> str:
    rng = random.Random(k)
    r = rng.random()
    if r < 0.55:
        rows = rng.randint(1, 12)
    elif r < 0.7:
        rows = rng.randint(300, 600)          # past flush_rows on every partition: straight to segments
    elif r < 0.75:
        return f"DELETE FROM t WHERE v < {rng.randint(0, 6)} AND k % 3 = {k % 3}"    # delete bitmaps
    elif r < 0.8:
        return f"DELETE FROM t WHERE k = {k - rng.randint(1, 3)} OR v = {rng.randint(0, 100)}"  # buffer rows too
    elif r < 0.92:
        return f"UPDATE t SET v = v + 1 WHERE id % 7 = {rng.randint(0, 6)}"
    else:
        return "OPTIMIZE TABLE t"
    values = ",".join(f"({k * 1000 + j}, {k}, {rng.randint(0, 100)})" for j in range(rows))
    return f"INSERT INTO t VALUES {values}"


def main() -> None:
    import engine
    data_dir, start = sys.argv[1], int(sys.argv[2])
    con = engine.connect(data_dir=data_dir, **OPTIONS)
    cur = con.cursor()
    cur.execute(CREATE)
    cur.execute("SELECT COUNT(*), SUM(v) FROM t")       # reads what recovery rebuilt; warms the planner
    cur.fetchall()
    print("ready", flush=True)
    k = start
    while True:
        cur.execute(statement(k))
        print(k, flush=True)
        k += 1


if __name__ == "__main__":
    main()
