"""MariaDB as the oracle of the MySQL semantics of issues 14 / 16 / 18 left open (marker ``mariadb``:
``pytest -m mariadb``): the bit aggregates' BIGINT UNSIGNED results, the warnings of truncating text to
number conversions (SHOW WARNINGS, @@warning_count), and the error of a derived table that names an
outer column. The same statements run on a private MariaDB server and on Canopy."""
import pytest

import engine
from tests.sql.test_mariadb_oracle import mariadb  # noqa: F401 - the server fixture

pytestmark = pytest.mark.mariadb

SETUP = [
    "CREATE TABLE u (id INT, g INT, a BIGINT UNSIGNED, b BIGINT, s VARCHAR(20))",
    "INSERT INTO u VALUES (1, 1, 18446744073709551615, -1, '12x'), (2, 1, 9223372036854775808, 5, 'abc'), "
    "(3, 2, NULL, NULL, ' 7 '), (4, 2, 3, -9223372036854775808, '1.5e3'), (5, 3, 0, 6, NULL)",
]

BIT_QUERIES = [
    "SELECT BIT_AND(a), BIT_OR(a), BIT_XOR(a), BIT_AND(b), BIT_OR(b), BIT_XOR(b) FROM u",
    "SELECT g, BIT_AND(a), BIT_OR(b), BIT_XOR(b) FROM u GROUP BY g ORDER BY g",
    "SELECT BIT_AND(b), BIT_OR(b), BIT_XOR(b) FROM u WHERE id > 100",
    "SELECT g, BIT_OR(b) FROM u GROUP BY g WITH ROLLUP",
    "SELECT BIT_OR(-1), BIT_AND(id - 3), BIT_XOR(-id) FROM u",
]


@pytest.fixture(scope="module")
def both(mariadb):  # noqa: F811 - the imported fixture
    setup = mariadb(None)
    with setup.cursor() as cursor:
        cursor.execute("DROP DATABASE IF EXISTS compat")
        cursor.execute("CREATE DATABASE compat")
    setup.close()
    maria = mariadb("compat")
    maria.autocommit(True)
    canopy = engine.connect()
    canopy.execute("CREATE DATABASE compat")
    canopy.execute("USE compat")
    for con in (maria, canopy):
        cursor = con.cursor()
        for sql in SETUP:
            cursor.execute(sql)
    yield maria, canopy
    maria.close()
    canopy.close()


def _rows(con, sql):
    cursor = con.cursor()
    cursor.execute(sql)
    # (a comparison is a Python bool from Canopy's embedded API, an integer from MariaDB's driver)
    return [tuple(None if v is None else str(int(v) if isinstance(v, bool) else v) for v in r)
            for r in cursor.fetchall()]


@pytest.mark.parametrize("sql", BIT_QUERIES)
def test_bit_aggregates_agree(both, sql):
    maria, canopy = both
    assert sorted(_rows(canopy, sql), key=repr) == sorted(_rows(maria, sql), key=repr)


@pytest.mark.parametrize("sql", [
    "SELECT * FROM u, (SELECT * FROM u x WHERE x.id = u.id) d",       # a derived table cannot see its left
    "SELECT * FROM u, (SELECT u.id FROM u x) d",
    "SELECT zz FROM u",
    "SELECT 1 FROM u WHERE nope.id = 1",
    "SELECT 1 FROM u GROUP BY nope.id",
])
def test_unknown_column_errors_agree(both, sql):
    """MySQL's error 1054, "Unknown column 'u.id' in 'WHERE'", on both (Canopy's adds a suggestion)."""
    messages = []
    for con in both:
        with pytest.raises(Exception) as failure:
            con.cursor().execute(sql)
        messages.append(str(failure.value))
    maria, canopy = messages
    assert "1054" in maria
    assert canopy.split(";")[0].lower() in maria.lower(), (canopy, maria)


@pytest.mark.parametrize("sql", [
    "SELECT id, s + 0 FROM u ORDER BY id",
    "SELECT id, CAST(s AS SIGNED) FROM u ORDER BY id",
    "SELECT id, CAST(s AS UNSIGNED) FROM u ORDER BY id",
    "SELECT id, CAST(s AS DECIMAL(10,2)) FROM u ORDER BY id",
    "SELECT id, CAST(s AS DOUBLE) FROM u ORDER BY id",
    "SELECT '12x' + 1, CAST('abc' AS SIGNED), CAST('1.5e3' AS SIGNED), '' + 0, ' 7' + 0",
    "SELECT CAST('+4' AS SIGNED), CAST('+-4x' AS SIGNED), ' +5x' + 0",
    # text compared with integers is a 'DECIMAL value' in MariaDB's warnings (MySQL 8 says DOUBLE); with
    # a DECIMAL, a DOUBLE or in arithmetic a 'DOUBLE value'
    "SELECT id, s = 0, s < 2, s IN (1, 2), s = b, s > a, CAST(b AS DOUBLE) FROM u ORDER BY id",
    "SELECT id, s = 1.5, s IN (2.5, 3.5), s = 1e0, s + 1 FROM u ORDER BY id",
    "SELECT 'abc' = 1, 'x' IN (1, 2), 'y' = 1.5",
    # an unsigned cast that wraps or clips notes it (1105, 1916) or warns (1916 of a DECIMAL, 1292 of text)
    "SELECT id, CAST(b AS UNSIGNED), CAST(b - 0.5 AS UNSIGNED), CAST(b * 1e20 AS UNSIGNED), CAST(s AS UNSIGNED) "
    "FROM u ORDER BY id",
    # (constants: one of each message, as Canopy counts a constant's once per statement)
    "SELECT CAST(-1 AS UNSIGNED), CAST(1e30 AS UNSIGNED), CAST(-5.5 AS UNSIGNED), "
    "CAST('99999999999999999999' AS UNSIGNED), CAST('-99999999999999999999' AS UNSIGNED)",
])
def test_truncation_warnings_agree(both, sql):
    """The same values and the same SHOW WARNINGS (MySQL's 1292 'Truncated incorrect ... value'),
    in any order (Canopy's leaves report in their own order), and the same @@warning_count."""
    maria, canopy = both
    results = []
    for con in (maria, canopy):
        values = _rows(con, sql)
        warnings = _rows(con, "SHOW WARNINGS")
        count = _rows(con, "SELECT @@warning_count")
        results.append((values, sorted(warnings), count))
    assert results[1] == results[0]
