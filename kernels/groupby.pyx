"""Hash group-by: factorize keys into dense group ids, then aggregate by id.

Factorizing (``Factorizer``, ``factorize``) numbers the distinct keys of one or several columns
0, 1, 2, ... in order of first occurrence, across as many batches as the caller feeds one factorizer
(its hash table lives between calls, so an aggregate streams its input). Keys compare by value:

- integer-like columns (int8..int64, uint8..uint64, bool, date32/64, time, timestamp, duration) by
  their value widened to int64; decimal128 by its 128-bit scaled integer; string/binary (and large)
  by their bytes; dictionary arrays by their decoded value (the codes are numbered first, so each
  distinct code of a batch is hashed once: grouping a dictionary column costs a pass over the codes);
- null is one more key, in every column (SQL GROUP BY).

Aggregating by id (``GroupedAggregate`` over the low-level ``group_*`` kernels) accumulates per group
into arrays that grow with the number of groups: COUNT(*), COUNT(col) (nulls skipped), SUM of
integers and decimals into 128-bit integers (exact: no int64 wrap, no overflow below DECIMAL(38)),
SUM of floats into float64, MIN and MAX of integers, floats, dates and decimals. Partial states
merge with the same aggregates (SUM of sums and of counts, MIN of mins), so the final phase of a
distributed aggregate is one more factorize-and-aggregate over the partials.

The table is plain C (kernels/src/canopy_groupby.h). ``kernels/reference/groupby.py`` defines the
results with pyarrow; the tests hold both to the same ids, keys and aggregates.
"""
cimport cython
from libc.stdint cimport (int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t,
                          uint64_t)
from libc.string cimport memcpy

from kernels.fused_types cimport code_t, float_t, intlike_t

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = [
    "Factorizer",
    "factorize",
    "DistinctCount",
    "DistinctSet",
    "estimate_distinct",
    "sketch_words",
    "GroupedAggregate",
    "supports_group_key",
    "supports_aggregate",
    "HashTable",
    "dense_codes",
    "count_codes",
    "group_count",
    "group_count_valid",
    "group_sum_int",
    "group_sum_int64",
    "total_sum_int",
    "group_sum_decimal128",
    "group_sum_float",
    "group_min",
    "group_max",
    "group_min_decimal128",
    "group_max_decimal128",
]


ctypedef fused number_t:
    int8_t
    int16_t
    int32_t
    int64_t
    uint8_t
    uint16_t
    uint32_t
    uint64_t
    float
    double


cdef uint8_t _EMPTY_BYTES[8]


cdef inline bint _valid(const uint8_t *validity, Py_ssize_t bit) noexcept nogil:
    return validity == NULL or (validity[bit >> 3] >> (bit & 7)) & 1


cdef const uint8_t *_validity_ptr(const uint8_t[::1] validity, Py_ssize_t bit_offset, Py_ssize_t n) except? NULL:
    if validity is None:
        return NULL
    if bit_offset < 0 or (bit_offset + n + 7) // 8 > validity.shape[0]:
        raise ValueError(f"validity of {validity.shape[0]} bytes is too short for {n} rows "
                         f"at bit {bit_offset}")
    return &validity[0] if validity.shape[0] else NULL


cdef int _check_ids(const int64_t[::1] ids, Py_ssize_t num_groups) except -1:
    cdef Py_ssize_t i, n = ids.shape[0], bad = -1
    with nogil:
        for i in range(n):
            if <uint64_t>ids[i] >= <uint64_t>num_groups:
                bad = i
                break
    if bad >= 0:
        raise ValueError(f"row {bad} has group id {ids[bad]} outside [0, {num_groups})")
    return 0


cdef int _raise_table_error(int rc) except -1:
    if rc == CANOPY_GB_ENOMEM:
        raise MemoryError("hash group-by table: out of memory")
    if rc == CANOPY_GB_ETOOMANY:
        raise OverflowError(f"hash group-by table: more than {CANOPY_GB_MAX_GROUPS} groups")
    return 0


# ---------------------------------------------------------------------------------------------------
# Factorizing


cdef class HashTable:
    """The C table of kernels/src/canopy_groupby.h: keys -> dense ids, first occurrence first.

    Parameters
    ----------
    width : int
        Int64 words per key (words mode), or 0 for byte-string keys (bytes mode).
    inline_keys : bool
        One-word keys kept in the slots beside their ids (``width`` must be 1): one cache line per
        probe. The join's lookups (kernels/join.pyx) read only tables without it.
    """

    def __cinit__(self, int width, bint inline_keys=False):
        if width < 0:
            raise ValueError(f"width must be >= 0, not {width}")
        if inline_keys and width != 1:
            raise ValueError(f"inline keys need width 1, not {width}")
        rc = canopy_gb_init_inline(&self.table) if inline_keys else canopy_gb_init(&self.table, width)
        self.ready = True
        _raise_table_error(rc)

    def reserve(self, Py_ssize_t groups):
        """Size the table for ``groups`` groups in all (no rehash until there are more)."""
        if groups < 0:
            raise ValueError(f"groups must be >= 0, not {groups}")
        _raise_table_error(canopy_gb_reserve(&self.table, groups))

    @property
    def has_null(self):
        """Whether the null key has a group."""
        return self.table.null_group >= 0

    @property
    def null_group(self):
        """The null key's group id, or -1."""
        return self.table.null_group

    def group_words(self):
        """A copy of the stored keys (words mode): ndarray[int64] of shape (num_groups, width), row g
        being group g's key (zeros for the null key's group)."""
        cdef int64_t g = self.table.ngroups, w = self.table.width
        if w == 0:
            raise ValueError("a bytes-mode table stores no words")
        out = np.empty((g, w), dtype=np.int64)
        cdef int64_t[:, ::1] o = out
        if g:
            memcpy(&o[0, 0], self.table.words, g * w * sizeof(int64_t))
        return out

    @property
    def inline_keys(self):
        return bool(self.table.inline_key)

    def __dealloc__(self):
        if self.ready:
            canopy_gb_free(&self.table)

    @property
    def num_groups(self):
        """Groups so far, the null key's included."""
        return self.table.ngroups

    @property
    def width(self):
        return self.table.width

    @property
    def memory_bytes(self):
        """Bytes the table holds (slots and stored keys)."""
        return canopy_gb_memory(&self.table)

    @cython.boundscheck(False)
    @cython.wraparound(False)
    def factorize_words(self, const int64_t[:, ::1] rows, const uint8_t[::1] validity,
                        Py_ssize_t bit_offset, int64_t[::1] ids):
        """Number the keys ``rows[i]`` (each ``width`` words).

        Parameters
        ----------
        rows : ndarray[int64] of shape (n, width), C-contiguous
        validity : ndarray[uint8] or None
            Arrow validity bitmap: a row whose bit is clear is the null key.
        bit_offset : int
            Bit of row 0 in ``validity``.
        ids : ndarray[int64] of n slots
            Modified: the group id of each row.

        Returns
        -------
        ndarray[int64]
            The rows that created new groups, in id order (group ``num_groups_before + k`` was
            created by row ``result[k]``).
        """
        cdef Py_ssize_t n = rows.shape[0]
        cdef int64_t n_new = 0
        cdef int rc
        if rows.shape[1] != self.table.width or self.table.width == 0:
            raise ValueError(f"rows have {rows.shape[1]} words; the table's keys have {self.table.width}")
        if ids.shape[0] != n:
            raise ValueError(f"ids has {ids.shape[0]} slots for {n} rows")
        cdef const uint8_t *valid = _validity_ptr(validity, bit_offset, n)
        if n == 0:
            return np.empty(0, dtype=np.int64)
        with nogil:
            rc = canopy_gb_factorize_words(&self.table, &rows[0, 0], valid, bit_offset, n, &ids[0],
                                           &n_new)
        _raise_table_error(rc)
        return self._fresh_rows(n_new)

    cdef _fresh_rows(self, int64_t n_new):
        out = np.empty(n_new, dtype=np.int64)
        cdef int64_t[::1] o = out
        if n_new:
            memcpy(&o[0], self.table.fresh, n_new * sizeof(int64_t))
        return out

    @cython.boundscheck(False)
    @cython.wraparound(False)
    def factorize_bytes(self, const intlike_t[::1] offsets, const uint8_t[::1] data,
                        const uint8_t[::1] validity, Py_ssize_t bit_offset, int64_t[::1] ids):
        """Number the byte strings ``data[offsets[i]:offsets[i + 1]]`` (bytes mode).

        Parameters
        ----------
        offsets : ndarray[int32 or int64]
            ``n + 1`` offsets, starting at the array's first row.
        data : ndarray[uint8]
        validity, bit_offset, ids
            As in ``factorize_words``.

        Returns
        -------
        ndarray[int64]
            The rows that created new groups, in id order.

        Raises
        ------
        ValueError
            If an offset is negative, decreasing or past the end of ``data``.
        """
        cdef Py_ssize_t i, n = offsets.shape[0] - 1, bad = -1
        cdef int64_t n_new = 0, size = data.shape[0]
        cdef int rc = 0
        if intlike_t is not int32_t and intlike_t is not int64_t:
            raise TypeError("offsets must be int32 or int64")
        if self.table.width != 0:
            raise ValueError("factorize_bytes needs a bytes-mode table (width 0)")
        if n < 0 or ids.shape[0] != n:
            raise ValueError(f"ids has {ids.shape[0]} slots for {offsets.shape[0]} offsets")
        cdef const uint8_t *valid = _validity_ptr(validity, bit_offset, n)
        cdef const uint8_t *base = &data[0] if size > 0 else &_EMPTY_BYTES[0]
        if n == 0:
            return np.empty(0, dtype=np.int64)
        with nogil:
            for i in range(n):
                if offsets[i] < 0 or offsets[i + 1] < offsets[i] or <int64_t>offsets[i + 1] > size:
                    bad = i
                    break
            if bad < 0:
                if intlike_t is int32_t:
                    rc = canopy_gb_factorize_bytes32(&self.table, <const int32_t *>&offsets[0], base,
                                                     valid, bit_offset, n, &ids[0], &n_new)
                elif intlike_t is int64_t:
                    rc = canopy_gb_factorize_bytes64(&self.table, <const int64_t *>&offsets[0], base,
                                                     valid, bit_offset, n, &ids[0], &n_new)
        if bad >= 0:
            raise ValueError(f"row {bad} has offsets [{offsets[bad]}, {offsets[bad + 1]}) outside the "
                             f"{size}-byte data buffer")
        _raise_table_error(rc)
        return self._fresh_rows(n_new)


cdef class DistinctSet:
    """A set of int64 keys that only counts them (kernels/src/canopy_groupby.h, canopy_ds_set): the
    table behind COUNT(DISTINCT integer column); no ids, no payload, 8..16 bytes per key."""

    def __cinit__(self):
        rc = canopy_ds_init(&self.table)
        self.ready = True
        _raise_table_error(rc)

    def __dealloc__(self):
        if self.ready:
            canopy_ds_free(&self.table)

    @property
    def count(self):
        """Distinct keys inserted so far."""
        return canopy_ds_count(&self.table)

    def reserve(self, Py_ssize_t keys):
        """Size the set for ``keys`` distinct keys in all (no rehash until there are more)."""
        if keys < 0:
            raise ValueError(f"keys must be >= 0, not {keys}")
        _raise_table_error(canopy_ds_reserve(&self.table, keys))

    @cython.boundscheck(False)
    @cython.wraparound(False)
    def insert(self, const int64_t[::1] keys, const uint8_t[::1] validity, Py_ssize_t bit_offset):
        """Add ``keys`` (rows whose bit in the Arrow ``validity`` bitmap is clear are skipped;
        ``validity`` may be None). Modifies the set."""
        cdef Py_ssize_t n = keys.shape[0]
        cdef int rc
        cdef const uint8_t *valid = _validity_ptr(validity, bit_offset, n)
        if n == 0:
            return None
        with nogil:
            rc = canopy_ds_insert(&self.table, &keys[0], valid, bit_offset, n)
        _raise_table_error(rc)


cdef extern from *:
    int __builtin_clzll(unsigned long long x) nogil


@cython.boundscheck(False)
@cython.wraparound(False)
def sketch_words(const int64_t[::1] keys, const uint8_t[::1] validity, Py_ssize_t bit_offset,
                 uint8_t[::1] registers):
    """Add the non-null ``keys`` to a HyperLogLog sketch (the registers of kernels/hll.pyx, read by
    its ``hll_estimate``), hashing each by ``canopy_hash_word`` rotated by 32 bits: the repartition
    exchange routes rows by the high half of that hash, so inside one partition only the low half
    is spread evenly, and the sketch picks its register from the top bits. Modifies ``registers``
    (``2**p`` of them, ``4 <= p <= 18``)."""
    cdef Py_ssize_t i, n = keys.shape[0], m = registers.shape[0]
    cdef int p = 0
    while (<Py_ssize_t>1 << p) < m:
        p += 1
    if (<Py_ssize_t>1 << p) != m or p < 4 or p > 18:
        raise ValueError(f"a sketch has 2**p registers with 4 <= p <= 18, not {m}")
    cdef const uint8_t *valid = _validity_ptr(validity, bit_offset, n)
    cdef int shift = 64 - p
    cdef uint64_t guard = (<uint64_t>1) << (p - 1), h
    cdef uint8_t rank
    with nogil:
        for i in range(n):
            if _valid(valid, bit_offset + i):
                h = canopy_hash_word(<uint64_t>keys[i])
                h = (h << 32) | (h >> 32)
                rank = <uint8_t>(__builtin_clzll((h << p) | guard) + 1)
                if rank > registers[h >> shift]:
                    registers[h >> shift] = rank


def estimate_distinct(columns, precision=12):
    """Estimated distinct non-null values of a stream of integer-like arrays (one column in
    batches; a HyperLogLog sketch of ``2**precision`` registers, ~1.6% standard error at 12), or
    None for other types: what a hash table about to take them should reserve.

    Parameters
    ----------
    columns : iterable of pyarrow.Array or ChunkedArray
    precision : int
    """
    from kernels.hll import hll_estimate

    registers = np.zeros(1 << precision, dtype=np.uint8)
    for column in columns:
        arr = _as_array(column)
        if pa.types.is_dictionary(arr.type):
            arr = arr.dictionary_decode()
        if _key_kind(arr.type) != "word":
            return None
        if len(arr):
            sketch_words(np.ascontiguousarray(_words(arr)[:, 0]), _validity(arr), arr.offset, registers)
    return hll_estimate(registers)


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


# Several dictionary-encoded key columns are grouped on their combined codes when a batch has at
# least _MIN_COMBINED_ROWS rows and the codes combine in at most _MAX_COMBINED_CODES ways (the
# direct-address table of ``dense_codes``: 8 bytes a combination, allocated per batch).
_MIN_COMBINED_ROWS = 1024
_MAX_COMBINED_CODES = 1 << 20


class Factorizer:
    """Dense group ids for the keys of a stream of batches.

    Parameters
    ----------
    types : sequence of pyarrow.DataType
        One per key column (see ``supports_group_key``); a dictionary type also accepts its value
        type in a batch, and the reverse.
    keep_uniques : bool
        Keep the distinct keys for ``uniques()`` (a factorizer used only for its ids does not).

    Each ``factorize`` call returns the batch's ids; ids given in earlier calls stay valid and new
    keys get the next ids, in order of first occurrence.
    """

    def __init__(self, types, keep_uniques=True):
        self.types = [_plain(t) for t in types]
        if not self.types:
            raise ValueError("a Factorizer needs at least one key column")
        kinds = [_key_kind(t) for t in types]
        for t, kind in zip(types, kinds):
            if kind is None:
                raise TypeError(f"cannot group by a column of type {t}")
        self._kinds = kinds
        self._keep = keep_uniques
        self._chunks = [[] for _ in self.types]
        self._counts = np.zeros(0, dtype=np.int64)      # count_keys: COUNT(*) per group
        self._pending = None         # count_keys: (dictionary identity, dictionary, code counts)
        if len(kinds) == 1:
            kind = kinds[0]
            self._table = HashTable(0 if kind == "bytes" else 2 if kind == "decimal" else 1,
                                    inline_keys=kind == "word")
            self._subs = None
            # Integer keys are read back from the table's own copy (uniques), not taken per batch.
            self._keys_in_table = kind == "word" and pa.types.is_integer(self.types[0])
        else:
            # Byte-string columns enter the composite key as their own dense ids (one word), integer
            # columns as their value, decimals as two words; a last word holds the null flags.
            self._subs = [Factorizer([t], keep_uniques=False) if kind == "bytes" else None
                          for t, kind in zip(self.types, kinds)]
            width = sum(2 if kind == "decimal" else 1 for kind in kinds) + 1
            self._table = HashTable(width)
            self._keys_in_table = False

    @property
    def num_groups(self):
        return self._table.num_groups

    @property
    def memory_bytes(self):
        """Bytes held by the hash tables (not counting the kept distinct keys)."""
        subs = sum(s.memory_bytes for s in self._subs if s is not None) if self._subs else 0
        return self._table.memory_bytes + subs

    def reserve(self, groups):
        """Size the hash table for ``groups`` groups in all, so that it does not rehash on the way
        there (a caller that knows, or has estimated, how many keys will come)."""
        self._table.reserve(groups)

    def factorize(self, columns):
        """Group ids (ndarray[int64]) of the rows of ``columns`` (one Array per key column)."""
        columns = [_as_array(c) for c in columns]
        if len(columns) != len(self.types):
            raise ValueError(f"{len(columns)} key columns for a Factorizer of {len(self.types)}")
        n = len(columns[0])
        for c in columns[1:]:
            if len(c) != n:
                raise ValueError(f"key columns differ in length: {n} and {len(c)}")
        if self._subs is None:
            return self._factorize_one(columns[0])
        return self._factorize_many(columns, n)

    def _factorize_one(self, arr):
        if pa.types.is_dictionary(arr.type):
            indices = arr.indices
            local = np.empty(len(arr), dtype=np.int64)
            codes = np.frombuffer(indices.buffers()[1], dtype=indices.type.to_pandas_dtype(),
                                  count=len(indices), offset=indices.offset * (indices.type.bit_width // 8))
            first = dense_codes(codes, _validity(indices), indices.offset, len(arr.dictionary), local)
            values = arr.take(pa.array(first)).dictionary_decode()
            return self._factorize_one(values).take(local)
        ids = np.empty(len(arr), dtype=np.int64)
        kind = self._kinds[0]
        if kind == "bytes":
            bufs = arr.buffers()
            large = pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)
            offsets = np.frombuffer(bufs[1], dtype=np.int64 if large else np.int32, count=len(arr) + 1,
                                    offset=arr.offset * (8 if large else 4))
            data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.empty(0, np.uint8)
            new_rows = self._table.factorize_bytes(offsets, data, _validity(arr), arr.offset, ids)
        else:
            new_rows = self._table.factorize_words(np.ascontiguousarray(_words(arr)), _validity(arr),
                                                   arr.offset, ids)
        if self._keep and len(new_rows) and not self._keys_in_table:
            self._chunks[0].append(arr.take(pa.array(new_rows)))
        return ids

    def _factorize_many(self, columns, n, combine=True):
        coded = self._factorize_code_combinations(columns, n) if combine else None
        if coded is not None:
            return coded
        width = self._table.width
        rows = np.empty((n, width), dtype=np.int64)
        nulls = np.zeros(n, dtype=np.int64)
        w = 0
        for j, (arr, sub) in enumerate(zip(columns, self._subs)):
            if sub is not None:
                rows[:, w] = sub.factorize([arr])
                w += 1
                continue
            if pa.types.is_dictionary(arr.type):
                arr = arr.dictionary_decode()
            words = _words(arr)
            rows[:, w:w + words.shape[1]] = words
            if arr.null_count:
                null = ~np.asarray(arr.is_valid())
                rows[null, w:w + words.shape[1]] = 0
                nulls |= null.astype(np.int64) << j
            w += words.shape[1]
        rows[:, w] = nulls
        ids = np.empty(n, dtype=np.int64)
        new_rows = self._table.factorize_words(rows, None, 0, ids)
        if self._keep and len(new_rows):
            taken = pa.array(new_rows)
            for chunks, arr in zip(self._chunks, columns):
                chunks.append(arr.take(taken))
        return ids

    def _factorize_code_combinations(self, columns, n):
        """Ids of rows whose key columns are all dictionary arrays with few combinations of codes,
        else None: each row's codes become one mixed-radix number (``mix_codes``), numbered by
        ``dense_codes`` (a direct-address table, no hashing), and only the first row of each
        combination is factorized by value (the rows are not hashed one by one)."""
        if n < _MIN_COMBINED_ROWS or not all(pa.types.is_dictionary(c.type) for c in columns):
            return None
        radix = 1
        for arr in columns:
            radix *= len(arr.dictionary) + 1
            if radix > _MAX_COMBINED_CODES:
                return None
        combined = np.zeros(n, dtype=np.int64)
        scale = 1
        for arr in columns:
            indices = arr.indices
            codes = np.frombuffer(indices.buffers()[1], dtype=indices.type.to_pandas_dtype(),
                                  count=len(indices), offset=indices.offset * (indices.type.bit_width // 8))
            mix_codes(codes, _validity(indices), indices.offset, len(arr.dictionary), scale, combined)
            scale *= len(arr.dictionary) + 1
        local = np.empty(n, dtype=np.int64)
        first = pa.array(dense_codes(combined, None, 0, scale, local))
        return self._factorize_many([arr.take(first) for arr in columns], len(first), False).take(local)

    def count_keys(self, column):
        """Factorize one key column and add each row to its group's COUNT(*) (``key_counts``),
        without returning ids: the whole of ``SELECT k, COUNT(*) ... GROUP BY k``.

        A dictionary-encoded column is never hashed per row: its codes go into a histogram
        (``count_codes``) kept for as long as the batches share one dictionary (the batches of one
        stored segment do); only the dictionary entries that occur are factorized, when the
        dictionary changes or the counts are read. Their groups are numbered in dictionary order
        (null last), not by first row. Other columns are factorized and their ids counted.
        """
        arr = _as_array(column)
        if self._subs is not None:
            raise TypeError("count_keys needs a Factorizer of one key column")
        if not pa.types.is_dictionary(arr.type):
            self._add_counts(np.bincount(self.factorize([arr]), minlength=self.num_groups), None)
            return
        dictionary = arr.dictionary
        identity = (arr.type, tuple((b.address, b.size) if b is not None else None
                                    for b in dictionary.buffers()))
        if self._pending is None or self._pending[0] != identity:
            self._flush_dictionary()
            self._pending = (identity, dictionary, np.zeros(len(dictionary) + 1, dtype=np.int64))
        indices = arr.indices
        if len(indices):
            codes = np.frombuffer(indices.buffers()[1], dtype=indices.type.to_pandas_dtype(),
                                  count=len(indices), offset=indices.offset * (indices.type.bit_width // 8))
            count_codes(codes, _validity(indices), indices.offset, self._pending[2])

    def _flush_dictionary(self):
        if self._pending is None:
            return
        _, dictionary, counts = self._pending
        self._pending = None
        used = np.flatnonzero(counts)
        if not len(used):
            return
        nvalues = len(dictionary)
        taken = pa.array(used, pa.int64(), mask=used == nvalues) if used[-1] == nvalues else pa.array(used)
        ids = self._factorize_one(dictionary.take(taken))
        self._add_counts(counts[used], ids)

    def _add_counts(self, counts, ids):
        groups = self.num_groups
        if len(self._counts) < groups:
            grown = np.zeros(max(groups, 2 * len(self._counts)), dtype=np.int64)
            grown[:len(self._counts)] = self._counts
            self._counts = grown
        if ids is None:
            self._counts[:len(counts)] += counts
        else:
            np.add.at(self._counts, ids, counts)

    def key_counts(self):
        """COUNT(*) of each group 0..num_groups-1 from ``count_keys`` (ndarray[int64])."""
        self._flush_dictionary()
        groups = self.num_groups
        out = np.zeros(groups, dtype=np.int64)
        out[:min(groups, len(self._counts))] = self._counts[:groups]
        return out

    def uniques(self):
        """The distinct keys, one Array per key column, row g being group g's key."""
        if not self._keep:
            raise ValueError("this Factorizer does not keep its keys")
        if self._keys_in_table:
            self._flush_dictionary()
            t = self.types[0]
            words = self._table.group_words()[:, 0]
            mask = None
            if self._table.has_null:
                mask = np.zeros(len(words), dtype=bool)
                mask[self._table.null_group] = True
            if pa.types.is_unsigned_integer(t) and t.bit_width == 64:
                return [pa.array(words.view(np.uint64), type=t, mask=mask)]
            arr = pa.array(words, type=pa.int64(), mask=mask)
            return [arr if t == pa.int64() else arr.cast(t)]       # values of t: the cast is exact
        out = []
        for t, chunks in zip(self.types, self._chunks):
            chunks = [c.dictionary_decode() if pa.types.is_dictionary(c.type) else c for c in chunks]
            chunks = [c if c.type == t else c.cast(t) for c in chunks]
            out.append(pa.concat_arrays(chunks) if chunks else pa.array([], type=t))
        return out


def factorize(columns):
    """Group ids and distinct keys of one batch: ``(ids ndarray[int64], [Array per key column])``."""
    columns = [_as_array(c) for c in columns]
    f = Factorizer([c.type for c in columns])
    ids = f.factorize(columns)
    return ids, f.uniques()


class DistinctCount:
    """COUNT(DISTINCT col) over a stream of batches: the number of distinct non-null values.

    Integer-like columns (see ``supports_group_key``) go into a ``DistinctSet`` of their values
    widened to int64 (no ids, no kept keys); decimals and byte strings into a ``Factorizer``'s
    table. Dictionary arrays count their decoded values.

    Parameters
    ----------
    type : pyarrow.DataType
        Type of the column (a dictionary type also accepts its value type, and the reverse).
    """

    def __init__(self, type):
        kind = _key_kind(type)
        if kind is None:
            raise TypeError(f"cannot count distinct values of type {type}")
        self.type = _plain(type)
        self._set = DistinctSet() if kind == "word" else None
        self._factorizer = None if kind == "word" else Factorizer([self.type], keep_uniques=False)

    def reserve(self, keys):
        """Size the table for ``keys`` distinct values in all (no rehash until there are more)."""
        (self._set if self._set is not None else self._factorizer).reserve(keys)

    def add(self, column):
        """Add the values of one batch (an Array or ChunkedArray)."""
        arr = _as_array(column)
        if pa.types.is_dictionary(arr.type):
            arr = arr.dictionary_decode()
        if _plain(arr.type) != self.type and _key_kind(arr.type) != _key_kind(self.type):
            raise TypeError(f"a {arr.type} column for a DistinctCount of {self.type}")
        if not len(arr):
            return
        if self._set is None:
            self._factorizer.factorize([arr])
            return
        self._set.insert(np.ascontiguousarray(_words(arr)[:, 0]), _validity(arr), arr.offset)

    @property
    def count(self):
        """Distinct non-null values so far."""
        if self._set is not None:
            return self._set.count
        table = self._factorizer._table
        return table.num_groups - (1 if table.has_null else 0)


# ---------------------------------------------------------------------------------------------------
# Aggregating by group id: low-level kernels. ``ids`` are checked against the output sizes before
# the loops; outputs are caller-allocated and accumulate (call once per batch).


@cython.boundscheck(False)
@cython.wraparound(False)
def group_count(const int64_t[::1] ids, int64_t[::1] out):
    """COUNT(*): ``out[ids[i]] += 1``. Modifies ``out``."""
    cdef Py_ssize_t i, n = ids.shape[0]
    _check_ids(ids, out.shape[0])
    with nogil:
        for i in range(n):
            out[ids[i]] += 1


@cython.boundscheck(False)
@cython.wraparound(False)
def group_count_valid(const int64_t[::1] ids, const uint8_t[::1] validity, Py_ssize_t bit_offset,
                      int64_t[::1] out):
    """COUNT(col): ``out[ids[i]] += 1`` where row i is valid (validity None: every row). Modifies ``out``."""
    cdef Py_ssize_t i, n = ids.shape[0]
    _check_ids(ids, out.shape[0])
    cdef const uint8_t *valid = _validity_ptr(validity, bit_offset, n)
    with nogil:
        for i in range(n):
            if _valid(valid, bit_offset + i):
                out[ids[i]] += 1


cdef inline void _add128(uint64_t *lo, int64_t *hi, uint64_t vlo, int64_t vhi) noexcept nogil:
    cdef uint64_t s = lo[0] + vlo
    hi[0] = <int64_t>(<uint64_t>hi[0] + <uint64_t>vhi + (s < vlo))
    lo[0] = s


@cython.boundscheck(False)
@cython.wraparound(False)
def group_sum_int(const int64_t[::1] ids, const intlike_t[::1] values, const uint8_t[::1] validity,
                  Py_ssize_t bit_offset, uint64_t[::1] lo, int64_t[::1] hi, uint8_t[::1] seen):
    """SUM of integers into exact 128-bit accumulators ``hi * 2**64 + lo`` per group.

    Parameters
    ----------
    ids : ndarray[int64]
    values : ndarray of an integer dtype, same length
    validity : ndarray[uint8] or None
        Null rows are skipped.
    bit_offset : int
    lo, hi : ndarray[uint64], ndarray[int64], one slot per group
        Modified: the running sums.
    seen : ndarray[uint8] or None
        Modified if given: 1 for every group that got a non-null value.
    """
    cdef Py_ssize_t i, n = ids.shape[0]
    cdef int64_t g
    cdef int64_t v
    if values.shape[0] != n:
        raise ValueError(f"{values.shape[0]} values for {n} ids")
    if hi.shape[0] != lo.shape[0] or (seen is not None and seen.shape[0] != lo.shape[0]):
        raise ValueError("lo, hi and seen must have one slot per group")
    _check_ids(ids, lo.shape[0])
    cdef const uint8_t *valid = _validity_ptr(validity, bit_offset, n)
    cdef bint mark = seen is not None
    with nogil:
        for i in range(n):
            if _valid(valid, bit_offset + i):
                g = ids[i]
                if intlike_t is uint64_t:
                    _add128(&lo[g], &hi[g], values[i], 0)
                else:
                    v = <int64_t>values[i]
                    _add128(&lo[g], &hi[g], <uint64_t>v, -1 if v < 0 else 0)
                if mark:
                    seen[g] = 1


@cython.boundscheck(False)
@cython.wraparound(False)
def group_sum_int64(const int64_t[::1] ids, const intlike_t[::1] values, const uint8_t[::1] validity,
                    Py_ssize_t bit_offset, int64_t[::1] out, uint8_t[::1] seen):
    """SUM of integers into one int64 per group (wrapping): the caller keeps every sum within int64
    (``GroupedAggregate`` bounds rows x largest magnitude), and a group's state is one word, one
    cache line touched per row instead of ``group_sum_int``'s two. Otherwise as ``group_sum_int``;
    modifies ``out`` and ``seen``."""
    cdef Py_ssize_t i, n = ids.shape[0]
    cdef int64_t g
    if values.shape[0] != n:
        raise ValueError(f"{values.shape[0]} values for {n} ids")
    if seen is not None and seen.shape[0] != out.shape[0]:
        raise ValueError("out and seen must have one slot per group")
    _check_ids(ids, out.shape[0])
    cdef const uint8_t *valid = _validity_ptr(validity, bit_offset, n)
    cdef bint mark = seen is not None
    with nogil:
        if valid == NULL and not mark:
            for i in range(n):
                out[ids[i]] = <int64_t>(<uint64_t>out[ids[i]] + <uint64_t>values[i])
        else:
            for i in range(n):
                if _valid(valid, bit_offset + i):
                    g = ids[i]
                    out[g] = <int64_t>(<uint64_t>out[g] + <uint64_t>values[i])
                    if mark:
                        seen[g] = 1


@cython.boundscheck(False)
@cython.wraparound(False)
def total_sum_int(const intlike_t[::1] values, const uint8_t[::1] validity, Py_ssize_t bit_offset,
                  uint64_t[::1] lo, int64_t[::1] hi):
    """SUM of every non-null integer into the exact 128-bit accumulator ``hi[0] * 2**64 + lo[0]``
    (one group, no ids: a keyless SUM). Modifies ``lo[0]`` and ``hi[0]``; returns the rows added."""
    cdef Py_ssize_t i, j, n = values.shape[0], added = 0
    cdef int64_t block
    cdef uint64_t ublock
    if lo.shape[0] < 1 or hi.shape[0] < 1:
        raise ValueError("lo and hi need one slot")
    cdef const uint8_t *valid = _validity_ptr(validity, bit_offset, n)
    with nogil:
        if valid == NULL:
            # Blocks of 4096 values cannot overflow an int64 (|v| < 2**63 / 4096 for 32-bit and
            # narrower types); 64-bit values go one by one into the 128-bit sum.
            if intlike_t is int64_t or intlike_t is uint64_t:
                for i in range(n):
                    if intlike_t is uint64_t:
                        _add128(&lo[0], &hi[0], values[i], 0)
                    else:
                        _add128(&lo[0], &hi[0], <uint64_t>values[i], -1 if values[i] < 0 else 0)
            else:
                i = 0
                while i < n:
                    block = 0
                    for j in range(i, min(i + 4096, n)):
                        block += <int64_t>values[j]
                    _add128(&lo[0], &hi[0], <uint64_t>block, -1 if block < 0 else 0)
                    i += 4096
            added = n
        else:
            for i in range(n):
                if _valid(valid, bit_offset + i):
                    added += 1
                    if intlike_t is uint64_t:
                        _add128(&lo[0], &hi[0], values[i], 0)
                    else:
                        _add128(&lo[0], &hi[0], <uint64_t><int64_t>values[i], -1 if values[i] < 0 else 0)
    return added


@cython.boundscheck(False)
@cython.wraparound(False)
def group_sum_decimal128(const int64_t[::1] ids, const int64_t[::1] words, const uint8_t[::1] validity,
                         Py_ssize_t bit_offset, uint64_t[::1] lo, int64_t[::1] hi, int64_t[::1] carry,
                         uint8_t[::1] seen):
    """SUM of decimal128 scaled integers (``words``: two little-endian int64 per row) into 128-bit
    accumulators; otherwise as ``group_sum_int``. ``carry`` counts each group's wraps past +-2**127
    (+1 up, -1 down), so a sum is exact whatever its running total did on the way: a group whose
    carry ends non-zero does not fit DECIMAL(38), one whose carry ends at 0 holds its exact sum
    (two values near 10**38 and a third that cancels one: MySQL sums in 65 digits and answers)."""
    cdef Py_ssize_t i, n = ids.shape[0]
    cdef int64_t g, before
    if words.shape[0] != 2 * n:
        raise ValueError(f"{words.shape[0]} words for {n} ids; expected {2 * n}")
    if hi.shape[0] != lo.shape[0] or carry.shape[0] != lo.shape[0] or \
            (seen is not None and seen.shape[0] != lo.shape[0]):
        raise ValueError("lo, hi, carry and seen must have one slot per group")
    _check_ids(ids, lo.shape[0])
    cdef const uint8_t *valid = _validity_ptr(validity, bit_offset, n)
    cdef bint mark = seen is not None
    with nogil:
        for i in range(n):
            if _valid(valid, bit_offset + i):
                g = ids[i]
                before = hi[g]
                _add128(&lo[g], &hi[g], <uint64_t>words[2 * i], words[2 * i + 1])
                # signed overflow: both addends of one sign, the sum of the other
                if ((before ^ hi[g]) & (words[2 * i + 1] ^ hi[g])) < 0:
                    carry[g] += 1 if before >= 0 else -1
                if mark:
                    seen[g] = 1


@cython.boundscheck(False)
@cython.wraparound(False)
def group_sum_float(const int64_t[::1] ids, const float_t[::1] values, const uint8_t[::1] validity,
                    Py_ssize_t bit_offset, double[::1] out, uint8_t[::1] seen):
    """SUM of floats into float64 per group, in row order; otherwise as ``group_sum_int``."""
    cdef Py_ssize_t i, n = ids.shape[0]
    cdef int64_t g
    if values.shape[0] != n:
        raise ValueError(f"{values.shape[0]} values for {n} ids")
    if seen is not None and seen.shape[0] != out.shape[0]:
        raise ValueError("out and seen must have one slot per group")
    _check_ids(ids, out.shape[0])
    cdef const uint8_t *valid = _validity_ptr(validity, bit_offset, n)
    cdef bint mark = seen is not None
    with nogil:
        for i in range(n):
            if _valid(valid, bit_offset + i):
                g = ids[i]
                out[g] += values[i]
                if mark:
                    seen[g] = 1


@cython.boundscheck(False)
@cython.wraparound(False)
def group_min(const int64_t[::1] ids, const number_t[::1] values, const uint8_t[::1] validity,
              Py_ssize_t bit_offset, number_t[::1] out, uint8_t[::1] seen):
    """MIN per group: where ``seen[g]`` is 0 the first non-null value is taken, then smaller ones.
    NaN is never smaller, so it is the minimum only of a group with nothing else. Modifies ``out``
    and ``seen``."""
    cdef Py_ssize_t i, n = ids.shape[0]
    cdef int64_t g
    if values.shape[0] != n:
        raise ValueError(f"{values.shape[0]} values for {n} ids")
    if seen.shape[0] != out.shape[0]:
        raise ValueError("out and seen must have one slot per group")
    _check_ids(ids, out.shape[0])
    cdef const uint8_t *valid = _validity_ptr(validity, bit_offset, n)
    with nogil:
        for i in range(n):
            if _valid(valid, bit_offset + i):
                g = ids[i]
                if not seen[g] or values[i] < out[g] or out[g] != out[g]:
                    out[g] = values[i]
                    seen[g] = 1


@cython.boundscheck(False)
@cython.wraparound(False)
def group_max(const int64_t[::1] ids, const number_t[::1] values, const uint8_t[::1] validity,
              Py_ssize_t bit_offset, number_t[::1] out, uint8_t[::1] seen):
    """MAX per group; as ``group_min``."""
    cdef Py_ssize_t i, n = ids.shape[0]
    cdef int64_t g
    if values.shape[0] != n:
        raise ValueError(f"{values.shape[0]} values for {n} ids")
    if seen.shape[0] != out.shape[0]:
        raise ValueError("out and seen must have one slot per group")
    _check_ids(ids, out.shape[0])
    cdef const uint8_t *valid = _validity_ptr(validity, bit_offset, n)
    with nogil:
        for i in range(n):
            if _valid(valid, bit_offset + i):
                g = ids[i]
                if not seen[g] or values[i] > out[g] or out[g] != out[g]:
                    out[g] = values[i]
                    seen[g] = 1


cdef inline bint _less128(int64_t ahi, uint64_t alo, int64_t bhi, uint64_t blo) noexcept nogil:
    return ahi < bhi or (ahi == bhi and alo < blo)


@cython.boundscheck(False)
@cython.wraparound(False)
def group_min_decimal128(const int64_t[::1] ids, const int64_t[::1] words, const uint8_t[::1] validity,
                         Py_ssize_t bit_offset, int64_t[::1] out, uint8_t[::1] seen):
    """MIN of decimal128 per group; ``out`` holds two words per group. Modifies ``out``, ``seen``."""
    cdef Py_ssize_t i, n = ids.shape[0]
    cdef int64_t g
    if words.shape[0] != 2 * n or out.shape[0] != 2 * seen.shape[0]:
        raise ValueError("words and out must hold two words per row / group")
    _check_ids(ids, seen.shape[0])
    cdef const uint8_t *valid = _validity_ptr(validity, bit_offset, n)
    with nogil:
        for i in range(n):
            if _valid(valid, bit_offset + i):
                g = ids[i]
                if not seen[g] or _less128(words[2 * i + 1], <uint64_t>words[2 * i],
                                           out[2 * g + 1], <uint64_t>out[2 * g]):
                    out[2 * g] = words[2 * i]
                    out[2 * g + 1] = words[2 * i + 1]
                    seen[g] = 1


@cython.boundscheck(False)
@cython.wraparound(False)
def group_max_decimal128(const int64_t[::1] ids, const int64_t[::1] words, const uint8_t[::1] validity,
                         Py_ssize_t bit_offset, int64_t[::1] out, uint8_t[::1] seen):
    """MAX of decimal128 per group; as ``group_min_decimal128``."""
    cdef Py_ssize_t i, n = ids.shape[0]
    cdef int64_t g
    if words.shape[0] != 2 * n or out.shape[0] != 2 * seen.shape[0]:
        raise ValueError("words and out must hold two words per row / group")
    _check_ids(ids, seen.shape[0])
    cdef const uint8_t *valid = _validity_ptr(validity, bit_offset, n)
    with nogil:
        for i in range(n):
            if _valid(valid, bit_offset + i):
                g = ids[i]
                if not seen[g] or _less128(out[2 * g + 1], <uint64_t>out[2 * g],
                                           words[2 * i + 1], <uint64_t>words[2 * i]):
                    out[2 * g] = words[2 * i]
                    out[2 * g + 1] = words[2 * i + 1]
                    seen[g] = 1


# ---------------------------------------------------------------------------------------------------
# Aggregating Arrow arrays by group id


def _agg_kind(func, t):
    if func == "count_all":
        return "count_all"
    if pa.types.is_dictionary(t):
        return "count" if func == "count" else None
    if func == "count":
        return "count"
    is_int = pa.types.is_integer(t) or pa.types.is_boolean(t)
    if func == "sum":
        if is_int:
            return "sum_int"
        if pa.types.is_decimal128(t):
            return "sum_decimal"
        if pa.types.is_floating(t) and not pa.types.is_float16(t):
            return "sum_float"
        return None
    if func in ("min", "max"):
        if pa.types.is_decimal128(t):
            return "minmax_decimal"
        if pa.types.is_boolean(t) or pa.types.is_float16(t):
            return None
        if is_int or pa.types.is_floating(t) or pa.types.is_date(t) or pa.types.is_timestamp(t) \
                or pa.types.is_time(t) or pa.types.is_duration(t):
            return "minmax"
    return None


def supports_aggregate(func: str, t) -> bool:
    """Whether ``GroupedAggregate(func, t)`` exists (``t`` may be None for ``count_all``)."""
    return _agg_kind(func, t) is not None


def _grow(a, size, fill=0):
    if a.shape[0] >= size:
        return a
    grown = np.full(max(size, 2 * a.shape[0]), fill, dtype=a.dtype)
    grown[:a.shape[0]] = a
    return grown


def _int128_to_decimal(lo, hi, t):
    words = np.empty(2 * len(lo), dtype=np.int64)
    words[0::2] = lo.view(np.int64)
    words[1::2] = hi
    return pa.Array.from_buffers(t, len(lo), [None, pa.py_buffer(words)])


# 10**38 and -10**38 as (high word, low word): the bounds of DECIMAL(38) on 128-bit sums
_HI38, _LO38 = divmod(10 ** 38, 1 << 64)
_HI38N, _LO38N = divmod(-10 ** 38, 1 << 64)


def _check_decimal38(lo, hi, wrapped):
    """Raise OverflowError when a sum ended past 2**127 (``wrapped``) or does not fit 38 digits
    (groups never seen hold 0); a SUM is never wrapped or cut silently."""
    too_big = (hi > _HI38) | ((hi == _HI38) & (lo >= _LO38))
    too_small = (hi < _HI38N) | ((hi == _HI38N) & (lo <= _LO38N))
    if wrapped or too_big.any() or too_small.any():
        raise OverflowError("DECIMAL value is out of range: a SUM does not fit DECIMAL(38)")


def _with_nulls(arr, seen):
    if seen is None or seen.all():
        return arr
    return pc.if_else(pa.array(seen == 0), pa.scalar(None, arr.type), arr)


class GroupedAggregate:
    """One aggregate's per-group state over a stream of batches.

    Parameters
    ----------
    func : {"count_all", "count", "sum", "min", "max"}
    type : pyarrow.DataType or None
        Type of the argument (None for ``count_all``); see ``supports_aggregate``.

    Results (``result``): counts as int64 (0 for a group of nulls); SUM of integers as
    decimal128(38, 0), of decimal(p, s) as decimal128(38, s), of floats as float64; MIN/MAX in the
    argument's type; SUM/MIN/MAX of a group with no non-null value are null.
    """

    def __init__(self, func, type=None):
        kind = _agg_kind(func, type)
        if kind is None:
            raise TypeError(f"no grouped {func} over {type}")
        self.func, self.type, self._kind = func, type, kind
        self._seen = None
        # Integer SUM accumulates in int64 (in _lo, _hi left 0) while rows so far x largest
        # magnitude so far bounds every group's sum below 2**63, then widens to 128 bits.
        self._narrow = kind == "sum_int"
        self._bound = 0
        if kind in ("count_all", "count"):
            self._out = np.zeros(0, dtype=np.int64)
        elif kind in ("sum_int", "sum_decimal"):
            self._lo = np.zeros(0, dtype=np.uint64)
            self._hi = np.zeros(0, dtype=np.int64)
            # decimal sums: each group's wraps past +-2**127 (group_sum_decimal128); integer sums
            # cannot wrap 128 bits
            self._carry = np.zeros(0, dtype=np.int64)
        elif kind == "sum_float":
            self._out = np.zeros(0, dtype=np.float64)
        elif kind == "minmax_decimal":
            self._out = np.zeros(0, dtype=np.int64)
            self._seen = np.zeros(0, dtype=np.uint8)
        else:
            storage = type if pa.types.is_integer(type) or pa.types.is_floating(type) else \
                (pa.int64() if type.bit_width == 64 else pa.int32())
            self._storage = storage
            self._out = np.zeros(0, dtype=storage.to_pandas_dtype())
            self._seen = np.zeros(0, dtype=np.uint8)
        self._groups = 0

    def update(self, ids, num_groups, values=None, rows=None):
        """Fold one batch in: ``ids`` (ndarray[int64] from a Factorizer holding ``num_groups``
        groups) and the argument ``values`` (an Array; None for count_all).

        ``ids=None``: every row is in group 0 (a keyless aggregate; ``num_groups`` must be 1, and
        ``rows`` gives the batch's row count for count_all). COUNT and integer SUM then run
        without ids; the other kinds use an all-zero id array."""
        kind = self._kind
        if ids is None:
            if num_groups != 1:
                raise ValueError(f"ids=None means one group, not {num_groups}")
            n = len(values) if values is not None else rows
            if n is None:
                raise ValueError("count_all without ids needs rows")
            if self._update_one_group(n, values):
                return
            ids = np.zeros(n, dtype=np.int64)
        ids = np.ascontiguousarray(ids, dtype=np.int64)
        before = self._groups
        self._resize(num_groups)
        if kind == "count_all":
            group_count(ids, self._out[:num_groups])
            return
        arr = _as_array(values)
        if len(arr) != len(ids):
            raise ValueError(f"{len(arr)} values for {len(ids)} ids")
        validity = _validity(arr)
        if kind == "count":
            group_count_valid(ids, validity, arr.offset, self._out[:num_groups])
            return
        if kind.startswith("sum") and validity is not None and self._seen is None:
            # Until a batch has a null, every group holds a value; from the first null on, track.
            self._seen = np.zeros(len(self._out if kind == "sum_float" else self._lo), dtype=np.uint8)
            self._seen[:before] = 1
        seen = self._seen[:num_groups] if self._seen is not None else None
        n = len(arr)
        if kind == "sum_int":
            if pa.types.is_boolean(arr.type):
                arr = arr.cast(pa.int8())
            data = np.frombuffer(arr.buffers()[1], dtype=arr.type.to_pandas_dtype(), count=n,
                                 offset=arr.offset * (arr.type.bit_width // 8))
            if self._narrow and n:
                self._bound += n * max(int(data.max()), -int(data.min()))
                if self._bound >= 1 << 63:
                    self._widen()
            if self._narrow:
                group_sum_int64(ids, data, validity, arr.offset, self._lo.view(np.int64)[:num_groups], seen)
            else:
                group_sum_int(ids, data, validity, arr.offset, self._lo[:num_groups], self._hi[:num_groups], seen)
        elif kind == "sum_decimal":
            words = np.frombuffer(arr.buffers()[1], dtype=np.int64, count=2 * n, offset=16 * arr.offset)
            group_sum_decimal128(ids, words, validity, arr.offset, self._lo[:num_groups],
                                 self._hi[:num_groups], self._carry[:num_groups], seen)
        elif kind == "sum_float":
            data = np.frombuffer(arr.buffers()[1], dtype=arr.type.to_pandas_dtype(), count=n,
                                 offset=arr.offset * (arr.type.bit_width // 8))
            group_sum_float(ids, data, validity, arr.offset, self._out[:num_groups], seen)
        elif kind == "minmax_decimal":
            words = np.frombuffer(arr.buffers()[1], dtype=np.int64, count=2 * n, offset=16 * arr.offset)
            fn = group_min_decimal128 if self.func == "min" else group_max_decimal128
            fn(ids, words, validity, arr.offset, self._out[:2 * num_groups], seen)
        else:
            storage = self._storage
            data = np.frombuffer(arr.buffers()[1], dtype=storage.to_pandas_dtype(), count=n,
                                 offset=arr.offset * (storage.bit_width // 8))
            fn = group_min if self.func == "min" else group_max
            fn(ids, data, validity, arr.offset, self._out[:num_groups], seen)

    def reserve(self, num_groups):
        """Room for ``num_groups`` groups' states (no regrowth on the way there)."""
        if num_groups < 0:
            raise ValueError(f"num_groups must be >= 0, not {num_groups}")
        groups = self._groups
        self._resize(max(groups, num_groups))
        self._groups = groups

    def _update_one_group(self, n, values):
        """Keyless ``update``: COUNT and integer SUM without ids (True), else prepare group 0's
        ``seen`` flag so a group without any value stays NULL, and return False."""
        kind = self._kind
        before = self._groups
        self._resize(1)
        if kind == "count_all":
            self._out[0] += n
            return True
        arr = _as_array(values)
        if kind == "count":
            self._out[0] += len(arr) - arr.null_count
            return True
        if kind.startswith("sum") and self._seen is None:
            self._seen = np.zeros(len(self._out if kind == "sum_float" else self._lo), dtype=np.uint8)
            self._seen[:before] = 1
        if kind != "sum_int":
            return False
        self._widen()
        if pa.types.is_boolean(arr.type):
            arr = arr.cast(pa.int8())
        dtype = arr.type.to_pandas_dtype()
        data = np.frombuffer(arr.buffers()[1], dtype=dtype, count=len(arr),
                             offset=arr.offset * (arr.type.bit_width // 8)) if len(arr) else np.empty(0, dtype)
        if total_sum_int(data, _validity(arr), arr.offset, self._lo[:1], self._hi[:1]):
            self._seen[0] = 1
        return True

    def _resize(self, num_groups):
        if num_groups < self._groups:
            raise ValueError(f"the number of groups went down from {self._groups} to {num_groups}")
        self._groups = num_groups
        if self._kind in ("sum_int", "sum_decimal"):
            self._lo = _grow(self._lo, num_groups)
            self._hi = _grow(self._hi, num_groups)
            self._carry = _grow(self._carry, num_groups)
        elif self._kind == "minmax_decimal":
            self._out = _grow(self._out, 2 * num_groups)
        else:
            self._out = _grow(self._out, num_groups)
        if self._seen is not None:
            self._seen = _grow(self._seen, num_groups)

    def _widen(self):
        """From int64 sums to 128-bit ones: the high words are the int64 sums' sign."""
        if self._narrow:
            np.right_shift(self._lo.view(np.int64), 63, out=self._hi)    # _hi has _lo's length
            self._narrow = False

    def result(self, num_groups=None):
        """The aggregate of each group 0..num_groups-1 as an Array (see the class docstring)."""
        g = self._groups if num_groups is None else num_groups
        self._resize(g)
        self._widen()
        seen = self._seen[:g] if self._seen is not None else None
        kind = self._kind
        if kind in ("count_all", "count"):
            return pa.array(self._out[:g].copy())
        if kind == "sum_float":
            return _with_nulls(pa.array(self._out[:g].copy()), seen)
        if kind in ("sum_int", "sum_decimal"):
            scale = self.type.scale if kind == "sum_decimal" else 0
            _check_decimal38(self._lo[:g], self._hi[:g], bool(self._carry[:g].any()))
            return _with_nulls(_int128_to_decimal(self._lo[:g], self._hi[:g], pa.decimal128(38, scale)), seen)
        if kind == "minmax_decimal":
            words = self._out[:2 * g].copy()
            arr = pa.Array.from_buffers(self.type, g, [None, pa.py_buffer(words)])
            return _with_nulls(arr, seen)
        arr = pa.array(self._out[:g].copy())
        if arr.type != self.type:
            arr = arr.view(self.type)
        return _with_nulls(arr, seen)
