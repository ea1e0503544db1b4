"""A window without PARTITION BY past ``memory_limit``: an external sort, then the calls computed over
the sorted rows one chunk at a time (not an operator; ``WindowExec`` uses it).

Its one window partition cannot be split into hash partitions as a PARTITION BY window's can, so the
input is sorted by the ORDER BY keys with the sort's spilled runs (``SortExec.spill_run`` /
``merge_runs``: runs on disk, merged holding one batch of each) and read back in window order. Each
chunk ends at a peer-group boundary, so a row's peers are all in its chunk, and every call is computed
with a little context instead of the whole partition (DuckDB and DataFusion stream their windows'
sorted input alike). A chunk ends inside a peer group when no call needs whole ones (``_needs_peers``:
RANGE frames, CUME_DIST); a peer group going on carries its start into the next chunk.

* ranking (ROW_NUMBER, RANK, PERCENT_RANK, CUME_DIST, NTILE): the row's global position, its peer
  group's global bounds and the partition's size (counted while the input came);
* DENSE_RANK: the number of peer groups before the chunk;
* LAG / LEAD and frames with bounded ends (``n PRECEDING`` / ``CURRENT ROW`` / ``m FOLLOWING``): the
  chunk with a *halo* of the rows before and after it as far as the offsets reach; for a RANGE
  distance, of the rows whose keys it reaches (``_search_keys``: a chunk waits for rows past its last
  key plus the distance, the halo keeps those within the distance before the next chunk's keys);
* running frames (``UNBOUNDED PRECEDING`` to ``CURRENT ROW`` or ``m FOLLOWING``): COUNT, SUM, AVG, MIN,
  MAX of the chunk combined with the same aggregate of every row before it (carried), FIRST_VALUE the
  partition's first row, LAST_VALUE from the chunk and its halo;
* the whole partition (``UNBOUNDED PRECEDING`` to ``UNBOUNDED FOLLOWING``, or no ORDER BY): COUNT, SUM,
  AVG, MIN, MAX of the whole input (aggregated while it came), FIRST_VALUE its first row, LAST_VALUE
  and NTH_VALUE from a first pass (below);
* a bounded start to the end (``n PRECEDING`` / ``CURRENT ROW`` / ``m FOLLOWING`` to ``UNBOUNDED
  FOLLOWING``, ROWS, or RANGE from CURRENT ROW): COUNT, SUM, AVG as the whole input's aggregate less
  that of the rows before the frame's start (carried, and a running frame over the chunk and its halos);
  MIN, MAX and LAST_VALUE (also from a RANGE distance) from a first pass over the sorted rows, written
  to disk with each batch's MIN / MAX, whose second pass gives every row its MIN / MAX to the end
  (``_tailed``); FIRST_VALUE and NTH_VALUE the value at the frame's start, in the halo.

Calls outside these (COUNT / SUM / AVG from a RANGE distance to UNBOUNDED FOLLOWING, NTH_VALUE from a
RANGE start to it, a collated MIN / MAX on a running or whole frame) do not stream: past the limit
such a window fails with MemoryLimitError naming Window (``streams``). A peer group larger than the
limit fails likewise when a call needs it whole (it is one chunk), and so does a RANGE halo.

Over 600 lines for a reason: every kind of call above reads the same chunk, halo and carried state
of one sorted pass, so the pass and the calls it serves are one job (split, each file would take the
whole state as a parameter).
"""
from __future__ import annotations

import dataclasses
from typing import Iterator, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import kernels
from engine import types as T
from engine.core.collation_keys import collation_keys
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
    """How ``call`` streams: (kind, rows of halo before, rows of halo after), None when it does not.
    A RANGE frame's distances in the key reach further as a halo of key values (``_key_bounds``)."""
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
    collated = func in ("min", "max") and bool(call.options)
    if frame.units == "range" and not ordered:      # no ORDER BY: every row is a peer of every other
        start, end = "unbounded_preceding", "unbounded_following"
    if start == "unbounded_preceding" and end == "unbounded_following":
        if func in _CARRIED and not collated or func in ("first_value", "last_value", "nth_value"):
            return ("whole", 0, 0)                  # LAST_VALUE / NTH_VALUE: from the first pass
        return None
    ranged = frame.units == "range" and ("preceding" in (start, end) or "following" in (start, end))

    def reach(bound: FrameBound) -> tuple[int, int]:
        """Rows a ROWS bound reaches before and after the current row (a RANGE one: in keys)."""
        if frame.units == "range" or bound.kind in ("current_row", "unbounded_preceding", "unbounded_following"):
            return (0, 0)
        offset = int(bound.offset or 0)
        return (offset, 0) if bound.kind == "preceding" else (0, offset)

    if end == "unbounded_following":
        if func in ("count_star", "count", "sum", "avg") and not ranged:
            # the whole input's COUNT / SUM / AVG less the rows before the start
            offset = int(frame.start.offset or 0)
            return ("suffix", offset if start == "preceding" else 0, offset if start == "following" else 0)
        if func in ("min", "max", "first_value", "last_value"):
            # the value at the frame's start of a column made by the first pass (its suffix MIN / MAX)
            return ("tail",) + reach(frame.start)
        if func == "nth_value" and frame.units == "rows":
            before, after = reach(frame.start)
            return ("tail", before, after + int(call.options[0]) - 1)
        return None
    if start == "unbounded_preceding":
        if end == "preceding":                      # the frame ends before the chunk's carried rows do
            return None
        if func == "last_value" or func in _CARRIED and not collated or func == "first_value":
            return ("running", 0, reach(frame.end)[1])
        return None
    return ("local", max(reach(frame.start)[0], reach(frame.end)[0]), max(reach(frame.start)[1], reach(frame.end)[1]))


def _key_bounds(call: WindowCall) -> tuple:
    """The bounds of ``call``'s RANGE frame that are distances in the ORDER BY key."""
    frame = call.frame
    if frame is None or frame.units != "range":
        return ()
    return tuple(b for b in (frame.start, frame.end) if b.kind in ("preceding", "following"))


def _needs_peers(call: WindowCall, kind: str, ordered: bool) -> bool:
    """Whether ``call`` needs a row's whole peer group in its chunk (a chunk may end inside a peer
    group when no call does: ROWS frames, ROW_NUMBER, RANK, ... carry what they need)."""
    if not ordered or kind in ("whole", "dense_rank"):
        return False
    if kind == "ranking":
        return call.func == "cume_dist"
    return call.frame is not None and call.frame.units == "range"


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
        if pa.types.is_integer(values.type) or pa.types.is_floating(values.type) or pa.types.is_decimal(values.type):
            self.sum = _add(self.sum, pc.sum(_summable(values)))        # (FIRST_VALUE's text: no sum)
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
        # a chunk may end inside a peer group unless a call needs whole ones (RANGE frames, CUME_DIST)
        self.peers = any(_needs_peers(call, k[0], self.ordered) for (_, call), k in zip(window.calls, self.kinds))
        # RANGE distances: the halo holds the rows whose keys the frames reach (the one ORDER BY key)
        self.key_bounds = tuple(b for _, call in window.calls for b in _key_bounds(call))
        # the calls that need a first pass over the sorted rows (their last value, suffix MIN / MAX)
        self.tails = [i for i, ((_, call), k) in enumerate(zip(window.calls, self.kinds))
                      if k[0] == "tail" and call.func in ("min", "max", "last_value")
                      or k[0] == "whole" and call.func in ("last_value", "nth_value")]
        self.stream_schema = self.schema
        if self.tails:
            empty = self.schema.empty_table().to_batches(max_chunksize=1) or [
                pa.RecordBatch.from_arrays([pa.array([], f.type) for f in self.schema], schema=self.schema)]
            for i in self.tails:
                self.stream_schema = self.stream_schema.append(pa.field(f"__tail{i}", self._argument(i, empty[0]).type))
        self.held: list[pa.RecordBatch] = []
        self.runs: list[SpillFile] = []
        self.rows = 0
        self.totals = {i: _Aggregate() for i, ((_, call), k) in enumerate(zip(window.calls, self.kinds))
                       if k[0] == "suffix" or k[0] == "whole" and call.func not in ("last_value", "nth_value")}

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

    def _tailed(self) -> Iterator[pa.RecordBatch]:
        """The sorted rows, with a column per call in ``tails`` when there are any: a first pass writes
        them to disk, keeping per batch the MIN / MAX of each such call's argument (and the last row's
        value, the NTH_VALUE's); a second reads them back and appends each row's MIN / MAX from it to
        the end (of its batch's rows after it, combined with the later batches' own, taken backwards
        over the batches' summaries) or the last value."""
        if not self.tails:
            yield from self._sorted()
            return
        spilled = self.ctx.memory.spill_file(self.schema, "Window")
        try:
            summaries: list[dict] = []
            self.values = {}                        # LAST_VALUE's / NTH_VALUE's value: a one-row array
            position = 0
            for batch in self._sorted():
                if not batch.num_rows:
                    continue
                spilled.write(batch)
                n, summary = batch.num_rows, {}
                for i in self.tails:
                    call, argument = self.window.calls[i][1], self._argument(i, batch)
                    if call.func in ("min", "max"):
                        summary[i] = _batch_extreme(call, argument)
                    elif call.func == "last_value":
                        self.values[i] = argument.slice(n - 1, 1)
                    elif position <= int(call.options[0]) - 1 < position + n:
                        self.values[i] = argument.slice(int(call.options[0]) - 1 - position, 1)
                summaries.append(summary)
                position += n
            later: list[dict] = [{} for _ in summaries]     # each batch's: the extremes of the batches after it
            so_far: dict = {}
            for j in range(len(summaries) - 1, -1, -1):
                later[j] = dict(so_far)
                for i, value in summaries[j].items():
                    so_far[i] = _extreme(self.window.calls[i][1].func, so_far.get(i), value)
            for j, batch in enumerate(spilled.read()):
                columns = list(batch.columns)
                for i in self.tails:
                    call, n = self.window.calls[i][1], batch.num_rows
                    if call.func in ("min", "max"):
                        columns.append(_suffix_extreme(call, self._argument(i, batch), later[j].get(i)))
                    else:
                        value = self.values.get(i)
                        field = self.stream_schema.field(f"__tail{i}")
                        columns.append(_broadcast(value, n) if value is not None else pa.nulls(n, field.type))
                yield pa.RecordBatch.from_arrays(columns, schema=self.stream_schema)
        finally:
            spilled.delete()

    def windowed(self, memory: Reservation) -> Iterator[pa.RecordBatch]:
        """The rows in window order with the calls' columns; ``memory`` accounts the chunk held."""
        limit = self.ctx.memory.limit or (64 << 20)
        target = min(max(limit // 32, 32 << 10), 16 << 20)      # bytes of rows per chunk
        self.base = 0
        self.groups = 0                                 # peer groups before the chunk (DENSE_RANK)
        self.group_start = 0                            # where the last peer group so far began
        self.last_keys: list = []                       # the last row's ORDER BY keys (one-row arrays)
        self.carried = {i: _Aggregate() for i, k in enumerate(self.kinds) if k[0] in ("running", "suffix")}
        self.halo = self.stream_schema.empty_table()    # the rows just before the chunk
        pending: list[pa.RecordBatch] = []
        size = rows = 0
        for merged in self._tailed():
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
        table = pa.Table.from_batches(pending, schema=self.stream_schema).combine_chunks()
        n = table.num_rows
        batch = table.to_batches()[0] if n else None
        order_keys = self._order_keys(batch)
        new_peer = self._new_peer(order_keys, n)
        if final:
            cut = n
        else:
            limit = n - self.after
            if self.key_bounds:                         # the rows whose frames end before the last row's key
                keys, _ = self._search_keys(order_keys[0])
                before, after = self._key_reach(order_keys[0])
                limit = min(limit, int(np.searchsorted(keys, _shifted(keys[-1], -after, -1), side="left")))
            if limit < 1:
                return pending
            if self.ordered and self.peers:
                starts = np.flatnonzero(new_peer[1:limit + 1]) + 1
                if not len(starts):                     # one peer group so far: read on
                    return pending
                cut = int(starts[-1])
            else:
                cut = limit
        chunk = table.slice(0, cut)
        reach = n if self.key_bounds else min(n, cut + self.after)
        ext = pa.concat_tables([self.halo, table.slice(0, reach)]).combine_chunks()
        columns = list(chunk.columns)[:len(self.schema)]
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
        starts = np.flatnonzero(new_peer[:cut])
        if len(starts):
            self.group_start = self.base + int(starts[-1])
        self.last_keys = [k.slice(cut - 1, 1) for k in order_keys]
        self.base += cut
        if self.before or self.key_bounds:
            halo = pa.concat_tables([self.halo, chunk]).combine_chunks()
            keep = self.before
            if self.key_bounds and halo.num_rows:
                keys, valid = self._search_keys(self._order_keys(halo.to_batches()[0])[0])
                if valid[-1]:                           # (a NULL key's frame is its peers: no halo)
                    reach, _ = self._key_reach(order_keys[0])
                    first = int(np.searchsorted(keys, _shifted(keys[-1], -reach, -1), side="left"))
                    keep = max(keep, halo.num_rows - first)
            self.halo = halo.slice(max(0, halo.num_rows - keep)).combine_chunks()
        return [b for b in table.slice(cut).to_batches() if b.num_rows]

    def _search_keys(self, key: pa.Array) -> tuple[np.ndarray, np.ndarray]:
        """The ORDER BY key ascending as the RANGE kernel sees it (negated when descending), NULLs at
        the end they sort to as the smallest or largest value, so ``np.searchsorted`` finds rows by key;
        and which keys are not NULL."""
        from engine.exec.operators.window import _range_key
        values, _ = _range_key(key, self.window.order_by[0], self.key_bounds)
        valid = np.asarray(key.is_valid()) if key.null_count else np.ones(len(key), dtype=bool)
        if not valid.all():
            info = np.iinfo(np.int64) if values.dtype == np.int64 else None
            low, high = (info.min, info.max) if info is not None else (-np.inf, np.inf)
            values = np.where(valid, values, low if self.window.order_by[0].nulls_first else high)
        return values, valid

    def _key_reach(self, key: pa.Array) -> tuple:
        """How far the RANGE frames reach before and after a row, in ``_search_keys``' units (floats
        widened a little, so a rounding never leaves a row in reach out of the halo)."""
        from engine.exec.operators.window import _range_key
        values, delta_of = _range_key(key.slice(0, 0), self.window.order_by[0], self.key_bounds)
        before = max([-delta_of(b) for b in self.key_bounds if b.kind == "preceding"] + [0])
        after = max([delta_of(b) for b in self.key_bounds if b.kind == "following"] + [0])
        if values.dtype != np.int64:
            return before * (1 + 1e-9) + 1e-9, after * (1 + 1e-9) + 1e-9
        return before, after

    def _order_keys(self, batch) -> list:
        from engine.exec.operators.window import _plain
        if batch is None:
            return []
        return [_plain(evaluate_array(k.expr, batch, self.ctx.params)) for k in self.window.order_by]

    def _new_peer(self, order_keys: list, n: int) -> np.ndarray:
        """Where a peer group starts; the first row does unless it continues the last chunk's."""
        from engine.exec.operators.window import _changes
        new_peer = np.zeros(n, dtype=bool)
        if n:
            new_peer[0] = True
        for key in order_keys:
            new_peer |= _changes(key)
        if n and self.last_keys:
            new_peer[0] = any(bool(_changes(pa.concat_arrays([last, key.slice(0, 1).cast(last.type)]))[1])
                              for last, key in zip(self.last_keys, order_keys))
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
        if kind == "tail":
            return self._tail(i, call, cut, ext)
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

    def _tail(self, i: int, call: WindowCall, cut: int, ext: pa.Table) -> pa.Array:
        """A frame from a bounded start to UNBOUNDED FOLLOWING: MIN / MAX / LAST_VALUE are the first
        pass's column at the frame's start (the MIN / MAX from there to the end, the last value),
        FIRST_VALUE / NTH_VALUE the argument there (or n - 1 rows on); the chunk's halos hold the
        start (the frame is empty when the start is past the last row)."""
        from engine.exec.operators.window import _frame_bounds, _take
        batch = ext.to_batches()[0]
        rows = self._local_rows(ext)
        lo, _ = _frame_bounds(call.frame, rows, self._order_keys(batch), self.window.order_by)
        lo = lo[self.halo.num_rows:self.halo.num_rows + cut]
        if call.func in ("first_value", "nth_value"):
            values = self._argument(i, batch)
            source = lo + (int(call.options[0]) - 1 if call.func == "nth_value" else 0)
        else:
            values = ext.column(f"__tail{i}").combine_chunks()
            source = lo
        return _take(values, source, source < ext.num_rows)

    def _whole(self, i: int, call: WindowCall, chunk: pa.Table) -> pa.Array:
        func, cut = call.func, chunk.num_rows
        if func in ("last_value", "nth_value"):     # the first pass's value, on every row
            return chunk.column(f"__tail{i}").combine_chunks()
        total = self.totals[i]
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
        peer_start += self.base
        if cut and not new_peer[0]:             # the last chunk's peer group goes on (its end: unused)
            peer_start[peer_start == self.base] = self.group_start
        return self._rows_of(index, zeros, total, peer_start, peer_end + self.base, new_peer)

    def _local_rows(self, table: pa.Table):
        keys = self._order_keys(table.to_batches()[0]) if table.num_rows else []
        return self._rows_of.of([], keys, table.num_rows)


def _shifted(value, delta, direction: int):
    """``value + delta`` in the search keys' units, saturating at int64's ends (a NULL's key)."""
    if isinstance(value, (np.integer, int)):
        info = np.iinfo(np.int64)
        return min(max(int(value) + int(delta), info.min), info.max)
    return float(value) + float(delta)


def _keys(call: WindowCall, values: pa.Array) -> pa.Array:
    """What MIN / MAX compare: the values, or their collation keys (text under a _ci collation)."""
    return collation_keys(values, call.options[0]) if call.options else values


def _batch_extreme(call: WindowCall, values: pa.Array):
    """A batch's MIN / MAX as (its comparison key, its value), scalars; None when all are NULL."""
    keys = _keys(call, values)
    if keys.null_count == len(keys):
        return None
    key = (pc.min if call.func == "min" else pc.max)(keys)
    index = pc.index(keys, key).as_py()
    return key, values[index]


def _extreme(func: str, old, new):
    """The smaller (MIN) or larger (MAX) of two (key, value) pairs, None being no value."""
    if old is None:
        return new
    if new is None:
        return old
    better = (pc.less if func == "min" else pc.greater)(new[0], old[0]).as_py()
    return new if better else old


def _suffix_extreme(call: WindowCall, values: pa.Array, later) -> pa.Array:
    """Each row's MIN / MAX over itself and the rows after it in its batch (the sliding-frame kernel
    over frames [row, end)), combined with ``later`` (the later batches' (key, value); None: none)."""
    from engine.exec.operators.window import _order_preserving_int64, _take
    n = len(values)
    keys = _keys(call, values)
    valid = np.ascontiguousarray(np.asarray(values.is_valid()).view(np.uint8)) if values.null_count else \
        np.ones(n, dtype=np.uint8)
    chosen = np.empty(n, dtype=np.int64)
    kernels.window_arg_extreme(_order_preserving_int64(keys), valid, np.arange(n, dtype=np.int64),
                               np.full(n, n, dtype=np.int64), call.func == "max", chosen)
    found = chosen >= 0
    local = _take(values, chosen, found)
    if later is None:
        return local
    better = (pc.less if call.func == "min" else pc.greater)(later[0], _take(keys, chosen, found))
    return pc.if_else(pc.or_kleene(local.is_null(), better), later[1].cast(local.type), local)


def _average(total: pa.Array, counts: pa.Array, call: WindowCall, params) -> pa.Array:
    """SUM / COUNT with the window's (and GROUP BY's) AVG division, types and rounding alike."""
    pair = pa.RecordBatch.from_arrays([total, counts], names=["sum", "count"])
    quotient = Call("divide", (ColumnRef("sum", T.from_arrow(total.type)), ColumnRef("count", T.BIGINT)), call.type)
    return evaluate_array(quotient, pair, params)
