"""Streaming loads on the Ray runner: LOAD DATA and ``load_table`` send each leaf its rows as the file is
read (chunks of LOAD_CHUNK_ROWS, made small here so a load sends many), the leaves keep them staged
until the load's one transaction prepares them. Checked against DuckDB's read of the same CSV, in memory
and with a data_dir: sharded, keyless and reference tables, a bad row mid-file (nothing visible, nothing
left staged), a streamed file rolled back and read whole, savepoints around chunks already sent,
compression forced on and off and adaptive on a throttled link, an abort releasing the leaves' memory,
and a leaf killed mid-load."""
from __future__ import annotations

import os
import signal

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import cluster.load as load
import cluster.ray_runner as ray_runner
import cluster.ray_writes as ray_writes
import engine
from engine.load import delimited
from ray_helpers import wait_restarted

SMALL = {"flush_rows": 64, "segment_rows": 256, "chunk_rows": 32}
CSV = "FIELDS TERMINATED BY ','"
ROWS = 3000
KINDS = ("sharded", "keyless", "reference")


@pytest.fixture(scope="module", params=["memory", "durable"])
def con(request, ray_session, tmp_path_factory):
    options = {"data_dir": str(tmp_path_factory.mktemp("ray-load")), **SMALL} if request.param == "durable" else {}
    # the tests' CSV files lie in their own tmp_path directories, all under the session's base
    con = engine.connect(cluster="ray", progress=False, load_dir=str(tmp_path_factory.getbasetemp()), **options)
    yield con
    con.close()


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch):
    """Chunks of 100 rows per leaf and parsed blocks of 4 KiB: a 3000-row file sends dozens of chunks."""
    monkeypatch.setattr(load, "LOAD_CHUNK_ROWS", 100)
    monkeypatch.setattr(delimited, "STREAM_CHUNK_BYTES", 4096)


def _csv(path, rows: int = ROWS, first: int = 0, tail: str = "") -> str:
    k = np.arange(first, first + rows)
    lines = [f"{i},{i * 7919 % 1000},s{i % 13}" for i in k]
    path.write_text("\n".join(lines) + "\n" + tail)
    return str(path)


def _create(con, name: str, kind: str) -> None:
    con.execute(f"CREATE {'REFERENCE ' if kind == 'reference' else ''}TABLE {name} "
                f"(k BIGINT NOT NULL, v INT NOT NULL, s VARCHAR(10){', SHARD KEY (k)' if kind == 'sharded' else ''})")


def _rows(con, name: str) -> list[tuple]:
    return sorted(con.execute(f"SELECT k, v, s FROM {name}").fetchall())


def _duck(*paths) -> list[tuple]:
    files = ", ".join(f"'{p}'" for p in paths)
    return sorted(duckdb.sql(f"SELECT * FROM read_csv([{files}], header=false, "
                             f"columns={{'k': 'BIGINT', 'v': 'INT', 's': 'VARCHAR'}})").fetchall())


def _staged(con) -> list[dict]:
    runner = con.session.runner
    return ray_runner.ray.get([leaf.staged_info.remote() for leaf in runner.leaves])


@pytest.mark.parametrize("kind", KINDS)
def test_load_data_streams_chunks_and_matches_duckdb(con, tmp_path, kind):
    name = f"ld_{kind}"
    _create(con, name, kind)
    first, second = _csv(tmp_path / "a.csv"), _csv(tmp_path / "b.csv", 1200, first=ROWS)
    assert con.execute(f"LOAD DATA INFILE '{tmp_path}/*.csv' INTO TABLE {name} {CSV}").rowcount == ROWS + 1200
    assert _rows(con, name) == _duck(first, second)
    stats = con.session.runner.last_load
    assert stats.rows == ROWS + 1200 and stats.chunks >= 20
    assert stats.bytes_raw > 0 and stats.bytes_sent > 0
    assert _staged(con) == [{}, {}]                 # the commit took every staged chunk


def test_load_table_streams_too(con):
    _create(con, "lt", "sharded")
    k = np.arange(5000)
    data = pa.table({"k": k, "v": (k * 3 % 101).astype(np.int32), "s": pa.array([f"x{i % 5}" for i in k])})
    assert con.load_table("lt", data) == 5000
    assert con.session.runner.last_load.chunks >= 40
    duck = duckdb.connect()
    duck.register("data", data)
    assert _rows(con, "lt") == sorted(duck.execute("SELECT * FROM data").fetchall())


def test_a_bad_row_mid_file_leaves_nothing(con, tmp_path):
    _create(con, "bad", "sharded")
    good = _csv(tmp_path / "good.csv", 500)
    con.execute(f"LOAD DATA INFILE '{good}' INTO TABLE bad {CSV}")
    path = tmp_path / "bad.csv"
    _csv(path, 2000, first=500, tail="2500,not-a-number,x\n" + "2501,1,y\n" * 50)
    with pytest.raises(engine.DataError, match="line 2001"):
        con.execute(f"LOAD DATA INFILE '{path}' INTO TABLE bad {CSV}")
    assert _rows(con, "bad") == _duck(good)
    assert _staged(con) == [{}, {}]                 # the abort dropped what the leaves held


def test_a_streamed_file_rolled_back_and_read_whole(con, tmp_path):
    """A quoted line end late in the file: the chunks sent for its first blocks are rolled back on the
    leaves and the file is loaded again whole — every row once."""
    _create(con, "rb", "sharded")
    first = _csv(tmp_path / "a.csv", 800)
    path = tmp_path / "b.csv"
    _csv(path, 2000, first=800, tail='2800,5,"two\nlines"\n' + "2801,6,z\n")
    con.execute(f"LOAD DATA INFILE '{tmp_path}/*.csv' INTO TABLE rb {CSV} OPTIONALLY ENCLOSED BY '\"'")
    got = _rows(con, "rb")
    assert len(got) == 2802 and [r[0] for r in got] == list(range(2802))
    assert got[2800] == (2800, 5, "two\nlines") and got[:800] == _duck(first)


def test_savepoints_around_chunks_already_sent(con):
    """rollback_to a savepoint taken while pieces waited on the driver: those pieces went first in the
    chunks sent since, so the leaves keep exactly them; and a rollback with nothing sent since."""
    _create(con, "sp", "sharded")
    runner, table = con.session.runner, con.session.catalog.table("canopy", "sp")

    def block(first: int, rows: int) -> pa.Table:
        k = np.arange(first, first + rows)
        return pa.table({"k": k, "v": np.full(rows, 1, np.int32), "s": pa.array(["a"] * rows)},
                        schema=table.arrow_schema)

    writer = runner.begin_load(table)
    writer.add(block(0, 150))                   # some chunks sent, some pieces waiting
    mark = writer.savepoint()
    writer.add(block(150, 1000))                # many chunks: the waiting pieces go first
    writer.rollback_to(mark)
    writer.add(block(2000, 30))
    inner = writer.savepoint()
    writer.add(block(3000, 20))                 # nothing sent since the savepoint
    writer.rollback_to(inner)
    writer.add(block(4000, 10))
    assert writer.commit() == 190
    assert [r[0] for r in _rows(con, "sp")] == [*range(150), *range(2000, 2030), *range(4000, 4010)]


@pytest.mark.parametrize("mode", ["always", "never"])
def test_forced_compression_round_trips(con, tmp_path, monkeypatch, mode):
    monkeypatch.setitem(con.session.runner.transport_options, "compression", mode)
    name = f"cz_{mode}"
    _create(con, name, "keyless")
    path = _csv(tmp_path / "a.csv")
    con.execute(f"LOAD DATA INFILE '{path}' INTO TABLE {name} {CSV}")
    assert _rows(con, name) == _duck(path)
    stats = con.session.runner.last_load
    assert stats.compression == mode and stats.chunks_compressed == (stats.chunks if mode == "always" else 0)
    if mode == "always":
        assert stats.bytes_sent < stats.bytes_raw


class _VirtualClock:
    """The modelled link's clock (``cluster.ray_writes``' ``time``), moved only by the load's waits:
    chunks cross the throttled link in virtual time, so whether they back up does not depend on how
    fast a loaded machine parses the file between them."""

    def __init__(self):
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += max(0.0, seconds)


def test_adaptive_compresses_on_a_slow_link(con, tmp_path, monkeypatch):
    """Throttled to 200 KB/s, chunks of ~2 KB back up behind the link: past 4 unacknowledged to a
    leaf, the next go compressed, and at 8 the load waits for the oldest."""
    monkeypatch.setitem(con.session.runner.transport_options, "throttle_bytes_per_s", 200_000)
    monkeypatch.setattr(ray_writes, "time", _VirtualClock())
    _create(con, "slow", "sharded")
    path = _csv(tmp_path / "a.csv")
    con.execute(f"LOAD DATA INFILE '{path}' INTO TABLE slow {CSV}")
    assert _rows(con, "slow") == _duck(path)
    stats = con.session.runner.last_load
    assert 0 < stats.chunks_compressed and stats.bytes_sent < stats.bytes_raw and stats.waits > 0


def test_abort_releases_the_leaves_memory(con):
    _create(con, "ab", "sharded")
    runner, table = con.session.runner, con.session.catalog.table("canopy", "ab")
    k = np.arange(2000)
    writer = runner.begin_load(table)
    writer.add(pa.table({"k": k, "v": np.zeros(2000, np.int32), "s": pa.array(["q"] * 2000)},
                        schema=table.arrow_schema))
    staged = _staged(con)
    assert all(info[writer.load_id]["rows"] > 0 and info[writer.load_id]["bytes"] > 0 for info in staged)
    writer.abort()
    assert _staged(con) == [{}, {}]
    assert _rows(con, "ab") == []


def test_a_leaf_killed_mid_load_fails_the_load(con, tmp_path):
    """Nothing of the load is visible; with a data_dir the restarted leaf has its earlier rows back."""
    runner = con.session.runner
    if runner._data is None:
        pytest.skip("an in-memory leaf loses its partitions when killed (test_ray_failures covers that)")
    _create(con, "kill", "sharded")
    before = _csv(tmp_path / "before.csv", 300)
    con.execute(f"LOAD DATA INFILE '{before}' INTO TABLE kill {CSV}")
    table = con.session.catalog.table("canopy", "kill")
    writer = runner.begin_load(table)
    k = np.arange(1000, 3000)
    data = pa.table({"k": k, "v": np.zeros(2000, np.int32), "s": pa.array(["q"] * 2000)}, schema=table.arrow_schema)
    writer.add(data)
    victim = runner.leaf_info()[1]
    os.kill(victim["pid"], signal.SIGKILL)
    with pytest.raises(engine.OperationalError, match="leaf 1"):
        try:
            writer.add(data)
            writer.commit()
        except BaseException:
            writer.abort()
            raise
    wait_restarted(runner, 1)
    assert _rows(con, "kill") == _duck(before)


def test_a_load_whose_driver_went_away_is_dropped_after_a_while(monkeypatch):
    """The leaf code without Ray: a load whose chunks stopped arriving STAGED_IDLE_S ago is dropped when
    another load stages, and its commit then fails naming what the leaf lost."""
    import time

    from cluster import actors, leaf_writes, transport

    leaf = actors.LeafActor(0, range(2))
    schema = pa.schema([("k", pa.int64())])
    leaf.create_table(7, schema, [0, 1])
    payload = transport.encode_payload([pa.record_batch([pa.array([1, 2])], schema=schema),
                                        pa.record_batch([pa.array([3])], schema=schema)], schema, compress=True)[0]
    leaf.stage_chunk("old", 7, 0, [0, 1], payload)
    assert leaf.staged_info() == {"old": {"rows": 3, "bytes": leaf.staged_info()["old"]["bytes"], "chunks": 1}}
    monkeypatch.setattr(leaf_writes, "STAGED_IDLE_S", 0.05)
    time.sleep(0.1)
    leaf.stage_chunk("new", 7, 0, [1, 0], payload)
    assert list(leaf.staged_info()) == ["new"]
    with pytest.raises(engine.OperationalError, match="holds 0 of the 3 rows"):
        leaf.prepare("old", [], None, staged_rows=3)
    leaf.prepare("new", [], None, staged_rows=3)
    leaf.commit_write("new")
    assert leaf.row_count(7, [0]) == 1 and leaf.row_count(7, [1]) == 2 and leaf.staged_info() == {}
