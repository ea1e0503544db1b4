"""MySQL's string functions, vectorised: SUBSTRING (and LEFT / RIGHT), CHAR_LENGTH / LENGTH (fused with a
SUBSTRING: the substrings are never built), UPPER / LOWER, TRIM, CONCAT, REPLACE, REVERSE, LOCATE /
INSTR, STARTS_WITH, CONCAT_WS, LPAD / RPAD, REPEAT, MD5 / SHA1 / SHA2, HEX, REGEXP / RLIKE,
REGEXP_REPLACE and REGEXP_SUBSTR. :mod:`engine.exec.evaluate` registers them by importing this module.

Everything runs over whole arrays with pyarrow.compute. The digests (which pyarrow lacks) and the
padding prefixes are computed once per DISTINCT value -- over a dictionary encoding -- and spread back
to the rows with ``take``, never once per row.
"""
from __future__ import annotations

import decimal
import hashlib
import re
from typing import Callable, Optional

import pyarrow as pa
import pyarrow.compute as pc

import kernels
from engine.core.collation_keys import collation_keys
from engine.core.expressions import Call
from engine.errors import BadDataError, UnsupportedError
from engine.exec.evaluate import Datum, evaluate, function


def _is_scalar(d: Datum) -> bool:
    return isinstance(d, pa.Scalar)


def _constant(d: Datum, what: str):
    if not _is_scalar(d):
        raise UnsupportedError(f"{what} with a non-constant argument")
    return d.as_py()


def plain(d: Datum) -> Datum:
    """Strings as plain ``string`` (a dictionary-encoded column decoded): the element-wise kernels
    below do not take dictionaries."""
    if pa.types.is_dictionary(d.type):
        return d.cast(d.type.value_type)
    return d


def decoded(d: Datum) -> Datum:
    """A plain array (dictionary and run-end encodings decoded, chunks combined) or a scalar: for the
    functions whose pyarrow kernels take neither encoding."""
    if _is_scalar(d):
        return d
    if isinstance(d, pa.ChunkedArray):
        d = d.combine_chunks()
    if pa.types.is_dictionary(d.type):
        return d.cast(d.type.value_type)
    if pa.types.is_run_end_encoded(d.type):
        return pc.run_end_decode(d)
    return d


def per_distinct(d: Datum, fn: Callable, out_type: pa.DataType) -> Datum:
    """``fn`` applied to each distinct non-NULL value of ``d`` (NULL stays NULL), spread to the rows."""
    if _is_scalar(d):
        value = d.as_py()
        return pa.scalar(None if value is None else fn(value), out_type)
    if isinstance(d, pa.ChunkedArray):
        d = d.combine_chunks()
    encoded = d if pa.types.is_dictionary(d.type) else pc.dictionary_encode(d)
    distinct = pa.array([fn(v) for v in encoded.dictionary.to_pylist()], out_type)
    return distinct.take(encoded.indices)


# --- CONCAT_WS, LPAD / RPAD, REPEAT ---------------------------------------------------------------
@function("concat_ws")
def _concat_ws(expr, separator, *args):
    """NULL arguments are skipped; a NULL separator makes the result NULL. (pyarrow's own
    ``null_handling="skip"`` drops the rows whose arguments are all NULL, so the skipping is done here:
    a running join that takes each non-NULL argument.)"""
    separator = plain(separator)
    joined = None
    for arg in map(plain, args):
        if joined is None:
            joined = arg
            continue
        both = pc.binary_join_element_wise(joined, arg, separator)
        joined = pc.if_else(pc.is_null(arg), joined, pc.if_else(pc.is_null(joined), arg, both))
    joined = pc.fill_null(joined, "")
    return pc.if_else(pc.is_null(separator), pa.scalar(None, pa.string()), joined)


def _pad(expr, s, length, fill, left: bool):
    """MySQL's LPAD / RPAD: a string longer than ``length`` is cut to ``length`` characters; NULL for
    a NULL argument, a negative length, or an empty fill that would be needed."""
    n = _constant(length, "LPAD/RPAD length")
    pattern = _constant(fill, "LPAD/RPAD fill")
    if n is None or pattern is None or n < 0:
        return pa.scalar(None, pa.string())
    cut = pc.utf8_slice_codeunits(plain(s), 0, n)
    missing = pc.subtract(n, pc.utf8_length(cut))
    if pattern == "":
        prefix = pc.if_else(pc.equal(missing, 0), "", pa.scalar(None, pa.string()))
    else:
        whole = pattern * (n // len(pattern) + 1)
        prefix = per_distinct(missing, lambda k: whole[:k], pa.string())
    parts = (prefix, cut) if left else (cut, prefix)
    return pc.binary_join_element_wise(*parts, "")


@function("lpad")
def _lpad(expr, s, length, fill):
    return _pad(expr, s, length, fill, left=True)


@function("rpad")
def _rpad(expr, s, length, fill):
    return _pad(expr, s, length, fill, left=False)


@function("repeat")
def _repeat(expr, s, times):
    """REPEAT(s, n): '' for n <= 0."""
    times = pc.max_element_wise(times.cast(pa.int64()), pa.scalar(0, pa.int64()), skip_nulls=False)
    return pc.binary_repeat(plain(s), times)


# --- digests and HEX ------------------------------------------------------------------------------
_SHA2 = {0: hashlib.sha256, 224: hashlib.sha224, 256: hashlib.sha256, 384: hashlib.sha384, 512: hashlib.sha512}


def _digest(algorithm) -> Callable[[str], str]:
    return lambda v: algorithm(v.encode("utf-8")).hexdigest()


@function("md5")
def _md5(expr, s):
    return per_distinct(s, _digest(hashlib.md5), pa.string())


@function("sha1")
def _sha1(expr, s):
    return per_distinct(s, _digest(hashlib.sha1), pa.string())


@function("sha2")
def _sha2(expr, s, bits):
    """SHA2(s, 224 | 256 | 384 | 512; 0 means 256); any other length gives NULL."""
    algorithm = _SHA2.get(_constant(bits, "SHA2 hash length"))
    if algorithm is None:
        return pa.scalar(None, pa.string())
    return per_distinct(s, _digest(algorithm), pa.string())


@function("hex")
def _hex(expr, s):
    """HEX of a string: its UTF-8 bytes, two upper-case digits each."""
    return per_distinct(s, lambda v: v.encode("utf-8").hex().upper(), pa.string())


@function("hex_int")
def _hex_int(expr, n):
    """HEX of an integer: its 64-bit two's complement value in upper-case hexadecimal."""
    def digits(v) -> str:
        if isinstance(v, float):        # a DOUBLE: rounded half away from zero, saturated to 64 bits
            whole = decimal.Decimal(v).to_integral_value(decimal.ROUND_HALF_UP) if v == v else 0
            v = int(max(min(whole, 2**64 - 1), -2**63))
        return format(v & 0xFFFF_FFFF_FFFF_FFFF, "X")
    return per_distinct(n, digits, pa.string())


# --- regular expressions ------------------------------------------------------------------------------
# MySQL compares non-binary strings case-insensitively under its default collation, REGEXP included.
def _pattern(p: Datum, what: str):
    return _constant(p, f"{what} pattern")


@function("regexp_like")
def _regexp_like(expr, s, pattern):
    p = _pattern(pattern, "REGEXP")
    if p is None:
        return pa.scalar(None, pa.bool_())
    return pc.match_substring_regex(plain(s), p, ignore_case=True)


def _replacement(r: str) -> str:
    """MySQL writes back-references as $1; RE2 as \\1 (and a literal backslash as \\\\)."""
    return re.sub(r"\$(\d)", r"\\\1", r.replace("\\", "\\\\"))


@function("regexp_replace")
def _regexp_replace(expr, s, pattern, replacement):
    p = _pattern(pattern, "REGEXP_REPLACE")
    r = _constant(replacement, "REGEXP_REPLACE replacement")
    if p is None or r is None:
        return pa.scalar(None, pa.string())
    return pc.replace_substring_regex(plain(s), "(?i)" + p, _replacement(r))


@function("regexp_substr")
def _regexp_substr(expr, s, pattern):
    """The first match, NULL where there is none."""
    p = _pattern(pattern, "REGEXP_SUBSTR")
    if p is None:
        return pa.scalar(None, pa.string())
    matches = pc.extract_regex(plain(s), f"(?i)(?P<match>{p})")
    if _is_scalar(matches):
        return pa.scalar(matches["match"].as_py() if matches.is_valid else None, pa.string())
    return pc.if_else(pc.is_valid(matches), pc.struct_field(matches, [0]), pa.scalar(None, pa.string()))


# --- the core string functions (SUBSTRING, LENGTH, LOCATE, ...) ----------------------------------
def _string_kernel(s: Datum, fn: Callable[[pa.Array], pa.Array], out_type: pa.DataType) -> Datum:
    """Apply a string kernel (Array -> Array of ``out_type``) to any string Datum: per chunk, to a
    scalar as a one-row array, to a dictionary array's values only (then taken by the indices)."""
    if isinstance(s, pa.Scalar):
        if not s.is_valid:
            return pa.scalar(None, out_type)
        return fn(pa.array([s.as_py()], s.type))[0]
    if isinstance(s, pa.ChunkedArray):
        return pa.chunked_array([_string_kernel(c, fn, out_type) for c in s.chunks], out_type)
    if pa.types.is_dictionary(s.type):
        return fn(s.dictionary).take(s.indices)
    if pa.types.is_null(s.type):
        return pa.nulls(len(s), out_type)
    return fn(s)


def _position(d: Datum, what: str) -> Optional[int]:
    """A constant SUBSTRING position or length as an int (None for NULL); MySQL rounds a fractional
    one half away from zero."""
    if not _is_scalar(d):
        raise UnsupportedError(f"SUBSTRING with a non-constant {what}")
    value = d.as_py()
    if value is None or isinstance(value, int):
        return value
    try:
        return int(decimal.Decimal(str(value)).to_integral_value(rounding=decimal.ROUND_HALF_UP))
    except (decimal.InvalidOperation, ValueError):
        raise BadDataError(f"SUBSTRING {what} {value!r} is not a number") from None


def _substring_positions(start: Datum, length: Optional[Datum]) -> Optional[tuple[int, Optional[int]]]:
    """(start, length or None) of a SUBSTRING call, or None when either is NULL (a NULL result)."""
    begin = _position(start, "position")
    n = _position(length, "length") if length is not None else None
    if begin is None or (length is not None and n is None):
        return None
    return begin, n


@function("substring")
def _substring(expr, s, start, length=None):
    """MySQL's SUBSTRING: character positions, 1-based, negative from the end (past the start: ''),
    0 or a length <= 0 gives '' (kernels/strings.pyx)."""
    positions = _substring_positions(start, length)
    out_type = s.type if not pa.types.is_dictionary(s.type) else s.type.value_type
    if pa.types.is_null(out_type):
        out_type = pa.string()
    if positions is None:
        return pa.scalar(None, out_type)
    begin, n = positions
    return _string_kernel(s, lambda a: kernels.substring(a, begin, n), out_type)


def _length_of(expr, batch, params, chars: bool):
    """LENGTH / CHAR_LENGTH; of a SUBSTRING with constant positions, fused: the substrings are
    never built (``kernels.substring_length``)."""
    (arg,) = expr.args
    if isinstance(arg, Call) and arg.op == "substring":
        s = evaluate(arg.args[0], batch, params)
        start = evaluate(arg.args[1], batch, params)
        length = evaluate(arg.args[2], batch, params) if len(arg.args) > 2 else None
        if _is_scalar(start) and (length is None or _is_scalar(length)):
            positions = _substring_positions(start, length)
            if positions is None:
                return pa.scalar(None, pa.int64())
            begin, n = positions
            return _string_kernel(s, lambda a: kernels.substring_length(a, begin, n, chars=chars), pa.int64())
    s = evaluate(arg, batch, params)
    if chars:
        return _string_kernel(s, kernels.char_length, pa.int64())
    return pc.binary_length(s).cast(pa.int64())


@function("char_length")
def _char_length(expr, batch, params):
    return _length_of(expr, batch, params, chars=True)


@function("octet_length")
def _octet_length(expr, batch, params):
    return _length_of(expr, batch, params, chars=False)


@function("upper")
def _upper(expr, s):
    """MySQL's UPPER keeps 'ß' (it has no one-letter capital there); Arrow's gives U+1E9E 'ẞ'. So where
    a value holds 'ß' it is cut at each 'ẞ' of its own, the pieces upper-cased with any 'ẞ' they then
    hold turned back into 'ß', and joined again at the original 'ẞ's."""
    upper = pc.utf8_upper(s)
    if isinstance(s, pa.Scalar):
        return upper if not s.is_valid or "ß" not in s.as_py() else _upper(expr, pa.array([s.as_py()], s.type))[0]
    if not pc.any(pc.match_substring(s, "ß")).as_py():
        return upper
    pieces = pc.split_pattern(s, "ẞ")
    fixed = pc.replace_substring(pc.utf8_upper(pc.list_flatten(pieces)), "ẞ", "ß")
    offsets = pieces.offsets if isinstance(pieces, pa.Array) else None
    if offsets is None:         # a ChunkedArray: one chunk at a time
        return pa.chunked_array([_upper(expr, c) for c in s.chunks], upper.type)
    rebuilt = pa.ListArray.from_arrays(pc.subtract(offsets, offsets[0]), fixed, mask=pc.is_null(s))
    return pc.binary_join(rebuilt, "ẞ").cast(upper.type)


@function("lower")
def _lower(expr, s):
    return pc.utf8_lower(s)


@function("trim")
def _trim(expr, s):
    return pc.utf8_trim(s, characters=" ")


@function("ltrim")
def _ltrim(expr, s):
    return pc.utf8_ltrim(s, characters=" ")


@function("rtrim")
def _rtrim(expr, s):
    return pc.utf8_rtrim(s, characters=" ")


@function("concat")
def _concat(expr, *args):
    strings = [a if a.type == pa.string() else a.cast(pa.string()) for a in args]
    return pc.binary_join_element_wise(*strings, pa.scalar(""))


@function("replace")
def _replace(expr, s, old, new):
    if not (_is_scalar(old) and _is_scalar(new)):
        raise UnsupportedError("REPLACE with non-constant arguments")
    return pc.replace_substring(s, pattern=old.as_py(), replacement=new.as_py())


@function("reverse")
def _reverse(expr, s):
    return pc.utf8_reverse(s)


def _constant_count(n: Datum, what: str) -> Optional[int]:
    if not _is_scalar(n):
        raise UnsupportedError(f"{what} with a non-constant length")
    return n.as_py()


@function("left")
def _left(expr, s, n):
    count = _constant_count(n, "LEFT")
    if count is None:
        return pa.scalar(None, pa.string())
    return _substring(expr, s, pa.scalar(1), pa.scalar(count))


@function("right")
def _right(expr, s, n):
    count = _constant_count(n, "RIGHT")
    if count is None:
        return pa.scalar(None, pa.string())
    return pc.utf8_slice_codeunits(s, -count) if count > 0 else pc.utf8_slice_codeunits(s, 0, 0)


@function("locate")
def _locate(expr, needle, haystack, start=None):
    """LOCATE(needle, haystack [, start]): 1-based position of the first match at or after start, 0 if none."""
    if not _is_scalar(needle):
        raise UnsupportedError("LOCATE/INSTR with a non-constant substring")
    first = 1 if start is None else _constant_count(start, "LOCATE")
    if needle.as_py() is None or first is None:
        return pa.scalar(None, pa.int64())
    if first < 1:
        return pc.multiply(pc.utf8_length(haystack), 0).cast(pa.int64())    # MySQL: 0, NULL stays NULL
    rest = pc.utf8_slice_codeunits(haystack, first - 1)
    if expr.options:        # under a _ci collation: found among the keys (one key character per character)
        rest, needle = collation_keys(rest, expr.options[0], False), collation_keys(needle, expr.options[0], False)
    text = needle.as_py()
    found = pc.find_substring(rest, text)           # a byte offset: counted in characters below
    if text:
        found = pc.if_else(pc.less(found, 0), found,
                           pc.utf8_length(pc.list_element(pc.split_pattern(rest, pattern=text, max_splits=1), 0)))
    return pc.if_else(pc.less(found, 0), 0, pc.add(found, first)).cast(pa.int64())


@function("starts_with")
def _starts_with(expr, s, prefix):
    return pc.starts_with(s, prefix.as_py())
