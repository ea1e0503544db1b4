"""Which elements of an array a conversion rejects, found by bisection instead of one call per element
(LOAD DATA names the first bad line; SKIP ... ERRORS drops every bad row)."""
from __future__ import annotations

from typing import Callable, Optional

import pyarrow as pa


def failing_rows(values: pa.Array, convert: Callable[[pa.Array], object], leaf: int = 16) -> list[int]:
    """Indices of every element ``convert`` rejects: halves that convert are cleared in one call, so
    k bad values among n cost about k * log(n) conversions."""
    def visit(start: int, length: int) -> list[int]:
        try:
            convert(values.slice(start, length))
            return []
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
        if length <= leaf:
            return [i for i in range(start, start + length) if _fails(values.slice(i, 1), convert)]
        half = length // 2
        return visit(start, half) + visit(start + half, length - half)

    return visit(0, len(values)) if len(values) else []


def _fails(value: pa.Array, convert: Callable[[pa.Array], object]) -> bool:
    try:
        convert(value)
        return False
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return True


def first_failing(values: pa.ChunkedArray, convert: Callable[[pa.Array], object]) -> Optional[int]:
    """Index of the first element ``convert`` rejects, by bisection (conversions are element-wise)."""
    array = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    try:
        convert(array)
        return None
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    low, high = 0, len(array)  # a failing element lies in array[low:high]
    while high - low > 1:
        middle = (low + high) // 2
        try:
            convert(array.slice(low, middle - low))
            low = middle
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            high = middle
    return low
