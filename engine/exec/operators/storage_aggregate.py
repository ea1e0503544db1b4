"""``COUNT(*)``, ``MIN`` and ``MAX`` of a columnstore scan from segment metadata and encoded runs.

``HashAggregateExec`` asks :func:`storage_states` first when it has no group keys and its input is a
bare :class:`ScanExec`; ``None`` means "not answerable here" and the aggregate reads the scan as usual
(in-memory tables, the aggregator, a residual predicate, any other aggregate).

* ``COUNT(*) WHERE <kernel conjuncts>``: per segment, the zone maps decide a conjunct that every row
  (min/max inside the range, no NULLs) or no row can satisfy; a segment decided by them costs nothing.
  Otherwise the undecided columns are read *encoded*: one comparison on a run-end column is counted
  with ``kernels.count_matches`` (cost grows with the runs, not the rows), several are ANDed with the
  kernels on the encoded arrays. No column is ever decoded. The write buffer's rows are counted with
  the same kernels.
* ``COUNT(*)``, ``MIN(col)``, ``MAX(col)`` without a WHERE: segment row counts and min/max, plus the
  write buffer's rows. A segment whose min/max is unknown (long strings, NaN, booleans) gives up.

Deleted rows (delete bitmaps): a segment's zone maps cover every row written, deleted ones too, so
they still prove "no row" and "every row" verdicts; counts then subtract the deleted rows (a segment
every live row of which matches counts ``rows - deleted``), undecided segments with deletions are
counted over their live rows (``Segment.batches`` skips deleted ones), and MIN/MAX of a segment with
deletions reads that segment's column (a deleted row may hold its zone map's extreme).
"""
from __future__ import annotations

from typing import Optional

import pyarrow as pa
import pyarrow.compute as pc

import kernels
from engine.exec.kernel_filters import KernelFilter, KernelPredicate
from engine.exec.operators.base import TaskContext
from engine.exec.operators.scan import ScanExec
from engine.plan.expressions import AggCall, ColumnRef, and_all
from engine.plan.logical import Field
from engine.storage.columnstore.encoding import ColumnStats, may_match


def storage_states(aggregates: tuple[tuple[Field, AggCall], ...], scan: ScanExec,
                   ctx: TaskContext) -> Optional[pa.Table]:
    """One row of partial states (``<id>|count``, ``<id>|min``, ``<id>|max``) for this task's
    partitions of ``scan``, or None when the metadata cannot answer."""
    from engine.storage.columnstore import ColumnstorePartitionStore

    if ctx.storage is None:
        return None
    names = dict(zip((f.id for f in scan.fields), scan.column_names))
    predicate = KernelFilter.of(and_all(list(scan.filters))) if scan.filters else None
    preds = predicate.kernel if predicate is not None else ()
    if predicate is not None and (predicate.residual is not None or any(p.column not in names for p in preds)):
        return None
    for _, call in aggregates:
        if call.distinct or call.func not in ("count_star", "min", "max"):
            return None
        if call.func != "count_star" and (preds or not isinstance(call.arg, ColumnRef) or call.arg.id not in names):
            return None
    stores = [ctx.storage.store(scan.table_id, p) for p in ctx.scan_partitions(scan.replicated)]
    if not all(isinstance(s, ColumnstorePartitionStore) for s in stores):
        return None
    snapshots = [s.snapshot() for s in stores]
    try:
        count = sum(_count_segment(segment, preds, names) for segments, _ in snapshots for segment in segments)
        count += sum(_count_batch(batch.select([names[c] for c in _columns(preds)]), preds, names)
                     for _, buffer in snapshots for batch in buffer)
    except TypeError:           # a constant or layout the kernels refuse: the ordinary scan answers
        return None
    columns, out = [], []
    for f, call in aggregates:
        if call.func == "count_star":
            columns.append(pa.array([count], pa.int64()))
            out.append(f"{f.id}|count")
            continue
        value = _extreme(snapshots, names[call.arg.id], call.func)
        if value is _UNKNOWN:
            return None
        columns.append(pa.array([value], call.type.to_arrow()))
        out.append(f"{f.id}|{call.func}")
    return pa.table(columns, names=out)


_UNKNOWN = object()


def _columns(preds) -> list[str]:
    return list(dict.fromkeys(p.column for p in preds))


def _count_segment(segment, preds: tuple[KernelPredicate, ...], names: dict[str, str]) -> int:
    info = segment.info
    undecided = []
    for p in preds:
        verdict = _zone_verdict(info.columns.get(names[p.column]), info.rows, p)
        if verdict is False:
            return 0
        if verdict is None:
            undecided.append(p)
    if not undecided:
        return info.live_rows
    stored = [names[c] for c in _columns(undecided)]
    whole = [segment.run_end_column(name) for name in stored]
    if all(column is not None for column in whole):       # cached runs: no file read at all
        return _count_batch(pa.RecordBatch.from_arrays(whole, names=stored), tuple(undecided), names)
    return sum(_count_batch(batch, tuple(undecided), names)
               for batch in segment.batches(stored, None, encoded=True))


def _count_batch(batch: pa.RecordBatch, preds: tuple[KernelPredicate, ...], names: dict[str, str]) -> int:
    """Rows of ``batch`` (columns by stored name, possibly encoded) where every conjunct is TRUE."""
    if not preds:
        return batch.num_rows
    if len(preds) == 1 and preds[0].kind == "compare" and not preds[0].negated:
        p = preds[0]
        return kernels.count_matches(batch.column(names[p.column]), p.op, *p.args)
    mask = None
    for p in preds:
        result = kernels.selection(p.evaluate(batch.column(names[p.column])))
        mask = result if mask is None else kernels.and_kleene(mask, result)
    return kernels.count_true(mask)


def _zone_verdict(stats: Optional[ColumnStats], rows: int, p: KernelPredicate) -> Optional[bool]:
    """False: no row of the segment satisfies ``p``; True: every row does; None: the rows decide."""
    if stats is None or p.negated or p.kind not in ("compare", "in"):
        return None
    bound = p.args if p.op in ("between", "in") else p.args[0]
    if not may_match(stats, rows, p.op, bound):
        return False
    low, high = stats.min, stats.max
    if stats.nulls or low is None or high is None or p.kind != "compare":
        return None
    try:
        every = {"eq": lambda v: low == high == v, "ne": lambda v: v < low or v > high,
                 "lt": lambda v: high < v, "le": lambda v: high <= v, "gt": lambda v: low > v,
                 "ge": lambda v: low >= v, "between": lambda v: v[0] <= low and high <= v[1]}[p.op](bound)
    except TypeError:
        return None
    return True if every else None


def _extreme(snapshots, column: str, func: str):
    """MIN or MAX of ``column`` over the snapshots' segments (zone maps; the live rows' column where
    rows are deleted) and write buffers (read)."""
    values = []
    for segments, buffer in snapshots:
        for segment in segments:
            stats = segment.info.columns.get(column)
            if stats is None:
                return _UNKNOWN
            if stats.nulls == segment.info.rows:
                continue
            value = stats.min if func == "min" else stats.max
            if value is None:
                return _UNKNOWN
            if segment.info.deleted:
                arrays = [b.column(0) for b in segment.batches([column], None)]
                if not arrays:
                    continue
                value = _array_extreme(pa.chunked_array(arrays), func)
                if value is _UNKNOWN:
                    return _UNKNOWN
                if value is None:
                    continue
            values.append(value)
        for batch in buffer:
            value = _array_extreme(batch.column(column), func)
            if value is _UNKNOWN:
                return _UNKNOWN
            if value is not None:
                values.append(value)
    if not values:
        return None
    return min(values) if func == "min" else max(values)


def _array_extreme(array, func: str):
    """MIN or MAX of a plain array; None when every value is NULL; _UNKNOWN for types whose order
    the ordinary aggregate defines (floats: NaN)."""
    if array.null_count == len(array):
        return None
    if not (pa.types.is_integer(array.type) or pa.types.is_decimal(array.type)
            or pa.types.is_date(array.type) or pa.types.is_timestamp(array.type)
            or pa.types.is_string(array.type)):
        return _UNKNOWN
    return pc.min_max(array)[func].as_py()
