"""Exact DECIMAL arithmetic with MySQL's result types, on the 128-bit kernels.

``add(a, b, rt)``, ``divide(a, b, rt)``, ``multiply(a, b, rt)`` and ``mod(a, b, rt)`` take decimal128 operands (arrays
or scalars) and return a decimal128 of the result type ``rt`` (chosen by
``engine.types.arithmetic_type``): the exact quotient, product or remainder, rounded half away from
zero to ``rt``'s scale, NULL where an operand is NULL or a divisor is 0, and
:class:`DecimalOverflow` when a value does not fit ``rt``'s precision. ``int_divide`` is SQL's DIV:
the quotient truncated to a BIGINT.
The per-row work is ``kernels.decimal_add`` / ``decimal_divide`` / ``decimal_multiply``; this module only
moves Arrow buffers in and out.
"""
from __future__ import annotations

from typing import Union

import decimal

import numpy as np
import pyarrow as pa

import kernels

Operand = Union[pa.Array, pa.Scalar]

_EXACT = decimal.Context(prec=100)       # scaleb under the default context rounds to 28 digits


class DecimalOverflow(ArithmeticError):
    """A DECIMAL result does not fit its type's precision (MySQL: 'DECIMAL value is out of range')."""


def _words(d: Operand) -> tuple[np.ndarray, int]:
    """The scaled integers of a decimal128 operand as two int64 words per row, and its step."""
    if isinstance(d, pa.Scalar):
        value = int(d.as_py().scaleb(d.type.scale, _EXACT)) if d.is_valid else 0
        return np.array([value & ((1 << 64) - 1), (value >> 64) & ((1 << 64) - 1)], dtype=np.uint64).view(np.int64), 0
    buffer = d.buffers()[1]
    if buffer is None:                                   # an all-null array may carry no data
        return np.zeros(2 * len(d), dtype=np.int64), 1
    words = np.frombuffer(buffer, dtype=np.int64)
    return words[2 * d.offset: 2 * (d.offset + len(d))], 1


def _valid(n: int, *operands: Operand) -> np.ndarray:
    """One byte per row: 1 where every operand is non-null."""
    valid = np.ones(n, dtype=np.uint8)
    for d in operands:
        if isinstance(d, pa.Scalar):
            if not d.is_valid:
                valid[:] = 0
        elif d.null_count:
            valid &= np.asarray(d.is_valid()).view(np.uint8)
    return valid


def _run(kernel, a: Operand, b: Operand, rt: pa.Decimal128Type, *arguments: int) -> Operand:
    scalar = isinstance(a, pa.Scalar) and isinstance(b, pa.Scalar)
    n = 1 if scalar else len(a if not isinstance(a, pa.Scalar) else b)
    (wa, step_a), (wb, step_b) = _words(a), _words(b)
    valid = _valid(n, a, b)
    out = np.empty(2 * n, dtype=np.int64)
    first = kernel(wa, step_a, wb, step_b, *arguments, rt.precision, out, valid)
    if first >= 0:
        raise DecimalOverflow(f"DECIMAL value is out of range: the result does not fit DECIMAL"
                              f"({rt.precision},{rt.scale})")
    bitmap = None
    if not valid.all():     # the kernel skipped these rows (or made them NULL: x / 0): words of 0
        out.reshape(-1, 2)[valid == 0] = 0
        bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
    result = pa.Array.from_buffers(rt, n, [bitmap, pa.py_buffer(out)])
    return result[0] if scalar else result


# Sums of decimals of up to 18 digits stay far below 2**127 (10**18 x 10**20 rows); wider ones are
# summed by Arrow in 256 bits (its decimal128 sum wraps past 2**127 without a word) and narrowed back.
_NARROW_SAFE_DIGITS = 18


def widen_for_sum(values: pa.Array) -> pa.Array:
    """``values`` as Arrow should sum them: decimals of more than 18 digits as decimal256."""
    t = values.type
    if pa.types.is_decimal128(t) and t.precision > _NARROW_SAFE_DIGITS:
        return values.cast(pa.decimal256(76, t.scale))
    return values


def narrow_sum(values, scale: int):
    """A sum computed on ``widen_for_sum``'s values back to DECIMAL(38, scale); a sum of more than
    38 digits raises :class:`DecimalOverflow`."""
    if not pa.types.is_decimal256(values.type):
        return values
    try:
        return values.cast(pa.decimal128(38, scale))
    except pa.ArrowInvalid:
        raise DecimalOverflow("DECIMAL value is out of range: a SUM does not fit DECIMAL(38)") from None


def _quotient(a: Operand, b: Operand, rt: pa.Decimal128Type, op: int) -> Operand:
    shift = rt.scale - a.type.scale + b.type.scale          # quotient = a * 10**shift / b, scaled
    return _run(kernels.decimal_divide, a, b, rt, max(shift, 0), max(-shift, 0), op)


def divide(a: Operand, b: Operand, rt: pa.Decimal128Type) -> Operand:
    """``a / b`` rounded half away to ``rt.scale``; NULL where ``b`` is 0."""
    return _quotient(a, b, rt, kernels.DECIMAL_DIVIDE)


def int_divide(a: Operand, b: Operand) -> Operand:
    """``a DIV b``: the exact quotient truncated toward zero, as int64 (a BIGINT overflow raises)."""
    quotient = _quotient(a, b, pa.decimal128(38, 0), kernels.DECIMAL_INT_DIVIDE)
    try:
        return quotient.cast(pa.int64())
    except pa.ArrowInvalid:
        raise DecimalOverflow("BIGINT value is out of range: the quotient of DIV") from None


def mod(a: Operand, b: Operand, rt: pa.Decimal128Type) -> Operand:
    """``a % b`` at ``rt.scale`` (the larger operand scale), with the sign of ``a``."""
    return _run(kernels.decimal_divide, a, b, rt, rt.scale - a.type.scale, rt.scale - b.type.scale,
                kernels.DECIMAL_MOD)


_ONE = pa.scalar(decimal.Decimal(1), pa.decimal128(1, 0))


def rescale(a: Operand, target: pa.Decimal128Type) -> Operand:
    """``a`` at ``target``'s scale, rounded half away from zero (MySQL's CAST), checked against its
    precision. (Arrow's own decimal round turns a value that outgrows its precision into 0.)"""
    return divide(a, _ONE, target)


def round_digits(a: Operand, digits: int, target: pa.Decimal128Type) -> Operand:
    """SQL's ROUND(a, digits) of a decimal, half away from zero; ``digits`` < 0 rounds to tens,
    hundreds, ... (ROUND(1250, -2) = 1300). The result has ``target``'s type."""
    if digits >= 0:
        return rescale(rescale(a, pa.decimal128(38, min(digits, a.type.scale))), target)
    k = min(-digits, 38)
    whole = pa.decimal128(38, 0)                # round(a / 10**k) in one rounding, then times 10**k
    coarse = _run(kernels.decimal_divide, a, _ONE, whole, 0, a.type.scale + k, kernels.DECIMAL_DIVIDE)
    return multiply(coarse, pa.scalar(decimal.Decimal(10 ** min(k, 37)), whole), whole).cast(target)


def floor_or_ceiling(a: Operand, ceiling: bool) -> Operand:
    """SQL's FLOOR / CEILING of a decimal, exact, as DECIMAL(38, 0)."""
    op = kernels.DECIMAL_CEILING_DIVIDE if ceiling else kernels.DECIMAL_FLOOR_DIVIDE
    return _run(kernels.decimal_divide, a, _ONE, pa.decimal128(38, 0), 0, a.type.scale, op)


def add(a: Operand, b: Operand, rt: pa.Decimal128Type, subtract: bool = False) -> Operand:
    """``a + b`` (``a - b`` when ``subtract``) at ``rt``'s scale (at least each operand's: exact)."""
    shift_a, shift_b = rt.scale - a.type.scale, rt.scale - b.type.scale
    if shift_a < 0 or shift_b < 0:
        raise ValueError(f"sum scale {rt.scale} below its operands' {a.type.scale}, {b.type.scale}")
    if kernels.decimal_add is None:     # kernels built before decimal_add: Arrow's checked add
        import pyarrow.compute as pc
        wide = pa.decimal128(rt.precision, rt.scale) if rt.precision < 38 else pa.decimal256(rt.precision, rt.scale)
        try:
            return (pc.subtract_checked if subtract else pc.add_checked)(a.cast(wide), b.cast(wide)).cast(rt)
        except pa.ArrowInvalid:
            raise DecimalOverflow(f"DECIMAL value is out of range: the result does not fit DECIMAL"
                                  f"({rt.precision},{rt.scale})") from None
    return _run(kernels.decimal_add, a, b, rt, shift_a, shift_b, subtract)


def multiply(a: Operand, b: Operand, rt: pa.Decimal128Type) -> Operand:
    """``a * b`` rounded half away to ``rt.scale`` (below s_a + s_b only when MySQL caps it at 30)."""
    down = a.type.scale + b.type.scale - rt.scale
    if down < 0:
        raise ValueError(f"product scale {rt.scale} above its operands' {a.type.scale} + {b.type.scale}")
    return _run(kernels.decimal_multiply, a, b, rt, down)


__all__ = ["DecimalOverflow", "add", "divide", "int_divide", "mod", "multiply", "rescale", "round_digits", "floor_or_ceiling", "widen_for_sum", "narrow_sum"]
