"""Reference for kernels/strings.pyx with pyarrow.compute: the same results, no loops of our own.

MySQL's SUBSTRING differs from Arrow's slice in two places the reference spells out: position 0
gives '' and a negative position reaching before the first character gives '' (Arrow clamps).
"""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["char_length", "substring", "substring_length"]


def _check(arr):
    if not isinstance(arr, pa.Array):
        raise TypeError(f"expected a pyarrow Array, got {type(arr).__name__}")
    t = arr.type
    if not (pa.types.is_string(t) or pa.types.is_large_string(t)):
        raise TypeError(f"expected a string array, got {t}")


def char_length(arr: pa.Array) -> pa.Array:
    _check(arr)
    return pc.utf8_length(arr).cast(pa.int64())


def _clamp(v):
    # Beyond +-2**62 every string is shorter (and Arrow's slice options are int64).
    limit = 1 << 62
    return max(-limit, min(int(v), limit))


def substring(arr: pa.Array, start: int, length: int | None = None) -> pa.Array:
    _check(arr)
    for name, v in (("start", start), ("length", length)):
        if v is not None and not isinstance(v, int):
            raise TypeError(f"SUBSTRING {name} must be an integer, not {type(v).__name__}")
    start = _clamp(start)
    length = None if length is None else _clamp(length)
    empty = pc.utf8_slice_codeunits(arr, 0, 0)
    if start == 0 or (length is not None and length <= 0):
        return empty
    if start > 0:
        stop = None if length is None else start - 1 + length
        return pc.utf8_slice_codeunits(arr, start - 1, stop) if stop is not None else \
            pc.utf8_slice_codeunits(arr, start - 1)
    chars = pc.utf8_length(arr)
    longest = pc.max(chars).as_py() or 0
    too_short = pc.less(chars, -start)
    start = max(start, -(longest + 1))      # rows past it are '' anyway; Arrow fails on huge negatives
    stop = None if length is None or start + length >= 0 else start + length
    sliced = pc.utf8_slice_codeunits(arr, start, stop) if stop is not None else pc.utf8_slice_codeunits(arr, start)
    return pc.if_else(too_short, empty, sliced)


def substring_length(arr: pa.Array, start: int, length: int | None = None, chars: bool = False) -> pa.Array:
    sub = substring(arr, start, length)
    return (pc.utf8_length(sub) if chars else pc.binary_length(sub)).cast(pa.int64())
