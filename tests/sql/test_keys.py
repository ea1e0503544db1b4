"""PRIMARY KEY / UNIQUE KEY enforcement, INSERT IGNORE, REPLACE, ON DUPLICATE KEY UPDATE and
AUTO_INCREMENT (engine.load.keys, engine.sql.auto_increment). Each statement's effect is checked; a
random sequence of upserts is compared with a Python model of MySQL's semantics. Runs on either runner
(``CANOPY_RUNNER=ray``)."""
from __future__ import annotations

import itertools
import os
import random

import pyarrow as pa
import pytest

import engine
from engine.errors import IntegrityError, NotSupportedError

_names = itertools.count()


@pytest.fixture(scope="module")
def con():
    connection = engine.connect()
    yield connection
    connection.close()


@pytest.fixture
def name(con):
    table = f"k{next(_names)}"
    yield table
    con.session.rollback()
    con.execute(f"DROP TABLE IF EXISTS {table}")


def rows(con, table: str) -> list:
    return con.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall()


def test_primary_key_rejects_duplicates(con, name):
    con.execute(f"CREATE TABLE {name} (id INT PRIMARY KEY, v TEXT)")
    con.execute(f"INSERT INTO {name} VALUES (1, 'a'), (2, 'b')")
    with pytest.raises(IntegrityError, match=r"Duplicate entry '1' for key 'PRIMARY'"):
        con.execute(f"INSERT INTO {name} VALUES (3, 'c'), (1, 'again')")
    with pytest.raises(IntegrityError, match=r"Duplicate entry '4' for key 'PRIMARY'"):
        con.execute(f"INSERT INTO {name} VALUES (4, 'c'), (4, 'd')")            # within the statement
    with pytest.raises(IntegrityError, match=r"Duplicate entry '2' for key 'PRIMARY'"):
        con.execute(f"INSERT INTO {name} SELECT id + 1, v FROM {name}")         # INSERT ... SELECT
    with pytest.raises(IntegrityError, match=r"Duplicate entry '2' for key 'PRIMARY'"):
        con.execute(f"UPDATE {name} SET id = 2 WHERE id = 1")
    assert rows(con, name) == [(1, "a"), (2, "b")]                              # nothing written
    con.execute(f"UPDATE {name} SET id = id + 1")                               # no repeat afterwards
    assert rows(con, name) == [(2, "a"), (3, "b")]


def test_unique_key_with_shard_key(con, name):
    con.execute(f"CREATE TABLE {name} (a INT, b TEXT, c INT, UNIQUE KEY ab (a, b), SHARD KEY (a))")
    con.execute(f"INSERT INTO {name} VALUES (1, 'x', 1), (1, 'y', 2), (1, NULL, 3), (1, NULL, 4)")  # NULLs differ
    with pytest.raises(IntegrityError, match=r"Duplicate entry '1-y' for key 'ab'"):
        con.execute(f"INSERT INTO {name} VALUES (1, 'y', 5)")
    assert len(rows(con, name)) == 4


@pytest.mark.parametrize("ddl, words", [
    ("(a INT, b INT, UNIQUE KEY u (b), SHARD KEY (a))", "must contain all columns of the shard key"),
    ("(a INT, b INT, PRIMARY KEY (b), SHARD KEY (a))", "must contain all columns of the shard key"),
    ("(a INT UNIQUE, b INT)", "keyless table"),
    ("(a INT AUTO_INCREMENT, b INT AUTO_INCREMENT)", "only one AUTO_INCREMENT"),
])
def test_keys_the_partitions_cannot_check_are_refused(con, name, ddl, words):
    with pytest.raises(engine.Error, match=words):
        con.execute(f"CREATE TABLE {name} {ddl}")


def test_insert_ignore_skips_with_warnings(con, name):
    con.execute(f"CREATE TABLE {name} (id INT PRIMARY KEY, v TEXT)")
    con.execute(f"INSERT INTO {name} VALUES (1, 'a')")
    cursor = con.execute(f"INSERT IGNORE INTO {name} VALUES (1, 'x'), (2, 'b'), (2, 'c')")
    assert cursor.rowcount == 1
    assert con.execute("SHOW WARNINGS").fetchall() == [
        ("Warning", "1062", "Duplicate entry '1' for key 'PRIMARY'"),
        ("Warning", "1062", "Duplicate entry '2' for key 'PRIMARY'")]
    assert rows(con, name) == [(1, "a"), (2, "b")]


def test_replace(con, name):
    con.execute(f"CREATE TABLE {name} (id INT PRIMARY KEY, v TEXT)")
    con.execute(f"INSERT INTO {name} VALUES (1, 'a'), (2, 'b')")
    assert con.execute(f"REPLACE INTO {name} VALUES (2, 'B'), (3, 'c')").rowcount == 3   # 1 deleted + 2
    assert con.execute(f"REPLACE {name} (id, v) SELECT id, 'again' FROM {name} WHERE id = 1").rowcount == 2
    assert rows(con, name) == [(1, "again"), (2, "B"), (3, "c")]


def test_on_duplicate_key_update(con, name):
    con.execute(f"CREATE TABLE {name} (id INT PRIMARY KEY, hits INT, v TEXT)")
    con.execute(f"INSERT INTO {name} VALUES (1, 1, 'a')")
    count = con.execute(f"INSERT INTO {name} VALUES (1, 1, 'b'), (2, 1, 'c') "
                        f"ON DUPLICATE KEY UPDATE hits = hits + VALUES(hits), v = CONCAT(v, VALUES(v))").rowcount
    assert count == 3                                            # 2 for the changed row, 1 for the new
    count = con.execute(f"INSERT INTO {name} VALUES (2, 5, 'z') AS new "
                        f"ON DUPLICATE KEY UPDATE hits = new.hits + {name}.hits").rowcount
    assert count == 2
    assert con.execute(f"INSERT INTO {name} VALUES (2, 0, '') ON DUPLICATE KEY UPDATE v = v").rowcount == 0
    assert rows(con, name) == [(1, 2, "ab"), (2, 6, "c")]
    with pytest.raises(NotSupportedError, match="key column"):
        con.execute(f"INSERT INTO {name} VALUES (1, 0, '') ON DUPLICATE KEY UPDATE id = 9")


def test_auto_increment_and_last_insert_id(con, name):
    con.execute(f"CREATE TABLE {name} (id BIGINT AUTO_INCREMENT PRIMARY KEY, v TEXT)")
    cursor = con.cursor()
    cursor.execute(f"INSERT INTO {name} (v) VALUES ('a'), ('b'), ('c')")
    assert cursor.lastrowid == 1
    cursor.execute(f"INSERT INTO {name} VALUES (NULL, 'd'), (0, 'e')")
    assert cursor.lastrowid == 4
    cursor.execute(f"INSERT INTO {name} VALUES (50, 'explicit')")
    assert cursor.lastrowid is None
    cursor.execute(f"INSERT INTO {name} (v) VALUES ('after')")
    assert cursor.lastrowid == 51
    assert con.execute("SELECT LAST_INSERT_ID()").fetchone() == (51,)
    ids = [r[0] for r in rows(con, name)]
    assert ids == [1, 2, 3, 4, 5, 50, 51]                       # unique across the partitions


def test_loads_are_checked(con, name):
    con.execute(f"CREATE TABLE {name} (id INT PRIMARY KEY, v TEXT)")
    con.load_table(name, pa.table({"id": [1, 2], "v": ["a", "b"]}))
    with pytest.raises(IntegrityError, match="Duplicate entry '2'"):
        con.load_table(name, pa.table({"id": [3, 2], "v": ["c", "d"]}))
    with pytest.raises(IntegrityError, match="Duplicate entry '5'"):
        con.load_table(name, pa.table({"id": [5, 5], "v": ["c", "d"]}))
    assert rows(con, name) == [(1, "a"), (2, "b")]


def test_keys_inside_a_transaction(con, name):
    con.execute(f"CREATE TABLE {name} (id INT PRIMARY KEY, v TEXT)")
    con.execute(f"INSERT INTO {name} VALUES (1, 'a')")
    con.execute("BEGIN")
    con.execute(f"INSERT INTO {name} VALUES (2, 'b')")
    with pytest.raises(IntegrityError, match="Duplicate entry '2'"):
        con.execute(f"INSERT INTO {name} VALUES (2, 'again')")      # against the transaction's own row
    con.execute(f"REPLACE INTO {name} VALUES (1, 'A')")
    con.execute("COMMIT")
    assert rows(con, name) == [(1, "A"), (2, "b")]


def test_keys_survive_a_restart(tmp_path):
    if os.environ.get("CANOPY_RUNNER", "local") != "local":
        pytest.skip("data_dir reopening runs on the embedded runner here")
    data_dir = str(tmp_path / "data")
    with engine.connect(data_dir=data_dir) as first:
        first.execute("CREATE TABLE t (id BIGINT AUTO_INCREMENT, v TEXT, PRIMARY KEY (id))")
        first.execute("INSERT INTO t (v) VALUES ('a'), ('b')")
    with engine.connect(data_dir=data_dir) as again:
        with pytest.raises(IntegrityError, match="Duplicate entry '1' for key 'PRIMARY'"):
            again.execute("INSERT INTO t VALUES (1, 'dup')")
        cursor = again.cursor()
        cursor.execute("INSERT INTO t (v) VALUES ('c')")
        assert cursor.lastrowid == 3                   # the counter continues above the stored values


def test_random_upserts_match_a_model(con, name):
    """IGNORE / REPLACE / ON DUPLICATE KEY UPDATE over a small key space against a dict."""
    con.execute(f"CREATE TABLE {name} (k INT PRIMARY KEY, n INT)")
    rng = random.Random(7)
    model: dict[int, int] = {}
    for step in range(30):
        keys = rng.sample(range(12), rng.randint(1, 5))             # distinct keys per statement
        batch = [(k, rng.randint(0, 9)) for k in keys]
        values = ", ".join(f"({k}, {n})" for k, n in batch)
        kind = rng.choice(["ignore", "replace", "update"])
        if kind == "ignore":
            con.execute(f"INSERT IGNORE INTO {name} VALUES {values}")
            for k, n in batch:
                model.setdefault(k, n)
        elif kind == "replace":
            con.execute(f"REPLACE INTO {name} VALUES {values}")
            model.update(batch)
        else:
            con.execute(f"INSERT INTO {name} VALUES {values} ON DUPLICATE KEY UPDATE n = n * 10 + VALUES(n)")
            for k, n in batch:
                model[k] = model[k] * 10 + n if k in model else n
        assert rows(con, name) == sorted(model.items()), f"step {step}: {kind} {values}"


def test_auto_increment_assignment_matches_mysqls_row_by_row_rule():
    """The vectorised assignment against MySQL's rule applied one row after the other."""
    import numpy as np

    from engine import types as T
    from engine.catalog import ColumnDef, TableDef
    from engine.sql.auto_increment import Counters

    class NoRows:
        def map_column_partitions(self, table, column, fn):
            return [None]

    table = TableDef("db", "a", (ColumnDef("id", T.BIGINT),), auto_increment="id")
    rng = random.Random(3)
    for _ in range(200):
        n = rng.randint(1, 12)
        missing = np.array([rng.random() < 0.6 for _ in range(n)])
        given = np.array([rng.randint(1, 30) for _ in range(n)], dtype=np.int64)
        counters = Counters()
        got = counters.assign(NoRows(), table, given, missing)
        counter, want = 1, []
        for m, g in zip(missing, given):
            if m:
                want.append(counter)
                counter += 1
            else:
                want.append(int(g))
                counter = max(counter, int(g) + 1)
        assert got.tolist() == want and counters._next["db.a"] == counter
