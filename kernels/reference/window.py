"""NumPy references for kernels/window.pyx: the same arguments, outputs and results.

They compute by whole arrays (prefix sums, ``searchsorted`` per partition, a sparse table for MIN /
MAX) rather than the compiled kernels' single passes; ``CANOPY_KERNELS=reference`` runs on them.
"""
from __future__ import annotations

import numpy as np

__all__ = ["segment_bounds", "range_frame", "window_count", "window_sum_float", "window_sum_words",
           "window_arg_extreme"]

UNBOUNDED_PRECEDING, OFFSET, CURRENT_ROW, UNBOUNDED_FOLLOWING = 0, 1, 2, 3


def _check(arr, n: int, what: str) -> None:
    if len(arr) != n:
        raise ValueError(f"{what} has {len(arr)} rows, expected {n}")


def segment_bounds(new_segment, start, end) -> None:
    n = len(new_segment)
    _check(start, n, "start")
    _check(end, n, "end")
    if not n:
        return
    flags = np.asarray(new_segment).astype(bool)
    flags[0] = True
    firsts = np.flatnonzero(flags)
    which = np.cumsum(flags) - 1
    start[:] = firsts[which]
    end[:] = np.append(firsts[1:], n)[which]


def range_frame(keys, valid, part_start, part_end, peer_start, peer_end, lo_kind, lo_delta, hi_kind,
                hi_delta, lo, hi) -> None:
    n = len(keys)
    for arr, what in ((valid, "valid"), (part_start, "part_start"), (part_end, "part_end"),
                      (peer_start, "peer_start"), (peer_end, "peer_end"), (lo, "lo"), (hi, "hi")):
        _check(arr, n, what)
    keys = np.asarray(keys)
    valid = np.asarray(valid).astype(bool)
    part_start, part_end = np.asarray(part_start), np.asarray(part_end)
    for p in np.unique(part_start):          # one searchsorted per partition, not per row
        q = int(part_end[p])
        rows = np.arange(p, q)
        ok = valid[p:q]
        nonnull = rows[ok]
        a = int(nonnull[0]) if len(nonnull) else p
        sorted_keys = keys[nonnull]

        def bound(kind, delta, side, peer):
            if kind == UNBOUNDED_PRECEDING:
                return np.full(q - p, p)
            if kind == UNBOUNDED_FOLLOWING:
                return np.full(q - p, q)
            out = np.asarray(peer[p:q]).copy()
            if kind == OFFSET and len(nonnull):
                found = a + np.searchsorted(sorted_keys, keys[nonnull] + delta, side=side)
                out[ok] = found
            return out

        lo[p:q] = bound(lo_kind, lo_delta, "left", peer_start)
        hi[p:q] = bound(hi_kind, hi_delta, "right", peer_end)


def _prefix(values, part_start):
    """Inclusive prefix sums restarted at every partition start."""
    total = np.cumsum(values)
    before = np.concatenate([values[:0], [values.dtype.type(0)] if values.dtype != object else [0], total[:-1]])
    return total - before[part_start] if len(values) else total


def _frame_sum(prefix, part_start, lo, hi, zero):
    lo, hi, part_start = np.asarray(lo), np.asarray(hi), np.asarray(part_start)
    n = len(lo)
    out = np.full(n, zero, dtype=prefix.dtype)
    nonempty = hi > lo
    last = prefix[np.where(nonempty, hi - 1, 0)] if n else out
    first = prefix[np.where(lo > part_start, lo - 1, 0)] if n else out
    out[nonempty] = last[nonempty] - np.where(lo > part_start, first, zero)[nonempty]
    return out


def window_count(valid, part_start, lo, hi, out) -> None:
    n = len(valid)
    for arr, what in ((part_start, "part_start"), (lo, "lo"), (hi, "hi"), (out, "out")):
        _check(arr, n, what)
    prefix = _prefix(np.asarray(valid).astype(np.int64), np.asarray(part_start))
    out[:] = _frame_sum(prefix, part_start, lo, hi, 0)


def window_sum_float(values, valid, part_start, lo, hi, out) -> None:
    n = len(values)
    for arr, what in ((valid, "valid"), (part_start, "part_start"), (lo, "lo"), (hi, "hi"), (out, "out")):
        _check(arr, n, what)
    v = np.where(np.asarray(valid).astype(bool), np.asarray(values, dtype=np.float64), 0.0)
    out[:] = _frame_sum(_prefix(v, np.asarray(part_start)), part_start, lo, hi, 0.0)


def window_sum_words(words, valid, part_start, lo, hi, out) -> None:
    n = len(valid)
    for arr, what in ((part_start, "part_start"), (lo, "lo"), (hi, "hi")):
        _check(arr, n, what)
    _check(words, 2 * n, "words")
    _check(out, 2 * n, "out")
    pairs = np.asarray(words).reshape(n, 2)
    # exact Python integers, summed by NumPy over an object array
    values = pairs[:, 0].view(np.uint64).astype(object) + (pairs[:, 1].astype(object) << 64)
    values = np.where(np.asarray(valid).astype(bool), values, 0).astype(object)
    sums = _frame_sum(_prefix(values, np.asarray(part_start)), part_start, lo, hi, 0)
    low = (sums & ((1 << 64) - 1)).astype(np.uint64).view(np.int64) if n else np.zeros(0, np.int64)
    high = (sums >> 64).astype(np.int64) if n else np.zeros(0, np.int64)
    out[0::2] = low
    out[1::2] = high


def window_arg_extreme(ranks, valid, lo, hi, want_max, out) -> None:
    """A sparse table of the best row of every power-of-two span: two lookups per frame."""
    n = len(ranks)
    for arr, what in ((valid, "valid"), (lo, "lo"), (hi, "hi"), (out, "out")):
        _check(arr, n, what)
    lo, hi = np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64)
    if n > 1 and (np.any(np.diff(lo) < 0) or np.any(np.diff(hi) < 0)):
        raise ValueError("frames must not move backwards")
    if not n:
        return
    ok = np.asarray(valid).astype(bool)
    r = np.asarray(ranks, dtype=np.int64)
    # NULL rows lose every comparison; key = (not valid, rank or -rank, row) ordered lexicographically
    score = np.where(ok, -r if want_max else r, 0)

    def better(a, b):
        take_b = (~ok[a] & ok[b]) | ((ok[a] == ok[b]) & (score[b] < score[a]))
        return np.where(take_b, b, a)

    levels = [np.arange(n)]
    span = 1
    while 2 * span <= n:
        prev = levels[-1]
        levels.append(better(prev[:n - 2 * span + 1], prev[span:n - span + 1]))
        span *= 2
    width = np.maximum(hi - lo, 1)
    k = np.floor(np.log2(width)).astype(np.int64)
    result = np.full(n, -1, dtype=np.int64)
    nonempty = hi > lo
    for level in range(len(levels)):
        rows = np.flatnonzero(nonempty & (k == level))
        if len(rows):
            table = levels[level]
            best = better(table[lo[rows]], table[hi[rows] - (1 << level)])
            result[rows] = np.where(ok[best], best, -1)
    out[:] = result
