"""Hash join: build a table over one side's keys, probe it with the other's, get row-index pairs.

``JoinTable(build_columns)`` numbers the build side's distinct keys 0, 1, 2, ... in order of first
occurrence (the hash group-by table of kernels/groupby.pyx does the numbering: a join's hash table is
a group-by over the build keys) and lays the build rows out by key number, CSR-style. ``lookup``
gives each probe row the number of the build key equal to its key (a read-only probe of the same
table, kernels/src/canopy_join.h), and from those numbers:

- inner join: ``pairs(ids)`` yields (probe row, build row) int64 index arrays, in chunks of at most
  ``max_pairs`` (a key with a huge fan-out never materializes all its pairs at once); probe rows
  ascending, each probe row's build rows ascending;
- left outer join: ``pairs(ids, outer=True)``, a probe row without a match paired with build row -1;
- semi / anti join: ``semi(ids)`` / ``anti(ids)`` select probe rows; ``anti(ids, null_aware=True)``
  is NOT IN: nothing survives a build side with a NULL key, a probe row with a NULL key survives only
  an empty build side;
- the build side's view (when the smaller input is the SQL's left side): ``build_hits(ids)``.

Keys are one or several columns compared by value: integer-like columns (any width or sign, bool,
date, time, timestamp, duration; both sides integers or both the same temporal type) as int64,
decimal128 as its 128-bit scaled integer (both sides the same scale), string / binary (and large)
by their bytes; dictionary columns by their decoded values. A row with a NULL in any key column
never matches. Several columns form one composite key of int64 words, byte-string columns entering
as their number in a table of the build side's distinct strings.

``JoinBloom`` is the runtime join filter: a Bloom filter over the build side's distinct keys (one
column) in the IN-list's layout (kernels/src/canopy_filter.h), probed by a scan of the other side to
drop rows that cannot match before they are decoded.

``kernels/reference/join.py`` defines the same results with NumPy and pyarrow; the tests hold both
to the same key numbers, pairs and selections.
"""
cimport cython
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint64_t

from kernels.fused_types cimport intlike_t, offset_t
from kernels.groupby cimport HashTable, canopy_gb_table
from kernels.join cimport (canopy_join_count, canopy_join_emit, canopy_join_find_word,
                           canopy_join_lookup_bytes32, canopy_join_lookup_bytes64, canopy_join_lookup_words)
from kernels.inlist cimport canopy_bloom_mask, canopy_bloom_word, canopy_int_key_hash

import numpy as np
import pyarrow as pa

from kernels.filter import _over_encoding, _string_parts, _values, _with_validity, _zeros
from kernels.groupby import _key_kind as _group_key_kind

__all__ = [
    "JoinTable",
    "JoinBloom",
    "supports_join_key",
    "lookup_words",
    "lookup_bytes",
    "lookup_dense",
    "lookup_ints_filtered",
    "group_rows",
    "emit_pairs",
    "count_pairs",
    "bloom_insert_ints",
    "bloom_insert_bytes",
    "bloom_probe_ints",
    "bloom_probe_bytes",
]


cdef extern from "canopy_hash.h" nogil:
    uint64_t canopy_hash_bytes(const uint8_t *p, size_t n)


cdef uint8_t _EMPTY_BYTES[8]

# Pairs per chunk of ``JoinTable.pairs``: 16 MiB of indices, a few MiB of gathered columns per batch.
DEFAULT_MAX_PAIRS = 1 << 20
# Integer build keys spanning fewer than max(DENSE_MIN_SLOTS, DENSE_SLOTS_PER_KEY * keys) values get
# a direct-address table (8 bytes a slot) instead of hashed lookups: at most 4 slots a key is no more
# memory than the hash table's slots and stored keys. Probing 3M int64 rows against 200 keys:
# 17 ms hashed, ~4 ms direct.
DENSE_SLOTS_PER_KEY = 4
DENSE_MIN_SLOTS = 1 << 12
# Sparse integer build keys up to this many are looked up behind a Bloom filter (128 KiB at most,
# L2-resident): probing 3M int64 rows against 200 sparse keys went from 17 ms (hash and probe every
# row) to 4 ms (TPC-H Q2, Q8, Q11, Q20, Q22 probe shapes).
FILTERED_LOOKUP_MAX_KEYS = 1 << 16
# Bloom filter bits per distinct key (the IN-list's figure: ~1-2% false positives).
_BLOOM_BITS_PER_KEY = 16


# ---------------------------------------------------------------------------------------------------
# Low-level kernels


cdef const uint8_t *_validity_ptr(const uint8_t[::1] validity, Py_ssize_t bit_offset, Py_ssize_t n) except? NULL:
    if validity is None:
        return NULL
    if bit_offset < 0 or (bit_offset + n + 7) // 8 > validity.shape[0]:
        raise ValueError(f"validity of {validity.shape[0]} bytes is too short for {n} rows "
                         f"at bit {bit_offset}")
    return &validity[0] if validity.shape[0] else NULL


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
    cdef Py_ssize_t i, n = offsets.shape[0] - 1, bad = -1
    cdef int64_t size = data.shape[0]
    if table.table.width != 0:
        raise ValueError("lookup_bytes needs a bytes-mode table (width 0)")
    if n < 0:
        raise ValueError("offsets must hold rows + 1 entries")
    if ids.shape[0] != n:
        raise ValueError(f"ids has {ids.shape[0]} slots for {n} rows")
    cdef const uint8_t *valid = _validity_ptr(validity, bit_offset, n)
    if n == 0:
        return
    with nogil:
        for i in range(n):
            if offsets[i] < 0 or offsets[i + 1] < offsets[i] or offsets[i + 1] > size:
                bad = i
                break
    if bad >= 0:
        raise ValueError(f"row {bad} has offsets [{offsets[bad]}, {offsets[bad + 1]}) outside the "
                         f"{size}-byte data buffer")
    cdef const uint8_t *base = &data[0] if size > 0 else &_EMPTY_BYTES[0]
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


@cython.boundscheck(False)
@cython.wraparound(False)
def group_rows(const int64_t[::1] ids, int64_t[::1] starts, int64_t[::1] rows):
    """Lay rows out by id (stable counting sort), the build side's CSR.

    Parameters
    ----------
    ids : ndarray[int64]
        Id of each row in ``[0, len(starts) - 1)``, or negative for a row left out.
    starts : ndarray[int64] of ``num_ids + 1`` entries
        Modified: the rows with id g are ``rows[starts[g]:starts[g + 1]]``.
    rows : ndarray[int64] of at least the number of rows with an id
        Modified: row numbers grouped by id, ascending within each id.

    Raises
    ------
    ValueError
        If an id is ``num_ids`` or more, or ``rows`` is too short.
    """
    cdef Py_ssize_t i, n = ids.shape[0], g, bad = -1
    cdef Py_ssize_t k = starts.shape[0] - 1
    cdef int64_t id_, total = 0
    if k < 0:
        raise ValueError("starts must hold num_ids + 1 entries")
    with nogil:
        for g in range(k + 1):
            starts[g] = 0
        for i in range(n):
            id_ = ids[i]
            if id_ < 0:
                continue
            if id_ >= k:
                bad = i
                break
            starts[id_ + 1] += 1
            total += 1
    if bad >= 0:
        raise ValueError(f"row {bad} has id {ids[bad]} outside [0, {k})")
    if rows.shape[0] < total:
        raise ValueError(f"rows has {rows.shape[0]} slots for {total} rows")
    cdef int64_t[::1] cursor = np.empty(max(k, 1), dtype=np.int64)
    with nogil:
        for g in range(k):
            starts[g + 1] += starts[g]
            cursor[g] = starts[g]
        for i in range(n):
            id_ = ids[i]
            if id_ >= 0:
                rows[cursor[id_]] = i
                cursor[id_] += 1


@cython.boundscheck(False)
@cython.wraparound(False)
def emit_pairs(const int64_t[::1] ids, const int64_t[::1] starts, const int64_t[::1] rows, bint outer,
               Py_ssize_t row, Py_ssize_t offset, int64_t[::1] out_probe, int64_t[::1] out_build,
               bint unique=False):
    """Write the (probe row, build row) pairs of a join from the probe rows' ids.

    Parameters
    ----------
    ids : ndarray[int64]
        Build key id of each probe row (``lookup``'s result: negative for no match).
    starts, rows : ndarray[int64]
        The build rows by id (``group_rows``).
    outer : bool
        Pair a probe row without a match with build row -1 (left outer join).
    row, offset : int
        Where to resume: the probe row, and how many of its build rows were already emitted
        (0, 0 at first).
    out_probe, out_build : ndarray[int64] of the same length >= 1
        Modified: the pairs, probe rows ascending and each probe row's build rows ascending.
    unique : bool
        Every id has exactly one build row (``starts`` is ``0, 1, 2, ...``): ``rows[id]`` is it,
        one memory access fewer per pair (checked).

    Returns
    -------
    (int, int, int)
        Pairs written, and the ``row``, ``offset`` to resume from (``row == len(ids)``: done).
    """
    cdef int64_t n = ids.shape[0], r = row, off = offset, k
    cdef int64_t cap = out_probe.shape[0]
    if out_build.shape[0] != cap or cap < 1:
        raise ValueError("out_probe and out_build must have the same length >= 1")
    if starts.shape[0] < 1 or starts[starts.shape[0] - 1] > rows.shape[0]:
        raise ValueError("malformed build rows")
    if not 0 <= row <= n or offset < 0:
        raise ValueError(f"cannot resume at row {row}, offset {offset}")
    if n == 0 or r == n:
        return 0, r, 0
    cdef int64_t num_ids = starts.shape[0] - 1
    if unique and (starts[num_ids] != num_ids or rows.shape[0] < num_ids):
        raise ValueError("unique=True needs one build row per id")
    with nogil:
        k = canopy_join_emit(&ids[0], n, &starts[0], num_ids, &rows[0] if rows.shape[0] else NULL,
                             unique, outer, &r, &off, cap, &out_probe[0], &out_build[0])
    if k < 0:
        raise ValueError(f"probe row {r} has id {ids[r]} outside the build side's {num_ids} keys")
    return k, r, off


@cython.boundscheck(False)
@cython.wraparound(False)
def count_pairs(const int64_t[::1] ids, const int64_t[::1] starts, bint outer, bint unique=False):
    """The number of pairs ``emit_pairs`` writes for all of ``ids`` (ids outside the keys count
    as no match here; ``emit_pairs`` refuses them)."""
    if starts.shape[0] < 1:
        raise ValueError("starts must hold num_ids + 1 entries")
    cdef int64_t total, num_ids = starts.shape[0] - 1
    if ids.shape[0] == 0:
        return 0
    with nogil:
        total = canopy_join_count(&ids[0], ids.shape[0], &starts[0], num_ids, unique, outer)
    return total


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
    cdef Py_ssize_t j, n = offsets.shape[0] - 1, bad = -1
    cdef int64_t size = data.shape[0]
    cdef uint64_t h
    if bloom.shape[0] != (1 << log2_words):
        raise ValueError(f"bloom has {bloom.shape[0]} words, not 2**{log2_words}")
    cdef const uint8_t *base = &data[0] if size > 0 else &_EMPTY_BYTES[0]
    with nogil:
        for j in range(n):
            if offsets[j] < 0 or offsets[j + 1] < offsets[j] or offsets[j + 1] > size:
                bad = j
                break
            h = canopy_hash_bytes(base + offsets[j], <size_t>(offsets[j + 1] - offsets[j]))
            bloom[canopy_bloom_word(h, log2_words)] |= canopy_bloom_mask(h)
    if bad >= 0:
        raise ValueError(f"key {bad} has offsets outside the {size}-byte data buffer")


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
    cdef Py_ssize_t n = offsets.shape[0] - 1, i, start, bad = -1
    cdef int64_t a, b, size = data.shape[0]
    cdef uint64_t h, mask
    cdef uint8_t byte
    if n < 0:
        raise ValueError("offsets must hold rows + 1 entries")
    if out.shape[0] < (n + 7) // 8:
        raise ValueError(f"bitmap of {out.shape[0]} bytes is too short for {n} rows")
    if bloom.shape[0] != (1 << log2_words):
        raise ValueError(f"bloom has {bloom.shape[0]} words, not 2**{log2_words}")
    cdef const uint8_t *base = &data[0] if size > 0 else &_EMPTY_BYTES[0]
    with nogil:
        for start in range(0, n, 8):
            byte = 0
            for i in range(start, min(start + 8, n)):
                a = offsets[i]
                b = offsets[i + 1]
                if a < 0 or b < a or b > size:
                    bad = i
                    break
                h = canopy_hash_bytes(base + a, <size_t>(b - a))
                mask = canopy_bloom_mask(h)
                if bloom[canopy_bloom_word(h, log2_words)] & mask == mask:
                    byte |= <uint8_t>(1 << (i - start))
            if bad >= 0:
                break
            out[start >> 3] = byte
    if bad >= 0:
        raise ValueError(f"row {bad} has offsets outside the {size}-byte data buffer")


# ---------------------------------------------------------------------------------------------------
# Arrow arrays -> kernels


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


# ---------------------------------------------------------------------------------------------------
# Public API


class JoinTable:
    """The build side of a hash join: its distinct keys numbered, its rows laid out by key.

    Parameters
    ----------
    columns : sequence of pyarrow.Array or pyarrow.ChunkedArray
        The build side's key columns, equal lengths, types per ``supports_join_key``. Not modified.

    Attributes
    ----------
    types : list of pyarrow.DataType
        The key columns' (plain) types.
    num_rows : int
        Build rows.
    num_keys : int
        Distinct non-NULL keys; key ids are ``0 .. num_keys - 1`` in order of first occurrence.
    null_rows : int
        Build rows with a NULL in some key column (they never match).
    """

    def __init__(self, columns):
        columns = [_plain_array(c) for c in columns]
        if not columns:
            raise ValueError("a JoinTable needs at least one key column")
        n = len(columns[0])
        for c in columns[1:]:
            if len(c) != n:
                raise ValueError(f"key columns differ in length: {n} and {len(c)}")
        self.types = [c.type for c in columns]
        self._kinds = [_key_kind(t) for t in self.types]
        for t, kind in zip(self.types, self._kinds):
            if kind is None:
                raise TypeError(f"cannot join on a column of type {t}")
        self.num_rows = n
        valid = _valid_mask(columns, n)
        if valid is not None:
            kept = np.flatnonzero(valid)
            mask = pa.array(valid)
            columns = [c.filter(mask) for c in columns]
        else:
            kept = None
        self.null_rows = 0 if kept is None else n - len(kept)
        # Only non-NULL keys enter the tables, so ids are dense over the keys that can match.
        if len(columns) == 1:
            kind = self._kinds[0]
            self._subs = None
            self._table = HashTable(0 if kind == "bytes" else 2 if kind == "decimal" else 1)
            ids, first = _factorize(self._table, columns[0], kind)
        else:
            self._subs = [HashTable(0) if kind == "bytes" else None for kind in self._kinds]
            width = sum(1 if kind == "bytes" else _words_per(kind) for kind in self._kinds)
            rows = np.empty((len(columns[0]), width), dtype=np.int64)
            w = 0
            for arr, kind, sub in zip(columns, self._kinds, self._subs):
                if sub is not None:
                    rows[:, w] = _factorize(sub, arr, kind)[0]
                    w += 1
                else:
                    words = _words(arr)
                    rows[:, w:w + words.shape[1]] = words
                    w += words.shape[1]
            self._table = HashTable(width)
            ids = np.empty(len(rows), dtype=np.int64)
            first = self._table.factorize_words(rows, None, 0, ids)
        self.num_keys = self._table.num_groups
        self._first_kept = first       # first occurrences among the non-NULL rows
        if kept is not None:
            full = np.full(n, -1, dtype=np.int64)
            full[kept] = ids
            ids = full
            first = kept[first]
        self._first = first
        self.build_ids = ids
        self._starts = np.empty(self.num_keys + 1, dtype=np.int64)
        self._rows = np.empty(n - self.null_rows, dtype=np.int64)
        group_rows(ids, self._starts, self._rows)
        self._unique = self.num_keys == n - self.null_rows
        self._dense = self._bloom = None
        if len(columns) == 1 and self._kinds[0] == "word" and self.num_keys:
            # distinct keys in id order: the first row of each id among the non-NULL rows
            distinct = np.ascontiguousarray(_words(columns[0])[:, 0])[self._first_kept]
            low, high = int(distinct.min()), int(distinct.max())
            if high - low < max(DENSE_MIN_SLOTS, DENSE_SLOTS_PER_KEY * self.num_keys):
                self._low = low
                self._dense = np.full(high - low + 1, -1, dtype=np.int64)
                self._dense[distinct - low] = np.arange(self.num_keys, dtype=np.int64)
            elif self.num_keys <= FILTERED_LOOKUP_MAX_KEYS:
                self._log2_words = _log2_ceil(max(1, (self.num_keys * _BLOOM_BITS_PER_KEY + 63) // 64))
                self._bloom = np.zeros(1 << self._log2_words, dtype=np.uint64)
                bloom_insert_ints(np.ascontiguousarray(distinct), self._bloom, self._log2_words)
        self._keys_column = columns[0] if len(columns) == 1 else None

    @property
    def has_null(self):
        """Whether some build row has a NULL key (what NOT IN needs to know)."""
        return self.null_rows > 0

    @property
    def first_rows(self):
        """ndarray[int64]: the build row where each key id first occurs."""
        return self._first

    @property
    def memory_bytes(self):
        """Bytes held by the hash tables and the row layout."""
        subs = sum(s.memory_bytes for s in self._subs if s is not None) if self._subs else 0
        return self._table.memory_bytes + subs + self._starts.nbytes + self._rows.nbytes + self.build_ids.nbytes

    def lookup(self, columns):
        """Key id of each probe row.

        Parameters
        ----------
        columns : sequence of pyarrow.Array or pyarrow.ChunkedArray
            The probe side's key columns, as many as the build side's, each comparable with its
            build column (integers with integers, equal temporal types, decimals of one scale,
            strings / binaries). Not modified.

        Returns
        -------
        ndarray[int64]
            The id of the build key equal to the row's key, -1 when no build row has it, -2 when a
            key column is NULL in the row.

        Raises
        ------
        TypeError
            If a column's type does not compare with its build column.
        """
        columns = [_plain_array(c) for c in columns]
        if len(columns) != len(self.types):
            raise ValueError(f"{len(columns)} probe key columns for a JoinTable of {len(self.types)}")
        n = len(columns[0])
        for c in columns[1:]:
            if len(c) != n:
                raise ValueError(f"key columns differ in length: {n} and {len(c)}")
        for bt, c in zip(self.types, columns):
            _check_compatible(bt, c.type)
        ids = np.empty(n, dtype=np.int64)
        if n == 0:
            return ids
        if self._subs is None:
            arr = columns[0]
            validity = np.frombuffer(arr.buffers()[0], dtype=np.uint8) if arr.null_count else None
            if self._kinds[0] == "bytes":
                offsets, data = _offsets_data(arr)
                lookup_bytes(self._table, offsets, data, validity, arr.offset, ids)
            elif self._dense is not None:
                lookup_dense(_int_values(arr), validity, arr.offset, self._low, self._dense, ids)
            elif self._bloom is not None:
                lookup_ints_filtered(self._table, _int_values(arr), validity, arr.offset, self._bloom,
                                     self._log2_words, ids)
            else:
                lookup_words(self._table, np.ascontiguousarray(_words(arr)), validity, arr.offset, ids)
            return ids
        valid = _valid_mask(columns, n)
        missing = None
        rows = np.empty((n, self._table.width), dtype=np.int64)
        w = 0
        for arr, kind, sub in zip(columns, self._kinds, self._subs):
            if sub is not None:
                sub_ids = rows[:, w]
                col = np.empty(n, dtype=np.int64)
                offsets, data = _offsets_data(arr)
                lookup_bytes(sub, offsets, data, None, 0, col)
                sub_ids[:] = col
                absent = col < 0
                missing = absent if missing is None else missing | absent
                w += 1
            else:
                words = _words(arr)
                rows[:, w:w + words.shape[1]] = words
                w += words.shape[1]
        usable = valid
        if missing is not None:
            usable = ~missing if usable is None else usable & ~missing
        bits = np.packbits(usable, bitorder="little") if usable is not None else None
        lookup_words(self._table, rows, bits, 0, ids)
        if missing is not None:
            # A string no build row has: no match (-1), unless the row has a NULL key too (-2).
            ids[missing if valid is None else missing & valid] = -1
        return ids

    def pairs(self, ids, outer=False, max_pairs=DEFAULT_MAX_PAIRS):
        """The (probe row, build row) pairs of an inner (or left outer) join, chunk by chunk.

        Parameters
        ----------
        ids : ndarray[int64]
            ``lookup``'s result for the probe rows.
        outer : bool
            Also pair each probe row without a match with build row -1.
        max_pairs : int
            Most pairs per chunk (>= 1).

        Yields
        ------
        (ndarray[int64], ndarray[int64])
            Probe rows and build rows of equal length, probe rows ascending over the whole
            sequence, each probe row's build rows ascending.
        """
        ids = np.ascontiguousarray(ids, dtype=np.int64)
        if max_pairs < 1:
            raise ValueError(f"max_pairs must be >= 1, not {max_pairs}")
        # The exact number of pairs, so that no chunk is allocated larger than what it receives.
        remaining = count_pairs(ids, self._starts, outer, self._unique)
        row = offset = 0
        while remaining > 0:
            cap = min(max_pairs, remaining)
            out_probe = np.empty(cap, dtype=np.int64)
            out_build = np.empty(cap, dtype=np.int64)
            k, row, offset = emit_pairs(ids, self._starts, self._rows, outer, row, offset,
                                        out_probe, out_build, self._unique)
            if k == 0:
                break
            remaining -= k
            yield out_probe[:k], out_build[:k]
        if row < len(ids):
            # only ids outside the keys stop the emission short: emit_pairs names the first
            emit_pairs(ids, self._starts, self._rows, outer, row, offset, np.empty(1, np.int64),
                       np.empty(1, np.int64), self._unique)

    def semi(self, ids):
        """ndarray[int64]: the probe rows with a match (semi join), ascending."""
        return np.flatnonzero(np.asarray(ids) >= 0)

    def anti(self, ids, null_aware=False):
        """ndarray[int64]: the probe rows without a match (anti join), ascending.

        ``null_aware`` gives NOT IN: no row survives when some build row has a NULL key, and a probe
        row with a NULL key survives only an empty build side.
        """
        ids = np.asarray(ids)
        if not null_aware:
            return np.flatnonzero(ids < 0)
        if self.num_rows == 0:
            return np.arange(len(ids), dtype=np.int64)
        if self.has_null:
            return np.zeros(0, dtype=np.int64)
        return np.flatnonzero(ids == -1)

    def build_hits(self, ids):
        """ndarray[bool] over the build rows: whether some probe row (of ``ids``) has its key."""
        ids = np.asarray(ids)
        hit = np.zeros(self.num_keys + 1, dtype=bool)    # slot num_keys: the NULL build rows' key
        hit[ids[ids >= 0]] = True
        return hit[self.build_ids]

    def bloom(self):
        """A ``JoinBloom`` over the distinct build keys, or None when the key is several columns or
        a decimal (the runtime filter takes one integer-like or string column)."""
        if self._keys_column is None or self._kinds[0] == "decimal":
            return None
        return JoinBloom(self._keys_column.take(pa.array(self._first_kept)))


def _factorize(HashTable table, arr, kind):
    """(ids, first rows) of the non-NULL keys ``arr`` in ``table``, inserting new ones."""
    ids = np.empty(len(arr), dtype=np.int64)
    if kind == "bytes":
        offsets, data = _offsets_data(arr)
        first = table.factorize_bytes(offsets, data, None, 0, ids)
    else:
        first = table.factorize_words(np.ascontiguousarray(_words(arr)), None, 0, ids)
    return ids, first


def _words_per(kind):
    return 2 if kind == "decimal" else 1


class JoinBloom:
    """A Bloom filter over distinct join keys: may a value be one of them? No false negatives.

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
        self.words = np.zeros(1 << self.log2_words, dtype=np.uint64)
        if self._bytes:
            offsets, data = _offsets_data(keys)
            bloom_insert_bytes(offsets, data, self.words, self.log2_words)
        else:
            bloom_insert_ints(np.ascontiguousarray(_words(keys)[:, 0]), self.words, self.log2_words)

    @property
    def memory_bytes(self):
        return self.words.nbytes

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
