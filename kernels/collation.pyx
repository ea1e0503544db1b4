"""Collation keys: each string mapped to a string that compares as a plain binary string exactly
as the original compares under its collation.

``collation_key(arr, table, pad)`` maps every character of every row through ``table`` (65536 uint16
weights indexed by code point, ``kernels/general_ci_weights.py`` for ``utf8mb4_general_ci``; every
character above U+FFFF weighs ``replacement``, U+FFFD) and re-encodes the
weights as UTF-8. With ``pad`` (PAD SPACE collations: comparisons ignore trailing spaces) the row's
trailing weights equal to U+0020 are dropped. Weights are code points <= U+FFFF, so UTF-8 byte order of
the keys is weight order: equality, hashing, sorting and LIKE then run on the keys with the binary
kernels.

A run of ASCII bytes is mapped byte by byte (one table read, no decoding: every ASCII character
weighs an ASCII character, checked when the table is loaded); other characters are decoded, weighed and
re-encoded. A weight's UTF-8 is at most 3 bytes and at most 1.5 times its
character's (ASCII weighs ASCII), so the output buffer is sized once, never grown. Null rows stay null.
Invalid UTF-8 does not occur (Arrow validates strings); a stray continuation byte is copied as is.

``expanding_key(arr, starts, weights, pad)`` is the same for collations whose characters weigh zero or
several weights (UCA: an accent alone weighs nothing at the primary level, 'ß' weighs 'ss'): the weights
of code point ``cp`` are ``weights[starts[cp]:starts[cp + 1]]``, for every code point (a table of
1114113 starts: characters above U+FFFF weigh what UCA gives them, weights up to U+10FFFF written in
four bytes) or for the BMP only (65537 starts: the rest weigh ``replacement``). Its output is measured
by a first pass, then written by a second (an expansion can be 8 weights for one character).

``kernels/reference/collation.py`` computes the same keys with NumPy; tests/kernels/test_collation.py
holds both to it on random text with nulls, empties, trailing spaces and characters of every width.
"""
cimport cython
from libc.stdint cimport int64_t, uint8_t, uint16_t, uint32_t

from kernels.fused_types cimport offset_t

import numpy as np
import pyarrow as pa

__all__ = ["collation_key", "collation_keys", "expanding_key", "expanding_keys"]

# expanding_key takes tables of every code point (U+0000..U+10FFFF) and weights above U+FFFF; a module
# built before this is not used (kernels/__init__.py)
SUPPLEMENTARY = True

cdef uint8_t _EMPTY[8]


cdef inline int64_t _put(uint8_t *out, int64_t q, uint32_t w) noexcept nogil:
    if w < 0x80:
        out[q] = <uint8_t>w
        return q + 1
    if w < 0x800:
        out[q] = <uint8_t>(0xC0 | (w >> 6))
        out[q + 1] = <uint8_t>(0x80 | (w & 0x3F))
        return q + 2
    if w < 0x10000:
        out[q] = <uint8_t>(0xE0 | (w >> 12))
        out[q + 1] = <uint8_t>(0x80 | ((w >> 6) & 0x3F))
        out[q + 2] = <uint8_t>(0x80 | (w & 0x3F))
        return q + 3
    out[q] = <uint8_t>(0xF0 | (w >> 18))
    out[q + 1] = <uint8_t>(0x80 | ((w >> 12) & 0x3F))
    out[q + 2] = <uint8_t>(0x80 | ((w >> 6) & 0x3F))
    out[q + 3] = <uint8_t>(0x80 | (w & 0x3F))
    return q + 4


@cython.boundscheck(False)
@cython.wraparound(False)
def collation_keys(const offset_t[::1] offsets, const uint8_t[::1] data, const uint16_t[::1] table,
                   uint16_t replacement, bint pad, offset_t[::1] out_offsets, uint8_t[::1] out_data):
    """Low level: the keys of rows ``offsets`` over ``data`` into ``out_offsets`` (n + 1, modified)
    and ``out_data`` (at least 1.5 x the bytes the rows span, modified). Returns the bytes written."""
    cdef Py_ssize_t i, n = offsets.shape[0] - 1
    cdef int64_t p, end, q = 0, last_kept
    cdef uint8_t c
    cdef uint32_t cp, w
    cdef const uint8_t *src = &data[0] if data.shape[0] else &_EMPTY[0]
    cdef uint8_t *dst = &out_data[0] if out_data.shape[0] else &_EMPTY[0]
    if table.shape[0] != 0x10000:
        raise ValueError(f"the weight table has {table.shape[0]} entries, not 65536")
    for i in range(0x80):
        if table[i] >= 0x80:
            raise ValueError(f"the weight of U+{i:04X} is not ASCII")
    if out_offsets.shape[0] != n + 1:
        raise ValueError("out_offsets must have one entry more than the rows")
    if n >= 0 and out_data.shape[0] < (offsets[n] - offsets[0]) * 3 // 2 + 3:
        raise ValueError("out_data is smaller than 1.5 x the input bytes")
    with nogil:
        out_offsets[0] = 0
        for i in range(n):
            p, end = offsets[i], offsets[i + 1]
            last_kept = q           # the output position after the last weight that is not a space
            while p < end:
                c = src[p]
                if c < 0x80:
                    # a run of ASCII: one table read and one store per byte (ASCII weighs ASCII)
                    while True:
                        w = table[c]
                        dst[q] = <uint8_t>w
                        q += 1
                        if w != 0x20:
                            last_kept = q
                        p += 1
                        if p >= end:
                            break
                        c = src[p]
                        if c >= 0x80:
                            break
                    continue
                elif c >= 0xF0 and p + 3 < end:
                    w = replacement
                    p += 4
                elif c >= 0xF0:
                    w = replacement
                    p = end
                elif c >= 0xE0 and p + 2 < end:
                    cp = ((c & 0x0F) << 12) | ((src[p + 1] & 0x3F) << 6) | (src[p + 2] & 0x3F)
                    w = table[cp]
                    p += 3
                elif c >= 0xC0 and p + 1 < end:
                    cp = ((c & 0x1F) << 6) | (src[p + 1] & 0x3F)
                    w = table[cp]
                    p += 2
                else:                   # a stray byte: kept as it is
                    dst[q] = c
                    q += 1
                    last_kept = q
                    p += 1
                    continue
                q = _put(dst, q, w)
                if w != 0x20:
                    last_kept = q
            if pad:
                q = last_kept
            out_offsets[i + 1] = <offset_t>q
    return q


def _parts(arr):
    t = arr.type
    large = pa.types.is_large_string(t)
    if not (large or pa.types.is_string(t)):
        raise TypeError(f"expected a string array, got {t}")
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], dtype=np.int64 if large else np.int32, count=len(arr) + 1,
                            offset=arr.offset * (8 if large else 4)) if bufs[1] is not None else \
        np.zeros(len(arr) + 1, dtype=np.int64 if large else np.int32)
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.empty(0, np.uint8)
    return offsets, data, large


def collation_key(arr, table, int replacement=0xFFFD, bint pad=True):
    """The collation keys of a string / large_string Array (see the module docstring): an Array of
    ``arr``'s type, nulls kept. ``table``: uint16 ndarray of 65536 weights. ``arr`` is not modified."""
    if isinstance(arr, pa.ChunkedArray):
        raise TypeError("pass one Array (combine the chunks first)")
    if not isinstance(arr, pa.Array):
        raise TypeError(f"expected a pyarrow Array, got {type(arr).__name__}")
    offsets, data, large = _parts(arr)
    rows = len(arr)
    span = int(offsets[rows] - offsets[0]) if rows else 0
    out_offsets = np.empty(rows + 1, dtype=offsets.dtype)
    out_data = np.empty(span * 3 // 2 + 3, dtype=np.uint8)
    written = collation_keys(offsets, data, np.ascontiguousarray(table, dtype=np.uint16), replacement, pad,
                             out_offsets, out_data)
    if not large and written >= (1 << 31):
        raise OverflowError(f"collation keys of {written} bytes do not fit a string array")
    validity = None
    if arr.null_count:
        validity = pa.array(np.asarray(arr.is_valid())).buffers()[1]
    return pa.Array.from_buffers(arr.type, rows, [validity, pa.py_buffer(out_offsets),
                                                  pa.py_buffer(out_data[:written])],
                                 null_count=arr.null_count)


cdef inline int _width(uint32_t w) noexcept nogil:
    return 1 if w < 0x80 else (2 if w < 0x800 else (3 if w < 0x10000 else 4))


@cython.boundscheck(False)
@cython.wraparound(False)
def expanding_keys(const offset_t[::1] offsets, const uint8_t[::1] data, const uint32_t[::1] starts,
                   const uint32_t[::1] weights, uint32_t replacement, bint pad, offset_t[::1] out_offsets,
                   uint8_t[::1] out_data, bint write):
    """Low level: the keys of rows ``offsets`` over ``data`` (code point ``cp`` weighs
    ``weights[starts[cp]:starts[cp + 1]]``; one past the table, a BMP-only table of 65537 starts,
    ``replacement``). ``write`` False: only
    ``out_offsets`` (n + 1, modified) are computed, and the size to allocate is returned (the most bytes
    ever held: a row's trailing spaces are written before ``pad`` drops them); True: the keys are written
    into ``out_data`` too (modified; at least that size), and the bytes of the keys are returned."""
    cdef Py_ssize_t i, n = offsets.shape[0] - 1
    cdef int64_t p, end, q = 0, last_kept, cap = out_data.shape[0], peak = 0
    cdef uint32_t cp, w, k, first, stop, limit
    cdef uint8_t c
    cdef bint overflow = False, broken = False
    cdef const uint8_t *src = &data[0] if data.shape[0] else &_EMPTY[0]
    cdef uint8_t *dst = &out_data[0] if out_data.shape[0] else &_EMPTY[0]
    if starts.shape[0] != 0x10001 and starts.shape[0] != 0x110001:
        raise ValueError(f"starts has {starts.shape[0]} entries, not 65537 or 1114113")
    limit = <uint32_t>(starts.shape[0] - 1)     # code points from here weigh ``replacement``
    # each character's range is checked as it is read (two comparisons), not the whole table per call
    if out_offsets.shape[0] != n + 1:
        raise ValueError("out_offsets must have one entry more than the rows")
    with nogil:
        out_offsets[0] = 0
        for i in range(n):
            p, end = offsets[i], offsets[i + 1]
            last_kept = q
            while p < end:
                c = src[p]
                if c < 0x80:
                    cp = c
                    p += 1
                elif c >= 0xF0 and p + 3 < end:
                    cp = ((c & 0x07) << 18) | ((src[p + 1] & 0x3F) << 12) | ((src[p + 2] & 0x3F) << 6) \
                        | (src[p + 3] & 0x3F)
                    p += 4
                elif c >= 0xF0:             # a cut four-byte character: the replacement weight
                    cp = 0x110000
                    p = end
                elif c >= 0xE0 and p + 2 < end:
                    cp = ((c & 0x0F) << 12) | ((src[p + 1] & 0x3F) << 6) | (src[p + 2] & 0x3F)
                    p += 3
                elif c >= 0xC0 and p + 1 < end:
                    cp = ((c & 0x1F) << 6) | (src[p + 1] & 0x3F)
                    p += 2
                else:                       # a stray byte: kept as it is
                    if write:
                        if q + 1 > cap:
                            overflow = True
                            break
                        dst[q] = c
                    q += 1
                    last_kept = q
                    p += 1
                    continue
                if cp >= limit:
                    first, stop = 0, 1
                else:
                    first, stop = starts[cp], starts[cp + 1]
                    if first > stop or stop > <uint32_t>weights.shape[0]:
                        broken = True
                        break
                for k in range(first, stop):
                    w = replacement if cp >= limit else weights[k]
                    if write:
                        if q + 4 > cap and q + _width(w) > cap:
                            overflow = True
                            break
                        q = _put(dst, q, w)
                    else:
                        q += _width(w)
                    if w != 0x20:
                        last_kept = q
                if overflow:
                    break
            if overflow or broken:
                break
            if q > peak:
                peak = q
            if pad:
                q = last_kept
            out_offsets[i + 1] = <offset_t>q
    if broken:
        raise ValueError(f"starts decrease or point past the weights at U+{cp:04X}")
    if overflow:
        raise ValueError("out_data is smaller than the keys (run the measuring pass first)")
    return q if write else peak


def expanding_key(arr, starts, weights, int replacement=0xFFFD, bint pad=False):
    """The collation keys of a string / large_string Array under an expanding table (see the module
    docstring): ``starts`` uint32[65537] (every character above U+FFFF weighs ``replacement``) or
    uint32[1114113] (every code point its own), ``weights`` uint32 (code points). An Array of
    ``arr``'s type, nulls kept; ``arr`` is not modified."""
    if isinstance(arr, pa.ChunkedArray):
        raise TypeError("pass one Array (combine the chunks first)")
    if not isinstance(arr, pa.Array):
        raise TypeError(f"expected a pyarrow Array, got {type(arr).__name__}")
    offsets, data, large = _parts(arr)
    rows = len(arr)
    starts = np.ascontiguousarray(starts, dtype=np.uint32)
    weights = np.ascontiguousarray(weights, dtype=np.uint32)
    out_offsets = np.empty(rows + 1, dtype=offsets.dtype)
    size = expanding_keys(offsets, data, starts, weights, replacement, pad, out_offsets,
                          np.empty(0, np.uint8), False)
    if not large and out_offsets[rows] >= (1 << 31):
        raise OverflowError(f"collation keys of {out_offsets[rows]} bytes do not fit a string array")
    out_data = np.empty(size, dtype=np.uint8)
    written = expanding_keys(offsets, data, starts, weights, replacement, pad, out_offsets, out_data, True)
    validity = None
    if arr.null_count:
        validity = pa.array(np.asarray(arr.is_valid())).buffers()[1]
    return pa.Array.from_buffers(arr.type, rows, [validity, pa.py_buffer(out_offsets),
                                                  pa.py_buffer(out_data[:written])],
                                 null_count=arr.null_count)
