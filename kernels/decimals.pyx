"""Exact DECIMAL division (/, DIV, %), multiplication, addition and subtraction on decimal128 scaled
integers (MySQL's rules).

Arrow's decimal kernels do not fit MySQL's rules: its division truncates instead of rounding and
needs a result precision of p1 + p2 + 1 digits (past 38 a caller had to fall back to float64), its
multiplication needs p1 + p2 + 1 digits too, and its SUM wraps silently past 2**127. These kernels
compute each row's quotient or product exactly with 128-bit integers (256-bit intermediates when a
value needs them, kernels/src/canopy_decimal.h), round half away from zero, and report the first row
whose result does not fit the result precision instead of wrapping. Sums and differences (which
Arrow computes exactly but through a rescaling cast per operand) run in one pass too, in 64-bit
products when the operands fit int64 (TPC-H's money always does).

Operands are the two little-endian int64 words per row of a decimal128 buffer; a step of 0 repeats
the first row (a scalar operand). ``valid`` holds one byte per row: 0 rows are skipped (a NULL
operand) and left unwritten. ``kernels/reference/decimals.py`` defines the same results with Python
integers; the tests hold both to Python's ``decimal`` module.
"""
cimport cython
from libc.stdint cimport int64_t, uint8_t

__all__ = ["decimal_divide", "decimal_multiply", "decimal_add", "DIVIDE", "INT_DIVIDE", "MOD", "FLOOR_DIVIDE",
           "CEILING_DIVIDE"]

# decimal_divide's operations (kernels/src/canopy_decimal.h): a / b rounded half away from zero;
# a DIV b truncated toward zero; a % b with the sign of a; a / b rounded down or up (FLOOR, CEILING)
DIVIDE, INT_DIVIDE, MOD, FLOOR_DIVIDE, CEILING_DIVIDE = 0, 1, 2, 3, 4

cdef extern from "canopy_decimal.h" nogil:
    int64_t cd_divide_words(const int64_t *a, int64_t a_step, const int64_t *b, int64_t b_step,
                            int64_t n, int sa, int sb, int op, int precision, int64_t *out, uint8_t *valid)
    int64_t cd_multiply_words(const int64_t *a, int64_t a_step, const int64_t *b, int64_t b_step,
                              int64_t n, int down, int precision, int64_t *out, const uint8_t *valid)
    int64_t cd_add_words(const int64_t *a, int64_t a_step, const int64_t *b, int64_t b_step, int64_t n,
                         int shift_a, int shift_b, int subtract, int precision, int64_t *out,
                         const uint8_t *valid)


cdef _check(const int64_t[::1] a, Py_ssize_t a_step, const int64_t[::1] b, Py_ssize_t b_step,
            int64_t[::1] out, const uint8_t[::1] valid, int precision):
    cdef Py_ssize_t n = valid.shape[0]
    if out.shape[0] != 2 * n:
        raise ValueError(f"out has {out.shape[0]} words for {n} rows; expected {2 * n}")
    for words, step, name in ((a, a_step, "a"), (b, b_step, "b")):
        if step not in (0, 1):
            raise ValueError(f"{name}_step must be 0 or 1, not {step}")
        if n and words.shape[0] < (2 * n if step else 2):
            raise ValueError(f"{name} has {words.shape[0]} words for {n} rows")
    if not 1 <= precision <= 38:
        raise ValueError(f"precision must be within 1..38, not {precision}")


@cython.boundscheck(False)
@cython.wraparound(False)
def decimal_divide(const int64_t[::1] a, Py_ssize_t a_step, const int64_t[::1] b, Py_ssize_t b_step,
                   int shift_a, int shift_b, int op, int precision, int64_t[::1] out, uint8_t[::1] valid):
    """Per row, ``round_half_away(a * 10**shift_a / (b * 10**shift_b))`` (``op`` DIVIDE), the
    quotient truncated toward zero (INT_DIVIDE), toward minus or plus infinity (FLOOR_DIVIDE,
    CEILING_DIVIDE), or the remainder of the truncated division, with the sign of ``a`` (MOD).

    Parameters
    ----------
    a, b : ndarray[int64]
        Scaled integers, two words per row (or per operand when its step is 0).
    a_step, b_step : {0, 1}
    shift_a, shift_b : int
        Powers of ten (0..76) that bring the quotient to the result's scale: for a result scale
        ``s``, ``shift_a - shift_b = s - s_a + s_b``; for MOD, those that bring both operands to
        the result's scale.
    op : {DIVIDE, INT_DIVIDE, MOD, FLOOR_DIVIDE, CEILING_DIVIDE}
    precision : int
        The result's digits: a quotient of magnitude ``10**precision`` or more is an overflow.
    out : ndarray[int64]
        Modified: two words per row.
    valid : ndarray[uint8]
        One byte per row; modified: 0 where ``b`` is 0 (SQL's x / 0 is NULL).

    Returns
    -------
    int
        -1, or the first row whose result does not fit (later rows are not computed).
    """
    _check(a, a_step, b, b_step, out, valid, precision)
    if not (0 <= shift_a <= 76 and 0 <= shift_b <= 76):
        raise ValueError(f"shifts must be within 0..76, not {shift_a}, {shift_b}")
    if op not in (DIVIDE, INT_DIVIDE, MOD, FLOOR_DIVIDE, CEILING_DIVIDE):
        raise ValueError(f"op must be one of DIVIDE, INT_DIVIDE, MOD, FLOOR_DIVIDE, CEILING_DIVIDE, not {op}")
    cdef Py_ssize_t n = valid.shape[0]
    cdef int64_t result
    if n == 0:
        return -1
    with nogil:
        result = cd_divide_words(&a[0], a_step, &b[0], b_step, n, shift_a, shift_b, op, precision,
                                 &out[0], &valid[0])
    return result


@cython.boundscheck(False)
@cython.wraparound(False)
def decimal_multiply(const int64_t[::1] a, Py_ssize_t a_step, const int64_t[::1] b, Py_ssize_t b_step,
                     int down, int precision, int64_t[::1] out, const uint8_t[::1] valid):
    """Per row, ``round_half_away(a * b / 10**down)`` (``down`` > 0 when the result's scale is
    capped below s_a + s_b). Parameters as ``decimal_divide``; ``valid`` is not modified.

    Returns
    -------
    int
        -1, or the first row whose product does not fit ``precision`` digits.
    """
    _check(a, a_step, b, b_step, out, valid, precision)
    if not 0 <= down <= 76:
        raise ValueError(f"down must be within 0..76, not {down}")
    cdef Py_ssize_t n = valid.shape[0]
    cdef int64_t result
    if n == 0:
        return -1
    with nogil:
        result = cd_multiply_words(&a[0], a_step, &b[0], b_step, n, down, precision, &out[0], &valid[0])
    return result


@cython.boundscheck(False)
@cython.wraparound(False)
def decimal_add(const int64_t[::1] a, Py_ssize_t a_step, const int64_t[::1] b, Py_ssize_t b_step,
                int shift_a, int shift_b, bint subtract, int precision, int64_t[::1] out,
                const uint8_t[::1] valid):
    """Per row, ``a * 10**shift_a + b * 10**shift_b`` (``a * 10**shift_a - b * 10**shift_b`` when
    ``subtract``): a sum or difference at the result's scale, exact. Parameters as
    ``decimal_divide`` (shifts within 0..38); ``valid`` is not modified.

    Returns
    -------
    int
        -1, or the first row whose result does not fit ``precision`` digits.
    """
    _check(a, a_step, b, b_step, out, valid, precision)
    if not (0 <= shift_a <= 38 and 0 <= shift_b <= 38):
        raise ValueError(f"shifts must be within 0..38, not {shift_a}, {shift_b}")
    cdef Py_ssize_t n = valid.shape[0]
    cdef int64_t result
    if n == 0:
        return -1
    with nogil:
        result = cd_add_words(&a[0], a_step, &b[0], b_step, n, shift_a, shift_b, subtract, precision,
                              &out[0], &valid[0])
    return result
