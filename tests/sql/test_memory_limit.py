"""memory_limit (docs/memory.md): the setting, operators that spill past it with the answer of the
unlimited run (checked against DuckDB), and a clear MemoryLimitError naming the operator when a query
cannot fit, the session going on. Runs on either runner (``CANOPY_RUNNER=ray``)."""
from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pytest

import engine
from engine.errors import MemoryLimitError, OperationalError, ProgrammingError
from engine.exec.memory import MemoryPool, SpillFile, parse_memory_limit, physical_memory
from engine.exec.operators import spill_partitions
from tests.oracle import assert_same_rows, canopy_and_duckdb

ROWS = 60_000
TINY = "2MiB"           # far below what the queries below hold: they must spill (or fail)


def _data(rows: int = ROWS) -> pa.Table:
    rng = np.random.default_rng(7)
    a = rng.integers(0, 5_000, rows)
    return pa.table({
        "id": np.arange(rows, dtype=np.int64),
        "a": pa.array(a, pa.int64()),
        "s": pa.array(np.char.add("a longer name, number ", (a % 1_000).astype(str))),
        "x": pa.array(rng.random(rows)),
    })


@pytest.fixture(scope="module")
def both():
    con, duck = canopy_and_duckdb("CREATE TABLE t (id BIGINT, a BIGINT, s TEXT, x DOUBLE, SHARD KEY (id))",
                                  "t", _data())
    yield con, duck
    con.close()
    duck.close()


def _spilled(con, sql, limit) -> tuple[list, dict]:
    """``sql``'s rows under ``limit`` and what EXPLAIN ANALYZE says went to disk: {operator: bytes}."""
    cur = con.cursor()
    cur.execute(f"SET memory_limit = '{limit}'")
    try:
        cur.execute(sql)
        rows = cur.fetchall()
        cur.execute("EXPLAIN ANALYZE " + sql)
        last = [r[0] for r in cur.fetchall()][-1]
    finally:
        cur.execute("SET memory_limit = DEFAULT")
    spilled = _Disk()
    units = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
    if "spilled to disk: " in last:
        for part in last.split("spilled to disk: ")[1].split(", "):
            name, size, unit = part.rsplit(" ", 2)
            spilled[name] = float(size.replace(",", "")) * units[unit]
        size, unit = last.split("peak held by a task: ")[1].split(";")[0].split(" ")
        spilled.peak = float(size.replace(",", "")) * units[unit]
    return rows, spilled


class _Disk(dict):
    """What EXPLAIN ANALYZE says went to disk, {operator: bytes}, and in ``peak`` the most one task's
    operators held at once (both runners: a Ray leaf's tasks report theirs)."""
    peak = 0.0


RAY = os.environ.get("CANOPY_RUNNER") == "ray"


def _run(con, sql, limit=None):
    cur = con.cursor()
    if limit is not None:
        cur.execute(f"SET memory_limit = '{limit}'")
    try:
        cur.execute(sql)
        return cur.fetchall()
    finally:
        cur.execute("SET memory_limit = DEFAULT")


def test_memory_limit_is_a_session_variable_with_a_default_below_physical_memory():
    con = engine.connect(memory_limit="64MiB")
    try:
        cur = con.cursor()
        cur.execute("SHOW VARIABLES LIKE 'memory_limit'")
        assert cur.fetchall() == [("memory_limit", str(64 << 20))]
        cur.execute("SET memory_limit = '2GB'")
        cur.execute("SELECT @@memory_limit")
        assert cur.fetchall() == [(2_000_000_000,)]
        cur.execute("SET memory_limit = 134217728")
        cur.execute("SELECT @@session.memory_limit")
        assert cur.fetchall() == [(128 << 20,)]
        cur.execute("SET memory_limit = DEFAULT")
        cur.execute("SELECT @@memory_limit")
        default = cur.fetchall()[0][0]
        total = physical_memory()
        assert 0 < default < (total or float("inf"))
        for bad in ("'lots'", "'12 parsecs'", "0", "'-1GB'", "NULL"):
            with pytest.raises(ProgrammingError, match="memory_limit"):
                cur.execute(f"SET memory_limit = {bad}")
    finally:
        con.close()
    with pytest.raises(ProgrammingError, match="memory_limit"):
        engine.connect(memory_limit="a lot")


# Each leaf's sort holds its whole input (MiBs); what it returns, and so the final sort's input and
# the answer (which is held whole), fit in the limit.
# a window without PARTITION BY whose default frame (RANGE ... CURRENT ROW: a row's peers) meets one
# peer group of half the rows needs that group whole: past the limit it fails (1.4 MB of rows reach
# it: a Ray task's output, which counts while the task runs, fits; the group and its copy do not)
WINDOW = "SELECT COUNT(*), SUM(m * LENGTH(s)) FROM (SELECT s, SUM(a) OVER (ORDER BY a % 2) AS m FROM t) q"
ORDERED = [
    "SELECT id, a, s, x FROM t ORDER BY a, x DESC LIMIT 3000",
    "SELECT s, a, id FROM t ORDER BY s DESC, a, id LIMIT 9000",
    "SELECT id, x FROM t WHERE a > 100 ORDER BY x LIMIT 8000",
]


@pytest.mark.parametrize("sql", ORDERED)
def test_sort_spills_past_the_limit_with_the_unlimited_answer(both, sql):
    con, duck = both
    unlimited = _run(con, sql)
    limited = _run(con, sql, TINY)
    want = duck.execute(sql).fetchall()
    assert limited == unlimited
    assert [tuple(r) for r in limited] == [tuple(r) for r in want]


# Joins on the shard key run where the rows are (no exchange holds them): each leaf's hash join holds
# MiBs of both inputs and must spill (grace hash join) under the limit; answers are small aggregates.
JOINS = [
    "SELECT COUNT(*), SUM(l.a - r.a), MIN(r.x) FROM t l JOIN t r ON l.id = r.id",
    "SELECT COUNT(*), COUNT(r.id), SUM(r.x) FROM t l LEFT JOIN t r ON l.id = r.id AND r.a > 2500",
    "SELECT COUNT(*), SUM(l.a) FROM t l WHERE EXISTS (SELECT 1 FROM t r WHERE r.id = l.id AND r.s < l.s)",
    "SELECT COUNT(*), SUM(l.a) FROM t l WHERE NOT EXISTS (SELECT 1 FROM t r WHERE r.id = l.id AND r.x < l.x)",
    "SELECT COUNT(*), SUM(l.x), MAX(l.id) FROM t l JOIN (SELECT DISTINCT s FROM t WHERE a < 4000) d ON l.s = d.s",
]


# GROUP BYs of tens of thousands of groups per leaf: the partial and the final aggregates spill
# (partitioned hash aggregation); an outer aggregate keeps the answers small.
AGGREGATES = [
    ("SELECT COUNT(*), SUM(n), SUM(m), MIN(lo) FROM (SELECT id % 50000 AS g, COUNT(*) AS n, MAX(x) AS m, "
     "MIN(a) AS lo FROM t GROUP BY id % 50000) q", "2MiB"),
    ("SELECT COUNT(*), SUM(av) FROM (SELECT id, AVG(a) AS av FROM t GROUP BY id HAVING COUNT(*) = 1) q", "2MiB"),
    # GROUP_CONCAT and VAR_POP (the extended aggregates: input held, keys factorized) spill to hash
    # partitions of the keys like the Arrow path
    ("SELECT COUNT(*), SUM(LENGTH(g)), SUM(v) FROM (SELECT a % 3000 AS k, GROUP_CONCAT(s ORDER BY id) AS g, "
     "VAR_POP(x) AS v FROM t GROUP BY a % 3000) q", "2MiB"),
]


@pytest.mark.parametrize("sql, limit", AGGREGATES)
def test_hash_aggregate_spills_past_the_limit_with_the_unlimited_answer(both, sql, limit):
    con, duck = both
    unlimited = _run(con, sql)
    assert_same_rows(_run(con, sql, limit), unlimited)
    assert_same_rows(unlimited, duck.execute(sql).fetchall())


@pytest.mark.parametrize("sql", JOINS)
def test_hash_join_spills_past_the_limit_with_the_unlimited_answer(both, sql):
    con, duck = both
    unlimited = _run(con, sql)
    assert_same_rows(_run(con, sql, "2MiB"), unlimited)
    assert_same_rows(unlimited, duck.execute(sql).fetchall())


# Window partitions: with PARTITION BY, past the limit the input goes to hash partitions of the
# PARTITION BY keys on disk and each is computed alone (its rows come whole from the repartition)
WINDOWS = [
    "SELECT COUNT(*), SUM(r * LENGTH(s)), SUM(c), SUM(fv), SUM(lg) FROM (SELECT s, "
    "ROW_NUMBER() OVER (PARTITION BY a ORDER BY x, id) AS r, COUNT(*) OVER (PARTITION BY a) AS c, "
    "FIRST_VALUE(id) OVER (PARTITION BY a ORDER BY x, id) AS fv, LAG(id, 1, 0) OVER (PARTITION BY a ORDER BY x, id) AS lg "
    "FROM t) q",
    "SELECT COUNT(*), SUM(rk), SUM(m) FROM (SELECT RANK() OVER (PARTITION BY s ORDER BY a) AS rk, "
    "MAX(x) OVER (PARTITION BY s ORDER BY a, id ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) AS m FROM t) q",
]


@pytest.mark.parametrize("sql", WINDOWS)
def test_window_partitions_spill_past_the_limit_with_the_unlimited_answer(both, sql):
    con, duck = both
    unlimited = _run(con, sql)
    limited, spilled = _spilled(con, sql, TINY)
    assert spilled.get("Window", 0) > 1 << 20, spilled
    assert_same_rows(limited, unlimited)
    assert_same_rows(unlimited, duck.execute(sql).fetchall())


# Nested-loop joins (non-equi conditions): past the limit each side goes to disk and the right side is
# read a block at a time, the left side streamed past each block (left rows matched in any block are
# remembered for LEFT / semi / anti joins)
NESTED = [
    "SELECT COUNT(*), SUM(LENGTH(l.s)), MAX(r.id) FROM (SELECT id, a, x, REPEAT(s, 8) AS s FROM t) l "
    "JOIN (SELECT id, x FROM t WHERE id < 40) r ON l.x < r.x - 0.5",
    "SELECT COUNT(*), SUM(LENGTH(l.s)), COUNT(r.id) FROM (SELECT id, a, x, REPEAT(s, 8) AS s FROM t) l "
    "LEFT JOIN (SELECT id, x FROM t WHERE id < 40) r ON l.x < r.x - 0.9",
    "SELECT COUNT(*), SUM(LENGTH(l.s)) FROM t l WHERE EXISTS (SELECT 1 FROM t r WHERE r.id < 40 AND l.x > r.x + 0.5)",
    "SELECT COUNT(*), SUM(LENGTH(l.s)) FROM t l WHERE NOT EXISTS (SELECT 1 FROM t r WHERE r.id < 40 AND l.x > r.x + 0.5)",
    # the broadcast (right) side is the wide one: it is read from disk in blocks
    "SELECT COUNT(*), SUM(LENGTH(w.big)), SUM(n.a) FROM (SELECT id, a, x FROM t WHERE id < 3000) n "
    "JOIN (SELECT id, x, REPEAT(s, 60) AS big FROM t WHERE id < 1200) w ON n.x < w.x - 0.45",
]


@pytest.mark.parametrize("sql", NESTED)
def test_nested_loop_joins_spill_past_the_limit(both, sql):
    con, duck = both
    unlimited = _run(con, sql)
    limited, spilled = _spilled(con, sql, TINY)
    assert spilled.get("NestedLoopJoin", 0) > 32 << 10 and 0 < spilled.peak <= 2 << 20, (spilled, spilled.peak)
    assert_same_rows(limited, unlimited)
    assert_same_rows(unlimited, duck.execute(sql).fetchall())


# Windows without PARTITION BY: one window partition, sorted on disk (runs merged) and computed a
# chunk at a time with what the chunk needs carried over (window_stream.py): positions and peer
# groups, a halo of rows for LAG / LEAD and bounded frames, running aggregates, whole-partition totals
UNPARTITIONED = [
    "SELECT COUNT(*), SUM(r * a), SUM(lg), SUM(ld), SUM(m), SUM(c) FROM (SELECT a, ROW_NUMBER() OVER (ORDER BY x, id) AS r, "
    "LAG(id, 3, -1) OVER (ORDER BY x, id) AS lg, LEAD(a, 2) OVER (ORDER BY x, id) AS ld, MAX(a) OVER (ORDER BY x, id "
    "ROWS BETWEEN 5 PRECEDING AND 4 FOLLOWING) AS m, COUNT(s) OVER (ORDER BY x, id ROWS BETWEEN 2 PRECEDING AND "
    "CURRENT ROW) AS c FROM t) q",
    # ties: 5,000 values of a over 60,000 rows (peer groups; NTILE's bucket sizes are deterministic)
    "SELECT COUNT(*), SUM(rk * LENGTH(s)), SUM(dr), SUM(pr), SUM(cd), SUM(nt), SUM(rs), SUM(p) FROM (SELECT s, RANK() OVER w AS rk, "
    "DENSE_RANK() OVER w AS dr, PERCENT_RANK() OVER w AS pr, CUME_DIST() OVER w AS cd, NTILE(7) OVER w AS nt, "
    "SUM(id) OVER w AS rs, COUNT(*) OVER (ORDER BY a RANGE BETWEEN CURRENT ROW AND CURRENT ROW) AS p "
    "FROM t WINDOW w AS (ORDER BY a)) q",
    "SELECT COUNT(*), SUM(rs), SUM(rc), MIN(rmin), SUM(rmax), SUM(ra), SUM(fv), SUM(lv), SUM(ts), SUM(tc), MAX(tm), "
    "SUM(tf) FROM (SELECT SUM(a) OVER (ORDER BY x, id) AS rs, COUNT(x) OVER (ORDER BY x, id) AS rc, MIN(x) OVER "
    "(ORDER BY x DESC, id) AS rmin, MAX(a) OVER (ORDER BY x, id ROWS BETWEEN UNBOUNDED PRECEDING AND 3 FOLLOWING) AS rmax, "
    "AVG(x) OVER (ORDER BY x, id) AS ra, FIRST_VALUE(id) OVER (ORDER BY x, id) AS fv, LAST_VALUE(id) OVER (ORDER BY x, id "
    "ROWS BETWEEN UNBOUNDED PRECEDING AND 2 FOLLOWING) AS lv, SUM(a) OVER () AS ts, COUNT(*) OVER () AS tc, "
    "MAX(x) OVER () AS tm, FIRST_VALUE(id) OVER (ORDER BY x, id ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED "
    "FOLLOWING) AS tf FROM t) q",
    # a bounded start to UNBOUNDED FOLLOWING: the whole input's COUNT / SUM / AVG less the rows before the start
    "SELECT COUNT(*), SUM(m * LENGTH(s)), SUM(c), SUM(n), SUM(f), SUM(z), COUNT(z) FROM (SELECT s, SUM(a) OVER (ORDER BY "
    "x, id ROWS BETWEEN 3 PRECEDING AND UNBOUNDED FOLLOWING) AS m, COUNT(*) OVER (ORDER BY x, id ROWS BETWEEN 3 "
    "PRECEDING AND UNBOUNDED FOLLOWING) AS c, COUNT(a) OVER (ORDER BY x, id ROWS BETWEEN 2 FOLLOWING AND UNBOUNDED "
    "FOLLOWING) AS n, SUM(x) OVER (ORDER BY id ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING) AS f, "
    "SUM(CASE WHEN a > 4990 THEN a END) OVER (ORDER BY x, id ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) AS z "
    "FROM t) q",
    "SELECT COUNT(*), SUM(m * LENGTH(s)), SUM(av), SUM(c) FROM (SELECT s, SUM(a) OVER (ORDER BY a RANGE BETWEEN "
    "CURRENT ROW AND UNBOUNDED FOLLOWING) AS m, AVG(x) OVER (ORDER BY x, id ROWS BETWEEN CURRENT ROW AND UNBOUNDED "
    "FOLLOWING) AS av, COUNT(*) OVER (ORDER BY a DESC RANGE BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) AS c FROM t) q",
]


@pytest.mark.parametrize("sql", UNPARTITIONED)
def test_a_window_without_partition_by_sorts_on_disk_past_the_limit(both, sql, monkeypatch):
    con, duck = both
    unlimited = _run(con, sql)
    peaks = _pool_peaks(monkeypatch)
    limited, spilled = _spilled(con, sql, TINY)
    assert spilled.get("Window", 0) > 256 << 10, spilled
    assert_same_rows(limited, unlimited)
    assert_same_rows(unlimited, duck.execute(sql).fetchall())
    assert 0 < spilled.peak <= 2 << 20, spilled.peak        # what a task's operators held stayed in the limit
    assert RAY or peaks and max(peaks) <= 2 << 20, peaks    # (and every pool of this process)


# Frames that reach past a chunk's rows, and one peer group or one window partition larger than the
# limit (window_stream.py): RANGE distances keep a halo of the rows whose keys they reach (ascending,
# descending, NULL keys, decimals, doubles); frames from a bounded start to UNBOUNDED FOLLOWING take
# MIN / MAX / LAST_VALUE from a first pass over the sorted rows on disk (each row's MIN / MAX to the
# end); chunks end inside a peer group when no call needs whole ones; a PARTITION BY value larger
# than the limit streams as a window without PARTITION BY
FRAMES = [
    "SELECT COUNT(*), SUM(m * LENGTH(s)), SUM(c), SUM(f) FROM (SELECT s, SUM(a) OVER (ORDER BY a DESC RANGE BETWEEN "
    "7 PRECEDING AND 3 FOLLOWING) AS m, COUNT(*) OVER (ORDER BY a DESC RANGE BETWEEN 2 FOLLOWING AND 9 FOLLOWING) AS c, "
    "MAX(id) OVER (ORDER BY a DESC RANGE BETWEEN 10 PRECEDING AND 4 PRECEDING) AS f FROM t) q",
    "SELECT COUNT(*), SUM(m), SUM(c), COUNT(m), MAX(LENGTH(s)) FROM (SELECT s, SUM(id) OVER (ORDER BY k RANGE BETWEEN "
    "5 PRECEDING AND 5 FOLLOWING) AS m, COUNT(k) OVER (ORDER BY k DESC RANGE BETWEEN 3 PRECEDING AND CURRENT ROW) "
    "AS c FROM (SELECT id, s, CASE WHEN a % 97 = 0 THEN NULL ELSE a END AS k FROM t) z) q",
    "SELECT COUNT(*), SUM(m), SUM(av), MAX(LENGTH(s)) FROM (SELECT s, SUM(d) OVER (ORDER BY d RANGE BETWEEN 1.25 "
    "PRECEDING AND 0.5 FOLLOWING) AS m, AVG(d) OVER (ORDER BY d RANGE BETWEEN 0.75 PRECEDING AND CURRENT ROW) AS av "
    "FROM (SELECT s, CAST(a / 100 AS DECIMAL(10,2)) AS d FROM t) z) q",
    "SELECT COUNT(*), SUM(m * LENGTH(s)), SUM(r) FROM (SELECT s, SUM(x) OVER (ORDER BY x RANGE BETWEEN 0.001 PRECEDING "
    "AND 0.001 FOLLOWING) AS m, MIN(a) OVER (ORDER BY x RANGE BETWEEN UNBOUNDED PRECEDING AND 0.01 FOLLOWING) AS r "
    "FROM t) q",
    "SELECT COUNT(*), SUM(f), SUM(l), SUM(nv), SUM(mn), SUM(LENGTH(ms)), SUM(LENGTH(mi)) FROM (SELECT FIRST_VALUE(id) "
    "OVER (ORDER BY x, id ROWS BETWEEN 4 FOLLOWING AND UNBOUNDED FOLLOWING) AS f, LAST_VALUE(id) OVER (ORDER BY x, id "
    "ROWS BETWEEN 2 PRECEDING AND UNBOUNDED FOLLOWING) AS l, NTH_VALUE(a, 3) OVER (ORDER BY x, id ROWS BETWEEN 4 "
    "FOLLOWING AND UNBOUNDED FOLLOWING) AS nv, MAX(k) OVER (ORDER BY x, id ROWS BETWEEN 3 PRECEDING AND UNBOUNDED "
    "FOLLOWING) AS mn, MAX(s) OVER (ORDER BY x, id ROWS BETWEEN 4 FOLLOWING AND UNBOUNDED FOLLOWING) AS ms, "
    "MIN(UPPER(s)) OVER (ORDER BY x, id ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) AS mi "
    "FROM (SELECT id, a, x, s, CASE WHEN a % 7 = 0 THEN NULL ELSE id END AS k FROM t) z) q",
    "SELECT COUNT(*), SUM(m * LENGTH(s)), SUM(l), SUM(nv), SUM(fv) FROM (SELECT s, MIN(x) OVER (ORDER BY a RANGE "
    "BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) AS m, LAST_VALUE(id) OVER (ORDER BY a, id ROWS BETWEEN UNBOUNDED "
    "PRECEDING AND UNBOUNDED FOLLOWING) AS l, NTH_VALUE(id, 5) OVER (ORDER BY a, id ROWS BETWEEN UNBOUNDED PRECEDING "
    "AND UNBOUNDED FOLLOWING) AS nv, FIRST_VALUE(a) OVER (ORDER BY a RANGE BETWEEN 3 PRECEDING AND UNBOUNDED FOLLOWING) "
    "AS fv FROM t) q",
    # peer groups of a third of the rows: ranking, ROWS frames and LAG need no whole group
    "SELECT COUNT(*), SUM(rn), SUM(rk), SUM(dr), SUM(pr), SUM(nt), SUM(c), SUM(lg), MAX(LENGTH(s)) FROM (SELECT s, "
    "ROW_NUMBER() OVER w AS rn, RANK() OVER w AS rk, DENSE_RANK() OVER w AS dr, PERCENT_RANK() OVER w AS pr, "
    "NTILE(5) OVER w AS nt, COUNT(*) OVER (ORDER BY a % 3 DESC ROWS BETWEEN 2 PRECEDING AND 1 FOLLOWING) AS c, "
    "LAG(a % 3, 2) OVER w AS lg FROM t WINDOW w AS (ORDER BY a % 3 DESC)) q",
    # one PARTITION BY value holding half the rows
    "SELECT COUNT(*), SUM(m * LENGTH(s)), SUM(c), SUM(r) FROM (SELECT s, MIN(x) OVER (PARTITION BY a % 2 ORDER BY x, "
    "id ROWS BETWEEN 3 PRECEDING AND UNBOUNDED FOLLOWING) AS m, COUNT(*) OVER (PARTITION BY a % 2 ORDER BY x, id) AS c, "
    "SUM(a) OVER (PARTITION BY a % 2 ORDER BY x, id ROWS BETWEEN 3 PRECEDING AND UNBOUNDED FOLLOWING) AS r FROM t) q",
    "SELECT COUNT(*), SUM(m * LENGTH(s)) FROM (SELECT s, SUM(a) OVER (PARTITION BY a % 2 ORDER BY a RANGE BETWEEN 5 "
    "PRECEDING AND CURRENT ROW) AS m FROM t) q",
]


@pytest.mark.parametrize("sql", FRAMES)
def test_frames_past_a_chunk_and_large_groups_stream_past_the_limit(both, sql, monkeypatch):
    con, duck = both
    unlimited = _run(con, sql)
    peaks = _pool_peaks(monkeypatch)
    limited, spilled = _spilled(con, sql, TINY)
    assert spilled.get("Window", 0) > 256 << 10, spilled
    assert_same_rows(limited, unlimited)
    assert_same_rows(unlimited, duck.execute(sql).fetchall())
    assert 0 < spilled.peak <= 2 << 20, spilled.peak
    assert RAY or peaks and max(peaks) <= 2 << 20, peaks


def limit_bytes(limit: str) -> int:
    return parse_memory_limit(limit)


def _pool_peaks(monkeypatch) -> list:
    """The most each of this process' query pools held at once, recorded as they close (the embedded
    runner's tasks; a Ray task's pool lives in its worker)."""
    peaks: list = []
    close = MemoryPool.close
    monkeypatch.setattr(MemoryPool, "close", lambda self: peaks.append(self.peak) or close(self))
    return peaks


# DISTINCT aggregates hold their input whole (Arrow's group_by, the kernels' distinct sets): with
# GROUP BY it spills to hash partitions of the keys; without, each argument's values go to hash
# partitions of themselves (a value's partition holds all of its copies) and the counts and sums of
# the partitions' distinct values add up
DISTINCTS = [
    ("SELECT COUNT(*), SUM(n), SUM(m) FROM (SELECT a % 2000 AS g, COUNT(DISTINCT s) AS n, "
     "COUNT(DISTINCT id) AS m FROM t GROUP BY a % 2000) q", TINY),
    ("SELECT COUNT(DISTINCT s), COUNT(DISTINCT id), COUNT(DISTINCT x) FROM t", TINY),
    ("SELECT SUM(DISTINCT id), AVG(DISTINCT id), COUNT(DISTINCT s), SUM(DISTINCT a) FROM t", TINY),
    # DISTINCT beside plain aggregates: the plain ones' states kept batch by batch while the DISTINCT
    # arguments go to partitions
    ("SELECT COUNT(DISTINCT s), COUNT(*), SUM(x), AVG(x), MIN(id), MAX(x), COUNT(a), SUM(DISTINCT a), "
     "AVG(DISTINCT id) FROM t", TINY),
    # integers: the kernels' distinct sets (kernels.DistinctCount), spilled per argument
    ("SELECT COUNT(DISTINCT id + 1), COUNT(DISTINCT a), COUNT(DISTINCT LENGTH(s) * 10000 + a) FROM t", TINY),
]


@pytest.mark.parametrize("sql, limit", DISTINCTS)
def test_distinct_aggregates_spill_past_the_limit_with_the_unlimited_answer(both, sql, limit):
    con, duck = both
    unlimited = _run(con, sql)
    limited, spilled = _spilled(con, sql, limit)
    assert spilled.get("HashAggregate", 0) > 256 << 10 and 0 < spilled.peak <= limit_bytes(limit), spilled
    assert_same_rows(limited, unlimited)
    assert_same_rows(unlimited, duck.execute(sql).fetchall())


# Materialised CTEs (each ~0.8 MB, read twice or more): together they pass the limit, so the ones
# past it go to disk and their references read them from there as a stream
CTES = ("WITH c1 AS (SELECT id, MAX(s) AS s FROM t WHERE a < 1700 GROUP BY id), "
        "c2 AS (SELECT id, MAX(s) AS s FROM t WHERE a >= 1700 AND a < 3400 GROUP BY id), "
        "c3 AS (SELECT id, MAX(s) AS s FROM t WHERE a >= 3400 GROUP BY id) "
        "SELECT (SELECT COUNT(*) FROM c1 JOIN c2 ON c1.s = c2.s AND c1.id = c2.id - 1), "
        "(SELECT COUNT(*) + SUM(LENGTH(s)) FROM c1), (SELECT COUNT(*) FROM c2 JOIN c3 ON c2.id = c3.id + 1), "
        "(SELECT SUM(LENGTH(s)) FROM c2), (SELECT MAX(s) FROM c3)")


def test_materialized_ctes_spill_past_the_limit_with_the_unlimited_answer(both):
    con, duck = both
    unlimited = _run(con, CTES)
    limited, spilled = _spilled(con, CTES, TINY)
    assert any(name.startswith("CTE ") and size > 128 << 10 for name, size in spilled.items()), spilled
    assert_same_rows(limited, unlimited)
    assert_same_rows(unlimited, duck.execute(CTES).fetchall())


def test_exchange_buffers_spill_past_the_limit(both):
    con, duck = both
    # a repartition of every row by a (3 MiB) and a gather of each leaf's top 50,000 rows: what waits
    # between stages goes to disk past the limit, and is read from there by the consuming tasks (on
    # Ray: a producing task's output past a quarter of the limit goes to Ray's object store as it comes)
    exchange = "Exchange (to Ray's object store)" if RAY else "Exchange"
    for sql in (WINDOWS[0], "SELECT COUNT(*), SUM(LENGTH(s) * a), MAX(x) FROM (SELECT s, a, x FROM t "
                            "ORDER BY x DESC, id LIMIT 50000) q"):
        unlimited = _run(con, sql)
        limited, spilled = _spilled(con, sql, TINY)
        assert spilled.get(exchange, 0) > 128 << 10, spilled
        assert_same_rows(limited, unlimited)
        assert_same_rows(unlimited, duck.execute(sql).fetchall())


def test_a_query_that_cannot_fit_fails_clearly_and_the_session_goes_on(both):
    con, duck = both
    # a window without PARTITION BY over a RANGE distance holds its one partition whole: past the
    # limit the query fails with an error naming the operator that asked and the limit
    with pytest.raises(MemoryLimitError, match=r"needs more memory than memory_limit = 2\.0 MiB") as info:
        _run(con, WINDOW, "2MiB")
    assert isinstance(info.value, OperationalError) and info.value.limit == 2 << 20
    assert info.value.operator and str(info.value).startswith(info.value.operator)
    got = _run(con, "SELECT COUNT(*), SUM(a) FROM t")
    assert_same_rows(got, duck.execute("SELECT COUNT(*), SUM(a) FROM t").fetchall())


# Window frames that do not spill (docs/memory.md): past the limit each fails with the memory error
# naming Window and the limit, never a raw MemoryError or an InternalError, with or without PARTITION BY
UNSPILLABLE_WINDOWS = [
    # one peer group (half the rows) larger than the limit, for calls that need a row's whole peer group
    WINDOW,
    "SELECT COUNT(*), SUM(m * LENGTH(s)) FROM (SELECT s, CUME_DIST() OVER (ORDER BY a % 2) AS m FROM t) q",
    # SUM from a RANGE distance to UNBOUNDED FOLLOWING; NTH_VALUE from a RANGE start to the end
    "SELECT COUNT(*), SUM(m * LENGTH(s)) FROM (SELECT s, SUM(a) OVER (ORDER BY a RANGE BETWEEN 5 PRECEDING AND "
    "UNBOUNDED FOLLOWING) AS m FROM t) q",
    "SELECT COUNT(*), SUM(m * LENGTH(s)) FROM (SELECT s, NTH_VALUE(id, 2) OVER (ORDER BY id RANGE BETWEEN CURRENT ROW "
    "AND UNBOUNDED FOLLOWING) AS m FROM t) q",
    # one PARTITION BY value holding half the rows, with such a frame
    "SELECT COUNT(*), SUM(m * LENGTH(s)) FROM (SELECT s, SUM(a) OVER (PARTITION BY a % 2 ORDER BY a RANGE BETWEEN 5 "
    "PRECEDING AND UNBOUNDED FOLLOWING) AS m FROM t) q",
]


@pytest.mark.parametrize("sql", UNSPILLABLE_WINDOWS)
def test_window_frames_that_do_not_spill_fail_with_the_memory_error(both, sql):
    con, duck = both
    with pytest.raises(MemoryLimitError, match=r"^Window needs more memory than memory_limit = 2\.0 MiB") as info:
        _run(con, sql, TINY)
    assert info.value.operator == "Window" and info.value.limit == 2 << 20
    assert_same_rows(_run(con, sql), duck.execute(sql).fetchall())      # unlimited: DuckDB's answer


def test_the_error_names_the_operator():
    # one leaf, one partition: the gathered rows wait on disk, the window is the first to ask
    con = engine.connect(leaves=1, partitions_per_leaf=1, memory_limit="2MiB")
    try:
        con.execute("CREATE TABLE t (id BIGINT, a BIGINT, s TEXT, x DOUBLE, SHARD KEY (id))")
        con.load_table("t", _data())
        with pytest.raises(MemoryLimitError, match=r"^Window needs more memory than memory_limit = 2\.0 MiB") as info:
            con.execute(WINDOW)
        assert info.value.operator == "Window"
        assert con.execute("SELECT COUNT(*) FROM t").fetchall() == [(ROWS,)]
    finally:
        con.close()


def test_an_exploding_join_stops_at_the_limit(both):
    con, _ = both
    # ~60 rows per key value: 3.6 million pairs (55 MiB), past what an answer may take on disk (8 times
    # the limit: engine.exec.answer), so the query stops instead of writing on
    with pytest.raises(MemoryLimitError, match=r"^Answer needs more than memory_limit = 4\.0 MiB allows, even on disk"):
        _run(con, "SELECT l.id, r.id FROM t l JOIN t r ON l.s = r.s", "4MiB")
    assert _run(con, "SELECT COUNT(*) FROM t") == [(ROWS,)]


def test_an_answer_larger_than_the_limit_waits_on_disk_and_is_fetched_from_there(both, tmp_path, monkeypatch):
    con, duck = both
    monkeypatch.setenv("CANOPY_SPILL_DIR", str(tmp_path))        # where the answer's file goes (this process)
    sql = "SELECT id, a, s, x FROM t ORDER BY x DESC, id"      # ~3 MiB of rows, gathered here
    unlimited = _run(con, sql)
    want = duck.execute(sql).fetchall()
    assert [tuple(r) for r in unlimited] == [tuple(r) for r in want]
    _, spilled = _spilled(con, sql, TINY)
    assert spilled.get("Answer", 0) > 1 << 20, spilled
    cur = con.cursor()
    cur.execute(f"SET memory_limit = '{TINY}'")
    try:
        cur.execute(sql)
        assert cur.rowcount == ROWS and [d[0] for d in cur.description] == ["id", "a", "s", "x"]
        assert any(tmp_path.iterdir())                          # the answer is on disk, not in memory
        got = cur.fetchmany(7) + [cur.fetchone()] + cur.fetchmany(70_000 // 3)
        rest = cur.fetch_arrow_table()
        assert rest.column_names == ["id", "a", "s", "x"]
        got += [tuple(row.values()) for row in rest.to_pylist()]
        assert [tuple(r) for r in got] == [tuple(r) for r in unlimited]
        assert cur.fetchall() == []
        cur.execute(sql)                                        # the next statement drops the last one's file
        assert cur.fetchall() == unlimited
    finally:
        cur.execute("SET memory_limit = DEFAULT")
    assert list(tmp_path.iterdir()) == []


# One materialised CTE (read three times) larger than the limit on its own: its init plan's answer goes
# to disk as it is made and the references read the file as a stream (on Ray: the leaves, by path)
BIG_CTE = ("WITH c AS (SELECT id, MAX(a) AS a, MAX(s) AS s, MAX(x) AS x FROM t GROUP BY id) "
           "SELECT (SELECT COUNT(*) FROM c c1 JOIN c c2 ON c1.id = c2.id + 1 AND c1.s < c2.s), "
           "(SELECT SUM(LENGTH(s)) + SUM(a) FROM c), (SELECT MAX(x) FROM c WHERE id > 100)")


def test_a_cte_larger_than_the_limit_is_made_on_disk(both):
    con, duck = both
    unlimited = _run(con, BIG_CTE)
    limited, spilled = _spilled(con, BIG_CTE, TINY)
    assert spilled.get("CTE c", 0) > 1 << 20, spilled
    assert_same_rows(limited, unlimited)
    assert_same_rows(unlimited, duck.execute(BIG_CTE).fetchall())


@pytest.mark.skipif(os.environ.get("CANOPY_RUNNER") == "ray", reason="the leaves' spill directories are "
                    "in their own processes' environment")
def test_spill_files_are_removed_after_the_query(both, tmp_path, monkeypatch):
    con, _ = both
    monkeypatch.setenv("CANOPY_SPILL_DIR", str(tmp_path))
    written = []
    finish = SpillFile.finish
    monkeypatch.setattr(SpillFile, "finish", lambda self: written.append(self.path) or finish(self))
    _run(con, ORDERED[0], TINY)
    assert written and all(path.startswith(str(tmp_path)) for path in written)
    assert list(tmp_path.iterdir()) == []
    written.clear()
    _run(con, JOINS[0], "1MiB")
    assert written
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(MemoryLimitError):
        _run(con, WINDOW, "2MiB")
    assert list(tmp_path.iterdir()) == []


# Partitions that are still over the limit when read are split again (the next prime of partitions,
# recursively). 61 partitions of these MiBs fit 2 MiB, so the test makes the first level 2 partitions
# (and the next ones 3, 5, 7): each then holds too much and is split on (embedded runner: the Ray
# leaves' processes keep the real primes)
RESPLIT = [JOINS[0], JOINS[2], AGGREGATES[0][0], WINDOWS[0]]


@pytest.mark.skipif(RAY, reason="the partition counts are patched in this process")
@pytest.mark.parametrize("sql", RESPLIT)
def test_a_spilled_partition_over_the_limit_is_split_again(both, sql, monkeypatch):
    con, duck = both
    unlimited = _run(con, sql)
    monkeypatch.setattr(spill_partitions, "PRIMES", (2, 3, 5, 7))
    splits = []
    split = spill_partitions.SpillPartitions.split
    monkeypatch.setattr(spill_partitions.SpillPartitions, "split",
                        lambda self, index: splits.append(self.level) or split(self, index))
    peaks = _pool_peaks(monkeypatch)
    limited, spilled = _spilled(con, sql, TINY)
    assert splits, splits                               # a partition was split again
    assert spilled and peaks and max(peaks) <= 2 << 20, (spilled, peaks)
    assert_same_rows(limited, unlimited)
    assert_same_rows(unlimited, duck.execute(sql).fetchall())


def test_a_partition_of_one_key_is_not_split_forever(both, monkeypatch):
    con, duck = both
    # one PARTITION BY value: every row in one spilled partition, which no split spreads; after one
    # split that left every row in one partition it is not split again: it streams as a window
    # without PARTITION BY (sorted on disk), or fails past the limit when its calls cannot
    splits = []
    split = spill_partitions.SpillPartitions.split
    monkeypatch.setattr(spill_partitions.SpillPartitions, "split",
                        lambda self, index: splits.append(self.level) or split(self, index))
    sql = "SELECT COUNT(*), SUM(r * LENGTH(s)) FROM (SELECT s, ROW_NUMBER() OVER (PARTITION BY a >= 0 ORDER BY x, id) AS r FROM t) q"
    assert_same_rows(_run(con, sql, TINY), duck.execute(sql).fetchall())
    assert RAY or splits == [0], splits
    splits.clear()
    sql = ("SELECT COUNT(*), SUM(r * LENGTH(s)) FROM (SELECT s, SUM(a) OVER (PARTITION BY a >= 0 ORDER BY a RANGE "
           "BETWEEN 5 PRECEDING AND UNBOUNDED FOLLOWING) AS r FROM t) q")
    with pytest.raises(MemoryLimitError, match=r"^Window needs more memory than memory_limit = 2\.0 MiB"):
        _run(con, sql, TINY)
    assert RAY or splits == [0], splits


# INSERT ... SELECT and CREATE TABLE ... AS of a SELECT larger than the limit: its answer waits on
# disk and goes into the table a batch at a time as one load (engine/sql/handlers/spilled_insert.py)
def test_insert_select_and_create_table_as_past_the_limit_stream_into_the_table(both):
    con, duck = both
    cur = con.cursor()
    want = duck.execute("SELECT COUNT(*), SUM(id), SUM(a), SUM(LENGTH(s)), SUM(x) FROM t").fetchall()
    try:
        cur.execute("CREATE TABLE copied (id BIGINT, a BIGINT, s TEXT, x DOUBLE, SHARD KEY (a))")
        cur.execute(f"SET memory_limit = '{TINY}'")
        cur.execute("INSERT INTO copied SELECT id, a, s, x FROM t")
        assert cur.rowcount == ROWS
        cur.execute("CREATE TABLE made AS SELECT id, a, CONCAT(s, '!') AS s, x FROM t")
        assert cur.rowcount == ROWS
        cur.execute("SET memory_limit = DEFAULT")
        for name, extra in (("copied", 0), ("made", ROWS)):
            got = _run(con, f"SELECT COUNT(*), SUM(id), SUM(a), SUM(LENGTH(s)), SUM(x) FROM {name}")
            assert_same_rows(got, [(want[0][0], want[0][1], want[0][2], want[0][3] + extra, want[0][4])])
        # a unique key's duplicate among the streamed rows fails the whole statement, nothing added
        cur.execute("CREATE TABLE keyed (id BIGINT PRIMARY KEY, s TEXT)")
        cur.execute(f"SET memory_limit = '{TINY}'")
        with pytest.raises(engine.errors.IntegrityError, match="Duplicate entry '7' for key"):
            cur.execute("INSERT INTO keyed SELECT CASE WHEN id = 59000 THEN 7 ELSE id END, s FROM t")
        cur.execute("INSERT INTO keyed SELECT id, s FROM t")
        assert cur.rowcount == ROWS
        assert _run(con, "SELECT COUNT(*), COUNT(DISTINCT id) FROM keyed") == [(ROWS, ROWS)]
        # a scalar subquery of many rows: MySQL's error, not the memory one
        with pytest.raises(engine.errors.BadDataError, match="Subquery returns more than 1 row"):
            cur.execute("SELECT (SELECT s FROM t) AS v")
    finally:
        cur.execute("SET memory_limit = DEFAULT")
        for name in ("copied", "made", "keyed"):
            cur.execute(f"DROP TABLE IF EXISTS {name}")
