"""MySQL's everyday string functions, vectorised: CONCAT_WS, LPAD / RPAD, REPEAT, MD5 / SHA1 / SHA2,
HEX, REGEXP / RLIKE, REGEXP_REPLACE and REGEXP_SUBSTR.

Everything runs over whole arrays with pyarrow.compute. The digests (which pyarrow lacks) and the
padding prefixes are computed once per DISTINCT value -- over a dictionary encoding -- and spread back
to the rows with ``take``, never once per row.
"""
from __future__ import annotations

import hashlib
import re
from typing import Callable

import pyarrow as pa
import pyarrow.compute as pc

from engine.errors import UnsupportedError
from engine.exec.evaluate import Datum, function


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
    return per_distinct(n, lambda v: format(v & 0xFFFF_FFFF_FFFF_FFFF, "X"), pa.string())


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
