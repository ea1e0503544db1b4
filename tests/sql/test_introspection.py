"""Session state and introspection answered by the engine itself (the DB-API here, the MySQL wire server
through the same session): variables, SHOW VARIABLES / STATUS / PROCESSLIST / INDEX / FULL TABLES,
information_schema, KILL QUERY."""
from __future__ import annotations

import threading
import time

import pytest

import engine
from engine.session import Session


@pytest.fixture()
def con():
    con = engine.connect()
    con.execute("CREATE TABLE trades (id BIGINT NOT NULL, sym VARCHAR(8), px DECIMAL(12,2), SHARD KEY (id), "
                "SORT KEY (sym))")
    con.execute("CREATE DATABASE other")
    con.execute("CREATE TABLE other.notes (n TEXT)")
    yield con
    con.close()


def one(con, sql):
    return con.execute(sql).fetchall()


def test_variables_read_set_and_show(con):
    assert one(con, "SELECT @@version_comment")[0][0].startswith("Canopy")
    assert con.execute("SELECT @@version_comment").description[0][0] == "@@version_comment"
    assert one(con, "SELECT @@session.transaction_isolation, @@autocommit") == [("READ-COMMITTED", 1)]
    con.execute("SET NAMES utf8mb4 COLLATE utf8mb4_bin")
    assert one(con, "SELECT @@character_set_client, @@collation_connection") == [("utf8mb4", "utf8mb4_bin")]
    con.execute("SET SESSION lock_wait_timeout = 7, @@session.autocommit = 0")
    assert dict(one(con, "SHOW VARIABLES LIKE '%lock_wait_timeout'"))["lock_wait_timeout"] == "7.0"
    assert one(con, "SELECT @@autocommit") == [(0,)]          # the session's own state, not a copy
    con.execute("SET autocommit = 1")
    assert dict(one(con, "SHOW GLOBAL VARIABLES LIKE 'wait_timeout'"))["wait_timeout"] == "28800"
    con.execute("SET @x = 41")
    assert one(con, "SELECT @x + 1, @never_set") == [(42, None)]
    assert one(con, "SELECT DATABASE(), VERSION() = @@version, CONNECTION_ID() > 0") == [("canopy", 1, 1)]
    con.execute("SET max_execution_time = 250")
    assert con.session.statement_timeout == 250


@pytest.mark.parametrize("sql, error", [
    ("SET no_such_variable = 1", engine.ProgrammingError),          # unknown: never silently accepted
    ("SET version = 'x'", engine.ProgrammingError),                 # read only
    ("SET sql_mode = 'ANSI_QUOTES'", engine.NotSupportedError),     # known, but Canopy would not honour it
    ("SET NAMES latin1", engine.NotSupportedError),
    ("SET autocommit = 'maybe'", engine.ProgrammingError),          # not a boolean
    ("SET sql_select_limit = 10", engine.NotSupportedError),        # a value Canopy would not honour
    ("SET GLOBAL wait_timeout = 1", engine.NotSupportedError),
    ("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE", engine.NotSupportedError),
    ("SELECT @@no_such_variable", engine.ProgrammingError),
    ("SHOW VARIABLES WHERE Variable_name = 'x'", engine.NotSupportedError),
])
def test_refused_settings(con, sql, error):
    # (@@error_count and @@warning_count describe the last statement: the refusal counts there)
    def settings():
        return [row for row in one(con, "SHOW VARIABLES") if row[0] not in ("error_count", "warning_count")]
    before = settings()
    with pytest.raises(error):
        con.execute(sql)
    assert settings() == before


def test_set_is_all_or_nothing(con):
    before = one(con, "SELECT @@lock_wait_timeout")
    with pytest.raises(engine.ProgrammingError):
        con.execute("SET lock_wait_timeout = 5, no_such_variable = 1")
    assert one(con, "SELECT @@lock_wait_timeout") == before


def test_information_schema(con):
    tables = one(con, "SELECT table_schema, table_name, table_type FROM information_schema.tables "
                      "WHERE table_schema <> 'information_schema' ORDER BY 1, 2")
    assert tables == [("canopy", "trades", "BASE TABLE"), ("other", "notes", "BASE TABLE")]
    columns = one(con, "SELECT column_name, ordinal_position, is_nullable, data_type, numeric_scale, column_key "
                       "FROM information_schema.columns WHERE table_name = 'trades' ORDER BY ordinal_position")
    assert columns == [("id", 1, "NO", "bigint", 0, "MUL"), ("sym", 2, "YES", "varchar", None, "MUL"),
                       ("px", 3, "YES", "decimal", 2, "")]
    assert one(con, "SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name IN "
                    "('canopy', 'other', 'information_schema')") == [(3,)]
    stats = one(con, "SELECT index_name, column_name, index_type FROM information_schema.statistics "
                     "WHERE table_name = 'trades' ORDER BY index_name")
    assert stats == [("__SHARDKEY", "id", "METADATA_ONLY"), ("__SORTKEY", "sym", "CLUSTERED COLUMNSTORE")]
    assert one(con, "SELECT COUNT(*) FROM information_schema.views") == [(0,)]
    assert one(con, "SELECT COUNT(*) FROM information_schema.key_column_usage WHERE table_name = 'trades'") == [(0,)]
    # live: a new table shows at once (no cached plan of the system tables)
    con.execute("CREATE TABLE later (a INT)")
    assert ("later",) in one(con, "SELECT table_name FROM information_schema.tables")
    described = one(con, "DESCRIBE information_schema.processlist")
    assert [row[0] for row in described][:3] == ["ID", "USER", "HOST"]


def test_show_statements(con):
    assert one(con, "SHOW FULL TABLES") == [("trades", "BASE TABLE")]
    assert ("PROCESSLIST", "SYSTEM VIEW") in one(con, "SHOW FULL TABLES FROM information_schema")
    index = one(con, "SHOW INDEX FROM trades")
    assert [(r[2], r[4]) for r in index] == [("__SHARDKEY", "id"), ("__SORTKEY", "sym")]
    status = dict(one(con, "SHOW STATUS"))
    assert int(status["Threads_connected"]) >= 1 and int(status["Questions"]) >= 1
    processes = one(con, "SHOW PROCESSLIST")
    me = [p for p in processes if int(p[0]) == con.session.connection_id]
    assert me and me[0][4] == "Query" and me[0][7] == "SHOW PROCESSLIST"


def test_kill_query_from_another_session(con):
    con.execute("CREATE TABLE nums (a BIGINT)")
    import pyarrow as pa
    con.load_table("nums", pa.table({"a": pa.array(range(200_000), pa.int64())}))
    other = Session(con.session.runner, "canopy")
    errors: list = []

    def run():
        try:
            con.execute("SELECT COUNT(*) FROM nums x JOIN nums y ON x.a % 1000 = y.a % 1000")
        except engine.OperationalError as error:
            errors.append(error)

    worker = threading.Thread(target=run)
    worker.start()
    deadline = time.monotonic() + 30
    while con.session.activity.command != "Query" and time.monotonic() < deadline:
        time.sleep(0.01)
    other.execute(f"KILL QUERY {con.session.connection_id}")
    worker.join(60)
    assert errors and "cancelled" in str(errors[0])
    assert one(con, "SELECT 1") == [(1,)]            # the session goes on
    with pytest.raises(engine.ProgrammingError):
        other.execute("KILL QUERY 987654")
    other.close()


def test_show_table_status(con):
    """GUI clients (Workbench, DBeaver) list tables through SHOW TABLE STATUS: MySQL's columns, one row
    per table and view of the database, LIKE filtering, another database by FROM."""
    con.execute("CREATE VIEW cheap AS SELECT id FROM trades WHERE px < 10")
    cursor = con.execute("SHOW TABLE STATUS")
    names = [d[0] for d in cursor.description]
    assert names[:4] == ["Name", "Engine", "Version", "Row_format"] and names[-1] == "Comment" and len(names) == 18
    rows = {r[0]: r for r in cursor.fetchall()}
    assert set(rows) == {"trades", "cheap"}
    assert rows["trades"][1] == "Columnstore" and rows["cheap"][-1] == "VIEW" and rows["cheap"][1] is None
    assert [r[0] for r in one(con, "SHOW TABLE STATUS LIKE 'tr%'")] == ["trades"]
    assert [r[0] for r in one(con, "SHOW TABLE STATUS FROM other")] == ["notes"]
    with pytest.raises(engine.NotSupportedError, match="SHOW TABLE STATUS WHERE"):
        con.execute("SHOW TABLE STATUS WHERE Name = 'trades'")


def test_row_count_and_found_rows(con):
    """ROW_COUNT(): rows the last statement changed (0 after DDL, -1 after a query); FOUND_ROWS(): rows the
    last query returned. Statements reading them never come from the plan cache."""
    con.execute("CREATE TABLE counted (a INT)")
    assert one(con, "SELECT ROW_COUNT()") == [(0,)]
    con.execute("INSERT INTO counted VALUES (1), (2), (3)")
    assert one(con, "SELECT ROW_COUNT()") == [(3,)]
    con.execute("UPDATE counted SET a = a + 1 WHERE a > 1")
    assert one(con, "SELECT ROW_COUNT()") == [(2,)]
    assert one(con, "SELECT ROW_COUNT()") == [(-1,)]
    one(con, "SELECT a FROM counted WHERE a > 1")
    assert one(con, "SELECT FOUND_ROWS()") == [(2,)]
    con.execute("DELETE FROM counted")
    assert one(con, "SELECT ROW_COUNT(), FOUND_ROWS()") == [(3, 1)]
