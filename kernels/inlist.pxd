# The IN-list loops and the Bloom filter's hashing, for kernels that cimport them (a runtime join
# filter built from a join's build side uses the same filter layout). Definitions and contracts live
# in kernels/src/canopy_filter.h; kernels/inlist.pyi declares the Python API for type checkers.
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint64_t


cdef extern from "canopy_filter.h" nogil:
    int CANOPY_SHORT_LIST

    void canopy_any_eq_i8(const int8_t *v, size_t n, const int8_t *lst, size_t k, uint8_t *out)
    void canopy_any_eq_i16(const int16_t *v, size_t n, const int16_t *lst, size_t k, uint8_t *out)
    void canopy_any_eq_i32(const int32_t *v, size_t n, const int32_t *lst, size_t k, uint8_t *out)
    void canopy_any_eq_i64(const int64_t *v, size_t n, const int64_t *lst, size_t k, uint8_t *out)

    uint64_t canopy_int_key_hash(int64_t v)
    uint64_t canopy_bloom_mask(uint64_t h)
    size_t canopy_bloom_word(uint64_t h, int log2_words)
