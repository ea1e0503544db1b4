"""An explicit CAST in a write under strict mode (Canopy's only mode), as MariaDB 10.11 does it (the
statement_effects case "CAST of text that is not a number in a write ..." runs the same statements on
MariaDB, ``-m mariadb``): the error the wire server sends carries MariaDB's code and SQLSTATE."""
import pytest

import engine
from engine.errors import BadDataError
from engine.server.errors import mysql_error


@pytest.mark.parametrize("sql, code, state, message", [
    ("INSERT INTO t VALUES (CAST('abc' AS SIGNED), NULL)", 1292, "22007", "Truncated incorrect INTEGER value: 'abc'"),
    ("INSERT INTO t SELECT CAST('2x' AS DOUBLE), NULL", 1292, "22007", "Truncated incorrect DOUBLE value: '2x'"),
    ("UPDATE t SET a = CAST('' AS UNSIGNED)", 1292, "22007", "Truncated incorrect INTEGER value: ''"),
    ("INSERT INTO t SELECT 1, CAST(1234.5 AS DECIMAL(5,2)) AS v", 1264, "22003",
     "Out of range value for column 'v' at row 1"),
    ("INSERT INTO t SELECT 1, CAST(1234.5 AS DECIMAL(5,2)) * 1", 1264, "22003",
     "Out of range value for column '(null)' at row 1"),
])
def test_a_strict_cast_error_has_mariadbs_code(sql, code, state, message):
    con = engine.connect()
    try:
        con.execute("CREATE TABLE t (a BIGINT, d DECIMAL(5,2))")
        con.execute("INSERT INTO t VALUES (1, 1)")
        with pytest.raises(BadDataError) as failed:
            con.execute(sql)
        assert mysql_error(failed.value) == (code, state, message)
        assert con.execute("SHOW WARNINGS").fetchall() == [("Error", str(code), message)]   # (its text column)
        assert con.execute("SELECT * FROM t").fetchall() == [(1, 1)]       # nothing written
    finally:
        con.close()
