# The hash table of hash group-by, for kernels that cimport it (a hash join could share it): the
# definitions and their contract live in kernels/src/canopy_groupby.h; the Python API of
# kernels/groupby.pyx is declared for type checkers in kernels/groupby.pyi.
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

    int canopy_gb_init(canopy_gb_table *t, int32_t width)
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
