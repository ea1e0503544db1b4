"""Filter kernels: compare a column with constants, into SQL three-valued results.

A predicate's result is a ``pa.BooleanArray`` of the column's length, at offset 0, whose validity is
SQL's NULL (a comparison with NULL is NULL) and whose data bits are zero under nulls; AND / OR / NOT
combine such arrays with Kleene logic, and ``selection`` turns one into the mask WHERE keeps (NULL
is not selected). The loops live in ``kernels/src/canopy_filter.h``; ``kernels/reference/filter.py``
computes the same results with ``pyarrow.compute`` and the tests hold the two to identical output.

Columns:

- int8..int64, date32 (days), timestamp (int64 ticks): every operator becomes one integer range test
  ``lo <= v <= hi`` (negated for ``<>``) with the constant clamped to the type's range, so ``x < 300``
  on an int8 column is "all rows" and ``x = 2.5`` is "no row".
- float32 / float64: IEEE comparisons (NaN is false under everything but ``<>``).
- decimal128(p, s): the stored 128-bit integers are compared directly; a constant of another scale is
  rescaled to s exactly (``x < 1.005`` at scale 2 is ``x <= 1.00``), never by rounding.
- string / large_string: ``match_string`` for equality, prefix (``LIKE 'abc%'``), suffix and
  contains (``LIKE '%abc%'``), bytewise.
- dictionary arrays: the predicate runs once over the dictionary, then rows take their entry's result
  by code. Run-end-encoded arrays: once per run; ``count_matches`` never expands the runs.
"""
cimport cython
from libc.stdint cimport (int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t,
                          uint64_t)
from libc.string cimport memcpy, memset

from kernels.fused_types cimport code_t, float_t, offset_t

import decimal
import functools
import operator

import numpy as np
import pyarrow as pa

__all__ = [
    "OPERATORS",
    "STRING_MATCHES",
    "compare",
    "match_string",
    "count_matches",
    "and_kleene",
    "or_kleene",
    "not_kleene",
    "selection",
    "count_true",
    "supports_compare",
    "range_integers",
    "compare_floats",
    "range_decimal128",
    "match_strings",
    "gather_bits",
    "expand_runs",
    "count_run_bits",
    "copy_bits",
    "kleene_and_bits",
    "kleene_or_bits",
]

OPERATORS = ("eq", "ne", "lt", "le", "gt", "ge", "between")
STRING_MATCHES = ("equal", "prefix", "suffix", "contains")
_FLOAT_OPS = {"eq": CANOPY_EQ, "ne": CANOPY_NE, "lt": CANOPY_LT, "le": CANOPY_LE, "gt": CANOPY_GT,
              "ge": CANOPY_GE, "between": CANOPY_BETWEEN}
_STRING_KINDS = {"equal": CANOPY_STR_EQUAL, "prefix": CANOPY_STR_PREFIX,
                 "suffix": CANOPY_STR_SUFFIX, "contains": CANOPY_STR_CONTAINS}

ctypedef fused int_t:
    int8_t
    int16_t
    int32_t
    int64_t


ctypedef fused run_t:
    int16_t
    int32_t
    int64_t

cdef uint8_t _EMPTY_BYTES[8]


def _check_bits(out, Py_ssize_t n):
    if out.shape[0] < (n + 7) // 8:
        raise ValueError(f"bitmap of {out.shape[0]} bytes is too short for {n} rows")


# ---------------------------------------------------------------------------------------------------
# Low-level kernels: buffers in, caller-allocated packed bitmaps (LSB first, bit i = row i) out.


@cython.boundscheck(False)
@cython.wraparound(False)
def range_integers(const int_t[::1] values, int_t lo, int_t hi, bint negate, uint8_t[::1] out):
    """Test ``lo <= v <= hi`` for each value.

    Parameters
    ----------
    values : ndarray[int8, int16, int32 or int64]
    lo, hi : int
        Bounds in the values' type, ``lo <= hi``.
    negate : bool
        Write the opposite (``<>`` is the negated range ``[c, c]``).
    out : ndarray[uint8] of at least ``ceil(len(values) / 8)`` bytes
        Modified: bit i is ``(lo <= values[i] <= hi) != negate``; bits past the last row are zero.
    """
    cdef Py_ssize_t n = values.shape[0]
    _check_bits(out, n)
    if lo > hi:
        raise ValueError(f"empty range [{lo}, {hi}]")
    if n == 0:
        return
    with nogil:
        if int_t is int8_t:
            canopy_range_i8(&values[0], n, lo, hi, negate, &out[0])
        elif int_t is int16_t:
            canopy_range_i16(&values[0], n, lo, hi, negate, &out[0])
        elif int_t is int32_t:
            canopy_range_i32(&values[0], n, lo, hi, negate, &out[0])
        else:
            canopy_range_i64(&values[0], n, lo, hi, negate, &out[0])


@cython.boundscheck(False)
@cython.wraparound(False)
def compare_floats(const float_t[::1] values, int op, float_t a, float_t b, uint8_t[::1] out):
    """Compare each value with ``a`` (or test ``a <= v <= b`` for BETWEEN).

    Parameters
    ----------
    values : ndarray[float32 or float64]
    op : int
        One of the ``CANOPY_EQ .. CANOPY_BETWEEN`` codes (see ``OPERATORS``' order).
    a, b : float
        The constant(s); ``b`` is read by BETWEEN only.
    out : ndarray[uint8]
        Modified: bit i is the comparison of row i.
    """
    cdef Py_ssize_t n = values.shape[0]
    _check_bits(out, n)
    if not 0 <= op <= CANOPY_BETWEEN:
        raise ValueError(f"unknown comparison code {op}")
    if n == 0:
        return
    with nogil:
        if float_t is float:
            canopy_cmp_f32(&values[0], n, op, a, b, &out[0])
        else:
            canopy_cmp_f64(&values[0], n, op, a, b, &out[0])


@cython.boundscheck(False)
@cython.wraparound(False)
def range_decimal128(const uint64_t[::1] words, lo, hi, bint negate, uint8_t[::1] out):
    """Test ``lo <= v <= hi`` on decimal128 values taken as 128-bit scaled integers.

    Parameters
    ----------
    words : ndarray[uint64] of ``2 * rows`` words
        The Arrow data buffer from the first row: (low, high) little-endian halves per row.
    lo, hi : int
        Bounds as scaled integers in ``[-2**127, 2**127 - 1]``, ``lo <= hi``.
    negate : bool
    out : ndarray[uint8]
        Modified: bit i is ``(lo <= v_i <= hi) != negate``.
    """
    cdef Py_ssize_t n = words.shape[0] // 2
    if words.shape[0] % 2:
        raise ValueError("decimal128 rows are two words each")
    _check_bits(out, n)
    if not (-2**127 <= lo <= hi <= 2**127 - 1):
        raise ValueError(f"bad decimal128 range [{lo}, {hi}]")
    cdef uint64_t lo_low = lo & 0xFFFFFFFFFFFFFFFF, hi_low = hi & 0xFFFFFFFFFFFFFFFF
    cdef int64_t lo_high = lo >> 64, hi_high = hi >> 64
    if n == 0:
        return
    with nogil:
        canopy_range_d128(&words[0], n, lo_low, lo_high, hi_low, hi_high, negate, &out[0])


@cython.boundscheck(False)
@cython.wraparound(False)
def match_strings(const offset_t[::1] offsets, const uint8_t[::1] data, int kind,
                  const uint8_t[::1] needle, uint8_t[::1] out):
    """Match each string against ``needle`` bytewise.

    Parameters
    ----------
    offsets : ndarray[int32 or int64]
        ``rows + 1`` offsets into ``data`` from the array's first row.
    data : ndarray[uint8]
        The whole Arrow data buffer (may be empty).
    kind : int
        ``CANOPY_STR_EQUAL``, ``_PREFIX``, ``_SUFFIX`` or ``_CONTAINS`` (``STRING_MATCHES``' order).
    needle : ndarray[uint8]
    out : ndarray[uint8]
        Modified: bit i says whether row i matches.

    Raises
    ------
    ValueError
        If an offset lies outside ``data`` (a malformed array).
    """
    cdef Py_ssize_t n = offsets.shape[0] - 1, i, start, bad = -1
    cdef int64_t a, b, size = data.shape[0]
    if n < 0:
        raise ValueError("offsets must hold rows + 1 entries")
    _check_bits(out, n)
    if not 0 <= kind <= CANOPY_STR_CONTAINS:
        raise ValueError(f"unknown string match code {kind}")
    cdef const uint8_t *base = &data[0] if size > 0 else &_EMPTY_BYTES[0]
    cdef const uint8_t *q = &needle[0] if needle.shape[0] > 0 else &_EMPTY_BYTES[0]
    cdef size_t k = needle.shape[0]
    cdef uint8_t byte
    with nogil:
        for start in range(0, n, 8):
            byte = 0
            for i in range(start, min(start + 8, n)):
                a = offsets[i]
                b = offsets[i + 1]
                if a < 0 or b < a or b > size:
                    bad = i
                    break
                byte |= <uint8_t>(canopy_str_match(kind, base + a, <size_t>(b - a), q, k) << (i - start))
            if bad >= 0:
                break
            out[start >> 3] = byte
    if bad >= 0:
        raise ValueError(f"row {bad} has offsets outside the {size}-byte data buffer")


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
    _check_bits(out, n)
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
    _check_bits(out, length)
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
    _check_bits(out, n)
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
def _popcount(const uint8_t[::1] bits, Py_ssize_t n):
    """Set bits among the first ``n`` of a packed bitmap (8 bytes per popcount)."""
    cdef Py_ssize_t i = 0, full = n >> 3, total = 0
    cdef uint64_t w
    _check_bits(bits, n)
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


# ---------------------------------------------------------------------------------------------------
# Three-valued results as (true bits, validity bits) at bit 0


def _zeros(Py_ssize_t n):
    return np.zeros((n + 7) // 8, dtype=np.uint8)


def _bits_of(buf, Py_ssize_t offset, Py_ssize_t n):
    """Bits [offset, offset + n) of an Arrow bitmap buffer, as a fresh-or-view uint8 array at bit 0."""
    raw = np.frombuffer(buf, dtype=np.uint8)
    if offset & 7 == 0 and not n & 7:
        return raw[offset >> 3:(offset >> 3) + (n >> 3)]
    out = _zeros(n)
    copy_bits(raw, offset, n, out)
    return out


def _validity(arr):
    """Validity bits of ``arr`` at bit 0, or None when no row is null."""
    if arr.null_count == 0:
        return None
    return _bits_of(arr.buffers()[0], arr.offset, len(arr))


def _tristate(Py_ssize_t n, t, v):
    """A BooleanArray from true bits ``t`` (zero under nulls) and validity ``v`` (None: no nulls)."""
    buffers = [None if v is None else pa.py_buffer(v), pa.py_buffer(t)]
    return pa.Array.from_buffers(pa.bool_(), n, buffers, null_count=-1 if v is not None else 0)


def _with_validity(arr, t):
    """The three-valued result of a predicate whose value bits ``t`` were computed over ``arr``'s
    stored values: NULL rows of ``arr`` become NULL (and their true bits are cleared)."""
    v = _validity(arr)
    if v is not None:
        np.bitwise_and(t, v, out=t)
    return _tristate(len(arr), t, v)


def _parts(mask):
    """(true bits, validity bits or None) of any BooleanArray, at bit 0; true bits are zero under nulls."""
    if not isinstance(mask, pa.BooleanArray):
        raise TypeError(f"expected a pyarrow BooleanArray, got {type(mask).__name__}")
    n = len(mask)
    t = _bits_of(mask.buffers()[1], mask.offset, n)
    v = _validity(mask)
    if v is not None:
        t = np.bitwise_and(t, v)
    return t, v


def _full(n):
    ones = np.full((n + 7) // 8, 0xFF, dtype=np.uint8)
    if n & 7:
        ones[ones.shape[0] - 1] = (1 << (n & 7)) - 1
    return ones


def _constant_result(arr, value):
    """The result of a predicate that is ``value`` (True, False or None) on every non-null row."""
    n = len(arr)
    if value is None:
        return _tristate(n, _zeros(n), _zeros(n))
    return _with_validity(arr, _full(n) if value else _zeros(n))


# ---------------------------------------------------------------------------------------------------
# Constants in the integer domain


_INT_RANGES = {8: (-2**7, 2**7 - 1), 16: (-2**15, 2**15 - 1), 32: (-2**31, 2**31 - 1),
               64: (-2**63, 2**63 - 1)}


def _floor_ceil(c):
    """(floor, ceil) of an exact constant (int or Decimal)."""
    if isinstance(c, int):
        return c, c
    return int(c.to_integral_value(decimal.ROUND_FLOOR)), int(c.to_integral_value(decimal.ROUND_CEILING))


def _integer_range(op, a, b, tmin, tmax):
    """Turn ``v <op> a [and b]`` over integers in ``[tmin, tmax]`` into ``(lo, hi, negate)``, or
    into True / False when every / no non-null row matches."""
    fa, ca = _floor_ceil(a)
    if op == "eq":
        lo, hi, negate = (fa, fa, False) if fa == ca else (1, 0, False)
    elif op == "ne":
        if fa != ca:
            return True
        lo, hi, negate = fa, fa, True
    elif op == "lt":
        lo, hi, negate = tmin, ca - 1, False
    elif op == "le":
        lo, hi, negate = tmin, fa, False
    elif op == "gt":
        lo, hi, negate = fa + 1, tmax, False
    elif op == "ge":
        lo, hi, negate = ca, tmax, False
    else:
        fb, _ = _floor_ceil(b)
        lo, hi, negate = ca, fb, False
    lo, hi = max(lo, tmin), min(hi, tmax)
    if lo > hi:
        return negate
    if lo == tmin and hi == tmax:
        return not negate
    return lo, hi, negate


def _integer_constant(value, t):
    """An exact integer-domain constant for a column of type ``t``: the stored integer of a date or
    timestamp, the scaled integer of a decimal (as a Decimal when not integral), ints as they are."""
    if pa.types.is_decimal(t):
        if isinstance(value, float):
            raise TypeError("compare decimals with Decimal or int constants, not float")
        return decimal.Decimal(value).scaleb(t.scale, decimal.Context(prec=100))
    if pa.types.is_integer(t):
        if isinstance(value, bool) or not isinstance(value, (int, decimal.Decimal)):
            raise TypeError(f"compare integers with int or Decimal constants, not {type(value).__name__}")
        if isinstance(value, decimal.Decimal):
            if not value.is_finite():
                raise TypeError("non-finite constant")
            return value if value != value.to_integral_value() else int(value)
        return value
    return _stored_integer(value, t)


@functools.lru_cache(maxsize=1024, typed=True)
def _stored_integer(value, t):
    """A date32 or timestamp constant as stored (days, ticks in the column's unit). Kept: a scan
    compares each batch with the same constants, and Arrow's scalar cast costs ~20 us a call."""
    return pa.scalar(value, type=t).cast(_STORAGE[t.bit_width]).as_py()


_STORAGE = {32: pa.int32(), 64: pa.int64()}
_NP_INTS = {8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}


def supports_compare(t):
    """Whether ``compare`` takes columns of Arrow type ``t`` (dictionary and run-end encoded arrays
    are taken when their value type is)."""
    if pa.types.is_dictionary(t):
        return supports_compare(t.value_type)
    if pa.types.is_run_end_encoded(t):
        return supports_compare(t.value_type)
    return (pa.types.is_integer(t) and pa.types.is_signed_integer(t)) or pa.types.is_date32(t) \
        or pa.types.is_timestamp(t) or pa.types.is_float32(t) or pa.types.is_float64(t) \
        or (pa.types.is_decimal(t) and t.byte_width == 16) or pa.types.is_string(t) \
        or pa.types.is_large_string(t)


def _values(arr, dtype):
    """The stored values of a fixed-width array from its first row (zero-copy when aligned)."""
    dtype = np.dtype(dtype)
    values = np.frombuffer(arr.buffers()[1], dtype=dtype, count=len(arr), offset=arr.offset * dtype.itemsize)
    return values if values.flags.aligned else values.copy()


def _string_parts(arr):
    bufs = arr.buffers()
    otype = np.int64 if pa.types.is_large_string(arr.type) else np.int32
    offsets = _values_n(bufs[1], otype, len(arr) + 1, arr.offset)
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    return offsets, data


def _values_n(buf, dtype, count, first):
    dtype = np.dtype(dtype)
    values = np.frombuffer(buf, dtype=dtype, count=count, offset=first * dtype.itemsize)
    return values if values.flags.aligned else values.copy()


def _compare_plain(arr, op, a, b):
    t = arr.type
    n = len(arr)
    out = _zeros(n)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        if op not in ("eq", "ne"):
            raise TypeError(f"string columns support = and <> here, not {op}")
        result = _match_plain(arr, "equal", a)
        if op == "ne":
            return not_kleene(result)
        return result
    if pa.types.is_float32(t) or pa.types.is_float64(t):
        if isinstance(a, (decimal.Decimal, int)) and not isinstance(a, bool):
            a = float(a)
        if b is not None and isinstance(b, (decimal.Decimal, int)):
            b = float(b)
        if not isinstance(a, float) or (b is not None and not isinstance(b, float)):
            raise TypeError("compare floats with numeric constants")
        dtype = np.float32 if pa.types.is_float32(t) else np.float64
        compare_floats(_values(arr, dtype), _FLOAT_OPS[op], dtype(a), dtype(b if b is not None else 0.0), out)
        return _with_validity(arr, out)
    if pa.types.is_decimal(t):
        lo_hi = _integer_range(op, _integer_constant(a, t), None if b is None else _integer_constant(b, t),
                               -2**127, 2**127 - 1)
        if isinstance(lo_hi, bool):
            return _constant_result(arr, lo_hi)
        lo, hi, negate = lo_hi
        words = np.frombuffer(arr.buffers()[1], dtype=np.uint64, count=2 * n, offset=16 * arr.offset)
        if not words.flags.aligned:
            words = words.copy()
        range_decimal128(words, lo, hi, negate, out)
        return _with_validity(arr, out)
    bits = 32 if pa.types.is_date32(t) else t.bit_width
    tmin, tmax = _INT_RANGES[bits]
    lo_hi = _integer_range(op, _integer_constant(a, t), None if b is None else _integer_constant(b, t),
                           tmin, tmax)
    if isinstance(lo_hi, bool):
        return _constant_result(arr, lo_hi)
    lo, hi, negate = lo_hi
    dtype = _NP_INTS[bits]
    range_integers(_values(arr, dtype), dtype(lo), dtype(hi), negate, out)
    return _with_validity(arr, out)


def _match_plain(arr, kind, needle):
    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        raise TypeError(f"string matches need a string column, not {arr.type}")
    if not isinstance(needle, str):
        raise TypeError(f"string matches need a str constant, not {type(needle).__name__}")
    n = len(arr)
    out = _zeros(n)
    if n:
        offsets, data = _string_parts(arr)
        match_strings(offsets, data, _STRING_KINDS[kind], np.frombuffer(needle.encode(), dtype=np.uint8), out)
    return _with_validity(arr, out)


def _over_encoding(arr, plain):
    """Apply ``plain`` (a predicate over a plain array) to ``arr``: directly, over a dictionary's
    entries then by code, or over a run-end-encoded array's runs then expanded."""
    n = len(arr)
    if pa.types.is_dictionary(arr.type):
        entries = plain(arr.dictionary)
        et, ev = _parts(entries)
        indices = arr.indices
        codes = _values(indices, np.dtype(indices.type.to_pandas_dtype()))
        t = _zeros(n)
        gather_bits(et, len(entries), codes, t)
        if ev is not None:
            v = _zeros(n)
            gather_bits(ev, len(entries), codes, v)
        else:
            v = None
        iv = _validity(indices)
        if iv is not None:
            v = iv if v is None else np.bitwise_and(v, iv)
            np.bitwise_and(t, iv, out=t)
        return _tristate(n, t, v)
    if pa.types.is_run_end_encoded(arr.type):
        rt, rv = _parts(plain(arr.values))
        run_ends = arr.run_ends.to_numpy()
        t = _zeros(n)
        expand_runs(run_ends, rt, arr.offset, n, t)
        v = None
        if rv is not None:
            v = _zeros(n)
            expand_runs(run_ends, rv, arr.offset, n, v)
        return _tristate(n, t, v)
    return plain(arr)


def _check_array(arr):
    if not isinstance(arr, pa.Array):
        raise TypeError(f"expected a pyarrow Array, got {type(arr).__name__}")


# ---------------------------------------------------------------------------------------------------
# Public API


def compare(arr, op, value, value2=None):
    """Compare each row of a column with a constant.

    Parameters
    ----------
    arr : pyarrow.Array
        A column of a type ``supports_compare`` accepts (plain, dictionary or run-end encoded).
        Not modified.
    op : {"eq", "ne", "lt", "le", "gt", "ge", "between"}
        ``between`` is ``value <= v <= value2``.
    value, value2 : constant
        Python values: int (integers), Decimal or int (decimals, at any scale), float (floats),
        datetime.date (date32), datetime.datetime (timestamp), str (strings: eq and ne only).
        None (SQL NULL) makes every row NULL.

    Returns
    -------
    pyarrow.BooleanArray
        SQL's three-valued result: NULL where the row (or the constant) is NULL.

    Raises
    ------
    TypeError
        If the column's type or the constant's kind is not supported (callers fall back).
    """
    _check_array(arr)
    if op not in _FLOAT_OPS:
        raise ValueError(f"op must be one of {OPERATORS}, not {op!r}")
    if not supports_compare(arr.type):
        raise TypeError(f"cannot compare a column of type {arr.type}")
    if value is None or (op == "between" and value2 is None):
        return _constant_result(arr, None)
    return _over_encoding(arr, lambda plain: _compare_plain(plain, op, value, value2))


def match_string(arr, kind, needle):
    """Match each string against a constant, bytewise.

    Parameters
    ----------
    arr : pyarrow.Array of string or large_string (plain, dictionary or run-end encoded)
        Not modified.
    kind : {"equal", "prefix", "suffix", "contains"}
        ``prefix`` is ``LIKE 'needle%'``, ``contains`` is ``LIKE '%needle%'``.
    needle : str

    Returns
    -------
    pyarrow.BooleanArray
        NULL where the row is NULL.
    """
    _check_array(arr)
    if kind not in _STRING_KINDS:
        raise ValueError(f"kind must be one of {STRING_MATCHES}, not {kind!r}")
    return _over_encoding(arr, lambda plain: _match_plain(plain, kind, needle))


def count_matches(arr, op, value, value2=None):
    """``COUNT(*) WHERE arr <op> value``: the number of rows where the comparison is TRUE.

    On a run-end-encoded array the comparison runs once per run and the count adds run lengths, so
    the cost grows with the runs, never with the rows. Arguments as for ``compare``.

    Returns
    -------
    int
    """
    _check_array(arr)
    if pa.types.is_run_end_encoded(arr.type):
        if value is None or (op == "between" and value2 is None):
            return 0
        if op not in _FLOAT_OPS:
            raise ValueError(f"op must be one of {OPERATORS}, not {op!r}")
        rt, _ = _parts(compare(arr.values, op, value, value2))
        return count_run_bits(arr.run_ends.to_numpy(), rt, arr.offset, len(arr))
    return count_true(compare(arr, op, value, value2))


def and_kleene(a, b):
    """SQL AND of two three-valued results of equal length (FALSE AND NULL is FALSE).

    Returns
    -------
    pyarrow.BooleanArray
        A new array; ``a`` and ``b`` are not modified.
    """
    return _combine(a, b, kleene_and_bits, np.bitwise_and)


def or_kleene(a, b):
    """SQL OR of two three-valued results of equal length (TRUE OR NULL is TRUE)."""
    return _combine(a, b, kleene_or_bits, np.bitwise_or)


def _combine(a, b, kernel, plain_op):
    if len(a) != len(b):
        raise ValueError(f"cannot combine results of {len(a)} and {len(b)} rows")
    n = len(a)
    at, av = _parts(a)
    bt, bv = _parts(b)
    if av is None and bv is None:
        return _tristate(n, plain_op(at, bt), None)
    ot, ov = _zeros(n), _zeros(n)
    if n:
        kernel(at, _full(n) if av is None else av, bt, _full(n) if bv is None else bv, ot, ov)
    return _tristate(n, ot, ov)


def not_kleene(a):
    """SQL NOT of a three-valued result (NOT NULL is NULL). Returns a new array."""
    n = len(a)
    t, v = _parts(a)
    valid = _full(n) if v is None else v
    return _tristate(n, np.bitwise_and(np.invert(t), valid), v)


def selection(a):
    """The WHERE mask of a three-valued result: a BooleanArray without nulls, TRUE rows only."""
    t, _ = _parts(a)
    return _tristate(len(a), t, None)


def count_true(a):
    """The number of TRUE rows of a three-valued result."""
    t, _ = _parts(a)
    return _popcount(t, len(a))
