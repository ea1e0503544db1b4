"""pyarrow.compute reference for kernels/filter.pyx: same functions, same results.

Each predicate decodes dictionary and run-end-encoded arrays and calls the matching
``pyarrow.compute`` function; constants that pyarrow cannot compare exactly with the column (an
integer beyond the column's type, a decimal at a finer scale than 38 digits allow) are compared in
Python instead. It is meant to be obviously right; the tests hold the kernels to it.
"""
from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["OPERATORS", "STRING_MATCHES", "compare", "match_string", "count_matches", "and_kleene",
           "or_kleene", "not_kleene", "selection", "count_true", "supports_compare"]

OPERATORS = ("eq", "ne", "lt", "le", "gt", "ge", "between")
STRING_MATCHES = ("equal", "prefix", "suffix", "contains")
_PC = {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal", "gt": "greater",
       "ge": "greater_equal"}
_PY = {"eq": lambda x, c: x == c, "ne": lambda x, c: x != c, "lt": lambda x, c: x < c,
       "le": lambda x, c: x <= c, "gt": lambda x, c: x > c, "ge": lambda x, c: x >= c}


def supports_compare(t: pa.DataType) -> bool:
    """See ``kernels.filter.supports_compare``."""
    if pa.types.is_dictionary(t) or pa.types.is_run_end_encoded(t):
        return supports_compare(t.value_type)
    return (pa.types.is_signed_integer(t) or pa.types.is_date32(t) or pa.types.is_timestamp(t)
            or pa.types.is_float32(t) or pa.types.is_float64(t)
            or (pa.types.is_decimal(t) and t.byte_width == 16)
            or pa.types.is_string(t) or pa.types.is_large_string(t))


def _decode(arr: pa.Array) -> pa.Array:
    if pa.types.is_dictionary(arr.type):
        return arr.dictionary_decode()
    if pa.types.is_run_end_encoded(arr.type):
        return pc.run_end_decode(arr)
    return arr


def _fits(value, t: pa.DataType) -> bool:
    """Whether pyarrow can hold ``value`` in type ``t`` without changing it."""
    try:
        return pa.scalar(value, type=t).as_py() == value
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError, ValueError):
        return False


def _python_compare(arr: pa.Array, op: str, a, b) -> pa.Array:
    """Row by row in Python with exact arithmetic (ints and Decimals compare exactly)."""
    def test(x):
        if x is None:
            return None
        return a <= x <= b if op == "between" else _PY[op](x, a)
    return pa.array([test(x) for x in arr.to_pylist()], type=pa.bool_())


def _compare_plain(arr: pa.Array, op: str, a, b) -> pa.Array:
    t = arr.type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        if op not in ("eq", "ne") or not isinstance(a, str):
            raise TypeError(f"string columns support = and <> with str constants, not {op}")
    if pa.types.is_floating(t):
        if not isinstance(a, (int, float, decimal.Decimal)) or isinstance(a, bool):
            raise TypeError("compare floats with numeric constants")
        a = float(a)
        b = float(b) if b is not None else None
    if pa.types.is_integer(t) and (isinstance(a, (bool, float)) or isinstance(b, (bool, float))):
        raise TypeError("compare integers with int or Decimal constants")
    if pa.types.is_decimal(t) and (isinstance(a, float) or isinstance(b, float)):
        raise TypeError("compare decimals with Decimal or int constants")
    constants = [a] if b is None else [a, b]
    # Floats round the constant to the column's width, as the engine's literal of that type does.
    if pa.types.is_floating(t) or all(_fits(c, t) for c in constants):
        if op == "between":
            lo, hi = pa.scalar(a, type=t), pa.scalar(b, type=t)
            return pc.and_kleene(pc.greater_equal(arr, lo), pc.less_equal(arr, hi))
        return getattr(pc, _PC[op])(arr, pa.scalar(a, type=t))
    if pa.types.is_integer(t) or pa.types.is_decimal(t):
        return _python_compare(arr, op, *(decimal.Decimal(c) for c in (a, b if b is not None else a)))
    raise TypeError(f"constant {a!r} does not fit a column of type {t}")


def compare(arr: pa.Array, op: str, value, value2=None) -> pa.BooleanArray:
    """See ``kernels.filter.compare``."""
    if not isinstance(arr, pa.Array):
        raise TypeError(f"expected a pyarrow Array, got {type(arr).__name__}")
    if op not in OPERATORS:
        raise ValueError(f"op must be one of {OPERATORS}, not {op!r}")
    if not supports_compare(arr.type):
        raise TypeError(f"cannot compare a column of type {arr.type}")
    plain = _decode(arr)
    if value is None or (op == "between" and value2 is None):
        return pa.nulls(len(arr), pa.bool_())
    return _compare_plain(plain, op, value, value2)


def match_string(arr: pa.Array, kind: str, needle: str) -> pa.BooleanArray:
    """See ``kernels.filter.match_string``."""
    if not isinstance(arr, pa.Array):
        raise TypeError(f"expected a pyarrow Array, got {type(arr).__name__}")
    if kind not in STRING_MATCHES:
        raise ValueError(f"kind must be one of {STRING_MATCHES}, not {kind!r}")
    plain = _decode(arr)
    if not (pa.types.is_string(plain.type) or pa.types.is_large_string(plain.type)):
        raise TypeError(f"string matches need a string column, not {arr.type}")
    if not isinstance(needle, str):
        raise TypeError(f"string matches need a str constant, not {type(needle).__name__}")
    if kind == "equal":
        return pc.equal(plain, pa.scalar(needle, plain.type))
    if kind == "prefix":
        return pc.starts_with(plain, needle)
    if kind == "suffix":
        return pc.ends_with(plain, needle)
    return pc.match_substring(plain, needle)


def count_matches(arr: pa.Array, op: str, value, value2=None) -> int:
    """See ``kernels.filter.count_matches`` (the reference expands runs)."""
    return count_true(compare(arr, op, value, value2))


def and_kleene(a: pa.Array, b: pa.Array) -> pa.BooleanArray:
    return pc.and_kleene(a, b)


def or_kleene(a: pa.Array, b: pa.Array) -> pa.BooleanArray:
    return pc.or_kleene(a, b)


def not_kleene(a: pa.Array) -> pa.BooleanArray:
    return pc.invert(a)


def selection(a: pa.Array) -> pa.BooleanArray:
    return pc.fill_null(a, False) if a.null_count else a


def count_true(a: pa.Array) -> int:
    return int(np.count_nonzero(selection(a).to_numpy(zero_copy_only=False)))
