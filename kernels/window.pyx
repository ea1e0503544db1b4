"""Window functions over rows already sorted by (partition keys, order keys).

The operator (``engine/exec/operators/window.py``) sorts a task's rows once and hands these kernels
flat NumPy arrays; every kernel is one O(n) pass, whatever the frame:

- ``segment_bounds``: from "row i starts a new segment" flags (a new partition, or a new peer group
  of equal order keys), each row's segment [start, end).
- ``range_frame``: the [lo, hi) rows of a ``RANGE BETWEEN <v> PRECEDING|FOLLOWING ...`` frame by two
  pointers over the (ascending) order key of each partition; NULL keys are their own peers.
- ``window_count``, ``window_sum_float``, ``window_sum_words``: COUNT / SUM over any frames [lo, hi)
  from per-partition inclusive prefix sums (exact 128-bit for integers and decimals).
- ``window_arg_extreme``: the row holding the MIN / MAX of each frame, by a monotonic deque (frames
  only move forward: both ends are non-decreasing along the sorted rows).

A frame is [lo, hi) with ``part_start[i] <= lo, hi <= part_end[i]``; ``hi <= lo`` is an empty frame.
``kernels/reference/window.py`` defines the same results with NumPy; tests/kernels/test_window.py
holds both to them on random data.
"""
cimport cython
from libc.stdint cimport int64_t, uint8_t, uint64_t
from libc.stdlib cimport free, malloc

import numpy as np

__all__ = ["segment_bounds", "range_frame", "window_count", "window_sum_float", "window_sum_words",
           "window_arg_extreme"]

ctypedef fused key_t:
    int64_t
    double


cdef inline void _check(Py_ssize_t got, Py_ssize_t n, str what) except *:
    if got != n:
        raise ValueError(f"{what} has {got} rows, expected {n}")


@cython.boundscheck(False)
@cython.wraparound(False)
def segment_bounds(const uint8_t[::1] new_segment, int64_t[::1] start, int64_t[::1] end):
    """Each row's segment from flags that mark the first row of every segment.

    Parameters
    ----------
    new_segment : ndarray[uint8]
        1 where a row starts a segment (row 0 always does, whatever the flag says).
    start, end : ndarray[int64], same length
        Modified: the segment's first row and one past its last row.
    """
    cdef Py_ssize_t n = new_segment.shape[0], i, s = 0
    _check(start.shape[0], n, "start")
    _check(end.shape[0], n, "end")
    with nogil:
        for i in range(n):
            if i and new_segment[i]:
                s = i
            start[i] = s
        s = n
        for i in range(n - 1, -1, -1):
            end[i] = s
            if new_segment[i] or i == 0:
                s = i


# bound kinds of range_frame
DEF UNBOUNDED_PRECEDING = 0
DEF OFFSET = 1
DEF CURRENT_ROW = 2
DEF UNBOUNDED_FOLLOWING = 3


@cython.boundscheck(False)
@cython.wraparound(False)
def range_frame(const key_t[::1] keys, const uint8_t[::1] valid, const int64_t[::1] part_start,
                const int64_t[::1] part_end, const int64_t[::1] peer_start, const int64_t[::1] peer_end,
                int lo_kind, key_t lo_delta, int hi_kind, key_t hi_delta,
                int64_t[::1] lo, int64_t[::1] hi):
    """Frames of ``RANGE BETWEEN ... AND ...`` over one numeric order key, ascending within each
    partition among its non-NULL keys (a descending key is negated by the caller).

    Parameters
    ----------
    keys : ndarray[int64] or ndarray[float64]
    valid : ndarray[uint8]
        0 for a NULL key: its frame's offset bounds are its peers (the other NULLs), and no offset
        bound of a non-NULL key reaches it. The NULLs of a partition are contiguous (sorted first or last).
    part_start, part_end, peer_start, peer_end : ndarray[int64]
        Each row's partition and peer group (``segment_bounds``).
    lo_kind, hi_kind : int
        0 UNBOUNDED PRECEDING, 1 an offset, 2 CURRENT ROW, 3 UNBOUNDED FOLLOWING.
    lo_delta, hi_delta : same type as keys
        For an offset bound: added to the row's key (-v for ``v PRECEDING``, +v for ``v FOLLOWING``);
        the frame starts at the first key >= key + lo_delta and ends after the last key <= key + hi_delta.
    lo, hi : ndarray[int64]
        Modified: each row's frame [lo, hi).
    """
    cdef Py_ssize_t n = keys.shape[0], i, p, q, a, b
    cdef int64_t lo_ptr, hi_ptr
    for arr, what in ((valid, "valid"), (part_start, "part_start"), (part_end, "part_end"),
                      (peer_start, "peer_start"), (peer_end, "peer_end"), (lo, "lo"), (hi, "hi")):
        _check(arr.shape[0], n, what)
    with nogil:
        p = 0
        while p < n:
            q = part_end[p]
            # the partition's non-NULL keys are [a, b)
            a = p
            while a < q and not valid[a]:
                a += 1
            b = a
            while b < q and valid[b]:
                b += 1
            lo_ptr = a
            hi_ptr = a
            for i in range(p, q):
                if lo_kind == UNBOUNDED_PRECEDING:
                    lo[i] = p
                elif lo_kind == UNBOUNDED_FOLLOWING:
                    lo[i] = q
                elif lo_kind == CURRENT_ROW or not valid[i]:
                    lo[i] = peer_start[i]
                else:
                    while lo_ptr < b and keys[lo_ptr] < keys[i] + lo_delta:
                        lo_ptr += 1
                    lo[i] = lo_ptr
                if hi_kind == UNBOUNDED_FOLLOWING:
                    hi[i] = q
                elif hi_kind == UNBOUNDED_PRECEDING:
                    hi[i] = p
                elif hi_kind == CURRENT_ROW or not valid[i]:
                    hi[i] = peer_end[i]
                else:
                    while hi_ptr < b and keys[hi_ptr] <= keys[i] + hi_delta:
                        hi_ptr += 1
                    hi[i] = hi_ptr
            p = q


cdef inline void _frame_checks(Py_ssize_t n, const int64_t[::1] part_start, const int64_t[::1] lo,
                               const int64_t[::1] hi) except *:
    _check(part_start.shape[0], n, "part_start")
    _check(lo.shape[0], n, "lo")
    _check(hi.shape[0], n, "hi")


@cython.boundscheck(False)
@cython.wraparound(False)
def window_count(const uint8_t[::1] valid, const int64_t[::1] part_start, const int64_t[::1] lo,
                 const int64_t[::1] hi, int64_t[::1] out):
    """Non-NULL rows in each frame [lo[i], hi[i]). Modifies ``out``."""
    cdef Py_ssize_t n = valid.shape[0], i
    _frame_checks(n, part_start, lo, hi)
    _check(out.shape[0], n, "out")
    cdef int64_t *prefix = <int64_t *>malloc(max(n, 1) * sizeof(int64_t))
    if prefix == NULL:
        raise MemoryError()
    try:
        with nogil:
            for i in range(n):
                prefix[i] = (prefix[i - 1] if i and part_start[i] != i else 0) + valid[i]
            for i in range(n):
                if hi[i] <= lo[i]:
                    out[i] = 0
                else:
                    out[i] = prefix[hi[i] - 1] - (prefix[lo[i] - 1] if lo[i] > part_start[i] else 0)
    finally:
        free(prefix)


@cython.boundscheck(False)
@cython.wraparound(False)
def window_sum_float(const double[::1] values, const uint8_t[::1] valid, const int64_t[::1] part_start,
                     const int64_t[::1] lo, const int64_t[::1] hi, double[::1] out):
    """SUM of the non-NULL values of each frame (0.0 where there are none: the caller makes those
    NULL from ``window_count``). Prefix sums restart at each partition, so a partition's rounding
    never reaches another's. Modifies ``out``."""
    cdef Py_ssize_t n = values.shape[0], i
    _frame_checks(n, part_start, lo, hi)
    _check(valid.shape[0], n, "valid")
    _check(out.shape[0], n, "out")
    cdef double *prefix = <double *>malloc(max(n, 1) * sizeof(double))
    if prefix == NULL:
        raise MemoryError()
    try:
        with nogil:
            for i in range(n):
                prefix[i] = (prefix[i - 1] if i and part_start[i] != i else 0.0) + \
                    (values[i] if valid[i] else 0.0)
            for i in range(n):
                if hi[i] <= lo[i]:
                    out[i] = 0.0
                else:
                    out[i] = prefix[hi[i] - 1] - (prefix[lo[i] - 1] if lo[i] > part_start[i] else 0.0)
    finally:
        free(prefix)


cdef inline void _add128(uint64_t *lo, int64_t *hi, uint64_t vlo, int64_t vhi) noexcept nogil:
    cdef uint64_t s = lo[0] + vlo
    hi[0] = <int64_t>(<uint64_t>hi[0] + <uint64_t>vhi + (s < vlo))
    lo[0] = s


@cython.boundscheck(False)
@cython.wraparound(False)
def window_sum_words(const int64_t[::1] words, const uint8_t[::1] valid, const int64_t[::1] part_start,
                     const int64_t[::1] lo, const int64_t[::1] hi, int64_t[::1] out):
    """Exact SUM of decimal128 scaled integers over each frame.

    Parameters
    ----------
    words : ndarray[int64]
        Two little-endian words per row (a decimal128 array's data buffer); NULL rows are skipped.
    out : ndarray[int64]
        Modified: two words per row, the frame's sum (0 for a frame without values).
    """
    cdef Py_ssize_t n = valid.shape[0], i
    cdef uint64_t plo, slo
    cdef int64_t phi, shi
    _frame_checks(n, part_start, lo, hi)
    _check(words.shape[0], 2 * n, "words")
    _check(out.shape[0], 2 * n, "out")
    cdef uint64_t *prefix_lo = <uint64_t *>malloc(max(n, 1) * sizeof(uint64_t))
    cdef int64_t *prefix_hi = <int64_t *>malloc(max(n, 1) * sizeof(int64_t))
    if prefix_lo == NULL or prefix_hi == NULL:
        free(prefix_lo)
        free(prefix_hi)
        raise MemoryError()
    try:
        with nogil:
            for i in range(n):
                if i and part_start[i] != i:
                    plo, phi = prefix_lo[i - 1], prefix_hi[i - 1]
                else:
                    plo, phi = 0, 0
                if valid[i]:
                    _add128(&plo, &phi, <uint64_t>words[2 * i], words[2 * i + 1])
                prefix_lo[i], prefix_hi[i] = plo, phi
            for i in range(n):
                if hi[i] <= lo[i]:
                    slo, shi = 0, 0
                else:
                    slo, shi = prefix_lo[hi[i] - 1], prefix_hi[hi[i] - 1]
                    if lo[i] > part_start[i]:
                        # subtract: add the two's complement of the prefix before the frame
                        plo = ~prefix_lo[lo[i] - 1] + 1
                        phi = <int64_t>(~(<uint64_t>prefix_hi[lo[i] - 1]) + (plo == 0))
                        _add128(&slo, &shi, plo, phi)
                out[2 * i] = <int64_t>slo
                out[2 * i + 1] = shi
    finally:
        free(prefix_lo)
        free(prefix_hi)


@cython.boundscheck(False)
@cython.wraparound(False)
def window_arg_extreme(const int64_t[::1] ranks, const uint8_t[::1] valid, const int64_t[::1] lo,
                       const int64_t[::1] hi, bint want_max, int64_t[::1] out):
    """The row of each frame's smallest (or largest) rank among its non-NULL rows, -1 for none.

    Frames must only move forward (``lo`` and ``hi`` non-decreasing along the rows), as the frames
    of sorted partitions do. A monotonic deque keeps the candidates: O(n) for any frame width.

    Parameters
    ----------
    ranks : ndarray[int64]
        Comparable values (dense ranks of any ordered type).
    out : ndarray[int64]
        Modified: the chosen row per frame.
    """
    cdef Py_ssize_t n = ranks.shape[0], i
    cdef int64_t nxt = 0, head = 0, tail = 0, j
    _check(valid.shape[0], n, "valid")
    _check(lo.shape[0], n, "lo")
    _check(hi.shape[0], n, "hi")
    _check(out.shape[0], n, "out")
    cdef int64_t *deque = <int64_t *>malloc(max(n, 1) * sizeof(int64_t))
    if deque == NULL:
        raise MemoryError()
    cdef bint backwards = False
    with nogil:
        for i in range(1, n):
            if lo[i] < lo[i - 1] or hi[i] < hi[i - 1]:
                backwards = True
                break
    if backwards:
        raise ValueError("frames must not move backwards")
    try:
        with nogil:
            for i in range(n):
                if nxt < lo[i]:
                    nxt = lo[i]
                while nxt < hi[i]:
                    if valid[nxt]:
                        while tail > head and (ranks[deque[tail - 1]] <= ranks[nxt] if want_max
                                               else ranks[deque[tail - 1]] >= ranks[nxt]):
                            tail -= 1
                        deque[tail] = nxt
                        tail += 1
                    nxt += 1
                while tail > head and deque[head] < lo[i]:
                    head += 1
                out[i] = deque[head] if tail > head and hi[i] > lo[i] else -1
    finally:
        free(deque)
