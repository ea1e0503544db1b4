"""Row hashing and hash partitioning of Arrow columns.

Shard placement on INSERT/LOAD and the repartition exchange both route a row to partition
``partition_ids(hash_columns(keys), n)``, so the functions here define where data lives: two sides of
a colocated join agree only because they hash alike. The hash itself is defined once, in
``kernels/src/canopy_hash.h``; ``kernels/reference/hashing.py`` recomputes it with NumPy and the
tests hold the two to bit-identical results.

Value hashes (each column alone):

- integer-like (int8..int64, uint8..uint64, date32/64, time32/64, timestamp, duration, bool):
  ``canopy_hash_word`` of the value widened to int64, so equal values of different widths (int32 5
  and int64 5) hash alike. uint64 values above 2**63 - 1 hash as the int64 with the same bits;
  bool hashes as 0 / 1; temporal types hash their stored count in their own unit (callers cast both
  sides of a join to one unit first).
- float32 / float64: ``canopy_hash_word`` of the float64 bits after widening, with -0.0 turned to
  0.0 and every NaN turned to the quiet NaN 0x7FF8000000000000. Floats do not hash like integers.
- decimal (any width) and fixed_size_binary: XXH64 of the stored bytes, little-endian two's
  complement for decimals (callers cast both sides to one precision and scale first).
- string, large_string, binary, large_binary: XXH64 of the bytes; a string and a binary with the
  same bytes hash alike.
- dictionary arrays: the hash of the decoded value (the dictionary is hashed once, then gathered).
- null (and the null type): ``CANOPY_NULL_HASH``.

Rows of several columns fold left to right: ``h = combine(h, hash(column k))``; a one-column key
hashes as the column alone.

The low-level kernels below take NumPy/memoryview buffers and write into caller-allocated outputs;
they release the GIL, so engine threads can hash batches in parallel.
"""
cimport cython
from libc.stdint cimport (int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t,
                          uint64_t)

from kernels.fused_types cimport code_t, float_t, intlike_t, offset_t

import operator

import numpy as np
import pyarrow as pa

__all__ = [
    "hash_columns",
    "partition_ids",
    "scatter_indices",
    "split_batch",
    "NULL_HASH",
    "MAX_PARTITIONS",
    "hash_integers",
    "hash_floats",
    "hash_booleans",
    "hash_fixed_size_binary",
    "hash_binary",
    "hash_dictionary_codes",
    "set_null_hashes",
    "combine_hashes",
    "fastrange_partitions",
    "counting_sort_partitions",
]

NULL_HASH = np.uint64(CANOPY_NULL_HASH)

# The largest partition count: partition ids are int32.
MAX_PARTITIONS = 2**31 - 1


# Stands in for the data pointer of an empty buffer, so that hashing zero bytes never forms a
# pointer into a zero-length memoryview.
cdef uint8_t _EMPTY_BYTES[8]


# ---------------------------------------------------------------------------------------------------
# Low-level kernels


@cython.boundscheck(False)
@cython.wraparound(False)
def hash_integers(const intlike_t[::1] values, uint64_t[::1] out):
    """Hash integer-like values, each widened to int64.

    Parameters
    ----------
    values : ndarray of any 8/16/32/64-bit signed or unsigned integer dtype
        Stored values; what is in slots that are null does not matter (see ``set_null_hashes``).
    out : ndarray[uint64], same length
        Modified: ``out[i] = canopy_hash_word(int64(values[i]))``.
    """
    cdef Py_ssize_t i, n = values.shape[0]
    if out.shape[0] != n:
        raise ValueError(f"out has {out.shape[0]} slots for {n} values")
    if n == 0:
        return
    cdef const intlike_t *src = &values[0]
    cdef uint64_t *dst = &out[0]
    with nogil:
        for i in range(n):
            # C's conversion to an unsigned type is modular: it sign-extends signed values and
            # zero-extends unsigned ones, which is "widen to int64, take the bits".
            dst[i] = canopy_hash_word(<uint64_t>src[i])


@cython.boundscheck(False)
@cython.wraparound(False)
def hash_floats(const float_t[::1] values, uint64_t[::1] out):
    """Hash float32/float64 values as float64, with -0.0 as 0.0 and one NaN.

    Parameters
    ----------
    values : ndarray[float32 or float64]
    out : ndarray[uint64], same length
        Modified: ``out[i] = canopy_hash_word(canonical float64 bits of values[i])``.
    """
    cdef Py_ssize_t i, n = values.shape[0]
    if out.shape[0] != n:
        raise ValueError(f"out has {out.shape[0]} slots for {n} values")
    if n == 0:
        return
    cdef const float_t *src = &values[0]
    cdef uint64_t *dst = &out[0]
    with nogil:
        for i in range(n):
            dst[i] = canopy_hash_word(canopy_double_bits(<double>src[i]))


@cython.boundscheck(False)
@cython.wraparound(False)
def hash_booleans(const uint8_t[::1] bits, Py_ssize_t bit_offset, uint64_t[::1] out):
    """Hash bit-packed booleans as the integers 0 and 1.

    Parameters
    ----------
    bits : ndarray[uint8]
        Arrow boolean data buffer (LSB-first bit order).
    bit_offset : int
        Bit index of row 0 (the Arrow array's ``offset``).
    out : ndarray[uint64]
        Modified: ``out[i] = canopy_hash_word(bit bit_offset + i)``; its length is the row count.
    """
    cdef Py_ssize_t i, j, n = out.shape[0]
    if bit_offset < 0 or (bit_offset + n + 7) // 8 > bits.shape[0]:
        raise ValueError(f"bitmap of {bits.shape[0]} bytes is too short for {n} rows at bit {bit_offset}")
    cdef uint64_t h0 = canopy_hash_word(0), h1 = canopy_hash_word(1)
    with nogil:
        for i in range(n):
            j = bit_offset + i
            out[i] = h1 if (bits[j >> 3] >> (j & 7)) & 1 else h0


@cython.boundscheck(False)
@cython.wraparound(False)
def hash_fixed_size_binary(const uint8_t[::1] data, Py_ssize_t width, uint64_t[::1] out):
    """Hash consecutive fixed-width byte strings (decimals, fixed_size_binary).

    Parameters
    ----------
    data : ndarray[uint8]
        At least ``len(out) * width`` bytes; row i is ``data[i*width:(i+1)*width]``.
    width : int
        Bytes per row (16 for decimal128).
    out : ndarray[uint64]
        Modified: ``out[i] = canopy_hash_bytes(row i)``.
    """
    cdef Py_ssize_t i, n = out.shape[0]
    if width < 0 or data.shape[0] < n * width:
        raise ValueError(f"{data.shape[0]} bytes do not hold {n} rows of width {width}")
    cdef const uint8_t *base = &data[0] if data.shape[0] > 0 else &_EMPTY_BYTES[0]
    cdef size_t w = <size_t>width
    with nogil:
        for i in range(n):
            out[i] = canopy_hash_bytes(base + <size_t>i * w, w)


@cython.boundscheck(False)
@cython.wraparound(False)
def hash_binary(const offset_t[::1] offsets, const uint8_t[::1] data, uint64_t[::1] out):
    """Hash variable-length byte strings (string, binary and their large variants).

    Parameters
    ----------
    offsets : ndarray[int32 or int64]
        ``len(out) + 1`` offsets into ``data``, starting at the array's first row (Arrow offsets
        buffer advanced by the array's ``offset``); row i is ``data[offsets[i]:offsets[i+1]]``.
    data : ndarray[uint8]
        The whole Arrow data buffer (may be empty).
    out : ndarray[uint64]
        Modified: ``out[i] = canopy_hash_bytes(row i)``.

    Raises
    ------
    ValueError
        If an offset is negative, decreasing, or past the end of ``data`` (the array is malformed).
    """
    cdef Py_ssize_t i, n = out.shape[0], bad = -1
    cdef int64_t start, end, size = data.shape[0]
    if offsets.shape[0] != n + 1:
        raise ValueError(f"{offsets.shape[0]} offsets for {n} rows; expected {n + 1}")
    cdef const uint8_t *base = &data[0] if size > 0 else &_EMPTY_BYTES[0]
    with nogil:
        for i in range(n):
            start = offsets[i]
            end = offsets[i + 1]
            if start < 0 or end < start or end > size:
                bad = i
                break
            out[i] = canopy_hash_bytes(base + start, <size_t>(end - start))
    if bad >= 0:
        raise ValueError(f"row {bad} has offsets [{offsets[bad]}, {offsets[bad + 1]}) outside the "
                         f"{size}-byte data buffer")


@cython.boundscheck(False)
@cython.wraparound(False)
def hash_dictionary_codes(const uint64_t[::1] table, const code_t[::1] codes,
                          const uint8_t[::1] validity, Py_ssize_t bit_offset, uint64_t[::1] out):
    """Gather the hashes of dictionary-encoded rows from the hashes of their dictionary.

    Parameters
    ----------
    table : ndarray[uint64]
        Hash of each dictionary entry (``CANOPY_NULL_HASH`` for null entries).
    codes : ndarray of any integer dtype
        Dictionary indices, one per row. Codes in null rows are not read.
    validity : ndarray[uint8] or None
        Arrow validity bitmap of the indices, or None when no row is null.
    bit_offset : int
        Bit index of row 0 in ``validity``.
    out : ndarray[uint64], same length as ``codes``
        Modified: ``table[codes[i]]`` for valid rows, ``CANOPY_NULL_HASH`` for null rows.

    Raises
    ------
    ValueError
        If a valid row's code is outside ``[0, len(table))``.
    """
    cdef Py_ssize_t i, j, n = codes.shape[0], bad = -1
    cdef uint64_t ntable = <uint64_t>table.shape[0]
    cdef bint has_validity = validity is not None
    cdef code_t code
    if out.shape[0] != n:
        raise ValueError(f"out has {out.shape[0]} slots for {n} codes")
    if has_validity and (bit_offset < 0 or (bit_offset + n + 7) // 8 > validity.shape[0]):
        raise ValueError(f"validity of {validity.shape[0]} bytes is too short for {n} rows "
                         f"at bit {bit_offset}")
    with nogil:
        for i in range(n):
            if has_validity:
                j = bit_offset + i
                if not (validity[j >> 3] >> (j & 7)) & 1:
                    out[i] = CANOPY_NULL_HASH
                    continue
            code = codes[i]
            # Negative codes become huge as uint64, so one comparison checks both bounds.
            if <uint64_t>code >= ntable:
                bad = i
                break
            out[i] = table[<Py_ssize_t>code]
    if bad >= 0:
        raise ValueError(f"row {bad} has dictionary code {codes[bad]} outside a dictionary of "
                         f"{ntable} entries")


@cython.boundscheck(False)
@cython.wraparound(False)
def set_null_hashes(const uint8_t[::1] validity, Py_ssize_t bit_offset, uint64_t[::1] out):
    """Overwrite the hashes of null rows with the null hash.

    Parameters
    ----------
    validity : ndarray[uint8]
        Arrow validity bitmap (bit set = valid).
    bit_offset : int
        Bit index of row 0 (the Arrow array's ``offset``).
    out : ndarray[uint64]
        Modified: ``out[i] = CANOPY_NULL_HASH`` wherever row i is null; other rows are untouched.
    """
    cdef Py_ssize_t i, j, n = out.shape[0]
    if bit_offset < 0 or (bit_offset + n + 7) // 8 > validity.shape[0]:
        raise ValueError(f"validity of {validity.shape[0]} bytes is too short for {n} rows "
                         f"at bit {bit_offset}")
    with nogil:
        for i in range(n):
            j = bit_offset + i
            if not (validity[j >> 3] >> (j & 7)) & 1:
                out[i] = CANOPY_NULL_HASH


@cython.boundscheck(False)
@cython.wraparound(False)
def combine_hashes(uint64_t[::1] acc, const uint64_t[::1] hashes):
    """Fold one column's row hashes into the running hashes of the columns to its left.

    Parameters
    ----------
    acc : ndarray[uint64]
        Modified: ``acc[i] = canopy_hash_combine(acc[i], hashes[i])``.
    hashes : ndarray[uint64], same length
    """
    cdef Py_ssize_t i, n = acc.shape[0]
    if hashes.shape[0] != n:
        raise ValueError(f"cannot combine {hashes.shape[0]} hashes into {n}")
    if n == 0:
        return
    cdef uint64_t *dst = &acc[0]
    cdef const uint64_t *src = &hashes[0]
    with nogil:
        for i in range(n):
            dst[i] = canopy_hash_combine(dst[i], src[i])


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


# ---------------------------------------------------------------------------------------------------
# Arrow arrays -> kernels


def _integer_storage(t):
    """The NumPy dtype an integer-like Arrow type is stored as, or None if ``t`` is not one."""
    if pa.types.is_integer(t):
        return np.dtype(("i" if pa.types.is_signed_integer(t) else "u") + str(t.bit_width // 8))
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        return np.dtype(np.int32)
    if (pa.types.is_date64(t) or pa.types.is_time64(t) or pa.types.is_timestamp(t)
            or pa.types.is_duration(t)):
        return np.dtype(np.int64)
    return None


def _buffer_values(buf, dtype, Py_ssize_t count, Py_ssize_t first):
    """``count`` items of ``dtype`` from an Arrow buffer starting at item ``first``, zero-copy
    unless the buffer is misaligned for ``dtype`` (possible for buffers from foreign producers)."""
    values = np.frombuffer(buf, dtype=dtype, count=count, offset=first * dtype.itemsize)
    return values if values.flags.aligned else values.copy()


def _bitmap(buf):
    return np.frombuffer(buf, dtype=np.uint8)


def _hash_array_into(arr, out):
    """Write the value hash of each row of the Arrow array ``arr`` into ``out`` (same length)."""
    cdef Py_ssize_t n = len(arr)
    if n == 0:
        return
    t = arr.type
    if pa.types.is_dictionary(t):
        _hash_dictionary_into(arr, out)
        return
    if pa.types.is_null(t):
        out[:] = NULL_HASH
        return

    bufs = arr.buffers()
    offset = arr.offset
    storage = _integer_storage(t)
    if storage is not None:
        hash_integers(_buffer_values(bufs[1], storage, n, offset), out)
    elif pa.types.is_float64(t):
        hash_floats(_buffer_values(bufs[1], np.dtype(np.float64), n, offset), out)
    elif pa.types.is_float32(t):
        hash_floats(_buffer_values(bufs[1], np.dtype(np.float32), n, offset), out)
    elif pa.types.is_boolean(t):
        hash_booleans(_bitmap(bufs[1]), offset, out)
    elif pa.types.is_decimal(t) or pa.types.is_fixed_size_binary(t):
        width = t.byte_width
        data = np.frombuffer(bufs[1], dtype=np.uint8, count=n * width, offset=offset * width)
        hash_fixed_size_binary(data, width, out)
    elif pa.types.is_string(t) or pa.types.is_binary(t):
        hash_binary(_buffer_values(bufs[1], np.dtype(np.int32), n + 1, offset),
                    _bitmap(bufs[2]) if bufs[2] is not None else _bitmap(b""), out)
    elif pa.types.is_large_string(t) or pa.types.is_large_binary(t):
        hash_binary(_buffer_values(bufs[1], np.dtype(np.int64), n + 1, offset),
                    _bitmap(bufs[2]) if bufs[2] is not None else _bitmap(b""), out)
    else:
        raise TypeError(f"cannot hash a column of type {t}")

    if arr.null_count:
        set_null_hashes(_bitmap(bufs[0]), offset, out)


def _hash_dictionary_into(arr, out):
    dictionary = arr.dictionary
    if len(dictionary) > len(arr):
        # A small slice of a large dictionary: hashing the rows is cheaper than the dictionary.
        _hash_array_into(arr.dictionary_decode(), out)
        return
    table = np.empty(len(dictionary), dtype=np.uint64)
    _hash_array_into(dictionary, table)
    indices = arr.indices
    ibufs = indices.buffers()
    codes = _buffer_values(ibufs[1], _integer_storage(indices.type), len(indices), indices.offset)
    validity = _bitmap(ibufs[0]) if indices.null_count else None
    hash_dictionary_codes(table, codes, validity, indices.offset, out)


def _hash_column_into(column, out):
    if isinstance(column, pa.ChunkedArray):
        start = 0
        for chunk in column.chunks:
            stop = start + len(chunk)
            _hash_array_into(chunk, out[start:stop])
            start = stop
    elif isinstance(column, pa.Array):
        _hash_array_into(column, out)
    else:
        raise TypeError(f"expected a pyarrow Array or ChunkedArray, got {type(column).__name__}")


def _check_num_partitions(num_partitions):
    n = operator.index(num_partitions)
    if not 1 <= n <= MAX_PARTITIONS:
        raise ValueError(f"num_partitions must be in [1, {MAX_PARTITIONS}], not {n}")
    return n


# ---------------------------------------------------------------------------------------------------
# Public API


def hash_columns(columns):
    """Hash each row of one or more key columns to a uint64.

    Parameters
    ----------
    columns : sequence of pyarrow.Array or pyarrow.ChunkedArray
        Key columns of equal length, leftmost first. Types: see the module docstring.

    Returns
    -------
    ndarray[uint64]
        One hash per row. A one-column key hashes as the column's value hash; more columns fold
        left to right with ``canopy_hash_combine``. Nothing is modified.

    Raises
    ------
    ValueError
        If ``columns`` is empty or the columns differ in length.
    TypeError
        If a column is not an Arrow array or has a type that cannot be hashed.
    """
    columns = list(columns)
    if not columns:
        raise ValueError("hash_columns needs at least one column")
    n = len(columns[0])
    for column in columns[1:]:
        if len(column) != n:
            raise ValueError(f"key columns differ in length: {n} and {len(column)}")
    out = np.empty(n, dtype=np.uint64)
    _hash_column_into(columns[0], out)
    if len(columns) > 1:
        scratch = np.empty(n, dtype=np.uint64)
        for column in columns[1:]:
            _hash_column_into(column, scratch)
            combine_hashes(out, scratch)
    return out


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
