# Frame-of-reference bit-packing, for kernels that cimport it: `from kernels.bitpack cimport
# canopy_bp_unpack_block`. The format and its contract live in kernels/src/canopy_bitpack.h; the Python
# functions of kernels/bitpack.pyx are declared for type checkers in kernels/bitpack.pyi.
from libc.stdint cimport uint64_t


cdef extern from "canopy_bitpack.h" nogil:
    const int CANOPY_BP_BLOCK

    size_t canopy_bp_words(size_t n, unsigned w)
    unsigned canopy_bp_width(uint64_t range)
    void canopy_bp_pack_block(const uint64_t *inp, uint64_t *out, unsigned w)
    void canopy_bp_unpack_block(const uint64_t *inp, uint64_t *out, unsigned w)
    void canopy_bp_pack_tail(const uint64_t *inp, size_t r, uint64_t *out, unsigned w)
    void canopy_bp_unpack_tail(const uint64_t *inp, size_t r, uint64_t *out, unsigned w)
