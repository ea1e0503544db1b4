"""The MySQL wire server with real clients: PyMySQL for the protocol, accounts and cancellation, and the
``mysql`` command-line client (skipped where it is not installed)."""
from __future__ import annotations

import datetime
import shutil
import socket
import subprocess
import threading
import time
from decimal import Decimal

import pytest

from tests.server.conftest import ADMIN, PASSWORD, connect, pymysql

from pymysql.constants import CLIENT  # noqa: E402


@pytest.fixture(scope="module")
def admin(server):
    con = connect(server)
    yield con
    con.close()


def _query(con, sql, params=None):
    with con.cursor() as cur:
        cur.execute(sql, params)
        return cur.fetchall()


def test_connect_queries_answered_from_session_state(server, admin):
    assert _query(admin, "SELECT @@version_comment")[0][0].startswith("Canopy")
    assert _query(admin, "SELECT DATABASE()") == (("canopy",),)
    _query(admin, "SET NAMES utf8mb4 COLLATE utf8mb4_bin")
    assert _query(admin, "SELECT @@session.collation_connection, @@character_set_client") == \
        (("utf8mb4_bin", "utf8mb4"),)
    assert dict(_query(admin, "SHOW VARIABLES LIKE 'collation_connection'")) == {"collation_connection": "utf8mb4_bin"}
    (connection_id,), = _query(admin, "SELECT CONNECTION_ID()")
    assert connection_id == admin.thread_id()          # the handshake's id is the session's id
    assert _query(admin, "SELECT USER()")[0][0].startswith(f"{ADMIN}@")
    with pytest.raises(pymysql.err.OperationalError) as error:
        _query(admin, "SET no_such_variable = 1")
    assert error.value.args[0] == 1193


def test_types_round_trip(admin):
    _query(admin, "CREATE TABLE typed (i BIGINT, d DECIMAL(12,2), f DOUBLE, day DATE, ts DATETIME, "
                  "s VARCHAR(20), b BOOLEAN)")
    row = (7, Decimal("12.50"), 0.25, datetime.date(2024, 2, 29), datetime.datetime(2024, 3, 1, 12, 30, 5),
           "naïve 'quote'", True)
    with admin.cursor() as cur:
        assert cur.execute("INSERT INTO typed VALUES (%s, %s, %s, %s, %s, %s, %s)", row) == 1
        cur.execute("INSERT INTO typed VALUES (NULL, NULL, NULL, NULL, NULL, NULL, NULL)")
        cur.execute("SELECT * FROM typed ORDER BY i DESC")
        rows = cur.fetchall()
        types = [d[1] for d in cur.description]
    assert rows[0] == (7, Decimal("12.50"), 0.25, datetime.date(2024, 2, 29),
                       datetime.datetime(2024, 3, 1, 12, 30, 5), "naïve 'quote'", 1)
    assert rows[1] == (None,) * 7
    from pymysql.constants import FIELD_TYPE
    assert types == [FIELD_TYPE.LONGLONG, FIELD_TYPE.NEWDECIMAL, FIELD_TYPE.DOUBLE, FIELD_TYPE.DATE,
                     FIELD_TYPE.DATETIME, FIELD_TYPE.VAR_STRING, FIELD_TYPE.TINY]


def test_errors_carry_mysql_codes(admin):
    cases = {"SELECT * FROM no_such_table": (pymysql.err.ProgrammingError, 1146),
             "SELECT no_such_column FROM typed": (pymysql.err.OperationalError, 1054),
             "SELEC 1": (pymysql.err.ProgrammingError, 1064),
             "USE no_such_database": (pymysql.err.OperationalError, 1049)}
    for sql, (cls, code) in cases.items():
        with pytest.raises(cls) as error:
            _query(admin, sql)
        assert error.value.args[0] == code, sql
    assert _query(admin, "SELECT 1") == ((1,),)        # the connection is still usable


def test_warnings_reach_the_client(admin):
    """The result's EOF / OK packet carries the warning count, SHOW WARNINGS lists them (MySQL's 1292
    for a text read in part as a number), and the next clean statement clears them."""
    with admin.cursor() as cur:
        cur.execute("SELECT '12x' + 1, CAST('abc' AS SIGNED)")
        assert cur.fetchall() == ((13.0, 0),)
        assert cur.warning_count == 2
        cur.execute("SHOW WARNINGS")
        assert sorted((level, int(code), message) for level, code, message in cur.fetchall()) == [
            ("Warning", 1292, "Truncated incorrect DOUBLE value: '12x'"),
            ("Warning", 1292, "Truncated incorrect INTEGER value: 'abc'")]
        cur.execute("SELECT @@warning_count")
        assert cur.fetchall() == ((2,),)
        cur.execute("SELECT 1")
        assert cur.warning_count == 0


def test_mysql_connector_python_connects_with_its_defaults(server):
    """mysql-connector-python's defaults: the handshake's collation id 255 and its SET NAMES utf8mb4
    COLLATE utf8mb4_0900_ai_ci; the session then compares its literals under that collation (NO PAD,
    accent- and case-insensitive)."""
    connector = pytest.importorskip("mysql.connector")
    con = connector.connect(host=server.host, port=server.port, user=ADMIN, password=PASSWORD, database="canopy")
    try:
        cur = con.cursor()
        cur.execute("SELECT @@collation_connection, @@character_set_client, 'a ' = 'a', 'É' = 'e', 1 + 1")
        assert [tuple(r) for r in cur.fetchall()] == [("utf8mb4_0900_ai_ci", "utf8mb4", 0, 1, 2)]
    finally:
        con.close()


def test_multi_statements_need_the_clients_opt_in(server, admin):
    with pytest.raises(pymysql.err.NotSupportedError):
        _query(admin, "SELECT 1; SELECT 2")
    con = connect(server, client_flag=CLIENT.MULTI_STATEMENTS)
    with con.cursor() as cur:
        cur.execute("SELECT 1; SELECT 2 AS two; SELECT * FROM no_such_table; SELECT 4")
        assert cur.fetchall() == ((1,),)
        assert cur.nextset()
        assert cur.fetchall() == ((2,),)
        with pytest.raises(pymysql.err.ProgrammingError):      # the batch stops at its first error
            cur.nextset()
    con.close()


def test_login_failures_and_privileges(server, admin):
    with pytest.raises(pymysql.err.OperationalError) as error:
        connect(server, password="wrong")
    assert error.value.args[0] == 1045
    with pytest.raises(pymysql.err.OperationalError) as unknown:
        connect(server, user="nobody", password="x")
    assert unknown.value.args[0] == 1045 and "nobody" in unknown.value.args[1]

    _query(admin, "CREATE DATABASE IF NOT EXISTS private")
    _query(admin, "CREATE TABLE private.secret (a INT)")
    _query(admin, "CREATE USER 'reader'@'%' IDENTIFIED WITH caching_sha2_password BY 'pw1'")
    _query(admin, "CREATE USER writer IDENTIFIED BY 'pw2'")
    _query(admin, "GRANT SELECT ON canopy.* TO reader")
    _query(admin, "GRANT SELECT, INSERT ON canopy.* TO writer")
    reader = connect(server, user="reader", password="pw1")          # caching_sha2_password
    writer = connect(server, user="writer", password="pw2")          # mysql_native_password
    assert _query(reader, "SELECT COUNT(*) FROM typed")[0][0] >= 1
    with pytest.raises(pymysql.err.OperationalError) as denied:
        _query(reader, "INSERT INTO typed (i) VALUES (1)")
    assert denied.value.args[0] == 1142
    for statement in ("DROP TABLE typed", "DROP TABLE IF EXISTS typed, nothing", "TRUNCATE TABLE typed"):
        with pytest.raises(pymysql.err.OperationalError) as not_dropped:   # both need DROP
            _query(reader, statement)
        assert not_dropped.value.args[0] == 1142, statement
    with pytest.raises(pymysql.err.OperationalError) as exists:
        _query(admin, "CREATE USER reader IDENTIFIED BY 'again'")
    assert exists.value.args[0] == 1396
    with pytest.raises(pymysql.err.OperationalError) as denied_db:
        _query(reader, "USE private")
    assert denied_db.value.args[0] == 1044
    with pytest.raises(pymysql.err.OperationalError) as admin_only:
        _query(writer, "CREATE USER sneaky IDENTIFIED BY 'x'")
    assert admin_only.value.args[0] == 1227
    with pytest.raises(pymysql.err.OperationalError):
        connect(server, user="reader", password="pw1", database="private")
    _query(writer, "INSERT INTO typed (i) VALUES (100)")
    assert _query(reader, "SELECT COUNT(*) FROM typed WHERE i = 100") == ((1,),)
    assert "SELECT" in _query(reader, "SHOW GRANTS")[0][0]
    _query(admin, "REVOKE INSERT ON canopy.* FROM writer")
    _query(admin, "REVOKE SELECT ON canopy.* FROM writer")
    _query(admin, "GRANT UPDATE ON canopy.* TO writer")
    with pytest.raises(pymysql.err.OperationalError) as column_denied:     # the WHERE reads i: SELECT on it
        _query(writer, "UPDATE typed SET s = 'x' WHERE i = 100")
    assert column_denied.value.args == (1143, "SELECT command denied to user 'writer'@'%' for column 'i' in table 'typed'")
    with pytest.raises(pymysql.err.OperationalError):
        _query(writer, "INSERT INTO typed (i) VALUES (101)")
    _query(admin, "DROP USER reader, writer")
    reader.close()
    writer.close()
    with pytest.raises(pymysql.err.OperationalError):
        connect(server, user="reader", password="pw1")


def test_accounts_are_kept_in_the_data_dir(server, admin):
    _query(admin, "CREATE USER IF NOT EXISTS keeper IDENTIFIED BY 'k'")
    assert (server.data_dir / "accounts.json").exists()
    text = (server.data_dir / "accounts.json").read_text()
    assert "keeper" in text and "'k'" not in text and '"k"' not in text     # verifiers, no password


def _long_query(con, errors):
    try:
        _query(con, "SELECT COUNT(*) FROM lineitem a JOIN lineitem b ON a.l_quantity = b.l_quantity "
                    "AND a.l_discount = b.l_discount AND a.l_tax <= b.l_tax")
    except pymysql.err.MySQLError as error:
        errors.append(error)


def _wait_for(predicate, timeout_s=30.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


@pytest.fixture(scope="module")
def lineitem(server, admin):
    from engine.workloads import tpch
    with admin.cursor() as cur:
        for statement in tpch.schema_statements():
            if "lineitem" in statement.split("(")[0].lower():
                cur.execute(statement)
        cur.execute(tpch.LOAD_DATA_SQL.format(path=f"{_load_dir(server)}/lineitem.csv", table="lineitem"))
        assert cur.rowcount > 50_000
    return "lineitem"


def _load_dir(server):
    from engine.workloads import tpch
    return tpch.generate(0.01, tpch.default_cache_dir()).resolve()


def test_kill_query_stops_the_running_statement(server, admin, lineitem):
    victim = connect(server)
    errors: list = []
    worker = threading.Thread(target=_long_query, args=(victim, errors))
    worker.start()
    assert _wait_for(lambda: any(int(r[0]) == victim.thread_id() and r[4] == "Query"
                                 for r in _query(admin, "SHOW PROCESSLIST")))
    _query(admin, f"KILL QUERY {victim.thread_id()}")
    worker.join(60)
    assert not worker.is_alive()
    assert errors and errors[0].args[0] == 1317, errors
    assert _query(victim, "SELECT 1") == ((1,),)          # KILL QUERY leaves the connection open
    _query(admin, f"KILL {victim.thread_id()}")
    with pytest.raises(pymysql.err.MySQLError):
        _query(victim, "SELECT 1")


def test_disconnect_cancels_the_query(server, admin, lineitem):
    victim = connect(server)
    victim_id = victim.thread_id()
    sock = victim._sock                      # send the query, then drop the connection mid-statement
    worker = threading.Thread(target=_long_query, args=(victim, []))
    worker.start()
    assert _wait_for(lambda: any(int(r[0]) == victim_id and r[4] == "Query" for r in _query(admin, "SHOW PROCESSLIST")))
    sock.shutdown(socket.SHUT_RDWR)
    sock.close()
    assert _wait_for(lambda: all(int(r[0]) != victim_id for r in _query(admin, "SHOW PROCESSLIST")), 30)
    worker.join(30)


def test_an_answer_past_memory_limit_is_sent_from_disk(server, admin, lineitem):
    # 60,000 rows of lineitem (~6 MiB) under a 2 MiB limit: the answer waits on disk
    # (engine.exec.answer) and the server sends it a batch at a time, in both protocols
    sql = "SELECT l_orderkey, l_linenumber, l_comment, l_extendedprice FROM lineitem ORDER BY l_orderkey, l_linenumber"
    whole = _query(admin, sql)
    con = connect(server)
    try:
        _query(con, "SET memory_limit = '2MiB'")
        assert _query(con, sql) == whole and len(whole) > 50_000
        rows = _query(con, "EXPLAIN ANALYZE " + sql)
        assert "spilled to disk: Answer" in rows[-1][0], rows[-1]
    finally:
        con.close()
    mysql_connector = pytest.importorskip("mysql.connector")
    binary = mysql_connector.connect(host=server.host, port=server.port, user=ADMIN, password=PASSWORD,
                                     database="canopy", autocommit=True, use_pure=True, charset="utf8mb4",
                                     collation="utf8mb4_general_ci")
    try:
        cur = binary.cursor(prepared=True)
        cur.execute("SET memory_limit = '2MiB'")
        cur.execute(sql.replace("ORDER BY", "WHERE l_orderkey > ? ORDER BY"), (0,))
        assert [tuple(r) for r in cur.fetchall()] == [tuple(r) for r in whole]
    finally:
        binary.close()


def test_load_data_local_infile_needs_the_clients_permission(server, admin, tmp_path):
    csv = tmp_path / "local.csv"
    csv.write_text("1,one\n2,two\n")
    _query(admin, "CREATE TABLE local_rows (a INT, b VARCHAR(10))")
    sql = f"LOAD DATA LOCAL INFILE '{csv}' INTO TABLE local_rows FIELDS TERMINATED BY ','"
    with pytest.raises(pymysql.err.OperationalError):
        _query(admin, sql)                                    # PyMySQL's default: no local files
    con = connect(server, local_infile=True)
    with con.cursor() as cur:
        assert cur.execute(sql) == 2
    assert _query(con, "SELECT * FROM local_rows ORDER BY a") == ((1, "one"), (2, "two"))
    con.close()
    outside = tmp_path / "outside.csv"
    outside.write_text("3,three\n")
    with pytest.raises(pymysql.err.OperationalError) as error:     # server-side: only in --load-dir
        _query(admin, f"LOAD DATA INFILE '{outside}' INTO TABLE local_rows FIELDS TERMINATED BY ','")
    assert "load" in error.value.args[1].lower()


def test_introspection_through_the_wire(admin):
    tables = dict(_query(admin, "SHOW FULL TABLES"))
    assert tables["typed"] == "BASE TABLE"
    columns = _query(admin, "SELECT column_name, data_type FROM information_schema.columns "
                            "WHERE table_schema = 'canopy' AND table_name = 'typed' ORDER BY ordinal_position")
    assert [c for c, _ in columns] == ["i", "d", "f", "day", "ts", "s", "b"]
    assert ("canopy",) in _query(admin, "SELECT schema_name FROM information_schema.schemata")
    status = dict(_query(admin, "SHOW STATUS LIKE 'Threads_%'"))
    assert int(status["Threads_connected"]) >= 1


mysql_cli = shutil.which("mysql") or shutil.which("mariadb")


@pytest.mark.skipif(mysql_cli is None, reason="the mysql command-line client is not installed "
                                              "(apt-get install mariadb-client)")
def test_mysql_command_line_client(server, admin):
    def run(*args, sql):
        return subprocess.run([mysql_cli, "-h", server.host, "-P", str(server.port), "-u", ADMIN,
                               f"-p{PASSWORD}", *args, "-e", sql], capture_output=True, text=True, timeout=60)
    done = run("canopy", "--batch", sql="SELECT @@version_comment; CREATE TABLE cli (a INT, b VARCHAR(5)); "
                                        "INSERT INTO cli VALUES (1, 'x'), (2, NULL); SELECT * FROM cli ORDER BY a")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1].startswith("Canopy")
    assert lines[-3:] == ["a\tb", "1\tx", "2\tNULL"]
    failed = run("canopy", sql="SELECT * FROM missing")
    assert failed.returncode == 1 and "ERROR 1146" in failed.stderr
