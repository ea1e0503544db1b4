"""Filter kernels, one plain (unencoded) column against SQL constants: the constant turned into the
integer range, float code or byte string the comparison loops (kernels/filter_compare.pyx) take, and
the three-valued result. Integer-like columns clamp the constant to the type's range (``x < 300`` on
an int8 column is "all rows", ``x = 2.5`` is "no row"); decimals rescale it exactly, never by
rounding. See kernels/filter.pyx for the family.
"""
from kernels.filter cimport (CANOPY_BETWEEN, CANOPY_EQ, CANOPY_GE, CANOPY_GT, CANOPY_LE, CANOPY_LT,
                             CANOPY_NE, CANOPY_STR_CONTAINS, CANOPY_STR_EQUAL, CANOPY_STR_PREFIX,
                             CANOPY_STR_SUFFIX)

import decimal
import functools

import numpy as np
import pyarrow as pa

from kernels.filter_compare import compare_floats, match_strings, range_decimal128, range_integers
from kernels.filter_tristate import (_constant_result, _string_parts, _values, _with_validity, _zeros,
                                     not_kleene)

__all__ = ["OPERATORS", "STRING_MATCHES", "supports_compare"]

OPERATORS = ("eq", "ne", "lt", "le", "gt", "ge", "between")
STRING_MATCHES = ("equal", "prefix", "suffix", "contains")
_FLOAT_OPS = {"eq": CANOPY_EQ, "ne": CANOPY_NE, "lt": CANOPY_LT, "le": CANOPY_LE, "gt": CANOPY_GT,
              "ge": CANOPY_GE, "between": CANOPY_BETWEEN}
_STRING_KINDS = {"equal": CANOPY_STR_EQUAL, "prefix": CANOPY_STR_PREFIX,
                 "suffix": CANOPY_STR_SUFFIX, "contains": CANOPY_STR_CONTAINS}


_INT_RANGES = {8: (-2**7, 2**7 - 1), 16: (-2**15, 2**15 - 1), 32: (-2**31, 2**31 - 1),
               64: (-2**63, 2**63 - 1)}


def _floor_ceil(c):
    """(floor, ceil) of an exact constant (int or Decimal)."""
    if isinstance(c, int):
        return c, c
    return int(c.to_integral_value(decimal.ROUND_FLOOR)), int(c.to_integral_value(decimal.ROUND_CEILING))


def _integer_range(op, a, b, tmin, tmax):
    """Turn ``v <op> a [and b]`` over integers in ``[tmin, tmax]`` into ``(lo, hi, negate)``, or
    into True / False when every / no non-null row matches."""
    fa, ca = _floor_ceil(a)
    if op == "eq":
        lo, hi, negate = (fa, fa, False) if fa == ca else (1, 0, False)
    elif op == "ne":
        if fa != ca:
            return True
        lo, hi, negate = fa, fa, True
    elif op == "lt":
        lo, hi, negate = tmin, ca - 1, False
    elif op == "le":
        lo, hi, negate = tmin, fa, False
    elif op == "gt":
        lo, hi, negate = fa + 1, tmax, False
    elif op == "ge":
        lo, hi, negate = ca, tmax, False
    else:
        fb, _ = _floor_ceil(b)
        lo, hi, negate = ca, fb, False
    lo, hi = max(lo, tmin), min(hi, tmax)
    if lo > hi:
        return negate
    if lo == tmin and hi == tmax:
        return not negate
    return lo, hi, negate


def _integer_constant(value, t):
    """An exact integer-domain constant for a column of type ``t``: the stored integer of a date or
    timestamp, the scaled integer of a decimal (as a Decimal when not integral), ints as they are."""
    if pa.types.is_decimal(t):
        if isinstance(value, float):
            raise TypeError("compare decimals with Decimal or int constants, not float")
        return decimal.Decimal(value).scaleb(t.scale, decimal.Context(prec=100))
    if pa.types.is_integer(t):
        if isinstance(value, bool) or not isinstance(value, (int, decimal.Decimal)):
            raise TypeError(f"compare integers with int or Decimal constants, not {type(value).__name__}")
        if isinstance(value, decimal.Decimal):
            if not value.is_finite():
                raise TypeError("non-finite constant")
            return value if value != value.to_integral_value() else int(value)
        return value
    return _stored_integer(value, t)


@functools.lru_cache(maxsize=1024, typed=True)
def _stored_integer(value, t):
    """A date32 or timestamp constant as stored (days, ticks in the column's unit). Kept: a scan
    compares each batch with the same constants, and Arrow's scalar cast costs ~20 us a call."""
    return pa.scalar(value, type=t).cast(_STORAGE[t.bit_width]).as_py()


_STORAGE = {32: pa.int32(), 64: pa.int64()}
_NP_INTS = {8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}


def supports_compare(t):
    """Whether ``compare`` takes columns of Arrow type ``t`` (dictionary and run-end encoded arrays
    are taken when their value type is)."""
    if pa.types.is_dictionary(t):
        return supports_compare(t.value_type)
    if pa.types.is_run_end_encoded(t):
        return supports_compare(t.value_type)
    return (pa.types.is_integer(t) and pa.types.is_signed_integer(t)) or pa.types.is_date32(t) \
        or pa.types.is_timestamp(t) or pa.types.is_float32(t) or pa.types.is_float64(t) \
        or (pa.types.is_decimal(t) and t.byte_width == 16) or pa.types.is_string(t) \
        or pa.types.is_large_string(t)


def _compare_plain(arr, op, a, b):
    t = arr.type
    n = len(arr)
    out = _zeros(n)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        if op not in ("eq", "ne"):
            raise TypeError(f"string columns support = and <> here, not {op}")
        result = _match_plain(arr, "equal", a)
        if op == "ne":
            return not_kleene(result)
        return result
    if pa.types.is_float32(t) or pa.types.is_float64(t):
        if isinstance(a, (decimal.Decimal, int)) and not isinstance(a, bool):
            a = float(a)
        if b is not None and isinstance(b, (decimal.Decimal, int)):
            b = float(b)
        if not isinstance(a, float) or (b is not None and not isinstance(b, float)):
            raise TypeError("compare floats with numeric constants")
        dtype = np.float32 if pa.types.is_float32(t) else np.float64
        compare_floats(_values(arr, dtype), _FLOAT_OPS[op], dtype(a), dtype(b if b is not None else 0.0), out)
        return _with_validity(arr, out)
    if pa.types.is_decimal(t):
        lo_hi = _integer_range(op, _integer_constant(a, t), None if b is None else _integer_constant(b, t),
                               -2**127, 2**127 - 1)
        if isinstance(lo_hi, bool):
            return _constant_result(arr, lo_hi)
        lo, hi, negate = lo_hi
        words = np.frombuffer(arr.buffers()[1], dtype=np.uint64, count=2 * n, offset=16 * arr.offset)
        if not words.flags.aligned:
            words = words.copy()
        range_decimal128(words, lo, hi, negate, out)
        return _with_validity(arr, out)
    bits = 32 if pa.types.is_date32(t) else t.bit_width
    tmin, tmax = _INT_RANGES[bits]
    lo_hi = _integer_range(op, _integer_constant(a, t), None if b is None else _integer_constant(b, t),
                           tmin, tmax)
    if isinstance(lo_hi, bool):
        return _constant_result(arr, lo_hi)
    lo, hi, negate = lo_hi
    dtype = _NP_INTS[bits]
    range_integers(_values(arr, dtype), dtype(lo), dtype(hi), negate, out)
    return _with_validity(arr, out)


def _match_plain(arr, kind, needle):
    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        raise TypeError(f"string matches need a string column, not {arr.type}")
    if not isinstance(needle, str):
        raise TypeError(f"string matches need a str constant, not {type(needle).__name__}")
    n = len(arr)
    out = _zeros(n)
    if n:
        offsets, data = _string_parts(arr)
        match_strings(offsets, data, _STRING_KINDS[kind], np.frombuffer(needle.encode(), dtype=np.uint8), out)
    return _with_validity(arr, out)
