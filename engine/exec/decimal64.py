"""DECIMAL values as 64-bit scaled integers when they fit: the aggregates' int64 sums.

Most decimals in practice (TPC-H money: DECIMAL(15,2)) hold values far below 2**63 once scaled, so
the hash aggregate sums them as int64 and turns the sums back into decimals here. (Arithmetic on
decimals runs on the 128-bit kernels, ``engine.exec.decimal128``, which take the same int64 shortcut
row by row.)

A decimal128 value is two little-endian 64-bit words; when the value fits in int64 the high word is the
sign extension of the low word, so the low words *are* the scaled integers (read without copying).
"""
from __future__ import annotations

from typing import Optional, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_LIMIT = 1 << 62          # stay clear of int64's edge so checks can be conservative

Operand = Union[pa.Array, pa.Scalar]


def scaled_int64(d: Operand) -> Optional[Union[np.ndarray, int]]:
    """The unscaled integers of a decimal128 array (or scalar) when all fit in int64 and none is null."""
    if isinstance(d, pa.Scalar):
        if not d.is_valid:
            return None
        value = d.as_py()
        unscaled = int(value.scaleb(d.type.scale))
        return unscaled if -_LIMIT < unscaled < _LIMIT else None
    if not pa.types.is_decimal128(d.type) or d.null_count or len(d) == 0:
        return None
    words = np.frombuffer(d.buffers()[1], dtype=np.int64)[2 * d.offset: 2 * (d.offset + len(d))]
    low, high = words[0::2], words[1::2]
    if not np.array_equal(high, low >> 63):
        return None
    return low


def from_scaled_int64(values: np.ndarray, type_: pa.DataType) -> pa.Array:
    """A decimal128 array of ``type_`` holding ``values`` (unscaled, already at ``type_``'s scale)."""
    words = np.empty(2 * len(values), dtype=np.int64)
    words[0::2] = values
    words[1::2] = values >> 63
    return pa.Array.from_buffers(type_, len(values), [None, pa.py_buffer(words)])


def from_int64_array(values: pa.Array, type_: pa.DataType) -> pa.Array:
    """Reinterpret an int64 array of unscaled integers (NULLs allowed: an empty group's sum) as decimals."""
    if values.offset or values.null_count == 0:
        data = values.fill_null(0).to_numpy() if values.null_count else values.to_numpy()
        result = from_scaled_int64(np.asarray(data, dtype=np.int64), type_)
        return pc.if_else(pc.is_valid(values), result, pa.scalar(None, type_)) if values.null_count else result
    words = np.empty(2 * len(values), dtype=np.int64)
    low = values.fill_null(0).to_numpy()
    words[0::2], words[1::2] = low, low >> 63
    return pa.Array.from_buffers(type_, len(values), [values.buffers()[0], pa.py_buffer(words)])


__all__ = ["scaled_int64", "from_scaled_int64", "from_int64_array"]
