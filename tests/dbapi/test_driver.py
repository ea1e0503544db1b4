"""Canopy's driver beyond PEP 249: DuckDB-style shortcuts, Arrow/pandas results, safe parameter binding,
Python value types at the fetch boundary, and errors that leave the connection usable."""
from __future__ import annotations

import datetime
import subprocess
import sys
from decimal import Decimal

import pandas as pd
import pyarrow as pa
import pytest

import engine
from engine.dbapi import Cursor


@pytest.fixture
def con():
    connection = engine.connect()
    connection.execute("CREATE TABLE t (id INT, name VARCHAR(40), price DECIMAL(10,2), "
                       "ratio DOUBLE, day DATE, ts DATETIME)")
    connection.executemany(
        "INSERT INTO t VALUES (%s, %s, %s, %s, %s, %s)",
        [(1, "apple", Decimal("1.50"), 0.25, datetime.date(2024, 1, 31), datetime.datetime(2024, 1, 31, 8, 30)),
         (2, "pear", Decimal("2.05"), 0.5, datetime.date(2024, 2, 29), datetime.datetime(2024, 2, 29, 23, 59, 59)),
         (3, None, None, None, None, None)])
    yield connection
    connection.close()


def test_engine_import_is_light():
    # engine.errors & co import `engine`; pulling the SQL stack or a runner in at that point would be
    # slow and circular. connect() imports them lazily.
    code = "import sys, engine; assert 'engine.session' not in sys.modules and 'engine.runner' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_version():
    assert isinstance(engine.__version__, str) and engine.__version__


# --- DuckDB-style shortcuts ---------------------------------------------------------------------------
def test_connection_execute_returns_cursor_that_chains(con):
    cur = con.execute("SELECT id, name FROM t WHERE id = %s", (2,))
    assert isinstance(cur, Cursor)
    assert cur.fetchall() == [(2, "pear")]
    assert con.execute("SELECT COUNT(*) FROM t").fetchone() == (3,)


def test_cursor_execute_returns_self(con):
    cur = con.cursor()
    assert cur.execute("SELECT 1") is cur


def test_connection_executemany(con):
    cur = con.executemany("INSERT INTO t (id, name) VALUES (%s, %s)", [(10, "a"), (11, "b"), (12, "c")])
    assert cur.rowcount == 3
    assert con.execute("SELECT COUNT(*) FROM t WHERE id >= 10").fetchone() == (3,)


def test_connection_exposes_session(con):
    assert con.session is not None
    assert con.database == "canopy"


def test_autocommit(con):
    """Autocommit by default; off, the first write opens a transaction that rollback() drops."""
    assert con.autocommit is True
    con.execute("CREATE TABLE ac (a INT)")
    try:
        con.autocommit = False
        con.execute("INSERT INTO ac VALUES (1)")
        con.rollback()
        assert con.execute("SELECT COUNT(*) FROM ac").fetchone() == (0,)
        con.execute("INSERT INTO ac VALUES (2)")
        con.autocommit = True                     # commits the open transaction
        assert con.execute("SELECT a FROM ac").fetchall() == [(2,)]
    finally:
        con.autocommit = True
        con.execute("DROP TABLE ac")


# --- Arrow and pandas results ---------------------------------------------------------------------------
def test_fetch_arrow_table_uses_visible_names(con):
    table = con.execute("SELECT id AS ident, name, price * 2 AS double_price FROM t ORDER BY id") \
        .fetch_arrow_table()
    assert isinstance(table, pa.Table)
    assert table.column_names == ["ident", "name", "double_price"]
    assert table.column("ident").to_pylist() == [1, 2, 3]
    assert table.column("double_price").to_pylist() == [Decimal("3.00"), Decimal("4.10"), None]


def test_fetch_arrow_table_allows_duplicate_names(con):
    table = con.execute("SELECT id, id FROM t ORDER BY id").fetch_arrow_table()
    assert table.column_names == ["id", "id"]


def test_fetch_arrow_table_returns_remaining_rows(con):
    cur = con.execute("SELECT id FROM t ORDER BY id")
    assert cur.fetchone() == (1,)
    assert cur.fetch_arrow_table().column(0).to_pylist() == [2, 3]
    assert cur.fetchone() is None
    assert cur.fetch_arrow_table().num_rows == 0


def test_fetch_df(con):
    df = con.execute("SELECT id, name FROM t ORDER BY id").fetch_df()
    assert isinstance(df, pd.DataFrame)
    assert list(df.columns) == ["id", "name"]
    assert df["id"].tolist() == [1, 2, 3]
    assert df["name"].tolist()[:2] == ["apple", "pear"]
    assert con.execute("SELECT name FROM t WHERE id = 1").df()["name"].tolist() == ["apple"]


def test_fetchnumpy(con):
    arrays = con.execute("SELECT id, ratio FROM t WHERE id < 3 ORDER BY id").fetchnumpy()
    assert arrays["id"].tolist() == [1, 2]
    assert arrays["ratio"].tolist() == [0.25, 0.5]


# --- Python values at the fetch boundary ---------------------------------------------------------------
def test_python_value_types(con):
    rows = con.execute("SELECT id, name, price, ratio, day, ts FROM t ORDER BY id").fetchall()
    assert rows[0] == (1, "apple", Decimal("1.50"), 0.25, datetime.date(2024, 1, 31),
                       datetime.datetime(2024, 1, 31, 8, 30))
    assert [type(v) for v in rows[0]] == [int, str, Decimal, float, datetime.date, datetime.datetime]
    assert rows[2] == (3, None, None, None, None, None)


def test_description_describes_columns(con):
    cur = con.execute("SELECT id, name, price, day FROM t")
    names = [d[0] for d in cur.description]
    assert names == ["id", "name", "price", "day"]
    id_, name, price, day = (d[1] for d in cur.description)
    assert id_ == engine.NUMBER and name == engine.STRING and price == engine.NUMBER
    assert day == engine.DATETIME
    assert cur.description[2][4:6] == (10, 2)
    assert all(len(d) == 7 for d in cur.description)


def test_rowcounts(con):
    cur = con.execute("INSERT INTO t (id) VALUES (20), (21)")
    assert cur.rowcount == 2
    cur = con.execute("SELECT id FROM t")
    assert cur.rowcount == 5


def test_iteration_across_conversion_chunks(con):
    # More rows than the cursor converts at once, mixed with fetchmany and fetch_arrow_table.
    n = 2500
    values = ", ".join(f"({i})" for i in range(100, 100 + n))
    con.execute(f"INSERT INTO t (id) VALUES {values}")
    cur = con.execute("SELECT id FROM t WHERE id >= 100 ORDER BY id")
    first = [next(cur)[0] for _ in range(1000)]
    middle = [row[0] for row in cur.fetchmany(100)]
    after = cur.fetchone()[0]
    rest = cur.fetch_arrow_table().column("id").to_pylist()
    assert first + middle + [after] + rest == list(range(100, 100 + n))
    assert cur.rownumber == n


# --- parameter binding -----------------------------------------------------------------------------
def test_sql_text_in_a_parameter_is_data(con):
    evil = "x'); DROP TABLE t; --"
    con.execute("INSERT INTO t (id, name) VALUES (%s, %s)", (99, evil))
    assert con.execute("SELECT name FROM t WHERE id = %s", (99,)).fetchall() == [(evil,)]
    assert con.execute("SELECT COUNT(*) FROM t").fetchone() == (4,)  # the table survived
    assert con.execute("SELECT id FROM t WHERE name = %(n)s", {"n": evil}).fetchall() == [(99,)]


def test_quotes_and_percent_in_parameters(con):
    for id_, value in enumerate(["O'Reilly", 'say "hi"', "100%", "back\\slash", "%s", "%(name)s"], 50):
        con.execute("INSERT INTO t (id, name) VALUES (%s, %s)", (id_, value))
        assert con.execute("SELECT name FROM t WHERE id = %s", (id_,)).fetchall() == [(value,)]


def test_literal_percent_with_parameters(con):
    # pyformat: with parameters, %% is one literal percent, inside string literals too (as in PyMySQL).
    assert con.execute("SELECT '100%%', %s", ("x",)).fetchall() == [("100%", "x")]


def test_like_pattern_with_parameters(con):
    rows = con.execute("SELECT id FROM t WHERE name LIKE 'a%%e' AND id = %s", (1,)).fetchall()
    assert rows == [(1,)]


def test_percent_without_parameters_is_left_alone(con):
    # Without parameters nothing is substituted, so a single % needs no doubling (PyMySQL does the same).
    assert con.execute("SELECT '100%'").fetchall() == [("100%",)]


@pytest.mark.parametrize("bad", ["abc", 5, 1.5, {1, 2}, b"ab"])
def test_parameters_must_be_sequence_or_mapping(con, bad):
    with pytest.raises(engine.ProgrammingError, match="sequence"):
        con.execute("SELECT id FROM t WHERE id = %s", bad)


def test_wrong_parameter_count(con):
    with pytest.raises(engine.ProgrammingError):
        con.execute("SELECT id FROM t WHERE id = %s AND name = %s", (1,))
    with pytest.raises(engine.ProgrammingError):
        con.execute("SELECT id FROM t WHERE id = %(a)s", {"b": 1})


def test_executemany_rejects_a_single_parameter_set(con):
    with pytest.raises(engine.ProgrammingError):
        con.executemany("INSERT INTO t (id) VALUES (%s)", "12")


# --- errors --------------------------------------------------------------------------------------
def test_errors_keep_connection_usable(con):
    cur = con.cursor()
    with pytest.raises(engine.ProgrammingError):
        cur.execute("SELEC id FROM t")
    with pytest.raises(engine.ProgrammingError):
        cur.execute("SELECT id FROM no_such_table")
    with pytest.raises(engine.ProgrammingError):
        cur.execute("SELECT no_such_column FROM t")
    # The failed statements left no stale result behind, and the cursor and connection still work.
    assert cur.description is None and cur.rowcount == -1
    assert cur.execute("SELECT COUNT(*) FROM t").fetchone() == (3,)
    assert con.execute("SELECT COUNT(*) FROM t").fetchone() == (3,)


def test_engine_errors_are_pep249_classes(con):
    with pytest.raises(engine.DatabaseError) as info:
        con.execute("SELECT id FROM no_such_table")
    assert isinstance(info.value, engine.errors.CanopyError)


@pytest.mark.parametrize("shape", [{"leaves": 0}, {"partitions_per_leaf": 0}])
def test_connect_rejects_bad_cluster_shape(shape):
    with pytest.raises(engine.ProgrammingError, match="at least 1"):
        engine.connect(**shape)


def test_connect_rejects_unknown_cluster_kind():
    with pytest.raises(engine.NotSupportedError):
        engine.connect(cluster="no-such-kind")


def test_use_after_connection_close_raises():
    con = engine.connect()
    cur = con.execute("SELECT 1")
    con.close()
    with pytest.raises(engine.InterfaceError, match="connection is closed"):
        cur.fetchall()
    with pytest.raises(engine.InterfaceError, match="connection is closed"):
        con.execute("SELECT 1")
    con.close()
