"""DECIMAL + - * trees evaluated in one go on 64-bit scaled integers, when every value fits.

``decimal128``'s kernels compute each operation of ``price * (1 - discount) * (1 + tax)`` exactly,
but each one reads and writes 16-byte decimals and builds an Arrow array; money held as
DECIMAL(15,2) fits int64 many times over. :func:`evaluate` walks a tree of decimal ``add`` /
``subtract`` / ``multiply`` calls over columns and constants, carries each node as int64 scaled to
its own result type's scale, and builds one decimal128 array, at the root. Exactness: before any
operation the range of what it can produce is bounded from its operands' ranges (a column's least
and greatest value, a constant's own) and must stay within +-2**62; each node's values must fit its
result type's precision, as the 128-bit path checks. When either cannot be shown (a wide value,
a NULL, a node whose product would round: scale above 30 in MySQL's rules) the answer is None and
the caller evaluates the tree the 128-bit way, which computes the same values or raises the same
error.

A dictionary-encoded column (a scan's stored dictionary, kept encoded for this: see
:func:`scaled_columns`) is carried as its dictionary's values and the codes: a subtree over one
dictionary column (``1 - discount``) is computed once per dictionary entry, and the codes are
gathered only where it meets another column.
"""
from __future__ import annotations

import decimal
from typing import Optional, Union

import numpy as np
import pyarrow as pa

from engine.core.expressions import Call, ColumnRef, Expr, Literal
from engine.exec.decimal64 import from_scaled_int64

_OPS = ("add", "subtract", "multiply")
_LIMIT = 1 << 62            # every intermediate magnitude stays below this: int64 never wraps
_POW10 = [10 ** k for k in range(19)]
_EXACT = decimal.Context(prec=100)


class _Coded:
    """A column's values per dictionary entry (int64 scaled) and the rows' codes into them."""
    __slots__ = ("values", "codes")

    def __init__(self, values: np.ndarray, codes: np.ndarray):
        self.values, self.codes = values, codes

    def rows(self) -> np.ndarray:
        return np.take(self.values, self.codes)


Values = Union[int, np.ndarray, _Coded]


def is_tree(expr: Expr) -> bool:
    """Whether ``expr`` is a decimal ``+ - *`` call whose operands are such calls, columns or
    numeric constants: the shape :func:`evaluate` takes (its data may still send it back)."""
    if not (isinstance(expr, Call) and expr.op in _OPS and len(expr.args) == 2 and expr.type.kind == "decimal"
            and not expr.type.unsigned):
        return False
    for arg in expr.args:
        if isinstance(arg, Call):
            if not is_tree(arg):
                return False
        elif isinstance(arg, Literal):
            if arg.type.kind not in ("int", "decimal") or arg.type.unsigned:
                return False
        elif not (isinstance(arg, ColumnRef) and arg.type.kind in ("int", "decimal") and not arg.type.unsigned):
            return False
    return True


def scaled_columns(exprs) -> frozenset:
    """Ids of the decimal columns that ``exprs`` read only as operands of :func:`is_tree` trees:
    such a column can reach them as a stored dictionary (the scan leaves it encoded), computed on
    per dictionary entry; a tree that steps aside decodes it (``evaluate._decimal_operand``)."""
    in_trees, elsewhere = set(), set()

    def visit(e: Expr) -> None:
        if is_tree(e):
            in_trees.update(c.id for c in e.walk() if isinstance(c, ColumnRef) and c.type.kind == "decimal")
        elif isinstance(e, ColumnRef):
            elsewhere.add(e.id)
        else:
            for child in e.children():
                visit(child)

    for e in exprs:
        visit(e)
    return frozenset(in_trees - elsewhere)


def evaluate(expr: Call, batch: pa.RecordBatch, memo: Optional[dict] = None,
             slots: Optional[dict] = None) -> Optional[pa.Array]:
    """``expr`` (an :func:`is_tree`) over ``batch`` as a decimal128 array of its type, or None when
    the values cannot be shown to fit int64 (evaluate it the 128-bit way). ``memo``: this batch's
    results of subtrees and columns, shared by the trees evaluated over it; ``slots``: ``{id(call):
    slot}`` with equal calls in one slot (``evaluate.shared_subexpressions``: TPC-H Q1's
    ``price * (1 - discount)`` in two of its sums is computed once)."""
    result = _node(expr, batch, {} if memo is None else memo, slots or {})
    if result is None:
        return None
    values, _, low, _ = result
    if isinstance(values, int):         # constants only: left to the general evaluator
        return None
    if isinstance(values, _Coded):
        values = values.rows()
    if low < 0:
        return from_scaled_int64(values, expr.type.to_arrow())
    # no value below 0: every high word is 0 (zeroed pages cost nothing to ask for), one strided write
    words = np.zeros(2 * len(values), dtype=np.int64)
    words[0::2] = values
    return pa.Array.from_buffers(expr.type.to_arrow(), len(values), [None, pa.py_buffer(words)])


def _range(values: np.ndarray) -> tuple[int, int]:
    return (int(values.min()), int(values.max())) if len(values) else (0, 0)


def _leaf(arg: Expr, batch: pa.RecordBatch):
    """(values, scale, low, high) of a column or constant (``low`` .. ``high``: its values'
    range), or None."""
    if isinstance(arg, Literal):
        if arg.value is None:
            return None
        if arg.type.kind == "int":
            value = int(arg.value)
            scale = 0
        else:
            scale = arg.type.scale
            scaled = decimal.Decimal(arg.value).scaleb(scale, _EXACT)
            if scaled != scaled.to_integral_value():
                return None
            value = int(scaled)
        return (value, scale, value, value) if abs(value) < _LIMIT else None
    column = batch.column(arg.id)
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if column.null_count:
        return None
    scale = arg.type.scale if arg.type.kind == "decimal" else 0
    stored = column.type.value_type if pa.types.is_dictionary(column.type) else column.type
    if (stored.scale if pa.types.is_decimal(stored) else 0) != scale:
        return None
    if pa.types.is_dictionary(column.type):
        if column.dictionary.null_count:
            return None
        plain = _plain_int64(column.dictionary)
        if plain is None:
            return None
        values, low, high = plain
        codes = column.indices.to_numpy(zero_copy_only=False)
        return _Coded(values, codes), scale, low, high
    plain = _plain_int64(column)
    return None if plain is None else (plain[0], scale, plain[1], plain[2])


def _plain_int64(column: pa.Array) -> Optional[tuple[np.ndarray, int, int]]:
    """A plain decimal128 or integer array's values as int64 (scaled integers) with their least and
    greatest, or None (a value outside int64, a NULL, another type)."""
    t = column.type
    if pa.types.is_integer(t):
        if t == pa.uint64():
            return None
        values = column.to_numpy(zero_copy_only=False)
        values = values if values.dtype == np.int64 else values.astype(np.int64)
        return (values, *_range(values))
    if not pa.types.is_decimal128(t) or column.null_count:
        return None
    n = len(column)
    words = np.frombuffer(column.buffers()[1], dtype=np.int64)[2 * column.offset: 2 * (column.offset + n)]
    low_words, high_words = words[0::2], words[1::2]
    low, high = _range(low_words)
    # a value fits int64 when its high word is its low word's sign extension: all 0 when no low
    # word is negative (one pass, nothing allocated), else compared row by row
    fits = not high_words.any() if low >= 0 else np.array_equal(high_words, low_words >> 63)
    return (low_words, low, high) if fits else None


def _node(expr: Expr, batch: pa.RecordBatch, memo: dict, slots: dict):
    """(values, scale, low, high) of a subtree at its type's scale, or None."""
    if isinstance(expr, Literal):
        return _leaf(expr, batch)
    if isinstance(expr, ColumnRef):
        key = ("column", expr.id)
    else:
        slot = slots.get(id(expr))
        key = id(expr) if slot is None else ("slot", slot)
    if key in memo:
        return memo[key]
    if isinstance(expr, ColumnRef):
        memo[key] = result = _leaf(expr, batch)
        return result
    a, b = _node(expr.args[0], batch, memo, slots), _node(expr.args[1], batch, memo, slots)
    result = None
    if a is not None and b is not None:
        result = _operate(expr, a, b)
    memo[key] = result
    return result


def _operate(expr: Call, a, b):
    """``expr``'s values from its operands', or None when its range may leave int64 (past 2**62) or
    its values do not fit its type's precision. Ranges by interval arithmetic, exact in Python ints."""
    (va, sa, la, ha), (vb, sb, lb, hb) = a, b
    rt = expr.type
    if expr.op == "multiply":
        if sa + sb != rt.scale:
            return None             # MySQL caps a product's scale at 30: that rounds, 128-bit only
        corners = (la * lb, la * hb, ha * lb, ha * hb)
        low, high = min(corners), max(corners)
        if max(-low, high) >= _LIMIT:
            return None
        values = _apply(np.multiply, va, vb)
    else:
        shift_a, shift_b = rt.scale - sa, rt.scale - sb
        if shift_a < 0 or shift_b < 0 or shift_a > 18 or shift_b > 18:
            return None
        ka, kb = _POW10[shift_a], _POW10[shift_b]
        if max(abs(la), abs(ha)) * ka >= _LIMIT or max(abs(lb), abs(hb)) * kb >= _LIMIT:
            return None
        if expr.op == "add":
            low, high = la * ka + lb * kb, ha * ka + hb * kb
        else:
            low, high = la * ka - hb * kb, ha * ka - lb * kb
        if max(-low, high) >= _LIMIT:
            return None
        if ka != 1:
            va = _apply(np.multiply, va, ka)
        if kb != 1:
            vb = _apply(np.multiply, vb, kb)
        values = _apply(np.add if expr.op == "add" else np.subtract, va, vb)
    if rt.precision < 19 and max(-low, high) >= _POW10[rt.precision]:
        # the range allows a value of more digits than the result type has: look at the values
        low, high = (values, values) if isinstance(values, int) else \
            _range(values.values if isinstance(values, _Coded) else values)
        if max(-low, high) >= _POW10[rt.precision]:
            return None                 # an overflow: the 128-bit path raises it
    return values, rt.scale, low, high


def _apply(op, a: Values, b: Values) -> Values:
    """``op`` of two operands, each an int, an int64 array or a :class:`_Coded` column."""
    if isinstance(a, int) and isinstance(b, int):
        return a * b if op is np.multiply else a + b if op is np.add else a - b
    if isinstance(a, _Coded):
        if isinstance(b, int):
            return _Coded(op(a.values, b), a.codes)
        if isinstance(b, _Coded) and b.codes is a.codes:
            return _Coded(op(a.values, b.values), a.codes)
        a = a.rows()
    if isinstance(b, _Coded):
        if isinstance(a, int):
            return _Coded(op(a, b.values), b.codes)
        b = b.rows()
    return op(a, b)


__all__ = ["evaluate", "is_tree", "scaled_columns"]
