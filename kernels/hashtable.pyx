"""The hash table of hash group-by and hash join: keys -> dense ids in order of first occurrence
(``HashTable``), and the count-only set of COUNT(DISTINCT) (``DistinctSet``).

The tables are plain C (kernels/src/canopy_groupby.h, declared in kernels/hashtable.pxd); the
group-by's ``Factorizer`` (kernels/groupby_factorize.pyx) and the join's ``JoinTable``
(kernels/join_table.pyx) drive them, and the join's probe loops (kernels/join_probe.pyx) read them.
"""
cimport cython
from libc.stdint cimport int32_t, int64_t, uint8_t
from libc.string cimport memcpy

from kernels.buffers cimport _check_offsets, _data_ptr, _validity_ptr
from kernels.fused_types cimport offset_t

import numpy as np

__all__ = ["HashTable", "DistinctSet"]


cdef int _raise_table_error(int rc) except -1:
    if rc == CANOPY_GB_ENOMEM:
        raise MemoryError("hash group-by table: out of memory")
    if rc == CANOPY_GB_ETOOMANY:
        raise OverflowError(f"hash group-by table: more than {CANOPY_GB_MAX_GROUPS} groups")
    return 0


cdef class HashTable:
    """The C table of kernels/src/canopy_groupby.h: keys -> dense ids, first occurrence first.

    Parameters
    ----------
    width : int
        Int64 words per key (words mode), or 0 for byte-string keys (bytes mode).
    inline_keys : bool
        One-word keys kept in the slots beside their ids (``width`` must be 1): one cache line per
        probe. The join's lookups (kernels/join_probe.pyx) read only tables without it.
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
    def factorize_bytes(self, const offset_t[::1] offsets, const uint8_t[::1] data,
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
        cdef Py_ssize_t n = offsets.shape[0] - 1
        cdef int64_t n_new = 0
        cdef int rc = 0
        if self.table.width != 0:
            raise ValueError("factorize_bytes needs a bytes-mode table (width 0)")
        if n < 0 or ids.shape[0] != n:
            raise ValueError(f"ids has {ids.shape[0]} slots for {offsets.shape[0]} offsets")
        cdef const uint8_t *valid = _validity_ptr(validity, bit_offset, n)
        if n == 0:
            return np.empty(0, dtype=np.int64)
        _check_offsets(offsets, n, data.shape[0])
        cdef const uint8_t *base = _data_ptr(data)
        with nogil:
            if offset_t is int32_t:
                rc = canopy_gb_factorize_bytes32(&self.table, <const int32_t *>&offsets[0], base,
                                                 valid, bit_offset, n, &ids[0], &n_new)
            else:
                rc = canopy_gb_factorize_bytes64(&self.table, <const int64_t *>&offsets[0], base,
                                                 valid, bit_offset, n, &ids[0], &n_new)
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
