"""Aggregating by group id, the low-level kernels: COUNT, SUM (exact 128-bit for integers and
decimals), MIN and MAX per group over one batch's ids. ``ids`` are checked against the output sizes
before the loops; outputs are caller-allocated and accumulate (call once per batch).
``GroupedAggregate`` (kernels/groupby_aggregate.pyx) drives them; see kernels/groupby.pyx.
"""
cimport cython
from libc.stdint cimport int64_t, uint8_t, uint64_t

from kernels.buffers cimport _valid, _validity_ptr
from kernels.fused_types cimport float_t, intlike_t, number_t

__all__ = [
    "group_count",
    "group_count_valid",
    "group_sum_int",
    "group_sum_int64",
    "total_sum_int",
    "group_sum_decimal128",
    "group_sum_float",
    "group_min",
    "group_max",
    "group_min_decimal128",
    "group_max_decimal128",
]


cdef int _check_ids(const int64_t[::1] ids, Py_ssize_t num_groups) except -1:
    cdef Py_ssize_t i, n = ids.shape[0], bad = -1
    with nogil:
        for i in range(n):
            if <uint64_t>ids[i] >= <uint64_t>num_groups:
                bad = i
                break
    if bad >= 0:
        raise ValueError(f"row {bad} has group id {ids[bad]} outside [0, {num_groups})")
    return 0

@cython.boundscheck(False)
@cython.wraparound(False)
def group_count(const int64_t[::1] ids, int64_t[::1] out):
    """COUNT(*): ``out[ids[i]] += 1``. Modifies ``out``."""
    cdef Py_ssize_t i, n = ids.shape[0]
    _check_ids(ids, out.shape[0])
    with nogil:
        for i in range(n):
            out[ids[i]] += 1


@cython.boundscheck(False)
@cython.wraparound(False)
def group_count_valid(const int64_t[::1] ids, const uint8_t[::1] validity, Py_ssize_t bit_offset,
                      int64_t[::1] out):
    """COUNT(col): ``out[ids[i]] += 1`` where row i is valid (validity None: every row). Modifies ``out``."""
    cdef Py_ssize_t i, n = ids.shape[0]
    _check_ids(ids, out.shape[0])
    cdef const uint8_t *valid = _validity_ptr(validity, bit_offset, n)
    with nogil:
        for i in range(n):
            if _valid(valid, bit_offset + i):
                out[ids[i]] += 1


cdef inline void _add128(uint64_t *lo, int64_t *hi, uint64_t vlo, int64_t vhi) noexcept nogil:
    cdef uint64_t s = lo[0] + vlo
    hi[0] = <int64_t>(<uint64_t>hi[0] + <uint64_t>vhi + (s < vlo))
    lo[0] = s


@cython.boundscheck(False)
@cython.wraparound(False)
def group_sum_int(const int64_t[::1] ids, const intlike_t[::1] values, const uint8_t[::1] validity,
                  Py_ssize_t bit_offset, uint64_t[::1] lo, int64_t[::1] hi, uint8_t[::1] seen):
    """SUM of integers into exact 128-bit accumulators ``hi * 2**64 + lo`` per group.

    Parameters
    ----------
    ids : ndarray[int64]
    values : ndarray of an integer dtype, same length
    validity : ndarray[uint8] or None
        Null rows are skipped.
    bit_offset : int
    lo, hi : ndarray[uint64], ndarray[int64], one slot per group
        Modified: the running sums.
    seen : ndarray[uint8] or None
        Modified if given: 1 for every group that got a non-null value.
    """
    cdef Py_ssize_t i, n = ids.shape[0]
    cdef int64_t g
    cdef int64_t v
    if values.shape[0] != n:
        raise ValueError(f"{values.shape[0]} values for {n} ids")
    if hi.shape[0] != lo.shape[0] or (seen is not None and seen.shape[0] != lo.shape[0]):
        raise ValueError("lo, hi and seen must have one slot per group")
    _check_ids(ids, lo.shape[0])
    cdef const uint8_t *valid = _validity_ptr(validity, bit_offset, n)
    cdef bint mark = seen is not None
    with nogil:
        for i in range(n):
            if _valid(valid, bit_offset + i):
                g = ids[i]
                if intlike_t is uint64_t:
                    _add128(&lo[g], &hi[g], values[i], 0)
                else:
                    v = <int64_t>values[i]
                    _add128(&lo[g], &hi[g], <uint64_t>v, -1 if v < 0 else 0)
                if mark:
                    seen[g] = 1


@cython.boundscheck(False)
@cython.wraparound(False)
def group_sum_int64(const int64_t[::1] ids, const intlike_t[::1] values, const uint8_t[::1] validity,
                    Py_ssize_t bit_offset, int64_t[::1] out, uint8_t[::1] seen):
    """SUM of integers into one int64 per group (wrapping): the caller keeps every sum within int64
    (``GroupedAggregate`` bounds rows x largest magnitude), and a group's state is one word, one
    cache line touched per row instead of ``group_sum_int``'s two. Otherwise as ``group_sum_int``;
    modifies ``out`` and ``seen``."""
    cdef Py_ssize_t i, n = ids.shape[0]
    cdef int64_t g
    if values.shape[0] != n:
        raise ValueError(f"{values.shape[0]} values for {n} ids")
    if seen is not None and seen.shape[0] != out.shape[0]:
        raise ValueError("out and seen must have one slot per group")
    _check_ids(ids, out.shape[0])
    cdef const uint8_t *valid = _validity_ptr(validity, bit_offset, n)
    cdef bint mark = seen is not None
    with nogil:
        if valid == NULL and not mark:
            for i in range(n):
                out[ids[i]] = <int64_t>(<uint64_t>out[ids[i]] + <uint64_t>values[i])
        else:
            for i in range(n):
                if _valid(valid, bit_offset + i):
                    g = ids[i]
                    out[g] = <int64_t>(<uint64_t>out[g] + <uint64_t>values[i])
                    if mark:
                        seen[g] = 1


@cython.boundscheck(False)
@cython.wraparound(False)
def total_sum_int(const intlike_t[::1] values, const uint8_t[::1] validity, Py_ssize_t bit_offset,
                  uint64_t[::1] lo, int64_t[::1] hi):
    """SUM of every non-null integer into the exact 128-bit accumulator ``hi[0] * 2**64 + lo[0]``
    (one group, no ids: a keyless SUM). Modifies ``lo[0]`` and ``hi[0]``; returns the rows added."""
    cdef Py_ssize_t i, j, n = values.shape[0], added = 0
    cdef int64_t block
    cdef uint64_t ublock
    if lo.shape[0] < 1 or hi.shape[0] < 1:
        raise ValueError("lo and hi need one slot")
    cdef const uint8_t *valid = _validity_ptr(validity, bit_offset, n)
    with nogil:
        if valid == NULL:
            # Blocks of 4096 values cannot overflow an int64 (|v| < 2**63 / 4096 for 32-bit and
            # narrower types); 64-bit values go one by one into the 128-bit sum.
            if intlike_t is int64_t or intlike_t is uint64_t:
                for i in range(n):
                    if intlike_t is uint64_t:
                        _add128(&lo[0], &hi[0], values[i], 0)
                    else:
                        _add128(&lo[0], &hi[0], <uint64_t>values[i], -1 if values[i] < 0 else 0)
            else:
                i = 0
                while i < n:
                    block = 0
                    for j in range(i, min(i + 4096, n)):
                        block += <int64_t>values[j]
                    _add128(&lo[0], &hi[0], <uint64_t>block, -1 if block < 0 else 0)
                    i += 4096
            added = n
        else:
            for i in range(n):
                if _valid(valid, bit_offset + i):
                    added += 1
                    if intlike_t is uint64_t:
                        _add128(&lo[0], &hi[0], values[i], 0)
                    else:
                        _add128(&lo[0], &hi[0], <uint64_t><int64_t>values[i], -1 if values[i] < 0 else 0)
    return added


@cython.boundscheck(False)
@cython.wraparound(False)
def group_sum_decimal128(const int64_t[::1] ids, const int64_t[::1] words, const uint8_t[::1] validity,
                         Py_ssize_t bit_offset, uint64_t[::1] lo, int64_t[::1] hi, int64_t[::1] carry,
                         uint8_t[::1] seen):
    """SUM of decimal128 scaled integers (``words``: two little-endian int64 per row) into 128-bit
    accumulators; otherwise as ``group_sum_int``. ``carry`` counts each group's wraps past +-2**127
    (+1 up, -1 down), so a sum is exact whatever its running total did on the way: a group whose
    carry ends non-zero does not fit DECIMAL(38), one whose carry ends at 0 holds its exact sum
    (two values near 10**38 and a third that cancels one: MySQL sums in 65 digits and answers)."""
    cdef Py_ssize_t i, n = ids.shape[0]
    cdef int64_t g, before
    if words.shape[0] != 2 * n:
        raise ValueError(f"{words.shape[0]} words for {n} ids; expected {2 * n}")
    if hi.shape[0] != lo.shape[0] or carry.shape[0] != lo.shape[0] or \
            (seen is not None and seen.shape[0] != lo.shape[0]):
        raise ValueError("lo, hi, carry and seen must have one slot per group")
    _check_ids(ids, lo.shape[0])
    cdef const uint8_t *valid = _validity_ptr(validity, bit_offset, n)
    cdef bint mark = seen is not None
    with nogil:
        for i in range(n):
            if _valid(valid, bit_offset + i):
                g = ids[i]
                before = hi[g]
                _add128(&lo[g], &hi[g], <uint64_t>words[2 * i], words[2 * i + 1])
                # signed overflow: both addends of one sign, the sum of the other
                if ((before ^ hi[g]) & (words[2 * i + 1] ^ hi[g])) < 0:
                    carry[g] += 1 if before >= 0 else -1
                if mark:
                    seen[g] = 1


@cython.boundscheck(False)
@cython.wraparound(False)
def group_sum_float(const int64_t[::1] ids, const float_t[::1] values, const uint8_t[::1] validity,
                    Py_ssize_t bit_offset, double[::1] out, uint8_t[::1] seen):
    """SUM of floats into float64 per group, in row order; otherwise as ``group_sum_int``."""
    cdef Py_ssize_t i, n = ids.shape[0]
    cdef int64_t g
    if values.shape[0] != n:
        raise ValueError(f"{values.shape[0]} values for {n} ids")
    if seen is not None and seen.shape[0] != out.shape[0]:
        raise ValueError("out and seen must have one slot per group")
    _check_ids(ids, out.shape[0])
    cdef const uint8_t *valid = _validity_ptr(validity, bit_offset, n)
    cdef bint mark = seen is not None
    with nogil:
        for i in range(n):
            if _valid(valid, bit_offset + i):
                g = ids[i]
                out[g] += values[i]
                if mark:
                    seen[g] = 1


@cython.boundscheck(False)
@cython.wraparound(False)
def group_min(const int64_t[::1] ids, const number_t[::1] values, const uint8_t[::1] validity,
              Py_ssize_t bit_offset, number_t[::1] out, uint8_t[::1] seen):
    """MIN per group: where ``seen[g]`` is 0 the first non-null value is taken, then smaller ones.
    NaN is never smaller, so it is the minimum only of a group with nothing else. Modifies ``out``
    and ``seen``."""
    cdef Py_ssize_t i, n = ids.shape[0]
    cdef int64_t g
    if values.shape[0] != n:
        raise ValueError(f"{values.shape[0]} values for {n} ids")
    if seen.shape[0] != out.shape[0]:
        raise ValueError("out and seen must have one slot per group")
    _check_ids(ids, out.shape[0])
    cdef const uint8_t *valid = _validity_ptr(validity, bit_offset, n)
    with nogil:
        for i in range(n):
            if _valid(valid, bit_offset + i):
                g = ids[i]
                if not seen[g] or values[i] < out[g] or out[g] != out[g]:
                    out[g] = values[i]
                    seen[g] = 1


@cython.boundscheck(False)
@cython.wraparound(False)
def group_max(const int64_t[::1] ids, const number_t[::1] values, const uint8_t[::1] validity,
              Py_ssize_t bit_offset, number_t[::1] out, uint8_t[::1] seen):
    """MAX per group; as ``group_min``."""
    cdef Py_ssize_t i, n = ids.shape[0]
    cdef int64_t g
    if values.shape[0] != n:
        raise ValueError(f"{values.shape[0]} values for {n} ids")
    if seen.shape[0] != out.shape[0]:
        raise ValueError("out and seen must have one slot per group")
    _check_ids(ids, out.shape[0])
    cdef const uint8_t *valid = _validity_ptr(validity, bit_offset, n)
    with nogil:
        for i in range(n):
            if _valid(valid, bit_offset + i):
                g = ids[i]
                if not seen[g] or values[i] > out[g] or out[g] != out[g]:
                    out[g] = values[i]
                    seen[g] = 1


cdef inline bint _less128(int64_t ahi, uint64_t alo, int64_t bhi, uint64_t blo) noexcept nogil:
    return ahi < bhi or (ahi == bhi and alo < blo)


@cython.boundscheck(False)
@cython.wraparound(False)
def group_min_decimal128(const int64_t[::1] ids, const int64_t[::1] words, const uint8_t[::1] validity,
                         Py_ssize_t bit_offset, int64_t[::1] out, uint8_t[::1] seen):
    """MIN of decimal128 per group; ``out`` holds two words per group. Modifies ``out``, ``seen``."""
    cdef Py_ssize_t i, n = ids.shape[0]
    cdef int64_t g
    if words.shape[0] != 2 * n or out.shape[0] != 2 * seen.shape[0]:
        raise ValueError("words and out must hold two words per row / group")
    _check_ids(ids, seen.shape[0])
    cdef const uint8_t *valid = _validity_ptr(validity, bit_offset, n)
    with nogil:
        for i in range(n):
            if _valid(valid, bit_offset + i):
                g = ids[i]
                if not seen[g] or _less128(words[2 * i + 1], <uint64_t>words[2 * i],
                                           out[2 * g + 1], <uint64_t>out[2 * g]):
                    out[2 * g] = words[2 * i]
                    out[2 * g + 1] = words[2 * i + 1]
                    seen[g] = 1


@cython.boundscheck(False)
@cython.wraparound(False)
def group_max_decimal128(const int64_t[::1] ids, const int64_t[::1] words, const uint8_t[::1] validity,
                         Py_ssize_t bit_offset, int64_t[::1] out, uint8_t[::1] seen):
    """MAX of decimal128 per group; as ``group_min_decimal128``."""
    cdef Py_ssize_t i, n = ids.shape[0]
    cdef int64_t g
    if words.shape[0] != 2 * n or out.shape[0] != 2 * seen.shape[0]:
        raise ValueError("words and out must hold two words per row / group")
    _check_ids(ids, seen.shape[0])
    cdef const uint8_t *valid = _validity_ptr(validity, bit_offset, n)
    with nogil:
        for i in range(n):
            if _valid(valid, bit_offset + i):
                g = ids[i]
                if not seen[g] or _less128(out[2 * g + 1], <uint64_t>out[2 * g],
                                           words[2 * i + 1], <uint64_t>words[2 * i]):
                    out[2 * g] = words[2 * i]
                    out[2 * g + 1] = words[2 * i + 1]
                    seen[g] = 1
