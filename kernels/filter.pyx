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

This module is the family's public face (what kernels/__init__.py and the tests import: every name of
``__all__``); each job is a module of its own, sharing kernels/filter.pxd (the C loops' declarations):

- kernels/filter_compare.pyx: the comparison loops (``range_integers``, ``compare_floats``,
  ``range_decimal128``, ``match_strings``);
- kernels/filter_bits.pyx: the bitmap loops (gather by code, expand runs, copy, Kleene AND / OR, count);
- kernels/filter_tristate.pyx: three-valued results, SQL AND / OR / NOT over them, the buffers a
  predicate reads and its application through dictionary and run-end encodings;
- kernels/filter_plain.pyx: one plain column against constants (constants turned into ranges).
"""
import pyarrow as pa

from kernels.filter_bits import (copy_bits, count_run_bits, expand_runs, gather_bits, kleene_and_bits,
                                 kleene_or_bits)
from kernels.filter_compare import compare_floats, match_strings, range_decimal128, range_integers
from kernels.filter_plain import (_FLOAT_OPS, _STRING_KINDS, OPERATORS, STRING_MATCHES, _compare_plain,
                                  _match_plain, supports_compare)
from kernels.filter_tristate import (_check_array, _constant_result, _over_encoding, _parts, and_kleene,
                                     count_true, not_kleene, or_kleene, selection)

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
