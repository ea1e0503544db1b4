"""HyperLogLog sketches of distinct counts, from the row hashes of kernels/hashing.

A sketch is a caller-allocated ``uint8`` array of ``m = 2**p`` registers (``4 <= p <= 18``; ANALYZE
uses p = 14: 16 KiB, about 0.8% standard error). A 64-bit hash ``h`` updates register ``h >> (64 - p)``
to the larger of its value and the rank of the remaining ``64 - p`` bits (leading zeros + 1). Sketches
of the same ``p`` merge by register-wise maximum, so each leaf sketches its partitions and the
aggregator merges them: the merged sketch is the sketch of the union, whatever the placement.

The estimate is Ertl's improved estimator ("New cardinality estimation algorithms for HyperLogLog
sketches", 2017): unbiased from a handful of values up to 2**64 without empirical bias tables or a
switch to linear counting. ``kernels/reference/hll.py`` computes the same registers with NumPy.
"""
cimport cython
from libc.math cimport sqrt
from libc.stdint cimport uint8_t, uint64_t

import numpy as np

__all__ = ["hll_add", "hll_merge", "hll_estimate", "MIN_PRECISION", "MAX_PRECISION"]

MIN_PRECISION = 4
MAX_PRECISION = 18


cdef extern from *:
    int __builtin_clzll(unsigned long long x) nogil


cdef int _precision(Py_ssize_t m) except -1:
    cdef int p = 0
    while (<Py_ssize_t>1 << p) < m:
        p += 1
    if (<Py_ssize_t>1 << p) != m or p < MIN_PRECISION or p > MAX_PRECISION:
        raise ValueError(f"a sketch has 2**p registers with {MIN_PRECISION} <= p <= {MAX_PRECISION}, not {m}")
    return p


@cython.boundscheck(False)
@cython.wraparound(False)
def hll_add(const uint64_t[::1] hashes, uint8_t[::1] registers) -> None:
    """Add values, given by their 64-bit hashes, to a sketch.

    Parameters
    ----------
    hashes : uint64 array
        Row hashes of the values (``kernels.hash_columns``); callers drop nulls first.
    registers : uint8 array of 2**p
        The sketch; modified in place.
    """
    cdef int p = _precision(registers.shape[0])
    cdef int shift = 64 - p
    cdef uint64_t guard = (<uint64_t>1) << (p - 1)   # caps the rank at 64 - p + 1 when the rest is zero
    cdef Py_ssize_t i, n = hashes.shape[0]
    cdef uint64_t h
    cdef uint8_t rank
    with nogil:
        for i in range(n):
            h = hashes[i]
            rank = <uint8_t>(__builtin_clzll((h << p) | guard) + 1)
            if rank > registers[h >> shift]:
                registers[h >> shift] = rank


@cython.boundscheck(False)
@cython.wraparound(False)
def hll_merge(uint8_t[::1] registers, const uint8_t[::1] other) -> None:
    """Merge ``other`` into ``registers`` (register-wise maximum); both of the same size.

    ``registers`` is modified in place.
    """
    if registers.shape[0] != other.shape[0]:
        raise ValueError(f"cannot merge sketches of {registers.shape[0]} and {other.shape[0]} registers")
    cdef Py_ssize_t i, n = registers.shape[0]
    with nogil:
        for i in range(n):
            if other[i] > registers[i]:
                registers[i] = other[i]


cdef double _sigma(double x):
    cdef double y = 1.0, z = x, z_old
    if x == 1.0:
        return float("inf")
    while True:
        x = x * x
        z_old = z
        z += x * y
        y += y
        if z == z_old:
            return z


cdef double _tau(double x):
    cdef double y = 1.0, z = 1.0 - x, z_old
    if x == 0.0 or x == 1.0:
        return 0.0
    while True:
        x = sqrt(x)
        z_old = z
        y *= 0.5
        z -= (1.0 - x) * (1.0 - x) * y
        if z == z_old:
            return z / 3.0


@cython.boundscheck(False)
@cython.wraparound(False)
def hll_estimate(const uint8_t[::1] registers) -> float:
    """The estimated number of distinct values added to the sketch (0.0 for an empty one)."""
    cdef int p = _precision(registers.shape[0])
    cdef int q = 64 - p
    cdef Py_ssize_t i, m = registers.shape[0]
    cdef long[66] counts
    cdef double z, mf = <double>m
    cdef int k
    for k in range(66):
        counts[k] = 0
    for i in range(m):
        counts[registers[i]] += 1
    z = mf * _tau(1.0 - counts[q + 1] / mf)
    for k in range(q, 0, -1):
        z = 0.5 * (z + counts[k])
    z += mf * _sigma(counts[0] / mf)
    return (mf * mf / (2.0 * 0.6931471805599453)) / z
