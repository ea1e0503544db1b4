"""WindowExec: window functions over the partitions of one task's rows.

The planner guarantees that every row of a window partition (equal PARTITION BY values) reaches the
same task: the input is hash-repartitioned by the PARTITION BY columns (or already distributed on
them), or gathered to the aggregator when there is no PARTITION BY. The operator is a sink: it
collects its input, sorts it once by (PARTITION BY, ORDER BY) with ``pc.sort_indices`` (MySQL's
NULL order: first ascending, last descending), finds each row's partition and peer group, and
computes every call over the sorted arrays with NumPy and the ``kernels`` window kernels: running
and sliding frames in O(n) (prefix sums, a monotonic deque for MIN / MAX), never per row in Python.
Rows come out in that sorted order, each with the calls' columns appended.

Past ``memory_limit`` (docs/memory.md) a window with PARTITION BY spills: its input goes to hash
partitions of the PARTITION BY values on disk, each holding whole window partitions, computed one
after the other (rows then come out in window order within each hash partition). Without PARTITION
BY the one partition cannot be split: it is sorted externally and computed a chunk at a time
(``window_stream.py``); the few calls that cannot be (``window_stream.streams``) fail with
MemoryLimitError naming Window.
"""
from __future__ import annotations

import contextlib
import decimal
from dataclasses import dataclass
from typing import Iterator, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import kernels
from engine import types as T
from engine.core.collation_keys import collation_keys
from engine.exec import decimal64
from engine.exec.evaluate import evaluate_array
from engine.exec.memory import Reservation, SpillFile
from engine.exec.operators.base import PhysicalOperator, TaskContext, conform, table_to_batches
from engine.exec.operators.spill_partitions import SpillPartitions, hold_or_spill
from engine.exec.operators.window_stream import SortedWindow, streams
from engine.core.expressions import Call, ColumnRef
from engine.core.fields import Field, FrameBound, SortKey, WindowCall, WindowFrame, describe_window

# ranking calls: computed from the sorted keys, no column of the rows read
_RANKS = ("row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile")
_BOUND_KIND = {"unbounded_preceding": 0, "preceding": 1, "following": 1, "current_row": 2,
               "unbounded_following": 3}


@dataclass(frozen=True)
class WindowExec(PhysicalOperator):
    input: PhysicalOperator
    partition_by: tuple[ColumnRef, ...]
    order_by: tuple[SortKey, ...]
    calls: tuple[tuple[Field, WindowCall], ...]
    requires: tuple = ()          # Required per input (None: as it is), chosen by the planner
    # (id of a ROW_NUMBER / RANK / DENSE_RANK call, N): only rows ranked at most N come out, the
    # others never taken (a filter above drops them anyway: engine/optimizer/rules/top_n.py)
    keep: Optional[tuple[str, int]] = None

    @property
    def fields(self):
        return self.input.fields + tuple(f for f, _ in self.calls)

    @property
    def children(self):
        return (self.input,)

    def describe(self) -> str:
        return "Window " + describe_window(self.partition_by, self.order_by, self.calls, self.keep)

    def execute(self, partition: int, ctx: TaskContext) -> Iterator[pa.RecordBatch]:
        # what it collects counts against the query's memory_limit until it has produced its output;
        # with PARTITION BY it spills past its share (whole window partitions go to disk together),
        # without it is sorted on disk and streamed (when its calls allow it)
        spills = bool(self.partition_by) or streams(self.calls, bool(self.order_by))
        with ctx.memory.reservation("Window", spillable=spills) as memory, contextlib.ExitStack() as stack:
            yield from self._execute(partition, ctx, memory, stack if spills else None)

    def _execute(self, partition: int, ctx: TaskContext, memory: Reservation, stack) -> Iterator[pa.RecordBatch]:
        schema = self.input.schema

        def spill():
            if stack is None:           # calls that need the whole partition at once: it fails
                return None
            if self.partition_by:
                return self._spilled_partitions(ctx)
            return SortedWindow(self, ctx, stack.enter_context(ctx.memory.reservation("Window", spillable=True)))

        # a held row costs itself and its copy in window order
        held, spilled = hold_or_spill(self.input.execute(partition, ctx), memory, spill,
                                      cost=lambda batch: 2 * batch.nbytes, hold=lambda batch: conform(batch, schema))
        if isinstance(spilled, SortedWindow):
            yield from spilled.windowed(memory)
            return
        if spilled is None:
            table = pa.Table.from_batches(held, schema=schema) if held else schema.empty_table()
            if ctx.profile is not None and table.num_rows:
                ctx.profile.held(self.input, table)
            del held
            yield from self._windowed(table, ctx)
            return
        # each hash partition of the PARTITION BY keys holds whole window partitions: computed alone
        # (a partition and its copy in window order); one that alone exceeds the limit holds one
        # PARTITION BY value (re-partitioning spreads any others): it streams as a window without
        # PARTITION BY does, when its calls allow (else it fails)
        for part in spilled.each(_Twice(memory), stream=streams(self.calls, bool(self.order_by))):
            if isinstance(part, SpillFile):
                yield from self._streamed(part, ctx, memory)
            else:
                yield from self._windowed(part, ctx)

    def _streamed(self, spilled: SpillFile, ctx: TaskContext, memory: Reservation) -> Iterator[pa.RecordBatch]:
        """One window partition larger than the limit, sorted on disk and computed a chunk at a time
        (``SortedWindow``); its rows must share their PARTITION BY values (else it fails)."""
        with ctx.memory.reservation("Window", spillable=True) as own:
            window = SortedWindow(self, ctx, own)
            first = None
            for batch in spilled.read():
                keys = [_plain(evaluate_array(e, batch, ctx.params)) for e in self.partition_by]
                first = first or [k.slice(0, 1) for k in keys]
                if not all(_same(k, f) for k, f in zip(keys, first)):
                    raise ctx.memory.error("Window", spilled.bytes, spilled=True)
                window.add(batch)
            yield from window.windowed(memory)

    def _spilled_partitions(self, ctx: TaskContext) -> SpillPartitions:
        return SpillPartitions.over(ctx.memory, self.input.schema, self.partition_by, ctx.params, "Window")

    def _windowed(self, table: pa.Table, ctx: TaskContext) -> Iterator[pa.RecordBatch]:
        """The calls computed over ``table`` (whole window partitions), its rows in window order."""
        if table.num_rows == 0:
            return
        batch = table.combine_chunks().to_batches()[0]
        del table
        n = batch.num_rows
        part_keys = [_plain(evaluate_array(e, batch, ctx.params)) for e in self.partition_by]
        order_keys = [_plain(evaluate_array(k.expr, batch, ctx.params)) for k in self.order_by]
        order = _sort_order(part_keys, order_keys, self.order_by, n)
        if order is not None:
            part_keys = [k.take(order) for k in part_keys]
            order_keys = [k.take(order) for k in order_keys]
        rows = _Rows.of(part_keys, order_keys, n)
        kept = None
        if self.keep is not None:
            # the ranks come from the sorted keys alone: only the rows ranked at most N are taken
            call = next(c for f, c in self.calls if f.id == self.keep[0])
            kept = np.flatnonzero(_compute(call, batch, rows, order_keys, self.order_by, ctx.params)
                                  .to_numpy() <= self.keep[1])
        # the rows in window order: the output, and what the calls that read values (aggregates, LAG,
        # FIRST_VALUE...) read; with rows kept, only those calls need them all
        in_order = batch if order is None else None
        if in_order is None and (kept is None or any(c.func not in _RANKS for _, c in self.calls)):
            in_order = batch.take(order)
        columns = []
        for f, call in self.calls:
            values = _compute(call, in_order, rows, order_keys, self.order_by, ctx.params)
            target = f.type.to_arrow()
            values = values if values.type == target else values.cast(target)
            columns.append(values if kept is None else values.take(kept))
        if kept is not None:
            base = batch.take(kept if order is None else order.take(pa.array(kept)))
        else:
            base = in_order
        names = [f.id for f in self.fields]
        yield from table_to_batches(pa.Table.from_arrays(list(base.columns) + columns, names=names))


class _Twice:
    """A reservation as SpillPartitions.each sees it: a spilled partition costs itself and its copy
    in window order."""

    def __init__(self, memory: Reservation):
        self.memory = memory

    def free(self) -> None:
        self.memory.free()

    def grow(self, size: int, spilled: bool = False) -> None:
        self.memory.grow(2 * size, spilled)

    def try_grow(self, size: int) -> bool:
        return self.memory.try_grow(2 * size)


def _plain(arr) -> pa.Array:
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    return arr.dictionary_decode() if pa.types.is_dictionary(arr.type) else arr


def _sort_order(part_keys, order_keys, order_by, n: int):
    if not part_keys and not order_keys:
        return None
    sort_keys = [(f"p{i}", "ascending", "at_start") for i in range(len(part_keys))]
    sort_keys += [(f"o{i}", "ascending" if k.ascending else "descending",
                   "at_start" if k.nulls_first else "at_end") for i, k in enumerate(order_by)]
    keys = pa.table([_sortable(k, True) for k in part_keys] + [_sortable(k, False) for k in order_keys],
                    names=[k[0] for k in sort_keys])
    # null_placement per key needs pyarrow >= 17's SortOptions tuples of three; older ones take one
    return pc.sort_indices(keys, sort_keys=sort_keys)


def _sortable(key: pa.Array, partition: bool) -> pa.Array:
    """What the sort compares in place of ``key``, cheaper and sorted alike: a PARTITION BY string by
    its code among the key's distinct values (equal strings, equal codes: the partitions' own order
    means nothing), a DECIMAL by its unscaled integers where they fit int64 (one scale: same order)."""
    t = key.type
    if partition and (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
                      or pa.types.is_large_binary(t)):
        return key.dictionary_encode().indices
    if pa.types.is_decimal128(t):
        unscaled = decimal64.scaled_int64(key)
        if unscaled is not None:
            return pa.array(unscaled, pa.int64())
    return key


def _same(values: pa.Array, first: pa.Array) -> bool:
    """Whether every value equals ``first``'s one value (NULL equals NULL)."""
    if not first.is_valid()[0].as_py():
        return values.null_count == len(values)
    return values.null_count == 0 and pc.all(pc.equal(values, first[0])).as_py()


def _changes(arr: pa.Array) -> np.ndarray:
    """True where a row's value differs from the previous row's (NULL equals NULL); row 0 is True."""
    n = len(arr)
    out = np.ones(n, dtype=bool)
    if n > 1:
        a, b = arr.slice(1), arr.slice(0, n - 1)
        a_null, b_null = a.is_null(), b.is_null()
        differs = pc.if_else(pc.or_(a_null, b_null), pc.xor(a_null, b_null), pc.not_equal(a, b))
        out[1:] = differs.to_numpy(zero_copy_only=False)
    return out


@dataclass
class _Rows:
    """Each sorted row's partition [part_start, part_end) and peer group [peer_start, peer_end)."""

    index: np.ndarray
    part_start: np.ndarray
    part_end: np.ndarray
    peer_start: np.ndarray
    peer_end: np.ndarray
    new_peer: np.ndarray

    @classmethod
    def of(cls, part_keys, order_keys, n: int) -> "_Rows":
        new_part = np.zeros(n, dtype=bool)
        new_part[0] = True
        for k in part_keys:
            new_part |= _changes(k)
        new_peer = new_part.copy()
        for k in order_keys:
            new_peer |= _changes(k)
        bounds = [np.empty(n, dtype=np.int64) for _ in range(4)]
        kernels.segment_bounds(new_part.view(np.uint8), bounds[0], bounds[1])
        kernels.segment_bounds(new_peer.view(np.uint8), bounds[2], bounds[3])
        return cls(np.arange(n, dtype=np.int64), *bounds, new_peer)

    @property
    def size(self) -> np.ndarray:
        return self.part_end - self.part_start


def _compute(call: WindowCall, batch: pa.RecordBatch, rows: _Rows, order_keys, order_by, params) -> pa.Array:
    func = call.func
    if func == "row_number":
        return pa.array(rows.index - rows.part_start + 1)
    if func == "rank":
        return pa.array(rows.peer_start - rows.part_start + 1)
    if func == "dense_rank":
        groups = np.cumsum(rows.new_peer)
        return pa.array(groups - groups[rows.part_start] + 1)
    if func == "percent_rank":
        rank = rows.peer_start - rows.part_start
        denominator = np.maximum(rows.size - 1, 1)
        return pa.array(np.where(rows.size > 1, rank / denominator, 0.0))
    if func == "cume_dist":
        return pa.array((rows.peer_end - rows.part_start) / rows.size)
    if func == "ntile":
        return pa.array(_ntile(rows, call.options[0]))
    if func in ("lag", "lead"):
        return _offset(call, batch, rows, params)
    lo, hi = _frame_bounds(call.frame, rows, order_keys, order_by)
    if func in ("first_value", "last_value", "nth_value"):
        value = _plain(evaluate_array(call.args[0], batch, params))
        if func == "first_value":
            source, ok = lo, hi > lo
        elif func == "last_value":
            source, ok = hi - 1, hi > lo
        else:
            source = lo + call.options[0] - 1
            ok = source < hi
        return _take(value, source, ok)
    return _aggregate(call, batch, rows, lo, hi, params)


def _ntile(rows: _Rows, buckets: int) -> np.ndarray:
    """Bucket numbers 1..buckets, sizes differing by at most one, the larger buckets first."""
    j = rows.index - rows.part_start
    size = rows.size
    small = size // buckets
    remainder = size % buckets
    in_large = remainder * (small + 1)
    return np.where(j < in_large, j // (small + 1), remainder + (j - in_large) // np.maximum(small, 1)) + 1


def _take(values: pa.Array, source: np.ndarray, ok: np.ndarray) -> pa.Array:
    indices = pa.array(np.where(ok, source, 0), mask=~ok)
    return values.take(indices)


def _offset(call: WindowCall, batch, rows: _Rows, params) -> pa.Array:
    value = _plain(evaluate_array(call.args[0], batch, params))
    default = _plain(evaluate_array(call.args[1], batch, params)).cast(value.type)
    offset = call.options[0]
    source = rows.index - offset if call.func == "lag" else rows.index + offset
    inside = (source >= rows.part_start) & (source < rows.part_end)
    taken = _take(value, source, inside)
    return pc.if_else(pa.array(inside), taken, default)


def _frame_bounds(frame: WindowFrame, rows: _Rows, order_keys, order_by) -> tuple[np.ndarray, np.ndarray]:
    """Each row's frame [lo, hi) within its partition."""
    if frame.units == "rows":
        return (_rows_bound(frame.start, rows, 0), _rows_bound(frame.end, rows, 1))
    kinds = (frame.start.kind, frame.end.kind)
    if not any(k in ("preceding", "following") for k in kinds):
        return (_peer_bound(frame.start, rows, True), _peer_bound(frame.end, rows, False))
    key, delta_of = _range_key(order_keys[0], order_by[0], (frame.start, frame.end))
    lo = np.empty(len(rows.index), dtype=np.int64)
    hi = np.empty(len(rows.index), dtype=np.int64)
    valid = np.asarray(order_keys[0].is_valid()).view(np.uint8) if order_keys[0].null_count else \
        np.ones(len(key), dtype=np.uint8)
    kernels.range_frame(key, np.ascontiguousarray(valid), rows.part_start, rows.part_end, rows.peer_start,
                        rows.peer_end, _BOUND_KIND[frame.start.kind], delta_of(frame.start),
                        _BOUND_KIND[frame.end.kind], delta_of(frame.end), lo, hi)
    return lo, hi


def _rows_bound(bound: FrameBound, rows: _Rows, past: int) -> np.ndarray:
    """A ROWS frame's start (``past`` 0) or exclusive end (``past`` 1)."""
    if bound.kind == "unbounded_preceding":
        return rows.part_start
    if bound.kind == "unbounded_following":
        return rows.part_end
    shift = {"preceding": -int(bound.offset or 0), "current_row": 0, "following": int(bound.offset or 0)}[bound.kind]
    return np.clip(rows.index + shift + past, rows.part_start, rows.part_end)


def _peer_bound(bound: FrameBound, rows: _Rows, start: bool) -> np.ndarray:
    if bound.kind == "unbounded_preceding":
        return rows.part_start
    if bound.kind == "unbounded_following":
        return rows.part_end
    return rows.peer_start if start else rows.peer_end


def _range_key(key: pa.Array, sort_key: SortKey, bounds: tuple[FrameBound, ...]):
    """The ORDER BY key as an ascending NumPy array (negated when descending) and the function giving
    a bound's delta in the same units (scaled integers for decimals, so boundaries are exact)."""
    t = key.type
    sign = 1 if sort_key.ascending else -1
    if pa.types.is_decimal(t) and t.precision <= 18 and all(
            decimal.Decimal(b.offset).scaleb(t.scale) == int(decimal.Decimal(b.offset).scaleb(t.scale))
            for b in bounds if b.offset is not None):
        # the scaled integers: the low word of each decimal128 (they fit in 64 bits at precision <= 18)
        exact = key.cast(pa.decimal128(38, t.scale))
        words = np.frombuffer(exact.buffers()[1], dtype=np.int64)[exact.offset * 2:(exact.offset + len(key)) * 2]
        return (np.ascontiguousarray(sign * words[0::2]),
                lambda b: _signed(b) * int(decimal.Decimal(b.offset or 0).scaleb(t.scale)))
    if pa.types.is_date32(t) or pa.types.is_timestamp(t):      # days, microseconds (the binder's units)
        key = key.cast(pa.int32()) if pa.types.is_date32(t) else key.cast(pa.timestamp("us")).cast(pa.int64())
        t = key.type
    if pa.types.is_integer(t):
        arr = sign * key.fill_null(0).cast(pa.int64()).to_numpy()
        return np.ascontiguousarray(arr, dtype=np.int64), lambda b: _signed(b) * int(b.offset or 0)
    arr = sign * key.cast(pa.float64()).fill_null(0.0).to_numpy()
    return np.ascontiguousarray(arr, dtype=np.float64), lambda b: _signed(b) * float(b.offset or 0)


def _signed(bound: FrameBound) -> int:
    return -1 if bound.kind == "preceding" else 1


def _aggregate(call: WindowCall, batch, rows: _Rows, lo: np.ndarray, hi: np.ndarray, params) -> pa.Array:
    n = len(rows.index)
    if call.func == "count_star":
        return pa.array(np.maximum(hi - lo, 0))
    value = _plain(evaluate_array(call.args[0], batch, params))
    valid = np.ascontiguousarray(np.asarray(value.is_valid()).view(np.uint8)) if value.null_count else \
        np.ones(n, dtype=np.uint8)
    counts = np.empty(n, dtype=np.int64)
    kernels.window_count(valid, rows.part_start, lo, hi, counts)
    if call.func == "count":
        return pa.array(counts)
    empty = counts == 0
    if call.func in ("min", "max"):
        # strings under a _ci collation (options name it) rank by their collation keys
        ranks = _order_preserving_int64(collation_keys(value, call.options[0]) if call.options else value)
        chosen = np.empty(n, dtype=np.int64)
        kernels.window_arg_extreme(ranks, valid, lo, hi, call.func == "max", chosen)
        return _take(value, chosen, chosen >= 0)
    if call.func in _MOMENTS:
        return _moment(call.func, value, valid, rows, lo, hi, counts)
    total = _sum(value, valid, rows, lo, hi, empty)
    if call.func == "sum":
        return total
    # AVG = SUM / COUNT with the GROUP BY aggregate's division (types and rounding alike)
    total_type, count_type = T.from_arrow(total.type), T.BIGINT
    pair = pa.RecordBatch.from_arrays([total, pa.array(counts)], names=["sum", "count"])
    quotient = Call("divide", (ColumnRef("sum", total_type), ColumnRef("count", count_type)), call.type)
    return evaluate_array(quotient, pair, params)


_MOMENTS = {"var_pop": (False, False), "var_samp": (True, False), "stddev_pop": (False, True),
            "stddev_samp": (True, True)}      # (sample, square root)


def _moment(func: str, value: pa.Array, valid: np.ndarray, rows: _Rows, lo, hi, counts) -> pa.Array:
    """Variance / standard deviation over each frame from prefix sums of the values centred on their
    partition's mean (so the sums of squares do not cancel away a large mean's digits): with
    d = x - mean, M2 = sum(d^2) - sum(d)^2 / n. MySQL's results: a population statistic of one value
    is 0, a sample one of fewer than two values NULL."""
    sample, root = _MOMENTS[func]
    n = len(value)
    x = np.ascontiguousarray(value.cast(pa.float64()).fill_null(0.0).to_numpy())
    part_sum, part_count = np.empty(n), np.empty(n, dtype=np.int64)
    kernels.window_sum_float(x, valid, rows.part_start, rows.part_start, rows.part_end, part_sum)
    kernels.window_count(valid, rows.part_start, rows.part_start, rows.part_end, part_count)
    d = np.where(valid.astype(bool), x - part_sum / np.maximum(part_count, 1), 0.0)
    s1, s2 = np.empty(n), np.empty(n)
    kernels.window_sum_float(np.ascontiguousarray(d), valid, rows.part_start, lo, hi, s1)
    kernels.window_sum_float(np.ascontiguousarray(d * d), valid, rows.part_start, lo, hi, s2)
    safe = np.maximum(counts, 1)
    m2 = np.maximum(s2 - s1 * s1 / safe, 0.0)
    missing = counts < (2 if sample else 1)
    result = m2 / np.maximum(counts - 1 if sample else counts, 1)
    return pa.array(np.sqrt(result) if root else result, mask=missing)


def _order_preserving_int64(value: pa.Array) -> np.ndarray:
    """int64 keys ordered as the values are (NULL slots arbitrary): integers and dates as they are,
    floats by their IEEE bits (negative ones flipped), other types by their dense rank (a sort)."""
    t = value.type
    if (pa.types.is_integer(t) and t != pa.uint64()) or pa.types.is_date(t) or pa.types.is_timestamp(t):
        if pa.types.is_date32(t):
            value = value.cast(pa.int32())
        return np.ascontiguousarray(value.cast(pa.int64()).fill_null(0).to_numpy(), dtype=np.int64)
    if pa.types.is_floating(t):
        bits = value.cast(pa.float64()).fill_null(0.0).to_numpy().view(np.int64)
        return np.ascontiguousarray(np.where(bits < 0, bits ^ np.int64(0x7FFFFFFFFFFFFFFF), bits))
    return np.ascontiguousarray(pc.rank(value, tiebreaker="dense").to_numpy(), dtype=np.int64)


def _sum(value: pa.Array, valid: np.ndarray, rows: _Rows, lo, hi, empty: np.ndarray) -> pa.Array:
    n = len(value)
    if pa.types.is_floating(value.type):
        out = np.empty(n, dtype=np.float64)
        data = np.ascontiguousarray(value.cast(pa.float64()).fill_null(0.0).to_numpy())
        kernels.window_sum_float(data, valid, rows.part_start, lo, hi, out)
        return pa.array(out, mask=empty)
    scale = value.type.scale if pa.types.is_decimal(value.type) else 0
    exact = value.cast(pa.decimal128(38, scale))
    words = np.frombuffer(exact.buffers()[1], dtype=np.int64)[exact.offset * 2:(exact.offset + n) * 2]
    out = np.empty(2 * n, dtype=np.int64)
    kernels.window_sum_words(np.ascontiguousarray(words), valid, rows.part_start, lo, hi, out)
    validity = pa.array(~empty).buffers()[1]
    return pa.Array.from_buffers(pa.decimal128(38, scale), n, [validity, pa.py_buffer(out.tobytes())],
                                 null_count=int(empty.sum()))
