"""IN-list kernels: ``x IN (v1, ..., vk)`` for any k, integers and strings.

``InList(values, type)`` builds the structure once per list and ``contains`` probes it once per batch
(the engine caches built lists, keyed by the list). Lists of up to ``CANOPY_SHORT_LIST`` (8) distinct
values compare each row with every value in a vectorized loop. Longer lists put a Bloom filter in
front of an exact open-addressing hash set, MemSQL 6.5's fix that took a 904-value IN-list from 12 s
to 0.2 s: the filter (one 64-bit word per key probe, 16 bits per value, L1-resident for thousands of
values) rejects almost every non-member with one load, and only members and ~1% false positives
reach the hash set. The hash functions and the filter's layout are in ``kernels/src/canopy_filter.h``.

SQL semantics of the result (``kernels/reference/inlist.py`` computes the same with
``pyarrow.compute.is_in``):

- ``NULL IN (...)`` is NULL;
- ``x IN (..., NULL)`` is TRUE when x is found and NULL otherwise;
- otherwise TRUE when found, FALSE when not. ``NOT IN`` is SQL NOT of that (``kernels.not_kleene``).
"""
cimport cython
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint64_t
from libc.string cimport memcmp

from kernels.buffers cimport _check_offsets, _data_ptr
from kernels.fused_types cimport offset_t

import numpy as np
import pyarrow as pa

from kernels.filter_tristate import (_over_encoding, _string_parts, _tristate, _values, _with_validity,
                                     _zeros)

__all__ = ["InList", "supports_in_list", "any_equal", "probe_integer_set", "probe_string_set"]


cdef extern from "canopy_hash.h" nogil:
    uint64_t canopy_hash_bytes(const uint8_t *p, size_t n)


ctypedef fused int_t:
    int8_t
    int16_t
    int32_t
    int64_t


# Bloom filter bits per distinct value; 16 bits and 3 bits per key give ~1-2% false positives
# with a one-word-per-key filter.
_BLOOM_BITS_PER_VALUE = 16
# Hash-set bits of the key hash start here; the Bloom filter uses the low 18 and the top bits.
DEF _SET_SHIFT = 18


def _log2_ceil(Py_ssize_t n):
    cdef int k = 0
    while (1 << k) < n:
        k += 1
    return k


# ---------------------------------------------------------------------------------------------------
# Low-level kernels


@cython.boundscheck(False)
@cython.wraparound(False)
def any_equal(const int_t[::1] values, const int_t[::1] lst, uint8_t[::1] out):
    """Test membership of each value in a short list by comparing with every entry.

    Parameters
    ----------
    values : ndarray[int8, int16, int32 or int64]
    lst : ndarray of the same dtype, 1 to 8 entries (``CANOPY_SHORT_LIST``)
    out : ndarray[uint8] of at least ``ceil(len(values) / 8)`` bytes
        Modified: bit i says whether ``values[i]`` is in ``lst``.
    """
    cdef Py_ssize_t n = values.shape[0], k = lst.shape[0]
    if out.shape[0] < (n + 7) // 8:
        raise ValueError(f"bitmap of {out.shape[0]} bytes is too short for {n} rows")
    if not 1 <= k <= CANOPY_SHORT_LIST:
        raise ValueError(f"any_equal takes 1 to {CANOPY_SHORT_LIST} values, not {k}")
    if n == 0:
        return
    with nogil:
        if int_t is int8_t:
            canopy_any_eq_i8(&values[0], n, &lst[0], k, &out[0])
        elif int_t is int16_t:
            canopy_any_eq_i16(&values[0], n, &lst[0], k, &out[0])
        elif int_t is int32_t:
            canopy_any_eq_i32(&values[0], n, &lst[0], k, &out[0])
        else:
            canopy_any_eq_i64(&values[0], n, &lst[0], k, &out[0])


@cython.boundscheck(False)
@cython.wraparound(False)
def probe_integer_set(const int_t[::1] values, const uint64_t[::1] bloom, int log2_words,
                      const int64_t[::1] table, const uint8_t[::1] used, uint8_t[::1] out):
    """Test membership of each value (widened to int64) in a built integer set.

    Parameters
    ----------
    values : ndarray[int8, int16, int32 or int64]
    bloom : ndarray[uint64] of ``2**log2_words`` words
    log2_words : int
    table, used : ndarray[int64], ndarray[uint8] of a power-of-two length
        Open-addressing hash set (linear probing, at least one free slot): ``table[s]`` holds a key
        where ``used[s]``.
    out : ndarray[uint8]
        Modified: bit i says whether ``values[i]`` is in the set.
    """
    cdef Py_ssize_t n = values.shape[0], i, start
    cdef uint64_t h, mask, tmask = <uint64_t>table.shape[0] - 1, slot
    cdef int64_t v
    cdef uint8_t byte
    if out.shape[0] < (n + 7) // 8:
        raise ValueError(f"bitmap of {out.shape[0]} bytes is too short for {n} rows")
    if bloom.shape[0] != (1 << log2_words) or used.shape[0] != table.shape[0] or table.shape[0] == 0 \
            or table.shape[0] & (table.shape[0] - 1):
        raise ValueError("malformed integer set")
    with nogil:
        for start in range(0, n, 8):
            byte = 0
            for i in range(start, min(start + 8, n)):
                v = <int64_t>values[i]
                h = canopy_int_key_hash(v)
                mask = canopy_bloom_mask(h)
                if bloom[canopy_bloom_word(h, log2_words)] & mask != mask:
                    continue
                slot = (h >> _SET_SHIFT) & tmask
                while used[slot]:
                    if table[slot] == v:
                        byte |= <uint8_t>(1 << (i - start))
                        break
                    slot = (slot + 1) & tmask
            out[start >> 3] = byte


@cython.boundscheck(False)
@cython.wraparound(False)
def probe_string_set(const offset_t[::1] offsets, const uint8_t[::1] data,
                     const uint64_t[::1] bloom, int log2_words, const int64_t[::1] table,
                     const int64_t[::1] key_offsets, const uint8_t[::1] key_data,
                     const uint64_t[::1] key_hashes, uint8_t[::1] out):
    """Test membership of each string in a built string set.

    Parameters
    ----------
    offsets, data : ndarray[int32 or int64], ndarray[uint8]
        The rows, as for ``kernels.filter.match_strings``.
    bloom, log2_words
        As for ``probe_integer_set``, over ``canopy_hash_bytes`` of the strings.
    table : ndarray[int64] of a power-of-two length
        Open-addressing hash set of key numbers (-1: free slot; at least one is free).
    key_offsets, key_data, key_hashes
        The distinct keys (key j is ``key_data[key_offsets[j]:key_offsets[j + 1]]``) and their hashes.
    out : ndarray[uint8]
        Modified: bit i says whether row i is one of the keys.
    """
    cdef Py_ssize_t n = offsets.shape[0] - 1, i, start
    cdef int64_t a, b, e, size = data.shape[0]
    cdef uint64_t h, mask, tmask = <uint64_t>table.shape[0] - 1, slot
    cdef uint8_t byte
    if n < 0:
        raise ValueError("offsets must hold rows + 1 entries")
    if out.shape[0] < (n + 7) // 8:
        raise ValueError(f"bitmap of {out.shape[0]} bytes is too short for {n} rows")
    if bloom.shape[0] != (1 << log2_words) or table.shape[0] == 0 or table.shape[0] & (table.shape[0] - 1) \
            or key_offsets.shape[0] != key_hashes.shape[0] + 1:
        raise ValueError("malformed string set")
    _check_offsets(offsets, n, size)
    cdef const uint8_t *base = _data_ptr(data)
    cdef const uint8_t *kbase = _data_ptr(key_data)
    with nogil:
        for start in range(0, n, 8):
            byte = 0
            for i in range(start, min(start + 8, n)):
                a = offsets[i]
                b = offsets[i + 1]
                h = canopy_hash_bytes(base + a, <size_t>(b - a))
                mask = canopy_bloom_mask(h)
                if bloom[canopy_bloom_word(h, log2_words)] & mask != mask:
                    continue
                slot = (h >> _SET_SHIFT) & tmask
                while table[slot] >= 0:
                    e = table[slot]
                    if key_hashes[e] == h and key_offsets[e + 1] - key_offsets[e] == b - a \
                            and memcmp(kbase + key_offsets[e], base + a, <size_t>(b - a)) == 0:
                        byte |= <uint8_t>(1 << (i - start))
                        break
                    slot = (slot + 1) & tmask
            out[start >> 3] = byte


@cython.boundscheck(False)
@cython.wraparound(False)
def _build_integer_set(const int64_t[::1] keys, uint64_t[::1] bloom, int log2_words,
                       int64_t[::1] table, uint8_t[::1] used):
    """Insert distinct ``keys``; modifies ``bloom``, ``table`` and ``used`` (zeroed by the caller)."""
    cdef Py_ssize_t j
    cdef uint64_t h, slot, tmask = <uint64_t>table.shape[0] - 1
    for j in range(keys.shape[0]):
        h = canopy_int_key_hash(keys[j])
        bloom[canopy_bloom_word(h, log2_words)] |= canopy_bloom_mask(h)
        slot = (h >> _SET_SHIFT) & tmask
        while used[slot]:
            slot = (slot + 1) & tmask
        used[slot] = 1
        table[slot] = keys[j]


@cython.boundscheck(False)
@cython.wraparound(False)
def _build_string_set(const int64_t[::1] key_offsets, const uint8_t[::1] key_data,
                      uint64_t[::1] key_hashes, uint64_t[::1] bloom, int log2_words,
                      int64_t[::1] table):
    """Hash the distinct keys into ``key_hashes`` and insert them; modifies ``key_hashes``,
    ``bloom`` (zeroed by the caller) and ``table`` (filled with -1 by the caller)."""
    cdef Py_ssize_t j
    cdef uint64_t h, slot, tmask = <uint64_t>table.shape[0] - 1
    cdef const uint8_t *kbase = _data_ptr(key_data)
    for j in range(key_hashes.shape[0]):
        h = canopy_hash_bytes(kbase + key_offsets[j], <size_t>(key_offsets[j + 1] - key_offsets[j]))
        key_hashes[j] = h
        bloom[canopy_bloom_word(h, log2_words)] |= canopy_bloom_mask(h)
        slot = (h >> _SET_SHIFT) & tmask
        while table[slot] >= 0:
            slot = (slot + 1) & tmask
        table[slot] = j


# ---------------------------------------------------------------------------------------------------
# Public API


_INT_DTYPES = {8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}


def _plain_type(t):
    if pa.types.is_dictionary(t) or pa.types.is_run_end_encoded(t):
        return t.value_type
    return t


def supports_in_list(t):
    """Whether ``InList`` takes columns of Arrow type ``t``: signed integers, date32, timestamp,
    string and large_string, plain, dictionary or run-end encoded."""
    t = _plain_type(t)
    return pa.types.is_signed_integer(t) or pa.types.is_date32(t) or pa.types.is_timestamp(t) \
        or pa.types.is_string(t) or pa.types.is_large_string(t)


def _storage_bits(t):
    return 32 if pa.types.is_date32(t) else t.bit_width


class InList:
    """A built IN-list: the distinct non-null values of a list, ready to probe batch after batch.

    Parameters
    ----------
    values : sequence
        The list's Python values (int, datetime.date, datetime.datetime, str; None is SQL NULL).
    value_type : pyarrow.DataType
        The column's type (its value type for dictionary / run-end encoded columns), which the
        values are converted to as the engine's literals are.

    Raises
    ------
    TypeError
        If ``supports_in_list(value_type)`` is false.
    """

    def __init__(self, values, value_type):
        value_type = _plain_type(value_type)
        if not supports_in_list(value_type):
            raise TypeError(f"IN-list kernels do not take columns of type {value_type}")
        self.value_type = value_type
        values = list(values)
        self.has_null = any(v is None for v in values)
        present = [v for v in values if v is not None]
        self._strings = pa.types.is_string(value_type) or pa.types.is_large_string(value_type)
        if self._strings:
            self._build_strings(pa.array(present, type=pa.large_string()).unique())
        else:
            self._build_integers(present)

    def _build_integers(self, present):
        t = self.value_type
        if pa.types.is_integer(t):
            # int64 holds every list value an int8..int64 column can equal; others cannot match.
            keys = np.unique(np.asarray(pa.array(present, type=pa.int64()).to_numpy(), dtype=np.int64))
        else:
            stored = pa.array(present, type=t).cast(pa.int32() if pa.types.is_date32(t) else pa.int64())
            keys = np.unique(stored.to_numpy().astype(np.int64))
        dtype = _INT_DTYPES[_storage_bits(t)]
        info = np.iinfo(dtype)
        keys = keys[(keys >= info.min) & (keys <= info.max)]
        self.size = len(keys)
        self._dtype = dtype
        self._short = keys.astype(dtype) if 0 < len(keys) <= CANOPY_SHORT_LIST else None
        if self._short is None and len(keys):
            self._log2_words = _log2_ceil(max(1, (len(keys) * _BLOOM_BITS_PER_VALUE + 63) // 64))
            self._bloom = np.zeros(1 << self._log2_words, dtype=np.uint64)
            capacity = 1 << _log2_ceil(max(16, 2 * len(keys)))
            self._table = np.zeros(capacity, dtype=np.int64)
            self._used = np.zeros(capacity, dtype=np.uint8)
            _build_integer_set(keys, self._bloom, self._log2_words, self._table, self._used)

    def _build_strings(self, keys):
        self.size = len(keys)
        if not len(keys):
            return
        bufs = keys.buffers()
        self._key_offsets = np.frombuffer(bufs[1], dtype=np.int64, count=len(keys) + 1,
                                          offset=8 * keys.offset).copy()
        self._key_data = np.frombuffer(bufs[2], dtype=np.uint8).copy() if bufs[2] is not None \
            else np.zeros(0, np.uint8)
        self._key_hashes = np.zeros(len(keys), dtype=np.uint64)
        self._log2_words = _log2_ceil(max(1, (len(keys) * _BLOOM_BITS_PER_VALUE + 63) // 64))
        self._bloom = np.zeros(1 << self._log2_words, dtype=np.uint64)
        self._table = np.full(1 << _log2_ceil(max(16, 2 * len(keys))), -1, dtype=np.int64)
        _build_string_set(self._key_offsets, self._key_data, self._key_hashes, self._bloom,
                          self._log2_words, self._table)

    def _found_bits(self, arr):
        """Packed bits: row i's stored value is in the list (null rows: arbitrary)."""
        n = len(arr)
        out = _zeros(n)
        if n == 0 or self.size == 0:
            return out
        if self._strings:
            offsets, data = _string_parts(arr)
            probe_string_set(offsets, data, self._bloom, self._log2_words, self._table,
                             self._key_offsets, self._key_data, self._key_hashes, out)
        elif self._short is not None:
            any_equal(_values(arr, self._dtype), self._short, out)
        else:
            probe_integer_set(_values(arr, self._dtype), self._bloom, self._log2_words, self._table,
                              self._used, out)
        return out

    def _contains_plain(self, arr):
        if _plain_type(arr.type) != self.value_type and not (
                self._strings and (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type))):
            raise TypeError(f"list built for {self.value_type}, column is {arr.type}")
        found = self._found_bits(arr)
        result = _with_validity(arr, found)
        if not self.has_null:
            return result
        # x IN (..., NULL): rows not found are NULL, so only the found rows are valid.
        t = np.frombuffer(result.buffers()[1], dtype=np.uint8).copy()
        return _tristate(len(arr), t, t.copy())

    def contains(self, arr):
        """``arr IN (values)`` under SQL's three-valued logic (see the module docstring).

        Parameters
        ----------
        arr : pyarrow.Array
            Plain, dictionary or run-end encoded, of the list's type. Not modified.

        Returns
        -------
        pyarrow.BooleanArray
        """
        if not isinstance(arr, pa.Array):
            raise TypeError(f"expected a pyarrow Array, got {type(arr).__name__}")
        return _over_encoding(arr, self._contains_plain)
