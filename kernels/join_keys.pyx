"""Join keys: which Arrow types join (``supports_join_key``), which pairs of types compare, and a key
column's rows as the words, integers or offsets the join kernels take. See kernels/join.pyx.
"""
import numpy as np
import pyarrow as pa

from kernels.filter_tristate import _values
from kernels.groupby_keys import _key_kind as _group_key_kind

__all__ = ["supports_join_key"]


def _plain_type(t):
    return t.value_type if pa.types.is_dictionary(t) else t


def _key_kind(t):
    """'word', 'decimal' or 'bytes' (see the module docstring), None for a type joins do not take."""
    return _group_key_kind(t)


def supports_join_key(t):
    """Whether ``JoinTable`` takes key columns of Arrow type ``t`` (plain or dictionary)."""
    return _key_kind(t) is not None


def _check_compatible(build_type, probe_type):
    """Raise TypeError unless keys of the two types compare by the same words or bytes."""
    b, p = _plain_type(build_type), _plain_type(probe_type)
    kb, kp = _key_kind(b), _key_kind(p)
    if kb is None or kp is None:
        raise TypeError(f"cannot join on a column of type {b if kb is None else p}")
    if kb != kp:
        raise TypeError(f"cannot join a {b} key with a {p} key")
    if kb == "word" and b != p and not (pa.types.is_integer(b) and pa.types.is_integer(p)):
        raise TypeError(f"cannot join a {b} key with a {p} key (cast both to one type first)")
    if kb == "decimal" and b.scale != p.scale:
        raise TypeError(f"cannot join a {b} key with a {p} key (cast both to one scale first)")


def _plain_array(column):
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    elif not isinstance(column, pa.Array):
        raise TypeError(f"expected a pyarrow Array or ChunkedArray, got {type(column).__name__}")
    if pa.types.is_dictionary(column.type):
        column = column.dictionary_decode()
    return column


def _words(arr):
    """The int64 word(s) of each row of an integer-like or decimal128 array: (n, 1) or (n, 2)."""
    n = len(arr)
    t = arr.type
    if pa.types.is_decimal128(t):
        return np.frombuffer(arr.buffers()[1], dtype=np.int64, count=2 * n, offset=16 * arr.offset).reshape(n, 2)
    if pa.types.is_boolean(t):
        arr = arr.cast(pa.int8())
    elif not pa.types.is_integer(t):
        arr = arr.view(pa.int64() if t.bit_width == 64 else pa.int32())
    values = np.frombuffer(arr.buffers()[1], dtype=arr.type.to_pandas_dtype(), count=n,
                           offset=arr.offset * (arr.type.bit_width // 8))
    return values.astype(np.int64, copy=False).reshape(n, 1)


def _int_values(arr):
    """The stored integers of an integer-like array (any width), zero-copy when aligned."""
    t = arr.type
    if pa.types.is_boolean(t):
        return _words(arr)[:, 0]
    if not pa.types.is_integer(t):
        arr = arr.view(pa.int64() if t.bit_width == 64 else pa.int32())
    return _values(arr, arr.type.to_pandas_dtype())


def _offsets_data(arr):
    bufs = arr.buffers()
    large = pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)
    dtype = np.dtype(np.int64 if large else np.int32)
    offsets = np.frombuffer(bufs[1], dtype=dtype, count=len(arr) + 1, offset=arr.offset * dtype.itemsize)
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    return offsets, data


def _valid_mask(columns, n):
    """bool ndarray: no key column is NULL in the row, or None when no column has a NULL."""
    valid = None
    for arr in columns:
        if arr.null_count:
            v = np.asarray(arr.is_valid())
            valid = v if valid is None else valid & v
    return valid


def _log2_ceil(n):
    k = 0
    while (1 << k) < n:
        k += 1
    return k
