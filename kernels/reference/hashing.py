"""NumPy/pyarrow reference for kernels/hashing.pyx: same functions, same results, bit for bit.

The definitions are those of kernels/src/canopy_hash.h (XXH64 with seed 0; values widened to int64;
floats canonicalised; ``combine(h, c) = avalanche(rotl(h, 27) * P1 + c)``; nulls hash to
``NULL_HASH``; partition ``((h >> 32) * n) >> 32``). This module reaches the values through
pyarrow's own accessors (``fill_null``, ``to_numpy``, ``dictionary_decode``, casts) rather than raw
buffers wherever it can, so that tests comparing it with the compiled kernels also check the
kernels' handling of offsets, bitmaps and dictionaries. It vectorises across rows and loops only
over byte positions; it is meant to be obviously right, not fast.
"""
from __future__ import annotations

import operator
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["hash_columns", "partition_ids", "scatter_indices", "split_batch", "NULL_HASH"]

_U64 = np.uint64
P1 = _U64(0x9E3779B185EBCA87)
P2 = _U64(0xC2B2AE3D27D4EB4F)
P3 = _U64(0x165667B19E3779F9)
P4 = _U64(0x85EBCA77C2B2AE63)
P5 = _U64(0x27D4EB2F165667C5)
NULL_HASH = _U64(0x6E756C6C6E756C6D)
CANONICAL_NAN_BITS = _U64(0x7FF8000000000000)
MAX_PARTITIONS = 2**31 - 1
# Initial XXH64 stripe accumulators for seed 0, wrapped in Python ints (NumPy warns on scalar
# overflow; array arithmetic wraps silently, which is what every other line here relies on).
_V1_INIT = _U64((int(P1) + int(P2)) % 2**64)
_V4_INIT = _U64(-int(P1) % 2**64)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << _U64(r)) | (x >> _U64(64 - r))


def _round(acc: np.ndarray, lane: np.ndarray) -> np.ndarray:
    return _rotl(acc + lane * P2, 31) * P1


def _merge_round(acc: np.ndarray, val: np.ndarray) -> np.ndarray:
    return (acc ^ _round(np.zeros_like(val), val)) * P1 + P4


def _avalanche(h: np.ndarray) -> np.ndarray:
    h = h ^ (h >> _U64(33))
    h = h * P2
    h = h ^ (h >> _U64(29))
    h = h * P3
    return h ^ (h >> _U64(32))


def hash_words(words: np.ndarray) -> np.ndarray:
    """XXH64 (seed 0) of each uint64 taken as 8 little-endian bytes."""
    h = np.full(words.shape, P5 + _U64(8), dtype=np.uint64)
    h ^= _round(np.zeros_like(words), words)
    return _avalanche(_rotl(h, 27) * P1 + P4)


def _read_le(data: np.ndarray, pos: np.ndarray, nbytes: int) -> np.ndarray:
    word = np.zeros(pos.shape, dtype=np.uint64)
    for b in range(nbytes):
        word |= data[pos + b].astype(np.uint64) << _U64(8 * b)
    return word


def hash_bytes(starts: np.ndarray, lengths: np.ndarray, data: np.ndarray) -> np.ndarray:
    """XXH64 (seed 0) of ``data[starts[i]:starts[i] + lengths[i]]`` for each i, vectorised over i."""
    starts = starts.astype(np.int64)
    lengths = lengths.astype(np.int64)
    data = np.concatenate([data.astype(np.uint8, copy=False), np.zeros(8, dtype=np.uint8)])
    n = starts.shape[0]
    stripes = lengths // 32

    h = np.full(n, P5, dtype=np.uint64)
    long = np.flatnonzero(stripes > 0)
    if long.size:
        zeros = np.zeros(long.size, dtype=np.uint64)
        v1 = zeros + _V1_INIT
        v2 = zeros + P2
        v3 = zeros.copy()
        v4 = zeros + _V4_INIT
        for s in range(int(stripes.max())):
            live = stripes[long] > s
            pos = np.where(live, starts[long] + 32 * s, 0)
            lanes = [_read_le(data, pos + 8 * k, 8) for k in range(4)]
            v1 = np.where(live, _round(v1, lanes[0]), v1)
            v2 = np.where(live, _round(v2, lanes[1]), v2)
            v3 = np.where(live, _round(v3, lanes[2]), v3)
            v4 = np.where(live, _round(v4, lanes[3]), v4)
        acc = _rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)
        for v in (v1, v2, v3, v4):
            acc = _merge_round(acc, v)
        h[long] = acc
    h += lengths.astype(np.uint64)

    pos = starts + 32 * stripes
    rest = lengths - 32 * stripes
    for k in range(3):
        live = rest >= 8 * (k + 1)
        lane = _read_le(data, np.where(live, pos + 8 * k, 0), 8)
        stepped = _rotl(h ^ _round(np.zeros_like(lane), lane), 27) * P1 + P4
        h = np.where(live, stepped, h)
    pos = pos + 8 * (rest // 8)
    rest = rest % 8
    live = rest >= 4
    lane = _read_le(data, np.where(live, pos, 0), 4)
    h = np.where(live, _rotl(h ^ (lane * P1), 23) * P2 + P3, h)
    pos = pos + 4 * live
    rest = rest - 4 * live
    for k in range(3):
        live = rest > k
        byte = data[np.where(live, pos + k, 0)].astype(np.uint64)
        h = np.where(live, _rotl(h ^ (byte * P5), 11) * P1, h)
    return _avalanche(h)


def combine(h: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Fold column hashes ``c`` into the running row hashes ``h``."""
    return _avalanche(_rotl(h, 27) * P1 + c)


def _integer_view(t: pa.DataType) -> pa.DataType | None:
    """The integer type with the layout of an integer-like type ``t``, or None."""
    if pa.types.is_integer(t):
        return t
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        return pa.int32()
    if (pa.types.is_date64(t) or pa.types.is_time64(t) or pa.types.is_timestamp(t)
            or pa.types.is_duration(t)):
        return pa.int64()
    return None


def _binary_hashes(arr: pa.Array) -> np.ndarray:
    """XXH64 of each value of a binary-like array (nulls hash as empty; the caller masks them)."""
    arr = arr.cast(pa.large_binary())
    lengths = pc.fill_null(pc.binary_length(arr), 0).to_numpy()
    offsets_buf, data_buf = arr.buffers()[1:3]
    offsets = np.frombuffer(offsets_buf, dtype=np.int64)[arr.offset:arr.offset + len(arr) + 1]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    return hash_bytes(offsets[:-1], lengths, data)


def _value_hashes(arr: pa.Array) -> np.ndarray:
    t = arr.type
    if pa.types.is_dictionary(t):
        return _value_hashes(arr.dictionary_decode())
    if pa.types.is_null(t):
        return np.full(len(arr), NULL_HASH, dtype=np.uint64)

    view = _integer_view(t)
    if view is not None:
        values = pc.fill_null(arr.view(view), 0).to_numpy()
        hashes = hash_words(values.astype(np.int64).view(np.uint64))
    elif pa.types.is_float32(t) or pa.types.is_float64(t):
        values = pc.fill_null(arr, 0).to_numpy().astype(np.float64)
        values[values == 0.0] = 0.0
        bits = values.view(np.uint64).copy()
        bits[np.isnan(values)] = CANONICAL_NAN_BITS
        hashes = hash_words(bits)
    elif pa.types.is_boolean(t):
        values = pc.fill_null(arr, False).to_numpy(zero_copy_only=False)
        hashes = hash_words(values.astype(np.uint64))
    elif pa.types.is_decimal(t) or pa.types.is_fixed_size_binary(t):
        hashes = _binary_hashes(arr.view(pa.binary(t.byte_width)))
    elif (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
          or pa.types.is_large_binary(t)):
        hashes = _binary_hashes(arr)
    else:
        raise TypeError(f"cannot hash a column of type {t}")

    if arr.null_count:
        hashes[~arr.is_valid().to_numpy(zero_copy_only=False)] = NULL_HASH
    return hashes


def _column_hashes(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    if isinstance(column, pa.ChunkedArray):
        # Chunk by chunk: combine_chunks cannot unify dictionaries that contain nulls.
        return np.concatenate([np.zeros(0, np.uint64)] + [_value_hashes(c) for c in column.chunks])
    if not isinstance(column, pa.Array):
        raise TypeError(f"expected a pyarrow Array or ChunkedArray, got {type(column).__name__}")
    return _value_hashes(column)


def _check_num_partitions(num_partitions: int) -> int:
    n = operator.index(num_partitions)
    if not 1 <= n <= MAX_PARTITIONS:
        raise ValueError(f"num_partitions must be in [1, {MAX_PARTITIONS}], not {n}")
    return n


def hash_columns(columns: Sequence[pa.Array | pa.ChunkedArray]) -> np.ndarray:
    """See ``kernels.hashing.hash_columns``."""
    columns = list(columns)
    if not columns:
        raise ValueError("hash_columns needs at least one column")
    n = len(columns[0])
    for column in columns[1:]:
        if len(column) != n:
            raise ValueError(f"key columns differ in length: {n} and {len(column)}")
    with np.errstate(over="ignore"):
        out = _column_hashes(columns[0])
        for column in columns[1:]:
            out = combine(out, _column_hashes(column))
    return out


def partition_ids(hashes: np.ndarray, num_partitions: int) -> np.ndarray:
    """See ``kernels.hashing.partition_ids``: ``((h >> 32) * num_partitions) >> 32``."""
    n = _check_num_partitions(num_partitions)
    hashes = np.asarray(hashes)
    if hashes.dtype != np.uint64 or hashes.ndim != 1:
        raise TypeError(f"hashes must be a 1-D uint64 array, not {hashes.ndim}-D {hashes.dtype}")
    # Both factors are below 2**32, so the product is exact in uint64.
    return (((hashes >> _U64(32)) * _U64(n)) >> _U64(32)).astype(np.int32)


def scatter_indices(part_ids: np.ndarray, num_partitions: int) -> tuple[np.ndarray, np.ndarray]:
    """See ``kernels.hashing.scatter_indices``: a stable sort of row numbers by partition."""
    n = _check_num_partitions(num_partitions)
    ids = np.asarray(part_ids)
    if ids.ndim != 1 or ids.dtype.kind not in "iu":
        raise TypeError(f"part_ids must be a 1-D integer array, not {ids.ndim}-D {ids.dtype}")
    if ids.size and (ids.min() < 0 or ids.max() >= n):
        raise ValueError(f"partition ids must be in [0, {n})")
    ids = ids.astype(np.int64)
    indices = np.argsort(ids, kind="stable")
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(ids, minlength=n), out=offsets[1:])
    return indices, offsets


def split_batch(batch: pa.RecordBatch | pa.Table, key_columns: Sequence[str | int],
                num_partitions: int) -> list[pa.RecordBatch | pa.Table]:
    """See ``kernels.hashing.split_batch``."""
    n = _check_num_partitions(num_partitions)
    if not isinstance(batch, (pa.RecordBatch, pa.Table)):
        raise TypeError(f"expected a pyarrow RecordBatch or Table, got {type(batch).__name__}")
    if isinstance(key_columns, (str, bytes, int)):
        raise TypeError("key_columns must be a sequence of column names or positions")
    keys = [batch.column(key) for key in key_columns]
    if not keys:
        raise ValueError("split_batch needs at least one key column")
    indices, offsets = scatter_indices(partition_ids(hash_columns(keys), n), n)
    taken = batch.take(indices)
    bounds = offsets.tolist()
    return [taken.slice(bounds[p], bounds[p + 1] - bounds[p]) for p in range(n)]
