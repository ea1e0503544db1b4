"""NumPy reference for kernels/moments.pyx: the same grouped (co-)moment states, computed per batch
in two passes (group means, then squared deviations from them) and merged into the running states
by the same pairwise (Chan) formula, vectorised over groups."""
from __future__ import annotations

import numpy as np

__all__ = ["moments_update", "moments_merge", "comoments_update", "comoments_merge"]


def _valid_rows(validity, offset: int, n: int) -> np.ndarray:
    if validity is None or len(validity) == 0:
        return np.ones(n, dtype=bool)
    bits = np.unpackbits(np.asarray(validity, dtype=np.uint8), bitorder="little")
    return bits[offset:offset + n].astype(bool)


def _batch_moments(ids, values, groups):
    n = np.bincount(ids, minlength=groups).astype(np.int64)
    sums = np.bincount(ids, weights=values, minlength=groups)
    mean = np.divide(sums, n, out=np.zeros(groups), where=n > 0)
    dev = values - mean[ids]
    m2 = np.bincount(ids, weights=dev * dev, minlength=groups)
    return n, mean, m2


def moments_merge(ids, in_count, in_mean, in_m2, count, mean, m2) -> None:
    """Merge state rows into ``count``/``mean``/``m2`` (modified in place). Rows of one group merge
    into the batch's group totals first (the multi-way form of Chan's formula), then into the state."""
    ids = np.asarray(ids, dtype=np.int64)
    in_count = np.asarray(in_count, dtype=np.int64)
    groups = len(count)
    keep = in_count > 0
    ids, in_count = ids[keep], in_count[keep]
    in_mean, in_m2 = np.asarray(in_mean)[keep], np.asarray(in_m2)[keep]
    nb = np.bincount(ids, weights=in_count, minlength=groups).astype(np.int64)
    weighted = np.bincount(ids, weights=in_count * in_mean, minlength=groups)
    mean_b = np.divide(weighted, nb, out=np.zeros(groups), where=nb > 0)
    dev = in_mean - mean_b[ids]
    m2_b = np.bincount(ids, weights=in_m2 + in_count * dev * dev, minlength=groups)
    _combine(count, mean, m2, nb, mean_b, m2_b)


def _combine(count, mean, m2, nb, mean_b, m2_b) -> None:
    na = count.astype(np.float64)
    total = na + nb
    touched = nb > 0
    delta = mean_b - mean
    safe = np.where(touched, total, 1.0)
    mean[touched] = (mean + delta * nb / safe)[touched]
    m2[touched] = (m2 + m2_b + delta * delta * na * nb / safe)[touched]
    count[touched] = (count + nb)[touched]


def moments_update(ids, values, validity, offset, count, mean, m2) -> None:
    """Add rows (nulls skipped per ``validity``) to their groups' states, modified in place."""
    ids = np.asarray(ids, dtype=np.int64)
    values = np.asarray(values, dtype=np.float64)
    valid = _valid_rows(validity, offset, len(values))
    n, batch_mean, batch_m2 = _batch_moments(ids[valid], values[valid], len(count))
    _combine(count, mean, m2, n, batch_mean, batch_m2)


def comoments_update(ids, x, y, valid, count, mean_x, mean_y, m2_x, m2_y, c) -> None:
    ids = np.asarray(ids, dtype=np.int64)
    valid = np.asarray(valid).astype(bool)
    ids, x, y = ids[valid], np.asarray(x, dtype=np.float64)[valid], np.asarray(y, dtype=np.float64)[valid]
    groups = len(count)
    n = np.bincount(ids, minlength=groups).astype(np.int64)
    mx = np.divide(np.bincount(ids, weights=x, minlength=groups), n, out=np.zeros(groups), where=n > 0)
    my = np.divide(np.bincount(ids, weights=y, minlength=groups), n, out=np.zeros(groups), where=n > 0)
    dx, dy = x - mx[ids], y - my[ids]
    _co_combine((count, mean_x, mean_y, m2_x, m2_y, c), n, mx, my,
                np.bincount(ids, weights=dx * dx, minlength=groups),
                np.bincount(ids, weights=dy * dy, minlength=groups),
                np.bincount(ids, weights=dx * dy, minlength=groups))


def comoments_merge(ids, in_count, in_mean_x, in_mean_y, in_m2_x, in_m2_y, in_c,
                    count, mean_x, mean_y, m2_x, m2_y, c) -> None:
    ids = np.asarray(ids, dtype=np.int64)
    k = np.asarray(in_count, dtype=np.int64)
    keep = k > 0
    ids, k = ids[keep], k[keep]
    ix, iy = np.asarray(in_mean_x)[keep], np.asarray(in_mean_y)[keep]
    groups = len(count)
    nb = np.bincount(ids, weights=k, minlength=groups).astype(np.int64)
    mx = np.divide(np.bincount(ids, weights=k * ix, minlength=groups), nb, out=np.zeros(groups), where=nb > 0)
    my = np.divide(np.bincount(ids, weights=k * iy, minlength=groups), nb, out=np.zeros(groups), where=nb > 0)
    dx, dy = ix - mx[ids], iy - my[ids]
    _co_combine((count, mean_x, mean_y, m2_x, m2_y, c), nb, mx, my,
                np.bincount(ids, weights=np.asarray(in_m2_x)[keep] + k * dx * dx, minlength=groups),
                np.bincount(ids, weights=np.asarray(in_m2_y)[keep] + k * dy * dy, minlength=groups),
                np.bincount(ids, weights=np.asarray(in_c)[keep] + k * dx * dy, minlength=groups))


def _co_combine(state, nb, mx_b, my_b, m2x_b, m2y_b, c_b) -> None:
    count, mean_x, mean_y, m2_x, m2_y, c = state
    na = count.astype(np.float64)
    total = np.where(nb > 0, na + nb, 1.0)
    touched = nb > 0
    dx, dy = mx_b - mean_x, my_b - mean_y
    w = na * nb / total
    mean_x[touched] = (mean_x + dx * nb / total)[touched]
    mean_y[touched] = (mean_y + dy * nb / total)[touched]
    m2_x[touched] = (m2_x + m2x_b + dx * dx * w)[touched]
    m2_y[touched] = (m2_y + m2y_b + dy * dy * w)[touched]
    c[touched] = (c + c_b + dx * dy * w)[touched]
    count[touched] = (count + nb)[touched]
