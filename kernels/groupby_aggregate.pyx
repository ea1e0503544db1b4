"""Aggregating Arrow arrays by group id: ``GroupedAggregate``, one aggregate's per-group state over a
stream of batches and its final result (partial states merge with the same aggregates). The loops are
kernels/groupby_accumulate.pyx; see kernels/groupby.pyx for the family.
"""
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kernels.groupby_accumulate import (group_count, group_count_valid, group_max, group_max_decimal128,
                                        group_min, group_min_decimal128, group_sum_decimal128,
                                        group_sum_float, group_sum_int, group_sum_int64, total_sum_int)
from kernels.groupby_keys import _as_array, _validity

__all__ = ["GroupedAggregate", "supports_aggregate"]


def _agg_kind(func, t):
    if func == "count_all":
        return "count_all"
    if pa.types.is_dictionary(t):
        return "count" if func == "count" else None
    if func == "count":
        return "count"
    is_int = pa.types.is_integer(t) or pa.types.is_boolean(t)
    if func == "sum":
        if is_int:
            return "sum_int"
        if pa.types.is_decimal128(t):
            return "sum_decimal"
        if pa.types.is_floating(t) and not pa.types.is_float16(t):
            return "sum_float"
        return None
    if func in ("min", "max"):
        if pa.types.is_decimal128(t):
            return "minmax_decimal"
        if pa.types.is_boolean(t) or pa.types.is_float16(t):
            return None
        if is_int or pa.types.is_floating(t) or pa.types.is_date(t) or pa.types.is_timestamp(t) \
                or pa.types.is_time(t) or pa.types.is_duration(t):
            return "minmax"
    return None


def supports_aggregate(func: str, t) -> bool:
    """Whether ``GroupedAggregate(func, t)`` exists (``t`` may be None for ``count_all``)."""
    return _agg_kind(func, t) is not None


def _grow(a, size, fill=0):
    if a.shape[0] >= size:
        return a
    grown = np.full(max(size, 2 * a.shape[0]), fill, dtype=a.dtype)
    grown[:a.shape[0]] = a
    return grown


def _int128_to_decimal(lo, hi, t):
    words = np.empty(2 * len(lo), dtype=np.int64)
    words[0::2] = lo.view(np.int64)
    words[1::2] = hi
    return pa.Array.from_buffers(t, len(lo), [None, pa.py_buffer(words)])


# 10**38 and -10**38 as (high word, low word): the bounds of DECIMAL(38) on 128-bit sums
_HI38, _LO38 = divmod(10 ** 38, 1 << 64)
_HI38N, _LO38N = divmod(-10 ** 38, 1 << 64)


def _check_decimal38(lo, hi, wrapped):
    """Raise OverflowError when a sum ended past 2**127 (``wrapped``) or does not fit 38 digits
    (groups never seen hold 0); a SUM is never wrapped or cut silently."""
    too_big = (hi > _HI38) | ((hi == _HI38) & (lo >= _LO38))
    too_small = (hi < _HI38N) | ((hi == _HI38N) & (lo <= _LO38N))
    if wrapped or too_big.any() or too_small.any():
        raise OverflowError("DECIMAL value is out of range: a SUM does not fit DECIMAL(38)")


def _with_nulls(arr, seen):
    if seen is None or seen.all():
        return arr
    return pc.if_else(pa.array(seen == 0), pa.scalar(None, arr.type), arr)


class GroupedAggregate:
    """One aggregate's per-group state over a stream of batches.

    Parameters
    ----------
    func : {"count_all", "count", "sum", "min", "max"}
    type : pyarrow.DataType or None
        Type of the argument (None for ``count_all``); see ``supports_aggregate``.

    Results (``result``): counts as int64 (0 for a group of nulls); SUM of integers as
    decimal128(38, 0), of decimal(p, s) as decimal128(38, s), of floats as float64; MIN/MAX in the
    argument's type; SUM/MIN/MAX of a group with no non-null value are null.
    """

    def __init__(self, func, type=None):
        kind = _agg_kind(func, type)
        if kind is None:
            raise TypeError(f"no grouped {func} over {type}")
        self.func, self.type, self._kind = func, type, kind
        self._seen = None
        # Integer SUM accumulates in int64 (in _lo, _hi left 0) while rows so far x largest
        # magnitude so far bounds every group's sum below 2**63, then widens to 128 bits. So does
        # a DECIMAL of at most 18 digits (every value is its low word, |v| < 10**precision: no
        # scan for the largest): TPC-DS's DECIMAL(7, 2) money sums touch one word a group, not
        # three (group_sum_decimal128's low, high and wrap count).
        self._digits = type.precision if kind == "sum_decimal" and type.precision <= 18 else 0
        self._narrow = kind == "sum_int" or self._digits > 0
        self._bound = 0
        if kind in ("count_all", "count"):
            self._out = np.zeros(0, dtype=np.int64)
        elif kind in ("sum_int", "sum_decimal"):
            self._lo = np.zeros(0, dtype=np.uint64)
            self._hi = np.zeros(0, dtype=np.int64)
            # decimal sums: each group's wraps past +-2**127 (group_sum_decimal128); integer sums
            # cannot wrap 128 bits
            self._carry = np.zeros(0, dtype=np.int64)
        elif kind == "sum_float":
            self._out = np.zeros(0, dtype=np.float64)
        elif kind == "minmax_decimal":
            self._out = np.zeros(0, dtype=np.int64)
            self._seen = np.zeros(0, dtype=np.uint8)
        else:
            storage = type if pa.types.is_integer(type) or pa.types.is_floating(type) else \
                (pa.int64() if type.bit_width == 64 else pa.int32())
            self._storage = storage
            self._out = np.zeros(0, dtype=storage.to_pandas_dtype())
            self._seen = np.zeros(0, dtype=np.uint8)
        self._groups = 0

    def update(self, ids, num_groups, values=None, rows=None):
        """Fold one batch in: ``ids`` (ndarray[int64] from a Factorizer holding ``num_groups``
        groups) and the argument ``values`` (an Array; None for count_all).

        ``ids=None``: every row is in group 0 (a keyless aggregate; ``num_groups`` must be 1, and
        ``rows`` gives the batch's row count for count_all). COUNT and integer SUM then run
        without ids; the other kinds use an all-zero id array."""
        kind = self._kind
        if ids is None:
            if num_groups != 1:
                raise ValueError(f"ids=None means one group, not {num_groups}")
            n = len(values) if values is not None else rows
            if n is None:
                raise ValueError("count_all without ids needs rows")
            if self._update_one_group(n, values):
                return
            ids = np.zeros(n, dtype=np.int64)
        ids = np.ascontiguousarray(ids, dtype=np.int64)
        before = self._groups
        self._resize(num_groups)
        if kind == "count_all":
            group_count(ids, self._out[:num_groups])
            return
        arr = _as_array(values)
        if len(arr) != len(ids):
            raise ValueError(f"{len(arr)} values for {len(ids)} ids")
        validity = _validity(arr)
        if kind == "count":
            group_count_valid(ids, validity, arr.offset, self._out[:num_groups])
            return
        if kind.startswith("sum") and validity is not None and self._seen is None:
            # Until a batch has a null, every group holds a value; from the first null on, track.
            self._seen = np.zeros(len(self._out if kind == "sum_float" else self._lo), dtype=np.uint8)
            self._seen[:before] = 1
        seen = self._seen[:num_groups] if self._seen is not None else None
        n = len(arr)
        if kind == "sum_int":
            if pa.types.is_boolean(arr.type):
                arr = arr.cast(pa.int8())
            data = np.frombuffer(arr.buffers()[1], dtype=arr.type.to_pandas_dtype(), count=n,
                                 offset=arr.offset * (arr.type.bit_width // 8))
            if self._narrow and n:
                self._bound += n * max(int(data.max()), -int(data.min()))
                if self._bound >= 1 << 63:
                    self._widen()
            if self._narrow:
                group_sum_int64(ids, data, validity, arr.offset, self._lo.view(np.int64)[:num_groups], seen)
            else:
                group_sum_int(ids, data, validity, arr.offset, self._lo[:num_groups], self._hi[:num_groups], seen)
        elif kind == "sum_decimal":
            words = np.frombuffer(arr.buffers()[1], dtype=np.int64, count=2 * n, offset=16 * arr.offset)
            if self._narrow:
                self._bound += n * 10 ** self._digits
                if self._bound >= 1 << 63:
                    self._widen()
            if self._narrow:
                group_sum_int64(ids, np.ascontiguousarray(words[::2]), validity, arr.offset,
                                self._lo.view(np.int64)[:num_groups], seen)
                return
            group_sum_decimal128(ids, words, validity, arr.offset, self._lo[:num_groups],
                                 self._hi[:num_groups], self._carry[:num_groups], seen)
        elif kind == "sum_float":
            data = np.frombuffer(arr.buffers()[1], dtype=arr.type.to_pandas_dtype(), count=n,
                                 offset=arr.offset * (arr.type.bit_width // 8))
            group_sum_float(ids, data, validity, arr.offset, self._out[:num_groups], seen)
        elif kind == "minmax_decimal":
            words = np.frombuffer(arr.buffers()[1], dtype=np.int64, count=2 * n, offset=16 * arr.offset)
            fn = group_min_decimal128 if self.func == "min" else group_max_decimal128
            fn(ids, words, validity, arr.offset, self._out[:2 * num_groups], seen)
        else:
            storage = self._storage
            data = np.frombuffer(arr.buffers()[1], dtype=storage.to_pandas_dtype(), count=n,
                                 offset=arr.offset * (storage.bit_width // 8))
            fn = group_min if self.func == "min" else group_max
            fn(ids, data, validity, arr.offset, self._out[:num_groups], seen)

    def reserve(self, num_groups):
        """Room for ``num_groups`` groups' states (no regrowth on the way there)."""
        if num_groups < 0:
            raise ValueError(f"num_groups must be >= 0, not {num_groups}")
        groups = self._groups
        self._resize(max(groups, num_groups))
        self._groups = groups

    def _update_one_group(self, n, values):
        """Keyless ``update``: COUNT and integer SUM without ids (True), else prepare group 0's
        ``seen`` flag so a group without any value stays NULL, and return False."""
        kind = self._kind
        before = self._groups
        self._resize(1)
        if kind == "count_all":
            self._out[0] += n
            return True
        arr = _as_array(values)
        if kind == "count":
            self._out[0] += len(arr) - arr.null_count
            return True
        if kind.startswith("sum") and self._seen is None:
            self._seen = np.zeros(len(self._out if kind == "sum_float" else self._lo), dtype=np.uint8)
            self._seen[:before] = 1
        if kind == "sum_decimal" and self._digits:
            # the low words are the values (see __init__): summed as integers, no ids
            self._widen()
            words = np.frombuffer(arr.buffers()[1], dtype=np.int64, count=2 * len(arr), offset=16 * arr.offset) \
                if len(arr) else np.empty(0, np.int64)
            if total_sum_int(np.ascontiguousarray(words[::2]), _validity(arr), arr.offset, self._lo[:1], self._hi[:1]):
                self._seen[0] = 1
            return True
        if kind != "sum_int":
            return False
        self._widen()
        if pa.types.is_boolean(arr.type):
            arr = arr.cast(pa.int8())
        dtype = arr.type.to_pandas_dtype()
        data = np.frombuffer(arr.buffers()[1], dtype=dtype, count=len(arr),
                             offset=arr.offset * (arr.type.bit_width // 8)) if len(arr) else np.empty(0, dtype)
        if total_sum_int(data, _validity(arr), arr.offset, self._lo[:1], self._hi[:1]):
            self._seen[0] = 1
        return True

    def _resize(self, num_groups):
        if num_groups < self._groups:
            raise ValueError(f"the number of groups went down from {self._groups} to {num_groups}")
        self._groups = num_groups
        if self._kind in ("sum_int", "sum_decimal"):
            self._lo = _grow(self._lo, num_groups)
            self._hi = _grow(self._hi, num_groups)
            self._carry = _grow(self._carry, num_groups)
        elif self._kind == "minmax_decimal":
            self._out = _grow(self._out, 2 * num_groups)
        else:
            self._out = _grow(self._out, num_groups)
        if self._seen is not None:
            self._seen = _grow(self._seen, num_groups)

    def _widen(self):
        """From int64 sums to 128-bit ones: the high words are the int64 sums' sign."""
        if self._narrow:
            np.right_shift(self._lo.view(np.int64), 63, out=self._hi)    # _hi has _lo's length
            self._narrow = False

    def result(self, num_groups=None):
        """The aggregate of each group 0..num_groups-1 as an Array (see the class docstring)."""
        g = self._groups if num_groups is None else num_groups
        self._resize(g)
        self._widen()
        seen = self._seen[:g] if self._seen is not None else None
        kind = self._kind
        if kind in ("count_all", "count"):
            return pa.array(self._out[:g].copy())
        if kind == "sum_float":
            return _with_nulls(pa.array(self._out[:g].copy()), seen)
        if kind in ("sum_int", "sum_decimal"):
            scale = self.type.scale if kind == "sum_decimal" else 0
            _check_decimal38(self._lo[:g], self._hi[:g], bool(self._carry[:g].any()))
            return _with_nulls(_int128_to_decimal(self._lo[:g], self._hi[:g], pa.decimal128(38, scale)), seen)
        if kind == "minmax_decimal":
            words = self._out[:2 * g].copy()
            arr = pa.Array.from_buffers(self.type, g, [None, pa.py_buffer(words)])
            return _with_nulls(arr, seen)
        arr = pa.array(self._out[:g].copy())
        if arr.type != self.type:
            arr = arr.view(self.type)
        return _with_nulls(arr, seen)
