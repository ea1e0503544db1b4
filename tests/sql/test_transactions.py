"""Transactions: BEGIN / COMMIT / ROLLBACK, autocommit, the DB-API's commit() / rollback(), what other
sessions see, and concurrent writers (engine.transactions). Runs on either runner
(``CANOPY_RUNNER=ray``); the crash test uses a data_dir in a subprocess killed with SIGKILL."""
from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

import engine
from engine.errors import LockWaitTimeoutError, NotSupportedError
from engine.session import Session

ROOT = Path(__file__).resolve().parents[2]
_names = itertools.count()


@pytest.fixture(scope="module")
def con():
    connection = engine.connect()
    yield connection
    connection.close()


@pytest.fixture
def table(con):
    """A fresh table t<n> (a INT, b TEXT) holding (1, 'x'), (2, 'y'), (3, 'z'), sharded on a."""
    name = f"t{next(_names)}"
    con.execute(f"CREATE TABLE {name} (a INT, b TEXT, SHARD KEY (a))")
    con.execute(f"INSERT INTO {name} VALUES (1, 'x'), (2, 'y'), (3, 'z')")
    yield name
    con.session.rollback()
    con.execute(f"DROP TABLE IF EXISTS {name}")


def rows(session_or_con, name: str) -> list:
    session = getattr(session_or_con, "session", session_or_con)
    return sorted(tuple(r.values()) for r in session.execute(f"SELECT a, b FROM {name}").table.to_pylist())


def other(con) -> Session:
    """A second session on the same cluster (another client)."""
    return Session(con.session.runner)


BASE = [(1, "x"), (2, "y"), (3, "z")]


def test_rollback_undoes_every_kind_of_write(con, table):
    con.execute("BEGIN")
    con.execute(f"DELETE FROM {table}")
    assert rows(con, table) == []                       # the transaction reads its own writes
    con.execute(f"INSERT INTO {table} VALUES (7, 'new')")
    con.execute(f"UPDATE {table} SET b = 'changed' WHERE a = 7")
    assert rows(con, table) == [(7, "changed")]
    con.execute("ROLLBACK")
    assert rows(con, table) == BASE
    assert not con.session.in_transaction


def test_commit_makes_writes_visible_together(con, table):
    second = f"{table}_b"
    con.execute(f"CREATE TABLE {second} (a INT, b TEXT)")
    try:
        reader = other(con)
        con.execute("START TRANSACTION")
        con.execute(f"INSERT INTO {table} VALUES (4, 'w')")
        con.execute(f"DELETE FROM {table} WHERE a = 1")
        con.execute(f"INSERT INTO {second} SELECT a, b FROM {table}")     # reads the uncommitted rows
        assert rows(reader, table) == BASE and rows(reader, second) == []  # nothing visible yet
        con.execute("COMMIT")
        expected = [(2, "y"), (3, "z"), (4, "w")]
        assert rows(reader, table) == expected and rows(reader, second) == expected
    finally:
        con.execute(f"DROP TABLE {second}")


def test_failed_statement_leaves_the_transaction_open(con, table):
    con.execute("BEGIN")
    con.execute(f"INSERT INTO {table} VALUES (5, 'v')")
    with pytest.raises(engine.Error):
        con.execute(f"INSERT INTO {table} VALUES ('not a number', 'v')")
    assert con.session.in_transaction
    con.execute("COMMIT")
    assert rows(con, table) == BASE + [(5, "v")]


def test_autocommit_off_with_set_and_dbapi(con, table):
    con.execute("SET autocommit = 0")
    try:
        con.execute(f"DELETE FROM {table} WHERE a = 2")
        assert con.session.in_transaction and rows(other(con), table) == BASE
        con.rollback()
        assert rows(con, table) == BASE
        con.execute(f"DELETE FROM {table} WHERE a = 2")
        con.commit()
        assert rows(other(con), table) == [(1, "x"), (3, "z")]
        con.execute(f"INSERT INTO {table} VALUES (9, 'q')")
        con.execute("SET autocommit = 1")                   # commits the open transaction (MySQL)
        assert not con.session.in_transaction and (9, "q") in rows(other(con), table)
    finally:
        con.execute("SET autocommit = 1")
    assert con.autocommit


def test_ddl_commits_an_open_transaction(con, table):
    con.execute("BEGIN")
    con.execute(f"INSERT INTO {table} VALUES (6, 'u')")
    con.execute(f"CREATE TABLE {table}_ddl (x INT)")        # an implicit COMMIT first, as in MySQL
    con.execute(f"DROP TABLE {table}_ddl")
    assert not con.session.in_transaction
    con.execute("ROLLBACK")
    assert (6, "u") in rows(con, table)


def test_closing_a_session_rolls_back(con, table):
    session = other(con)
    session.execute("BEGIN")
    session.execute(f"DELETE FROM {table}")
    session.close()
    assert rows(con, table) == BASE
    con.execute(f"INSERT INTO {table} VALUES (8, 'lock released')")      # the lock went with it


def test_concurrent_writer_waits_then_times_out(con, table):
    writer = other(con)
    writer.execute("SET lock_wait_timeout = 0.3")
    con.execute("BEGIN")
    con.execute(f"UPDATE {table} SET b = 'mine' WHERE a = 1")
    started = time.monotonic()
    with pytest.raises(LockWaitTimeoutError, match="Lock wait timeout exceeded"):
        writer.execute(f"DELETE FROM {table} WHERE a = 2")
    assert time.monotonic() - started >= 0.3
    assert rows(writer, table) == BASE                  # readers are not blocked, and see committed rows
    con.execute("COMMIT")
    writer.execute(f"DELETE FROM {table} WHERE a = 2")  # the lock is free again
    assert rows(con, table) == [(1, "mine"), (3, "z")]


def test_concurrent_writer_proceeds_after_commit(con, table):
    """The second writer waits for the first transaction and then applies on top of its rows: no
    lost update."""
    writer = other(con)
    con.execute("BEGIN")
    con.execute(f"UPDATE {table} SET a = a + 10")
    done = []
    thread = threading.Thread(target=lambda: done.append(writer.execute(f"UPDATE {table} SET a = a + 100")))
    thread.start()
    time.sleep(0.3)
    assert not done                                     # waiting for the lock
    con.execute("COMMIT")
    thread.join(30)
    assert done and rows(con, table) == [(111, "x"), (112, "y"), (113, "z")]


@pytest.mark.parametrize("sql, words", [
    ("SET sql_mode = ''", "sql_mode"),
    ("SET time_zone = '+01:00'", "time_zone"),
    ("SET GLOBAL autocommit = 0", "SET GLOBAL"),
    ("SET NAMES latin1", "SET NAMES"),
    ("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE", "SERIALIZABLE"),
    ("START TRANSACTION READ ONLY", "READ ONLY"),
    ("COMMIT AND CHAIN", "CHAIN"),
])
def test_unimplemented_options_are_refused(con, sql, words):
    with pytest.raises(NotSupportedError, match=words):
        con.execute(sql)
    assert not con.session.in_transaction


def test_refused_set_changes_nothing(con):
    with pytest.raises(NotSupportedError):
        con.execute("SET autocommit = 0, sql_mode = ''")
    assert con.autocommit


def test_accepted_session_variables(con):
    con.execute("SET NAMES utf8mb4")
    con.execute("SET character_set_results = NULL")
    con.execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
    con.execute("SET @@session.autocommit = ON, lock_wait_timeout = 5")
    assert con.autocommit and con.session.lock_wait_timeout == 5


CRASHING_WRITER = textwrap.dedent("""
    import os, signal, sys
    import engine
    con = engine.connect(data_dir=sys.argv[1])
    con.execute("BEGIN")
    con.execute("DELETE FROM t WHERE a = 1")
    con.execute("INSERT INTO t VALUES (10, 'ten')")
    con.execute("INSERT INTO u VALUES (10)")
    if sys.argv[2] == "commit":
        con.execute("COMMIT")
    os.kill(os.getpid(), signal.SIGKILL)      # mid-transaction, or right after its COMMIT returned
""")


@pytest.mark.parametrize("end", ["none", "commit"])
def test_kill_mid_transaction_keeps_none_of_it(tmp_path, end):
    if os.environ.get("CANOPY_RUNNER", "local") != "local":
        pytest.skip("the data_dir crash test runs on the embedded runner")
    data_dir = tmp_path / "data"
    with engine.connect(data_dir=str(data_dir)) as setup:
        setup.execute("CREATE TABLE t (a INT, b TEXT, SHARD KEY (a))")
        setup.execute("CREATE TABLE u (a INT)")
        setup.execute("INSERT INTO t VALUES (1, 'x'), (2, 'y')")
    script = tmp_path / "writer.py"
    script.write_text(CRASHING_WRITER)
    process = subprocess.run([sys.executable, str(script), str(data_dir), end], cwd=ROOT, capture_output=True,
                             text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=120)
    assert process.returncode == -signal.SIGKILL, process.stderr
    with engine.connect(data_dir=str(data_dir)) as reopened:
        t = rows(reopened, "t")
        u = [r[0] for r in reopened.execute("SELECT a FROM u").fetchall()]
        if end == "commit":
            assert t == [(2, "y"), (10, "ten")] and u == [10]
        else:
            assert t == [(1, "x"), (2, "y")] and u == []
        assert sorted(p.name for p in (data_dir / "leaf-0").glob("table-*")) == \
            sorted({f"table-{table.table_id}" for table in reopened.session.catalog.all_tables()})


def test_select_for_update_holds_the_write_lock(con, table):
    writer = other(con)
    writer.execute("SET lock_wait_timeout = 0.2")
    con.execute("BEGIN")
    assert len(con.execute(f"SELECT * FROM {table} FOR UPDATE").fetchall()) == 3
    with pytest.raises(LockWaitTimeoutError):
        writer.execute(f"DELETE FROM {table} WHERE a = 1")
    con.execute("COMMIT")
    writer.execute(f"DELETE FROM {table} WHERE a = 1")
    assert rows(con, table) == BASE[1:]


def test_savepoints(con, table):
    con.execute("BEGIN")
    con.execute(f"DELETE FROM {table} WHERE a = 1")
    con.execute("SAVEPOINT one")
    con.execute(f"INSERT INTO {table} VALUES (4, 'w')")
    con.execute("SAVEPOINT two")
    con.execute(f"UPDATE {table} SET b = 'changed'")
    con.execute("ROLLBACK TO SAVEPOINT two")
    assert rows(con, table) == [(2, "y"), (3, "z"), (4, "w")]
    con.execute("ROLLBACK TO one")                  # SAVEPOINT is optional; 'two' is forgotten
    assert rows(con, table) == [(2, "y"), (3, "z")]
    with pytest.raises(engine.Error, match="SAVEPOINT two does not exist"):
        con.execute("ROLLBACK TO SAVEPOINT two")
    con.execute("RELEASE SAVEPOINT one")
    with pytest.raises(engine.Error, match="SAVEPOINT one does not exist"):
        con.execute("ROLLBACK TO SAVEPOINT one")
    assert rows(other(con), table) == BASE           # nothing visible before COMMIT
    con.execute("COMMIT")
    assert rows(con, table) == [(2, "y"), (3, "z")]


def test_rollback_to_a_savepoint_before_a_tables_first_write(con, table):
    con.execute("BEGIN")
    con.execute("SAVEPOINT start")
    con.execute(f"DELETE FROM {table}")
    con.execute("ROLLBACK TO SAVEPOINT start")
    assert rows(con, table) == BASE
    con.execute(f"INSERT INTO {table} VALUES (5, 'v')")
    con.execute("COMMIT")
    assert rows(con, table) == BASE + [(5, "v")]
