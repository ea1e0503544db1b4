# Arrow buffer helpers shared by the kernel families (one definition, inline in each user, instead of a
# copy per .pyx): `from kernels.buffers cimport _valid, _validity_ptr`.
from libc.stdint cimport uint8_t


cdef inline bint _valid(const uint8_t *validity, Py_ssize_t bit) noexcept nogil:
    return validity == NULL or (validity[bit >> 3] >> (bit & 7)) & 1


cdef inline const uint8_t *_validity_ptr(const uint8_t[::1] validity, Py_ssize_t bit_offset,
                                         Py_ssize_t n) except? NULL:
    """The Arrow validity bitmap of ``n`` rows from bit ``bit_offset``, NULL for none (every row
    valid); ValueError when the bitmap is too short."""
    if validity is None:
        return NULL
    if bit_offset < 0 or (bit_offset + n + 7) // 8 > validity.shape[0]:
        raise ValueError(f"validity of {validity.shape[0]} bytes is too short for {n} rows "
                         f"at bit {bit_offset}")
    return &validity[0] if validity.shape[0] else NULL
