"""MariaDB as the oracle of exact DECIMAL arithmetic (marker ``mariadb``: ``pytest -m mariadb``): the
same expressions over the same table on a private MariaDB server and on Canopy give the same values
and the same DECIMAL scales. Precision is compared where MySQL's stays within Canopy's 38 digits."""
from decimal import Decimal

import pytest

import engine
from tests.sql.test_mariadb_oracle import mariadb  # noqa: F401 - the server fixture

pytestmark = pytest.mark.mariadb

TABLE = "CREATE TABLE d (id BIGINT, a BIGINT, b INT, m DECIMAL(15,2), w DECIMAL(30,4))"
ROWS = [
    (1, 9007199254740993, 7, Decimal("12345678.91"), Decimal("12345678901234567890123456.7891")),
    (2, -9007199254740993, -3, Decimal("-0.05"), Decimal("-0.0001")),
    (3, 4611686018427387904, 1, Decimal("9999999999999.99"), Decimal("1.5000")),
    (4, 1, 32, Decimal("0.01"), Decimal("-98765432109876543210987654.3210")),
]
EXPRESSIONS = [
    "a / 7", "a / b", "m / b", "w / m", "m / 3", "b / 32", "-2 / 3", "a / 0",
    "m * m", "w * b", "m * 1.5",
    "a DIV b", "m DIV b", "a % 7", "w % m", "m % b", "ROUND(m, 1)", "ROUND(w, -2)", "ROUND(m)",
    "CAST(w AS DECIMAL(38,2))", "CAST(m AS DECIMAL(16,0))", "CAST(a AS DECIMAL(25,3))", "CAST(m AS SIGNED)",
]
AGGREGATES = ["SUM(a)", "AVG(a)", "SUM(m)", "AVG(m)", "AVG(b)", "SUM(w)", "AVG(w)", "AVG(w * 2)"]


@pytest.fixture(scope="module")
def both(mariadb):  # noqa: F811 - the imported fixture
    setup = mariadb(None)
    with setup.cursor() as cursor:
        cursor.execute("DROP DATABASE IF EXISTS decimals")
        cursor.execute("CREATE DATABASE decimals")
    setup.close()
    maria = mariadb("decimals")
    maria.autocommit(True)
    canopy = engine.connect()
    values = ", ".join(f"({i}, {a}, {b}, {m}, {w})" for i, a, b, m, w in ROWS)
    for con in (maria, canopy):
        cursor = con.cursor()
        cursor.execute(TABLE)
        cursor.execute(f"INSERT INTO d VALUES {values}")
    yield maria, canopy
    maria.close()
    canopy.close()


def _run(con, sql):
    cursor = con.cursor()
    cursor.execute(sql)
    return list(cursor.fetchall()), [d[5] or 0 for d in cursor.description]    # integers: None or 0


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_row_expressions_agree(both, expression):
    maria, canopy = both
    sql = f"SELECT {expression} FROM d ORDER BY id"
    expected, expected_scales = _run(maria, sql)
    got, scales = _run(canopy, sql)
    assert [tuple(r) for r in got] == [tuple(r) for r in expected]
    assert scales == expected_scales


@pytest.mark.parametrize("aggregate", AGGREGATES)
def test_aggregates_agree(both, aggregate):
    maria, canopy = both
    for sql in (f"SELECT {aggregate} FROM d", f"SELECT id % 2, {aggregate} FROM d GROUP BY id % 2 ORDER BY 1"):
        expected, expected_scales = _run(maria, sql)
        got, scales = _run(canopy, sql)
        assert [tuple(r) for r in got] == [tuple(r) for r in expected]
        assert scales == expected_scales
