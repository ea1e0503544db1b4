"""String kernels over Arrow string / large_string buffers: MySQL's CHAR_LENGTH, SUBSTRING and the
fused LENGTH(SUBSTRING(...)) / CHAR_LENGTH(SUBSTRING(...)) that never builds the substrings.

Positions and lengths count UTF-8 characters (a character starts at every byte that is not
``10xxxxxx``), as MySQL does for utf8mb4 text. ``SUBSTRING(s, pos[, len])`` (MySQL semantics):

- ``pos > 0``: from character ``pos`` (1-based); ``pos`` past the end gives '';
- ``pos < 0``: from the ``-pos``-th character counted from the end; ``-pos`` longer than the string
  gives '' (not the whole string);
- ``pos = 0``: '';
- ``len`` absent: to the end; ``len <= 0``: ''; otherwise at most ``len`` characters.

Null rows stay null (the input's validity bitmap is reused). When the bytes a batch's rows span are
all ASCII (checked once per batch, eight bytes at a time), characters are bytes and every result is
arithmetic on the offsets alone; otherwise each row walks only the bytes it needs.

``kernels/reference/strings.py`` defines the same results with pyarrow.compute; the tests hold both
to them and to DuckDB.
"""
cimport cython
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from libc.string cimport memcpy

from kernels.fused_types cimport offset_t

import numpy as np
import pyarrow as pa

__all__ = ["char_length", "substring", "substring_length", "is_ascii", "substring_bounds",
           "substring_lengths", "char_lengths"]

cdef uint8_t _EMPTY[8]


cdef inline void _bounds(const uint8_t *s, int64_t n, bint ascii, int64_t start, int64_t length,
                         bint has_length, int64_t *begin, int64_t *end) noexcept nogil:
    """Byte range [begin, end) of SUBSTRING(s, start[, length]) within a row of ``n`` bytes."""
    cdef int64_t b, e, k
    if start == 0 or (has_length and length <= 0):
        begin[0] = 0
        end[0] = 0
        return
    if start > 0:
        if ascii:
            b = start - 1 if start - 1 < n else n
        else:
            b = _skip_forward(s, 0, n, start - 1)
    else:
        if ascii:
            if -start > n:
                begin[0] = 0
                end[0] = 0
                return
            b = n + start
        else:
            b = n
            k = -start
            while k > 0 and b > 0:
                b -= 1
                while b > 0 and _continuation(s[b]):
                    b -= 1
                k -= 1
            if k > 0:               # fewer than -start characters: MySQL gives ''
                begin[0] = 0
                end[0] = 0
                return
    if not has_length:
        e = n
    elif ascii:
        e = b + length if length < n - b else n
    else:
        e = _skip_forward(s, b, n, length)
    begin[0] = b
    end[0] = e


cdef int _check_offsets(const offset_t[::1] offsets, Py_ssize_t size) except -1:
    cdef Py_ssize_t i, n = offsets.shape[0] - 1, bad = -1
    if n < 0:
        raise ValueError("offsets must hold at least one entry")
    with nogil:
        if offsets[0] < 0 or <int64_t>offsets[n] > size:
            bad = 0
        else:
            for i in range(n):
                if offsets[i + 1] < offsets[i]:
                    bad = i
                    break
    if bad >= 0:
        raise ValueError(f"row {bad} has offsets [{offsets[bad]}, {offsets[bad + 1]}) that decrease or leave "
                         f"the {size}-byte data buffer (offsets span [{offsets[0]}, {offsets[n]}))")
    return 0


cdef inline const uint8_t *_base(const uint8_t[::1] data) noexcept nogil:
    return &data[0] if data.shape[0] else &_EMPTY[0]


# ---------------------------------------------------------------------------------------------------
# Low-level kernels: offsets + data in, caller-allocated outputs.


@cython.boundscheck(False)
@cython.wraparound(False)
def is_ascii(const uint8_t[::1] data):
    """Whether every byte of ``data`` is below 0x80."""
    cdef bint out
    with nogil:
        out = _ascii_range(_base(data), data.shape[0])
    return out


@cython.boundscheck(False)
@cython.wraparound(False)
def char_lengths(const offset_t[::1] offsets, const uint8_t[::1] data, int64_t[::1] out):
    """CHAR_LENGTH of each row ``data[offsets[i]:offsets[i + 1]]``. Modifies ``out`` (n slots).

    Raises
    ------
    ValueError
        If the offsets decrease or leave ``data``, or ``out`` has the wrong size.
    """
    cdef Py_ssize_t i, n = offsets.shape[0] - 1
    if out.shape[0] != n:
        raise ValueError(f"out has {out.shape[0]} slots for {n} rows")
    _check_offsets(offsets, data.shape[0])
    cdef const uint8_t *base = _base(data)
    cdef bint ascii
    with nogil:
        ascii = _ascii_range(base + offsets[0], offsets[n] - offsets[0])
        for i in range(n):
            if ascii:
                out[i] = offsets[i + 1] - offsets[i]
            else:
                out[i] = _count_chars(base + offsets[i], offsets[i + 1] - offsets[i])


@cython.boundscheck(False)
@cython.wraparound(False)
def substring_bounds(const offset_t[::1] offsets, const uint8_t[::1] data, int64_t start, int64_t length,
                     bint has_length, int64_t[::1] begin, int64_t[::1] end):
    """Byte ranges of SUBSTRING(row, start[, length]) relative to each row's first byte.

    Parameters
    ----------
    offsets : ndarray[int32 or int64]
        ``n + 1`` offsets into ``data``.
    data : ndarray[uint8]
    start, length : int
        MySQL's position and length (``length`` read only when ``has_length``).
    begin, end : ndarray[int64] of n slots
        Modified: row i's substring is ``data[offsets[i] + begin[i]:offsets[i] + end[i]]``.
    """
    cdef Py_ssize_t i, n = offsets.shape[0] - 1
    if begin.shape[0] != n or end.shape[0] != n:
        raise ValueError(f"begin and end need {n} slots")
    _check_offsets(offsets, data.shape[0])
    cdef const uint8_t *base = _base(data)
    cdef bint ascii
    with nogil:
        ascii = _ascii_range(base + offsets[0], offsets[n] - offsets[0])
        for i in range(n):
            _bounds(base + offsets[i], offsets[i + 1] - offsets[i], ascii, start, length, has_length,
                    &begin[i], &end[i])


@cython.boundscheck(False)
@cython.wraparound(False)
def substring_lengths(const offset_t[::1] offsets, const uint8_t[::1] data, int64_t start, int64_t length,
                      bint has_length, bint chars, int64_t[::1] out):
    """LENGTH (bytes) or, with ``chars``, CHAR_LENGTH of SUBSTRING(row, start[, length]) per row,
    without building the substrings. Modifies ``out`` (n slots)."""
    cdef Py_ssize_t i, n = offsets.shape[0] - 1
    cdef int64_t b = 0, e = 0, size, first
    if out.shape[0] != n:
        raise ValueError(f"out has {out.shape[0]} slots for {n} rows")
    _check_offsets(offsets, data.shape[0])
    cdef const uint8_t *base = _base(data)
    cdef bint ascii
    with nogil:
        ascii = _ascii_range(base + offsets[0], offsets[n] - offsets[0])
        if ascii and start > 0:
            # characters are bytes: min(max(size - (start - 1), 0), length) from the offsets alone
            first = start - 1
            for i in range(n):
                size = offsets[i + 1] - offsets[i] - first
                size = size if size > 0 else 0
                if has_length:
                    size = size if size < length else (length if length > 0 else 0)
                out[i] = size
        else:
            for i in range(n):
                _bounds(base + offsets[i], offsets[i + 1] - offsets[i], ascii, start, length,
                        has_length, &b, &e)
                if chars and not ascii:
                    out[i] = _count_chars(base + offsets[i] + b, e - b)
                else:
                    out[i] = e - b


@cython.boundscheck(False)
@cython.wraparound(False)
def _gather(const offset_t[::1] offsets, const uint8_t[::1] data, const int64_t[::1] begin,
            const int64_t[::1] end, offset_t[::1] out_offsets, uint8_t[::1] out_data):
    """Copy each row's [begin, end) into ``out_data``; ``out_offsets`` (n + 1) modified."""
    cdef Py_ssize_t i, n = begin.shape[0]
    cdef int64_t pos = 0, w
    cdef const uint8_t *base = _base(data)
    with nogil:
        out_offsets[0] = 0
        for i in range(n):
            w = end[i] - begin[i]
            if w:
                memcpy(&out_data[pos], base + offsets[i] + begin[i], w)
            pos += w
            out_offsets[i + 1] = <offset_t>pos


# ---------------------------------------------------------------------------------------------------
# Arrow arrays in, Arrow arrays out.


def _parts(arr):
    """(offsets ndarray, data ndarray, large) of a string / large_string Array (slices honoured)."""
    t = arr.type
    large = pa.types.is_large_string(t)
    if not (large or pa.types.is_string(t)):
        raise TypeError(f"expected a string array, got {t}")
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], dtype=np.int64 if large else np.int32, count=len(arr) + 1,
                            offset=arr.offset * (8 if large else 4)) if bufs[1] is not None else \
        np.zeros(len(arr) + 1, dtype=np.int64 if large else np.int32)
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.empty(0, np.uint8)
    return offsets, data, large


def _check_array(arr):
    if isinstance(arr, pa.ChunkedArray):
        raise TypeError("pass one Array (combine the chunks first)")
    if not isinstance(arr, pa.Array):
        raise TypeError(f"expected a pyarrow Array, got {type(arr).__name__}")


def _with_validity(values, arr, type):
    """An array of ``type`` holding ``values``'s buffers and the nulls of ``arr``."""
    if not arr.null_count:
        return values
    if arr.offset % 8 == 0:
        validity = arr.buffers()[0].slice(arr.offset // 8)
        return pa.Array.from_buffers(type, len(arr), [validity] + values.buffers()[1:],
                                     null_count=arr.null_count)
    mask = np.asarray(arr.is_null())
    return pa.Array.from_buffers(type, len(arr), [pa.array(~mask).buffers()[1]] + values.buffers()[1:],
                                 null_count=arr.null_count)


def char_length(arr):
    """CHAR_LENGTH of each row of a string Array: int64, nulls kept."""
    _check_array(arr)
    offsets, data, _ = _parts(arr)
    out = np.empty(len(arr), dtype=np.int64)
    char_lengths(offsets, data, out)
    return _with_validity(pa.array(out), arr, pa.int64())


def _position(start, length):
    for name, v in (("start", start), ("length", length)):
        if v is not None and not isinstance(v, (int, np.integer)):
            raise TypeError(f"SUBSTRING {name} must be an integer, not {type(v).__name__}")
    # Beyond +-2**62 every string is shorter: clamp so the kernels' int64 arithmetic cannot overflow.
    limit = 1 << 62
    start = max(-limit, min(int(start), limit))
    return start, (0 if length is None else max(-limit, min(int(length), limit))), length is not None


def substring_length(arr, start, length=None, chars=False):
    """LENGTH (bytes) or, with ``chars``, CHAR_LENGTH of SUBSTRING(arr, start[, length]): int64,
    nulls kept; the substrings are never built."""
    _check_array(arr)
    start, n, has_length = _position(start, length)
    offsets, data, _ = _parts(arr)
    out = np.empty(len(arr), dtype=np.int64)
    substring_lengths(offsets, data, start, n, has_length, chars, out)
    return _with_validity(pa.array(out), arr, pa.int64())


def substring(arr, start, length=None):
    """SUBSTRING(arr, start[, length]) with MySQL's character positions: an Array of ``arr``'s
    type, nulls kept."""
    _check_array(arr)
    start, n, has_length = _position(start, length)
    offsets, data, large = _parts(arr)
    rows = len(arr)
    begin = np.empty(rows, dtype=np.int64)
    end = np.empty(rows, dtype=np.int64)
    substring_bounds(offsets, data, start, n, has_length, begin, end)
    total = int((end - begin).sum())
    if not large and total >= (1 << 31):
        raise OverflowError(f"SUBSTRING result of {total} bytes does not fit a string array; use large_string")
    out_offsets = np.empty(rows + 1, dtype=np.int64 if large else np.int32)
    out_data = np.empty(total, dtype=np.uint8)
    _gather(offsets, data, begin, end, out_offsets, out_data)
    values = pa.Array.from_buffers(arr.type, rows, [None, pa.py_buffer(out_offsets), pa.py_buffer(out_data)])
    return _with_validity(values, arr, arr.type)
