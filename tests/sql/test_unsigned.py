"""UNSIGNED integers as MySQL has them: each width's declared range checked where values enter a column
(INSERT, INSERT ... SELECT, UPDATE, LOAD DATA, Arrow loads), CAST(... AS UNSIGNED) wrapping and clipping,
BIGINT UNSIGNED arithmetic out of range an error, and result columns that say UNSIGNED. Expected values
are computed in Python from MySQL's rules; tests/sql/test_mariadb_oracle.py runs the same cases on MariaDB.
Runs on both runners (CANOPY_RUNNER=ray)."""
from __future__ import annotations

from decimal import Decimal

import pyarrow as pa
import pytest

import engine
from engine import errors

# (SQL type, smallest, largest): MySQL's declared ranges
WIDTHS = [
    ("TINYINT", -2**7, 2**7 - 1), ("SMALLINT", -2**15, 2**15 - 1), ("MEDIUMINT", -2**23, 2**23 - 1),
    ("INT", -2**31, 2**31 - 1), ("BIGINT", -2**63, 2**63 - 1),
    ("TINYINT UNSIGNED", 0, 2**8 - 1), ("SMALLINT UNSIGNED", 0, 2**16 - 1),
    ("MEDIUMINT UNSIGNED", 0, 2**24 - 1), ("INT UNSIGNED", 0, 2**32 - 1), ("BIGINT UNSIGNED", 0, 2**64 - 1),
]


@pytest.fixture
def con(tmp_path):
    with engine.connect(load_dir=str(tmp_path)) as connection:
        yield connection


def one(con, sql):
    return con.execute(sql).fetchall()


@pytest.mark.parametrize("sql_type, low, high", WIDTHS, ids=[w[0] for w in WIDTHS])
def test_each_width_holds_its_range_and_refuses_one_past_it(con, tmp_path, sql_type, low, high):
    con.execute(f"CREATE TABLE t (id INT, v {sql_type})")
    con.execute(f"INSERT INTO t VALUES (1, {low}), (2, {high})")
    assert [int(v) for _, v in one(con, "SELECT id, v FROM t ORDER BY id")] == [low, high]
    for bad in (low - 1, high + 1):
        with pytest.raises(errors.DataError, match="Out of range value for column 'v' at row 2"):
            con.execute(f"INSERT INTO t VALUES (3, 0), (4, {bad})")
        with pytest.raises(errors.DataError, match="Out of range value for column 'v' at row 1"):
            con.execute(f"INSERT INTO t (id, v) VALUES (5, '{bad}')")          # text converted, then checked
        path = tmp_path / "bad.csv"
        path.write_text(f"6,1\n7,{bad}\n")
        with pytest.raises(errors.DataError, match="line 2, column 'v': Out of range value"):
            con.execute(f"LOAD DATA INFILE '{path}' INTO TABLE t FIELDS TERMINATED BY ','")
        arrow = pa.table({"id": pa.array([8], pa.int32()), "v": pa.array([Decimal(bad)], pa.decimal128(38, 0))})
        with pytest.raises(errors.DataError, match="Out of range value"):
            con.load_table("t", arrow)
    assert one(con, "SELECT COUNT(*) FROM t") == [(2,)]          # nothing of a refused statement


def test_update_and_insert_select_are_checked(con):
    con.execute("CREATE TABLE u (a INT UNSIGNED, b INT, c TINYINT UNSIGNED)")
    con.execute("INSERT INTO u VALUES (4294967295, -3, 255), (0, 3, 0)")
    with pytest.raises(errors.DataError, match="Out of range value for column 'a'"):
        con.execute("UPDATE u SET a = b WHERE b < 0")
    with pytest.raises(errors.DataError, match="Out of range value for column 'c'"):
        con.execute("UPDATE u SET c = c + 1")               # 256 does not fit TINYINT UNSIGNED
    with pytest.raises(errors.DataError, match="Out of range value for column 'a'"):
        con.execute("INSERT INTO u SELECT a + 1, b, c FROM u WHERE a > 0")
    with pytest.raises(errors.DataError, match="BIGINT UNSIGNED value is out of range"):
        con.execute("UPDATE u SET a = a - 1")               # 0 - 1: the arithmetic itself fails
    con.execute("UPDATE u SET a = a - 1 WHERE a > 0")
    assert sorted(one(con, "SELECT a, b, c FROM u")) == [(0, 3, 0), (4294967294, -3, 255)]


def _mysql_unsigned(value):
    """MySQL's CAST(value AS UNSIGNED) of an integer: modulo 2^64."""
    return value % 2**64


@pytest.mark.parametrize("value", [-1, 0, 1, -2**63, 2**63 - 1, -12345, 2**63, 2**64 - 1])
def test_cast_integer_to_unsigned_wraps(con, value):
    [(got,)] = one(con, f"SELECT CAST({value} AS UNSIGNED)")
    assert int(got) == _mysql_unsigned(value)
    [(back,)] = one(con, f"SELECT CAST(CAST({value} AS UNSIGNED) AS SIGNED)")      # and back
    assert back == (value if -2**63 <= value < 2**63 else value - 2**64)


def test_cast_to_unsigned_of_columns_follows_each_source_type(con):
    con.execute("CREATE TABLE s (id INT, i BIGINT, d DECIMAL(25,2), f DOUBLE, t VARCHAR(40))")
    con.execute("INSERT INTO s VALUES (1, -1, -1.50, -2.5, '12abc'), (2, 7, 1.50, 2.5, 'abc'), "
                "(3, -9223372036854775808, 99999999999999999999999.00, 1e20, ' -1'), "
                "(4, NULL, NULL, NULL, '18446744073709551616'), (5, 3, 2.49, 3.5, '-1.5')")
    got = one(con, "SELECT CAST(i AS UNSIGNED), CAST(d AS UNSIGNED), CAST(f AS UNSIGNED), CAST(t AS UNSIGNED) "
                   "FROM s ORDER BY id")
    top = 2**64 - 1
    # integers wrap; DECIMAL rounds half away and clips to 0 .. 2^64-1; DOUBLE rounds half to even and
    # clips; text reads its leading integer (0 without one), wraps a negative one, clips a larger one
    expected = [(top, 0, 0, 12), (7, 2, 2, 0), (2**63, top, top, top), (None, None, None, top), (3, 2, 4, top)]
    assert [tuple(None if v is None else int(v) for v in r) for r in got] == expected


def test_unsigned_arithmetic(con):
    con.execute("CREATE TABLE n (a BIGINT UNSIGNED, b INT UNSIGNED, c INT)")
    con.execute("INSERT INTO n VALUES (18446744073709551615, 4294967295, -5), (1, 0, 5)")
    assert one(con, "SELECT a - 1, b * 2, b + c FROM n WHERE c = -5") == [
        (2**64 - 2, 2 * (2**32 - 1), 2**32 - 1 - 5)]
    for sql in ("SELECT a + 1 FROM n", "SELECT b - 1 FROM n", "SELECT a * 2 FROM n", "SELECT b - c FROM n",
                "SELECT CAST(1 AS UNSIGNED) - 2", "SELECT 18446744073709551615 + 1"):
        with pytest.raises(errors.DataError, match="BIGINT UNSIGNED value is out of range"):
            con.execute(sql)
    # MySQL: division and unary minus leave the unsigned domain
    assert one(con, "SELECT b / 2, -b FROM n WHERE c = 5") == [(Decimal("0.0000"), 0)]
    assert one(con, "SELECT -CAST(1 AS UNSIGNED), CAST(5 AS UNSIGNED) / 2") == [(-1, Decimal("2.5000"))]


def test_comparisons_with_negative_constants(con):
    con.execute("CREATE TABLE c (a INT UNSIGNED, b BIGINT UNSIGNED)")
    con.execute("INSERT INTO c VALUES (0, 0), (5, 18446744073709551615)")
    assert one(con, "SELECT COUNT(*) FROM c WHERE a > -1") == [(2,)]
    assert one(con, "SELECT COUNT(*) FROM c WHERE b = -1") == [(0,)]              # not wrapped to 2^64-1
    assert one(con, "SELECT COUNT(*) FROM c WHERE b = 18446744073709551615") == [(1,)]


def test_result_types_say_unsigned(con):
    con.execute("CREATE TABLE r (a TINYINT UNSIGNED, b INT UNSIGNED, c BIGINT UNSIGNED, d INT)")
    cur = con.execute("SELECT a, b, c, d, b + 1, CAST(d AS UNSIGNED), -b FROM r")
    assert [d[1] for d in cur.description] == ["TINYINT UNSIGNED", "INT UNSIGNED", "BIGINT UNSIGNED", "INT",
                                               "BIGINT UNSIGNED", "BIGINT UNSIGNED", "BIGINT"]
    assert cur.description[0][1] == engine.dbapi.NUMBER
    con.execute("INSERT INTO r VALUES (255, 4294967295, 18446744073709551615, -1)")
    [row] = one(con, "SELECT a, b, c, d FROM r")
    assert row == (255, 4294967295, 18446744073709551615, -1) and all(type(v) is int for v in row)
    assert con.execute("SELECT c FROM r").fetch_arrow_table().schema.field(0).type == pa.uint64()
    assert one(con, "SELECT column_name, data_type, column_type, numeric_precision FROM information_schema.columns "
                    "WHERE table_name = 'r' ORDER BY ordinal_position") == [
        ("a", "tinyint", "tinyint unsigned", 3), ("b", "int", "int unsigned", 10),
        ("c", "bigint", "bigint unsigned", 20), ("d", "int", "int", 10)]
    assert [r[1] for r in one(con, "DESCRIBE r")] == ["tinyint unsigned", "int unsigned", "bigint unsigned", "int"]


def test_wire_columns_carry_the_unsigned_flag_and_binary_values_their_bits(con):
    from mysql_mimic.types import ColumnDefinition, ColumnType

    from engine.server.results import binary_rows, wire_columns
    con.execute("CREATE TABLE w (a INT UNSIGNED, b BIGINT UNSIGNED, c INT)")
    con.execute("INSERT INTO w VALUES (4294967295, 18446744073709551615, -1)")
    result = con.session.execute("SELECT a, b, c FROM w")
    columns = wire_columns(result)
    assert [c.result_column.type for c in columns] == [ColumnType.LONG, ColumnType.LONGLONG, ColumnType.LONG]
    assert [bool(c.flags & ColumnDefinition.UNSIGNED_FLAG) for c in columns] == [True, True, False]
    # the binary protocol packs 4 and 8 bytes signed; the flag makes the client read them unsigned
    [(a, b, c)] = binary_rows(result.table, columns)
    assert (a % 2**32, b % 2**64, c) == (4294967295, 18446744073709551615, -1)
    assert -2**31 <= a < 2**31 and -2**63 <= b < 2**63


def test_default_out_of_range_is_refused(con):
    for ddl in ("CREATE TABLE d (x INT UNSIGNED DEFAULT -1)", "CREATE TABLE d (x TINYINT UNSIGNED DEFAULT 256)",
                "CREATE TABLE d (x BIGINT UNSIGNED DEFAULT -1)"):
        with pytest.raises(errors.DataError, match="DEFAULT of column 'x'"):
            con.execute(ddl)
