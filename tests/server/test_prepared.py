"""Server-side prepared statements (COM_STMT_PREPARE / COM_STMT_EXECUTE, MySQL's binary protocol)
through mysql-connector-python's prepared cursor, the one Python driver that prepares on the server:
DATE, DATETIME, TIME, DECIMAL, NULL, integer, float and string parameters give the answers the
in-process DB-API gives with the same values, and executing one statement again with other values
reuses its cached plan (Qcache_hits)."""
from __future__ import annotations

import datetime
import decimal

import pytest

import engine
from tests.server.conftest import ADMIN, PASSWORD, connect

mysql_connector = pytest.importorskip("mysql.connector", reason="mysql-connector-python is not installed")

SCHEMA = ("CREATE TABLE prepared_t (id BIGINT NOT NULL, d DATE, ts DATETIME, amount DECIMAL(12,2), "
          "ratio DOUBLE, name VARCHAR(20))")
ROWS = ("INSERT INTO prepared_t VALUES "
        "(1, '2024-01-05', '2024-01-05 10:11:12', 12.50, 0.5, 'a'), "
        "(2, '2024-03-01', '2024-03-01 00:00:01', 7.25, 1.5, NULL), "
        "(3, NULL, NULL, NULL, NULL, 'c'), "
        "(4, '1999-12-31', '1999-12-31 23:59:59', -0.01, -2.0, 'd''s')")
D, TS, DEC = datetime.date, datetime.datetime, decimal.Decimal
CASES = [
    ("SELECT id FROM prepared_t WHERE d = ? ORDER BY id", (D(2024, 1, 5),)),
    ("SELECT id FROM prepared_t WHERE d > ? ORDER BY id", (D(2024, 1, 5),)),
    ("SELECT id FROM prepared_t WHERE d > ? ORDER BY id", (D(1990, 1, 1),)),
    ("SELECT id FROM prepared_t WHERE d BETWEEN ? AND ? ORDER BY id", (D(1999, 12, 31), D(2024, 2, 1))),
    ("SELECT id FROM prepared_t WHERE ts = ? ORDER BY id", (TS(2024, 1, 5, 10, 11, 12),)),
    ("SELECT id FROM prepared_t WHERE ts < ? ORDER BY id", (TS(2024, 3, 1, 0, 0, 1, 500000),)),
    ("SELECT id FROM prepared_t WHERE amount = ? ORDER BY id", (DEC("12.50"),)),
    ("SELECT id FROM prepared_t WHERE amount > ? ORDER BY id", (DEC("7.3"),)),
    ("SELECT id FROM prepared_t WHERE amount < ? ORDER BY id", (DEC("-0.001"),)),
    ("SELECT id FROM prepared_t WHERE ratio >= ? ORDER BY id", (0.5,)),
    ("SELECT id FROM prepared_t WHERE name = ? ORDER BY id", ("d's",)),
    ("SELECT id FROM prepared_t WHERE name <=> ? ORDER BY id", (None,)),
    ("SELECT id FROM prepared_t WHERE id IN (?, ?) ORDER BY id", (1, 4)),
    ("SELECT ?, ?, ?, ?, ?, ?", (D(2024, 1, 5), DEC("1.50"), None, 3, 2.5, "x")),
    ("SELECT d, ts, amount, ratio, name FROM prepared_t WHERE id = ?", (1,)),
    ("SELECT COUNT(*) FROM prepared_t WHERE name LIKE 'd%' AND id > ?", (0,)),
]


@pytest.fixture(scope="module")
def prepared_server(server):
    con = connect(server)
    with con.cursor() as cur:
        cur.execute("DROP TABLE IF EXISTS prepared_t")
        cur.execute(SCHEMA)
        cur.execute(ROWS)
        # every column's statistics now: a background collection finishing mid-test would invalidate
        # the shared plan cache and turn an expected hit into a miss
        cur.execute("ANALYZE TABLE prepared_t")
        cur.fetchall()
    con.close()
    return server


@pytest.fixture(scope="module")
def dbapi():
    """The same table in an in-process engine: the answers to match."""
    con = engine.connect()
    cur = con.cursor()
    cur.execute(SCHEMA)
    cur.execute(ROWS)
    yield cur
    con.close()


def _connector(server):
    return mysql_connector.connect(host=server.host, port=server.port, user=ADMIN, password=PASSWORD,
                                   database="canopy", autocommit=True, use_pure=True,
                                   # its default, utf8mb4_0900_ai_ci (MySQL 8), is not a collation Canopy has
                                   charset="utf8mb4", collation="utf8mb4_general_ci")


@pytest.mark.parametrize("sql, params", CASES, ids=[f"{i}" for i in range(len(CASES))])
def test_binary_parameters_answer_as_the_dbapi(prepared_server, dbapi, sql, params):
    con = _connector(prepared_server)
    try:
        cur = con.cursor(prepared=True)
        cur.execute(sql, params)
        got = [tuple(row) for row in cur.fetchall()]
    finally:
        con.close()
    expected = dbapi.execute(sql.replace("?", "%s").replace("'d%'", "'d%%'"), params).fetchall()
    assert got == [tuple(row) for row in expected]


def test_a_prepared_statement_reuses_its_plan(prepared_server):
    """One statement executed with other values of the same types: planned once, then bound."""
    con = _connector(prepared_server)
    try:
        cur = con.cursor(prepared=True)
        status = con.cursor()

        def hits():
            status.execute("SHOW STATUS LIKE 'Qcache_hits'")
            return int(status.fetchall()[0][1])

        sql = "SELECT COUNT(*) FROM prepared_t WHERE d <= ? AND amount < ?"
        answers = []
        before = hits()
        for day, amount in ((D(2024, 1, 5), DEC("20.00")), (D(2024, 12, 1), DEC("10.00")),
                            (D(2000, 1, 1), DEC("99.99")), (D(2024, 12, 1), DEC("99.99"))):
            cur.execute(sql, (day, amount))
            answers.append(cur.fetchall()[0][0])
        assert answers == [2, 2, 1, 3]
        assert hits() - before >= 3          # the first execution plans; the others reuse it
    finally:
        con.close()


def test_bad_parameters_are_refused_clearly(prepared_server):
    con = _connector(prepared_server)
    try:
        cur = con.cursor(prepared=True)
        with pytest.raises(mysql_connector.Error):
            cur.execute("SELECT id FROM prepared_t WHERE id = ? AND d = ?", (1,))
        cur = con.cursor(prepared=True)          # the connection is still usable
        cur.execute("SELECT id FROM prepared_t WHERE d = ?", (D(2024, 3, 1),))
        assert [tuple(r) for r in cur.fetchall()] == [(2,)]
    finally:
        con.close()
