"""DECIMAL + - * trees on int64 scaled integers (engine.exec.decimal_scaled) give exactly the values
Python's decimal module computes, or step aside (None) where a value may not fit; through the
evaluator, a tree whose values overflow raises the same error as the 128-bit path."""
import decimal

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import types as T
from engine.core.expressions import Call, ColumnRef, Literal
from engine.errors import BadDataError
from engine.exec import decimal_scaled
from engine.exec.evaluate import evaluate, evaluate_arrays, shared_subexpressions

_CONTEXT = decimal.Context(prec=200)
_SYMBOL = {"add": "+", "subtract": "-", "multiply": "*"}


def _call(op, a, b):
    return Call(op, (a, b), T.arithmetic_type(_SYMBOL[op], a.type, b.type))


def _exact(expr, row: dict):
    """The exact value of ``expr`` in Python's decimal (None: a NULL operand)."""
    if isinstance(expr, Literal):
        return None if expr.value is None else decimal.Decimal(expr.value)
    if isinstance(expr, ColumnRef):
        return None if row[expr.id] is None else decimal.Decimal(row[expr.id])
    a, b = _exact(expr.args[0], row), _exact(expr.args[1], row)
    if a is None or b is None:
        return None
    value = {"add": _CONTEXT.add, "subtract": _CONTEXT.subtract, "multiply": _CONTEXT.multiply}[expr.op](a, b)
    return value.quantize(decimal.Decimal(1).scaleb(-expr.type.scale), context=_CONTEXT)


def _columns(draw, n):
    price = draw(st.lists(st.integers(-10**9, 10**9), min_size=n, max_size=n))
    rate = draw(st.lists(st.integers(0, 30), min_size=1, max_size=12))
    codes = draw(st.lists(st.integers(0, len(rate) - 1), min_size=n, max_size=n))
    count = draw(st.lists(st.integers(-10**6, 10**6), min_size=n, max_size=n))
    batch = pa.RecordBatch.from_arrays([
        pa.array([decimal.Decimal(v).scaleb(-2) for v in price], pa.decimal128(15, 2)),
        pa.DictionaryArray.from_arrays(pa.array(codes, pa.int8()),
                                       pa.array([decimal.Decimal(v).scaleb(-2) for v in rate], pa.decimal128(15, 2))),
        pa.array(count, pa.int64()),
    ], names=["price", "rate", "count"])
    return batch


PRICE = ColumnRef("price", T.decimal_type(15, 2), "price")
RATE = ColumnRef("rate", T.decimal_type(15, 2), "rate")
COUNT = ColumnRef("count", T.BIGINT, "count")
LEAVES = [PRICE, RATE, COUNT, Literal(1, T.BIGINT), Literal(decimal.Decimal("0.125"), T.decimal_type(4, 3)),
          Literal(-7, T.BIGINT)]


@st.composite
def trees(draw, depth=3):
    if depth == 0 or draw(st.booleans()) and depth < 3:
        return draw(st.sampled_from(LEAVES))
    op = draw(st.sampled_from(["add", "subtract", "multiply"]))
    a, b = draw(trees(depth - 1)), draw(trees(depth - 1))
    expr = _call(op, a, b)
    return expr


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_trees_match_python_decimal(data):
    batch = _columns(data.draw, data.draw(st.integers(1, 40)))
    expr = data.draw(trees())
    if not decimal_scaled.is_tree(expr):       # two integers make a BIGINT, not a decimal tree
        return
    columns = {name: batch.column(name).to_pylist() for name in batch.schema.names}
    rows = [dict(zip(columns, values)) for values in zip(*columns.values())]
    result = decimal_scaled.evaluate(expr, batch)
    if result is None:
        return
    assert result.type == expr.type.to_arrow()
    assert result.to_pylist() == [_exact(expr, r) for r in rows]


def test_money_shapes_take_the_int64_path():
    """TPC-H Q1's sums fit int64: the scaled path answers, shared subtrees computed once."""
    batch = pa.RecordBatch.from_arrays([
        pa.array([decimal.Decimal("901.00"), decimal.Decimal("104949.50")], pa.decimal128(15, 2)),
        pa.DictionaryArray.from_arrays(pa.array([1, 0], pa.int8()),
                                       pa.array([decimal.Decimal("0.00"), decimal.Decimal("0.10")], pa.decimal128(15, 2))),
    ], names=["price", "rate"])
    net = _call("multiply", PRICE, _call("subtract", Literal(1, T.BIGINT), RATE))
    charge = _call("multiply", _call("multiply", PRICE, _call("subtract", Literal(1, T.BIGINT), RATE)),
                   _call("add", Literal(1, T.BIGINT), RATE))
    assert decimal_scaled.evaluate(charge, batch).to_pylist() == [decimal.Decimal("891.990000"),
                                                                  decimal.Decimal("104949.500000")]
    memo = {}
    slots = shared_subexpressions([net, charge])
    decimal_scaled.evaluate(net, batch, memo, slots)
    assert ("slot", slots[id(net)]) in memo
    assert [v.to_pylist() for v in evaluate_arrays([net, charge], batch, (), slots)] == [
        [decimal.Decimal("810.9000"), decimal.Decimal("104949.5000")],
        [decimal.Decimal("891.990000"), decimal.Decimal("104949.500000")]]


def test_wide_values_and_nulls_step_aside_to_the_exact_path():
    big = T.decimal_type(38, 0)
    column = ColumnRef("x", big, "x")
    wide = pa.RecordBatch.from_arrays([pa.array([decimal.Decimal(10**30)], pa.decimal128(38, 0))], names=["x"])
    product = Call("multiply", (column, column), big)
    assert decimal_scaled.evaluate(product, wide) is None
    near = pa.RecordBatch.from_arrays([pa.array([decimal.Decimal(3 * 10**9)], pa.decimal128(38, 0))], names=["x"])
    assert decimal_scaled.evaluate(product, near) is None          # 3e9 squared may pass 2**62: the bound says no
    assert evaluate(product, near).to_pylist() == [decimal.Decimal(9 * 10**18)]
    nulls = pa.RecordBatch.from_arrays([pa.array([decimal.Decimal(2), None], pa.decimal128(38, 0))], names=["x"])
    assert decimal_scaled.evaluate(product, nulls) is None
    assert evaluate(product, nulls).to_pylist() == [decimal.Decimal(4), None]


def test_a_result_past_its_precision_raises_as_the_exact_path_does():
    """A node whose values do not fit its own type's precision is the 128-bit path's error."""
    narrow = T.decimal_type(4, 2)
    x = ColumnRef("x", narrow, "x")
    total = Call("add", (x, x), narrow)               # deliberately typed too narrow
    batch = pa.RecordBatch.from_arrays([pa.array([decimal.Decimal("60.00")], pa.decimal128(4, 2))], names=["x"])
    assert decimal_scaled.evaluate(total, batch) is None
    with pytest.raises(BadDataError):
        evaluate(total, batch)
    fits = pa.RecordBatch.from_arrays([pa.array([decimal.Decimal("40.00")], pa.decimal128(4, 2))], names=["x"])
    assert decimal_scaled.evaluate(total, fits).to_pylist() == [decimal.Decimal("80.00")]


def test_dictionary_subtree_is_computed_per_entry():
    """``1 - rate`` over a dictionary column is computed on its entries; rows gather the result."""
    rate = pa.DictionaryArray.from_arrays(pa.array(np.array([2, 2, 0, 1], np.int8)),
                                          pa.array([decimal.Decimal(v) for v in ("0.01", "0.02", "0.03")],
                                                   pa.decimal128(15, 2)))
    batch = pa.RecordBatch.from_arrays([rate], names=["rate"])
    expr = _call("subtract", Literal(1, T.BIGINT), RATE)
    assert decimal_scaled.evaluate(expr, batch).to_pylist() == [decimal.Decimal(v) for v in
                                                                ("0.97", "0.97", "0.99", "0.98")]
    # the general evaluator decodes a dictionary operand when the scaled path steps aside
    assert evaluate(_call("multiply", RATE, Literal(decimal.Decimal("1E-30"), T.decimal_type(31, 30))),
                    batch).type == pa.decimal128(38, 30)
