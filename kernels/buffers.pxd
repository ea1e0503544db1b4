# Arrow buffer helpers shared by the kernel families (one definition, inline in each user, instead of a
# copy per .pyx): `from kernels.buffers cimport _valid, _validity_ptr, _data_ptr, _check_offsets`.
from libc.stdint cimport int64_t, uint8_t

from kernels.fused_types cimport offset_t

cdef extern from *:
    """
    /* Stands in for the data pointer of an empty buffer, so that a kernel never forms a pointer into a
       zero-length memoryview (one per module that cimports kernels/buffers.pxd). */
    static const unsigned char canopy_empty_bytes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    """
    const uint8_t canopy_empty_bytes[8]


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


cdef inline const uint8_t *_data_ptr(const uint8_t[::1] data) noexcept nogil:
    """The first byte of ``data``, or 8 zero bytes standing in for an empty buffer."""
    return &data[0] if data.shape[0] > 0 else &canopy_empty_bytes[0]


cdef inline int _check_offsets(const offset_t[::1] offsets, Py_ssize_t n, int64_t size) except -1:
    """Arrow string / binary offsets: ValueError naming the first of ``n`` rows whose
    ``[offsets[i], offsets[i + 1])`` is negative, decreasing or past the ``size``-byte data buffer
    (a malformed array). The caller has checked that ``offsets`` holds ``n + 1`` entries; the loops
    after it read the rows unchecked."""
    cdef Py_ssize_t i, bad = -1
    cdef bint decreasing = False
    cdef const offset_t *o
    if n <= 0:
        return 0
    o = &offsets[0]
    with nogil:
        # branch-free (vectorized): non-decreasing offsets from >= 0 to <= size are all in bounds
        for i in range(n):
            decreasing |= o[i + 1] < o[i]
        if decreasing or o[0] < 0 or <int64_t>o[n] > size:
            for i in range(n):
                if o[i] < 0 or o[i + 1] < o[i] or <int64_t>o[i + 1] > size:
                    bad = i
                    break
    if bad >= 0:
        raise ValueError(f"row {bad} has offsets [{offsets[bad]}, {offsets[bad + 1]}) outside the "
                         f"{size}-byte data buffer")
    return 0
