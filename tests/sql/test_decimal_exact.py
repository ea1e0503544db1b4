"""Exact DECIMAL arithmetic with MySQL's result types, checked against Python's ``decimal`` module:
division (scale + div_precision_increment, rounded half away from zero), multiplication, SUM and AVG
of integers and decimals (on the leaves and merged on the aggregator, keyed and keyless), casts, and
overflow as an error. Values sit where float64 loses digits (past 2**53, 17+ significant digits)."""
import decimal
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

import engine
from engine import errors

EXACT = decimal.Context(prec=200)
ROWS = 600


def q(value: Decimal, scale: int) -> Decimal:
    return value.quantize(Decimal(1).scaleb(-scale), rounding=decimal.ROUND_HALF_UP, context=EXACT)


@pytest.fixture(scope="module")
def con():
    rng = np.random.default_rng(14)
    big = rng.integers(-2 ** 62, 2 ** 62, ROWS)
    big[:4] = [2 ** 53 + 1, 2 ** 53 + 1, 9007199254740993, -(2 ** 62) + 7]
    small = rng.integers(-10 ** 6, 10 ** 6, ROWS)
    # DECIMAL(30,4): ~26-digit values, beyond float64's 17
    wide = [Decimal(int(h) * 10 ** 12 + int(l)).scaleb(-4) for h, l in
            zip(rng.integers(-10 ** 13, 10 ** 13, ROWS), rng.integers(0, 10 ** 12, ROWS))]
    money = [Decimal(int(v)).scaleb(-2) for v in rng.integers(-10 ** 9, 10 ** 9, ROWS)]
    data = pa.table({
        "id": np.arange(ROWS, dtype=np.int64),
        "g": rng.integers(0, 7, ROWS),
        "a": pa.array(big, mask=rng.random(ROWS) < 0.05),
        "b": pa.array(small, mask=rng.random(ROWS) < 0.05),
        "w": pa.array(wide, pa.decimal128(30, 4), mask=rng.random(ROWS) < 0.05),
        "m": pa.array(money, pa.decimal128(15, 2)),
    })
    c = engine.connect()
    c.execute("CREATE TABLE t (id BIGINT, g BIGINT, a BIGINT, b BIGINT, w DECIMAL(30,4), m DECIMAL(15,2), "
              "SHARD KEY (id))")
    c.load_table("t", data)
    c.rows = [dict(zip(data.column_names, r)) for r in zip(*(data.column(n).to_pylist() for n in data.column_names))]
    yield c
    c.close()


def _rows(con, sql):
    cur = con.cursor()
    cur.execute(sql)
    return cur.fetchall(), [(d[0], d[1], d[4], d[5]) for d in cur.description]


@pytest.mark.parametrize("sql, expected", [
    ("SELECT 12345678901234567 / 1", "12345678901234567.0000"),
    ("SELECT 123456789012345678.91 / 3", "41152263004115226.303333"),
    ("SELECT -123456789012345678.91 / 3", "-41152263004115226.303333"),
    ("SELECT 9007199254740993 * 3", "27021597764222979"),
    ("SELECT 12345678901234567.891 * 1000000000000.5", "12345678901240740730450617283.9455"),
    ("SELECT 2 / 3", "0.6667"),
    ("SELECT -2 / 3", "-0.6667"),
    ("SELECT 1 / 8", "0.1250"),
    ("SELECT CAST(2.5 AS DECIMAL(5,0))", "3"),
    ("SELECT CAST(-2.5 AS DECIMAL(5,0))", "-3"),
    ("SELECT CAST(12345678901234567.125 AS DECIMAL(20,2))", "12345678901234567.13"),
])
def test_issue_examples_are_exact(con, sql, expected):
    assert _rows(con, sql)[0] == [(Decimal(expected),)]


def test_integer_avg_is_exact(con):
    con.execute("CREATE TABLE two (v BIGINT)")
    con.execute("INSERT INTO two VALUES (9007199254740993), (9007199254740993)")
    rows, types = _rows(con, "SELECT AVG(v), SUM(v) FROM two")
    assert rows == [(Decimal("9007199254740993.0000"), Decimal(18014398509481986))]
    assert types == [("AVG(v)", "DECIMAL", 23, 4), ("SUM(v)", "DECIMAL", 38, 0)]


def test_result_types_follow_mysql(con):
    _, types = _rows(con, "SELECT SUM(m), AVG(m), SUM(w), AVG(w), AVG(b), SUM(b) FROM t")
    assert [(p, s) for *_, p, s in types] == [(37, 2), (19, 6), (38, 4), (34, 8), (23, 4), (38, 0)]
    _, types = _rows(con, "SELECT m / 3, m * m, w * m, m / w, w + m FROM t")
    assert [(p, s) for *_, p, s in types] == [(19, 6), (30, 4), (38, 6), (23, 6), (31, 4)]


def _expected_groups(rows, column, key="g"):
    out = {}
    for r in rows:
        k = r[key] if key else None
        total, count = out.get(k, (Decimal(0), 0))
        if r[column] is not None:
            out[k] = (EXACT.add(total, Decimal(r[column])), count + 1)
        else:
            out[k] = (total, count)
    return out


@pytest.mark.parametrize("column, scale", [("a", 0), ("b", 0), ("w", 4), ("m", 2)])
def test_grouped_and_keyless_sum_avg_match_python(con, column, scale):
    for key in ("g", None):
        sql = (f"SELECT g, SUM({column}), AVG({column}) FROM t GROUP BY g" if key else
               f"SELECT NULL, SUM({column}), AVG({column}) FROM t")
        got = {r[0]: (r[1], r[2]) for r in _rows(con, sql)[0]}
        expected = {k: (q(total, scale), q(EXACT.divide(total, count), scale + 4))
                    for k, (total, count) in _expected_groups(con.rows, column, key).items()}
        assert got == expected


def test_row_arithmetic_matches_python(con):
    rows, _ = _rows(con, "SELECT id, a / 7, w / b, m * w, a * m, m / 3, b DIV 3, w / 0, a DIV 7, a % 7, "
                         "w % m, w DIV m FROM t ORDER BY id")
    for r, (id_, a7, wb, mw, am, m3, bdiv3, w0, adiv7, amod7, wmodm, wdivm) in zip(con.rows, rows):
        a, b, w, m = (None if r[c] is None else Decimal(r[c]) for c in "abwm")
        assert id_ == r["id"]
        assert a7 == (None if a is None else q(EXACT.divide(a, 7), 4))
        assert wb == (None if w is None or not b else q(EXACT.divide(w, b), 8))
        assert mw == (None if w is None else EXACT.multiply(m, w))
        assert am == (None if a is None else EXACT.multiply(a, m))
        assert m3 == q(EXACT.divide(m, 3), 6)
        assert bdiv3 == (None if b is None else int(b / 3))
        assert w0 is None
        assert adiv7 == (None if a is None else int(EXACT.divide_int(a, 7)))
        assert amod7 == (None if a is None else int(EXACT.remainder(a, 7)))
        assert wmodm == (None if w is None or not m else EXACT.remainder(w, m))
        assert wdivm == (None if w is None or not m else int(EXACT.divide_int(w, m)))


@pytest.mark.parametrize("sql", [
    "SELECT 99999999999999999999999999999999999999 * 10",
    "SELECT CAST(99999999999999999999999999999999999999 AS DECIMAL(38,0)) / 0.1",
    "SELECT w * w * w FROM t",
])
def test_overflow_is_an_error(con, sql):
    with pytest.raises(errors.DataError, match="out of range"):
        _rows(con, sql)


@pytest.fixture(scope="module")
def huge():
    """DECIMAL(38,0) values of 37-38 digits spread over every partition: two of them pass 38 digits."""
    c = engine.connect()
    c.execute("CREATE TABLE h (id BIGINT, g BIGINT, v DECIMAL(38,0), SHARD KEY (id))")
    values = [Decimal(9 * 10 ** 37 - i) for i in range(40)]
    c.load_table("h", pa.table({"id": np.arange(40, dtype=np.int64), "g": np.arange(40, dtype=np.int64) % 2,
                                "v": pa.array(values, pa.decimal128(38, 0))}))
    yield c
    c.close()


@pytest.mark.parametrize("sql", [
    "SELECT SUM(v) FROM h",
    "SELECT AVG(v) FROM h",
    "SELECT g, SUM(v) FROM h GROUP BY g",
    "SELECT g, AVG(v) FROM h GROUP BY g",
    "SELECT SUM(DISTINCT v) FROM h",
    "SELECT g, SUM(v), STDDEV(v) FROM h GROUP BY g",
])
def test_sum_overflow_is_an_error(huge, sql):
    """Partial sums on the leaves, merged on the aggregator: past 38 digits an error, never a wrap
    (Arrow's own decimal128 sum would wrap at 2**127 here) nor a value out of its type."""
    with pytest.raises(errors.DataError, match="out of range"):
        _rows(huge, sql)


def test_sums_that_fit_are_exact(huge):
    offset = Decimal("89999999999999999999999999999999999900")
    rows, _ = _rows(huge, f"SELECT g, SUM(v - {offset}), AVG(v - {offset}) FROM h GROUP BY g ORDER BY g")
    for g, total, avg in rows:
        chosen = [Decimal(9 * 10 ** 37 - i) - offset for i in range(40) if i % 2 == g]
        assert total == sum(chosen)
        assert avg == q(EXACT.divide(sum(chosen), len(chosen)), 4)


def test_casts_and_round_rescale_exactly(con):
    """Arrow's decimal round turns a value that outgrows its own precision into 0 (9999999999999.99
    rounded in a DECIMAL(15,2) array): casts and ROUND rescale on the kernels instead."""
    con.execute("CREATE TABLE r (id BIGINT, m DECIMAL(15,2))")
    con.execute("INSERT INTO r VALUES (1, 9999999999999.99), (2, -2.50), (3, 149.50), (4, 0.05)")
    rows, _ = _rows(con, "SELECT CAST(m AS DECIMAL(16,0)), CAST(m AS SIGNED), ROUND(m), ROUND(m, 1), ROUND(m, -2), "
                         "-98765432109876543210987654.3210, FLOOR(m), CEILING(m) FROM r ORDER BY id")
    for (value,), row in zip([(Decimal("9999999999999.99"),), (Decimal("-2.50"),), (Decimal("149.50"),),
                              (Decimal("0.05"),)], rows):
        assert row == (q(value, 0), int(q(value, 0)), q(value, 0), q(value, 1),
                       q(value.scaleb(-2), 0).scaleb(2), Decimal("-98765432109876543210987654.3210"),
                       int(value.to_integral_value(decimal.ROUND_FLOOR)), int(value.to_integral_value(decimal.ROUND_CEILING)))
    # past the target's digits: clipped to its largest value with MariaDB's warning 1264 (engine.exec.cast_range)
    cur = con.cursor()
    cur.execute("SELECT id, CAST(m AS DECIMAL(10,0)) FROM r ORDER BY id")
    assert cur.fetchall() == [(1, Decimal("9999999999")), (2, Decimal("-3")), (3, Decimal("150")), (4, Decimal("0"))]
    cur.execute("SHOW WARNINGS")
    assert [(level, int(code), message.split(" at row")[0]) for level, code, message in cur.fetchall()] == \
        [("Warning", 1264, "Out of range value for column 'CAST(m AS DECIMAL(10,0))'")]
    with pytest.raises(errors.DataError, match="out of range"):      # arithmetic past 38 digits still fails
        _rows(con, "SELECT m * 100000000000000000000000000 FROM r")
