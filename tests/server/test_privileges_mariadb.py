"""Accounts and privileges against MariaDB (marker ``mariadb``): one sequence of CREATE USER / GRANT /
REVOKE / ALTER USER / DROP USER and of statements each account tries runs on a MariaDB server with
grant tables and on a Canopy server, both through PyMySQL over TCP; which statements succeed, and the
error code of each that fails (1044, 1045, 1142, 1143, 1227, ...), must be the same. Deliberate
differences (docs/server.md, "Accounts and privileges") are listed in DIFFERENCES with the code Canopy
answers instead."""
from __future__ import annotations

from pathlib import Path

import pytest

from engine.server.process import ServerProcess
from tests.sql.test_mariadb_oracle import start_mariadb

pymysql = pytest.importorskip("pymysql")
pytestmark = pytest.mark.mariadb

ROOT = "root"           # the administrator: MariaDB's root, Canopy's --user (ALL ON *.*)

# (who, statement): who is ROOT, "user:password", or "connect user:password[/database]" (a login)
SEQUENCE = [
    (ROOT, "CREATE DATABASE sales"),
    (ROOT, "CREATE DATABASE staging"),
    (ROOT, "CREATE TABLE sales.t (id INT, a INT, b INT)"),
    (ROOT, "INSERT INTO sales.t VALUES (1, 10, 100), (2, 20, 200)"),
    (ROOT, "CREATE TABLE staging.s (id INT, a INT)"),
    (ROOT, "INSERT INTO staging.s VALUES (1, 1), (2, 2)"),
    (ROOT, "CREATE USER 'analyst'@'%' IDENTIFIED BY 'pw'"),
    (ROOT, "CREATE USER 'etl'@'%' IDENTIFIED BY 'pw2'"),
    (ROOT, "CREATE USER 'analyst'@'%' IDENTIFIED BY 'again'"),        # exists: 1396
    (ROOT, "GRANT SELECT ON sales.* TO 'analyst'@'%'"),
    (ROOT, "GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, DROP ON staging.* TO 'etl'@'%'"),
    ("connect analyst:wrong", None),                                # 1045
    ("connect nobody:pw", None),                                    # 1045
    ("connect analyst:pw/sales", None),
    ("connect analyst:pw/staging", None),                           # 1044
    ("analyst:pw", "SELECT id, a FROM sales.t ORDER BY id"),
    ("analyst:pw", "SELECT COUNT(*) FROM information_schema.TABLES"),
    ("analyst:pw", "INSERT INTO sales.t VALUES (3, 30, 300)"),      # 1142
    ("analyst:pw", "UPDATE sales.t SET a = 1"),                     # 1142
    ("analyst:pw", "DELETE FROM sales.t"),                          # 1142
    ("analyst:pw", "CREATE TABLE sales.x (i INT)"),                 # 1142
    ("analyst:pw", "DROP TABLE sales.t"),                           # 1142
    ("analyst:pw", "DROP TABLE IF EXISTS sales.t, sales.nothing"),  # 1142
    ("analyst:pw", "TRUNCATE TABLE sales.t"),                       # 1142: TRUNCATE needs DROP
    ("analyst:pw", "ALTER TABLE sales.t ADD COLUMN c INT"),         # 1142
    ("analyst:pw", "CREATE VIEW sales.v AS SELECT 1"),              # 1142
    ("analyst:pw", "SELECT * FROM staging.s"),                      # 1142
    ("analyst:pw", "USE staging"),                                  # 1044
    ("analyst:pw", "USE sales"),
    ("analyst:pw", "CREATE USER 'x'@'%' IDENTIFIED BY 'y'"),        # 1227
    ("analyst:pw", "DROP USER 'etl'@'%'"),                          # 1227
    ("analyst:pw", "SHOW GRANTS"),
    ("etl:pw2", "INSERT INTO staging.s VALUES (3, 3)"),
    ("etl:pw2", "UPDATE staging.s SET a = 5"),
    ("etl:pw2", "CREATE TABLE staging.n (i INT)"),
    ("etl:pw2", "DROP TABLE staging.n"),
    ("etl:pw2", "CREATE TABLE staging.n2 (i INT)"),
    ("etl:pw2", "TRUNCATE TABLE staging.n2"),
    ("etl:pw2", "ALTER TABLE staging.n2 ADD COLUMN c INT"),         # 1142: no ALTER
    ("etl:pw2", "SELECT * FROM sales.t"),                           # 1142
    ("etl:pw2", "USE sales"),                                       # 1044
    (ROOT, "REVOKE INSERT ON staging.* FROM 'etl'@'%'"),
    ("etl:pw2", "INSERT INTO staging.s VALUES (4, 4)"),             # 1142
    ("etl:pw2", "UPDATE staging.s SET a = a + 1"),                  # 1143: reads a without SELECT
    ("etl:pw2", "DELETE FROM staging.s WHERE id = 2"),              # 1143
    ("etl:pw2", "DELETE FROM staging.s"),
    (ROOT, "GRANT SELECT ON staging.* TO 'etl'@'%'"),
    ("etl:pw2", "UPDATE staging.s SET a = a + 1"),
    ("etl:pw2", "SELECT COUNT(*) FROM staging.s"),
    (ROOT, "ALTER USER 'etl'@'%' IDENTIFIED BY 'new'"),
    ("connect etl:pw2", None),                                      # 1045
    ("connect etl:new/staging", None),
    (ROOT, "REVOKE ALL PRIVILEGES ON staging.* FROM 'etl'@'%'"),
    ("etl:new", "SELECT COUNT(*) FROM staging.s"),                  # 1142
    (ROOT, "GRANT ALL PRIVILEGES ON *.* TO 'etl'@'%'"),
    ("etl:new", "CREATE USER 'temp'@'%' IDENTIFIED BY 't'"),
    ("etl:new", "DROP USER 'temp'@'%'"),
    ("etl:new", "SELECT COUNT(*) FROM sales.t"),
    (ROOT, "DROP USER 'analyst'@'%'"),
    ("connect analyst:pw", None),                                   # 1045
    (ROOT, "DROP USER 'analyst'@'%'"),                              # gone: 1396
    (ROOT, "DROP USER IF EXISTS 'analyst'@'%'"),
    # deliberate differences (DIFFERENCES): table-level grants, WITH GRANT OPTION, hosts other than '%'
    (ROOT, "GRANT SELECT ON sales.t TO 'etl'@'%'"),
    (ROOT, "GRANT SELECT ON sales.* TO 'etl'@'%' WITH GRANT OPTION"),
    (ROOT, "CREATE USER 'local'@'localhost' IDENTIFIED BY 'pw'"),
]

# Deliberate differences (docs/server.md): {statement: (MariaDB's outcome, Canopy's)}: refused as
# not supported (1235), never silently widened
DIFFERENCES = {"GRANT SELECT ON sales.t TO 'etl'@'%'": ("ok", 1235),
               "GRANT SELECT ON sales.* TO 'etl'@'%' WITH GRANT OPTION": ("ok", 1235),
               "CREATE USER 'local'@'localhost' IDENTIFIED BY 'pw'": ("ok", 1235)}


def _outcome(connect, who, statement):
    """'ok', or the MySQL error code of the login or of the statement."""
    login = who[len("connect "):] if who.startswith("connect ") else who
    user, _, rest = login.partition(":")
    password, _, database = rest.partition("/")
    try:
        connection = connect(user, password, database or None)
    except pymysql.MySQLError as error:
        return error.args[0]
    try:
        if statement is not None:
            with connection.cursor() as cursor:
                cursor.execute(statement)
                cursor.fetchall()
        return "ok"
    except pymysql.MySQLError as error:
        return error.args[0]
    finally:
        connection.close()


def _run(connect_root, connect_user) -> list:
    out = []
    for who, statement in SEQUENCE:
        if who == ROOT:
            connection = connect_root()
            try:
                with connection.cursor() as cursor:
                    cursor.execute(statement)
                out.append("ok")
            except pymysql.MySQLError as error:
                out.append(error.args[0])
            finally:
                connection.close()
        else:
            out.append(_outcome(connect_user, who, statement))
    return out


@pytest.fixture(scope="module")
def maria_outcomes(tmp_path_factory):
    connect, port, stop = start_mariadb(Path(tmp_path_factory.mktemp("mariadb-grants")), grant_tables=True)
    try:
        setup = connect(None, autocommit=True)
        with setup.cursor() as cursor:      # anonymous accounts would match 'analyst' from localhost
            cursor.execute("DELETE FROM mysql.global_priv WHERE User = ''")
            cursor.execute("FLUSH PRIVILEGES")
        setup.close()
        yield _run(lambda: connect(None, autocommit=True),
                   lambda user, password, database: pymysql.connect(host="127.0.0.1", port=port, user=user,
                                                                    password=password, database=database,
                                                                    autocommit=True))
    finally:
        stop()


@pytest.fixture(scope="module")
def canopy_outcomes(tmp_path_factory):
    server = ServerProcess("--data-dir", str(tmp_path_factory.mktemp("canopy-grants")), user="admin", password="s3cret")
    try:
        def connect(user, password, database):
            return pymysql.connect(host=server.host, port=server.port, user=user, password=password,
                                   database=database, autocommit=True)
        yield _run(lambda: connect("admin", "s3cret", None), connect)
    finally:
        server.stop()


def test_the_same_statements_succeed_and_fail_alike(maria_outcomes, canopy_outcomes):
    expected = []
    for (_, statement), theirs in zip(SEQUENCE, maria_outcomes):
        if statement in DIFFERENCES:
            assert theirs == DIFFERENCES[statement][0], (statement, "MariaDB no longer answers as listed")
        expected.append(DIFFERENCES[statement][1] if statement in DIFFERENCES else theirs)
    mismatches = [(i, step, want, got) for i, (step, want, got) in enumerate(zip(SEQUENCE, expected, canopy_outcomes))
                  if want != got]
    assert mismatches == [], "\n".join(map(repr, mismatches))
