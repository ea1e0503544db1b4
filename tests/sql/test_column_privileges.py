"""MySQL's SELECT-on-read-columns rule for writes: a DELETE / UPDATE needs SELECT on the columns of its
table that its WHERE, join conditions and new values read, an INSERT ... ON DUPLICATE KEY UPDATE on its
assignments' columns; else error 1143 naming the first such column. Each expectation below was checked
on MariaDB 10.11 (the MySQL oracle) with the same grants: a user with INSERT, UPDATE, DELETE on ``d``
and SELECT on ``e``."""
from __future__ import annotations

import pytest

import engine
from engine.errors import AccessDeniedError
from engine.server.errors import mysql_error
from engine.session import Session

# (statement, the column MariaDB names in its 1143, or None: allowed)
CASES = [
    ("UPDATE d.t SET a = 5", None),
    ("UPDATE d.t SET a = (SELECT 1)", None),
    ("DELETE FROM d.t WHERE 1 = 1", None),
    ("INSERT INTO d.t VALUES (9, 9, 9)", None),
    ("UPDATE d.t SET a = 5 WHERE k = 1", "k"),
    ("UPDATE d.t SET a = a + 1", "a"),
    ("UPDATE d.t SET a = k", "k"),
    ("UPDATE d.t SET a = b WHERE k = 1", "k"),                  # the WHERE is checked first
    ("UPDATE d.t SET a = 1 WHERE b = 1 AND k = 2", "b"),
    ("DELETE FROM d.t WHERE k = 1", "k"),
    ("DELETE FROM d.t WHERE k IS NULL", "k"),
    ("DELETE FROM d.t WHERE k IN (SELECT k FROM e.x)", "k"),
    ("UPDATE d.t SET a = 1 WHERE EXISTS (SELECT 1 FROM e.x WHERE k = 3)", None),      # x's own k
    ("UPDATE d.t SET a = 1 WHERE EXISTS (SELECT 1 FROM e.x WHERE x.k = t.b)", "b"),   # correlated
    ("UPDATE d.t JOIN e.x ON x.k = 1 SET t.a = 1", None),
    ("UPDATE d.t JOIN e.x ON x.k = t.k SET t.a = 1", "k"),
    ("INSERT INTO d.t VALUES (9, 9, 9) ON DUPLICATE KEY UPDATE a = b", "b"),
    ("INSERT INTO d.t VALUES (9, 9, 9) ON DUPLICATE KEY UPDATE a = VALUES(b)", "b"),
    ("INSERT INTO d.t VALUES (9, 9, 9) ON DUPLICATE KEY UPDATE a = 1", "a"),
]


@pytest.fixture(scope="module")
def writer():
    con = engine.connect()
    for sql in ["CREATE DATABASE d", "CREATE TABLE d.t (k INT PRIMARY KEY, a INT, b INT)",
                "CREATE DATABASE e", "CREATE TABLE e.x (k INT, a INT)", "INSERT INTO e.x VALUES (1, 1)",
                "CREATE USER w IDENTIFIED BY 'pw'", "GRANT INSERT, UPDATE, DELETE ON d.* TO w",
                "GRANT SELECT ON e.* TO w", "CREATE USER r IDENTIFIED BY 'pw'", "GRANT ALL ON d.* TO r",
                "GRANT SELECT ON e.* TO r"]:
        con.execute(sql)
    sessions = {name: Session(con.session.runner, "d", user=name) for name in ("w", "r")}
    yield con, sessions
    for session in sessions.values():
        session.close()
    con.close()


@pytest.mark.parametrize("sql,column", CASES, ids=[c[0] for c in CASES])
def test_a_write_needs_select_on_the_columns_it_reads(writer, sql, column):
    con, sessions = writer
    con.execute("DELETE FROM d.t")
    con.execute("INSERT INTO d.t VALUES (1, 2, 3), (2, 3, 4)")
    before = sorted(con.execute("SELECT * FROM d.t").fetchall())
    if column is None:
        sessions["w"].execute(sql)
        return
    with pytest.raises(AccessDeniedError) as denied:
        sessions["w"].execute(sql)
    assert mysql_error(denied.value) == (1143, "42000", f"SELECT command denied to user 'w'@'%' for column "
                                                        f"'{column}' in table 't'")
    assert sorted(con.execute("SELECT * FROM d.t").fetchall()) == before       # nothing changed
    sessions["r"].execute(sql)          # with SELECT it runs


def test_the_write_itself_still_needs_its_privilege(writer):
    """SELECT alone is no licence to change: 1142, the table-level error, as before."""
    con, sessions = writer
    with pytest.raises(AccessDeniedError) as denied:
        sessions["w"].execute("UPDATE e.x SET a = 2 WHERE k = 1")
    assert mysql_error(denied.value)[0] == 1142
    assert con.execute("SELECT a FROM e.x").fetchall() == [(1,)]
