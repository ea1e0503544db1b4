"""Snapshot epochs on the Ray runner (cluster.versions): a query reads one cut of statements on every
leaf and in every stage, never half of an INSERT ... SELECT, a LOAD DATA, a DELETE or an UPDATE.

Deterministic: the runner's debug hook ``debug_after_first_leaf_commit`` runs queries while a statement
is applied on its first leaf and not yet on the other; they must see the statement nowhere (the state
before it), and queries after it everywhere. A reader thread meanwhile checks that whatever it reads is
one of the committed states. In memory and durable (where flushes and merges retire the segments that
older versions read)."""
from __future__ import annotations

import collections
import threading

import pyarrow as pa
import pytest

import engine

ROWS = 120              # rows per statement, spread over every partition of both leaves by the shard key
QUERIES = {
    # one leaf stage and the final aggregation
    "totals": "SELECT COUNT(*), COALESCE(SUM(k), 0), COUNT(DISTINCT g) FROM t",
    # a self-join on a column that is not the shard key: each side scanned by its own stage
    "join": "SELECT COUNT(*) FROM t a JOIN t b ON a.g = b.g",
}


class Model:
    """The committed state: the keys of each statement's group ``g``."""

    def __init__(self):
        self.groups: dict[int, list[int]] = {}

    def expected(self) -> dict:
        keys = [k for ks in self.groups.values() for k in ks]
        return {"totals": (len(keys), sum(keys), len(self.groups)),
                "join": (sum(len(ks) ** 2 for ks in self.groups.values()),)}


@pytest.fixture(params=["memory", "durable"])
def con(request, ray_session, tmp_path):
    options = {}
    if request.param == "durable":      # small thresholds: statements write segments, merges retire them
        options = {"data_dir": str(tmp_path / "data"), "flush_rows": 10, "segment_rows": 200,
                   "merge_segments": 2}
    con = engine.connect(cluster="ray", load_dir=str(tmp_path), **options)
    con.execute("CREATE TABLE t (k BIGINT, g BIGINT, SHARD KEY (k))")
    yield con
    con.close()


def _read(con) -> dict:
    cursor = con.cursor()
    return {name: tuple(cursor.execute(sql).fetchone()) for name, sql in QUERIES.items()}


def test_readers_never_see_half_a_statement(con, tmp_path):
    runner = con.session.runner
    model = Model()
    committed = [model.expected()]              # every state a reader may see, in order
    in_window: list = []                        # (state before the statement, what queries read)
    errors: list = []

    def between_leaves():
        """The statement is applied on one leaf only: read from another thread (as a client would)."""
        def read():
            try:
                in_window.append((committed[-1], _read(con)))
            except Exception as error:          # noqa: BLE001 - reported by the test
                errors.append(error)
        reader = threading.Thread(target=read)
        reader.start()
        reader.join()

    csv = tmp_path / "rows.csv"
    csv.write_text("".join(f"{k},2\n" for k in range(2000, 2000 + ROWS)))
    groups = model.groups

    def delete(matches):
        for g in list(groups):
            groups[g] = [k for k in groups[g] if not matches(g, k)]
            if not groups[g]:
                del groups[g]

    # (what, the statement, its change to the model)
    statements = [
        ("load_table", lambda: con.load_table("t", pa.table({"k": pa.array(range(ROWS), pa.int64()),
                                                              "g": pa.array([0] * ROWS, pa.int64())})),
         lambda: groups.update({0: list(range(ROWS))})),
        ("INSERT ... SELECT", lambda: con.execute("INSERT INTO t SELECT k + 1000, 1 FROM t WHERE g = 0"),
         lambda: groups.update({1: [k + 1000 for k in groups[0]]})),
        ("LOAD DATA", lambda: con.execute(f"LOAD DATA INFILE '{csv}' INTO TABLE t FIELDS TERMINATED BY ','"),
         lambda: groups.update({2: list(range(2000, 2000 + ROWS))})),
        ("DELETE", lambda: con.execute("DELETE FROM t WHERE g = 1"),
         lambda: groups.pop(1)),
        # the shard key changes: each row leaves its partition (and often its leaf) for another
        ("UPDATE", lambda: con.execute("UPDATE t SET k = k + 10000 WHERE g = 2"),
         lambda: groups.update({2: [k + 10000 for k in groups[2]]})),
        ("INSERT ... SELECT", lambda: con.execute("INSERT INTO t SELECT k + 3000, 3 FROM t WHERE g <> 1"),
         lambda: groups.update({3: [k + 3000 for ks in groups.values() for k in ks]})),
        ("DELETE", lambda: con.execute("DELETE FROM t WHERE g = 0 OR k >= 5000"),
         lambda: delete(lambda g, k: g == 0 or k >= 5000)),
    ]

    stop = threading.Event()
    seen = collections.Counter()                # (query, what it read) -> how often

    def reader_loop():
        try:
            while not stop.is_set():
                for name, value in _read(con).items():
                    seen[name, value] += 1
        except Exception as error:              # noqa: BLE001
            errors.append(error)

    background = threading.Thread(target=reader_loop)
    background.start()
    runner.debug_after_first_leaf_commit = between_leaves
    try:
        for name, run, change in statements:
            run()
            change()
            committed.append(model.expected())
            assert _read(con) == committed[-1], name        # the whole statement, once it returned
    finally:
        runner.debug_after_first_leaf_commit = None
        stop.set()
        background.join()
    assert not errors, errors
    # every statement was read half applied (on one leaf), and the queries saw the state before it
    assert len(in_window) == len(statements)
    for before, read in in_window:
        assert read == before
    for (name, value), times in seen.items():      # each query read a committed state
        assert value in [state[name] for state in committed], f"{name} read {value} ({times} times)"
    assert {name for name, _ in seen} == set(QUERIES)
    # no query reads an old epoch any more: the next query's tasks prune every leaf's versions (their
    # buffers and segment files are released), the stores are read as they are
    assert _read(con) == committed[-1]
    assert [info["versioned_stores"] for info in runner.leaf_info()] == [0, 0]
