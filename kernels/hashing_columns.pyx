"""Row hashing of Arrow columns: each row of one or more key columns to a uint64 (``hash_columns``),
dispatching on the Arrow type to the loops of kernels/hashing_loops.pyx (a dictionary column hashes
its dictionary once, then gathers by code). The definition of each type's hash is in
kernels/hashing.pyx's docstring.
"""
from kernels.hashing cimport CANOPY_NULL_HASH

import numpy as np
import pyarrow as pa

from kernels.hashing_loops import (combine_hashes, hash_binary, hash_booleans, hash_dictionary_codes,
                                   hash_fixed_size_binary, hash_floats, hash_integers, set_null_hashes)

__all__ = ["hash_columns", "NULL_HASH"]

NULL_HASH = np.uint64(CANOPY_NULL_HASH)


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
