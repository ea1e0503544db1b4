"""Reference for kernels/collation.pyx with NumPy: the same keys, computed a whole buffer at a time
(every character decoded, weighed and re-encoded by array operations, no loops of our own)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

__all__ = ["collation_key", "expanding_key"]


def collation_key(arr: pa.Array, table, replacement: int = 0xFFFD, pad: bool = True) -> pa.Array:
    table = np.asarray(table, dtype=np.uint32)
    starts = np.arange(0x10001, dtype=np.uint32)        # one weight per code point
    return expanding_key(arr, starts, table, replacement, pad)


def expanding_key(arr: pa.Array, starts, weights, replacement: int = 0xFFFD, pad: bool = False) -> pa.Array:
    """Code point ``cp`` weighs ``weights[starts[cp]:starts[cp + 1]]`` (none, one or several); one
    past a BMP-only table (65537 starts) weighs ``replacement``."""
    if isinstance(arr, pa.ChunkedArray) or not isinstance(arr, pa.Array):
        raise TypeError(f"expected one pyarrow Array, got {type(arr).__name__}")
    t = arr.type
    large = pa.types.is_large_string(t)
    if not (large or pa.types.is_string(t)):
        raise TypeError(f"expected a string array, got {t}")
    starts = np.asarray(starts, dtype=np.int64)
    weights = np.concatenate([np.asarray(weights, dtype=np.uint32), [replacement]])
    rows = len(arr)
    plain = arr.cast(pa.large_string()) if not large else arr
    bufs = plain.buffers()
    offsets = np.frombuffer(bufs[1], np.int64, count=rows + 1, offset=plain.offset * 8) if bufs[1] else \
        np.zeros(rows + 1, np.int64)
    data = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None else np.empty(0, np.uint8)
    start, stop = int(offsets[0]), int(offsets[rows]) if rows else 0
    b = data[start:stop].astype(np.uint32)
    lead = np.flatnonzero((b & 0xC0) != 0x80)
    c0 = b[lead]
    padded = np.concatenate([b, np.zeros(3, np.uint32)])
    c1, c2, c3 = padded[lead + 1] & 0x3F, padded[lead + 2] & 0x3F, padded[lead + 3] & 0x3F
    width = np.where(c0 < 0x80, 1, np.where(c0 < 0xE0, 2, np.where(c0 < 0xF0, 3, 4)))
    code = np.where(width == 1, c0, np.where(width == 2, ((c0 & 0x1F) << 6) | c1,
                                             np.where(width == 3, ((c0 & 0x0F) << 12) | (c1 << 6) | c2,
                                                      ((c0 & 0x07) << 18) | (c1 << 12) | (c2 << 6) | c3)))
    # each character's weights: a run of ``count`` entries from ``first`` (past the table: the
    # replacement, kept after the table's last weight)
    beyond = code >= len(starts) - 1
    code = np.where(beyond, 0, code)
    first = np.where(beyond, len(weights) - 1, starts[code])
    count = np.where(beyond, 1, starts[code + 1] - starts[code])
    within = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
    weight = weights[np.repeat(first, count) + within]
    row = np.repeat(np.searchsorted(offsets, lead + start, side="right") - 1, count)
    if pad:       # drop each row's trailing weights U+0020
        index = np.arange(len(weight))
        last = np.full(rows, -1, np.int64)
        np.maximum.at(last, row, np.where(weight != 0x20, index, -1))
        kept = index <= last[row]
        weight, row = weight[kept], row[kept]
    size = np.where(weight < 0x80, 1, np.where(weight < 0x800, 2, np.where(weight < 0x10000, 3, 4)))
    # the UTF-8 bytes of each weight, left-aligned in four columns
    encoded = np.stack([
        np.select([size == 1, size == 2, size == 3], [weight, 0xC0 | (weight >> 6), 0xE0 | (weight >> 12)],
                  0xF0 | (weight >> 18)),
        np.select([size == 2, size == 3], [0x80 | (weight & 0x3F), 0x80 | ((weight >> 6) & 0x3F)],
                  0x80 | ((weight >> 12) & 0x3F)),
        np.where(size == 3, 0x80 | (weight & 0x3F), 0x80 | ((weight >> 6) & 0x3F)),
        0x80 | (weight & 0x3F)], axis=1).astype(np.uint8)
    out = encoded[np.arange(4) < size[:, None]]
    lengths = np.bincount(row, weights=size, minlength=rows).astype(np.int64)
    out_offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    validity = pa.array(np.asarray(arr.is_valid())).buffers()[1] if arr.null_count else None
    keys = pa.Array.from_buffers(pa.large_string(), rows, [validity, pa.py_buffer(out_offsets),
                                                           pa.py_buffer(out.tobytes())],
                                 null_count=arr.null_count)
    return keys if large else keys.cast(t)
