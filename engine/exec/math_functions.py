"""MySQL's numeric functions over Arrow: ABS, ROUND, FLOOR, CEIL, TRUNCATE (exact on DECIMAL), the float
functions (trigonometry, DEGREES / RADIANS), SQRT / LN / LOG / ASIN / ACOS (NULL outside their domain),
SIGN, and the bit operators & | ^ ~ << >> and BIT_COUNT on 64-bit unsigned words. Moved out of :mod:`engine.exec.evaluate`,
which registers them by importing this module.
"""
from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.errors import BadDataError
from engine.exec import decimal128, unsigned
from engine.exec.evaluate import HALF_AWAY, _to_integer, _whole, function


# --- math -----------------------------------------------------------------------------------------
@function("abs")
def _abs(expr, a):
    return pc.abs_checked(a)


@function("round")
def _round(expr, a, digits=None):
    nd = digits.as_py() if digits is not None else 0
    if pa.types.is_decimal(a.type):
        return decimal128.round_digits(_whole(a), nd, expr.type.to_arrow())
    if pa.types.is_integer(a.type) and nd >= 0:
        return a.cast(expr.type.to_arrow())          # nothing to round (and no trip through DOUBLE)
    # MySQL: exact values round half away from zero, doubles to nearest even (the C library's rint)
    result = pc.round(a, ndigits=nd, round_mode="half_to_even" if pa.types.is_floating(a.type) else HALF_AWAY)
    return result.cast(expr.type.to_arrow())


@function("floor")
def _floor(expr, a):
    if pa.types.is_integer(a.type):
        return a.cast(expr.type.to_arrow())
    if pa.types.is_decimal(a.type):
        return _to_integer(decimal128.floor_or_ceiling(_whole(a), ceiling=False), expr.type.to_arrow())
    return pc.floor(a).cast(expr.type.to_arrow())


@function("ceil")
def _ceil(expr, a):
    if pa.types.is_integer(a.type):
        return a.cast(expr.type.to_arrow())
    if pa.types.is_decimal(a.type):
        return _to_integer(decimal128.floor_or_ceiling(_whole(a), ceiling=True), expr.type.to_arrow())
    return pc.ceil(a).cast(expr.type.to_arrow())


def _float_fn(name):
    def fn(expr, *args):
        args = [a.cast(pa.float64()) for a in args]
        result = getattr(pc, name)(*args)
        if name in ("exp", "power") and _overflowed(result, args):
            raise BadDataError(f"DOUBLE value is out of range in '{expr}'")
        return result
    return fn


def _overflowed(result, args) -> bool:
    """Whether an infinite result came from finite operands (MySQL's error 1690, not inf)."""
    infinite = pc.is_inf(result)
    if not pc.any(infinite).as_py():
        return False
    finite = infinite
    for a in args:
        finite = pc.and_(finite, pc.invert(pc.is_inf(a)))
    return bool(pc.any(finite).as_py())


for _sql, _pc in (("exp", "exp"), ("power", "power"), ("sin", "sin"), ("cos", "cos"), ("tan", "tan")):
    function(_sql)(_float_fn(_pc))


def _null_outside_domain(name):
    """MySQL returns NULL (not NaN or -inf) for SQRT of a negative number and LN / LOG of x <= 0."""
    def fn(expr, a):
        a = a.cast(pa.float64())
        outside = pc.less(a, 0) if name == "sqrt" else pc.less_equal(a, 0)
        return pc.if_else(outside, pa.scalar(None, pa.float64()), getattr(pc, name)(a))
    return fn


for _sql in ("sqrt", "ln", "log10", "log2"):
    function(_sql)(_null_outside_domain(_sql))


@function("sign")
def _sign(expr, a):
    return pc.sign(a).cast(pa.int64())


@function("truncate")
def _truncate(expr, a, digits):
    """TRUNCATE(x, d): x cut (towards zero) to d decimals; d < 0 zeroes digits left of the point.
    Exact on DECIMAL and integers; the binder made the result type (a DECIMAL's scale is min(d, its))."""
    nd = digits.as_py()
    result = pc.round(a, ndigits=nd, round_mode="towards_zero")
    return result.cast(expr.type.to_arrow())


for _sql, _pc in (("atan", "atan"), ("atan2", "atan2")):
    function(_sql)(_float_fn(_pc))


def _null_outside_unit(name):
    """ASIN / ACOS: NULL outside -1 .. 1 (MySQL), not NaN."""
    def fn(expr, a):
        a = a.cast(pa.float64())
        outside = pc.greater(pc.abs(a), 1)
        return pc.if_else(outside, pa.scalar(None, pa.float64()), getattr(pc, name)(a))
    return fn


for _sql in ("asin", "acos"):
    function(_sql)(_null_outside_unit(_sql))


@function("cot")
def _cot(expr, a):
    """COT(x) = 1 / TAN(x); MySQL's COT(0) is an out-of-range error, here as dividing by zero does."""
    tangent = pc.tan(a.cast(pa.float64()))
    if pc.any(pc.equal(tangent, 0)).as_py():
        raise BadDataError("DOUBLE value is out of range in 'cot(0)'")
    return pc.divide(1.0, tangent)


@function("degrees")
def _degrees(expr, a):
    return pc.multiply(a.cast(pa.float64()), 180.0 / math.pi)


@function("radians")
def _radians(expr, a):
    return pc.multiply(a.cast(pa.float64()), math.pi / 180.0)


# --- bit operations: MySQL works on the 64 bits of BIGINT UNSIGNED ----------------------------------
# MySQL works on each operand's 64 bits as an unsigned number: integers as they are (a negative one in
# two's complement), DECIMAL and DOUBLE rounded half away from zero first (2.5 | 0 is 3, -0.5 | 0 is
# 2^64 - 1), strings read as DOUBLE by the binder. The result is BIGINT UNSIGNED (Canopy's DECIMAL(20, 0)).
def _bits(a) -> pa.Array:
    """The operand's 64 bits as int64 (a constant as a one-element array)."""
    if isinstance(a, pa.Scalar):
        a = pa.array([a.as_py()], a.type)
    elif isinstance(a, pa.ChunkedArray):
        a = a.combine_chunks()
    if pa.types.is_decimal(a.type):
        if a.type.scale == 0 and a.type.precision == unsigned.UNSIGNED.precision:
            return unsigned.to_signed(a)            # BIGINT UNSIGNED
        wide = a.cast(pa.decimal128(38, a.type.scale))      # room for the carry of rounding 99.9 up
        return pc.round(wide, ndigits=0, round_mode="half_towards_infinity").cast(pa.int64())
    if pa.types.is_floating(a.type):
        # rounded, then saturated to -2^63 .. 2^64 - 1 (MariaDB: 1e300 | 0 is 18446744073709551615); a
        # value past 2^63 keeps its unsigned bits
        whole = np.asarray(pc.round(a, ndigits=0, round_mode="half_towards_infinity").fill_null(0.0), np.float64)
        big = whole >= 2.0**63
        low = np.clip(np.where(big, 0.0, whole), -2.0**63, 2.0**63 - 1024).astype(np.int64)
        high = np.where(whole >= 2.0**64, np.uint64(2**64 - 1),
                        np.clip(np.where(big, whole, 0.0), 0, 2.0**64 - 4096).astype(np.uint64)).view(np.int64)
        return pa.array(np.where(big, high, low), mask=np.asarray(a.is_null()) if a.null_count else None)
    return a.cast(pa.int64())


def _as_unsigned_result(words: np.ndarray, valid: np.ndarray, scalar: bool):
    result = unsigned.from_bits(pa.array(words.view(np.int64), mask=~valid))
    return result[0] if scalar else result


def _numpy_bits(a: pa.Array):
    valid = np.asarray(a.is_valid())
    return np.asarray(a.fill_null(0)).view(np.uint64), valid


@function("bit_op")
def _bit_op(expr, a, b):
    scalar = isinstance(a, pa.Scalar) and isinstance(b, pa.Scalar)
    x, y = _bits(a), _bits(b)
    (xw, xv), (yw, yv) = _numpy_bits(x), _numpy_bits(y)
    op = expr.options[0]
    if op in ("<<", ">>"):
        shift = np.minimum(yw, 64)
        safe = np.where(shift >= 64, 0, shift).astype(np.uint64)
        moved = np.left_shift(xw, safe) if op == "<<" else np.right_shift(xw, safe)
        words = np.where(shift >= 64, np.uint64(0), moved)
    else:
        words = {"&": np.bitwise_and, "|": np.bitwise_or, "^": np.bitwise_xor}[op](xw, yw)
    return _as_unsigned_result(np.asarray(words, np.uint64), xv & yv, scalar)


@function("bit_not")
def _bit_not(expr, a):
    x = _bits(a)
    words, valid = _numpy_bits(x)
    return _as_unsigned_result(np.invert(words), valid, isinstance(a, pa.Scalar))


@function("bit_count")
def _bit_count(expr, a):
    x = _bits(a)
    words, valid = _numpy_bits(x)
    counts = np.bitwise_count(words) if hasattr(np, "bitwise_count") else \
        np.unpackbits(words.view(np.uint8).reshape(-1, 8), axis=1).sum(axis=1)
    result = pa.array(counts.astype(np.int64), mask=~valid)
    return result[0] if isinstance(a, pa.Scalar) else result
