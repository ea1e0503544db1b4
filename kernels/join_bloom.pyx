"""The runtime join filter: ``JoinBloom``, a Bloom filter over the build side's distinct keys in the
IN-list's layout (kernels/src/canopy_filter.h), and its insert / probe loops. See kernels/join.pyx.

Integer-like keys spanning a narrow range get an exact bitmap instead (one bit per value from the
smallest key to the largest): a subtraction, a compare and a bit test a row instead of a hash and a
random word, and no false positives for the join to drop later.
"""
cimport cython
from libc.stdint cimport int64_t, uint8_t, uint64_t

from kernels.buffers cimport _check_offsets, _data_ptr
from kernels.fused_types cimport intlike_t, offset_t
from kernels.inlist cimport canopy_bloom_mask, canopy_bloom_word, canopy_int_key_hash

import numpy as np
import pyarrow as pa

from kernels.filter_tristate import _over_encoding, _string_parts, _values, _with_validity, _zeros
from kernels.join_keys import _check_compatible, _key_kind, _log2_ceil, _offsets_data, _plain_array, _words

__all__ = ["JoinBloom", "bloom_insert_ints", "bloom_insert_bytes", "bloom_probe_ints", "bloom_probe_bytes",
           "bitmap_insert_ints", "bitmap_probe_ints"]


cdef extern from "canopy_hash.h" nogil:
    uint64_t canopy_hash_bytes(const uint8_t *p, size_t n)


# Bloom filter bits per distinct key (the IN-list's figure: ~1-2% false positives).
_BLOOM_BITS_PER_KEY = 16
# An exact bitmap over the keys' range replaces the Bloom filter when it takes at most this many
# bits, or at most _BITMAP_BLOOM_RATIO times the Bloom filter's bits (a wider bitmap would read
# colder memory per probe than the filter it replaces saves).
_BITMAP_MIN_BITS = 1 << 18
_BITMAP_BLOOM_RATIO = 4


@cython.boundscheck(False)
@cython.wraparound(False)
def bloom_insert_ints(const int64_t[::1] keys, uint64_t[::1] bloom, int log2_words):
    """Add int64 keys to a Bloom filter of ``2**log2_words`` words (modified)."""
    cdef Py_ssize_t j
    cdef uint64_t h
    if bloom.shape[0] != (1 << log2_words):
        raise ValueError(f"bloom has {bloom.shape[0]} words, not 2**{log2_words}")
    with nogil:
        for j in range(keys.shape[0]):
            h = canopy_int_key_hash(keys[j])
            bloom[canopy_bloom_word(h, log2_words)] |= canopy_bloom_mask(h)


@cython.boundscheck(False)
@cython.wraparound(False)
def bloom_insert_bytes(const offset_t[::1] offsets, const uint8_t[::1] data, uint64_t[::1] bloom,
                       int log2_words):
    """Add byte strings ``data[offsets[j]:offsets[j + 1]]`` to a Bloom filter (modified); the
    offsets must be valid (checked)."""
    cdef Py_ssize_t j, n = offsets.shape[0] - 1
    cdef uint64_t h
    if bloom.shape[0] != (1 << log2_words):
        raise ValueError(f"bloom has {bloom.shape[0]} words, not 2**{log2_words}")
    _check_offsets(offsets, n, data.shape[0])
    cdef const uint8_t *base = _data_ptr(data)
    with nogil:
        for j in range(n):
            h = canopy_hash_bytes(base + offsets[j], <size_t>(offsets[j + 1] - offsets[j]))
            bloom[canopy_bloom_word(h, log2_words)] |= canopy_bloom_mask(h)


@cython.boundscheck(False)
@cython.wraparound(False)
def bloom_probe_ints(const intlike_t[::1] values, const uint64_t[::1] bloom, int log2_words,
                     uint8_t[::1] out):
    """Bit i of ``out`` (modified, packed, LSB first) = the filter may hold int64(values[i])."""
    cdef Py_ssize_t n = values.shape[0], i, start
    cdef uint64_t h, mask
    cdef uint8_t byte
    if out.shape[0] < (n + 7) // 8:
        raise ValueError(f"bitmap of {out.shape[0]} bytes is too short for {n} rows")
    if bloom.shape[0] != (1 << log2_words):
        raise ValueError(f"bloom has {bloom.shape[0]} words, not 2**{log2_words}")
    with nogil:
        for start in range(0, n, 8):
            byte = 0
            for i in range(start, min(start + 8, n)):
                h = canopy_int_key_hash(<int64_t>values[i])
                mask = canopy_bloom_mask(h)
                if bloom[canopy_bloom_word(h, log2_words)] & mask == mask:
                    byte |= <uint8_t>(1 << (i - start))
            out[start >> 3] = byte


@cython.boundscheck(False)
@cython.wraparound(False)
def bloom_probe_bytes(const offset_t[::1] offsets, const uint8_t[::1] data, const uint64_t[::1] bloom,
                      int log2_words, uint8_t[::1] out):
    """Bit i of ``out`` (modified) = the filter may hold the bytes of row i."""
    cdef Py_ssize_t n = offsets.shape[0] - 1, i, start
    cdef int64_t a, b
    cdef uint64_t h, mask
    cdef uint8_t byte
    if n < 0:
        raise ValueError("offsets must hold rows + 1 entries")
    if out.shape[0] < (n + 7) // 8:
        raise ValueError(f"bitmap of {out.shape[0]} bytes is too short for {n} rows")
    if bloom.shape[0] != (1 << log2_words):
        raise ValueError(f"bloom has {bloom.shape[0]} words, not 2**{log2_words}")
    _check_offsets(offsets, n, data.shape[0])
    cdef const uint8_t *base = _data_ptr(data)
    with nogil:
        for start in range(0, n, 8):
            byte = 0
            for i in range(start, min(start + 8, n)):
                a = offsets[i]
                b = offsets[i + 1]
                h = canopy_hash_bytes(base + a, <size_t>(b - a))
                mask = canopy_bloom_mask(h)
                if bloom[canopy_bloom_word(h, log2_words)] & mask == mask:
                    byte |= <uint8_t>(1 << (i - start))
            out[start >> 3] = byte



@cython.boundscheck(False)
@cython.wraparound(False)
def bitmap_insert_ints(const int64_t[::1] keys, uint8_t[::1] bits, int64_t low):
    """Set bit ``key - low`` of ``bits`` (modified) for each key; every key must lie in
    ``[low, low + 8 * len(bits))`` (checked)."""
    cdef Py_ssize_t j, bad = -1
    cdef uint64_t d, span = <uint64_t>bits.shape[0] * 8
    with nogil:
        for j in range(keys.shape[0]):
            d = <uint64_t>keys[j] - <uint64_t>low
            if d >= span:
                bad = j
                break
            bits[d >> 3] |= <uint8_t>(1 << (d & 7))
    if bad >= 0:
        raise ValueError(f"key {keys[bad]} lies outside the bitmap's range from {low}")


@cython.boundscheck(False)
@cython.wraparound(False)
def bitmap_probe_ints(const intlike_t[::1] values, const uint8_t[::1] bits, int64_t low, uint8_t[::1] out):
    """Bit i of ``out`` (modified, packed, LSB first) = bit ``int64(values[i]) - low`` of ``bits``
    is set (FALSE outside the bitmap's range)."""
    cdef Py_ssize_t n = values.shape[0], i, start
    cdef uint64_t d, span = <uint64_t>bits.shape[0] * 8
    cdef uint8_t byte
    if out.shape[0] < (n + 7) // 8:
        raise ValueError(f"bitmap of {out.shape[0]} bytes is too short for {n} rows")
    with nogil:
        for start in range(0, n, 8):
            byte = 0
            for i in range(start, min(start + 8, n)):
                # unsigned wrap-around: a value below ``low`` lands past ``span`` too
                d = <uint64_t><int64_t>values[i] - <uint64_t>low
                if d < span and (bits[d >> 3] >> (d & 7)) & 1:
                    byte |= <uint8_t>(1 << (i - start))
            out[start >> 3] = byte


class JoinBloom:
    """A Bloom filter over distinct join keys: may a value be one of them? No false negatives.

    Integer-like keys whose range is narrow (see ``_BITMAP_MIN_BITS``) are held as an exact bitmap
    over that range (``exact`` is True): then no value that is not a key passes.

    Parameters
    ----------
    keys : pyarrow.Array
        The build side's distinct non-NULL keys, one integer-like or string/binary column.
    """

    def __init__(self, keys):
        keys = _plain_array(keys)
        kind = _key_kind(keys.type)
        if kind not in ("word", "bytes"):
            raise TypeError(f"a join Bloom filter takes an integer-like or string key, not {keys.type}")
        if keys.null_count:
            keys = keys.drop_null()
        self.type = keys.type
        self._bytes = kind == "bytes"
        self.num_keys = len(keys)
        self.log2_words = _log2_ceil(max(1, (len(keys) * _BLOOM_BITS_PER_KEY + 63) // 64))
        self.bitmap = None          # the exact bitmap (uint8) when the keys' range is narrow
        self.low = 0                # the value of the bitmap's bit 0
        if not self._bytes and len(keys):
            words = np.ascontiguousarray(_words(keys)[:, 0])
            low, high = int(words.min()), int(words.max())
            span = high - low + 1
            if span <= max(_BITMAP_MIN_BITS, _BITMAP_BLOOM_RATIO * (64 << self.log2_words)):
                self.low = low
                self.bitmap = np.zeros((span + 7) // 8, dtype=np.uint8)
                bitmap_insert_ints(words, self.bitmap, low)
                self.words = np.zeros(0, dtype=np.uint64)
                return
        self.words = np.zeros(1 << self.log2_words, dtype=np.uint64)
        if self._bytes:
            offsets, data = _offsets_data(keys)
            bloom_insert_bytes(offsets, data, self.words, self.log2_words)
        else:
            bloom_insert_ints(np.ascontiguousarray(_words(keys)[:, 0]), self.words, self.log2_words)

    @property
    def exact(self):
        """Whether no value that is not a key passes (the bitmap form)."""
        return self.bitmap is not None

    @property
    def memory_bytes(self):
        return self.bitmap.nbytes if self.bitmap is not None else self.words.nbytes

    def _plain(self, arr):
        n = len(arr)
        out = _zeros(n)
        if n:
            if self._bytes:
                if _key_kind(arr.type) != "bytes":
                    raise TypeError(f"filter built for {self.type}, column is {arr.type}")
                if pa.types.is_binary(arr.type) or pa.types.is_large_binary(arr.type):
                    arr = arr.view(pa.large_string() if pa.types.is_large_binary(arr.type) else pa.string())
                offsets, data = _string_parts(arr)
                bloom_probe_bytes(offsets, data, self.words, self.log2_words, out)
            else:
                _check_compatible(self.type, arr.type)
                words = _words(arr)[:, 0] if not pa.types.is_integer(arr.type) else \
                    _values(arr, arr.type.to_pandas_dtype())
                if self.bitmap is not None:
                    bitmap_probe_ints(np.ascontiguousarray(words), self.bitmap, self.low, out)
                else:
                    bloom_probe_ints(np.ascontiguousarray(words), self.words, self.log2_words, out)
        return _with_validity(arr, out)

    def might_contain(self, arr):
        """Whether each row's value may be a key: FALSE means certainly not, NULL rows are NULL.

        Parameters
        ----------
        arr : pyarrow.Array
            Plain, dictionary or run-end encoded, of a type comparable with the keys'. Not modified.

        Returns
        -------
        pyarrow.BooleanArray
        """
        if not isinstance(arr, pa.Array):
            raise TypeError(f"expected a pyarrow Array, got {type(arr).__name__}")
        return _over_encoding(arr, self._plain)
