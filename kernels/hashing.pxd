# The row hash, for kernels that cimport it (the hashing family's modules, hash join, hash group-by):
# `from kernels.hashing cimport canopy_hash_word`. The definitions and their contract live in
# kernels/src/canopy_hash.h; the Python functions of kernels/hashing.pyx (its re-exports included) are
# declared for type checkers in kernels/hashing.pyi.
from libc.stdint cimport uint8_t, uint32_t, uint64_t


cdef extern from "canopy_hash.h" nogil:
    uint64_t CANOPY_NULL_HASH
    uint64_t CANOPY_CANONICAL_NAN_BITS

    uint64_t canopy_hash_word(uint64_t w)
    uint64_t canopy_hash_bytes(const uint8_t *p, size_t n)
    uint64_t canopy_hash_combine(uint64_t h, uint64_t c)
    uint64_t canopy_double_bits(double d)
    uint32_t canopy_fastrange32(uint64_t h, uint32_t n)
