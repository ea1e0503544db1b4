# The hash table of hash group-by and hash join, for kernels that cimport it: the definitions and their
# contract live in kernels/src/canopy_groupby.h; the Python API of kernels/hashtable.pyx is declared
# for type checkers in kernels/hashtable.pyi.
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t


cdef extern from "canopy_groupby.h" nogil:
    int CANOPY_GB_ENOMEM
    int CANOPY_GB_ETOOMANY
    int64_t CANOPY_GB_MAX_GROUPS

    ctypedef struct canopy_gb_table:
        int64_t ngroups
        int64_t null_group
        int32_t width
        int64_t *fresh
        int32_t inline_key
        int64_t *words

    int canopy_gb_init(canopy_gb_table *t, int32_t width)
    int canopy_gb_init_inline(canopy_gb_table *t)
    int canopy_gb_reserve(canopy_gb_table *t, int64_t groups)
    void canopy_gb_free(canopy_gb_table *t)
    int64_t canopy_gb_memory(const canopy_gb_table *t)
    int canopy_gb_factorize_words(canopy_gb_table *t, const int64_t *rows, const uint8_t *validity,
                                  int64_t bit_offset, int64_t n, int64_t *ids, int64_t *n_new)
    int canopy_gb_factorize_bytes32(canopy_gb_table *t, const int32_t *offsets, const uint8_t *data,
                                    const uint8_t *validity, int64_t bit_offset, int64_t n,
                                    int64_t *ids, int64_t *n_new)
    int canopy_gb_factorize_bytes64(canopy_gb_table *t, const int64_t *offsets, const uint8_t *data,
                                    const uint8_t *validity, int64_t bit_offset, int64_t n,
                                    int64_t *ids, int64_t *n_new)


cdef class HashTable:
    cdef canopy_gb_table table
    cdef bint ready
    cdef _fresh_rows(self, int64_t n_new)


cdef extern from "canopy_groupby.h" nogil:
    uint64_t canopy_hash_word(uint64_t w)

    ctypedef struct canopy_ds_set:
        int64_t size

    int canopy_ds_init(canopy_ds_set *t)
    void canopy_ds_free(canopy_ds_set *t)
    int canopy_ds_reserve(canopy_ds_set *t, int64_t keys)
    int64_t canopy_ds_count(const canopy_ds_set *t)
    int canopy_ds_insert(canopy_ds_set *t, const int64_t *keys, const uint8_t *validity,
                         int64_t bit_offset, int64_t n)


cdef class DistinctSet:
    cdef canopy_ds_set table
    cdef bint ready
