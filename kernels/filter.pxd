# Shared by the filter family (kernels/filter.pyx and the modules it re-exports): the comparison loops
# of kernels/src/canopy_filter.h, where their definitions and contracts live, and the bitmap length
# check of every low-level kernel: `from kernels.filter cimport canopy_pack_bytes, _check_bits`. The
# Python functions are declared for type checkers in kernels/filter.pyi.
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint64_t


cdef extern from "canopy_filter.h" nogil:
    int CANOPY_EQ
    int CANOPY_NE
    int CANOPY_LT
    int CANOPY_LE
    int CANOPY_GT
    int CANOPY_GE
    int CANOPY_BETWEEN
    int CANOPY_STR_EQUAL
    int CANOPY_STR_PREFIX
    int CANOPY_STR_SUFFIX
    int CANOPY_STR_CONTAINS

    void canopy_pack_bytes(const uint8_t *m, size_t n, uint8_t *out)
    void canopy_range_i8(const int8_t *v, size_t n, int8_t lo, int8_t hi, int negate, uint8_t *out)
    void canopy_range_i16(const int16_t *v, size_t n, int16_t lo, int16_t hi, int negate, uint8_t *out)
    void canopy_range_i32(const int32_t *v, size_t n, int32_t lo, int32_t hi, int negate, uint8_t *out)
    void canopy_range_i64(const int64_t *v, size_t n, int64_t lo, int64_t hi, int negate, uint8_t *out)
    void canopy_cmp_f32(const float *v, size_t n, int op, float a, float b, uint8_t *out)
    void canopy_cmp_f64(const double *v, size_t n, int op, double a, double b, uint8_t *out)
    void canopy_range_d128(const uint64_t *words, size_t n, uint64_t lo_low, int64_t lo_high,
                           uint64_t hi_low, int64_t hi_high, int negate, uint8_t *out)
    int canopy_str_match(int kind, const uint8_t *s, size_t length, const uint8_t *q, size_t k)


cdef inline int _check_bits(Py_ssize_t nbytes, Py_ssize_t n) except -1:
    """ValueError unless a packed bitmap of ``nbytes`` bytes holds ``n`` rows."""
    if nbytes < (n + 7) // 8:
        raise ValueError(f"bitmap of {nbytes} bytes is too short for {n} rows")
    return 0
