"""Filter kernels, the comparison loops: a column's buffers against constants, into packed bitmaps.

Buffers in, caller-allocated packed bitmaps (LSB first, bit i = row i) out; the loops live in
``kernels/src/canopy_filter.h`` and release the GIL. ``kernels/filter_plain.pyx`` turns SQL constants
into the ranges and codes these take; see kernels/filter.pyx for the family.
"""
cimport cython
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint64_t

from kernels.buffers cimport _check_offsets, _data_ptr
from kernels.filter cimport (CANOPY_BETWEEN, CANOPY_STR_CONTAINS, _check_bits, canopy_cmp_f32,
                             canopy_cmp_f64, canopy_range_d128, canopy_range_i8, canopy_range_i16,
                             canopy_range_i32, canopy_range_i64, canopy_str_match)
from kernels.fused_types cimport float_t, offset_t, signed_t

__all__ = ["range_integers", "compare_floats", "range_decimal128", "match_strings"]


@cython.boundscheck(False)
@cython.wraparound(False)
def range_integers(const signed_t[::1] values, signed_t lo, signed_t hi, bint negate,
                   uint8_t[::1] out):
    """Test ``lo <= v <= hi`` for each value.

    Parameters
    ----------
    values : ndarray[int8, int16, int32 or int64]
    lo, hi : int
        Bounds in the values' type, ``lo <= hi``.
    negate : bool
        Write the opposite (``<>`` is the negated range ``[c, c]``).
    out : ndarray[uint8] of at least ``ceil(len(values) / 8)`` bytes
        Modified: bit i is ``(lo <= values[i] <= hi) != negate``; bits past the last row are zero.
    """
    cdef Py_ssize_t n = values.shape[0]
    _check_bits(out.shape[0], n)
    if lo > hi:
        raise ValueError(f"empty range [{lo}, {hi}]")
    if n == 0:
        return
    with nogil:
        if signed_t is int8_t:
            canopy_range_i8(&values[0], n, lo, hi, negate, &out[0])
        elif signed_t is int16_t:
            canopy_range_i16(&values[0], n, lo, hi, negate, &out[0])
        elif signed_t is int32_t:
            canopy_range_i32(&values[0], n, lo, hi, negate, &out[0])
        else:
            canopy_range_i64(&values[0], n, lo, hi, negate, &out[0])


@cython.boundscheck(False)
@cython.wraparound(False)
def compare_floats(const float_t[::1] values, int op, float_t a, float_t b, uint8_t[::1] out):
    """Compare each value with ``a`` (or test ``a <= v <= b`` for BETWEEN).

    Parameters
    ----------
    values : ndarray[float32 or float64]
    op : int
        One of the ``CANOPY_EQ .. CANOPY_BETWEEN`` codes (see ``OPERATORS``' order).
    a, b : float
        The constant(s); ``b`` is read by BETWEEN only.
    out : ndarray[uint8]
        Modified: bit i is the comparison of row i.
    """
    cdef Py_ssize_t n = values.shape[0]
    _check_bits(out.shape[0], n)
    if not 0 <= op <= CANOPY_BETWEEN:
        raise ValueError(f"unknown comparison code {op}")
    if n == 0:
        return
    with nogil:
        if float_t is float:
            canopy_cmp_f32(&values[0], n, op, a, b, &out[0])
        else:
            canopy_cmp_f64(&values[0], n, op, a, b, &out[0])


@cython.boundscheck(False)
@cython.wraparound(False)
def range_decimal128(const uint64_t[::1] words, lo, hi, bint negate, uint8_t[::1] out):
    """Test ``lo <= v <= hi`` on decimal128 values taken as 128-bit scaled integers.

    Parameters
    ----------
    words : ndarray[uint64] of ``2 * rows`` words
        The Arrow data buffer from the first row: (low, high) little-endian halves per row.
    lo, hi : int
        Bounds as scaled integers in ``[-2**127, 2**127 - 1]``, ``lo <= hi``.
    negate : bool
    out : ndarray[uint8]
        Modified: bit i is ``(lo <= v_i <= hi) != negate``.
    """
    cdef Py_ssize_t n = words.shape[0] // 2
    if words.shape[0] % 2:
        raise ValueError("decimal128 rows are two words each")
    _check_bits(out.shape[0], n)
    if not (-2**127 <= lo <= hi <= 2**127 - 1):
        raise ValueError(f"bad decimal128 range [{lo}, {hi}]")
    cdef uint64_t lo_low = lo & 0xFFFFFFFFFFFFFFFF, hi_low = hi & 0xFFFFFFFFFFFFFFFF
    cdef int64_t lo_high = lo >> 64, hi_high = hi >> 64
    if n == 0:
        return
    with nogil:
        canopy_range_d128(&words[0], n, lo_low, lo_high, hi_low, hi_high, negate, &out[0])


@cython.boundscheck(False)
@cython.wraparound(False)
def match_strings(const offset_t[::1] offsets, const uint8_t[::1] data, int kind,
                  const uint8_t[::1] needle, uint8_t[::1] out):
    """Match each string against ``needle`` bytewise.

    Parameters
    ----------
    offsets : ndarray[int32 or int64]
        ``rows + 1`` offsets into ``data`` from the array's first row.
    data : ndarray[uint8]
        The whole Arrow data buffer (may be empty).
    kind : int
        ``CANOPY_STR_EQUAL``, ``_PREFIX``, ``_SUFFIX`` or ``_CONTAINS`` (``STRING_MATCHES``' order).
    needle : ndarray[uint8]
    out : ndarray[uint8]
        Modified: bit i says whether row i matches.

    Raises
    ------
    ValueError
        If an offset lies outside ``data`` (a malformed array).
    """
    cdef Py_ssize_t n = offsets.shape[0] - 1, i, start
    cdef int64_t a, b
    if n < 0:
        raise ValueError("offsets must hold rows + 1 entries")
    _check_bits(out.shape[0], n)
    if not 0 <= kind <= CANOPY_STR_CONTAINS:
        raise ValueError(f"unknown string match code {kind}")
    _check_offsets(offsets, n, data.shape[0])
    cdef const uint8_t *base = _data_ptr(data)
    cdef const uint8_t *q = _data_ptr(needle)
    cdef size_t k = needle.shape[0]
    cdef uint8_t byte
    with nogil:
        for start in range(0, n, 8):
            byte = 0
            for i in range(start, min(start + 8, n)):
                a = offsets[i]
                b = offsets[i + 1]
                byte |= <uint8_t>(canopy_str_match(kind, base + a, <size_t>(b - a), q, k) << (i - start))
            out[start >> 3] = byte
