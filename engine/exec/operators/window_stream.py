"""A window without PARTITION BY past ``memory_limit``: an external sort, then the calls computed over
the sorted rows one chunk at a time (not an operator; ``WindowExec`` uses it).

Its one window partition cannot be split into hash partitions as a PARTITION BY window's can, so the
input is sorted by the ORDER BY keys with the sort's spilled runs (``SortExec.spill_run`` /
``merge_runs``: runs on disk, merged holding one batch of each) and read back in window order. Each
chunk ends at a peer-group boundary, so a row's peers are all in its chunk, and every call is computed
with a little context instead of the whole partition (DuckDB and DataFusion stream their windows'
sorted input alike):

* ranking (ROW_NUMBER, RANK, PERCENT_RANK, CUME_DIST, NTILE): the row's global position, its peer
  group's global bounds and the partition's size (counted while the input came);
* DENSE_RANK: the number of peer groups before the chunk;
* LAG / LEAD and frames with bounded ends (``n PRECEDING`` / ``CURRENT ROW`` / ``m FOLLOWING``): the
  chunk with a *halo* of the rows before and after it as far as the offsets reach;
* running frames (``UNBOUNDED PRECEDING`` to ``CURRENT ROW`` or ``m FOLLOWING``): COUNT, SUM, AVG, MIN,
  MAX of the chunk combined with the same aggregate of every row before it (carried), FIRST_VALUE the
  partition's first row, LAST_VALUE from the chunk and its halo;
* the whole partition (``UNBOUNDED PRECEDING`` to ``UNBOUNDED FOLLOWING``, or no ORDER BY): COUNT, SUM,
  AVG, MIN, MAX of the whole input (aggregated while it came), FIRST_VALUE its first row;
* a bounded start to the end (``n PRECEDING`` / ``CURRENT ROW`` / ``m FOLLOWING`` to ``UNBOUNDED
  FOLLOWING``, ROWS, or RANGE from CURRENT ROW): COUNT, SUM, AVG as the whole input's aggregate less
  that of the rows before the frame's start (carried, and a running frame over the chunk and its halos).

Calls outside these (a RANGE frame with offsets, MIN / MAX / FIRST_VALUE / ... from a bounded start to
UNBOUNDED FOLLOWING, LAST_VALUE / NTH_VALUE over the whole partition, a collated MIN / MAX on a running
frame) do not stream: past the limit such a window fails with MemoryLimitError naming Window (``streams``).
A single peer group larger than the limit fails likewise (it is one chunk).
"""
from __future__ import annotations

import dataclasses
from typing import Iterator, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import kernels
from engine import types as T
from engine.core.expressions import Call, ColumnRef
from engine.core.fields import FrameBound, WindowCall, WindowFrame
from engine.exec.evaluate import evaluate_array
from engine.exec.memory import Reservation, SpillFile
from engine.exec.operators.base import TaskContext, conform, table_to_batches
from engine.exec.operators.sort import SortExec

_RANKING = {"row_number", "rank", "percent_rank", "cume_dist", "ntile"}
_CARRIED = {"count_star", "count", "sum", "avg", "min", "max"}    # running / whole: from aggregates
_LOCAL = _CARRIED | {"first_value", "last_value", "nth_value", "var_pop", "var_samp", "stddev_pop",
                     "stddev_samp"}


def _kind(call: WindowCall, ordered: bool) -> Optional[tuple[str, int, int]]:
    """How ``call`` streams: (kind, rows of halo before, rows of halo after), None when it does not."""
    func = call.func
    if func in _RANKING or func == "dense_rank":
        return (func if func == "dense_rank" else "ranking", 0, 0)
    if func in ("lag", "lead"):
        offset = int(call.options[0])
        return ("local", offset, 0) if func == "lag" else ("local", 0, offset)
    frame = call.frame
    if frame is None or func not in _LOCAL:
        return None
    start, end = frame.start.kind, frame.end.kind
    if frame.units == "range" and not ordered:      # no ORDER BY: every row is a peer of every other
        start, end = "unbounded_preceding", "unbounded_following"
    if start == "unbounded_preceding" and end == "unbounded_following":
        if func in _CARRIED and not (func in ("min", "max") and call.options) or func == "first_value":
            return ("whole", 0, 0)
        return None
    if frame.units == "range" and ("preceding" in (start, end) or "following" in (start, end)):
        return None                                 # a distance in the key: no bounded halo in rows
    if "unbounded_following" == end:
        # a bounded start to the end: the whole input's COUNT / SUM / AVG less the rows before the start
        if func not in ("count_star", "count", "sum", "avg"):
            return None
        offset = int(frame.start.offset or 0)
        return ("suffix", offset if start == "preceding" else 0, offset if start == "following" else 0)
    reach = {"preceding": lambda b: (int(b.offset or 0), 0), "following": lambda b: (0, int(b.offset or 0)),
             "current_row": lambda b: (0, 0)}
    if start == "unbounded_preceding":
        if end == "preceding":                      # the frame ends before the chunk's carried rows do
            return None
        if func == "last_value" or func in _CARRIED and not (func in ("min", "max") and call.options) \
                or func == "first_value":
            return ("running", 0, reach[end](frame.end)[1])
        return None
    before = max(reach[start](frame.start)[0], reach[end](frame.end)[0])
    after = max(reach[start](frame.start)[1], reach[end](frame.end)[1])
    return ("local", before, after)


def streams(calls, ordered: bool) -> bool:
    """Whether every call of a window without PARTITION BY can be computed chunk by chunk."""
    return all(_kind(call, ordered) is not None for _, call in calls)


class _Aggregate:
    """COUNT(*), COUNT, SUM, MIN, MAX and the first value of the rows seen so far (vectorised per
    batch): a running frame's rows before the chunk, or the whole partition."""

    def __init__(self):
        self.rows = 0
        self.count = 0
        self.sum: Optional[pa.Scalar] = None
        self.min: Optional[pa.Scalar] = None
        self.max: Optional[pa.Scalar] = None
        self.first: Optional[pa.Array] = None       # a one-row array: the first row's value

    def add(self, values: Optional[pa.Array], rows: int) -> None:
        if self.first is None and values is not None and len(values):
            self.first = values.slice(0, 1)
        self.rows += rows
        if values is None or not len(values):
            return
        valid = len(values) - values.null_count
        if not valid:
            return
        self.count += valid
        self.sum = _add(self.sum, pc.sum(_summable(values)))
        for name, pick, better in (("min", pc.min, pc.less), ("max", pc.max, pc.greater)):
            new = pick(values)
            old = getattr(self, name)
            if old is None or better(new, old).as_py():
                setattr(self, name, new)


def _summable(values: pa.Array) -> pa.Array:
    """Values as the window's SUM adds them: float64, or exact decimal128(38, scale)."""
    if pa.types.is_floating(values.type):
        return values.cast(pa.float64())
    scale = values.type.scale if pa.types.is_decimal(values.type) else 0
    return values.cast(pa.decimal128(38, scale))


def _add(total, more):
    """``total`` + ``more`` (arrays or scalars; None or NULL: nothing yet), decimals without the
    precision overflow Arrow's decimal128 addition raises (through decimal256)."""
    if total is None:
        return more
    if pa.types.is_decimal(total.type):
        wide = pa.decimal256(60, total.type.scale)
        return pc.add_checked(total.cast(wide), more.cast(wide)).cast(total.type)
    return pc.add(total, more)


def _broadcast(value: pa.Array, n: int) -> pa.Array:
    return value.take(pa.array(np.zeros(n, dtype=np.int64)))


class SortedWindow:
    """A spilling window's input (``add``), sorted on disk, and its rows with the calls' columns
    (``windowed``). ``memory``: its own reservation, for what it holds of the input before a run."""

    def __init__(self, window, ctx: TaskContext, memory: Reservation):
        from engine.exec.operators.window import _Rows     # the window's helpers (it imports this module)
        self._rows_of = _Rows
        self.window = window
        self.ctx = ctx
        self.memory = memory
        self.schema = window.input.schema
        self.ordered = bool(window.order_by)
        self.sorter = SortExec(window.input, window.order_by)
        self.kinds = [_kind(call, self.ordered) for _, call in window.calls]
        self.before = max(k[1] for k in self.kinds)
        self.after = max(k[2] for k in self.kinds)
        self.held: list[pa.RecordBatch] = []
        self.runs: list[SpillFile] = []
        self.rows = 0
        self.totals = {i: _Aggregate() for i, k in enumerate(self.kinds) if k[0] in ("whole", "suffix")}

    def add(self, batch: pa.RecordBatch) -> None:
        batch = conform(batch, self.schema)
        self.rows += batch.num_rows
        for i, total in self.totals.items():
            total.add(self._argument(i, batch), batch.num_rows)
        self.held.append(batch)
        if not self.memory.try_grow(2 * batch.nbytes):
            self._spill_run()                   # what was held and the batch (past the share alone)

    def _argument(self, i: int, batch) -> Optional[pa.Array]:
        call = self.window.calls[i][1]
        if call.func == "count_star" or not call.args:
            return None
        from engine.exec.operators.window import _plain
        return _plain(evaluate_array(call.args[0], batch, self.ctx.params))

    def _spill_run(self) -> None:
        if not self.held:
            return
        table = pa.Table.from_batches(self.held, schema=self.schema)
        self.held = []
        if self.ordered:
            self.runs.append(self.sorter.spill_run(table, self.ctx, "Window"))
        else:                                           # no ORDER BY: any order is the window's
            run = self.ctx.memory.spill_file(self.schema, "Window")
            for batch in table.to_batches(max_chunksize=1 << 12):
                run.write(batch)
            self.runs.append(run.finish())
        self.memory.free()

    def _sorted(self) -> Iterator[pa.RecordBatch]:
        self._spill_run()
        if self.ordered:
            yield from self.sorter.merge_runs(self.runs, self.memory, "Window")
            return
        for run in self.runs:
            yield from run.read()
            run.delete()

    def windowed(self, memory: Reservation) -> Iterator[pa.RecordBatch]:
        """The rows in window order with the calls' columns; ``memory`` accounts the chunk held."""
        limit = self.ctx.memory.limit or (64 << 20)
        target = min(max(limit // 32, 32 << 10), 16 << 20)      # bytes of rows per chunk
        self.base = 0
        self.groups = 0                                 # peer groups before the chunk (DENSE_RANK)
        self.carried = {i: _Aggregate() for i, k in enumerate(self.kinds) if k[0] in ("running", "suffix")}
        self.halo = self.schema.empty_table()           # the rows just before the chunk
        pending: list[pa.RecordBatch] = []
        size = rows = 0
        for merged in self._sorted():
            # the merge's batches can be larger than a chunk: taken a chunk's worth at a time
            step = max(1, target * merged.num_rows // max(merged.nbytes, 1))
            for start in range(0, merged.num_rows, step):
                batch = merged.slice(start, step)
                pending.append(batch)
                size += batch.nbytes
                rows += batch.num_rows
                self._account(memory, size)
                if size >= target and rows > self.after:
                    pending = yield from self._emit(pending, final=False)
                    size = sum(b.nbytes for b in pending)
                    rows = sum(b.num_rows for b in pending)
        if rows:
            yield from self._emit(pending, final=True)

    def _account(self, memory: Reservation, size: int) -> None:
        # the pending rows and the halo, and their copy with the calls' columns
        want = 2 * (size + self.halo.nbytes)
        if not memory.resize(want):
            raise self.ctx.memory.error("Window", want - memory.size, spilled=True)

    def _emit(self, pending: list, final: bool):
        """Compute the chunk that ends at the last peer boundary before the halo after it; returns
        the rows left pending."""
        table = pa.Table.from_batches(pending, schema=self.schema).combine_chunks()
        n = table.num_rows
        batch = table.to_batches()[0] if n else None
        order_keys = self._order_keys(batch)
        new_peer = self._new_peer(order_keys, n)
        if final:
            cut = n
        else:
            limit = n - self.after
            starts = np.flatnonzero(new_peer[1:limit + 1]) + 1 if self.ordered else np.array([limit])
            if not len(starts):                         # one peer group so far: read on
                return pending
            cut = int(starts[-1])
        chunk = table.slice(0, cut)
        ext = pa.concat_tables([self.halo, table.slice(0, min(n, cut + self.after))]).combine_chunks()
        columns = list(chunk.columns)
        for i, ((field, call), kind) in enumerate(zip(self.window.calls, self.kinds)):
            values = self._compute(i, call, kind[0], chunk, ext, new_peer[:cut], order_keys)
            target = field.type.to_arrow()
            columns.append(values if values.type == target else values.cast(target))
        names = [f.id for f in self.window.fields]
        yield from table_to_batches(pa.Table.from_arrays(columns, names=names))
        # what the next chunk carries: the aggregates and counts of the rows before it, its halo
        chunk_batch = chunk.to_batches()[0] if cut else None
        for i, carried in self.carried.items():
            carried.add(self._argument(i, chunk_batch), cut)
        self.groups += int(new_peer[:cut].sum()) if self.ordered else (1 if self.base == 0 else 0)
        self.base += cut
        if self.before:
            halo = pa.concat_tables([self.halo, chunk])
            self.halo = halo.slice(max(0, halo.num_rows - self.before)).combine_chunks()
        return [b for b in table.slice(cut).to_batches() if b.num_rows]

    def _order_keys(self, batch) -> list:
        from engine.exec.operators.window import _plain
        if batch is None:
            return []
        return [_plain(evaluate_array(k.expr, batch, self.ctx.params)) for k in self.window.order_by]

    def _new_peer(self, order_keys: list, n: int) -> np.ndarray:
        from engine.exec.operators.window import _changes
        new_peer = np.zeros(n, dtype=bool)
        if n:
            new_peer[0] = True
        for key in order_keys:
            new_peer |= _changes(key)
        return new_peer

    def _compute(self, i: int, call: WindowCall, kind: str, chunk: pa.Table, ext: pa.Table, new_peer, order_keys):
        from engine.exec.operators.window import _compute
        params = self.ctx.params
        cut = chunk.num_rows
        if kind == "ranking":
            return _compute(call, None, self._global_rows(new_peer, cut), [], (), params)
        if kind == "dense_rank":
            groups = np.cumsum(new_peer) if self.ordered else np.ones(cut, dtype=np.int64)
            return pa.array(self.groups * self.ordered + groups)
        if kind == "whole":
            return self._whole(i, call, chunk)
        if kind == "suffix":
            return self._suffix(i, call, cut, ext)
        if kind == "local":
            start = self.halo.num_rows
            rows = self._local_rows(ext)
            values = _compute(call, ext.to_batches()[0], rows, self._order_keys(ext.to_batches()[0]),
                              self.window.order_by, params)
            return values.slice(start, cut)
        # running: the chunk (and its halo after) alone, then combined with the rows before it
        local = ext.slice(self.halo.num_rows).combine_chunks()
        batch = local.to_batches()[0]
        rows = self._local_rows(local)
        keys = self._order_keys(batch)
        order_by = self.window.order_by
        carried = self.carried[i]
        if call.func == "last_value":
            return _compute(call, batch, rows, keys, order_by, params).slice(0, cut)
        if call.func == "first_value":
            first = carried.first if carried.first is not None else self._argument(i, batch).slice(0, 1)
            return _broadcast(first, cut)
        part = {f: _compute(dataclasses.replace(call, func=f), batch, rows, keys, order_by, params).slice(0, cut)
                for f in (("sum", "count") if call.func == "avg" else (call.func,))}
        if call.func == "count_star":
            return pc.add(part["count_star"], carried.rows)
        counts = pc.add(part["count"], carried.count) if "count" in part else None
        if call.func == "count":
            return counts
        if call.func in ("min", "max"):
            local_value, old = part[call.func], getattr(carried, call.func)
            if old is None:
                return local_value
            better = (pc.less if call.func == "min" else pc.greater)(old, local_value)
            return pc.if_else(pc.or_kleene(local_value.is_null(), better), old, local_value)
        total = part["sum"]
        if carried.sum is not None:
            total = pc.if_else(total.is_null(), carried.sum.cast(total.type), _add(total, carried.sum))
        return total if call.func == "sum" else _average(total, counts, call, params)

    def _suffix(self, i: int, call: WindowCall, cut: int, ext: pa.Table) -> pa.Array:
        """COUNT, SUM or AVG over a frame from a bounded start to UNBOUNDED FOLLOWING: the whole input's
        aggregate (taken while it came) less that of the rows before the frame's start: those before the
        chunk's halo (carried, less the halo's own) and, in the chunk with its halos, a running frame
        that ends just before the start (for RANGE CURRENT ROW: before the row's peer group)."""
        from engine.exec.operators.window import _compute
        frame, bound = call.frame, call.frame.start
        offset = int(bound.offset or 0)
        if frame.units == "range" or bound.kind == "current_row" or (bound.kind == "following" and not offset):
            end = FrameBound("preceding", 1)
        elif bound.kind == "preceding":
            end = FrameBound("preceding", offset + 1)
        else:
            end = FrameBound("following", offset - 1)
        before = WindowFrame("rows", FrameBound("unbounded_preceding"), end)
        halo = self.halo.num_rows
        batch = ext.to_batches()[0]
        rows = self._local_rows(ext)
        keys, order_by, params = self._order_keys(batch), self.window.order_by, self.ctx.params
        part = {}
        for func in (("sum", "count") if call.func in ("sum", "avg") else (call.func,)):   # a SUM: NULL on no value
            values = _compute(dataclasses.replace(call, func=func, frame=before), batch, rows, keys, order_by, params)
            if frame.units == "range":      # the rows before the row's peer group
                values = values.take(pa.array(rows.peer_start))
            part[func] = values.slice(halo, cut)
        earlier = _Aggregate()              # the halo's rows: counted in the carried aggregate already
        if halo:
            earlier.add(self._argument(i, self.halo.to_batches()[0]), halo)
        carried, total = self.carried[i], self.totals[i]
        if call.func == "count_star":
            return pc.subtract(pa.scalar(total.rows - carried.rows + earlier.rows, pa.int64()), part["count_star"])
        counts = pc.subtract(pa.scalar(total.count - carried.count + earlier.count, pa.int64()), part["count"])
        if call.func == "count":
            return counts
        if total.sum is None:               # no value at all: every frame's SUM is NULL
            return pa.nulls(cut, part["sum"].type)
        # total - (carried - halo) - the running part, exactly (decimals through decimal256)
        outside = _add(total.sum, pc.negate(carried.sum)) if carried.sum is not None else total.sum
        if earlier.sum is not None:
            outside = _add(outside, earlier.sum)
        running = pc.fill_null(part["sum"], pa.scalar(0, part["sum"].type))
        sums = _add(pc.negate(running.cast(outside.type)), outside)
        sums = pc.if_else(pc.equal(counts, 0), pa.scalar(None, sums.type), sums)
        return sums if call.func == "sum" else _average(sums, counts, call, params)

    def _whole(self, i: int, call: WindowCall, chunk: pa.Table) -> pa.Array:
        total = self.totals[i]
        func, cut = call.func, chunk.num_rows
        if func == "first_value":
            if self.base == 0:                  # the first row in window order (not in input order)
                total.first = self._argument(i, chunk.to_batches()[0]).slice(0, 1)
            return _broadcast(total.first, cut)
        if func == "count_star":
            return pa.array(np.full(cut, total.rows, dtype=np.int64))
        if func == "count":
            return pa.array(np.full(cut, total.count, dtype=np.int64))
        value = {"sum": total.sum, "avg": total.sum, "min": total.min, "max": total.max}[func]
        if value is None or not value.is_valid:
            column = pa.nulls(cut, value.type if value is not None else pa.int64())
        else:
            column = _broadcast(pa.array([value.as_py()], value.type), cut)
        if func != "avg":
            return column
        return _average(column, pa.array(np.full(cut, total.count, dtype=np.int64)), call, self.ctx.params)

    def _global_rows(self, new_peer: np.ndarray, cut: int):
        index = self.base + np.arange(cut, dtype=np.int64)
        zeros, total = np.zeros(cut, dtype=np.int64), np.full(cut, self.rows, dtype=np.int64)
        if not self.ordered:
            return self._rows_of(index, zeros, total, zeros, total, new_peer)
        peer_start, peer_end = np.empty(cut, dtype=np.int64), np.empty(cut, dtype=np.int64)
        kernels.segment_bounds(np.ascontiguousarray(new_peer).view(np.uint8), peer_start, peer_end)
        return self._rows_of(index, zeros, total, peer_start + self.base, peer_end + self.base, new_peer)

    def _local_rows(self, table: pa.Table):
        keys = self._order_keys(table.to_batches()[0]) if table.num_rows else []
        return self._rows_of.of([], keys, table.num_rows)


def _average(total: pa.Array, counts: pa.Array, call: WindowCall, params) -> pa.Array:
    """SUM / COUNT with the window's (and GROUP BY's) AVG division, types and rounding alike."""
    pair = pa.RecordBatch.from_arrays([total, counts], names=["sum", "count"])
    quotient = Call("divide", (ColumnRef("sum", T.from_arrow(total.type)), ColumnRef("count", T.BIGINT)), call.type)
    return evaluate_array(quotient, pair, params)
