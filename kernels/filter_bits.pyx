"""Filter kernels, the bitmap loops: packed bitmaps (LSB first, bit i = row i) gathered by
dictionary code, expanded from runs, copied from a bit offset, combined with Kleene AND / OR, counted.

Buffers in, caller-allocated bitmaps out; ``kernels/filter_tristate.pyx`` drives them for whole
three-valued results; see kernels/filter.pyx for the family.
"""
cimport cython
from libc.stdint cimport int8_t, uint8_t, uint64_t
from libc.string cimport memcpy, memset

from kernels.filter cimport _check_bits
from kernels.fused_types cimport code_t, run_t

__all__ = [
    "gather_bits",
    "expand_runs",
    "count_run_bits",
    "copy_bits",
    "kleene_and_bits",
    "kleene_or_bits",
    "popcount_bits",
]


@cython.boundscheck(False)
@cython.wraparound(False)
def gather_bits(const uint8_t[::1] table, Py_ssize_t table_size, const code_t[::1] codes,
                uint8_t[::1] out):
    """Give each row the bit of its dictionary entry.

    Parameters
    ----------
    table : ndarray[uint8]
        Packed bitmap of ``table_size`` entries (the predicate over the dictionary).
    table_size : int
    codes : ndarray of any integer dtype
        Dictionary index per row. A code outside ``[0, table_size)`` (allowed under null rows) gives 0.
    out : ndarray[uint8]
        Modified: bit i is ``table[codes[i]]``.
    """
    cdef Py_ssize_t n = codes.shape[0], i, start, whole
    cdef uint64_t c, size = <uint64_t>table_size
    cdef uint8_t byte
    cdef uint8_t lut[256]
    cdef const int8_t *small
    _check_bits(out.shape[0], n)
    if table.shape[0] < (table_size + 7) // 8:
        raise ValueError("table is shorter than table_size")
    if code_t is int8_t:
        # A byte per possible code (0 for a negative one or one past the table): no bounds test and
        # no variable shift per row, eight rows a byte unrolled (the narrowed codes of a scan's
        # dictionary columns; ~2x the general loop)
        whole = n - (n & 7)
        with nogil:
            for i in range(256):
                c = <uint64_t>i
                lut[i] = ((table[c >> 3] >> (c & 7)) & 1) if (c < 128 and c < size) else 0
            if n:
                small = &codes[0]
                for start in range(0, whole, 8):
                    out[start >> 3] = (lut[<uint8_t>small[start]] | (lut[<uint8_t>small[start + 1]] << 1)
                                       | (lut[<uint8_t>small[start + 2]] << 2) | (lut[<uint8_t>small[start + 3]] << 3)
                                       | (lut[<uint8_t>small[start + 4]] << 4) | (lut[<uint8_t>small[start + 5]] << 5)
                                       | (lut[<uint8_t>small[start + 6]] << 6) | (lut[<uint8_t>small[start + 7]] << 7))
                if whole < n:
                    byte = 0
                    for i in range(whole, n):
                        byte |= lut[<uint8_t>small[i]] << (i - whole)
                    out[whole >> 3] = byte
        return
    with nogil:
        for start in range(0, n, 8):
            byte = 0
            for i in range(start, min(start + 8, n)):
                # Negative codes wrap to huge unsigned values: one comparison checks both bounds.
                c = <uint64_t>codes[i]
                if c < size:
                    byte |= ((table[c >> 3] >> (c & 7)) & 1) << (i - start)
            out[start >> 3] = byte


@cython.boundscheck(False)
@cython.wraparound(False)
cdef inline void _set_bit_range(uint8_t *out, Py_ssize_t a, Py_ssize_t b) noexcept nogil:
    """Set bits [a, b) of out."""
    cdef Py_ssize_t i
    while a < b and (a & 7):
        out[a >> 3] |= <uint8_t>(1 << (a & 7))
        a += 1
    if b - a >= 8:
        memset(out + (a >> 3), 0xFF, <size_t>((b - a) >> 3))
        a += (b - a) & ~(<Py_ssize_t>7)
    while a < b:
        out[a >> 3] |= <uint8_t>(1 << (a & 7))
        a += 1


@cython.boundscheck(False)
@cython.wraparound(False)
def expand_runs(const run_t[::1] run_ends, const uint8_t[::1] run_bits, Py_ssize_t offset,
                Py_ssize_t length, uint8_t[::1] out):
    """Expand per-run bits to per-row bits for the rows ``[offset, offset + length)``.

    Parameters
    ----------
    run_ends : ndarray[int16, int32 or int64]
        Arrow run ends (exclusive, increasing), covering at least ``offset + length`` rows.
    run_bits : ndarray[uint8]
        Packed bitmap with one bit per run.
    offset, length : int
        The logical slice of the run-end-encoded array.
    out : ndarray[uint8], zeroed by the caller
        Modified: bit i is set when row ``offset + i``'s run has its bit set.
    """
    cdef Py_ssize_t runs = run_ends.shape[0], r, a, b, stop = offset + length
    _check_bits(out.shape[0], length)
    if run_bits.shape[0] < (runs + 7) // 8:
        raise ValueError("run_bits is shorter than the runs")
    if length and (runs == 0 or run_ends[runs - 1] < stop):
        raise ValueError(f"run ends do not cover {stop} rows")
    with nogil:
        r = _first_run(run_ends, offset)
        a = offset
        while r < runs and a < stop:
            b = min(<Py_ssize_t>run_ends[r], stop)
            if (run_bits[r >> 3] >> (r & 7)) & 1:
                _set_bit_range(&out[0], a - offset, b - offset)
            a = b
            r += 1


cdef inline Py_ssize_t _first_run(const run_t[::1] run_ends, Py_ssize_t offset) noexcept nogil:
    """The run that holds row ``offset``: the first whose end exceeds it (binary search)."""
    cdef Py_ssize_t lo = 0, hi = run_ends.shape[0], mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if run_ends[mid] <= offset:
            lo = mid + 1
        else:
            hi = mid
    return lo


@cython.boundscheck(False)
@cython.wraparound(False)
def count_run_bits(const run_t[::1] run_ends, const uint8_t[::1] run_bits, Py_ssize_t offset,
                   Py_ssize_t length):
    """Count rows of ``[offset, offset + length)`` whose run has its bit set, run by run.

    Parameters
    ----------
    run_ends, run_bits, offset, length
        As for ``expand_runs``.

    Returns
    -------
    int
        The count; the cost is the number of runs in the slice, not rows. Nothing is modified.
    """
    cdef Py_ssize_t runs = run_ends.shape[0], r, a, b, stop = offset + length, total = 0
    if run_bits.shape[0] < (runs + 7) // 8:
        raise ValueError("run_bits is shorter than the runs")
    if length and (runs == 0 or run_ends[runs - 1] < stop):
        raise ValueError(f"run ends do not cover {stop} rows")
    with nogil:
        r = _first_run(run_ends, offset)
        a = offset
        while r < runs and a < stop:
            b = min(<Py_ssize_t>run_ends[r], stop)
            if (run_bits[r >> 3] >> (r & 7)) & 1:
                total += b - a
            a = b
            r += 1
    return total


@cython.boundscheck(False)
@cython.wraparound(False)
def copy_bits(const uint8_t[::1] src, Py_ssize_t bit_offset, Py_ssize_t n, uint8_t[::1] out):
    """Copy ``n`` bits starting at ``bit_offset`` of ``src`` to bit 0 of ``out``.

    Parameters
    ----------
    src : ndarray[uint8]
        An Arrow bitmap (validity or boolean data).
    bit_offset : int
        Bit of row 0 (the array's offset).
    n : int
    out : ndarray[uint8]
        Modified: bits [0, n) are the copied bits, later bits of the last byte are zero.
    """
    cdef Py_ssize_t i, nbytes = (n + 7) // 8, k
    cdef int s = bit_offset & 7
    cdef Py_ssize_t first = bit_offset >> 3, last_src = (bit_offset + n + 7) // 8
    _check_bits(out.shape[0], n)
    if bit_offset < 0 or src.shape[0] < last_src:
        raise ValueError(f"bitmap of {src.shape[0]} bytes is too short for {n} rows at bit {bit_offset}")
    if n == 0:
        return
    with nogil:
        for i in range(nbytes):
            k = first + i
            if s == 0:
                out[i] = src[k]
            elif k + 1 < last_src:
                out[i] = <uint8_t>((src[k] >> s) | (src[k + 1] << (8 - s)))
            else:
                out[i] = <uint8_t>(src[k] >> s)
        if n & 7:
            out[nbytes - 1] &= <uint8_t>((1 << (n & 7)) - 1)


@cython.boundscheck(False)
@cython.wraparound(False)
def kleene_and_bits(const uint8_t[::1] at, const uint8_t[::1] av, const uint8_t[::1] bt,
                    const uint8_t[::1] bv, uint8_t[::1] ot, uint8_t[::1] ov):
    """Kleene AND of two three-valued bitmaps (t: true bits, zero under nulls; v: validity).

    Modifies ``ot`` (true where both are true) and ``ov`` (valid where the result is true or
    either side is false: FALSE AND NULL is FALSE). All six arrays have the same length.
    """
    cdef Py_ssize_t i, n = at.shape[0]
    if not (av.shape[0] == bt.shape[0] == bv.shape[0] == ot.shape[0] == ov.shape[0] == n):
        raise ValueError("bitmaps differ in length")
    with nogil:
        for i in range(n):
            ot[i] = at[i] & bt[i]
            ov[i] = (at[i] & bt[i]) | (av[i] & ~at[i]) | (bv[i] & ~bt[i])


@cython.boundscheck(False)
@cython.wraparound(False)
def kleene_or_bits(const uint8_t[::1] at, const uint8_t[::1] av, const uint8_t[::1] bt,
                   const uint8_t[::1] bv, uint8_t[::1] ot, uint8_t[::1] ov):
    """Kleene OR: modifies ``ot`` (either is true) and ``ov`` (true, or both sides false)."""
    cdef Py_ssize_t i, n = at.shape[0]
    if not (av.shape[0] == bt.shape[0] == bv.shape[0] == ot.shape[0] == ov.shape[0] == n):
        raise ValueError("bitmaps differ in length")
    with nogil:
        for i in range(n):
            ot[i] = at[i] | bt[i]
            ov[i] = (at[i] | bt[i]) | ((av[i] & ~at[i]) & (bv[i] & ~bt[i]))


@cython.boundscheck(False)
@cython.wraparound(False)
def popcount_bits(const uint8_t[::1] bits, Py_ssize_t n):
    """Set bits among the first ``n`` of a packed bitmap (8 bytes per popcount)."""
    cdef Py_ssize_t i = 0, full = n >> 3, total = 0
    cdef uint64_t w
    _check_bits(bits.shape[0], n)
    if n == 0:
        return 0
    with nogil:
        while i + 8 <= full:
            memcpy(&w, &bits[i], 8)
            total += __builtin_popcountll(w)
            i += 8
        while i < full:
            total += __builtin_popcountll(bits[i])
            i += 1
        if n & 7:
            total += __builtin_popcountll(bits[full] & ((1 << (n & 7)) - 1))
    return total


cdef extern from *:
    int __builtin_popcountll(unsigned long long) nogil
