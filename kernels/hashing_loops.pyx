"""Row hashing, the value-hash loops: one column's buffers to one uint64 per row, null rows to the
null hash, and the fold of a column's hashes into the running hashes of a multi-column key.

Buffers in (NumPy/memoryviews), caller-allocated outputs modified; the loops release the GIL, so engine
threads can hash batches in parallel. The hash is ``kernels/src/canopy_hash.h``; what each type hashes
as is in kernels/hashing.pyx's docstring.
"""
cimport cython
from libc.stdint cimport int64_t, uint8_t, uint64_t

from kernels.buffers cimport _check_offsets, _data_ptr
from kernels.fused_types cimport code_t, float_t, intlike_t, offset_t
from kernels.hashing cimport (CANOPY_NULL_HASH, canopy_double_bits, canopy_hash_bytes,
                              canopy_hash_combine, canopy_hash_word)

__all__ = [
    "hash_integers",
    "hash_floats",
    "hash_booleans",
    "hash_fixed_size_binary",
    "hash_binary",
    "hash_dictionary_codes",
    "set_null_hashes",
    "combine_hashes",
]


@cython.boundscheck(False)
@cython.wraparound(False)
def hash_integers(const intlike_t[::1] values, uint64_t[::1] out):
    """Hash integer-like values, each widened to int64.

    Parameters
    ----------
    values : ndarray of any 8/16/32/64-bit signed or unsigned integer dtype
        Stored values; what is in slots that are null does not matter (see ``set_null_hashes``).
    out : ndarray[uint64], same length
        Modified: ``out[i] = canopy_hash_word(int64(values[i]))``.
    """
    cdef Py_ssize_t i, n = values.shape[0]
    if out.shape[0] != n:
        raise ValueError(f"out has {out.shape[0]} slots for {n} values")
    if n == 0:
        return
    cdef const intlike_t *src = &values[0]
    cdef uint64_t *dst = &out[0]
    with nogil:
        for i in range(n):
            # C's conversion to an unsigned type is modular: it sign-extends signed values and
            # zero-extends unsigned ones, which is "widen to int64, take the bits".
            dst[i] = canopy_hash_word(<uint64_t>src[i])


@cython.boundscheck(False)
@cython.wraparound(False)
def hash_floats(const float_t[::1] values, uint64_t[::1] out):
    """Hash float32/float64 values as float64, with -0.0 as 0.0 and one NaN.

    Parameters
    ----------
    values : ndarray[float32 or float64]
    out : ndarray[uint64], same length
        Modified: ``out[i] = canopy_hash_word(canonical float64 bits of values[i])``.
    """
    cdef Py_ssize_t i, n = values.shape[0]
    if out.shape[0] != n:
        raise ValueError(f"out has {out.shape[0]} slots for {n} values")
    if n == 0:
        return
    cdef const float_t *src = &values[0]
    cdef uint64_t *dst = &out[0]
    with nogil:
        for i in range(n):
            dst[i] = canopy_hash_word(canopy_double_bits(<double>src[i]))


@cython.boundscheck(False)
@cython.wraparound(False)
def hash_booleans(const uint8_t[::1] bits, Py_ssize_t bit_offset, uint64_t[::1] out):
    """Hash bit-packed booleans as the integers 0 and 1.

    Parameters
    ----------
    bits : ndarray[uint8]
        Arrow boolean data buffer (LSB-first bit order).
    bit_offset : int
        Bit index of row 0 (the Arrow array's ``offset``).
    out : ndarray[uint64]
        Modified: ``out[i] = canopy_hash_word(bit bit_offset + i)``; its length is the row count.
    """
    cdef Py_ssize_t i, j, n = out.shape[0]
    if bit_offset < 0 or (bit_offset + n + 7) // 8 > bits.shape[0]:
        raise ValueError(f"bitmap of {bits.shape[0]} bytes is too short for {n} rows at bit {bit_offset}")
    cdef uint64_t h0 = canopy_hash_word(0), h1 = canopy_hash_word(1)
    with nogil:
        for i in range(n):
            j = bit_offset + i
            out[i] = h1 if (bits[j >> 3] >> (j & 7)) & 1 else h0


@cython.boundscheck(False)
@cython.wraparound(False)
def hash_fixed_size_binary(const uint8_t[::1] data, Py_ssize_t width, uint64_t[::1] out):
    """Hash consecutive fixed-width byte strings (decimals, fixed_size_binary).

    Parameters
    ----------
    data : ndarray[uint8]
        At least ``len(out) * width`` bytes; row i is ``data[i*width:(i+1)*width]``.
    width : int
        Bytes per row (16 for decimal128).
    out : ndarray[uint64]
        Modified: ``out[i] = canopy_hash_bytes(row i)``.
    """
    cdef Py_ssize_t i, n = out.shape[0]
    if width < 0 or data.shape[0] < n * width:
        raise ValueError(f"{data.shape[0]} bytes do not hold {n} rows of width {width}")
    cdef const uint8_t *base = _data_ptr(data)
    cdef size_t w = <size_t>width
    with nogil:
        for i in range(n):
            out[i] = canopy_hash_bytes(base + <size_t>i * w, w)


@cython.boundscheck(False)
@cython.wraparound(False)
def hash_binary(const offset_t[::1] offsets, const uint8_t[::1] data, uint64_t[::1] out):
    """Hash variable-length byte strings (string, binary and their large variants).

    Parameters
    ----------
    offsets : ndarray[int32 or int64]
        ``len(out) + 1`` offsets into ``data``, starting at the array's first row (Arrow offsets
        buffer advanced by the array's ``offset``); row i is ``data[offsets[i]:offsets[i+1]]``.
    data : ndarray[uint8]
        The whole Arrow data buffer (may be empty).
    out : ndarray[uint64]
        Modified: ``out[i] = canopy_hash_bytes(row i)``.

    Raises
    ------
    ValueError
        If an offset is negative, decreasing, or past the end of ``data`` (the array is malformed).
    """
    cdef Py_ssize_t i, n = out.shape[0]
    if offsets.shape[0] != n + 1:
        raise ValueError(f"{offsets.shape[0]} offsets for {n} rows; expected {n + 1}")
    _check_offsets(offsets, n, data.shape[0])
    cdef const uint8_t *base = _data_ptr(data)
    with nogil:
        for i in range(n):
            out[i] = canopy_hash_bytes(base + offsets[i], <size_t>(offsets[i + 1] - offsets[i]))


@cython.boundscheck(False)
@cython.wraparound(False)
def hash_dictionary_codes(const uint64_t[::1] table, const code_t[::1] codes,
                          const uint8_t[::1] validity, Py_ssize_t bit_offset, uint64_t[::1] out):
    """Gather the hashes of dictionary-encoded rows from the hashes of their dictionary.

    Parameters
    ----------
    table : ndarray[uint64]
        Hash of each dictionary entry (``CANOPY_NULL_HASH`` for null entries).
    codes : ndarray of any integer dtype
        Dictionary indices, one per row. Codes in null rows are not read.
    validity : ndarray[uint8] or None
        Arrow validity bitmap of the indices, or None when no row is null.
    bit_offset : int
        Bit index of row 0 in ``validity``.
    out : ndarray[uint64], same length as ``codes``
        Modified: ``table[codes[i]]`` for valid rows, ``CANOPY_NULL_HASH`` for null rows.

    Raises
    ------
    ValueError
        If a valid row's code is outside ``[0, len(table))``.
    """
    cdef Py_ssize_t i, j, n = codes.shape[0], bad = -1
    cdef uint64_t ntable = <uint64_t>table.shape[0]
    cdef bint has_validity = validity is not None
    cdef code_t code
    if out.shape[0] != n:
        raise ValueError(f"out has {out.shape[0]} slots for {n} codes")
    if has_validity and (bit_offset < 0 or (bit_offset + n + 7) // 8 > validity.shape[0]):
        raise ValueError(f"validity of {validity.shape[0]} bytes is too short for {n} rows "
                         f"at bit {bit_offset}")
    with nogil:
        for i in range(n):
            if has_validity:
                j = bit_offset + i
                if not (validity[j >> 3] >> (j & 7)) & 1:
                    out[i] = CANOPY_NULL_HASH
                    continue
            code = codes[i]
            # Negative codes become huge as uint64, so one comparison checks both bounds.
            if <uint64_t>code >= ntable:
                bad = i
                break
            out[i] = table[<Py_ssize_t>code]
    if bad >= 0:
        raise ValueError(f"row {bad} has dictionary code {codes[bad]} outside a dictionary of "
                         f"{ntable} entries")


@cython.boundscheck(False)
@cython.wraparound(False)
def set_null_hashes(const uint8_t[::1] validity, Py_ssize_t bit_offset, uint64_t[::1] out):
    """Overwrite the hashes of null rows with the null hash.

    Parameters
    ----------
    validity : ndarray[uint8]
        Arrow validity bitmap (bit set = valid).
    bit_offset : int
        Bit index of row 0 (the Arrow array's ``offset``).
    out : ndarray[uint64]
        Modified: ``out[i] = CANOPY_NULL_HASH`` wherever row i is null; other rows are untouched.
    """
    cdef Py_ssize_t i, j, n = out.shape[0]
    if bit_offset < 0 or (bit_offset + n + 7) // 8 > validity.shape[0]:
        raise ValueError(f"validity of {validity.shape[0]} bytes is too short for {n} rows "
                         f"at bit {bit_offset}")
    with nogil:
        for i in range(n):
            j = bit_offset + i
            if not (validity[j >> 3] >> (j & 7)) & 1:
                out[i] = CANOPY_NULL_HASH


@cython.boundscheck(False)
@cython.wraparound(False)
def combine_hashes(uint64_t[::1] acc, const uint64_t[::1] hashes):
    """Fold one column's row hashes into the running hashes of the columns to its left.

    Parameters
    ----------
    acc : ndarray[uint64]
        Modified: ``acc[i] = canopy_hash_combine(acc[i], hashes[i])``.
    hashes : ndarray[uint64], same length
    """
    cdef Py_ssize_t i, n = acc.shape[0]
    if hashes.shape[0] != n:
        raise ValueError(f"cannot combine {hashes.shape[0]} hashes into {n}")
    if n == 0:
        return
    cdef uint64_t *dst = &acc[0]
    cdef const uint64_t *src = &hashes[0]
    with nogil:
        for i in range(n):
            dst[i] = canopy_hash_combine(dst[i], src[i])
