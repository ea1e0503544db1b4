"""The build side of the hash join, ``JoinTable``: its distinct keys numbered in a ``HashTable``,
its rows laid out by key, probed by ``lookup`` and turned into pairs or selections. See kernels/join.pyx.
"""
from kernels.hashtable cimport HashTable

import numpy as np
import pyarrow as pa

from kernels.join_bloom import _BLOOM_BITS_PER_KEY, JoinBloom, bloom_insert_ints
from kernels.join_keys import (_check_compatible, _int_values, _key_kind, _log2_ceil, _offsets_data,
                               _plain_array, _valid_mask, _words)
from kernels.join_pairs import count_pairs, emit_pairs, group_rows
from kernels.join_probe import lookup_bytes, lookup_dense, lookup_ints_filtered, lookup_words

__all__ = ["JoinTable"]


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
        if len(columns) != len(self.types):
            raise ValueError(f"{len(columns)} probe key columns for a JoinTable of {len(self.types)}")
        if self._subs is None and isinstance(columns[0], pa.ChunkedArray) and columns[0].num_chunks > 1:
            # one key column in many chunks (a probe side collected batch by batch): each chunk
            # probes into its slice of the ids, no concatenated copy of the column (that copy cost
            # as much as the probe itself in TPC-DS SF 1 q64 / q72 / q17 / q25)
            column = columns[0]
            _check_compatible(self.types[0], column.type)
            ids = np.empty(len(column), dtype=np.int64)
            start = 0
            for chunk in column.chunks:
                if len(chunk):
                    self._lookup_one(_plain_array(chunk), ids[start:start + len(chunk)])
                    start += len(chunk)
            return ids
        columns = [_plain_array(c) for c in columns]
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
            self._lookup_one(columns[0], ids)
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

    def _lookup_one(self, arr, ids):
        """Probe with the one key column ``arr`` (a plain array), the ids into ``ids`` (as long)."""
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
