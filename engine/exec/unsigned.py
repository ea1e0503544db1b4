"""MySQL's BIGINT UNSIGNED arithmetic and casts, vectorised.

Canopy holds BIGINT UNSIGNED as DECIMAL(20, 0) (``engine.types.UBIGINT``). MySQL's rules on it:

* ``CAST(x AS UNSIGNED)`` of a negative integer wraps modulo 2^64 (``CAST(-1 AS UNSIGNED)`` is
  18446744073709551615); of a DECIMAL or DOUBLE it rounds (DECIMAL half away from zero, DOUBLE half to
  even) and clips to 0 .. 2^64 - 1; of a string it reads the leading integer ('12abc' is 12, 'abc' 0)
  and wraps a negative one like an integer.
* ``CAST(x AS SIGNED)`` of a BIGINT UNSIGNED above 2^63 - 1 wraps back (18446744073709551615 is -1).
* ``+ - *`` with an unsigned operand are BIGINT UNSIGNED; a result outside 0 .. 2^64 - 1 is the error
  'BIGINT UNSIGNED value is out of range'.

>>> to_unsigned(pa.array([-1, 5, None])).to_pylist()
[Decimal('18446744073709551615'), Decimal('5'), None]
>>> to_unsigned(pa.array(["12abc", "abc", " -1"])).to_pylist()
[Decimal('12'), Decimal('0'), Decimal('18446744073709551615')]
"""
from __future__ import annotations

import decimal
from typing import Union

import pyarrow as pa
import pyarrow.compute as pc

from engine.errors import BadDataError
from engine.exec import statement_warnings

Datum = Union[pa.Array, pa.ChunkedArray, pa.Scalar]

UNSIGNED = pa.decimal128(20, 0)
_WIDE = pa.decimal128(30, 0)        # every integer read here, and 2^64 added to one (no 38-digit sums)
_EXACT = pa.decimal128(38, 0)
_MAX = 2**64 - 1
_TWO_64 = pa.scalar(decimal.Decimal(2**64), _WIDE)
_ZERO = pa.scalar(decimal.Decimal(0), _WIDE)
_MAX_SCALAR = pa.scalar(decimal.Decimal(_MAX), _WIDE)
_LONGEST = 25        # digits of a string read exactly; longer ones clip (anything past 20 does anyway)


def to_unsigned(a: Datum) -> Datum:
    """``CAST(a AS UNSIGNED)`` (see the module docstring); ``a`` is an integer, decimal, floating,
    string, boolean or null Arrow datum."""
    t = a.type
    if pa.types.is_null(t) or pa.types.is_boolean(t):
        return a.cast(pa.int8()).cast(UNSIGNED) if pa.types.is_boolean(t) else a.cast(UNSIGNED)
    if pa.types.is_integer(t):
        wide = a.cast(pa.int64()).cast(_WIDE)
        _note_negative(wide)
        return _wrap(wide)
    if pa.types.is_decimal(t):
        from engine.exec import decimal128
        original = a
        if t.scale:
            a = decimal128.rescale(_whole(a), pa.decimal128(min(38, t.precision), 0))   # half away
        exact = a.cast(_EXACT)
        # MariaDB: Warning 1916 "Got overflow when converting '-5.500' to UNSIGNED INT. Value truncated"
        outside = pc.or_(pc.less(exact, pa.scalar(decimal.Decimal(0), _EXACT)),
                         pc.greater(exact, pa.scalar(decimal.Decimal(_MAX), _EXACT)))
        statement_warnings.flagged(original, outside, "Warning", statement_warnings.OVERFLOW,
                                   lambda v: f"Got overflow when converting '{v}' to UNSIGNED INT. Value truncated")
        return _clip(exact)
    if pa.types.is_floating(t):
        rounded = pc.round(a.cast(pa.float64()), round_mode="half_to_even")
        # MariaDB: Note 1916 "Got overflow when converting '1e30' to UNSIGNED BIGINT. Value truncated"
        outside = pc.or_(pc.less(rounded, 0.0), pc.greater_equal(rounded, float(2**64)))
        statement_warnings.flagged(a, outside, "Note", statement_warnings.OVERFLOW,
                                   lambda v: f"Got overflow when converting '{_double_text(v)}' to UNSIGNED BIGINT. "
                                             f"Value truncated")
        clipped = pc.max_element_wise(pc.min_element_wise(rounded, float(2**64), skip_nulls=False), 0.0,
                                      skip_nulls=False)
        wide = pc.if_else(pc.greater_equal(clipped, float(2**64)), _MAX_SCALAR, clipped.cast(_WIDE))
        return wide.cast(UNSIGNED)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        read = _leading_integer(a)
        # MariaDB: Warning 1292 "Truncated incorrect INTEGER value: '99999999999999999999'" past the range
        outside = pc.or_(pc.greater(read, _MAX_SCALAR), pc.less(read, pa.scalar(decimal.Decimal(-2**63), _WIDE)))
        statement_warnings.flagged(a, outside, "Warning", statement_warnings.TRUNCATED,
                                   lambda v: f"Truncated incorrect INTEGER value: '{v}'")
        wide = _clip_negative(read)
        _note_negative(wide, pc.invert(outside))        # (not after a truncation)
        return _wrap(wide)
    return _wrap(a.cast(pa.int64()).cast(_WIDE))


def _note_negative(wide: Datum, where=None) -> None:
    """MariaDB's Note 1105 for each negative integer an unsigned cast wraps (among ``where``)."""
    negative = pc.less(wide, _ZERO) if where is None else pc.and_(pc.less(wide, _ZERO), where)
    statement_warnings.flagged(wide, negative, "Note", statement_warnings.UNKNOWN,
                               lambda v: "Cast to unsigned converted negative integer to it's positive complement")


def _double_text(value: float) -> str:
    """A DOUBLE as MariaDB's messages print it: the shortest repr, exponent without '+' (1.5e30)."""
    return repr(value).replace("e+", "e")


def to_signed(a: Datum) -> Datum:
    """``CAST(a AS SIGNED)`` of a BIGINT UNSIGNED (DECIMAL(20, 0)) datum: wraps above 2^63 - 1."""
    wide = a.cast(_WIDE)
    big = pc.greater(wide, pa.scalar(decimal.Decimal(2**63 - 1), _WIDE))
    return pc.if_else(big, pc.subtract(wide, _TWO_64), wide).cast(_WIDE).cast(pa.int64())


def from_bits(a: Datum) -> Datum:
    """64 bits held as int64 read as BIGINT UNSIGNED (-1 is 18446744073709551615)."""
    return _wrap(a.cast(pa.int64()).cast(_WIDE))


def checked(result: Datum, expr) -> Datum:
    """An unsigned arithmetic result (scale 0, any precision) as BIGINT UNSIGNED; raises MySQL's error
    1690 naming ``expr`` when a value is below 0 or above 2^64 - 1."""
    low, high = _bounds(result)
    if (low is not None and low < 0) or (high is not None and high > _MAX):
        raise BadDataError(f"BIGINT UNSIGNED value is out of range in '{expr}'")
    return result.cast(UNSIGNED)


def _bounds(d: Datum):
    if isinstance(d, pa.Scalar):
        value = d.as_py()
        return value, value
    if len(d) == d.null_count:
        return None, None
    low, high = pc.min_max(d).values()
    return low.as_py(), high.as_py()


def _wrap(wide: Datum) -> Datum:
    """Integers of DECIMAL(38, 0) in -2^63 .. 2^64 - 1: negatives wrapped modulo 2^64."""
    return pc.if_else(pc.less(wide, _ZERO), pc.add(wide, _TWO_64).cast(_WIDE), wide).cast(UNSIGNED)


def _clip(exact: Datum) -> Datum:
    """DECIMAL(38, 0) clipped to 0 .. 2^64 - 1 (MySQL's unsigned cast of an exact value)."""
    zero, top = pa.scalar(decimal.Decimal(0), _EXACT), pa.scalar(decimal.Decimal(_MAX), _EXACT)
    clipped = pc.if_else(pc.less(exact, zero), zero, pc.if_else(pc.greater(exact, top), top, exact))
    return clipped.cast(UNSIGNED)


def _clip_negative(wide: Datum) -> Datum:
    """Integers read from text: above 2^64 - 1 clip to it, below -2^63 to -2^63 (then wrapped)."""
    lowest = pa.scalar(decimal.Decimal(-2**63), _WIDE)
    return pc.if_else(pc.greater(wide, _MAX_SCALAR), _MAX_SCALAR,
                      pc.if_else(pc.less(wide, lowest), lowest, wide))


def _leading_integer(s: Datum) -> Datum:
    """MySQL's integer reading of a string: its leading [+-]digits after spaces, 0 when there are none."""
    text = pc.utf8_ltrim_whitespace(s)
    digits = pc.extract_regex(text, r"^(?P<n>[+-]?[0-9]+)")
    number = pc.struct_field(digits, [0])
    number = pc.if_else(pc.is_null(number), pc.if_else(pc.is_null(s), pa.scalar(None, pa.string()), "0"), number)
    # more digits than DECIMAL(38) holds clip anyway: keep the sign and a value past the clip point
    too_long = pc.greater(pc.utf8_length(number), _LONGEST)
    negative = pc.starts_with(number, "-")
    number = pc.if_else(too_long, pc.if_else(negative, "-" + "9" * _LONGEST, "9" * _LONGEST), number)
    return number.cast(_WIDE)


def _whole(d: Datum):
    return d.combine_chunks() if isinstance(d, pa.ChunkedArray) else d
