"""Hash partitioning: row hashes to partition ids (``partition_ids``), row numbers grouped by
partition (``scatter_indices``), a batch split into its partitions (``split_batch``). Shard placement
on INSERT/LOAD and the repartition exchange both route rows through here; see kernels/hashing.pyx.
"""
cimport cython
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t

from kernels.hashing cimport canopy_fastrange32

import operator

import numpy as np
import pyarrow as pa

from kernels.hashing_columns import hash_columns

__all__ = [
    "partition_ids",
    "scatter_indices",
    "split_batch",
    "MAX_PARTITIONS",
    "fastrange_partitions",
    "counting_sort_partitions",
]

# The largest partition count: partition ids are int32.
MAX_PARTITIONS = 2**31 - 1


@cython.boundscheck(False)
@cython.wraparound(False)
def fastrange_partitions(const uint64_t[::1] hashes, Py_ssize_t num_partitions, int32_t[::1] out):
    """Map hashes to partitions with ``((h >> 32) * num_partitions) >> 32``.

    Parameters
    ----------
    hashes : ndarray[uint64]
    num_partitions : int
        In ``[1, 2**31 - 1]``.
    out : ndarray[int32], same length
        Modified: the partition of each hash, in ``[0, num_partitions)``.
    """
    cdef Py_ssize_t i, n = hashes.shape[0]
    if out.shape[0] != n:
        raise ValueError(f"out has {out.shape[0]} slots for {n} hashes")
    if not 1 <= num_partitions <= MAX_PARTITIONS:
        raise ValueError(f"num_partitions must be in [1, {MAX_PARTITIONS}], not {num_partitions}")
    if n == 0:
        return
    cdef uint32_t parts = <uint32_t>num_partitions
    cdef const uint64_t *src = &hashes[0]
    cdef int32_t *dst = &out[0]
    with nogil:
        for i in range(n):
            dst[i] = <int32_t>canopy_fastrange32(src[i], parts)


@cython.boundscheck(False)
@cython.wraparound(False)
def counting_sort_partitions(const int32_t[::1] part_ids, int64_t[::1] indices, int64_t[::1] offsets):
    """Stable counting sort of row numbers by partition.

    Parameters
    ----------
    part_ids : ndarray[int32]
        Partition of each row, in ``[0, len(offsets) - 1)``.
    indices : ndarray[int64], same length
        Modified: row numbers grouped by partition, ascending within each partition.
    offsets : ndarray[int64] of ``num_partitions + 1`` entries
        Modified: partition p's rows are ``indices[offsets[p]:offsets[p + 1]]``.

    Raises
    ------
    ValueError
        If a partition id is out of range; ``indices`` and ``offsets`` are then garbage.
    """
    cdef Py_ssize_t i, p, n = part_ids.shape[0], bad = -1
    cdef Py_ssize_t parts = offsets.shape[0] - 1
    cdef int32_t pid
    if indices.shape[0] != n:
        raise ValueError(f"indices has {indices.shape[0]} slots for {n} rows")
    if not 1 <= parts <= MAX_PARTITIONS:
        raise ValueError(f"offsets must have num_partitions + 1 entries, num_partitions in "
                         f"[1, {MAX_PARTITIONS}]; got {offsets.shape[0]} entries")
    cdef int64_t[::1] cursor = np.empty(parts, dtype=np.int64)
    with nogil:
        for p in range(parts + 1):
            offsets[p] = 0
        for i in range(n):
            pid = part_ids[i]
            if <uint32_t>pid >= <uint32_t>parts:
                bad = i
                break
            offsets[pid + 1] += 1
        if bad < 0:
            for p in range(parts):
                offsets[p + 1] += offsets[p]
                cursor[p] = offsets[p]
            for i in range(n):
                pid = part_ids[i]
                indices[cursor[pid]] = i
                cursor[pid] += 1
    if bad >= 0:
        raise ValueError(f"row {bad} has partition id {part_ids[bad]} outside [0, {parts})")


def _check_num_partitions(num_partitions):
    n = operator.index(num_partitions)
    if not 1 <= n <= MAX_PARTITIONS:
        raise ValueError(f"num_partitions must be in [1, {MAX_PARTITIONS}], not {n}")
    return n


def partition_ids(hashes, num_partitions):
    """Map row hashes to partitions ``[0, num_partitions)``.

    Partition ``p`` of hash ``h`` is ``((h >> 32) * num_partitions) >> 32`` (Lemire's "fastrange" on
    the high 32 bits): no division, uniform for uniform hashes, and independent of the low bits that
    a hash table inside a partition indexes by.

    Parameters
    ----------
    hashes : ndarray[uint64]
        Output of ``hash_columns``. Not modified.
    num_partitions : int
        In ``[1, 2**31 - 1]``.

    Returns
    -------
    ndarray[int32]
    """
    n = _check_num_partitions(num_partitions)
    hashes = np.ascontiguousarray(hashes)
    if hashes.dtype != np.uint64 or hashes.ndim != 1:
        raise TypeError(f"hashes must be a 1-D uint64 array, not {hashes.ndim}-D {hashes.dtype}")
    out = np.empty(hashes.shape[0], dtype=np.int32)
    fastrange_partitions(hashes, n, out)
    return out


def scatter_indices(part_ids, num_partitions):
    """Group row numbers by partition with a stable counting sort.

    Parameters
    ----------
    part_ids : ndarray of integers
        Partition of each row, in ``[0, num_partitions)``. Not modified.
    num_partitions : int
        In ``[1, 2**31 - 1]``.

    Returns
    -------
    indices : ndarray[int64]
        A permutation of ``range(len(part_ids))``; partition p's rows are
        ``indices[offsets[p]:offsets[p + 1]]``, in their original order.
    offsets : ndarray[int64] of ``num_partitions + 1`` entries
        ``offsets[0] == 0`` and ``offsets[-1] == len(part_ids)``.

    Raises
    ------
    ValueError
        If a partition id is outside ``[0, num_partitions)``.
    """
    n = _check_num_partitions(num_partitions)
    ids = np.asarray(part_ids)
    if ids.ndim != 1 or ids.dtype.kind not in "iu":
        raise TypeError(f"part_ids must be a 1-D integer array, not {ids.ndim}-D {ids.dtype}")
    if ids.dtype != np.int32:
        if ids.size and (ids.min() < 0 or ids.max() >= n):
            raise ValueError(f"partition ids must be in [0, {n})")
        ids = ids.astype(np.int32)
    ids = np.ascontiguousarray(ids)
    indices = np.empty(ids.shape[0], dtype=np.int64)
    offsets = np.empty(n + 1, dtype=np.int64)
    counting_sort_partitions(ids, indices, offsets)
    return indices, offsets


def split_batch(batch, key_columns, num_partitions):
    """Split the rows of a batch into ``num_partitions`` parts by the hash of its key columns.

    Parameters
    ----------
    batch : pyarrow.RecordBatch or pyarrow.Table
        Not modified.
    key_columns : sequence of str or int
        Names or positions of the key columns, leftmost first.
    num_partitions : int
        In ``[1, 2**31 - 1]``.

    Returns
    -------
    list of pyarrow.RecordBatch or pyarrow.Table (the type of ``batch``)
        Exactly ``num_partitions`` items, possibly empty; item p holds the rows whose key hashes to
        partition p, in their original order. All items are zero-copy slices of one ``take``.
    """
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
