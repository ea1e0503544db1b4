"""PEP 249 compliance: the cases of Stuart Bishop's classic ``dbapi20.py`` suite, against the real engine.

Each test opens its own connection (a fresh local runner with an empty catalog) and creates the tables it
needs.
Optional PEP 249 parts Canopy does not offer (``callproc``, ``nextset``) are left out.
"""
from __future__ import annotations

import datetime
import time

import pytest

import engine

TABLE_PREFIX = "dbapi20test_"
BOOZE = TABLE_PREFIX + "booze"
BARFLY = TABLE_PREFIX + "barflys"
DDL_BOOZE = f"CREATE TABLE {BOOZE} (name VARCHAR(20))"
DDL_BARFLY = f"CREATE TABLE {BARFLY} (name VARCHAR(20), drink VARCHAR(30))"
SAMPLES = ["Carlton Cold", "Carlton Draft", "Mountain Goat", "Redback", "Victoria Bitter", "XXXX"]


@pytest.fixture
def con():
    # Each connection starts its own runner with its own catalog, so tests cannot see each other's tables.
    connection = engine.connect()
    yield connection
    connection.close()


@pytest.fixture
def cur(con):
    return con.cursor()


def populate(cur) -> None:
    cur.execute(DDL_BOOZE)
    cur.executemany(f"INSERT INTO {BOOZE} VALUES (%s)", [(s,) for s in SAMPLES])


# --- module interface -----------------------------------------------------------------------------
def test_connect():
    con = engine.connect()
    con.close()


def test_apilevel():
    assert engine.apilevel == "2.0"


def test_threadsafety():
    assert engine.threadsafety in (0, 1, 2, 3)


def test_paramstyle():
    assert engine.paramstyle in ("qmark", "numeric", "named", "format", "pyformat")
    assert engine.paramstyle == "pyformat"


def test_exceptions():
    assert issubclass(engine.Warning, Exception)
    assert issubclass(engine.Error, Exception)
    assert not issubclass(engine.Warning, engine.Error)
    for name in ("InterfaceError", "DatabaseError"):
        assert issubclass(getattr(engine, name), engine.Error)
    for name in ("DataError", "OperationalError", "IntegrityError", "InternalError",
                 "ProgrammingError", "NotSupportedError"):
        assert issubclass(getattr(engine, name), engine.DatabaseError)


def test_exceptions_as_connection_attributes(con):
    for name in ("Warning", "Error", "InterfaceError", "DatabaseError", "DataError", "OperationalError",
                 "IntegrityError", "InternalError", "ProgrammingError", "NotSupportedError"):
        assert getattr(con, name) is getattr(engine, name)


# --- connection ---------------------------------------------------------------------------------------
def test_commit(con):
    con.commit()  # must exist and work with no transaction open


def test_rollback(con):
    con.rollback()  # nothing open: nothing to undo


def test_cursor(con):
    con.cursor()


def test_cursor_isolation(con):
    # Two cursors on one connection do not share result sets.
    cur1, cur2 = con.cursor(), con.cursor()
    cur1.execute(DDL_BOOZE)
    cur1.execute(f"INSERT INTO {BOOZE} VALUES ('Victoria Bitter')")
    cur2.execute(f"SELECT name FROM {BOOZE}")
    cur1.execute("SELECT 1")
    assert cur2.fetchall() == [("Victoria Bitter",)]
    assert cur1.fetchall() == [(1,)]


# --- cursor attributes ------------------------------------------------------------------------------
def test_description(cur):
    cur.execute(DDL_BOOZE)
    assert cur.description is None, "description must be None after a statement without rows"
    cur.execute(f"SELECT name FROM {BOOZE}")
    assert len(cur.description) == 1
    assert len(cur.description[0]) == 7
    assert cur.description[0][0].lower() == "name"
    assert cur.description[0][1] == engine.STRING
    cur.execute(f"CREATE TABLE {BARFLY} (name VARCHAR(20))")
    assert cur.description is None, "description must be reset by a statement without rows"


def test_rowcount(cur):
    cur.execute(DDL_BOOZE)
    assert cur.rowcount in (-1, 0)  # PEP 249 leaves DDL's rowcount open
    cur.execute(f"INSERT INTO {BOOZE} VALUES ('Victoria Bitter')")
    assert cur.rowcount == 1
    cur.execute(f"SELECT name FROM {BOOZE}")
    assert cur.rowcount == 1
    cur.execute(DDL_BARFLY)
    assert cur.rowcount in (-1, 0)


def test_rowcount_before_execute(cur):
    assert cur.rowcount == -1


def test_arraysize(cur):
    assert cur.arraysize == 1


def test_setinputsizes(cur):
    cur.setinputsizes((25,))
    populate(cur)  # must not break anything


def test_setoutputsize_basic(cur):
    cur.setoutputsize(1000)
    cur.setoutputsize(2000, 0)
    populate(cur)


def test_lastrowid(cur):
    assert cur.lastrowid is None


# --- close ----------------------------------------------------------------------------------------------
def test_close():
    con = engine.connect()
    cur = con.cursor()
    con.close()
    with pytest.raises(engine.Error):
        cur.execute(DDL_BOOZE)
    with pytest.raises(engine.Error):
        con.commit()
    with pytest.raises(engine.Error):
        con.cursor()
    con.close()  # closing twice is allowed


def test_cursor_close(con):
    cur = con.cursor()
    cur.execute("SELECT 1")
    cur.close()
    with pytest.raises(engine.Error):
        cur.fetchone()
    with pytest.raises(engine.Error):
        cur.execute("SELECT 1")
    cur.close()


def test_connection_context_manager_closes():
    with engine.connect() as con:
        assert con.execute("SELECT 1").fetchone() == (1,)
    assert con.closed
    with pytest.raises(engine.InterfaceError, match="connection is closed"):
        con.cursor()


def test_cursor_context_manager(con):
    with con.cursor() as cur:
        cur.execute("SELECT 1")
    with pytest.raises(engine.InterfaceError, match="cursor is closed"):
        cur.fetchall()


# --- execute ---------------------------------------------------------------------------------------
def test_execute(cur):
    cur.execute(DDL_BOOZE)
    _paraminsert(cur, ("Cooper's",), f"INSERT INTO {BOOZE} VALUES (%s)")


def test_execute_pyformat_named(cur):
    cur.execute(DDL_BOOZE)
    _paraminsert(cur, {"beer": "Cooper's"}, f"INSERT INTO {BOOZE} VALUES (%(beer)s)")


def _paraminsert(cur, params, insert):
    cur.execute(f"INSERT INTO {BOOZE} VALUES ('Victoria Bitter')")
    assert cur.rowcount in (-1, 1)
    cur.execute(insert, params)
    assert cur.rowcount in (-1, 1)
    cur.execute(f"SELECT name FROM {BOOZE}")
    names = sorted(row[0] for row in cur.fetchall())
    assert names == ["Cooper's", "Victoria Bitter"]


def test_executemany(cur):
    cur.execute(DDL_BOOZE)
    cur.executemany(f"INSERT INTO {BOOZE} VALUES (%s)", [("Cooper's",), ("Boag's",)])
    assert cur.rowcount in (-1, 2)
    cur.executemany(f"INSERT INTO {BOOZE} VALUES (%(beer)s)", [{"beer": "Coopers"}, {"beer": "Boags"}])
    assert cur.rowcount in (-1, 2)
    cur.execute(f"SELECT name FROM {BOOZE}")
    assert sorted(r[0] for r in cur.fetchall()) == ["Boag's", "Boags", "Cooper's", "Coopers"]


# --- fetch ------------------------------------------------------------------------------------------
def test_fetchone(cur):
    with pytest.raises(engine.Error):
        cur.fetchone()  # nothing executed yet
    cur.execute(DDL_BOOZE)
    with pytest.raises(engine.Error):
        cur.fetchone()  # the last statement had no result set
    cur.execute(f"SELECT name FROM {BOOZE}")
    assert cur.fetchone() is None
    assert cur.rowcount in (-1, 0)
    cur.execute(f"INSERT INTO {BOOZE} VALUES ('Victoria Bitter')")
    with pytest.raises(engine.Error):
        cur.fetchone()
    cur.execute(f"SELECT name FROM {BOOZE}")
    row = cur.fetchone()
    assert isinstance(row, tuple)
    assert row == ("Victoria Bitter",)
    assert cur.fetchone() is None
    assert cur.rowcount in (-1, 1)


def test_fetchmany(cur):
    with pytest.raises(engine.Error):
        cur.fetchmany(4)
    populate(cur)
    cur.execute(f"SELECT name FROM {BOOZE}")
    assert len(cur.fetchmany()) == 1, "fetchmany defaults to arraysize (1)"
    cur.arraysize = 10
    assert len(cur.fetchmany(3)) == 3, "an explicit size overrides arraysize"
    assert len(cur.fetchmany(4)) == 2, "fetchmany returns what is left"
    assert cur.fetchmany(4) == []
    assert cur.rowcount in (-1, 6)

    cur.arraysize = 4
    cur.execute(f"SELECT name FROM {BOOZE}")
    r = cur.fetchmany()
    assert len(r) == 4
    r = cur.fetchmany()
    assert len(r) == 2
    assert cur.fetchmany() == []
    assert cur.rowcount in (-1, 6)

    cur.arraysize = 6
    cur.execute(f"SELECT name FROM {BOOZE}")
    rows = cur.fetchmany()
    assert sorted(r[0] for r in rows) == SAMPLES
    assert cur.fetchmany() == []

    cur.execute(DDL_BARFLY)
    cur.execute(f"SELECT name FROM {BARFLY}")
    assert cur.fetchmany() == []
    assert cur.rowcount in (-1, 0)


def test_fetchall(cur):
    with pytest.raises(engine.Error):
        cur.fetchall()
    populate(cur)
    with pytest.raises(engine.Error):
        cur.fetchall()  # after an INSERT there is no result set
    cur.execute(f"SELECT name FROM {BOOZE}")
    rows = cur.fetchall()
    assert cur.rowcount in (-1, len(SAMPLES))
    assert sorted(r[0] for r in rows) == SAMPLES
    assert cur.fetchall() == []
    assert cur.rowcount in (-1, len(SAMPLES))

    cur.execute(DDL_BARFLY)
    cur.execute(f"SELECT name FROM {BARFLY}")
    assert cur.fetchall() == []
    assert cur.rowcount in (-1, 0)


def test_mixedfetch(cur):
    populate(cur)
    cur.execute(f"SELECT name FROM {BOOZE} ORDER BY name")
    rows1 = cur.fetchone()
    rows23 = cur.fetchmany(2)
    rows4 = cur.fetchone()
    rows56 = cur.fetchall()
    assert cur.rowcount in (-1, 6)
    assert len(rows23) == 2 and len(rows56) == 2
    got = [rows1[0], rows23[0][0], rows23[1][0], rows4[0], rows56[0][0], rows56[1][0]]
    assert got == SAMPLES


def test_iteration(cur):
    populate(cur)
    cur.execute(f"SELECT name FROM {BOOZE} ORDER BY name")
    assert [row[0] for row in cur] == SAMPLES


def test_none(cur):
    cur.execute(DDL_BOOZE)
    cur.execute(f"INSERT INTO {BOOZE} VALUES (NULL)")
    cur.execute(f"SELECT name FROM {BOOZE}")
    assert cur.fetchall() == [(None,)]


def test_none_as_parameter(cur):
    cur.execute(DDL_BOOZE)
    cur.execute(f"INSERT INTO {BOOZE} VALUES (%s)", (None,))
    cur.execute(f"SELECT name FROM {BOOZE} WHERE name IS NULL")
    assert cur.fetchall() == [(None,)]


# --- type objects and constructors -----------------------------------------------------------------
def test_date():
    d1 = engine.Date(2002, 12, 25)
    d2 = engine.DateFromTicks(time.mktime((2002, 12, 25, 0, 0, 0, 0, 0, 0)))
    assert d1 == d2 == datetime.date(2002, 12, 25)


def test_time():
    t1 = engine.Time(13, 45, 30)
    t2 = engine.TimeFromTicks(time.mktime((2001, 1, 1, 13, 45, 30, 0, 0, 0)))
    assert t1 == t2


def test_timestamp():
    t1 = engine.Timestamp(2002, 12, 25, 13, 45, 30)
    t2 = engine.TimestampFromTicks(time.mktime((2002, 12, 25, 13, 45, 30, 0, 0, 0)))
    assert t1 == t2


def test_binary():
    assert engine.Binary(b"Something") == b"Something"
    assert engine.Binary(b"") == b""


def test_type_objects():
    assert engine.STRING == "VARCHAR" and engine.STRING == "CHAR" and engine.STRING == "TEXT"
    assert engine.BINARY == "BLOB"
    for name in ("BIGINT", "INT", "SMALLINT", "TINYINT", "DECIMAL", "DECIMAL(15,2)", "DOUBLE", "FLOAT",
                 "BOOLEAN"):
        assert engine.NUMBER == name and name == engine.NUMBER
    for name in ("DATE", "DATETIME", "TIMESTAMP", "TIME"):
        assert engine.DATETIME == name
    assert engine.NUMBER != "VARCHAR" and engine.STRING != "INT" and engine.DATETIME != "BIGINT"
    assert engine.ROWID != "BIGINT"


def test_description_type_codes(cur):
    cur.execute("CREATE TABLE dbapi20test_types (i BIGINT, d DECIMAL(15,2), f DOUBLE, s VARCHAR(10), "
                "dt DATE, ts DATETIME)")
    cur.execute("SELECT i, d, f, s, dt, ts FROM dbapi20test_types")
    codes = [column[1] for column in cur.description]
    assert codes[0] == engine.NUMBER and codes[1] == engine.NUMBER and codes[2] == engine.NUMBER
    assert codes[3] == engine.STRING
    assert codes[4] == engine.DATETIME and codes[5] == engine.DATETIME
    assert cur.description[1][4:6] == (15, 2)  # precision, scale


def test_drop_table(cur):
    # The classic suite drops its tables in tearDown; here every connection has its own catalog, so this
    # one test covers DROP on its own.
    cur.execute(DDL_BOOZE)
    cur.execute(f"DROP TABLE {BOOZE}")
    with pytest.raises(engine.ProgrammingError):
        cur.execute(f"SELECT name FROM {BOOZE}")
    cur.execute(f"DROP TABLE IF EXISTS {BOOZE}")
