"""``take``: the rows of an Arrow array at NumPy positions, with NumPy's gather for fixed-width values.

Arrow's take kernel checks every index against the bounds and, where the values have a validity bitmap,
reads it element by element: on 64k-row batches it costs about twice NumPy's ``ndarray.take`` of the
same values (4x with NULLs among them; TPC-DS SF 1 q04 / q78 spent a third of their CPU in take, most of
it in the hash join's gathers). Fixed-width columns (integers, floats, dates, times, timestamps,
decimals) are gathered here over their value buffer, and their validity bit by bit at the positions
alone; a dictionary column over its codes; the rest (strings, booleans, nested) by Arrow.
"""
from __future__ import annotations

from typing import Optional

import numpy as np
import pyarrow as pa

# Below this many positions Arrow's call costs less than the views made here (more with NULLs among
# the values: their bitmap is gathered apart).
_MIN_ROWS = 256
_MIN_ROWS_WITH_NULLS = 4096


def _value_dtype(t: pa.DataType) -> Optional[np.dtype]:
    """The NumPy dtype whose items are the values of ``t`` as stored (None: not gathered here)."""
    if pa.types.is_boolean(t) or pa.types.is_dictionary(t) or pa.types.is_nested(t) \
            or pa.types.is_binary(t) or pa.types.is_string(t) or pa.types.is_large_string(t) \
            or pa.types.is_large_binary(t) or pa.types.is_null(t):
        return None
    if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_temporal(t)
            or pa.types.is_decimal(t)):
        return None
    width = t.bit_width
    if width in (8, 16, 32, 64):
        return np.dtype(f"u{width // 8}")
    if width in (128, 256):
        return np.dtype((np.void, width // 8))
    return None


def take(array: pa.Array, indices: np.ndarray, missing: Optional[np.ndarray] = None,
         positions: Optional[pa.Array] = None) -> pa.Array:
    """``array`` at ``indices`` (int64 positions, any order, each in range); ``missing``: a boolean
    mask of the positions that give NULL instead (their index is ignored; a left outer join's
    unmatched rows). ``positions``: ``indices`` as an Arrow array already (no ``missing``), for
    what Arrow takes."""
    if isinstance(array, pa.ChunkedArray):
        array = array.chunk(0) if array.num_chunks == 1 else array.combine_chunks()
    t = array.type
    if pa.types.is_dictionary(t) and len(indices) >= _MIN_ROWS:
        codes = take(array.indices, indices, missing)
        # taken codes index the same dictionary: Arrow's check of every code (safe=True) is waste
        return pa.DictionaryArray.from_arrays(codes, array.dictionary, safe=False)
    dtype = _value_dtype(t)
    if dtype is None or len(indices) < (_MIN_ROWS_WITH_NULLS if array.null_count else _MIN_ROWS):
        if positions is not None and missing is None:
            return array.take(positions)
        positions = pa.array(indices, type=pa.int64(), mask=missing if missing is not None and missing.any() else None)
        return array.take(positions)
    if missing is not None and missing.any():
        if not len(array):      # every position is missing: nothing to read
            return pa.nulls(len(indices), t)
        indices = np.where(missing, 0, indices)
    else:
        missing = None
    offset = array.offset
    buffers = array.buffers()
    values = np.frombuffer(buffers[1], dtype=dtype, count=offset + len(array))
    # the output in Arrow's pool (mimalloc, reused), not NumPy's: a fresh large NumPy array is a fresh
    # mapping whose pages fault in on first write, in every gather of every batch
    data = pa.allocate_buffer(len(indices) * dtype.itemsize)
    out = np.frombuffer(data, dtype=dtype)
    values.take(indices + offset if offset else indices, out=out, mode="clip")   # in range: no buffered copy
    valid = None
    if array.null_count:
        bits = np.frombuffer(buffers[0], dtype=np.uint8)
        at = indices + offset if offset else indices
        if 4 * len(indices) >= len(array):      # most rows: unpack the bitmap once, then gather
            valid = np.unpackbits(bits, count=offset + len(array), bitorder="little").view(bool).take(at)
        else:                                    # a few: each row's bit alone
            valid = ((bits[at >> 3] >> (at & 7).astype(np.uint8)) & 1).astype(bool)
    if missing is not None:
        valid = ~missing if valid is None else valid & ~missing
    if valid is None:
        return pa.Array.from_buffers(t, len(out), [None, data], null_count=0)
    null_count = len(valid) - int(np.count_nonzero(valid))
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little")) if null_count else None
    return pa.Array.from_buffers(t, len(out), [bitmap, data], null_count=null_count)
