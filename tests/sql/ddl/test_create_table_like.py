"""CREATE TABLE t2 LIKE t: the definition (columns, keys, indexes, shard and sort key,
AUTO_INCREMENT) without the rows, its counter starting afresh, as in MySQL."""
from __future__ import annotations

import pytest

import engine


@pytest.fixture()
def cur():
    connection = engine.connect()
    cursor = connection.cursor()
    cursor.execute("CREATE TABLE src (id INT PRIMARY KEY AUTO_INCREMENT, s VARCHAR(5) NOT NULL, "
                   "KEY (s), SHARD KEY (id), SORT KEY (s))")
    cursor.execute("INSERT INTO src (s) VALUES ('a'), ('b')")
    yield cursor
    connection.close()


def test_copies_the_definition_not_the_rows(cur):
    cur.execute("CREATE TABLE copy LIKE src")
    cur.execute("SHOW CREATE TABLE src")
    original = cur.fetchall()[0][1]
    cur.execute("SHOW CREATE TABLE copy")
    assert cur.fetchall()[0][1] == original.replace("`src`", "`copy`")
    cur.execute("SELECT COUNT(*) FROM copy")
    assert cur.fetchall() == [(0,)]
    cur.execute("INSERT INTO copy (s) VALUES ('x')")
    cur.execute("SELECT id, s FROM copy")
    assert cur.fetchall() == [(1, "x")]
    with pytest.raises(engine.IntegrityError, match="Duplicate entry '1'"):
        cur.execute("INSERT INTO copy VALUES (1, 'y')")


def test_errors_name_the_table(cur):
    with pytest.raises(engine.ProgrammingError, match="unknown table 'nope'"):
        cur.execute("CREATE TABLE other LIKE nope")
    with pytest.raises(engine.ProgrammingError, match="already exists"):
        cur.execute("CREATE TABLE src LIKE src")
    cur.execute("CREATE TABLE IF NOT EXISTS src LIKE src")
    cur.execute("SELECT COUNT(*) FROM src")
    assert cur.fetchall() == [(2,)]
