"""``CAST(x AS SIGNED)`` and ``CAST(x AS DECIMAL(p, s))`` of a value past the type's range, as MariaDB
does it outside a write: the value is clipped to the type's bound and a warning says so (SHOW WARNINGS),
where Arrow's checked casts would fail the query. Checked against MariaDB 10.11:

* DECIMAL to SIGNED: rounded half away from zero, then clipped to -2^63 .. 2^63 - 1, Warning 1916
  "Got overflow when converting '-99999999999999999999.50000' to INT. Value truncated";
* DOUBLE to SIGNED: rounded half to even, clipped, a *Note* 1916 "... converting '1e30' to SIGNED BIGINT.
  Value truncated";
* text to SIGNED (its leading integer, as any text read as a number): below -2^63 it clips to -2^63 and
  above 2^64 - 1 to 2^64 - 1, both with Warning 1292 "Truncated incorrect INTEGER value: '...'"; an
  integer in 2^63 .. 2^64 - 1 (or clipped to 2^64 - 1) then wraps to a negative one, as MariaDB reads it
  unsigned first (CAST('18446744073709551615' AS SIGNED) is -1), with Note 1105 "Cast to signed
  converted positive out-of-range integer to it's negative complement" where it did not clip;
* any number or text to DECIMAL(p, s): rounded half away to scale s, then clipped to
  ±(10^p - 1) / 10^s, Warning 1264 "Out of range value for column 'CAST(v AS DECIMAL(4,2))' at row N".
  MariaDB names the select list item: its alias, '(null)' for a CAST inside an expression, the CAST
  where it is the item (the binder's NAMED option says which); it counts rows as it reads them, Canopy
  within the batch it evaluates (1 for a constant).

In a write under strict mode (INSERT, UPDATE, CREATE TABLE ... AS: Canopy always runs strict) the
binder adds STRICT: what MariaDB warns of with a Warning fails the statement (BadDataError with the
warning's message and code), as strict mode turns those warnings into errors (also text that is not a
number in full, 1292: ``statement_warnings.truncated``); a Note does not
(``INSERT ... SELECT CAST(1e30 AS SIGNED)`` stores 2^63 - 1).

>>> import engine.exec.statement_warnings as w
>>> sink = w.Warnings()
>>> with w.collecting(sink):
...     clipped = decimal_to_bigint(pa.array([decimal.Decimal("1.5"), decimal.Decimal("-1e20")]))
>>> clipped.to_pylist(), sink.result()[0][1]
([2, -9223372036854775808], 1916)
"""
from __future__ import annotations

import decimal
from typing import Union

import pyarrow as pa
import pyarrow.compute as pc

from engine.errors import BadDataError
from engine.exec import statement_warnings
from engine.exec.statement_warnings import FULL_INTEGER, OVERFLOW, TRUNCATED, UNKNOWN

Datum = Union[pa.Array, pa.ChunkedArray, pa.Scalar]

# The binder's options on an explicit CAST: a value past the type's range clips and warns; with STRICT
# (in a write: strict mode) what MariaDB warns of with a Warning fails the statement instead (a Note
# does not: CAST(1e30 AS SIGNED) is stored clipped)
CLIP = "clip"
STRICT = "clip_strictly"
NAMED = "named:"            # the option naming the select list item a CAST is in (its 1264's column)
OUT_OF_RANGE = 1264         # ER_WARN_DATA_OUT_OF_RANGE: "Out of range value for column '%s' at row %lu"

_MIN, _MAX = -2**63, 2**63 - 1
_WIDE = pa.decimal128(30, 0)
_HALF_AWAY = "half_towards_infinity"


def decimal_to_bigint(a: Datum, strict: bool = False) -> Datum:
    """A DECIMAL datum as BIGINT: rounded half away from zero, clipped with Warning 1916."""
    from engine.exec import decimal128
    t = a.type
    whole = _whole(a)
    if t.scale:     # one more integer digit for the rounding's carry (99.5 -> 100)
        whole = decimal128.rescale(whole, pa.decimal128(min(38, t.precision - t.scale + 1), 0))
    if whole.type.precision < 19:      # every value fits
        return whole.cast(pa.int64())
    low, high = pa.scalar(decimal.Decimal(_MIN), whole.type), pa.scalar(decimal.Decimal(_MAX), whole.type)
    below, above = pc.less(whole, low), pc.greater(whole, high)
    outside = pc.or_(below, above)
    _warn_or_fail(a, outside, OVERFLOW, lambda v: f"Got overflow when converting '{v}' to INT. Value truncated",
                  strict)
    return _clipped(whole, below, above).cast(pa.int64())


def double_to_bigint(a: Datum) -> Datum:
    """A DOUBLE datum as BIGINT: rounded half to even (MySQL's rint), clipped with Note 1916."""
    rounded = pc.round(a.cast(pa.float64()), round_mode="half_to_even")
    below, above = pc.less(rounded, float(_MIN)), pc.greater_equal(rounded, float(2**63))
    statement_warnings.flagged(a, pc.or_(below, above), "Note", OVERFLOW,
                               lambda v: f"Got overflow when converting '{_double_text(v)}' to SIGNED BIGINT. "
                                         f"Value truncated")
    inside = pc.if_else(pc.or_(below, above), 0.0, rounded).cast(pa.int64())
    return _clipped(inside, below, above, pa.int64())


def text_to_bigint(text: Datum, strict: bool = False) -> Datum:
    """Text as BIGINT the way MariaDB reads it outside a write: its leading integer (the caller warns
    1292 for text that is not an integer in full), clipped to -2^63 .. 2^64 - 1 (Warning 1292 for a
    whole-integer text past it), 2^63 and above wrapped to negatives (Note 1105 where not clipped)."""
    from engine.exec.unsigned import _clip_negative, _leading_integer
    read = _leading_integer(text)
    whole_text = pc.fill_null(pc.match_substring_regex(text, FULL_INTEGER + r"\s*$"), False)
    outside = pc.or_(pc.greater(read, pa.scalar(decimal.Decimal(2**64 - 1), _WIDE)),
                     pc.less(read, pa.scalar(decimal.Decimal(_MIN), _WIDE)))
    _warn_or_fail(text, pc.and_(outside, whole_text), TRUNCATED, lambda v: f"Truncated incorrect INTEGER value: '{v}'",
                  strict)
    clipped = _clip_negative(read)
    big = pc.greater(clipped, pa.scalar(decimal.Decimal(_MAX), _WIDE))
    statement_warnings.flagged(text, pc.and_(big, pc.invert(outside)), "Note", UNKNOWN,
                               lambda v: "Cast to signed converted positive out-of-range integer to it's "
                                         "negative complement")
    wrapped = pc.if_else(big, pc.subtract(clipped, pa.scalar(decimal.Decimal(2**64), _WIDE)).cast(_WIDE), clipped)
    return wrapped.cast(pa.int64())


def to_decimal(a: Datum, target: pa.Decimal128Type, exact, name: str, strict: bool = False) -> Datum:
    """``a`` (a decimal, integer or floating datum) as ``target``: ``exact(values)`` casts the values in
    range (the checked cast, rounding half away); the others clip to ±(10^p - 1) / 10^s with Warning
    1264 naming ``name``."""
    p, s = target.precision, target.scale
    top = decimal.Decimal(10 ** p - 1).scaleb(-s)
    t = a.type
    if pa.types.is_decimal(t):
        big, small = t.precision - t.scale, p - s       # integer digits of the value and of the target
        if t.scale <= s:            # no rounding: past the range from 10^(p - s) on
            if big <= small:
                return exact(a)
            threshold = decimal.Decimal(10) ** small
        else:                       # rounding half away reaches 10^(p - s) from 10^(p - s) - 0.5 / 10^s on
            if big < small:
                return exact(a)
            threshold = decimal.Decimal(10) ** small - decimal.Decimal(5).scaleb(-(s + 1))
        limit = pa.scalar(threshold, t)
        above = pc.greater_equal(a, limit)
        below = pc.less_equal(a, pa.scalar(-threshold, t))
        zero = pa.scalar(decimal.Decimal(0), t)
    elif pa.types.is_integer(t):
        if p - s >= 19:
            return exact(a)
        above = pc.greater_equal(a, pa.scalar(10 ** (p - s), t))
        below = pc.less_equal(a, pa.scalar(-10 ** (p - s), t))
        zero = pa.scalar(0, t)
    elif pa.types.is_floating(t):
        rounded = pc.round(a, ndigits=s, round_mode=_HALF_AWAY)
        above, below = pc.greater(rounded, float(top)), pc.less(rounded, -float(top))
        zero = pa.scalar(0.0, t)
    else:
        return exact(a)
    outside = pc.or_(above, below)
    if isinstance(outside, pa.Scalar):
        if not (outside.is_valid and outside.as_py()):
            return exact(a)
        _warn_or_fail(a, outside, OUT_OF_RANGE, lambda _: f"Out of range value for column '{name}' at row 1", strict)
        return pa.scalar(top if above.as_py() else -top, target)
    if not pc.any(outside).as_py():
        return exact(a)
    rows = pa.array(range(1, len(a) + 1), pa.int64())      # the row of each value within its batch
    _warn_or_fail(rows, outside, OUT_OF_RANGE, lambda row: f"Out of range value for column '{name}' at row {row}",
                  strict)
    inside = exact(pc.if_else(outside, zero, a))
    return _clipped(inside, below, above, target, top)


def _clipped(values: Datum, below, above, target=None, top=None) -> Datum:
    """``values`` with the rows ``below`` / ``above`` the range set to its low / high bound (BIGINT's,
    or ±``top`` of DECIMAL ``target``)."""
    target = target or values.type
    if top is not None:
        high, low = pa.scalar(top, target), pa.scalar(-top, target)
    elif pa.types.is_decimal(target):
        high, low = pa.scalar(decimal.Decimal(_MAX), target), pa.scalar(decimal.Decimal(_MIN), target)
    else:
        high, low = pa.scalar(_MAX, target), pa.scalar(_MIN, target)
    return pc.if_else(below, low, pc.if_else(above, high, values))


def _double_text(value: float) -> str:
    from engine.exec.unsigned import _double_text as text
    return text(value)


def _whole(d: Datum):
    return d.combine_chunks() if isinstance(d, pa.ChunkedArray) else d


def _warn_or_fail(values: Datum, rows, code: int, message, strict: bool) -> None:
    """A Warning ``code`` per row of ``rows`` (MariaDB's); in a write under strict mode the first one
    fails the statement instead."""
    if strict:
        found = rows.as_py() if isinstance(rows, pa.Scalar) else pc.any(rows).as_py()
        if found:
            first = values if isinstance(values, pa.Scalar) else values.filter(rows)[0]
            raise BadDataError(message(first.as_py()), code=code)
        return
    statement_warnings.flagged(values, rows, "Warning", code, message)
