"""NumPy reference for kernels/bitpack.pyx: same functions, same packed words, bit for bit.

The format is that of kernels/src/canopy_bitpack.h: value i is stored as ``value - base`` (modulo
2**64) at bits ``[i*w, i*w + w)`` of a little-endian stream of uint64 words, ``ceil(n*w / 64)`` words,
zero past ``n*w`` bits. This module builds the stream as an explicit array of bits and lets
``np.packbits`` / ``np.unpackbits`` turn it into words; it is meant to be obviously right, not fast.
Nulls are the caller's, as in the kernel: slots under nulls are packed like any other value.
"""
from __future__ import annotations

import numpy as np

__all__ = ["pack", "unpack", "bit_width_of", "packed_words", "value_range", "pack_into"]

_MASK64 = (1 << 64) - 1


def packed_words(n: int, bit_width: int) -> int:
    _check_width(bit_width)
    if n < 0:
        raise ValueError(f"negative length {n}")
    return (n * bit_width + 63) // 64


def _check_width(bit_width: int) -> None:
    if not 0 <= bit_width <= 64:
        raise ValueError(f"bit_width must be in [0, 64], not {bit_width}")


def _check_integers(values: np.ndarray) -> np.ndarray:
    values = np.asarray(values)
    if values.ndim != 1 or values.dtype.kind not in "iu":
        raise TypeError(f"expected a 1-D integer array, not {values.dtype} of {values.ndim} dims")
    return values


def _as_u64(values: np.ndarray) -> np.ndarray:
    """The values' bits widened to 64 (sign-extended for signed dtypes), as uint64."""
    wide = values.astype(np.int64 if values.dtype.kind == "i" else np.uint64)
    return wide.view(np.uint64)


def _base_bits(base: int, dtype: np.dtype) -> np.uint64:
    info = np.iinfo(dtype)
    if not info.min <= int(base) <= info.max:
        raise ValueError(f"base {base} is outside the range of {np.dtype(dtype)}")
    return np.uint64(int(base) & _MASK64)


def value_range(values: np.ndarray) -> tuple[int, int]:
    values = _check_integers(values)
    if values.shape[0] == 0:
        raise ValueError("the range of an empty array is undefined")
    return int(values.min()), int(values.max())


def bit_width_of(values: np.ndarray) -> int:
    values = _check_integers(values)
    if values.shape[0] == 0:
        return 0
    lo, hi = value_range(values)
    return (hi - lo).bit_length()


def pack_into(values: np.ndarray, base: int, bit_width: int, out: np.ndarray) -> None:
    values = _check_integers(values)
    _check_width(bit_width)
    n = values.shape[0]
    if out.shape[0] != packed_words(n, bit_width):
        raise ValueError(f"out has {out.shape[0]} words; {n} values of {bit_width} bits take "
                         f"{packed_words(n, bit_width)}")
    deltas = _as_u64(values) - _base_bits(base, values.dtype)
    if bit_width < 64 and (deltas >> np.uint64(bit_width)).any():
        raise ValueError(f"values lie outside [{base}, {base} + 2**{bit_width})")
    # bits[i, k] = bit k of delta i; row-major order is exactly the stream order i*w + k.
    shifts = np.arange(bit_width, dtype=np.uint64)
    bits = ((deltas[:, None] >> shifts[None, :]) & np.uint64(1)).astype(np.uint8).ravel()
    stream = np.zeros(out.shape[0] * 64, np.uint8)
    stream[:bits.shape[0]] = bits
    out[:] = np.packbits(stream, bitorder="little").view("<u8")


def pack(values: np.ndarray) -> tuple[int, int, np.ndarray]:
    values = _check_integers(values)
    if values.shape[0] == 0:
        return 0, 0, np.empty(0, np.uint64)
    base = int(values.min())
    width = bit_width_of(values)
    packed = np.empty(packed_words(values.shape[0], width), np.uint64)
    pack_into(values, base, width, packed)
    return base, width, packed


def unpack(base: int, bit_width: int, packed: np.ndarray, n: int, out: np.ndarray) -> None:
    _check_width(bit_width)
    if n < 0 or out.shape[0] != n:
        raise ValueError(f"out has {out.shape[0]} slots for {n} values")
    words = packed_words(n, bit_width)
    if packed.shape[0] < words:
        raise ValueError(f"{packed.shape[0]} words do not hold {n} values of {bit_width} bits")
    ubase = _base_bits(base, out.dtype)
    stream = np.unpackbits(np.ascontiguousarray(packed[:words], dtype="<u8").view(np.uint8),
                           bitorder="little")
    bits = stream[:n * bit_width].reshape(n, bit_width).astype(np.uint64)
    deltas = (bits << np.arange(bit_width, dtype=np.uint64)[None, :]).sum(axis=1, dtype=np.uint64)
    wide = deltas + ubase
    # Back to the dtype through the same-width integer of 64 bits, wrapping like the kernel.
    out[:] = wide.view(np.int64 if out.dtype.kind == "i" else np.uint64).astype(out.dtype)
