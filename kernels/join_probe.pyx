"""The probe side of the hash join: each probe row's build key id from a built ``HashTable``
(hashed, behind a Bloom filter, or by direct address). See kernels/join.pyx.
"""
cimport cython
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t

from kernels.buffers cimport _check_offsets, _data_ptr, _validity_ptr
from kernels.fused_types cimport intlike_t, offset_t
from kernels.hashtable cimport HashTable
from kernels.join cimport (canopy_join_find_word, canopy_join_lookup_bytes32, canopy_join_lookup_bytes64,
                           canopy_join_lookup_words)
from kernels.inlist cimport canopy_bloom_mask, canopy_bloom_word, canopy_int_key_hash

__all__ = ["lookup_words", "lookup_bytes", "lookup_dense", "lookup_ints_filtered"]


@cython.boundscheck(False)
@cython.wraparound(False)
def lookup_words(HashTable table, const int64_t[:, ::1] rows, const uint8_t[::1] validity,
                 Py_ssize_t bit_offset, int64_t[::1] ids):
    """Find keys of ``width`` int64 words in a built table without inserting.

    Parameters
    ----------
    table : kernels.groupby.HashTable
        Words mode, built by ``factorize_words``. Not modified.
    rows : ndarray[int64] of shape (n, width), C-contiguous
    validity : ndarray[uint8] or None
        Arrow validity bitmap; a row whose bit is clear is a NULL key.
    bit_offset : int
        Bit of row 0 in ``validity``.
    ids : ndarray[int64] of n slots
        Modified: the id of the equal key, -1 when the table has none, -2 for a NULL key.
    """
    cdef Py_ssize_t n = rows.shape[0]
    if table.table.width == 0 or rows.shape[1] != table.table.width:
        raise ValueError(f"rows have {rows.shape[1]} words; the table's keys have {table.table.width}")
    if ids.shape[0] != n:
        raise ValueError(f"ids has {ids.shape[0]} slots for {n} rows")
    cdef const uint8_t *valid = _validity_ptr(validity, bit_offset, n)
    if n == 0:
        return
    with nogil:
        canopy_join_lookup_words(&table.table, &rows[0, 0], valid, bit_offset, n, &ids[0])


@cython.boundscheck(False)
@cython.wraparound(False)
def lookup_bytes(HashTable table, const offset_t[::1] offsets, const uint8_t[::1] data,
                 const uint8_t[::1] validity, Py_ssize_t bit_offset, int64_t[::1] ids):
    """Find byte-string keys ``data[offsets[i]:offsets[i + 1]]`` in a built bytes-mode table.

    Parameters and result as ``lookup_words``; ``offsets`` (int32 or int64) hold ``n + 1`` entries
    from the array's first row.

    Raises
    ------
    ValueError
        If an offset is negative, decreasing or past the end of ``data``.
    """
    cdef Py_ssize_t n = offsets.shape[0] - 1
    if table.table.width != 0:
        raise ValueError("lookup_bytes needs a bytes-mode table (width 0)")
    if n < 0:
        raise ValueError("offsets must hold rows + 1 entries")
    if ids.shape[0] != n:
        raise ValueError(f"ids has {ids.shape[0]} slots for {n} rows")
    cdef const uint8_t *valid = _validity_ptr(validity, bit_offset, n)
    if n == 0:
        return
    _check_offsets(offsets, n, data.shape[0])
    cdef const uint8_t *base = _data_ptr(data)
    with nogil:
        if offset_t is int32_t:
            canopy_join_lookup_bytes32(&table.table, &offsets[0], base, valid, bit_offset, n, &ids[0])
        else:
            canopy_join_lookup_bytes64(&table.table, &offsets[0], base, valid, bit_offset, n, &ids[0])


@cython.boundscheck(False)
@cython.wraparound(False)
def lookup_ints_filtered(HashTable table, const intlike_t[::1] values, const uint8_t[::1] validity,
                         Py_ssize_t bit_offset, const uint64_t[::1] bloom, int log2_words, int64_t[::1] ids):
    """``lookup_words`` for one integer column (width-1 table) behind a Bloom filter of the keys.

    A probe value the filter rejects costs one multiply and one load instead of the table's hash and
    slot probe: the common case of a big probe side against a few sparse build keys (TPC-H's
    partsupp or lineitem against a filtered part).

    Parameters
    ----------
    values : ndarray of any integer dtype
        Widened to int64 (uint64 as the int64 with the same bits).
    bloom, log2_words
        ``bloom_insert_ints`` of every key in ``table``.
    Others as ``lookup_words``; ``ids`` is modified.
    """
    cdef Py_ssize_t i, n = values.shape[0]
    cdef uint64_t h, mask
    cdef int64_t v
    if table.table.width != 1:
        raise ValueError(f"lookup_ints_filtered needs a table of one-word keys, not {table.table.width}")
    if ids.shape[0] != n:
        raise ValueError(f"ids has {ids.shape[0]} slots for {n} rows")
    if bloom.shape[0] != (1 << log2_words):
        raise ValueError(f"bloom has {bloom.shape[0]} words, not 2**{log2_words}")
    cdef const uint8_t *valid = _validity_ptr(validity, bit_offset, n)
    if n == 0:
        return
    with nogil:
        for i in range(n):
            v = <int64_t>values[i]
            h = canopy_int_key_hash(v)
            mask = canopy_bloom_mask(h)
            if bloom[canopy_bloom_word(h, log2_words)] & mask != mask:
                ids[i] = -1
            else:
                ids[i] = canopy_join_find_word(&table.table, v)
        if valid != NULL:
            for i in range(n):
                if not (valid[(bit_offset + i) >> 3] >> ((bit_offset + i) & 7)) & 1:
                    ids[i] = -2


@cython.boundscheck(False)
@cython.wraparound(False)
def lookup_dense(const intlike_t[::1] values, const uint8_t[::1] validity, Py_ssize_t bit_offset,
                 int64_t low, const int64_t[::1] dense, int64_t[::1] ids):
    """Find integer keys in a direct-address table: the key of value v is ``dense[v - low]``.

    The build side's integer keys often cover a dense range (surrogate keys); then an array indexed
    by value is the hash table, and a probe is one subtraction, one comparison and one load.

    Parameters
    ----------
    values : ndarray of any integer dtype
        Probe values, widened to int64 (uint64 as the int64 with the same bits).
    validity : ndarray[uint8] or None
        Arrow validity bitmap; a row whose bit is clear is a NULL key.
    bit_offset : int
    low : int
        The smallest build key.
    dense : ndarray[int64]
        ``dense[v - low]``: id of build key v, -1 where no build key has that value.
    ids : ndarray[int64], same length as ``values``
        Modified: the id, -1 when no build key is equal, -2 for a NULL key.
    """
    cdef Py_ssize_t i, n = values.shape[0]
    cdef uint64_t span = <uint64_t>dense.shape[0], d
    if ids.shape[0] != n:
        raise ValueError(f"ids has {ids.shape[0]} slots for {n} rows")
    cdef const uint8_t *valid = _validity_ptr(validity, bit_offset, n)
    if n == 0:
        return
    with nogil:
        for i in range(n):
            # unsigned arithmetic: wraps instead of overflowing, and one comparison checks both ends
            d = <uint64_t><int64_t>values[i] - <uint64_t>low
            ids[i] = dense[d] if d < span else -1
        if valid != NULL:
            for i in range(n):
                if not (valid[(bit_offset + i) >> 3] >> ((bit_offset + i) & 7)) & 1:
                    ids[i] = -2
