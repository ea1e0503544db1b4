"""Reference for kernels/decimals.pyx: the same per-row quotients and products, computed with
Python's unbounded integers over NumPy object arrays (exact by construction, slow)."""
from __future__ import annotations

import numpy as np

__all__ = ["decimal_divide", "decimal_multiply", "decimal_add", "DIVIDE", "INT_DIVIDE", "MOD", "FLOOR_DIVIDE",
           "CEILING_DIVIDE"]

DIVIDE, INT_DIVIDE, MOD, FLOOR_DIVIDE, CEILING_DIVIDE = 0, 1, 2, 3, 4


def _ints(words: np.ndarray, step: int, n: int) -> np.ndarray:
    words = np.asarray(words, dtype=np.int64)
    low = words[0::2].view(np.uint64)[: n if step else 1].astype(object)
    high = words[1::2][: n if step else 1].astype(object)
    values = high * (1 << 64) + low
    return values if step else np.repeat(values, n)


def _store(values: np.ndarray, out: np.ndarray, rows: np.ndarray) -> None:
    chosen = values[rows]
    low = (chosen & ((1 << 64) - 1)).astype(np.uint64)
    high = (chosen >> 64).astype(np.int64)
    out[2 * rows] = low.view(np.int64)
    out[2 * rows + 1] = high


def _round_div(n: np.ndarray, d: np.ndarray, op: int = DIVIDE) -> np.ndarray:
    """round_half_away(n / d) elementwise (d != 0), truncated (INT_DIVIDE), rounded down or up
    (FLOOR_DIVIDE, CEILING_DIVIDE), or the remainder with the sign of n (MOD)."""
    if len(n) == 0:
        return n
    un, ud = np.abs(n), np.abs(d)
    q = un // ud
    if op == MOD:
        return np.where(n < 0, -(un - q * ud), un - q * ud)
    negative = (n < 0) != (d < 0)
    inexact = (un - q * ud) != 0
    if op == DIVIDE:
        q = q + (2 * (un - q * ud) >= ud)
    elif op == FLOOR_DIVIDE:
        q = q + (negative & inexact)
    elif op == CEILING_DIVIDE:
        q = q + (~negative & inexact)
    return np.where(negative, -q, q)


def _first_overflow(values: np.ndarray, rows: np.ndarray, precision: int) -> int:
    bad = rows[np.abs(values[rows]) >= 10 ** precision] if len(rows) else rows
    return int(bad[0]) if len(bad) else -1


def decimal_divide(a, a_step, b, b_step, shift_a, shift_b, op, precision, out, valid) -> int:
    n = len(valid)
    x, y = _ints(a, a_step, n), _ints(b, b_step, n)
    valid[(y == 0).astype(bool)] = 0
    rows = np.flatnonzero(valid)
    q = np.zeros(n, dtype=object)
    q[rows] = _round_div(x[rows] * 10 ** shift_a, y[rows] * 10 ** shift_b, op)
    first = _first_overflow(q, rows, precision)
    _store(q, out, rows[rows < first] if first >= 0 else rows)
    return first


def decimal_multiply(a, a_step, b, b_step, down, precision, out, valid) -> int:
    n = len(valid)
    x, y = _ints(a, a_step, n), _ints(b, b_step, n)
    rows = np.flatnonzero(valid)
    p = np.zeros(n, dtype=object)
    p[rows] = _round_div(x[rows] * y[rows], np.full(len(rows), 10 ** down, dtype=object))
    first = _first_overflow(p, rows, precision)
    _store(p, out, rows[rows < first] if first >= 0 else rows)
    return first


def decimal_add(a, a_step, b, b_step, shift_a, shift_b, subtract, precision, out, valid) -> int:
    n = len(valid)
    x, y = _ints(a, a_step, n), _ints(b, b_step, n)
    rows = np.flatnonzero(valid)
    r = np.zeros(n, dtype=object)
    x, y = x[rows] * 10 ** shift_a, y[rows] * 10 ** shift_b
    r[rows] = x - y if subtract else x + y
    first = _first_overflow(r, rows, precision)
    _store(r, out, rows[rows < first] if first >= 0 else rows)
    return first
