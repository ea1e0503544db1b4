"""MySQL's string functions past the everyday ones of :mod:`engine.exec.string_functions`:
SUBSTRING_INDEX, FIELD, FIND_IN_SET, ELT, STRCMP, INSERT, SPACE, TRIM of a given string, ASCII / ORD,
CONV (BIN, OCT), CRC32, TO_BASE64, QUOTE, FORMAT and INTERVAL(). :mod:`engine.exec.evaluate` registers
them by importing this module.

Whole arrays through pyarrow.compute where Arrow has the operation; the rest (number bases, checksums,
base64, number formatting) runs in Python once per DISTINCT value (``per_distinct``), never per row.
Comparisons (FIELD, FIND_IN_SET, STRCMP) are under the arguments' collation: the binder passes its name
in the call's options, and the values are compared by their collation keys.
"""
from __future__ import annotations

import base64
import decimal
import re
import zlib

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.core.collation_keys import collation_keys
from engine.exec.evaluate import Datum, function
from engine.exec.string_functions import _constant, _is_scalar, decoded as _decoded, per_distinct


def _keys(d: Datum, expr, pad: bool = True) -> Datum:
    """The values compared as the call's collation compares them (binary collations: the strings);
    ``pad``: trailing spaces ignored (PAD SPACE), as '=' compares; FIND_IN_SET does not."""
    d = _decoded(d)
    if expr.options and expr.options[0] and (pa.types.is_string(d.type) or pa.types.is_large_string(d.type)):
        return collation_keys(d, expr.options[0], pad)
    return d


# --- SUBSTRING_INDEX ----------------------------------------------------------------------------------
@function("substring_index")
def _substring_index(expr, s, delimiter, count):
    """The part of ``s`` before the ``count``-th ``delimiter`` (count > 0, from the left) or after the
    ``count``-th from the right (count < 0); the whole string when there are fewer; '' for count 0.
    The delimiter is matched case-sensitively, as MySQL does."""
    delim, n = _constant(delimiter, "SUBSTRING_INDEX delimiter"), _constant(count, "SUBSTRING_INDEX count")
    s = _decoded(s)
    if delim is None or n is None:
        return pa.scalar(None, pa.string())
    if n == 0 or delim == "":
        return pc.if_else(pc.is_null(s), pa.scalar(None, pa.string()), "")
    if n > 0:
        parts = pc.split_pattern(s, pattern=delim)
        return pc.binary_join(pc.list_slice(parts, 0, n), delim)
    reversed_parts = pc.split_pattern(pc.utf8_reverse(s), pattern=delim[::-1])
    return pc.utf8_reverse(pc.binary_join(pc.list_slice(reversed_parts, 0, -n), delim[::-1]))


# --- FIELD, FIND_IN_SET, ELT, STRCMP, INTERVAL ------------------------------------------------------------
@function("field")
def _field(expr, value, *candidates):
    """FIELD(v, c1, c2, ...): the position of the first candidate equal to v, 0 when none is (or v is
    NULL). The binder made all the arguments one comparable type."""
    pad = expr.op != "find_in_set"
    v = _keys(value, expr, pad)
    position = pa.scalar(0, pa.int64())
    for index in range(len(candidates), 0, -1):     # the first match wins: built from the last
        equal = pc.fill_null(pc.equal(v, _keys(candidates[index - 1], expr, pad)), False)
        position = pc.if_else(equal, pa.scalar(index, pa.int64()), position)
    return position


@function("find_in_set")
def _find_in_set(expr, value, string_list):
    """FIND_IN_SET(v, 'a,b,c'): v's position among the comma-separated items, 0 when absent, NULL when
    either is NULL."""
    if _is_scalar(string_list):
        items = string_list.as_py()
        if items is None:
            return pa.scalar(None, pa.int64())
        if items == "":                               # an empty list holds nothing, not one ''
            return pc.if_else(pc.is_null(_decoded(value)), pa.scalar(None, pa.int64()), pa.scalar(0, pa.int64()))
        found = _field(expr, value, *[pa.scalar(item, pa.string()) for item in items.split(",")]) \
    
        return pc.if_else(pc.is_null(_decoded(value)), pa.scalar(None, pa.int64()), found)
    target = _constant(value, "FIND_IN_SET of a column list: the value")
    lists = _decoded(string_list)
    if target is None:
        return pa.scalar(None, pa.int64())
    wanted = _keys(pa.scalar(target, pa.string()), expr).as_py()
    # an empty list holds nothing (not one ''): its row reads as NULL here, found nowhere, then 0
    items = pc.split_pattern(pc.if_else(pc.equal(pc.fill_null(lists, ""), ""), pa.scalar(None, pa.string()),
                                        lists), pattern=",")
    flat = _keys(pc.list_flatten(items), expr, False)
    parents = np.asarray(pc.list_parent_indices(items))
    offsets = np.asarray(items.offsets)
    hits = np.flatnonzero(np.asarray(pc.fill_null(pc.equal(flat, wanted), False)))
    position = np.zeros(len(lists), np.int64)
    # the first hit of each list: assigned from the last hit backwards, so the earliest one stays
    rows = parents[hits][::-1]
    position[rows] = (hits[::-1] - offsets[rows]) + 1
    if "," in target:
        position[:] = 0
    return pa.array(position, mask=np.asarray(lists.is_null()))


@function("elt")
def _elt(expr, index, *strings):
    """ELT(n, s1, s2, ...): the n-th string; NULL when n is outside 1 .. the count."""
    n = _decoded(index)
    result = pa.scalar(None, pa.string())
    for i in range(len(strings), 0, -1):
        result = pc.if_else(pc.fill_null(pc.equal(n, i), False), _decoded(strings[i - 1]), result)
    return result


@function("strcmp")
def _strcmp(expr, a, b):
    """STRCMP(a, b): -1, 0 or 1 by the collation's order."""
    ka, kb = _keys(a, expr), _keys(b, expr)
    return pc.if_else(pc.less(ka, kb), pa.scalar(-1, pa.int64()),
                      pc.if_else(pc.greater(ka, kb), pa.scalar(1, pa.int64()), pa.scalar(0, pa.int64())))


@function("interval_index")
def _interval_index(expr, value, *bounds):
    """INTERVAL(n, n1, n2, ...): how many of the (ascending) bounds are <= n; -1 for a NULL n."""
    count = pa.scalar(0, pa.int64())
    for bound in bounds:
        count = pc.add(count, pc.fill_null(pc.greater_equal(value, bound), False).cast(pa.int64()))
    return pc.if_else(pc.is_null(value), pa.scalar(-1, pa.int64()), count)


# --- INSERT, SPACE, TRIM(... FROM ...) -------------------------------------------------------------------------
@function("insert")
def _insert(expr, s, position, length, new):
    """INSERT(s, pos, len, new): s with the ``len`` characters at ``pos`` replaced by ``new``; s itself
    when pos is outside 1 .. its length."""
    pos, n = _constant(position, "INSERT position"), _constant(length, "INSERT length")
    s, new = _decoded(s), _decoded(new)
    if pos is None or n is None:
        return pa.scalar(None, pa.string())
    head = pc.utf8_slice_codeunits(s, 0, max(pos - 1, 0))
    tail = pc.utf8_slice_codeunits(s, pos - 1 + n) if n >= 0 and pos - 1 + n >= 0 else \
        pc.utf8_slice_codeunits(s, 0, 0)
    replaced = pc.binary_join_element_wise(head, new, tail, "")
    inside = pc.and_(pc.greater_equal(pa.scalar(pos), 1), pc.less_equal(pa.scalar(pos), pc.utf8_length(s)))
    return pc.if_else(pc.fill_null(inside, False), replaced, pc.if_else(pc.is_null(new), new, s))


_MAX_ALLOWED_PACKET = 67_108_864    # engine/sql/variables.py's max_allowed_packet: longer results are NULL


@function("space")
def _space(expr, n):
    """SPACE(n): n spaces ('' for n <= 0; NULL past max_allowed_packet, as MySQL)."""
    n = _decoded(n).cast(pa.int64())
    count = pc.max_element_wise(n, pa.scalar(0, pa.int64()), skip_nulls=False)
    too_long = pc.fill_null(pc.greater(count, _MAX_ALLOWED_PACKET), False)
    spaces = pc.binary_repeat(pa.scalar(" "), pc.if_else(too_long, 0, count))
    return pc.if_else(too_long, pa.scalar(None, pa.string()), spaces)


@function("trim_string")
def _trim_string(expr, s, remove):
    """TRIM([BOTH | LEADING | TRAILING] r FROM s): every repetition of the string r removed from the
    ends (r as a whole string, matched case-sensitively; not a set of characters)."""
    text = _constant(remove, "TRIM's string to remove")
    if text is None:
        return pa.scalar(None, pa.string())
    s = _decoded(s)
    if text == "":
        return s
    pattern = re.escape(text)
    where = expr.options[0]
    if where in ("BOTH", "LEADING"):
        s = pc.replace_substring_regex(s, pattern=f"^(?:{pattern})+", replacement="")
    if where in ("BOTH", "TRAILING"):
        s = pc.replace_substring_regex(s, pattern=f"(?:{pattern})+$", replacement="")
    return s


# --- character codes, number bases, digests, quoting, FORMAT -------------------------------------------
@function("ascii")
def _ascii(expr, s):
    """ASCII(s): the first byte of s (0 for '')."""
    return per_distinct(pc.utf8_slice_codeunits(_decoded(s), 0, 1),
                        lambda c: c.encode("utf-8")[0] if c else 0, pa.int64())


@function("ord")
def _ord(expr, s):
    """ORD(s): the first character's UTF-8 bytes read as one big-endian number (ASCII for one byte)."""
    return per_distinct(pc.utf8_slice_codeunits(_decoded(s), 0, 1),
                        lambda c: int.from_bytes(c.encode("utf-8"), "big") if c else 0, pa.int64())


_DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _read_in_base(text: str, base: int):
    """The leading number of ``text`` in ``base`` (MySQL's strtoll-like reading: spaces, a sign, then
    valid digits; nothing valid reads as 0)."""
    text = text.lstrip(" \t\n")
    negative = text.startswith("-")
    if text[:1] in "+-":
        text = text[1:]
    value = 0
    for ch in text.upper():
        digit = _DIGITS.find(ch)
        if digit < 0 or digit >= base:
            break
        value = value * base + digit
    return -value if negative else value


def _write_in_base(value: int, base: int) -> str:
    if value == 0:
        return "0"
    sign, value = ("-", -value) if value < 0 else ("", value)
    digits = []
    while value:
        value, digit = divmod(value, base)
        digits.append(_DIGITS[digit])
    return sign + "".join(reversed(digits))


def convert_base(text: str, from_base: int, to_base: int):
    """MySQL's CONV: read signed when ``from_base`` < 0, write signed when ``to_base`` < 0; otherwise
    the number is taken as 64-bit unsigned (a negative one wraps). None for a base outside 2..36."""
    if not (2 <= abs(from_base) <= 36 and 2 <= abs(to_base) <= 36) or text == "":
        return None
    value = _read_in_base(text, abs(from_base))
    value = max(min(value, 2**64 - 1), -(2**63))        # MySQL's reading saturates at 64 bits
    if to_base < 0:
        if value >= 2**63:
            value -= 2**64
    else:
        value &= 2**64 - 1
    return _write_in_base(value, abs(to_base))


@function("conv")
def _conv(expr, n, from_base, to_base):
    f, t = _constant(from_base, "CONV base"), _constant(to_base, "CONV base")
    if f is None or t is None or not (2 <= abs(f) <= 36 and 2 <= abs(t) <= 36):
        return pa.scalar(None, pa.string())
    return per_distinct(_decoded(n), lambda v: convert_base(v, f, t), pa.string())


@function("crc32")
def _crc32(expr, s):
    return per_distinct(_decoded(s), lambda v: zlib.crc32(v.encode("utf-8")), pa.int64())


def _base64(value: str) -> str:
    """MySQL's TO_BASE64: a newline after every 76 characters of output (none at the end)."""
    encoded = base64.b64encode(value.encode("utf-8")).decode("ascii")
    return "\n".join(encoded[i:i + 76] for i in range(0, len(encoded), 76))


@function("to_base64")
def _to_base64(expr, s):
    return per_distinct(_decoded(s), _base64, pa.string())


_QUOTED = str.maketrans({"\\": "\\\\", "'": "\\'", "\0": "\\0", "\x1a": "\\Z"})


@function("quote")
def _quote(expr, s):
    """QUOTE(s): s in single quotes with \\ ' NUL and Control-Z escaped; the word NULL for NULL."""
    quoted = per_distinct(_decoded(s), lambda v: "'" + v.translate(_QUOTED) + "'", pa.string())
    return pc.fill_null(quoted, "NULL")


_WIDE_CONTEXT = decimal.Context(prec=400)      # a DOUBLE up to 1e308 written out in full


def _format_number(value, digits: int) -> str:
    exact = value if isinstance(value, (decimal.Decimal, int)) else decimal.Decimal(repr(float(value)))
    exact = decimal.Decimal(exact)
    rounded = exact.quantize(decimal.Decimal(1).scaleb(-digits), rounding=decimal.ROUND_HALF_UP,
                             context=_WIDE_CONTEXT)
    return f"{rounded:,.{digits}f}"


@function("format_number")
def _format(expr, x, digits):
    """FORMAT(x, d): x rounded to d decimals (half away from zero), with thousands separators."""
    d = _constant(digits, "FORMAT decimals")
    if d is None:
        return pa.scalar(None, pa.string())
    d = max(0, min(int(d), 30))
    x = _decoded(x)
    if pa.types.is_floating(x.type) and not _is_scalar(x):
        x = pc.if_else(pc.is_finite(x), x, pa.scalar(None, x.type))
    return per_distinct(x, lambda v: _format_number(v, d), pa.string())
