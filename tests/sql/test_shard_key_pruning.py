"""An equality (or IN) on a table's shard key reads only the partitions its constants hash to
(``ScanExec.key_partitions``: rows are placed by that hash), for integer, decimal and collated string
keys. Answers are checked against the same rows in a keyless table (which no pruning applies to) and
against Python; what was read comes from EXPLAIN ANALYZE, so the module runs on either runner
(``CANOPY_RUNNER=ray``)."""
from __future__ import annotations

import re
from decimal import Decimal

import pytest

import engine

ROWS = 4000
WORDS = ["abc", "ABC", "abc ", "Abc", "xyz", "éte", "ete", "Straße", "strasse", ""]


@pytest.fixture(scope="module")
def con():
    connection = engine.connect(leaves=2, partitions_per_leaf=4)
    for name, key in (("t", "SHARD KEY (k)"), ("u", "")):
        connection.execute(f"CREATE TABLE {name}_int (k BIGINT, v INT{', ' + key if key else ''})")
        connection.execute(f"CREATE TABLE {name}_dec (k DECIMAL(10, 2), v INT{', ' + key if key else ''})")
        connection.execute(f"CREATE TABLE {name}_str (k VARCHAR(10), v INT{', ' + key if key else ''})")
        connection.executemany(f"INSERT INTO {name}_int VALUES (%s, %s)", [(i % 1000, i) for i in range(ROWS)])
        connection.executemany(f"INSERT INTO {name}_dec VALUES (%s, %s)",
                               [(Decimal(i % 500) / 4, i) for i in range(ROWS)])
        connection.executemany(f"INSERT INTO {name}_str VALUES (%s, %s)",
                               [(WORDS[i % len(WORDS)], i) for i in range(ROWS)])
    yield connection
    connection.close()


def rows_read(con, sql) -> int:
    text = "\n".join(r[0] for r in con.execute("EXPLAIN ANALYZE " + sql).fetchall())
    found = re.findall(r"read ([\d,]+) segments, ([\d,]+) rows from storage", text)
    assert len(found) == 1, text
    return int(found[0][1].replace(",", ""))


def same_as_keyless(con, table: str, where: str) -> list:
    got = sorted(con.execute(f"SELECT k, v FROM t_{table} WHERE {where}").fetchall())
    assert got == sorted(con.execute(f"SELECT k, v FROM u_{table} WHERE {where}").fetchall())
    return got


@pytest.mark.parametrize("where, keys", [("k = 7", {7}), ("k = 7.0", {7}), ("k IN (3, 999, 5000)", {3, 999}),
                                         ("k = 5000", set()), ("k = 7.5", set()), ("k = NULL", set())])
def test_int_key(con, where, keys):
    got = same_as_keyless(con, "int", where)
    assert got == sorted((i % 1000, i) for i in range(ROWS) if i % 1000 in keys)


def test_int_key_reads_only_its_partition(con):
    assert rows_read(con, "SELECT v FROM t_int WHERE k = 7") < ROWS // 4
    assert rows_read(con, "SELECT v FROM u_int WHERE k = 7") == ROWS      # keyless: every partition
    assert rows_read(con, "SELECT v FROM t_int WHERE k > 7") == ROWS      # not an equality: every partition


def test_decimal_key(con):
    got = same_as_keyless(con, "dec", "k = 12.25")
    assert got == sorted((Decimal(i % 500) / 4, i) for i in range(ROWS) if Decimal(i % 500) / 4 == Decimal("12.25"))
    assert got and rows_read(con, "SELECT v FROM t_dec WHERE k = 12.25") < ROWS // 4


@pytest.mark.parametrize("where, words", [
    ("k = 'abc'", {"abc", "ABC", "abc ", "Abc"}),                    # utf8mb4_general_ci, PAD SPACE
    ("k = 'ETE'", {"éte", "ete"}),
    ("k IN ('xyz', 'straße')", {"xyz", "Straße"}),
    ("k = 'abc' COLLATE utf8mb4_bin", {"abc", "abc "}),                # exact (PAD SPACE)
    ("k = ''", {""}),
])
def test_collated_string_key(con, where, words):
    got = same_as_keyless(con, "str", where)
    assert got == sorted((WORDS[i % len(WORDS)], i) for i in range(ROWS) if WORDS[i % len(WORDS)] in words)


def test_collated_string_key_reads_one_partition(con):
    # 'abc' and 'ABC' hash alike (placed by their general_ci keys): one partition holds them all
    # (with the other words hashed there: 5 distinct keys over 8 partitions)
    assert rows_read(con, "SELECT v FROM t_str WHERE k = 'aBc'") < ROWS == rows_read(con, "SELECT v FROM u_str WHERE k = 'aBc'")
