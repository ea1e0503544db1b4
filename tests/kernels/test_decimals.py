"""kernels.decimal_divide (/, DIV, %) / decimal_multiply / decimal_add (+, -) (compiled and reference), through
engine.exec.decimal128, against Python's ``decimal`` module: random DECIMAL(p, s) operands with
nulls, zeros, scalars and the extreme values of 38 digits, results rounded half away from zero to
MySQL's result types (engine.types.arithmetic_type), and overflow reported, never wrapped."""
import decimal
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import kernels
from engine.exec import decimal128
from engine import types as T
from kernels.reference import decimals as reference

compiled = pytest.importorskip("kernels.decimals")
EXACT = decimal.Context(prec=200)
IMPLEMENTATIONS = {"compiled": compiled, "reference": reference}


@pytest.fixture(params=sorted(IMPLEMENTATIONS))
def impl(request, monkeypatch):
    module = IMPLEMENTATIONS[request.param]
    monkeypatch.setattr(kernels, "decimal_divide", module.decimal_divide)
    monkeypatch.setattr(kernels, "decimal_multiply", module.decimal_multiply)
    if not hasattr(module, "decimal_add"):
        pytest.skip("kernels/decimals.pyx was built before decimal_add: rebuild the kernels")
    monkeypatch.setattr(kernels, "decimal_add", module.decimal_add)
    for op in ("DIVIDE", "INT_DIVIDE", "MOD", "FLOOR_DIVIDE", "CEILING_DIVIDE"):
        monkeypatch.setattr(kernels, f"DECIMAL_{op}", getattr(module, op))
    return request.param


@st.composite
def decimal_columns(draw, max_rows=12):
    """A (values, DECIMAL(p, s)) column: random magnitudes, zeros, NULLs and the type's extremes."""
    precision = draw(st.integers(1, 38))
    scale = draw(st.integers(0, precision))
    largest = 10 ** precision - 1
    unscaled = st.one_of(st.integers(-largest, largest), st.sampled_from([0, 1, -1, largest, -largest]),
                         st.integers(-10 ** 6, 10 ** 6).filter(lambda v: abs(v) <= largest))
    values = draw(st.lists(st.one_of(st.none(), unscaled), min_size=1, max_size=max_rows))
    return [None if v is None else Decimal(v).scaleb(-scale, EXACT) for v in values], T.decimal_type(precision, scale)


def _operand(values, sql_type, as_scalar):
    t = sql_type.to_arrow()
    return pa.scalar(values[0], t) if as_scalar else pa.array(values, t)


def _expected(op, x, y, rt):
    if x is None or y is None or (op in ("/", "%", "DIV") and y == 0):
        return None
    if op == "DIV":                      # Decimal's // truncates toward zero, as DIV
        quotient = int(EXACT.divide_int(x, y))
        return quotient if -2 ** 63 <= quotient < 2 ** 63 else OverflowError
    exact = {"/": EXACT.divide, "*": EXACT.multiply, "%": EXACT.remainder, "+": EXACT.add,
             "-": EXACT.subtract}[op](x, y)
    value = exact.quantize(Decimal(1).scaleb(-rt.scale), rounding=decimal.ROUND_HALF_UP, context=EXACT)
    return value if value.copy_abs() < Decimal(10) ** (rt.precision - rt.scale) else OverflowError


def _check(op, a_column, b_column, a_scalar, b_scalar):
    (xs, ta), (ys, tb) = a_column, b_column
    n = 1 if a_scalar and b_scalar else max(1 if a_scalar else len(xs), 1 if b_scalar else len(ys))
    xs = (xs[:1] * n) if a_scalar else (xs * n)[:n]
    ys = (ys[:1] * n) if b_scalar else (ys * n)[:n]
    rt = T.arithmetic_type(op, ta, tb) if op != "DIV" else T.BIGINT
    a, b = _operand(xs, ta, a_scalar), _operand(ys, tb, b_scalar)
    expected = [_expected(op, x, y, rt) for x, y in zip(xs, ys)]
    compute = {"/": decimal128.divide, "*": decimal128.multiply, "%": decimal128.mod,
               "+": decimal128.add, "-": lambda a, b, rt: decimal128.add(a, b, rt, subtract=True),
               "DIV": lambda a, b, _: decimal128.int_divide(a, b)}[op]
    if OverflowError in expected:
        with pytest.raises(decimal128.DecimalOverflow, match="out of range"):
            compute(a, b, rt.to_arrow())
        return
    result = compute(a, b, rt.to_arrow())
    assert result.type == rt.to_arrow()
    got = [result.as_py()] if isinstance(result, pa.Scalar) else result.to_pylist()
    assert got == expected


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(a=decimal_columns(), b=decimal_columns(), a_scalar=st.booleans(), b_scalar=st.booleans())
def test_divide_matches_python_decimal(impl, a, b, a_scalar, b_scalar):
    _check("/", a, b, a_scalar, b_scalar)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(a=decimal_columns(), b=decimal_columns(), a_scalar=st.booleans(), b_scalar=st.booleans())
def test_multiply_matches_python_decimal(impl, a, b, a_scalar, b_scalar):
    _check("*", a, b, a_scalar, b_scalar)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(a=decimal_columns(), b=decimal_columns(), a_scalar=st.booleans(), b_scalar=st.booleans(),
       op=st.sampled_from(["+", "-"]))
def test_add_and_subtract_match_python_decimal(impl, a, b, a_scalar, b_scalar, op):
    _check(op, a, b, a_scalar, b_scalar)


@pytest.mark.parametrize("digits", [2, 17, 18, 19, 38])
def test_add_and_multiply_at_the_int64_edge(impl, digits):
    """Operands on both sides of the kernels' int64 fast path (|value| < 2**63) and results at the
    result type's last digit give Python's exact answers; one digit more is an overflow."""
    t = T.decimal_type(38, digits if digits < 38 else 0)
    edge = [2 ** 63 - 1, -2 ** 63, 2 ** 63, -2 ** 63 - 1, 10 ** 18, -(10 ** 19)]
    xs = [Decimal(v).scaleb(-t.scale, EXACT) for v in edge]
    for op in ("+", "-"):
        _check(op, (xs, t), (xs[::-1], t), False, False)
    small = T.decimal_type(15, 2)
    ys = [Decimal("0.07"), Decimal("-99999.99"), Decimal("1"), Decimal("0"), Decimal("3.5"), Decimal("-1")]
    _check("*", (xs, t), (ys, small), False, False)
    largest = T.decimal_type(38, 0)
    top = pa.array([Decimal(10 ** 38 - 1)], largest.to_arrow())
    with pytest.raises(decimal128.DecimalOverflow):
        decimal128.add(top, pa.scalar(Decimal(1), pa.decimal128(1, 0)), largest.to_arrow())
    assert decimal128.add(top, pa.scalar(Decimal(1), pa.decimal128(1, 0)), largest.to_arrow(),
                          subtract=True).to_pylist() == [Decimal(10 ** 38 - 2)]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(a=decimal_columns(), b=decimal_columns(), a_scalar=st.booleans(), b_scalar=st.booleans())
def test_mod_matches_python_decimal(impl, a, b, a_scalar, b_scalar):
    _check("%", a, b, a_scalar, b_scalar)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(a=decimal_columns(), b=decimal_columns(), a_scalar=st.booleans(), b_scalar=st.booleans())
def test_int_divide_matches_python_decimal(impl, a, b, a_scalar, b_scalar):
    _check("DIV", a, b, a_scalar, b_scalar)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(a=decimal_columns(), ceiling=st.booleans())
def test_floor_and_ceiling_match_python_decimal(impl, a, ceiling):
    values, t = a
    got = decimal128.floor_or_ceiling(pa.array(values, t.to_arrow()), ceiling)
    rounding = decimal.ROUND_CEILING if ceiling else decimal.ROUND_FLOOR
    assert got.to_pylist() == [None if v is None else v.to_integral_value(rounding, EXACT) for v in values]


@pytest.mark.parametrize("x, y, expected", [
    ("2", "3", "0.6667"), ("-2", "3", "-0.6667"), ("1", "8", "0.1250"), ("1", "32", "0.0313"),
    ("-1", "32", "-0.0313"), ("12345678901234567", "1", "12345678901234567.0000"),
    ("9007199254740993", "1", "9007199254740993.0000"), ("5", "0", None),
])
def test_divide_rounds_half_away_from_zero(impl, x, y, expected):
    t = T.decimal_type(19, 0)
    rt = T.arithmetic_type("/", t, t)
    got = decimal128.divide(pa.array([Decimal(x)], t.to_arrow()), pa.scalar(Decimal(y), t.to_arrow()), rt.to_arrow())
    assert got.to_pylist() == [None if expected is None else Decimal(expected)]


def test_wide_intermediates_stay_exact(impl):
    """Quotients whose scaled dividend passes 2**128, and products past 2**128 rounded back under the
    scale cap of 30, take the 256-bit path and still match Python's decimal."""
    big = T.decimal_type(38, 0)
    x = Decimal("98765432109876543210987654321098765432")
    got = decimal128.divide(pa.array([x, -x], big.to_arrow()), pa.scalar(Decimal("123456789012345678901234567"),
                            big.to_arrow()), T.decimal_type(38, 4).to_arrow())
    expected = EXACT.divide(x, Decimal("123456789012345678901234567")).quantize(Decimal("0.0001"), decimal.ROUND_HALF_UP, EXACT)
    assert got.to_pylist() == [expected, -expected]
    fine = T.decimal_type(38, 20)
    rt = T.arithmetic_type("*", fine, fine)             # scale 40 capped at 30: the product is rounded
    assert rt.scale == 30
    v = Decimal("1.23456789012345678901")
    product = decimal128.multiply(pa.array([v], fine.to_arrow()), pa.array([-v], fine.to_arrow()), rt.to_arrow())
    assert product.to_pylist() == [EXACT.multiply(v, -v).quantize(Decimal(1).scaleb(-30), decimal.ROUND_HALF_UP, EXACT)]


def test_overflow_is_an_error_not_a_wrap(impl):
    t = T.decimal_type(38, 0)
    largest = Decimal(10 ** 38 - 1)
    with pytest.raises(decimal128.DecimalOverflow):
        decimal128.multiply(pa.array([largest], t.to_arrow()), pa.scalar(Decimal(10), t.to_arrow()), t.to_arrow())
    with pytest.raises(decimal128.DecimalOverflow):
        decimal128.divide(pa.array([largest], t.to_arrow()), pa.scalar(Decimal("0.1"), pa.decimal128(1, 1)),
                          T.decimal_type(38, 4).to_arrow())


def test_kernels_check_their_arguments():
    words, out, valid = np.zeros(2, np.int64), np.zeros(2, np.int64), np.ones(1, np.uint8)
    with pytest.raises(ValueError, match="words"):
        compiled.decimal_divide(words, 1, words, 1, 0, 0, compiled.DIVIDE, 10, np.zeros(4, np.int64),
                                np.ones(2, np.uint8))
    with pytest.raises(ValueError, match="op"):
        compiled.decimal_divide(words, 1, words, 1, 0, 0, 7, 10, out, valid)
    with pytest.raises(ValueError, match="precision"):
        compiled.decimal_multiply(words, 1, words, 1, 0, 39, out, valid)
    with pytest.raises(ValueError, match="step"):
        compiled.decimal_multiply(words, 2, words, 1, 0, 10, out, valid)
    if not hasattr(compiled, "decimal_add"):
        pytest.skip("kernels/decimals.pyx was built before decimal_add: rebuild the kernels")
    with pytest.raises(ValueError, match="shifts"):
        compiled.decimal_add(words, 1, words, 1, 39, 0, False, 10, out, valid)
