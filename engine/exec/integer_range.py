"""Which values fall outside an integer column's declared range (MySQL strict mode's error 1264).

Arrow holds several SQL integer types in a wider type than they declare (MEDIUMINT in int32, INT
UNSIGNED in int64, BIGINT UNSIGNED in DECIMAL(20, 0)), so a value can fit the array and not the column.
Writes (INSERT, UPDATE, LOAD DATA, loads of Arrow data) check with :func:`first_out_of_range`, one
vectorised comparison per bound, and skip the check when the source's own type already fits.

>>> from engine import types as T
>>> first_out_of_range(pa.array([3, 255, 256, -1]), T.UTINYINT)
2
>>> first_out_of_range(pa.array([3, None]), T.UTINYINT) is None
True
"""
from __future__ import annotations

import decimal
from typing import Optional, Union

import pyarrow as pa
import pyarrow.compute as pc

from engine import types as T

Values = Union[pa.Array, pa.ChunkedArray]

_INTEGER_LIMITS = {8: (-2**7, 2**7 - 1), 16: (-2**15, 2**15 - 1), 32: (-2**31, 2**31 - 1),
                   64: (-2**63, 2**63 - 1)}


def holds(source: T.SqlType, target: T.SqlType) -> bool:
    """Whether every value of ``source`` is in ``target``'s declared range (no check needed)."""
    wanted, given = T.integer_range(target), T.integer_range(source)
    if wanted is None:
        return True
    if source.kind == "bool" or source.kind == "null":
        return True
    return given is not None and wanted[0] <= given[0] and given[1] <= wanted[1]


def first_out_of_range(values: Values, target: T.SqlType) -> Optional[int]:
    """The index of the first value of ``values`` (integers or whole decimals) outside ``target``'s
    range, None when all fit (NULLs fit)."""
    mask = out_of_range(values, target)
    return None if mask is None else pc.index(mask, True).as_py()


def out_of_range(values: Values, target: T.SqlType) -> Optional[Values]:
    """A mask of the values outside ``target``'s range (false for NULL), or None when all fit."""
    bounds = T.integer_range(target)
    if bounds is None or len(values) == values.null_count:
        return None
    low, high = pc.min_max(values).values()
    if bounds[0] <= low.as_py() and high.as_py() <= bounds[1]:
        return None
    outside = None
    for bound, compare in ((bounds[0], pc.less), (bounds[1], pc.greater)):
        scalar = _scalar(bound, values.type)
        if scalar is None:          # the bound lies beyond the array's type: no value passes it
            continue
        side = compare(values, scalar)
        outside = side if outside is None else pc.or_(outside, side)
    return pc.fill_null(outside, False)


def _scalar(bound: int, t: pa.DataType) -> Optional[pa.Scalar]:
    if pa.types.is_integer(t):
        low, high = _INTEGER_LIMITS[t.bit_width]
        return pa.scalar(bound, t) if low <= bound <= high else None
    if pa.types.is_decimal(t):
        if len(str(abs(bound))) > t.precision - t.scale:
            return None
        return pa.scalar(decimal.Decimal(bound), t)
    return pa.scalar(float(bound), pa.float64())
