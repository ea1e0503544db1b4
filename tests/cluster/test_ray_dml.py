"""DELETE and UPDATE in place on the Ray runner (delete bitmaps on durable leaves, held kept rows in
memory), checked against DuckDB running the same statements: sharded, keyless and reference tables,
rowcounts, a statement failing on one leaf or on the driver leaving every partition as it was, deleted
rows staying deleted after the deployment is reopened, and durable leaves flushing and merging on their
background thread.

One deployment per storage kind serves the module (memory, then a data_dir)."""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import engine
from engine.errors import ConstraintError
from engine.sql.dml import RowMatcher

SMALL = {"flush_rows": 64, "segment_rows": 256, "chunk_rows": 32}   # WAL, segments and flushes all occur
ROWS = 3000
KINDS = ("sharded", "keyless", "reference")


@pytest.fixture(scope="module", params=["memory", "durable"])
def deployment(request, ray_session, tmp_path_factory):
    """(connection, data_dir or None); a durable test may replace the connection (reopen)."""
    path = tmp_path_factory.mktemp("ray-dml") if request.param == "durable" else None
    options = {"data_dir": str(path), **SMALL} if path is not None else {}
    state = {"path": path, "options": options, "con": engine.connect(cluster="ray", **options)}
    yield state
    state["con"].close()


def _data(rows: int = ROWS, first: int = 0) -> pa.Table:
    k = np.arange(first, first + rows, dtype=np.int32)
    return pa.table({"k": k, "v": (k * 7919 % 1000).astype(np.int32),
                     "s": pa.array([f"s{i % 13}" for i in range(first, first + rows)])})


def _create(con, duck, name: str, kind: str) -> None:
    ddl = f"CREATE {'REFERENCE ' if kind == 'reference' else ''}TABLE {name} (k INT NOT NULL, v INT NOT NULL, " \
          f"s VARCHAR(10){', SHARD KEY (k)' if kind == 'sharded' else ''})"
    con.execute(ddl)
    data = _data()
    con.session.runner.insert(con.session.catalog.table("canopy", name), data)      # bulk: segments
    small = _data(40, first=ROWS)
    for start in range(0, 40, 10):                      # small inserts: rows in the WAL-backed buffer
        values = ", ".join(f"({k}, {v}, '{s}')" for k, v, s in zip(*(small[c].to_pylist()[start:start + 10]
                                                                     for c in ("k", "v", "s"))))
        con.execute(f"INSERT INTO {name} VALUES {values}")
    duck.execute(f"CREATE TABLE {name} (k INT NOT NULL, v INT NOT NULL, s VARCHAR)")
    duck.register("data_view", pa.concat_tables([data, small]))
    duck.execute(f"INSERT INTO {name} SELECT * FROM data_view")
    duck.unregister("data_view")


def _rows(con, name: str) -> list[tuple]:
    return con.execute(f"SELECT k, v, s FROM {name} ORDER BY k, v, s").fetchall()


def _same(con, duck, name: str) -> None:
    assert _rows(con, name) == duck.execute(f"SELECT k, v, s FROM {name} ORDER BY k, v, s").fetchall()
    assert con.execute(f"SELECT COUNT(*) FROM {name}").fetchone()[0] == \
        duck.execute(f"SELECT COUNT(*) FROM {name}").fetchone()[0]


STATEMENTS = [
    "DELETE FROM {t} WHERE v % 7 = 3",
    "UPDATE {t} SET v = v * 2, s = 'upd' WHERE k BETWEEN 100 AND 400",
    "DELETE FROM {t} WHERE s = 'upd' AND v > 900",
    "UPDATE {t} SET k = k + 100000 WHERE v < 40",           # a shard key changes: rows move partitions
    "DELETE FROM {t} WHERE k >= 3030",                      # rows of the write buffer
    "DELETE FROM {t} WHERE k = -5",                         # matches nothing
    "UPDATE {t} SET s = NULL WHERE s = 's3' AND k > 2000",
    "DELETE FROM {t} WHERE s IS NULL OR k > 100000",
]


@pytest.mark.parametrize("kind", KINDS)
def test_delete_and_update_in_place_match_duckdb(deployment, kind):
    duckdb = pytest.importorskip("duckdb")
    con, duck = deployment["con"], duckdb.connect()
    name = f"dml_{kind}"
    _create(con, duck, name, kind)
    runner = con.session.runner
    replaced = []
    original = runner.replace_table
    runner.replace_table = lambda *args: replaced.append(args) or original(*args)
    try:
        for statement in STATEMENTS:
            sql = statement.format(t=name)
            expected = duck.execute(sql).fetchone()[0]
            assert con.execute(sql).rowcount == expected, sql
            _same(con, duck, name)
    finally:
        runner.replace_table = original
    assert replaced == []                   # every statement ran in place, none rewrote the table
    assert con.execute(f"SELECT s, COUNT(*), SUM(v) FROM {name} GROUP BY s ORDER BY s").fetchall() == \
        duck.execute(f"SELECT s, COUNT(*), SUM(v) FROM {name} GROUP BY s ORDER BY s").fetchall()


@dataclass(frozen=True)
class _FailingMatcher:
    """A RowMatcher of ``k`` alone that raises on the batch holding ``poison`` (one partition, so one
    leaf), the other partitions having prepared their deletes. Shipped to the leaves by value."""
    inner: RowMatcher
    poison: int

    @property
    def columns(self):
        return self.inner.columns

    @property
    def bounds(self):
        return self.inner.bounds

    def __call__(self, batch: pa.RecordBatch) -> np.ndarray:
        if pc.any(pc.equal(batch.column(0), self.poison)).as_py():
            raise ValueError(f"poisoned batch (k = {self.poison})")
        return self.inner(batch)


def _leftover_deltas(path) -> list[Path]:
    return [] if path is None else sorted(path.glob("leaf-*/table-*/part-*/delta-*"))


def test_a_failing_statement_leaves_every_partition_as_it_was(deployment):
    import ray.cloudpickle
    from engine.sql import dml
    from sqlglot import parse_one

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])    # leaves cannot import tests/
    duckdb = pytest.importorskip("duckdb")
    con, duck = deployment["con"], duckdb.connect()
    _create(con, duck, "fails", "sharded")
    runner, catalog = con.session.runner, con.session.catalog
    table = catalog.table("canopy", "fails")
    before = _rows(con, "fails")

    # an UPDATE whose new values break NOT NULL: every leaf prepared its delete, the driver's rewrite fails
    with pytest.raises(ConstraintError, match="cannot be NULL"):
        con.execute("UPDATE fails SET v = NULL WHERE k % 5 = 0")
    assert _rows(con, "fails") == before

    # a DELETE whose predicate fails on one leaf only, after the other leaf prepared its part
    select = parse_one("SELECT * FROM fails WHERE k % 2 = 0", read="mysql")
    matcher, _ = dml.row_change(catalog, "canopy", table, select).bound()
    assert matcher.columns == ("k",)
    with pytest.raises(ValueError, match="poisoned"):
        runner.delete_rows(table, _FailingMatcher(matcher, poison=2999))
    assert _rows(con, "fails") == before
    assert _leftover_deltas(deployment["path"]) == []

    # the locks are released and nothing is half-applied: the next statements run as usual
    con.execute("DELETE FROM fails WHERE v < 500")
    duck.execute("DELETE FROM fails WHERE v < 500")
    con.execute("INSERT INTO fails VALUES (-1, 1, 'new')")
    duck.execute("INSERT INTO fails VALUES (-1, 1, 'new')")
    _same(con, duck, "fails")


def test_deleted_rows_stay_deleted_after_reopening(deployment):
    if deployment["path"] is None:
        pytest.skip("in-memory tables do not outlive their deployment")
    duckdb = pytest.importorskip("duckdb")
    con, duck = deployment["con"], duckdb.connect()
    for kind in ("sharded", "reference"):
        _create(con, duck, f"kept_{kind}", kind)
        for sql in ("DELETE FROM {t} WHERE v % 3 = 0", "UPDATE {t} SET v = v + 1 WHERE k < 1500",
                    "DELETE FROM {t} WHERE k >= 3020"):
            con.execute(sql.format(t=f"kept_{kind}"))
            duck.execute(sql.format(t=f"kept_{kind}"))
    con.close()
    deployment["con"] = con = engine.connect(cluster="ray", **deployment["options"])
    for kind in ("sharded", "reference"):
        _same(con, duck, f"kept_{kind}")
    con.execute("DELETE FROM kept_sharded WHERE v % 3 = 1")         # and it goes on from there
    duck.execute("DELETE FROM kept_sharded WHERE v % 3 = 1")
    _same(con, duck, "kept_sharded")


def test_durable_leaves_flush_and_merge_in_the_background(deployment):
    if deployment["path"] is None:
        pytest.skip("in-memory tables have nothing to flush or merge")
    con = deployment["con"]
    runner = con.session.runner
    con.execute("CREATE TABLE bg (k INT, v INT, SHARD KEY (k))")
    for start in range(0, 2400, 120):           # each statement leaves ~15 rows per partition's buffer
        con.execute("INSERT INTO bg VALUES " + ", ".join(f"({i}, {i % 10})" for i in range(start, start + 120)))
    con.execute("DELETE FROM bg WHERE v >= 5")  # a quarter or more of most segments: due for a merge
    states = runner._get([leaf.maintenance_idle.remote(60) for leaf in runner.leaves])
    assert all(s["idle"] and not s["errors"] for s in states), states
    assert sum(s["merged"] for s in states) > 0
    assert con.execute("SELECT COUNT(*), SUM(k) FROM bg").fetchall() == \
        [(1200, sum(i for i in range(2400) if i % 10 < 5))]
    con.execute("OPTIMIZE TABLE bg")
    assert con.execute("SELECT COUNT(*) FROM bg WHERE v < 5").fetchall() == [(1200,)]
