"""NumPy reference for kernels/hll.pyx: the same registers and the same estimate.

Register ``h >> (64 - p)`` takes the maximum rank of ``h << p`` (leading zeros + 1, at most
``64 - p + 1``); merge is the register-wise maximum; the estimate is Ertl's improved estimator.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["hll_add", "hll_merge", "hll_estimate", "MIN_PRECISION", "MAX_PRECISION"]

MIN_PRECISION = 4
MAX_PRECISION = 18


def _precision(m: int) -> int:
    p = max(m, 1).bit_length() - 1
    if (1 << p) != m or not MIN_PRECISION <= p <= MAX_PRECISION:
        raise ValueError(f"a sketch has 2**p registers with {MIN_PRECISION} <= p <= {MAX_PRECISION}, not {m}")
    return p


def _leading_zeros(x: np.ndarray) -> np.ndarray:
    """Leading zeros of nonzero uint64 values, by halving (no per-row Python)."""
    zeros = np.zeros(x.shape, dtype=np.int64)
    for bits in (32, 16, 8, 4, 2, 1):
        top_empty = (x >> np.uint64(64 - bits)) == 0
        zeros += np.where(top_empty, bits, 0)
        x = np.where(top_empty, x << np.uint64(bits), x)
    return zeros


def hll_add(hashes: np.ndarray, registers: np.ndarray) -> None:
    p = _precision(len(registers))
    hashes = np.asarray(hashes, dtype=np.uint64)
    rest = (hashes << np.uint64(p)) | np.uint64(1 << (p - 1))
    ranks = (_leading_zeros(rest) + 1).astype(np.uint8)
    np.maximum.at(registers, (hashes >> np.uint64(64 - p)).astype(np.int64), ranks)


def hll_merge(registers: np.ndarray, other: np.ndarray) -> None:
    if len(registers) != len(other):
        raise ValueError(f"cannot merge sketches of {len(registers)} and {len(other)} registers")
    np.maximum(registers, other, out=registers)


def _sigma(x: float) -> float:
    if x == 1.0:
        return math.inf
    y, z = 1.0, x
    while True:
        x *= x
        z_old, z = z, z + x * y
        y += y
        if z == z_old:
            return z


def _tau(x: float) -> float:
    if x in (0.0, 1.0):
        return 0.0
    y, z = 1.0, 1.0 - x
    while True:
        x = math.sqrt(x)
        z_old = z
        y *= 0.5
        z -= (1.0 - x) ** 2 * y
        if z == z_old:
            return z / 3.0


def hll_estimate(registers: np.ndarray) -> float:
    p = _precision(len(registers))
    q, m = 64 - p, float(len(registers))
    counts = np.bincount(np.asarray(registers, dtype=np.int64), minlength=q + 2)
    z = m * _tau(1.0 - counts[q + 1] / m)
    for k in range(q, 0, -1):
        z = 0.5 * (z + counts[k])
    z += m * _sigma(counts[0] / m)
    return (m * m / (2.0 * math.log(2.0))) / z
