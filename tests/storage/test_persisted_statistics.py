"""Column statistics survive reopening a data directory: the first query after reopening plans from
them instead of collecting them again; every column type round-trips; a bad file is ignored."""
from __future__ import annotations

import json

import pytest

import engine
from engine.errors import StorageCorruptionError


def _open(path):
    return engine.connect(data_dir=str(path), progress=False)


@pytest.fixture
def data_dir(tmp_path):
    con = _open(tmp_path)
    con.execute("CREATE TABLE t (i INT, d DECIMAL(10,2), day DATE, ts DATETIME, s VARCHAR(20), x DOUBLE,"
                " SORT KEY (i))")
    con.execute("INSERT INTO t VALUES (1, 1.25, '2024-01-02', '2024-01-02 03:04:05', 'red', 0.5),"
                " (2, 2.50, '2024-02-03', '2024-02-03 00:00:00', 'green', 1.5),"
                " (2, NULL, NULL, NULL, NULL, NULL), (3, 9.99, '2025-12-31', '2025-12-31 23:59:59', 'blue', -2.0)")
    con.execute("ANALYZE TABLE t")
    table = con.session.catalog.table("canopy", "t")
    before = {c.name: con.session.statistics.cached(table, c.name) for c in table.columns}
    con.close()
    return tmp_path, before


def test_statistics_are_reloaded_not_collected(data_dir, monkeypatch):
    path, before = data_dir
    con = _open(path)
    table = con.session.catalog.table("canopy", "t")
    for name, stats in before.items():
        loaded = con.session.statistics.cached(table, name)
        assert loaded == stats, name
        assert (loaded.sample is None) == (stats.sample is None)
        if stats.sample is not None:
            assert loaded.sample.to_pylist() == stats.sample.to_pylist()

    def refuse(*args, **kwargs):
        raise AssertionError("statistics collected again after reopening")
    monkeypatch.setattr(con.session.runner, "map_column_partitions", refuse)
    assert con.execute("SELECT COUNT(*) FROM t WHERE i = 2 AND s LIKE '%e%'").fetchall() == [(1,)]
    con.close()


def test_forgotten_and_dropped_statistics_are_not_kept(data_dir):
    path, _ = data_dir
    con = _open(path)
    con.execute("UPDATE t SET x = x + 1 WHERE i = 1")          # UPDATE forgets the table's statistics
    table = con.session.catalog.table("canopy", "t")
    assert con.session.statistics.cached(table, "x") is None
    con.close()
    assert json.loads((path / "statistics.json").read_text())["document"]["columns"] == []
    con = _open(path)
    con.execute("ANALYZE TABLE t")
    con.execute("DROP TABLE t")
    con.execute("CREATE TABLE u (a INT)")
    con.execute("ANALYZE TABLE u")                              # saving skips the dropped table
    con.close()
    tables = {e["table"] for e in json.loads((path / "statistics.json").read_text())["document"]["columns"]}
    assert len(tables) == 1 and table.table_id not in tables


def test_a_damaged_file_refuses_the_open_and_stays(data_dir):
    path, before = data_dir
    data = bytearray((path / "statistics.json").read_bytes())
    data[len(data) // 2] ^= 0x04
    (path / "statistics.json").write_bytes(bytes(data))
    with pytest.raises(StorageCorruptionError, match="statistics file .*statistics.json is corrupt"):
        _open(path)
    assert (path / "statistics.json").read_bytes() == bytes(data)
    (path / "statistics.json").unlink()              # the operator's way out: collected again
    con = _open(path)
    table = con.session.catalog.table("canopy", "t")
    assert con.execute("SELECT COUNT(*) FROM t WHERE i = 2").fetchall() == [(2,)]
    con.session.statistics.wait()
    assert con.session.statistics.cached(table, "i") == before["i"]
    con.close()
