"""Frame-of-reference bit-packing of integer arrays (the storage encoding for narrow ranges).

``pack(values)`` stores every value as its distance from the smallest one, ``value - base``, in
``bit_width`` bits, where ``bit_width`` is the fewest bits that hold ``max - min`` (0 when all values
are equal, 64 when the range needs it, e.g. int64 min and max together). ``unpack`` adds ``base``
back into a caller-allocated array of the original dtype. The bit layout is defined once, in
``kernels/src/canopy_bitpack.h`` (value i at bits ``[i*w, i*w + w)`` of a little-endian stream of
uint64 words, ``ceil(n*w / 64)`` words); ``kernels/reference/bitpack.py`` recomputes it with NumPy and
the tests hold the two to identical words, so segments written by one are read by the other.

Works on int8..int64 and uint8..uint64. ``base`` is a Python int in the dtype's range; deltas are
taken modulo 2**64, so the whole range of int64 and uint64 packs losslessly at width 64.

Nulls are the caller's: validity is kept beside the packed words, and these functions pack whatever
the slots under nulls hold. Callers should fill those slots with a value inside the valid range (the
minimum, say) so garbage does not widen ``bit_width``; after ``unpack`` the slots under nulls hold
whatever was packed there, i.e. anything.

The low-level kernels take NumPy/memoryview buffers, write into caller-allocated outputs and release
the GIL.
"""
cimport cython
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t

from kernels.fused_types cimport intlike_t

import numpy as np

__all__ = [
    "pack",
    "unpack",
    "bit_width_of",
    "packed_words",
    "value_range",
    "pack_into",
]


_MASK64 = (1 << 64) - 1

# Stands in for the data pointer of an empty buffer (width 0 packs into no words).
cdef uint64_t _EMPTY_WORDS[1]


def packed_words(Py_ssize_t n, int bit_width):
    """Number of uint64 words that ``n`` values of ``bit_width`` bits take: ``ceil(n*w / 64)``."""
    _check_width(bit_width)
    if n < 0:
        raise ValueError(f"negative length {n}")
    return canopy_bp_words(<size_t>n, <unsigned>bit_width)


def _check_width(int bit_width):
    if not 0 <= bit_width <= 64:
        raise ValueError(f"bit_width must be in [0, 64], not {bit_width}")


def _base_bits(base, dtype):
    """``base`` as the uint64 the kernels subtract, after checking it is a value of ``dtype``."""
    info = np.iinfo(dtype)
    base = int(base)
    if not info.min <= base <= info.max:
        raise ValueError(f"base {base} is outside the range of {np.dtype(dtype)}")
    return base & _MASK64


@cython.boundscheck(False)
@cython.wraparound(False)
def value_range(const intlike_t[::1] values):
    """Smallest and largest value, as Python ints.

    Parameters
    ----------
    values : ndarray of any 8/16/32/64-bit signed or unsigned integer dtype, not empty

    Raises
    ------
    ValueError
        If ``values`` is empty.
    """
    cdef Py_ssize_t i, n = values.shape[0]
    if n == 0:
        raise ValueError("the range of an empty array is undefined")
    cdef intlike_t lo = values[0], hi = values[0], v
    with nogil:
        for i in range(1, n):
            v = values[i]
            lo = v if v < lo else lo
            hi = v if v > hi else hi
    return int(lo), int(hi)


def bit_width_of(values):
    """Bits ``pack`` stores each value in: the fewest that hold ``max - min`` (0 if empty).

    Parameters
    ----------
    values : ndarray of any 8/16/32/64-bit integer dtype
    """
    values = np.ascontiguousarray(values)
    if values.shape[0] == 0:
        return 0
    lo, hi = value_range(values)
    return canopy_bp_width(<uint64_t>((hi - lo) & _MASK64))


@cython.boundscheck(False)
@cython.wraparound(False)
def pack_into(const intlike_t[::1] values, base, int bit_width, uint64_t[::1] out):
    """Pack ``values - base`` in ``bit_width`` bits each.

    Parameters
    ----------
    values : ndarray of any 8/16/32/64-bit signed or unsigned integer dtype
    base : int
        A value of the dtype; every value must lie in ``[base, base + 2**bit_width)``.
    bit_width : int
        In ``[0, 64]``.
    out : ndarray[uint64] of ``packed_words(len(values), bit_width)`` words
        Modified: the packed stream (bits past ``len(values) * bit_width`` zeroed).

    Raises
    ------
    ValueError
        If a value is outside ``[base, base + 2**bit_width)``; ``out`` is then garbage.
    """
    cdef Py_ssize_t n = values.shape[0], full, b, j
    _check_width(bit_width)
    cdef unsigned w = <unsigned>bit_width
    cdef size_t words = canopy_bp_words(<size_t>n, w)
    if <size_t>out.shape[0] != words:
        raise ValueError(f"out has {out.shape[0]} words; {n} values of {w} bits take {words}")
    cdef uint64_t ubase = _base_bits(base, np.asarray(values).dtype)
    if n == 0:
        return
    # Bits a delta may not have: a value outside the frame would spill into its neighbours.
    cdef uint64_t outside = 0 if w == 64 else ~((<uint64_t>1 << w) - 1)
    cdef uint64_t over = 0, d
    cdef uint64_t tmp[64]
    cdef const intlike_t *src = &values[0]
    cdef uint64_t *dst = &out[0] if words > 0 else &_EMPTY_WORDS[0]
    full = n // 64
    with nogil:
        for b in range(full):
            for j in range(64):
                # Modular conversion: sign-extends signed values, so deltas wrap like int64 ones.
                d = <uint64_t>src[b * 64 + j] - ubase
                over |= d & outside
                tmp[j] = d
            canopy_bp_pack_block(tmp, dst + b * w, w)
        for j in range(n - full * 64):
            d = <uint64_t>src[full * 64 + j] - ubase
            over |= d & outside
            tmp[j] = d
        if n > full * 64:
            canopy_bp_pack_tail(tmp, <size_t>(n - full * 64), dst + full * w, w)
    if over:
        raise ValueError(f"values lie outside [{base}, {base} + 2**{w}): they need more than {w} bits")


def pack(values):
    """Frame-of-reference bit-pack an integer array.

    Parameters
    ----------
    values : ndarray of any 8/16/32/64-bit signed or unsigned integer dtype (1-D)
        Slots under nulls are packed like any other; see the module docstring.

    Returns
    -------
    base : int
        The smallest value (0 for an empty array).
    bit_width : int
        Bits per value, in ``[0, 64]``; 0 when all values are equal or there are none.
    packed : ndarray[uint64]
        ``packed_words(len(values), bit_width)`` words, newly allocated.
    """
    values = np.ascontiguousarray(values)
    if values.ndim != 1 or values.dtype.kind not in "iu":
        raise TypeError(f"pack takes a 1-D integer array, not {values.dtype} of {values.ndim} dims")
    if values.shape[0] == 0:
        return 0, 0, np.empty(0, np.uint64)
    lo, hi = value_range(values)
    w = canopy_bp_width(<uint64_t>((hi - lo) & _MASK64))
    packed = np.empty(canopy_bp_words(<size_t>values.shape[0], w), np.uint64)
    pack_into(values, lo, w, packed)
    return lo, w, packed


@cython.boundscheck(False)
@cython.wraparound(False)
def unpack(base, int bit_width, const uint64_t[::1] packed, Py_ssize_t n, intlike_t[::1] out):
    """Decode ``n`` bit-packed values into ``out``.

    Parameters
    ----------
    base : int
        What ``pack`` returned; a value of ``out``'s dtype.
    bit_width : int
        What ``pack`` returned, in ``[0, 64]``.
    packed : ndarray[uint64]
        At least ``packed_words(n, bit_width)`` words.
    n : int
        Number of values.
    out : ndarray of the packed values' dtype, ``n`` slots
        Modified: ``out[i] = base + delta i`` (wrapping in the dtype).
    """
    cdef Py_ssize_t full, b, j
    _check_width(bit_width)
    cdef unsigned w = <unsigned>bit_width
    if n < 0 or out.shape[0] != n:
        raise ValueError(f"out has {out.shape[0]} slots for {n} values")
    cdef size_t words = canopy_bp_words(<size_t>n, w)
    if <size_t>packed.shape[0] < words:
        raise ValueError(f"{packed.shape[0]} words do not hold {n} values of {w} bits ({words} needed)")
    cdef uint64_t ubase = _base_bits(base, np.asarray(out).dtype)
    if n == 0:
        return
    cdef uint64_t tmp[64]
    cdef const uint64_t *src = &packed[0] if words > 0 else &_EMPTY_WORDS[0]
    cdef intlike_t *dst = &out[0]
    full = n // 64
    with nogil:
        for b in range(full):
            canopy_bp_unpack_block(src + b * w, tmp, w)
            for j in range(64):
                dst[b * 64 + j] = <intlike_t>(tmp[j] + ubase)
        if n > full * 64:
            canopy_bp_unpack_tail(src + full * w, <size_t>(n - full * 64), tmp, w)
            for j in range(n - full * 64):
                dst[full * 64 + j] = <intlike_t>(tmp[j] + ubase)
