# The probe loops of the hash join, for kernels that cimport them: definitions and contracts live in
# kernels/src/canopy_join.h (they read the group-by table of kernels/src/canopy_groupby.h, which is
# the join's hash table); kernels/join.pyi declares the Python API for type checkers.
from libc.stdint cimport int32_t, int64_t, uint8_t

from kernels.hashtable cimport canopy_gb_table


cdef extern from "canopy_join.h" nogil:
    void canopy_join_lookup_words(const canopy_gb_table *t, const int64_t *rows, const uint8_t *validity,
                                  int64_t bit_offset, int64_t n, int64_t *ids)
    void canopy_join_lookup_bytes32(const canopy_gb_table *t, const int32_t *offsets, const uint8_t *data,
                                    const uint8_t *validity, int64_t bit_offset, int64_t n, int64_t *ids)
    void canopy_join_lookup_bytes64(const canopy_gb_table *t, const int64_t *offsets, const uint8_t *data,
                                    const uint8_t *validity, int64_t bit_offset, int64_t n, int64_t *ids)
    int64_t canopy_join_emit(const int64_t *ids, int64_t n, const int64_t *starts, int64_t num_ids,
                             const int64_t *rows, int unique, int outer, int64_t *row, int64_t *offset,
                             int64_t cap, int64_t *out_probe, int64_t *out_build)
    int64_t canopy_join_find_word(const canopy_gb_table *t, int64_t key)
    int64_t canopy_join_count(const int64_t *ids, int64_t n, const int64_t *starts, int64_t num_ids,
                              int unique, int outer)
