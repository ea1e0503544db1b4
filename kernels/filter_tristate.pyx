"""Filter kernels, three-valued results: a predicate's result as (true bits, validity bits) at bit 0,
SQL's AND / OR / NOT over such results (Kleene logic), the WHERE mask and the count of TRUE rows, and
the Arrow buffers a predicate reads (values from the first row, string offsets, a predicate applied
through a dictionary or run-end encoding).

A result is a ``pa.BooleanArray`` at offset 0 whose validity is SQL's NULL and whose data bits are
zero under nulls. The bit loops are kernels/filter_bits.pyx; see kernels/filter.pyx for the family.
The helpers with a leading underscore are shared with the IN-list and join Bloom kernels.
"""
import numpy as np
import pyarrow as pa

from kernels.filter_bits import (copy_bits, expand_runs, gather_bits, kleene_and_bits, kleene_or_bits,
                                 popcount_bits)

__all__ = ["and_kleene", "or_kleene", "not_kleene", "selection", "count_true"]


def _zeros(Py_ssize_t n):
    return np.zeros((n + 7) // 8, dtype=np.uint8)


def _bits_of(buf, Py_ssize_t offset, Py_ssize_t n):
    """Bits [offset, offset + n) of an Arrow bitmap buffer, as a fresh-or-view uint8 array at bit 0."""
    raw = np.frombuffer(buf, dtype=np.uint8)
    if offset & 7 == 0 and not n & 7:
        return raw[offset >> 3:(offset >> 3) + (n >> 3)]
    out = _zeros(n)
    copy_bits(raw, offset, n, out)
    return out


def _validity(arr):
    """Validity bits of ``arr`` at bit 0, or None when no row is null."""
    if arr.null_count == 0:
        return None
    return _bits_of(arr.buffers()[0], arr.offset, len(arr))


def _tristate(Py_ssize_t n, t, v):
    """A BooleanArray from true bits ``t`` (zero under nulls) and validity ``v`` (None: no nulls)."""
    buffers = [None if v is None else pa.py_buffer(v), pa.py_buffer(t)]
    return pa.Array.from_buffers(pa.bool_(), n, buffers, null_count=-1 if v is not None else 0)


def _with_validity(arr, t):
    """The three-valued result of a predicate whose value bits ``t`` were computed over ``arr``'s
    stored values: NULL rows of ``arr`` become NULL (and their true bits are cleared)."""
    v = _validity(arr)
    if v is not None:
        np.bitwise_and(t, v, out=t)
    return _tristate(len(arr), t, v)


def _parts(mask):
    """(true bits, validity bits or None) of any BooleanArray, at bit 0; true bits are zero under nulls."""
    if not isinstance(mask, pa.BooleanArray):
        raise TypeError(f"expected a pyarrow BooleanArray, got {type(mask).__name__}")
    n = len(mask)
    t = _bits_of(mask.buffers()[1], mask.offset, n)
    v = _validity(mask)
    if v is not None:
        t = np.bitwise_and(t, v)
    return t, v


def _full(n):
    ones = np.full((n + 7) // 8, 0xFF, dtype=np.uint8)
    if n & 7:
        ones[ones.shape[0] - 1] = (1 << (n & 7)) - 1
    return ones


def _constant_result(arr, value):
    """The result of a predicate that is ``value`` (True, False or None) on every non-null row."""
    n = len(arr)
    if value is None:
        return _tristate(n, _zeros(n), _zeros(n))
    return _with_validity(arr, _full(n) if value else _zeros(n))


def _values(arr, dtype):
    """The stored values of a fixed-width array from its first row (zero-copy when aligned)."""
    dtype = np.dtype(dtype)
    values = np.frombuffer(arr.buffers()[1], dtype=dtype, count=len(arr), offset=arr.offset * dtype.itemsize)
    return values if values.flags.aligned else values.copy()


def _string_parts(arr):
    bufs = arr.buffers()
    otype = np.int64 if pa.types.is_large_string(arr.type) else np.int32
    offsets = _values_n(bufs[1], otype, len(arr) + 1, arr.offset)
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    return offsets, data


def _values_n(buf, dtype, count, first):
    dtype = np.dtype(dtype)
    values = np.frombuffer(buf, dtype=dtype, count=count, offset=first * dtype.itemsize)
    return values if values.flags.aligned else values.copy()


def _over_encoding(arr, plain):
    """Apply ``plain`` (a predicate over a plain array) to ``arr``: directly, over a dictionary's
    entries then by code, or over a run-end-encoded array's runs then expanded."""
    n = len(arr)
    if pa.types.is_dictionary(arr.type):
        entries = plain(arr.dictionary)
        et, ev = _parts(entries)
        indices = arr.indices
        codes = _values(indices, np.dtype(indices.type.to_pandas_dtype()))
        t = _zeros(n)
        gather_bits(et, len(entries), codes, t)
        if ev is not None:
            v = _zeros(n)
            gather_bits(ev, len(entries), codes, v)
        else:
            v = None
        iv = _validity(indices)
        if iv is not None:
            v = iv if v is None else np.bitwise_and(v, iv)
            np.bitwise_and(t, iv, out=t)
        return _tristate(n, t, v)
    if pa.types.is_run_end_encoded(arr.type):
        rt, rv = _parts(plain(arr.values))
        run_ends = arr.run_ends.to_numpy()
        t = _zeros(n)
        expand_runs(run_ends, rt, arr.offset, n, t)
        v = None
        if rv is not None:
            v = _zeros(n)
            expand_runs(run_ends, rv, arr.offset, n, v)
        return _tristate(n, t, v)
    return plain(arr)


def _check_array(arr):
    if not isinstance(arr, pa.Array):
        raise TypeError(f"expected a pyarrow Array, got {type(arr).__name__}")


# ---------------------------------------------------------------------------------------------------
# SQL logic over results


def and_kleene(a, b):
    """SQL AND of two three-valued results of equal length (FALSE AND NULL is FALSE).

    Returns
    -------
    pyarrow.BooleanArray
        A new array; ``a`` and ``b`` are not modified.
    """
    return _combine(a, b, kleene_and_bits, np.bitwise_and)


def or_kleene(a, b):
    """SQL OR of two three-valued results of equal length (TRUE OR NULL is TRUE)."""
    return _combine(a, b, kleene_or_bits, np.bitwise_or)


def _combine(a, b, kernel, plain_op):
    if len(a) != len(b):
        raise ValueError(f"cannot combine results of {len(a)} and {len(b)} rows")
    n = len(a)
    at, av = _parts(a)
    bt, bv = _parts(b)
    if av is None and bv is None:
        return _tristate(n, plain_op(at, bt), None)
    ot, ov = _zeros(n), _zeros(n)
    if n:
        kernel(at, _full(n) if av is None else av, bt, _full(n) if bv is None else bv, ot, ov)
    return _tristate(n, ot, ov)


def not_kleene(a):
    """SQL NOT of a three-valued result (NOT NULL is NULL). Returns a new array."""
    n = len(a)
    t, v = _parts(a)
    valid = _full(n) if v is None else v
    return _tristate(n, np.bitwise_and(np.invert(t), valid), v)


def selection(a):
    """The WHERE mask of a three-valued result: a BooleanArray without nulls, TRUE rows only."""
    t, _ = _parts(a)
    return _tristate(len(a), t, None)


def count_true(a):
    """The number of TRUE rows of a three-valued result."""
    t, _ = _parts(a)
    return popcount_bits(t, len(a))
