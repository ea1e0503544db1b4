"""The statements of issue 16 (transactions, keys and upserts, views, SET) with the effect each must
have, as cases shared by two tests: ``test_statement_effects`` runs them on Canopy against the
expected rows written here, and ``test_mariadb_oracle`` (marker ``mariadb``) runs them on MariaDB and
on Canopy and compares the two, which is what keeps the expectations here honest.

A case is a list of steps on a fresh database:
* ``"SQL"``: a statement that must succeed;
* ``("SQL", ERROR)``: a statement that must fail (IntegrityError for a duplicate key);
  ``("SQL", ERROR, "fragment")``: and its message must contain ``fragment``;
* ``("SQL", ROWCOUNT, n)``: a statement whose affected-row count must be ``n``;
* ``(QUERY, "SELECT ...", rows)``: a query and the rows it must return, in order.
Only SQL that MySQL, MariaDB and Canopy all accept is used (every table's unique keys contain its
primary key, which Canopy shards by).
"""
from __future__ import annotations

from decimal import Decimal as D

ERROR, ROWCOUNT, QUERY = "error", "rowcount", "query"

T = "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))"
T_ROWS = "INSERT INTO t VALUES (1, 'a'), (2, 'b')"
ALL = "SELECT id, v FROM t ORDER BY id"

CASES: dict[str, list] = {
    "rollback undoes a delete": [T, T_ROWS, "BEGIN", "DELETE FROM t", (QUERY, ALL, []), "ROLLBACK",
                                 (QUERY, ALL, [(1, "a"), (2, "b")])],
    "commit keeps every write": [T, T_ROWS, "START TRANSACTION", "INSERT INTO t VALUES (3, 'c')",
                                 "UPDATE t SET v = 'B' WHERE id = 2", "DELETE FROM t WHERE id = 1", "COMMIT",
                                 (QUERY, ALL, [(2, "B"), (3, "c")])],
    "autocommit off then rollback": [T, T_ROWS, "SET autocommit = 0", "INSERT INTO t VALUES (3, 'c')",
                                     "ROLLBACK", "SET autocommit = 1", (QUERY, ALL, [(1, "a"), (2, "b")])],
    "SET autocommit = 1 commits": [T, "SET autocommit = 0", "INSERT INTO t VALUES (3, 'c')",
                                   "SET autocommit = 1", "ROLLBACK", (QUERY, ALL, [(3, "c")])],
    "DDL commits implicitly": [T, "BEGIN", "INSERT INTO t VALUES (5, 'e')", "CREATE TABLE other (x INT)",
                               "ROLLBACK", (QUERY, ALL, [(5, "e")])],
    "a failed statement keeps the transaction": [
        T, T_ROWS, "BEGIN", "INSERT INTO t VALUES (3, 'c')", ("INSERT INTO t VALUES (1, 'dup')", ERROR),
        "COMMIT", (QUERY, ALL, [(1, "a"), (2, "b"), (3, "c")])],
    "duplicate primary key": [T, T_ROWS, ("INSERT INTO t VALUES (3, 'c'), (1, 'x')", ERROR),
                              ("INSERT INTO t VALUES (4, 'c'), (4, 'x')", ERROR),
                              ("UPDATE t SET id = 1 WHERE id = 2", ERROR), (QUERY, ALL, [(1, "a"), (2, "b")])],
    "unique key, NULLs never collide": [
        "CREATE TABLE u (a INT, b INT, c INT, PRIMARY KEY (a), UNIQUE KEY ab (a, b))",
        "INSERT INTO u VALUES (1, NULL, 1)", ("INSERT INTO u VALUES (1, 5, 2)", ERROR),
        (QUERY, "SELECT a, b, c FROM u", [(1, None, 1)])],
    "INSERT IGNORE": [T, T_ROWS, ("INSERT IGNORE INTO t VALUES (1, 'x'), (3, 'c'), (3, 'y')", ROWCOUNT, 1),
                      (QUERY, "SHOW WARNINGS", [("Warning", 1062, "Duplicate entry '1' for key 'PRIMARY'"),
                                                ("Warning", 1062, "Duplicate entry '3' for key 'PRIMARY'")]),
                      (QUERY, ALL, [(1, "a"), (2, "b"), (3, "c")])],
    "REPLACE": [T, T_ROWS, ("REPLACE INTO t VALUES (2, 'B'), (3, 'c')", ROWCOUNT, 3),
                ("REPLACE t (id, v) VALUES (9, 'z')", ROWCOUNT, 1),
                (QUERY, ALL, [(1, "a"), (2, "B"), (3, "c"), (9, "z")])],
    "ON DUPLICATE KEY UPDATE with VALUES()": [
        "CREATE TABLE c (k INT PRIMARY KEY, n INT)", "INSERT INTO c VALUES (1, 10)",
        ("INSERT INTO c VALUES (1, 5), (2, 7) ON DUPLICATE KEY UPDATE n = n + VALUES(n)", ROWCOUNT, 3),
        ("INSERT INTO c VALUES (2, 0) ON DUPLICATE KEY UPDATE n = n", ROWCOUNT, 0),
        (QUERY, "SELECT k, n FROM c ORDER BY k", [(1, 15), (2, 7)])],
    "ON DUPLICATE KEY UPDATE with a row alias": [
        "CREATE TABLE c (k INT PRIMARY KEY, n INT)", "INSERT INTO c VALUES (1, 10)",
        ("INSERT INTO c VALUES (1, 5) AS new ON DUPLICATE KEY UPDATE n = c.n * new.n", ROWCOUNT, 2),
        (QUERY, "SELECT k, n FROM c ORDER BY k", [(1, 50)])],
    "AUTO_INCREMENT and LAST_INSERT_ID()": [
        "CREATE TABLE a (id BIGINT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(5))",
        "INSERT INTO a (v) VALUES ('x'), ('y')", (QUERY, "SELECT LAST_INSERT_ID()", [(1,)]),
        "INSERT INTO a VALUES (NULL, 'z'), (10, 'ten')", (QUERY, "SELECT LAST_INSERT_ID()", [(3,)]),
        "INSERT INTO a (v) VALUES ('w')", (QUERY, "SELECT LAST_INSERT_ID()", [(11,)]),
        (QUERY, "SELECT id, v FROM a ORDER BY id", [(1, "x"), (2, "y"), (3, "z"), (10, "ten"), (11, "w")])],
    "views": [
        "CREATE TABLE s (id INT PRIMARY KEY, g VARCHAR(5), n INT)",
        "INSERT INTO s VALUES (1, 'a', 1), (2, 'a', 2), (3, 'b', 5)",
        "CREATE VIEW per_g AS SELECT g, SUM(n) AS total FROM s GROUP BY g",
        (QUERY, "SELECT g, total FROM per_g WHERE g = 'a'", [("a", 3)]),
        "CREATE OR REPLACE VIEW per_g (grp, biggest) AS SELECT g, MAX(n) FROM s GROUP BY g",
        (QUERY, "SELECT grp, biggest FROM per_g ORDER BY grp", [("a", 2), ("b", 5)]),
        "DROP VIEW per_g", ("SELECT * FROM per_g", ERROR)],
    "a view sees the transaction's writes": [
        T, T_ROWS, "CREATE VIEW big AS SELECT id FROM t WHERE id > 1", "BEGIN", "INSERT INTO t VALUES (7, 'g')",
        (QUERY, "SELECT id FROM big ORDER BY id", [(2,), (7,)]), "ROLLBACK",
        (QUERY, "SELECT id FROM big ORDER BY id", [(2,)])],
    "ALTER TABLE": [
        T, T_ROWS, "ALTER TABLE t ADD COLUMN n INT DEFAULT 7, ADD COLUMN f INT FIRST",
        "ALTER TABLE t CHANGE v w VARCHAR(10)", "ALTER TABLE t MODIFY COLUMN n BIGINT",
        "ALTER TABLE t RENAME COLUMN n TO m", "ALTER TABLE t DROP COLUMN f",
        (QUERY, "SELECT id, w, m FROM t ORDER BY id", [(1, "a", 7), (2, "b", 7)]),
        ("INSERT INTO t VALUES (1, 'x', 0)", ERROR)],
    "RENAME TABLE": [T, T_ROWS, "CREATE TABLE other (x INT)", "RENAME TABLE t TO t2, other TO t",
                     (QUERY, "SELECT id, v FROM t2 ORDER BY id", [(1, "a"), (2, "b")]),
                     (QUERY, "SELECT x FROM t", []), "ALTER TABLE t2 RENAME TO t3",
                     (QUERY, "SELECT COUNT(*) FROM t3", [(2,)])],
    "savepoints": [T, T_ROWS, "BEGIN", "DELETE FROM t WHERE id = 1", "SAVEPOINT a",
                   "INSERT INTO t VALUES (3, 'c')", "SAVEPOINT b", "UPDATE t SET v = 'z'", "ROLLBACK TO SAVEPOINT b",
                   (QUERY, ALL, [(2, "b"), (3, "c")]), "ROLLBACK TO a", ("ROLLBACK TO SAVEPOINT b", ERROR),
                   "RELEASE SAVEPOINT a", "COMMIT", (QUERY, ALL, [(2, "b")])],
    # issue 14 / 16: MySQL's integer ranges, UNSIGNED, text read as a number
    "integer columns hold their declared range": [
        "CREATE TABLE n (id INT PRIMARY KEY, a TINYINT UNSIGNED, b INT UNSIGNED, c BIGINT UNSIGNED, "
        "d MEDIUMINT, e SMALLINT UNSIGNED)",
        "INSERT INTO n VALUES (1, 255, 4294967295, 18446744073709551615, 8388607, 65535), (2, 0, 0, 0, -8388608, 0)",
        ("INSERT INTO n (id, a) VALUES (3, 1), (4, -1)", ERROR, "Out of range value for column 'a' at row 2"),
        ("INSERT INTO n (id, a) VALUES (3, 256)", ERROR, "Out of range value for column 'a' at row 1"),
        ("INSERT INTO n (id, b) VALUES (3, 4294967296)", ERROR, "Out of range value for column 'b'"),
        ("INSERT INTO n (id, b) VALUES (3, '-1')", ERROR, "Out of range value for column 'b'"),
        ("INSERT INTO n (id, c) VALUES (3, -1)", ERROR, "Out of range value for column 'c'"),
        ("INSERT INTO n (id, c) VALUES (3, 18446744073709551616)", ERROR, "Out of range value for column 'c'"),
        ("INSERT INTO n (id, d) VALUES (3, 8388608)", ERROR, "Out of range value for column 'd'"),
        ("INSERT INTO n (id, e) VALUES (3, 65536)", ERROR, "Out of range value for column 'e'"),
        ("UPDATE n SET a = a + 1", ERROR, "Out of range value for column 'a'"),
        ("UPDATE n SET b = b - 1", ERROR, "BIGINT UNSIGNED value is out of range"),
        ("UPDATE n SET e = d", ERROR, "Out of range value for column 'e'"),
        ("INSERT INTO n (id, b) SELECT id + 10, d FROM n", ERROR, "Out of range value for column 'b'"),
        "UPDATE n SET b = b - 1 WHERE b > 0",
        (QUERY, "SELECT id, a, b, c, d, e FROM n ORDER BY id",
         [(1, 255, 4294967294, 18446744073709551615, 8388607, 65535), (2, 0, 0, 0, -8388608, 0)])],
    "CAST AS UNSIGNED and SIGNED": [
        (QUERY, "SELECT CAST(-1 AS UNSIGNED), CAST(-9223372036854775808 AS UNSIGNED), CAST('abc' AS UNSIGNED), "
                "CAST('-1' AS UNSIGNED), CAST(' 12x' AS UNSIGNED), CAST(-1.5 AS UNSIGNED), CAST(1.5 AS UNSIGNED), "
                "CAST(2.5e0 AS UNSIGNED), CAST(1e20 AS UNSIGNED), CAST(18446744073709551616 AS UNSIGNED)",
         [(18446744073709551615, 9223372036854775808, 0, 18446744073709551615, 12, 0, 2, 2,
           18446744073709551615, 18446744073709551615)]),
        (QUERY, "SELECT CAST(18446744073709551615 AS SIGNED), CAST(CAST(-5 AS UNSIGNED) AS SIGNED), "
                "-CAST(1 AS UNSIGNED), CAST('12.7x' AS SIGNED), CAST('abc' AS SIGNED)", [(-1, -5, -1, 12, 0)])],
    "a DOUBLE becomes an integer half to even, an exact value half away": [
        (QUERY, "SELECT CAST(2.5e0 AS SIGNED), CAST(3.5e0 AS SIGNED), CAST(-2.5e0 AS SIGNED), CAST(0.5e0 AS SIGNED), "
                "CAST(2.5 AS SIGNED), CAST(-2.5 AS SIGNED), CAST(2.5e0 AS DECIMAL(5,0))", [(2, 4, -2, 0, 3, -3, 3)]),
        "CREATE TABLE r (id INT PRIMARY KEY, i INT, u INT UNSIGNED, d DECIMAL(5,0))",
        "INSERT INTO r VALUES (1, 2.5e0, 2.5e0, 2.5e0), (2, 3.5e0, 0.5e0, -2.5e0)",
        "INSERT INTO r VALUES (4, 2.5, 2.5, '2.5'), (5, -2.5, 3.5, '-2.5')",
        (QUERY, "SELECT id, i, u, d FROM r ORDER BY id", [(1, 2, 2, 3), (2, 4, 0, -3), (4, 3, 3, 3), (5, -3, 4, -3)]),
        ("INSERT INTO r VALUES (6, 1, 1, 1), (7, '12abc', 1, 1)", ERROR),         # no lenient reading in a write
        (QUERY, "SELECT COUNT(*) FROM r", [(4,)])],
    # issue 16: a CAST past SIGNED's or DECIMAL(p, s)'s range clips with MariaDB's warnings in a query;
    # in a write (strict mode) what MariaDB warns of with a Warning fails, a Note does not
    "CAST past its type's range: clipped in a query, an error in a write": [
        (QUERY, "SELECT CAST(99999999999999999999 AS SIGNED), CAST(-99999999999999999999.5 AS SIGNED)",
         [(9223372036854775807, -9223372036854775808)]),
        (QUERY, "SHOW WARNINGS",
         [("Warning", 1916, "Got overflow when converting '99999999999999999999' to INT. Value truncated"),
          ("Warning", 1916, "Got overflow when converting '-99999999999999999999.5' to INT. Value truncated")]),
        (QUERY, "SELECT CAST(1e30 AS SIGNED), CAST(-2.5e30 AS SIGNED)", [(9223372036854775807, -9223372036854775808)]),
        (QUERY, "SHOW WARNINGS",
         [("Note", 1916, "Got overflow when converting '1e30' to SIGNED BIGINT. Value truncated"),
          ("Note", 1916, "Got overflow when converting '-2.5e30' to SIGNED BIGINT. Value truncated")]),
        (QUERY, "SELECT CAST('-99999999999999999999' AS SIGNED), CAST('18446744073709551616' AS SIGNED), "
                "CAST('9223372036854775808' AS SIGNED)", [(-9223372036854775808, -1, -9223372036854775808)]),
        (QUERY, "SHOW WARNINGS",
         [("Warning", 1292, "Truncated incorrect INTEGER value: '-99999999999999999999'"),
          ("Warning", 1292, "Truncated incorrect INTEGER value: '18446744073709551616'"),
          ("Note", 1105, "Cast to signed converted positive out-of-range integer to it's negative complement")]),
        (QUERY, "SELECT CAST(123.456 AS DECIMAL(4,2)), CAST(-1e30 AS DECIMAL(5,1)), CAST('123456' AS DECIMAL(4,2)), "
                "CAST(99.999 AS DECIMAL(4,2)), CAST(9.999 AS DECIMAL(4,2))",
         [(D("99.99"), D("-9999.9"), D("99.99"), D("99.99"), D("10.00"))]),
        "CREATE TABLE w (id INT PRIMARY KEY, x DECIMAL(10,2), y BIGINT, v VARCHAR(10))",
        ("INSERT INTO w VALUES (1, CAST(123.456 AS DECIMAL(4,2)), 1, 'a')", ERROR, "Out of range value"),
        ("INSERT INTO w SELECT 1, 1, CAST(99999999999999999999 AS SIGNED), 'a'", ERROR, "Got overflow"),
        ("INSERT INTO w SELECT 1, 1, CAST('-99999999999999999999' AS SIGNED), 'a'", ERROR,
         "Truncated incorrect INTEGER value"),
        "INSERT INTO w SELECT 1, 1, CAST(1e30 AS SIGNED), '1'",
        "INSERT INTO w SELECT 2, 2, CAST('9223372036854775808' AS SIGNED), 'abc'",
        "INSERT INTO w VALUES (3, 3, 3, '7')",
        ("UPDATE w SET x = CAST(y AS DECIMAL(4,2))", ERROR),
        ("CREATE TABLE w2 AS SELECT CAST(123.456 AS DECIMAL(4,2)) AS x", ERROR),
        (QUERY, "SELECT id, x, y FROM w ORDER BY id",
         [(1, D("1.00"), 9223372036854775807), (2, D("2.00"), -9223372036854775808), (3, D("3.00"), 3)]),
        # x BETWEEN a AND b reads x once: one warning for the one bad text
        (QUERY, "SELECT id FROM w WHERE v BETWEEN 0 AND 2 ORDER BY id", [(1,), (2,)]),
        (QUERY, "SHOW WARNINGS", [("Warning", 1292, "Truncated incorrect DECIMAL value: 'abc'")])],
    # issue 14: MariaDB's strict mode on an explicit CAST in a write: text that is not a number in full
    # (a Warning 1292 in a query, 0 or its leading number) fails INSERT, INSERT ... SELECT, UPDATE and
    # CREATE TABLE ... AS with that message (code 1292); surrounding spaces stay a Note; INSERT IGNORE
    # keeps the value and the Warning. The 1264 of a CAST past DECIMAL's range names the select list
    # item: its alias, '(null)' when the CAST is inside an expression, the CAST where it is the item
    "CAST of text that is not a number in a write, and the column a 1264 names": [
        "CREATE TABLE k (id INT, a BIGINT, d DECIMAL(5,2))",
        (QUERY, "SELECT CAST('abc' AS SIGNED), CAST('12abc' AS UNSIGNED)", [(0, 12)]),
        (QUERY, "SHOW WARNINGS", [("Warning", 1292, "Truncated incorrect INTEGER value: 'abc'"),
                                  ("Warning", 1292, "Truncated incorrect INTEGER value: '12abc'")]),
        ("INSERT INTO k (id, a) VALUES (1, CAST('abc' AS SIGNED))", ERROR, "Truncated incorrect INTEGER value: 'abc'"),
        (QUERY, "SHOW WARNINGS", [("Error", 1292, "Truncated incorrect INTEGER value: 'abc'")]),
        ("INSERT INTO k (id, a) VALUES (1, CAST('12abc' AS UNSIGNED))", ERROR,
         "Truncated incorrect INTEGER value: '12abc'"),
        ("INSERT INTO k (id, a) SELECT 1, CAST('1.5' AS SIGNED)", ERROR, "Truncated incorrect INTEGER value: '1.5'"),
        ("INSERT INTO k (id, d) VALUES (1, CAST('x1' AS DECIMAL(5,2)))", ERROR,
         "Truncated incorrect DECIMAL value: 'x1'"),
        ("INSERT INTO k (id, a) VALUES (1, CAST('' AS DOUBLE))", ERROR, "Truncated incorrect DOUBLE value: ''"),
        ("CREATE TABLE k2 AS SELECT CAST('abc' AS SIGNED) AS v", ERROR, "Truncated incorrect INTEGER value: 'abc'"),
        "INSERT INTO k (id, a) SELECT 1, CAST(' 8 ' AS SIGNED)",
        (QUERY, "SHOW WARNINGS", [("Note", 1292, "Truncated incorrect INTEGER value: ' 8 '")]),
        ("UPDATE k SET a = CAST('abc' AS SIGNED)", ERROR, "Truncated incorrect INTEGER value: 'abc'"),
        "INSERT IGNORE INTO k (id, a) SELECT 2, CAST('7x' AS SIGNED)",
        (QUERY, "SHOW WARNINGS", [("Warning", 1292, "Truncated incorrect INTEGER value: '7x'")]),
        (QUERY, "SELECT id, a FROM k ORDER BY id", [(1, 8), (2, 7)]),
        (QUERY, "SELECT CAST(1234.5 AS DECIMAL(5,2)) AS v", [(D("999.99"),)]),
        (QUERY, "SHOW WARNINGS", [("Warning", 1264, "Out of range value for column 'v' at row 1")]),
        (QUERY, "SELECT CAST(1234.5 AS DECIMAL(5,2)) + 0 AS w", [(D("999.99"),)]),
        (QUERY, "SHOW WARNINGS", [("Warning", 1264, "Out of range value for column '(null)' at row 1")]),
        (QUERY, "SELECT v FROM (SELECT CAST(1234 AS DECIMAL(3,1)) AS v) q", [(D("99.9"),)]),
        (QUERY, "SHOW WARNINGS", [("Warning", 1264, "Out of range value for column 'v' at row 1")]),
        ("INSERT INTO k (id, d) SELECT 3, CAST(1234.5 AS DECIMAL(5,2)) AS v", ERROR,
         "Out of range value for column 'v' at row 1"),
        ("INSERT INTO k (id, d) VALUES (3, CAST(1234.5 AS DECIMAL(5,2)))", ERROR,
         "Out of range value for column 'CAST(1234.5 AS DECIMAL(5,2))' at row 1"),
        (QUERY, "SHOW WARNINGS", [("Error", 1264, "Out of range value for column 'CAST(1234.5 AS DECIMAL(5,2))' at row 1")])],
    # issue 16: text in an IN list read as a number warns as MariaDB: beside integers (a DECIMAL reading)
    # once per row that reaches it (no earlier value matched; a row's warnings in list order), beside a
    # DOUBLE once (converted once)
    "text in an IN list warns per row that reaches it": [
        "CREATE TABLE m (id INT PRIMARY KEY, f DOUBLE)", "INSERT INTO m VALUES (1, 1.5), (2, 2.5), (3, NULL)",
        (QUERY, "SELECT id FROM m WHERE id IN (1, 'x2', 3) ORDER BY id", [(1,), (3,)]),
        (QUERY, "SHOW WARNINGS", [("Warning", 1292, "Truncated incorrect DECIMAL value: 'x2'")] * 2),
        (QUERY, "SELECT id FROM m WHERE id NOT IN ('a', 'b', 2) ORDER BY id", [(1,), (3,)]),
        (QUERY, "SHOW WARNINGS", [("Warning", 1292, f"Truncated incorrect DECIMAL value: '{c}'") for c in "ababab"]),
        (QUERY, "SELECT id FROM m WHERE f IN (1.5, 'zz') ORDER BY id", [(1,)]),
        (QUERY, "SHOW WARNINGS", [("Warning", 1292, "Truncated incorrect DOUBLE value: 'zz'")])],
    "unsigned arithmetic": [
        "CREATE TABLE n (id INT PRIMARY KEY, a BIGINT UNSIGNED, b INT UNSIGNED, c INT)",
        "INSERT INTO n VALUES (1, 18446744073709551615, 4294967295, -5), (2, 1, 0, 5)",
        (QUERY, "SELECT a - 1, b * 2, b + c, b / 2 FROM n WHERE id = 1",
         [(18446744073709551614, 8589934590, 4294967290, "2147483647.5000")]),
        ("SELECT a + 1 FROM n", ERROR, "BIGINT UNSIGNED value is out of range"),
        ("SELECT b - c FROM n", ERROR, "BIGINT UNSIGNED value is out of range"),
        ("SELECT a * 2 FROM n", ERROR, "BIGINT UNSIGNED value is out of range"),
        ("SELECT CAST(1 AS UNSIGNED) - 2", ERROR, "BIGINT UNSIGNED value is out of range"),
        ("SELECT 18446744073709551615 + 1", ERROR, "BIGINT UNSIGNED value is out of range"),
        ("SELECT 9223372036854775807 + 1", ERROR, "BIGINT value is out of range"),
        (QUERY, "SELECT COUNT(*) FROM n WHERE b > -1 AND a <> -1", [(2,)])],
    "text compared with and added to numbers": [
        "CREATE TABLE s (id INT PRIMARY KEY, v VARCHAR(10))",
        "INSERT INTO s VALUES (1, 'abc'), (2, '12abc'), (3, ' 7'), (4, NULL), (5, '-1.5e1x')",
        (QUERY, "SELECT id FROM s WHERE v = 0", [(1,)]),
        (QUERY, "SELECT id FROM s WHERE v = 12", [(2,)]),
        (QUERY, "SELECT id FROM s WHERE v < 1 ORDER BY id", [(1,), (5,)]),
        (QUERY, "SELECT id, v + 1 FROM s ORDER BY id", [(1, 1.0), (2, 13.0), (3, 8.0), (4, None), (5, -14.0)]),
        ("INSERT INTO s VALUES ('abc', 'x')", ERROR, "Incorrect integer value: 'abc'"),
        ("INSERT INTO s VALUES ('12abc', 'x')", ERROR),
        ("UPDATE s SET v = 'z' WHERE v = 0", ERROR),              # strict mode: no lenient reading in an UPDATE
        ("UPDATE s SET id = id + 10 WHERE id = 1", ROWCOUNT, 1),
        (QUERY, "SELECT id, v FROM s WHERE id > 10", [(11, "abc")])],
    "ON DUPLICATE KEY UPDATE, new rows sharing a key apply in order": [
        "CREATE TABLE c (k INT PRIMARY KEY, n INT)", "INSERT INTO c VALUES (2, 100)",
        ("INSERT INTO c VALUES (1, 1), (1, 2) ON DUPLICATE KEY UPDATE n = n + 10", ROWCOUNT, 3),
        ("INSERT INTO c VALUES (1, 5), (2, 1), (1, 7), (2, 2), (1, 1) ON DUPLICATE KEY UPDATE n = n * 2 + VALUES(n)",
         ROWCOUNT, 10),
        ("INSERT INTO c VALUES (3, 1), (3, 1) ON DUPLICATE KEY UPDATE n = n", ROWCOUNT, 1),
        (QUERY, "SELECT k, n FROM c ORDER BY k", [(1, 123), (2, 404), (3, 1)])],
    "SET sql_mode and time_zone": [
        "SET sql_mode = 'NO_ENGINE_SUBSTITUTION,strict_trans_tables'",
        (QUERY, "SELECT @@sql_mode", [("STRICT_TRANS_TABLES,NO_ENGINE_SUBSTITUTION",)]),
        "SET SESSION sql_mode = 'ERROR_FOR_DIVISION_BY_ZERO,STRICT_ALL_TABLES,ONLY_FULL_GROUP_BY'",
        (QUERY, "SELECT @@session.sql_mode", [("ONLY_FULL_GROUP_BY,STRICT_ALL_TABLES,ERROR_FOR_DIVISION_BY_ZERO",)]),
        ("SET sql_mode = 'NO_SUCH_MODE'", ERROR),
        "SET time_zone = '+00:00'", (QUERY, "SELECT @@time_zone", [("+00:00",)]),
        "SET time_zone = 'SYSTEM'", "SET sql_mode = DEFAULT"],
    "division by 0 in INSERT and UPDATE (strict mode)": [
        "CREATE TABLE d (id INT PRIMARY KEY, a INT, b INT)", "INSERT INTO d VALUES (1, 1, 0), (2, NULL, 0)",
        ("INSERT INTO d VALUES (3, 1 / 0, 1)", ERROR, "Division by 0"),
        ("INSERT INTO d VALUES (3, 5 DIV 0, 1)", ERROR, "Division by 0"),
        ("INSERT INTO d VALUES (3, MOD(5, 0), 1)", ERROR, "Division by 0"),
        ("INSERT INTO d SELECT id + 10, a / b, b FROM d", ERROR, "Division by 0"),
        ("UPDATE d SET a = 7 WHERE a / b > 0", ERROR, "Division by 0"),
        "UPDATE d SET a = a / b WHERE id = 2",                      # NULL / 0 is NULL, no error
        ("DELETE FROM d WHERE a / b > 0", ROWCOUNT, 0),               # a DELETE reads x / 0 as NULL
        (QUERY, "SELECT id, a / b FROM d ORDER BY id", [(1, None), (2, None)]),
        "SET sql_mode = 'STRICT_TRANS_TABLES'",                      # without ERROR_FOR_DIVISION_BY_ZERO
        "INSERT INTO d VALUES (3, 1 / 0, 1)", "SET sql_mode = DEFAULT",
        (QUERY, "SELECT id, a FROM d ORDER BY id", [(1, 1), (2, None), (3, None)])],
}
