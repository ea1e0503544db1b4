"""The int64 fast path of DECIMAL arithmetic gives Python's exact Decimal results, or steps aside."""
import decimal

import pyarrow as pa
from hypothesis import given, settings, strategies as st

from engine.exec import decimal64

cents = st.integers(min_value=-10**13, max_value=10**13)


def _decimals(values, scale):
    return pa.array([decimal.Decimal(v).scaleb(-scale) for v in values], pa.decimal128(15, scale))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(cents, cents), min_size=1, max_size=50), st.sampled_from(["add", "subtract", "multiply"]))
def test_matches_python_decimal(pairs, op):
    a = _decimals([x for x, _ in pairs], 2)
    b = _decimals([y for _, y in pairs], 2)
    result_type = pa.decimal128(31, 4) if op == "multiply" else pa.decimal128(16, 2)
    got = decimal64.arith(op, a, b, result_type)
    python = {"add": lambda x, y: x + y, "subtract": lambda x, y: x - y, "multiply": lambda x, y: x * y}[op]
    expected = [python(x, y) for x, y in zip(a.to_pylist(), b.to_pylist())]
    if got is None:      # it may step aside (a product that could overflow int64), never be wrong
        assert op == "multiply"
        return
    assert got.to_pylist() == expected


def test_steps_aside_for_nulls_and_rescaling_down():
    a = pa.array([decimal.Decimal("1.00"), None], pa.decimal128(15, 2))
    assert decimal64.arith("add", a, a, pa.decimal128(16, 2)) is None
    b = pa.array([decimal.Decimal("1.25")], pa.decimal128(15, 2))
    assert decimal64.arith("multiply", b, b, pa.decimal128(20, 3)) is None      # would need rounding


def test_sums_with_empty_groups_stay_null():
    values = pa.array([150, None, -25], pa.int64())
    assert decimal64.from_int64_array(values, pa.decimal128(38, 2)).to_pylist() == \
        [decimal.Decimal("1.50"), None, decimal.Decimal("-0.25")]
