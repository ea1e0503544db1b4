"""Factorizing: dense group ids for the keys of a stream of batches (``Factorizer``, ``factorize``),
COUNT(DISTINCT) (``DistinctCount``) and the distinct-count estimate that sizes their tables
(``estimate_distinct``). See kernels/groupby.pyx for the family.
"""
cimport cython
from libc.stdint cimport int64_t, uint8_t, uint64_t

from kernels.buffers cimport _valid, _validity_ptr
from kernels.hashtable cimport canopy_hash_word

import numpy as np
import pyarrow as pa

from kernels.groupby_keys import (_as_array, _key_kind, _plain, _validity, _words, count_codes,
                                  dense_codes, mix_codes)
from kernels.groupby_packing import KeyPacking, column_range
from kernels.hashtable import DistinctSet, HashTable

__all__ = ["Factorizer", "factorize", "DistinctCount", "estimate_distinct", "sketch_words"]


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
        self._codes_only = False     # ids are codes for a composite key (see _factorize_remapped)
        self._remap = None           # (dictionary identity, ids of its entries, the dictionary)
        if len(kinds) == 1:
            kind = kinds[0]
            self._table = HashTable(0 if kind == "bytes" else 2 if kind == "decimal" else 1,
                                    inline_keys=kind == "word")
            self._subs = None
            # Integer keys are read back from the table's own copy (uniques), not taken per batch.
            self._keys_in_table = kind == "word" and pa.types.is_integer(self.types[0])
        else:
            # Byte-string columns enter the composite key as their own dense ids (one word), integer
            # columns as their value, decimals as two words. Without decimals the columns' codes are
            # packed (kernels/groupby_packing.py): into one word of an inline table, or few, its columns
            # read back from the words (strings from their factorizers' own distinct keys); else
            # ("wide") a row of words, a last word holding the null flags.
            self._packing = None
            self._reserved = 0
            self._packable = all(kind in ("bytes", "word") for kind in kinds) and not any(
                pa.types.is_unsigned_integer(t) and t.bit_width == 64 for t in self.types)
            self._subs = [Factorizer([t], keep_uniques=keep_uniques and self._packable) if kind == "bytes"
                          else None for t, kind in zip(self.types, kinds)]
            for sub in self._subs:
                if sub is not None:
                    sub._codes_only = True
            self._wide_width = sum(2 if kind == "decimal" else 1 for kind in kinds) + 1
            self._table = HashTable(1, inline_keys=True) if self._packable else HashTable(self._wide_width)
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
        if self._subs is not None:
            self._reserved = max(self._reserved, groups)

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
            if self._codes_only and len(arr.dictionary) <= 4 * len(arr) + 4096:
                return self._factorize_remapped(arr)
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

    def _factorize_remapped(self, arr):
        """Ids of a dictionary array's rows through its dictionary's ids (``remap[code]``), the whole
        dictionary factorized once and kept for the batches that share it (a stored segment's, or
        the encoded keys of a grouping set's states): no string is hashed per row. For a factorizer
        whose ids are only codes (``_codes_only``): groups are numbered in dictionary order, and
        entries no row uses get groups too."""
        dictionary = arr.dictionary
        identity = (arr.type, dictionary.offset, len(dictionary),
                    tuple((b.address, b.size) if b is not None else None for b in dictionary.buffers()))
        if self._remap is None or self._remap[0] != identity:
            # the dictionary is kept with its ids: its buffers cannot be freed and their addresses
            # taken by another dictionary that would pass for it
            self._remap = (identity, self._factorize_one(dictionary), dictionary)
        remap = self._remap[1]
        indices = arr.indices
        codes = np.frombuffer(indices.buffers()[1], dtype=indices.type.to_pandas_dtype(),
                              count=len(indices), offset=indices.offset * (indices.type.bit_width // 8))
        if indices.null_count == 0:
            return remap.take(codes, mode="raise")
        valid = np.asarray(indices.is_valid())
        ids = remap.take(np.where(valid, codes, 0), mode="raise") if len(remap) else np.zeros(len(codes), np.int64)
        ids[~valid] = self._factorize_one(pa.nulls(1, self.types[0]))[0]
        return ids

    def _factorize_many(self, columns, n, combine=True):
        coded = self._factorize_code_combinations(columns, n) if combine else None
        if coded is not None:
            return coded
        if self._packable:
            ids = self._factorize_packed(columns, n)
            if ids is not None:
                return ids
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

    def _column_words(self, columns):
        """Each key column as (int64 words, bool validity mask or None): a byte-string column's
        dense ids from its own factorizer (never null: null is one of its keys), others' values."""
        out = []
        for arr, sub in zip(columns, self._subs):
            if sub is not None:
                out.append((sub.factorize([arr]), None))
                continue
            if pa.types.is_dictionary(arr.type):
                arr = arr.dictionary_decode()
            words = np.ascontiguousarray(_words(arr)[:, 0])
            out.append((words, np.asarray(arr.is_valid()) if arr.null_count else None))
        return out

    def _factorize_packed(self, columns, n):
        """Ids of the rows with their key columns packed into words (``KeyPacking``); a batch whose
        values cannot pack turns the table wide, its groups kept."""
        columnar = self._column_words(columns)
        ranges = [column_range(words, valid) for words, valid in columnar]
        growing = [j for j, sub in enumerate(self._subs) if sub is not None]
        packing = self._packing
        if packing is None or not packing.covers(ranges):
            most = len(columns)        # a word a column at worst: never wider than the wide table
            packing = (KeyPacking.fit(ranges, growing, most) if packing is None
                       else packing.widened(ranges, growing, most))
            self._repack(packing)
            if packing is None:
                return self._factorize_wide_words(columns, columnar, n)
        ids = np.empty(n, dtype=np.int64)
        packed = packing.pack([w for w, _ in columnar], [v for _, v in columnar])
        self._table.factorize_words(packed, None, 0, ids)
        return ids

    def _repack(self, packing):
        """Move the groups so far to a table of ``packing`` (None: the wide table), ids unchanged."""
        old, self._packing = self._packing, packing
        groups = self._table.num_groups
        if packing is None:
            self._packable = False
            table = HashTable(self._wide_width)
        else:
            table = HashTable(1, inline_keys=True) if packing.words == 1 else HashTable(packing.words)
        table.reserve(max(groups, self._reserved))
        if groups:
            unpacked = old.unpack(self._table.group_words())
            ids = np.empty(groups, dtype=np.int64)
            if packing is None:
                rows = self._wide_rows(unpacked, groups)
                if self._keep:
                    for chunks, arr in zip(self._chunks, self._packed_uniques(unpacked)):
                        chunks.append(arr)
            else:
                rows = packing.pack([v for v, _ in unpacked], [None if m is None else ~m for _, m in unpacked])
            table.factorize_words(rows, None, 0, ids)
        self._table = table

    def _wide_rows(self, columnar, n):
        """The wide table's rows of columns given as (words, null mask or None)."""
        rows = np.zeros((n, self._wide_width), dtype=np.int64)
        nulls = np.zeros(n, dtype=np.int64)
        for j, (words, null) in enumerate(columnar):
            rows[:, j] = words
            if null is not None:
                rows[null, j] = 0
                nulls |= null.astype(np.int64) << j
        rows[:, len(columnar)] = nulls
        return rows

    def _factorize_wide_words(self, columns, columnar, n):
        """The wide table's ids of a batch already as words (a batch that made the table go wide)."""
        ids = np.empty(n, dtype=np.int64)
        rows = self._wide_rows([(w, None if v is None else ~v) for w, v in columnar], n)
        new_rows = self._table.factorize_words(rows, None, 0, ids)
        if self._keep and len(new_rows):
            taken = pa.array(new_rows)
            for chunks, arr in zip(self._chunks, columns):
                chunks.append(arr.take(taken))
        return ids

    def _packed_uniques(self, unpacked, encoded=False):
        """The key columns of the groups, from their unpacked words (``encoded``: see ``uniques``)."""
        out = []
        for t, sub, (values, null) in zip(self.types, self._subs, unpacked):
            if sub is not None and encoded:
                table = sub._table
                mask = (values == table.null_group) if table.has_null else None
                dictionary = sub.uniques()[0]
                index_type = pa.int32() if len(dictionary) < (1 << 31) else pa.int64()
                out.append(pa.DictionaryArray.from_arrays(pa.array(values, index_type, mask=mask), dictionary))
            elif sub is not None:
                out.append(sub.uniques()[0].take(pa.array(values)))
            else:
                out.append(_from_words(values, null, t))
        return out

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

    def uniques(self, encoded=False):
        """The distinct keys, one Array per key column, row g being group g's key. ``encoded``: a
        byte-string column of a packed composite key may come as a dictionary array (its own
        factorizer's distinct values, indexed by the groups' codes: no string copied), for a caller
        that groups them again (a grouping set rolled up from these groups)."""
        if not self._keep:
            raise ValueError("this Factorizer does not keep its keys")
        if self._subs is not None and self._packing is not None:
            return self._packed_uniques(self._packing.unpack(self._table.group_words()), encoded)
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
        if self._subs is not None and self._packable:
            return [pa.array([], type=t) for t in self.types]      # no batch yet
        out = []
        for t, chunks in zip(self.types, self._chunks):
            chunks = [c.dictionary_decode() if pa.types.is_dictionary(c.type) else c for c in chunks]
            chunks = [c if c.type == t else c.cast(t) for c in chunks]
            out.append(pa.concat_arrays(chunks) if chunks else pa.array([], type=t))
        return out


def _from_words(values, null, t):
    """An Arrow array of type ``t`` (integer-like, not uint64) from its rows' int64 words."""
    arr = pa.array(values, type=pa.int64(), mask=null)
    if pa.types.is_integer(t) or pa.types.is_boolean(t):
        return arr if t == pa.int64() else arr.cast(t)        # values of t: the cast is exact
    return (arr if t.bit_width == 64 else arr.cast(pa.int32())).view(t)


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
