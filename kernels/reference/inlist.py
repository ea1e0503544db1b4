"""pyarrow.compute reference for kernels/inlist.pyx: ``InList`` over ``pc.is_in``, same results.

The SQL null rules are those of the engine's ``in_list`` evaluation: NULL IN (...) is NULL, and
x IN (..., NULL) is NULL when x is not found.
"""
from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["InList", "supports_in_list"]


def _plain_type(t: pa.DataType) -> pa.DataType:
    if pa.types.is_dictionary(t) or pa.types.is_run_end_encoded(t):
        return t.value_type
    return t


def supports_in_list(t: pa.DataType) -> bool:
    """See ``kernels.inlist.supports_in_list``."""
    t = _plain_type(t)
    return (pa.types.is_signed_integer(t) or pa.types.is_date32(t) or pa.types.is_timestamp(t)
            or pa.types.is_string(t) or pa.types.is_large_string(t))


class InList:
    """See ``kernels.inlist.InList``."""

    def __init__(self, values: Sequence, value_type: pa.DataType) -> None:
        value_type = _plain_type(value_type)
        if not supports_in_list(value_type):
            raise TypeError(f"IN-list kernels do not take columns of type {value_type}")
        self.value_type = value_type
        values = list(values)
        self.has_null = any(v is None for v in values)
        present = [v for v in values if v is not None]
        if pa.types.is_integer(value_type):
            # Values outside the column's type can never be equal to a row: drop them.
            info = pa.array(present, type=pa.int64())
            lo, hi = -(2 ** (value_type.bit_width - 1)), 2 ** (value_type.bit_width - 1) - 1
            info = info.filter(pc.and_(pc.greater_equal(info, lo), pc.less_equal(info, hi)))
            self._set = info.cast(value_type).unique()
        else:
            self._set = pa.array(present, type=value_type).unique()
        self.size = len(self._set)

    def contains(self, arr: pa.Array) -> pa.BooleanArray:
        """See ``kernels.inlist.InList.contains``."""
        if not isinstance(arr, pa.Array):
            raise TypeError(f"expected a pyarrow Array, got {type(arr).__name__}")
        if pa.types.is_dictionary(arr.type):
            arr = arr.dictionary_decode()
        elif pa.types.is_run_end_encoded(arr.type):
            arr = pc.run_end_decode(arr)
        value_set = self._set.cast(arr.type) if self._set.type != arr.type else self._set
        found = pc.is_in(arr, value_set=value_set, skip_nulls=True)
        if self.has_null:
            found = pc.if_else(found, True, pa.scalar(None, pa.bool_()))
        return pc.if_else(pc.is_null(arr), pa.scalar(None, pa.bool_()), found)
