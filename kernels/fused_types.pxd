# Fused types shared by the kernel families (cimported: one definition, so every family specializes
# its loops for the same dtypes).
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t

# integer-like storage of any width and sign (values, dictionary codes)
ctypedef fused intlike_t:
    int8_t
    int16_t
    int32_t
    int64_t
    uint8_t
    uint16_t
    uint32_t
    uint64_t

# dictionary indices: the same set of types, kept apart so a kernel can take values and codes of
# different widths in one call
ctypedef fused code_t:
    int8_t
    int16_t
    int32_t
    int64_t
    uint8_t
    uint16_t
    uint32_t
    uint64_t

ctypedef fused float_t:
    float
    double

# Arrow string / binary offsets (utf8 and large_utf8)
ctypedef fused offset_t:
    int32_t
    int64_t

# signed integers only (the comparison loops of kernels/src/canopy_filter.h)
ctypedef fused signed_t:
    int8_t
    int16_t
    int32_t
    int64_t

# Arrow run-end-encoded run ends
ctypedef fused run_t:
    int16_t
    int32_t
    int64_t

# any integer-like or floating value (MIN / MAX per group)
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
