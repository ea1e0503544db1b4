"""Group-by keys: which Arrow types group (``supports_group_key``), a key column's rows as int64
words, and the loops over dictionary codes that number or count them without hashing
(``dense_codes``, ``mix_codes``, ``count_codes``). See kernels/groupby.pyx for the family.
"""
cimport cython
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t

from kernels.buffers cimport _valid, _validity_ptr
from kernels.fused_types cimport code_t

import numpy as np
import pyarrow as pa

__all__ = ["supports_group_key", "dense_codes", "mix_codes", "count_codes"]


_WORD_TYPES = (pa.types.is_integer, pa.types.is_boolean, pa.types.is_date, pa.types.is_time,
               pa.types.is_timestamp, pa.types.is_duration)


def _key_kind(t):
    if pa.types.is_dictionary(t):
        t = t.value_type
    if any(check(t) for check in _WORD_TYPES):
        return "word"
    if pa.types.is_decimal128(t):
        return "decimal"
    if pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t) or pa.types.is_large_binary(t):
        return "bytes"
    return None


def supports_group_key(t: pa.DataType) -> bool:
    """Whether ``Factorizer`` groups by columns of Arrow type ``t``."""
    return _key_kind(t) is not None


def _plain(t):
    return t.value_type if pa.types.is_dictionary(t) else t


def _as_array(column):
    if isinstance(column, pa.ChunkedArray):
        return column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
    if isinstance(column, pa.Array):
        return column
    raise TypeError(f"expected a pyarrow Array or ChunkedArray, got {type(column).__name__}")


def _validity(arr):
    if arr.null_count == 0:
        return None
    return np.frombuffer(arr.buffers()[0], dtype=np.uint8)


def _words(arr):
    """The int64 word(s) of each row of an integer-like or decimal128 array: (n, 1) or (n, 2)."""
    n = len(arr)
    t = arr.type
    if pa.types.is_decimal128(t):
        words = np.frombuffer(arr.buffers()[1], dtype=np.int64, count=2 * n, offset=16 * arr.offset)
        return words.reshape(n, 2)
    if pa.types.is_boolean(t):
        arr = arr.cast(pa.int8())
    elif not pa.types.is_integer(t):
        arr = arr.view(pa.int64() if t.bit_width == 64 else pa.int32())
    values = np.frombuffer(arr.buffers()[1], dtype=arr.type.to_pandas_dtype(), count=n,
                           offset=arr.offset * (arr.type.bit_width // 8))
    return values.astype(np.int64, copy=False).reshape(n, 1)



@cython.boundscheck(False)
@cython.wraparound(False)
def dense_codes(const code_t[::1] codes, const uint8_t[::1] validity, Py_ssize_t bit_offset,
                Py_ssize_t num_values, int64_t[::1] out):
    """Number the distinct dictionary codes of a batch in order of first occurrence.

    Parameters
    ----------
    codes : ndarray of an integer dtype
        Dictionary indices, in ``[0, num_values)`` where valid.
    validity : ndarray[uint8] or None
        Validity of the indices; null rows share one local id.
    bit_offset : int
    num_values : int
        Dictionary size.
    out : ndarray[int64], same length as ``codes``
        Modified: the local id of each row.

    Returns
    -------
    ndarray[int64]
        The first row of each local id, in id order.
    """
    cdef Py_ssize_t i, n = codes.shape[0], bad = -1, nlocal = 0
    cdef int64_t c, local
    if out.shape[0] != n:
        raise ValueError(f"out has {out.shape[0]} slots for {n} codes")
    if num_values < 0:
        raise ValueError("num_values must be >= 0")
    cdef const uint8_t *valid = _validity_ptr(validity, bit_offset, n)
    # slot num_values stands for null
    cdef int64_t[::1] seen = np.full(num_values + 1, -1, dtype=np.int64)
    first = np.empty(min(n, num_values + 1), dtype=np.int64)
    cdef int64_t[::1] fr = first
    with nogil:
        for i in range(n):
            if _valid(valid, bit_offset + i):
                c = <int64_t>codes[i]
                if <uint64_t>c >= <uint64_t>num_values:
                    bad = i
                    break
            else:
                c = num_values
            local = seen[c]
            if local < 0:
                local = nlocal
                seen[c] = local
                fr[nlocal] = i
                nlocal += 1
            out[i] = local
    if bad >= 0:
        raise ValueError(f"row {bad} has dictionary code {codes[bad]} outside a dictionary of "
                         f"{num_values} entries")
    return first[:nlocal]


@cython.boundscheck(False)
@cython.wraparound(False)
def mix_codes(const code_t[::1] codes, const uint8_t[::1] validity, Py_ssize_t bit_offset,
              Py_ssize_t num_values, int64_t scale, int64_t[::1] out):
    """Add one dictionary column's digit to mixed-radix row codes: ``out[i] += code * scale``, a
    null row's code being ``num_values`` (so the column's radix is ``num_values + 1``).

    Parameters
    ----------
    codes : ndarray of an integer dtype
        Dictionary indices, in ``[0, num_values)`` where valid.
    validity : ndarray[uint8] or None
    bit_offset : int
    num_values : int
        Dictionary size.
    scale : int
        Product of the radixes of the columns mixed in before this one.
    out : ndarray[int64], same length as ``codes``
        Modified: the running row codes.
    """
    cdef Py_ssize_t i, n = codes.shape[0], bad = -1
    cdef int64_t c
    if out.shape[0] != n:
        raise ValueError(f"out has {out.shape[0]} slots for {n} codes")
    cdef const uint8_t *valid = _validity_ptr(validity, bit_offset, n)
    with nogil:
        for i in range(n):
            if _valid(valid, bit_offset + i):
                c = <int64_t>codes[i]
                if <uint64_t>c >= <uint64_t>num_values:
                    bad = i
                    break
            else:
                c = num_values
            out[i] += c * scale
    if bad >= 0:
        raise ValueError(f"row {bad} has dictionary code {codes[bad]} outside a dictionary of "
                         f"{num_values} entries")


@cython.boundscheck(False)
@cython.wraparound(False)
def count_codes(const code_t[::1] codes, const uint8_t[::1] validity, Py_ssize_t bit_offset,
                int64_t[::1] counts):
    """COUNT(*) per dictionary code, no hashing: ``counts[codes[i]] += 1`` (null rows in the last
    slot, ``counts[num_values]``). A group-by on a dictionary-encoded key is this pass plus a
    factorize of the (small) dictionary.

    Parameters
    ----------
    codes : ndarray of an integer dtype
        Dictionary indices, in ``[0, num_values)`` where valid.
    validity : ndarray[uint8] or None
    bit_offset : int
    counts : ndarray[int64] of ``num_values + 1`` slots
        Modified: accumulates (call once per batch).

    Raises
    ------
    ValueError
        If a valid code is outside ``[0, num_values)``.
    """
    cdef Py_ssize_t i, n = codes.shape[0], k, bad = -1, lanes = 4
    cdef Py_ssize_t num_values = counts.shape[0] - 1
    cdef uint64_t c
    if num_values < 0:
        raise ValueError("counts needs num_values + 1 slots (the last one for nulls)")
    cdef const uint8_t *valid = _validity_ptr(validity, bit_offset, n)
    # Four interleaved histograms: a run of equal codes (the head of a Zipf distribution) then
    # increments four counters in turn instead of waiting on one store after another.
    cdef uint32_t[:, ::1] sub = np.zeros((lanes, num_values + 1), dtype=np.uint32)
    cdef Py_ssize_t step = 1 << 30       # flush the 32-bit lanes before they can wrap
    cdef Py_ssize_t start = 0, stop
    with nogil:
        while start < n and bad < 0:
            stop = start + step if start + step < n else n
            if valid == NULL:
                i = start
                while i + 4 <= stop:
                    if (<uint64_t>codes[i] >= <uint64_t>num_values or <uint64_t>codes[i + 1] >= <uint64_t>num_values
                            or <uint64_t>codes[i + 2] >= <uint64_t>num_values
                            or <uint64_t>codes[i + 3] >= <uint64_t>num_values):
                        break
                    sub[0, <Py_ssize_t>codes[i]] += 1
                    sub[1, <Py_ssize_t>codes[i + 1]] += 1
                    sub[2, <Py_ssize_t>codes[i + 2]] += 1
                    sub[3, <Py_ssize_t>codes[i + 3]] += 1
                    i += 4
                while i < stop:
                    c = <uint64_t>codes[i]
                    if c >= <uint64_t>num_values:
                        bad = i
                        break
                    sub[0, c] += 1
                    i += 1
            else:
                for i in range(start, stop):
                    if _valid(valid, bit_offset + i):
                        c = <uint64_t>codes[i]
                        if c >= <uint64_t>num_values:
                            bad = i
                            break
                        sub[i & 3, c] += 1
                    else:
                        sub[i & 3, num_values] += 1
            for k in range(num_values + 1):
                counts[k] += <int64_t>sub[0, k] + sub[1, k] + sub[2, k] + sub[3, k]
                sub[0, k] = 0
                sub[1, k] = 0
                sub[2, k] = 0
                sub[3, k] = 0
            start = stop
    if bad >= 0:
        raise ValueError(f"row {bad} has dictionary code {codes[bad]} outside a dictionary of "
                         f"{num_values} entries")
    return None
