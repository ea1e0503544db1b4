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

# Below this many positions Arrow's call costs less than the views made here. Without NULLs, never
# (8 / 256 / 1024 rows of 64k int64: 3.4 / 3.7 / 4.3 us here, 6.4 / 6.8 / 7.8 us by Arrow: its call
# looks the kernel up in the function registry, under a mutex); with NULLs among the values their
# bitmap is gathered apart (9.0 / 9.8 / 11.7 us against Arrow's 6.6 / 7.4 / 9.6).
_MIN_ROWS = 0
_MIN_ROWS_WITH_NULLS = 4096


def _value_dtype(t: pa.DataType) -> Optional[np.dtype]:
    """The NumPy dtype whose items are the values of ``t`` as stored (None: not gathered here)."""
    try:
        return _VALUE_DTYPES[t]
    except KeyError:
        pass
    dtype = None
    if (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_temporal(t) or pa.types.is_decimal(t)) \
            and not pa.types.is_dictionary(t):
        width = t.bit_width
        if width in (8, 16, 32, 64):
            dtype = np.dtype(f"u{width // 8}")
        elif width in (128, 256):
            dtype = np.dtype((np.void, width // 8))
    _VALUE_DTYPES[t] = dtype
    return dtype


# dtype per Arrow type, as _value_dtype finds it: the pa.types checks cost more than a small gather
_VALUE_DTYPES: dict = {}


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
        valid = _valid_at(buffers[0], offset + len(array), indices + offset if offset else indices)
    if missing is not None:
        valid = ~missing if valid is None else valid & ~missing
    if valid is None:
        return pa.Array.from_buffers(t, len(out), [None, data], null_count=0)
    null_count = len(valid) - int(np.count_nonzero(valid))
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little")) if null_count else None
    return pa.Array.from_buffers(t, len(out), [bitmap, data], null_count=null_count)


def _valid_at(bitmap: pa.Buffer, bits: int, at: np.ndarray) -> np.ndarray:
    """The validity bits at positions ``at`` (from the buffer's start) of a bitmap of ``bits`` bits."""
    packed = np.frombuffer(bitmap, dtype=np.uint8)
    if 4 * len(at) >= bits:         # most rows: unpack the bitmap once, then gather
        return np.unpackbits(packed, count=bits, bitorder="little").view(bool).take(at)
    return ((packed[at >> 3] >> (at & 7).astype(np.uint8)) & 1).astype(bool)     # a few: bit by bit


def take_ascending(column, indices: np.ndarray, distinct: bool = False) -> pa.Array:
    """``column`` (an Array or a ChunkedArray) at ``indices`` (int64, ascending, each in range), one
    array. Arrow's take of a many-chunk column concatenates the chunks first, on every call (a few
    rows of TPC-H lineitem cost a copy of the whole column). Here each chunk gathers its own rows:
    a fixed-width column straight into one output buffer, the rest (strings, booleans, dictionaries:
    their chunks' dictionaries may differ) by ``take`` per chunk, then concatenated.

    ``distinct``: the caller knows no position repeats (strictly ascending). Then positions that are
    one run of consecutive rows (every probe row of a join kept, an anti join that removed nothing)
    are a slice: no copy within one chunk."""
    if distinct and len(indices) and indices[-1] - indices[0] == len(indices) - 1:
        column = column.slice(int(indices[0]), len(indices))
        if isinstance(column, pa.Array) or column.num_chunks == 1:
            return column if isinstance(column, pa.Array) else column.chunk(0)
        return column.combine_chunks()
    if isinstance(column, pa.Array):
        return take(column, indices)
    if column.num_chunks == 1:
        return take(column.chunk(0), indices)
    if column.num_chunks == 0 or len(indices) == 0:
        return pa.array([], type=column.type)
    lengths = np.fromiter((len(c) for c in column.chunks), dtype=np.int64, count=column.num_chunks)
    starts = np.concatenate([[0], np.cumsum(lengths)])
    bounds = np.searchsorted(indices, starts)
    dtype = _value_dtype(column.type)
    if dtype is None or len(indices) < _MIN_ROWS:
        parts = [take(column.chunk(c), indices[bounds[c]:bounds[c + 1]] - starts[c])
                 for c in range(column.num_chunks) if bounds[c + 1] > bounds[c]]
        return pa.concat_arrays(parts) if len(parts) > 1 else parts[0]
    data = pa.allocate_buffer(len(indices) * dtype.itemsize)
    out = np.frombuffer(data, dtype=dtype)
    valid = None                # the output's validity, once a chunk with NULLs is met
    for c in range(column.num_chunks):
        lo, hi = int(bounds[c]), int(bounds[c + 1])
        if hi == lo:
            continue
        chunk = column.chunk(c)
        at = indices[lo:hi] - (starts[c] - chunk.offset)
        buffers = chunk.buffers()
        values = np.frombuffer(buffers[1], dtype=dtype, count=chunk.offset + len(chunk))
        values.take(at, out=out[lo:hi], mode="clip")
        if chunk.null_count:
            if valid is None:
                valid = np.ones(len(indices), dtype=bool)
            valid[lo:hi] = _valid_at(buffers[0], chunk.offset + len(chunk), at)
    if valid is None:
        return pa.Array.from_buffers(column.type, len(out), [None, data], null_count=0)
    null_count = len(valid) - int(np.count_nonzero(valid))
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little")) if null_count else None
    return pa.Array.from_buffers(column.type, len(out), [bitmap, data], null_count=null_count)

