"""Aggregates beyond COUNT / SUM / AVG / MIN / MAX: their partial states, merges and results.

Each function works on whole columns with dense group ids (``ids[i]`` is row ``i``'s group among
``groups``), never row by row in Python:

* mergeable (partial state on the leaves, merged on the aggregator like SUM):
  VAR_SAMP / VAR_POP / STDDEV_SAMP / STDDEV_POP — (count, mean, M2) by ``kernels.moments_update``,
  merged by Chan's formula (``kernels.moments_merge``); COVAR_SAMP / COVAR_POP / CORR — the co-moments;
  BIT_AND / BIT_OR / BIT_XOR — the 64 bits so far; APPROX_COUNT_DISTINCT — a HyperLogLog sketch per
  group (``kernels/hll``'s registers, merged by maximum);
* not mergeable (all of a group's values at once: rows are moved by the group keys first, as for
  COUNT(DISTINCT)): MEDIAN, PERCENTILE_CONT, PERCENTILE_DISC, GROUP_CONCAT. Their one "state" is the
  result itself.

NULL semantics are MySQL's: NULL inputs are skipped; a sample statistic of fewer than two values, and
any statistic of none, is NULL; BIT_AND of no values is all ones (18446744073709551615: the bit
aggregates are BIGINT UNSIGNED, as in MySQL), BIT_OR / BIT_XOR of none 0; CORR is NULL where either
variance is 0.
"""
from __future__ import annotations


import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import kernels
from engine.exec import decimal128, unsigned
from engine.core.collation_keys import collation_keys
from engine.core.expressions import AggCall

F64 = pa.float64()
I64 = pa.int64()


def _as_f64(values: pa.Array) -> pa.Array:
    return values if values.type == F64 else values.cast(F64)


def _validity(values: pa.Array) -> np.ndarray:
    return np.frombuffer(values.buffers()[0], np.uint8) if values.null_count else np.zeros(0, np.uint8)


def _numbers(values: pa.Array) -> np.ndarray:
    return np.asarray(values.fill_null(0.0) if values.null_count else values, dtype=np.float64)


class Function:
    """One aggregate: ``states`` are (suffix, Arrow type) of its partial state columns."""

    mergeable = True

    def states(self, call: AggCall) -> list[tuple[str, pa.DataType]]:
        raise NotImplementedError

    def update(self, call: AggCall, ids: np.ndarray, groups: int, args: list[pa.Array]) -> list[pa.Array]:
        """States of the rows (``args``: the argument columns, evaluated), per group."""
        raise NotImplementedError

    def merge(self, call: AggCall, ids: np.ndarray, groups: int, states: list[pa.Array]) -> list[pa.Array]:
        raise NotImplementedError

    def finish(self, call: AggCall, states: list[pa.Array]) -> pa.Array:
        raise NotImplementedError


class Moments(Function):
    """VAR_* and STDDEV_*: (count, mean, M2)."""

    def __init__(self, sample: bool, root: bool):
        self.sample, self.root = sample, root

    def states(self, call):
        return [("count", I64), ("mean", F64), ("m2", F64)]

    def update(self, call, ids, groups, args):
        values = _as_f64(args[0])
        state = [np.zeros(groups, np.int64), np.zeros(groups), np.zeros(groups)]
        kernels.moments_update(ids, _numbers(values), _validity(values), values.offset, *state)
        return [pa.array(s) for s in state]

    def merge(self, call, ids, groups, states):
        state = [np.zeros(groups, np.int64), np.zeros(groups), np.zeros(groups)]
        count, mean, m2 = (np.asarray(s.fill_null(0)) for s in states)
        kernels.moments_merge(ids, count.astype(np.int64), mean.astype(np.float64), m2.astype(np.float64), *state)
        return [pa.array(s) for s in state]

    def finish(self, call, states):
        count = np.asarray(states[0].fill_null(0), dtype=np.int64)
        m2 = np.asarray(states[2].fill_null(0.0), dtype=np.float64)
        divisor = count - 1 if self.sample else count
        valid = divisor > 0
        value = np.divide(m2, divisor, out=np.zeros(len(m2)), where=valid)
        value = np.maximum(value, 0.0)
        if self.root:
            value = np.sqrt(value)
        return pa.array(value, mask=~valid)


class CoMoments(Function):
    """COVAR_SAMP / COVAR_POP / CORR over (x, y) pairs where both are non-NULL."""

    def __init__(self, kind: str):
        self.kind = kind

    def states(self, call):
        return [("count", I64), ("mean_x", F64), ("mean_y", F64), ("m2_x", F64), ("m2_y", F64), ("c", F64)]

    def _empty(self, groups):
        return [np.zeros(groups, np.int64)] + [np.zeros(groups) for _ in range(5)]

    def update(self, call, ids, groups, args):
        x, y = _as_f64(args[0]), _as_f64(args[1])
        valid = np.asarray(pc.and_(pc.is_valid(x), pc.is_valid(y))).astype(np.uint8)
        state = self._empty(groups)
        kernels.comoments_update(ids, _numbers(x), _numbers(y), valid, *state)
        return [pa.array(s) for s in state]

    def merge(self, call, ids, groups, states):
        state = self._empty(groups)
        inputs = [np.asarray(s.fill_null(0)).astype(np.int64 if i == 0 else np.float64) for i, s in enumerate(states)]
        kernels.comoments_merge(ids, *inputs, *state)
        return [pa.array(s) for s in state]

    def finish(self, call, states):
        count = np.asarray(states[0].fill_null(0), dtype=np.int64)
        m2x, m2y, c = (np.asarray(s.fill_null(0.0), dtype=np.float64) for s in states[3:])
        if self.kind == "corr":
            denominator = np.sqrt(m2x * m2y)
            valid = (count > 1) & (denominator > 0)
            value = np.divide(c, denominator, out=np.zeros(len(c)), where=valid)
            return pa.array(np.clip(value, -1.0, 1.0), mask=~valid)
        divisor = count - 1 if self.kind == "covar_samp" else count
        valid = divisor > 0
        return pa.array(np.divide(c, divisor, out=np.zeros(len(c)), where=valid), mask=~valid)


class Bits(Function):
    """BIT_AND / BIT_OR / BIT_XOR over the values' 64 bits (NULLs skipped)."""

    _UFUNC = {"bit_and": np.bitwise_and, "bit_or": np.bitwise_or, "bit_xor": np.bitwise_xor}

    def __init__(self, func: str):
        self.ufunc = self._UFUNC[func]
        self.identity = -1 if func == "bit_and" else 0

    def states(self, call):
        return [("bits", I64)]

    def _reduce(self, ids, groups, values: pa.Array) -> list[pa.Array]:
        values = values.cast(I64) if values.type != I64 else values
        keep = np.asarray(pc.is_valid(values)) if values.null_count else slice(None)
        ids, data = ids[keep], np.asarray(values.fill_null(0) if values.null_count else values)[keep]
        out = np.full(groups, self.identity, np.int64)
        if len(ids):
            order = np.argsort(ids, kind="stable")
            ids, data = ids[order], data[order]
            starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
            out[ids[starts]] = self.ufunc.reduceat(data, starts)
        return [pa.array(out)]

    def update(self, call, ids, groups, args):
        return self._reduce(ids, groups, args[0])

    def merge(self, call, ids, groups, states):
        return self._reduce(ids, groups, states[0])

    def finish(self, call, states):
        # the state is the 64 bits as a signed int64; the result is them read as BIGINT UNSIGNED
        # (-1 is 18446744073709551615), Canopy's DECIMAL(20, 0)
        return unsigned.to_unsigned(states[0].fill_null(self.identity))


HLL_PRECISION = 12        # 4 KiB per group, ~1.6% standard error


def _leading_zeros(x: np.ndarray) -> np.ndarray:
    """Leading zero bits of each non-zero uint64, by halving (vectorised)."""
    x = x.copy()
    zeros = np.zeros(len(x), np.int64)
    for shift in (32, 16, 8, 4, 2, 1):
        small = x < np.uint64(1 << (64 - shift))
        zeros += np.where(small, shift, 0)
        x = np.where(small, x << np.uint64(shift), x)
    return zeros


def _estimates(registers: np.ndarray) -> np.ndarray:
    """Ertl's improved estimator (as ``kernels.hll_estimate``) for each row of ``registers`` (groups x
    2**p), vectorised over the groups: the series of sigma and tau run a fixed 64 steps, past which
    their terms vanish in double precision."""
    groups, width = registers.shape
    q, m = 64 - HLL_PRECISION, float(width)
    counts = np.zeros((groups, q + 2))
    if groups:
        flat = (np.arange(groups)[:, None] * (q + 2) + registers).reshape(-1)
        counts = np.bincount(flat, minlength=groups * (q + 2)).reshape(groups, q + 2).astype(np.float64)
    x = 1.0 - counts[:, q + 1] / m
    z_tau, y, t = 1.0 - x, 1.0, x.copy()
    for _ in range(64):
        t = np.sqrt(t)
        y *= 0.5
        z_tau = z_tau - (1.0 - t) ** 2 * y
    tau = np.where((x == 0.0) | (x == 1.0), 0.0, z_tau / 3.0)
    z = m * tau
    for k in range(q, 0, -1):
        z = 0.5 * (z + counts[:, k])
    s = counts[:, 0] / m
    empty = s == 1.0
    s = np.where(empty, 0.0, s)
    sigma, y, power = s.copy(), 1.0, s.copy()
    for _ in range(64):
        power = power * power
        sigma = sigma + power * y
        y += y
    with np.errstate(divide="ignore"):
        estimate = (m * m / (2.0 * np.log(2.0))) / (z + m * sigma)
    return np.where(empty, 0.0, estimate)


class ApproxDistinct(Function):
    """APPROX_COUNT_DISTINCT: a HyperLogLog sketch per group, the registers of ``kernels/hll``."""

    def states(self, call):
        return [("hll", pa.binary(1 << HLL_PRECISION))]

    def _registers(self, groups: int) -> np.ndarray:
        return np.zeros((groups, 1 << HLL_PRECISION), np.uint8)

    def _as_state(self, registers: np.ndarray) -> list[pa.Array]:
        m = 1 << HLL_PRECISION
        return [pa.FixedSizeBinaryArray.from_buffers(pa.binary(m), len(registers),
                                                     [None, pa.py_buffer(registers.tobytes())])]

    def update(self, call, ids, groups, args):
        values = args[0]
        keep = np.asarray(pc.is_valid(values)) if values.null_count else np.ones(len(values), bool)
        values = values.filter(pa.array(keep)) if values.null_count else values
        hashes = np.asarray(kernels.hash_columns([values])).view(np.uint64)
        p = HLL_PRECISION
        index = (hashes >> np.uint64(64 - p)).astype(np.int64)
        rest = (hashes << np.uint64(p)) | np.uint64(1 << (p - 1))
        # the rank of the remaining bits: leading zeros + 1 (the guard bit caps it at 64 - p + 1)
        rank = (_leading_zeros(rest) + 1).astype(np.uint8)
        registers = self._registers(groups)
        np.maximum.at(registers.reshape(-1), ids[keep] * (1 << p) + index, rank)
        return self._as_state(registers)

    def merge(self, call, ids, groups, states):
        m = 1 << HLL_PRECISION
        sketches = states[0]
        data = np.frombuffer(sketches.buffers()[1], np.uint8, count=(sketches.offset + len(sketches)) * m)
        data = data[sketches.offset * m:].reshape(len(sketches), m)
        registers = self._registers(groups)
        np.maximum.at(registers, ids, data)
        return self._as_state(registers)

    def finish(self, call, states):
        m = 1 << HLL_PRECISION
        sketches = states[0]
        data = np.frombuffer(sketches.buffers()[1], np.uint8, count=(sketches.offset + len(sketches)) * m)
        data = data[sketches.offset * m:].reshape(len(sketches), m)
        return pa.array(np.rint(_estimates(data)).astype(np.int64))


class Whole(Function):
    """Aggregates of all a group's values at once: the one state is the result."""

    mergeable = False

    def states(self, call):
        return [("value", call.type.to_arrow())]

    def merge(self, call, ids, groups, states):
        raise AssertionError(f"{call.func} has no partial state to merge")

    def finish(self, call, states):
        return states[0]


def _sorted_by_group(ids: np.ndarray, groups: int, values: pa.Array, extra_keys=(), descending=()):
    """Row order grouping ``values`` by group id, then by ``extra_keys`` (default: the values), and each
    group's [start, end) in that order."""
    columns = {"__g": pa.array(ids)}
    sort = [("__g", "ascending", "at_start")]
    keys = list(extra_keys) or [values]
    for i, key in enumerate(keys):
        columns[f"__k{i}"] = key
        down = i < len(descending) and descending[i]
        # MySQL: NULL sorts as the smallest value
        sort.append((f"__k{i}", "descending" if down else "ascending", "at_end" if down else "at_start"))
    order = pc.sort_indices(pa.table(columns), sort_keys=sort)
    return np.asarray(order)


class Percentile(Whole):
    """MEDIAN (PERCENTILE_CONT 0.5), PERCENTILE_CONT (linear interpolation), PERCENTILE_DISC (the first
    value whose cumulative share reaches the fraction)."""

    def __init__(self, continuous: bool):
        self.continuous = continuous

    def update(self, call, ids, groups, args):
        fraction = call.options[0] if call.options else 0.5
        values = args[0]
        keep = np.asarray(pc.is_valid(values))
        ids, values = ids[keep], values.filter(pa.array(keep))
        order = _sorted_by_group(ids, groups, values)
        values, ids = values.take(pa.array(order)), ids[order]
        counts = np.bincount(ids, minlength=groups)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        present = counts > 0
        if self.continuous:
            data = _numbers(_as_f64(values))
            position = fraction * np.maximum(counts - 1, 0)
            low = np.floor(position).astype(np.int64)
            high = np.ceil(position).astype(np.int64)
            lo_idx, hi_idx = np.where(present, starts + low, 0), np.where(present, starts + high, 0)
            if len(data):
                value = data[lo_idx] + (data[hi_idx] - data[lo_idx]) * (position - low)
            else:
                value = np.zeros(groups)
            return [pa.array(value, mask=~present).cast(call.type.to_arrow())]
        index = np.maximum(np.ceil(fraction * counts).astype(np.int64) - 1, 0)
        take = np.where(present, starts + index, 0)
        picked = values.take(pa.array(take)) if len(values) else pa.nulls(groups, values.type)
        return [pc.if_else(pa.array(present), picked, pa.scalar(None, picked.type)).cast(call.type.to_arrow())]


class GroupConcat(Whole):
    """GROUP_CONCAT([DISTINCT] x [ORDER BY ...] [SEPARATOR s]): NULL values skipped, NULL for a group
    with none; ``options`` = (separator, descending flags of the ORDER BY keys)."""

    def update(self, call, ids, groups, args):
        separator, descending, collation = call.options
        values, order_keys = args[0], args[1:]
        values = values if pa.types.is_string(values.type) else values.cast(pa.string())
        keep = pa.array(np.asarray(pc.is_valid(values)))
        ids = ids[np.asarray(keep)]
        values = values.filter(keep)
        order_keys = [k.filter(keep) for k in order_keys]
        if call.distinct and len(values):
            # the first row of each (group, value) pair, in the input order
            pairs, _ = kernels.factorize([pa.array(ids), collation_keys(values, collation)])
            _, first = np.unique(pairs, return_index=True)
            first = np.sort(first)
            ids, values = ids[first], values.take(pa.array(first))
            order_keys = [k.take(pa.array(first)) for k in order_keys]
        if order_keys:
            order = _sorted_by_group(ids, groups, values, order_keys, descending)
        else:
            order = np.argsort(ids, kind="stable")
        ids, values = ids[order], values.take(pa.array(order))
        counts = np.bincount(ids, minlength=groups)
        offsets = pa.array(np.concatenate([[0], np.cumsum(counts)]).astype(np.int32))
        lists = pa.ListArray.from_arrays(offsets, values)
        joined = pc.binary_join(lists, separator)
        return [pc.if_else(pa.array(counts > 0), joined, pa.scalar(None, pa.string()))]


class CollatedExtreme(Function):
    """MIN / MAX of strings under a _ci collation (``options`` = (collation,)): the value of one of the
    group's rows whose collation key is smallest (largest), as MySQL returns a stored value, not a key.
    The state is that value; merging picks among the partial values the same way."""

    def __init__(self, largest: bool):
        self.largest = largest

    def states(self, call):
        return [("value", call.type.to_arrow())]

    def _pick(self, call, ids: np.ndarray, groups: int, values: pa.Array) -> pa.Array:
        keep = np.asarray(pc.is_valid(values))
        ids, values = ids[keep], values.filter(pa.array(keep))
        keys = collation_keys(values, call.options[0])
        order = _sorted_by_group(ids, groups, values, [keys], [self.largest])
        ordered = ids[order]
        first = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]]) if len(ordered) else ordered
        where = np.full(groups, -1, np.int64)
        where[ordered[first]] = order[first]
        return values.take(pa.array(where, mask=where < 0)).cast(call.type.to_arrow())

    def update(self, call, ids, groups, args):
        return [self._pick(call, ids, groups, args[0])]

    def merge(self, call, ids, groups, states):
        return [self._pick(call, ids, groups, states[0])]

    def finish(self, call, states):
        return states[0]


FUNCTIONS: dict[str, Function] = {
    "var_samp": Moments(sample=True, root=False), "var_pop": Moments(sample=False, root=False),
    "stddev_samp": Moments(sample=True, root=True), "stddev_pop": Moments(sample=False, root=True),
    "covar_samp": CoMoments("covar_samp"), "covar_pop": CoMoments("covar_pop"), "corr": CoMoments("corr"),
    "bit_and": Bits("bit_and"), "bit_or": Bits("bit_or"), "bit_xor": Bits("bit_xor"),
    "approx_count_distinct": ApproxDistinct(),
    "median": Percentile(continuous=True), "percentile_cont": Percentile(continuous=True),
    "percentile_disc": Percentile(continuous=False), "group_concat": GroupConcat(),
    "collated_min": CollatedExtreme(largest=False), "collated_max": CollatedExtreme(largest=True),
}


def is_extended(call: AggCall) -> bool:
    return call.func in FUNCTIONS


def mergeable(call: AggCall) -> bool:
    """Whether partial states of ``call`` merge (else the rows must meet by the group keys first)."""
    if call.func in FUNCTIONS:
        return FUNCTIONS[call.func].mergeable
    return not call.distinct


def group_ids(keys: list[pa.Array], rows: int) -> tuple[np.ndarray, int, list[pa.Array]]:
    """(dense group id per row, number of groups, each key column's value per group). No keys: one
    group, present even without rows. Key types the kernels' Factorizer does not hash (floats) are
    dictionary-encoded first and grouped by their codes."""
    if not keys:
        return np.zeros(rows, np.int64), 1, []
    dictionaries: list = []
    columns = []
    for key in keys:
        if kernels.supports_group_key(key.type):
            dictionaries.append(None)
            columns.append(key)
        else:
            encoded = pc.dictionary_encode(key, null_encoding="encode")
            dictionaries.append(encoded.dictionary)
            columns.append(encoded.indices)
    factorizer = kernels.Factorizer([c.type for c in columns])
    ids = np.asarray(factorizer.factorize(columns), dtype=np.int64) if rows else np.zeros(0, np.int64)
    uniques = factorizer.uniques()
    uniques = [u if d is None else d.take(u) for u, d in zip(uniques, dictionaries)]
    return ids, factorizer.num_groups, uniques


def builtin_by_ids(func: str, ids: np.ndarray, groups: int, values) -> pa.Array:
    """An Arrow hash aggregation (``sum``, ``count``, ``min``, ``count_distinct``, ...) of ``values`` per
    group id, one result per group (NULL for a group without a value; 0 counts)."""
    if func == "count_all":
        return pa.array(np.bincount(ids, minlength=groups).astype(np.int64))
    if func == "sum" and pa.types.is_decimal(values.type):
        # Arrow's decimal128 sum wraps past 2**127: wide decimals are summed in 256 bits, checked back
        return decimal128.narrow_sum(_arrow_by_ids(func, ids, groups, decimal128.widen_for_sum(values)),
                                     values.type.scale)
    return _arrow_by_ids(func, ids, groups, values)


def _arrow_by_ids(func: str, ids: np.ndarray, groups: int, values) -> pa.Array:
    grouped = pa.table({"g": pa.array(ids), "v": values}).group_by("g", use_threads=False).aggregate([("v", func)])
    where = np.full(groups, -1, np.int64)
    where[np.asarray(grouped.column("g"))] = np.arange(grouped.num_rows)
    result = grouped.column(f"v_{func}").combine_chunks().take(pa.array(where, mask=where < 0))
    if func in ("count", "count_distinct"):
        result = result.fill_null(0)
    return result
