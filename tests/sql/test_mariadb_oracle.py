"""MariaDB as the oracle for MySQL semantics (marker ``mariadb``: ``pytest -m mariadb``, or
``make test-mariadb``): the cases of tests/sql/statement_effects.py run on a private MariaDB server
and on Canopy, and every expectation must hold on both. Skips when MariaDB is not installed
(``apt-get install mariadb-server``). Deliberate differences are in docs/sql-semantics.md."""
from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.sql.statement_effects import CASES
from tests.sql.test_statement_effects import canopy_executor, con, run_case  # noqa: F401 - fixture

pytestmark = pytest.mark.mariadb

# MySQL 8.0's row alias (INSERT ... AS new ON DUPLICATE KEY UPDATE c = new.c): MariaDB has only VALUES()
NOT_IN_MARIADB = {"ON DUPLICATE KEY UPDATE with a row alias"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_mariadb(base: Path, grant_tables: bool = False):
    """A MariaDB server of its own: data directory and socket under ``base``, TCP on a free localhost
    port; without ``grant_tables`` no privilege is checked (root without a password), with them root
    (no password) connects through the socket and accounts are MySQL's. Returns (connect(database,
    **options) over the socket as root, the TCP port, stop())."""
    pymysql = pytest.importorskip("pymysql")
    server = shutil.which("mariadbd") or shutil.which("mariadbd", path="/usr/sbin:/usr/local/sbin")
    install = shutil.which("mariadb-install-db") or shutil.which("mysql_install_db")
    if server is None or install is None:
        pytest.skip("MariaDB is not installed (apt-get install mariadb-server)")
    data, sock, port = base / "data", base / "mariadb.sock", _free_port()
    subprocess.run([install, "--no-defaults", f"--datadir={data}", "--user=root", "--skip-test-db",
                    "--auth-root-authentication-method=normal"], check=True, capture_output=True, timeout=120)
    process = subprocess.Popen([server, "--no-defaults", f"--datadir={data}", f"--socket={sock}", f"--port={port}",
                                "--bind-address=127.0.0.1", "--user=root", "--skip-name-resolve",
                                *([] if grant_tables else ["--skip-grant-tables"]),
                                f"--pid-file={base / 'mariadb.pid'}", "--innodb-buffer-pool-size=16M",
                                "--skip-log-bin", f"--log-error={base / 'error.log'}"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while True:
        try:
            pymysql.connect(unix_socket=str(sock), user="root").close()
            break
        except pymysql.err.OperationalError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                pytest.fail(f"MariaDB did not start: {(base / 'error.log').read_text()[-2000:]}")
            time.sleep(0.2)

    def stop():
        process.terminate()
        process.wait(30)

    return (lambda database, **options: pymysql.connect(unix_socket=str(sock), user="root", database=database,
                                                         **options)), port, stop


@pytest.fixture(scope="module")
def mariadb(tmp_path_factory):
    """A MariaDB server of its own (:func:`start_mariadb`), no grant tables; stopped at the end."""
    connect, _, stop = start_mariadb(Path(tmp_path_factory.mktemp("mariadb")))
    yield lambda database: connect(database)
    stop()


@pytest.mark.parametrize("case", [c for c in CASES if c not in NOT_IN_MARIADB])
def test_mariadb_agrees(mariadb, con, case):  # noqa: F811 - con is the shared fixture
    database = "case_" + "".join(ch if ch.isalnum() else "_" for ch in case)[:50]
    setup = mariadb(None)
    with setup.cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {database}")
        cursor.execute(f"CREATE DATABASE {database}")
    setup.close()
    connection = mariadb(database)      # autocommit on, as MySQL's default (PyMySQL turns it off)
    connection.autocommit(True)

    def execute(sql: str):
        with connection.cursor() as cursor:
            cursor.execute(sql)
            return cursor.rowcount, (list(cursor.fetchall()) if cursor.description else None)

    try:
        run_case(execute, CASES[case])          # the expectations hold on MariaDB ...
    finally:
        connection.close()
    try:
        run_case(canopy_executor(con), CASES[case])     # ... and on Canopy
    finally:
        con.session.rollback()
        con.session.set_autocommit(True)
