"""Grouped central moments: the partial states of VARIANCE / STDDEV (count, mean, M2) and of
COVAR / CORR (count, mean x, mean y, M2 x, M2 y, co-moment C), numerically stable.

Rows update their group's state by Welford's recurrence; partial states (one per leaf) merge by Chan
et al.'s pairwise formula, ``M2 = M2_a + M2_b + (mean_b - mean_a)**2 * n_a * n_b / n``: neither sums
squares of large values (which cancel catastrophically when the mean is large beside the spread).
The caller allocates the state arrays (one slot per group, zero for a new group) and passes dense group
ids; the functions modify the states in place. ``kernels/reference/moments.py`` computes the same
states with NumPy (two passes per batch, then the same merge).
"""
cimport cython
from libc.stdint cimport int64_t, uint8_t

from kernels.buffers cimport _valid, _validity_ptr

__all__ = ["moments_update", "moments_merge", "comoments_update", "comoments_merge"]


def _check(Py_ssize_t n, ids, states):
    if ids.shape[0] != n:
        raise ValueError(f"{ids.shape[0]} group ids for {n} rows")
    sizes = {s.shape[0] for s in states}
    if len(sizes) != 1:
        raise ValueError("the state arrays differ in length")


@cython.boundscheck(False)
@cython.wraparound(False)
def moments_update(const int64_t[::1] ids, const double[::1] values, const uint8_t[::1] validity,
                   Py_ssize_t offset, int64_t[::1] count, double[::1] mean, double[::1] m2) -> None:
    """Add rows to their groups' (count, mean, M2).

    Parameters
    ----------
    ids : int64, one per row, each in ``[0, len(count))``
    values : float64, one per row
    validity : uint8 Arrow validity bitmap of ``values`` (empty: no nulls); null rows are skipped
    offset : bit offset of the first row in ``validity``
    count, mean, m2 : the groups' states, modified in place
    """
    cdef Py_ssize_t i, n = values.shape[0], groups = count.shape[0]
    cdef int64_t g
    cdef double delta
    _check(n, ids, (count, mean, m2))
    # an empty bitmap: no nulls
    cdef const uint8_t *valid = _validity_ptr(validity, offset, n) if validity.shape[0] else NULL
    with nogil:
        for i in range(n):
            if not _valid(valid, offset + i):
                continue
            g = ids[i]
            if g < 0 or g >= groups:
                continue
            count[g] += 1
            delta = values[i] - mean[g]
            mean[g] += delta / count[g]
            m2[g] += delta * (values[i] - mean[g])


@cython.boundscheck(False)
@cython.wraparound(False)
def moments_merge(const int64_t[::1] ids, const int64_t[::1] in_count, const double[::1] in_mean,
                  const double[::1] in_m2, int64_t[::1] count, double[::1] mean, double[::1] m2) -> None:
    """Merge partial states (row ``i`` into group ``ids[i]``) by Chan's formula; states modified in place."""
    cdef Py_ssize_t i, n = in_count.shape[0], groups = count.shape[0]
    cdef int64_t g, na, nb, total
    cdef double delta
    _check(n, ids, (count, mean, m2))
    with nogil:
        for i in range(n):
            g = ids[i]
            nb = in_count[i]
            if nb == 0 or g < 0 or g >= groups:
                continue
            na = count[g]
            total = na + nb
            delta = in_mean[i] - mean[g]
            mean[g] += delta * nb / total
            m2[g] += in_m2[i] + delta * delta * (<double>na) * nb / total
            count[g] = total


@cython.boundscheck(False)
@cython.wraparound(False)
def comoments_update(const int64_t[::1] ids, const double[::1] x, const double[::1] y,
                     const uint8_t[::1] valid, int64_t[::1] count, double[::1] mean_x, double[::1] mean_y,
                     double[::1] m2_x, double[::1] m2_y, double[::1] c) -> None:
    """Add (x, y) pairs to their groups' co-moment states; a row counts where ``valid[i]`` is 1 (both
    non-null). States modified in place."""
    cdef Py_ssize_t i, n = x.shape[0], groups = count.shape[0]
    cdef int64_t g
    cdef double dx, dy
    _check(n, ids, (count, mean_x, mean_y, m2_x, m2_y, c))
    if y.shape[0] != n or valid.shape[0] != n:
        raise ValueError("x, y and valid differ in length")
    with nogil:
        for i in range(n):
            g = ids[i]
            if not valid[i] or g < 0 or g >= groups:
                continue
            count[g] += 1
            dx = x[i] - mean_x[g]
            dy = y[i] - mean_y[g]
            mean_x[g] += dx / count[g]
            mean_y[g] += dy / count[g]
            m2_x[g] += dx * (x[i] - mean_x[g])
            m2_y[g] += dy * (y[i] - mean_y[g])
            c[g] += dx * (y[i] - mean_y[g])


@cython.boundscheck(False)
@cython.wraparound(False)
def comoments_merge(const int64_t[::1] ids, const int64_t[::1] in_count, const double[::1] in_mean_x,
                    const double[::1] in_mean_y, const double[::1] in_m2_x, const double[::1] in_m2_y,
                    const double[::1] in_c, int64_t[::1] count, double[::1] mean_x, double[::1] mean_y,
                    double[::1] m2_x, double[::1] m2_y, double[::1] c) -> None:
    """Merge partial co-moment states (row ``i`` into group ``ids[i]``); states modified in place."""
    cdef Py_ssize_t i, n = in_count.shape[0], groups = count.shape[0]
    cdef int64_t g, na, nb, total
    cdef double dx, dy, w
    _check(n, ids, (count, mean_x, mean_y, m2_x, m2_y, c))
    with nogil:
        for i in range(n):
            g = ids[i]
            nb = in_count[i]
            if nb == 0 or g < 0 or g >= groups:
                continue
            na = count[g]
            total = na + nb
            dx = in_mean_x[i] - mean_x[g]
            dy = in_mean_y[i] - mean_y[g]
            w = (<double>na) * nb / total
            mean_x[g] += dx * nb / total
            mean_y[g] += dy * nb / total
            m2_x[g] += in_m2_x[i] + dx * dx * w
            m2_y[g] += in_m2_y[i] + dy * dy * w
            c[g] += in_c[i] + dx * dy * w
            count[g] = total
