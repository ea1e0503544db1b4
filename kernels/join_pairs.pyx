"""The build rows laid out by key id (``group_rows``) and the (probe row, build row) pairs gathered
from the probe rows' ids (``emit_pairs``, ``count_pairs``). See kernels/join.pyx.
"""
cimport cython
from libc.stdint cimport int64_t

from kernels.join cimport canopy_join_count, canopy_join_emit

import numpy as np

__all__ = ["group_rows", "emit_pairs", "count_pairs"]


@cython.boundscheck(False)
@cython.wraparound(False)
def group_rows(const int64_t[::1] ids, int64_t[::1] starts, int64_t[::1] rows):
    """Lay rows out by id (stable counting sort), the build side's CSR.

    Parameters
    ----------
    ids : ndarray[int64]
        Id of each row in ``[0, len(starts) - 1)``, or negative for a row left out.
    starts : ndarray[int64] of ``num_ids + 1`` entries
        Modified: the rows with id g are ``rows[starts[g]:starts[g + 1]]``.
    rows : ndarray[int64] of at least the number of rows with an id
        Modified: row numbers grouped by id, ascending within each id.

    Raises
    ------
    ValueError
        If an id is ``num_ids`` or more, or ``rows`` is too short.
    """
    cdef Py_ssize_t i, n = ids.shape[0], g, bad = -1
    cdef Py_ssize_t k = starts.shape[0] - 1
    cdef int64_t id_, total = 0
    if k < 0:
        raise ValueError("starts must hold num_ids + 1 entries")
    with nogil:
        for g in range(k + 1):
            starts[g] = 0
        for i in range(n):
            id_ = ids[i]
            if id_ < 0:
                continue
            if id_ >= k:
                bad = i
                break
            starts[id_ + 1] += 1
            total += 1
    if bad >= 0:
        raise ValueError(f"row {bad} has id {ids[bad]} outside [0, {k})")
    if rows.shape[0] < total:
        raise ValueError(f"rows has {rows.shape[0]} slots for {total} rows")
    cdef int64_t[::1] cursor = np.empty(max(k, 1), dtype=np.int64)
    with nogil:
        for g in range(k):
            starts[g + 1] += starts[g]
            cursor[g] = starts[g]
        for i in range(n):
            id_ = ids[i]
            if id_ >= 0:
                rows[cursor[id_]] = i
                cursor[id_] += 1


@cython.boundscheck(False)
@cython.wraparound(False)
def emit_pairs(const int64_t[::1] ids, const int64_t[::1] starts, const int64_t[::1] rows, bint outer,
               Py_ssize_t row, Py_ssize_t offset, int64_t[::1] out_probe, int64_t[::1] out_build,
               bint unique=False):
    """Write the (probe row, build row) pairs of a join from the probe rows' ids.

    Parameters
    ----------
    ids : ndarray[int64]
        Build key id of each probe row (``lookup``'s result: negative for no match).
    starts, rows : ndarray[int64]
        The build rows by id (``group_rows``).
    outer : bool
        Pair a probe row without a match with build row -1 (left outer join).
    row, offset : int
        Where to resume: the probe row, and how many of its build rows were already emitted
        (0, 0 at first).
    out_probe, out_build : ndarray[int64] of the same length >= 1
        Modified: the pairs, probe rows ascending and each probe row's build rows ascending.
    unique : bool
        Every id has exactly one build row (``starts`` is ``0, 1, 2, ...``): ``rows[id]`` is it,
        one memory access fewer per pair (checked).

    Returns
    -------
    (int, int, int)
        Pairs written, and the ``row``, ``offset`` to resume from (``row == len(ids)``: done).
    """
    cdef int64_t n = ids.shape[0], r = row, off = offset, k
    cdef int64_t cap = out_probe.shape[0]
    if out_build.shape[0] != cap or cap < 1:
        raise ValueError("out_probe and out_build must have the same length >= 1")
    if starts.shape[0] < 1 or starts[starts.shape[0] - 1] > rows.shape[0]:
        raise ValueError("malformed build rows")
    if not 0 <= row <= n or offset < 0:
        raise ValueError(f"cannot resume at row {row}, offset {offset}")
    if n == 0 or r == n:
        return 0, r, 0
    cdef int64_t num_ids = starts.shape[0] - 1
    if unique and (starts[num_ids] != num_ids or rows.shape[0] < num_ids):
        raise ValueError("unique=True needs one build row per id")
    with nogil:
        k = canopy_join_emit(&ids[0], n, &starts[0], num_ids, &rows[0] if rows.shape[0] else NULL,
                             unique, outer, &r, &off, cap, &out_probe[0], &out_build[0])
    if k < 0:
        raise ValueError(f"probe row {r} has id {ids[r]} outside the build side's {num_ids} keys")
    return k, r, off


@cython.boundscheck(False)
@cython.wraparound(False)
def count_pairs(const int64_t[::1] ids, const int64_t[::1] starts, bint outer, bint unique=False):
    """The number of pairs ``emit_pairs`` writes for all of ``ids`` (ids outside the keys count
    as no match here; ``emit_pairs`` refuses them)."""
    if starts.shape[0] < 1:
        raise ValueError("starts must hold num_ids + 1 entries")
    cdef int64_t total, num_ids = starts.shape[0] - 1
    if ids.shape[0] == 0:
        return 0
    with nogil:
        total = canopy_join_count(&ids[0], ids.shape[0], &starts[0], num_ids, unique, outer)
    return total
