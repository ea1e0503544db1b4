"""Unique keys on string columns obey the column's collation, and their check looks the new keys up
in the key column's hash index instead of reading the table (engine.load.keys.index_bound): INSERT,
INSERT IGNORE, REPLACE and ON DUPLICATE KEY UPDATE under utf8mb4_general_ci, utf8mb4_bin,
utf8mb4_0900_ai_ci and utf8mb4_0900_as_cs, on a table of several segments, in memory and in a
data_dir; with MariaDB (``-m mariadb``) the same INSERT IGNOREs keep the same rows. Runs on either
runner (``CANOPY_RUNNER=ray``)."""
from __future__ import annotations

import random

import pyarrow as pa
import pytest

import engine
from engine.errors import IntegrityError
from tests.sql.test_mariadb_oracle import mariadb  # noqa: F401 - the server fixture

# (collation, a stored key, a new key that is its duplicate under the collation?)
CASES = {
    "utf8mb4_general_ci": [("a", "A", True), ("x", "x  ", True), ("é", "E", True), ("ß", "s", True), ("b", "c", False)],
    "utf8mb4_bin": [("a", "A", False), ("x", "x  ", True), ("é", "e", False), ("b", "b", True)],
    "utf8mb4_0900_ai_ci": [("a", "Á", True), ("é", "e\u0301", True), ("ß", "ss", True), ("x", "x ", False),
                           ("\U0001F600", "\U0001F642", False), ("\U0001D401", "b", True), ("\U00020000", "\U00020001", False)],
    "utf8mb4_0900_as_cs": [("a", "A", False), ("é", "e\u0301", True), ("a", "á", False),
                           ("\U0001F600", "\U0001F642", False), ("\U00010400", "\U00010428", False), ("b", "b", True)],
}
FILLER = 5000           # rows beside the probes: several segments of 1024 in a data_dir


def _connect(tmp_path, durable: bool):
    if not durable:
        return engine.connect(leaves=1, partitions_per_leaf=1)
    # no background merges: a merge reads whole segments, which the rows-read count would take for the check's
    return engine.connect(data_dir=str(tmp_path), leaves=1, partitions_per_leaf=1, segment_rows=1024, flush_rows=1024,
                          merge_segments=10_000)


def _table(con, collation, stored):
    con.execute(f"CREATE TABLE t (k VARCHAR(20) COLLATE {collation} PRIMARY KEY, v INT)")
    keys = [f"filler-{i}" for i in range(FILLER)] + list(stored)
    con.load_table("t", pa.table({"k": keys, "v": pa.array([0] * len(keys), pa.int32())}))


def _rows_read(con):
    table = con.session.catalog.table("canopy", "t")
    leaves = [leaf for leaf in getattr(con.session.runner, "leaves", []) if hasattr(leaf, "storage")]  # not Ray's
    stores = [s for leaf in leaves for _, s in leaf.storage.stores_of(table.table_id)]
    return sum(s.scan_stats["rows_read"] for s in stores), bool(stores)


@pytest.mark.parametrize("durable", [False, True], ids=["memory", "data_dir"])
@pytest.mark.parametrize("collation", list(CASES))
def test_duplicates_follow_the_collation(tmp_path, collation, durable):
    cases = CASES[collation]
    stored = list(dict.fromkeys(s for s, _, _ in cases))
    con = _connect(tmp_path, durable)
    try:
        _table(con, collation, stored)
        for old, new, duplicate in cases:
            before, local = _rows_read(con)
            if duplicate:
                with pytest.raises(IntegrityError, match="Duplicate entry"):
                    con.execute("INSERT INTO t VALUES (%s, 1)", (new,))
                assert con.execute("INSERT IGNORE INTO t VALUES (%s, 1)", (new,)).rowcount == 0
            else:
                assert con.execute("INSERT INTO t VALUES (%s, 1)", (new,)).rowcount == 1
                con.execute("DELETE FROM t WHERE v = 1")
                before, local = _rows_read(con)
                assert con.execute("INSERT IGNORE INTO t VALUES (%s, 1)", (new,)).rowcount == 1
            if local and durable:   # the checks read the segments the index points at, not the table
                assert _rows_read(con)[0] - before < FILLER // 2, (old, new)
            con.execute("DELETE FROM t WHERE v = 1")
            # REPLACE: the stored row goes (2 rows affected) or the new one is added (1)
            assert con.execute("REPLACE INTO t VALUES (%s, 2)", (new,)).rowcount == (2 if duplicate else 1)
            # ON DUPLICATE KEY UPDATE: updates the row REPLACE left (2 affected)
            assert con.execute("INSERT INTO t VALUES (%s, 9) ON DUPLICATE KEY UPDATE v = 3", (new,)).rowcount == 2
            got = con.execute("SELECT k, v FROM t WHERE v > 0 ORDER BY k").fetchall()
            assert got == [(new, 3)], (old, new)
            con.execute("DELETE FROM t WHERE v > 0")
            if duplicate:       # REPLACE deleted the stored row: put it back
                con.execute("INSERT INTO t VALUES (%s, 0)", (old,))
        assert con.execute("SELECT COUNT(*) FROM t").fetchall() == [(FILLER + len(stored),)]
    finally:
        con.close()


ALPHABET = ["a", "A", "á", "Á", "b", "ß", "s", "ss", "e\u0301", "é", "\U0001F600", "\U0001F642", "\U0001D400", " "]
MARIADB = {"utf8mb4_general_ci": "utf8mb4_general_ci", "utf8mb4_bin": "utf8mb4_bin",
           "utf8mb4_0900_ai_ci": "utf8mb4_uca1400_nopad_ai_ci", "utf8mb4_0900_as_cs": "utf8mb4_uca1400_nopad_as_cs"}


@pytest.mark.mariadb
@pytest.mark.parametrize("collation", list(MARIADB))
def test_insert_ignore_keeps_what_mariadb_keeps(mariadb, tmp_path, collation):  # noqa: F811
    rng = random.Random(3)
    batches = [sorted({"".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 2))) for _ in range(6)})
               for _ in range(40)]
    maria = mariadb("mysql")
    try:
        with maria.cursor() as cursor:
            cursor.execute("SET NAMES utf8mb4")
            cursor.execute(f"CREATE TEMPORARY TABLE t (k VARCHAR(20) CHARACTER SET utf8mb4 COLLATE {MARIADB[collation]} "
                           "PRIMARY KEY, v INT)")
            for n, batch in enumerate(batches):
                for key in batch:       # one at a time: which spelling stays does not hang on the order
                    cursor.execute("INSERT IGNORE INTO t VALUES (%s, %s)", (key, n))
            cursor.execute("SELECT k, v FROM t")
            want = sorted(cursor.fetchall())
    finally:
        maria.close()
    con = _connect(tmp_path, False)
    try:
        _table(con, collation, [])
        for n, batch in enumerate(batches):
            for key in batch:
                con.execute("INSERT IGNORE INTO t VALUES (%s, %s)", (key, n))
        got = sorted(tuple(r) for r in con.execute("SELECT k, v FROM t WHERE k NOT LIKE 'filler-%'").fetchall())
    finally:
        con.close()
    assert got == want

