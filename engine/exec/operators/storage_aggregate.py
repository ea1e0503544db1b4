"""``COUNT(*)``, ``COUNT(col)``, ``MIN`` and ``MAX`` of a columnstore scan from segment metadata and
encoded runs, with or without a WHERE of kernel conjuncts.

``HashAggregateExec`` asks :func:`storage_states` first where the planner chose it (``stored="metadata"``:
no group keys, its input a bare :class:`ScanExec`, engine.optimizer.aggregate_paths); ``None`` means "not answerable here" and the aggregate reads the scan as usual
(the aggregator, a residual predicate, any other aggregate, a float MIN/MAX that needs data).

Per segment, the zone maps decide a conjunct that every row (min/max inside the range, no NULLs) or
no row can satisfy; a segment no row of which matches costs nothing. A segment every row of which
matches and that has no deleted rows is answered from its manifest entry alone: ``COUNT(*)`` its row
count, ``COUNT(col)`` its row count less the column's NULLs, ``MIN``/``MAX`` its zone map (exact:
zone maps are computed from every row written). Only the other segments are read, and only the
columns the undecided conjuncts and the aggregates need, *encoded*:

* ``COUNT(*)`` alone: one comparison on a run-end column is counted with ``kernels.count_matches``
  over the segment's cached runs (cost grows with the runs, not the rows), several are ANDed with the
  kernels on the encoded arrays; no column is ever decoded;
* otherwise the kernels' selection of the undecided conjuncts masks the aggregate columns (decoded
  after filtering), whose valid values are counted or whose min/max is taken.

An in-memory table has the same segments (``engine.storage.memory``). The write buffer's (or the
in-memory tail's) rows are handled like an undecided segment's: the conjuncts only select, no
matching row is materialized.

Deleted rows (delete bitmaps): a segment's zone maps cover every row written, deleted ones too, so
they still prove "no row" and "every row" verdicts, but a segment with deletions is read (over its
live rows: ``Segment.batches`` skips deleted ones) unless only ``COUNT(*)`` is asked and every row
matches (then ``rows - deleted``): a deleted row may hold the zone map's extreme or a NULL.
"""
from __future__ import annotations

from typing import Optional

import pyarrow as pa
import pyarrow.compute as pc

import kernels
from engine.core.collation_keys import collation_keys
from engine.exec.kernel_filters import KernelPredicate
from engine.exec.operators.base import TaskContext
from engine.exec.operators.scan import ScanExec
from engine.core.expressions import AggCall, ColumnRef
from engine.core.fields import Field
from engine.storage.columnstore.encoding import ColumnStats, decode_column, may_match
from engine.storage.memory import MemoryPartitionStore


def storage_states(aggregates: tuple[tuple[Field, AggCall], ...], scan: ScanExec,
                   ctx: TaskContext) -> Optional[pa.Table]:
    """One row of partial states (``<id>|count``, ``<id>|min``, ``<id>|max``) for this task's
    partitions of ``scan``, or None when the metadata cannot answer."""
    from engine.storage.columnstore import ColumnstorePartitionStore

    if ctx.storage is None:
        return None
    # what the aggregates and the scan's filters ask of the metadata: derived once per plan
    plan = scan.derived("storage_states", (aggregates, scan.filters), lambda: _metadata_plan(aggregates, scan))
    if plan is None:
        return None
    names, preds, wanted, collations, only_count, counted = plan
    partitions = ctx.scan_partitions(scan.replicated)
    stores = [ctx.storage.store(scan.table_id, p) for p in partitions]
    pinned = [ctx.snapshots.get((scan.table_id, p)) for p in partitions]      # the query's snapshot
    # in memory as on disk: (segments, write buffer or tail batches)
    if all(isinstance(s, (MemoryPartitionStore, ColumnstorePartitionStore)) for s in stores):
        snapshots = [pin if pin is not None else s.snapshot() for s, pin in zip(stores, pinned)]
    else:
        return None
    states = _States(wanted, collations)
    try:
        for segments, buffer in snapshots:
            for segment in segments:
                if only_count:
                    states.add_count(_count_segment(segment, preds, names))
                elif not states.add_segment(segment, preds, names):
                    return None
            for batch in buffer:
                if only_count:
                    states.add_count(_count_batch(batch.select(counted), preds, names))
                elif not states.add_rows(batch, preds, names):
                    return None
    except TypeError:           # a constant or layout the kernels refuse: the ordinary scan answers
        return None
    return states.table()


def _metadata_plan(aggregates, scan: ScanExec):
    """(stored name by field id, the kernel conjuncts, the wanted states, collations, whether only
    counts are wanted, the stored columns a count reads) of ``storage_states``, or None when the
    metadata path cannot answer these aggregates over this scan."""
    names = scan.stored_names()
    not_null = {f.id for f in scan.fields if not f.nullable}
    predicate = scan.kernel_filter()
    preds = predicate.kernel if predicate is not None else ()
    if predicate is not None and (predicate.residual is not None or predicate.disjunctions or any(p.column not in names for p in preds)):
        return None
    wanted = []         # (state name, func, stored column or None, arrow type)
    collations = {}     # wanted index -> collation of a collated_min / collated_max (strings)
    for f, call in aggregates:
        if call.distinct or call.func not in ("count_star", "count", "min", "max", "collated_min", "collated_max"):
            return None
        if call.func.startswith("collated_"):
            if not isinstance(call.arg, ColumnRef) or call.arg.id not in names:
                return None
            collations[len(wanted)] = call.options[0]
            wanted.append((f"{f.id}|value", call.func, names[call.arg.id], call.type.to_arrow()))
            continue
        if call.func == "count_star" or (call.func == "count" and isinstance(call.arg, ColumnRef)
                                         and call.arg.id in not_null):
            # COUNT of a NOT NULL column counts rows: counted on the encoded runs, the column unread
            wanted.append((f"{f.id}|count", "count_star", None, pa.int64()))
            continue
        if not isinstance(call.arg, ColumnRef) or call.arg.id not in names:
            return None
        suffix = "count" if call.func == "count" else call.func
        wanted.append((f"{f.id}|{suffix}", call.func, names[call.arg.id],
                       pa.int64() if call.func == "count" else call.type.to_arrow()))
    only_count = all(func == "count_star" for _, func, _, _ in wanted)
    return names, preds, wanted, collations, only_count, _needed_columns(preds, names, ())


class _States:
    """Accumulated partial states of the aggregates asked for."""

    def __init__(self, wanted, collations=None):
        self.wanted = wanted
        self.collations = collations or {}
        self.values: list = [0 if func in ("count_star", "count") else None for _, func, _, _ in wanted]

    def add_count(self, n: int) -> None:
        for i, (_, func, _, _) in enumerate(self.wanted):
            self.values[i] += n

    def _add(self, i: int, value) -> None:
        func = self.wanted[i][1]
        if func in ("count_star", "count"):
            self.values[i] += value
        elif value is not None and i in self.collations:     # by collation key: one batch's two values
            old = self.values[i]
            if old is None:
                self.values[i] = value
            else:
                keys = collation_keys(pa.array([old, value], pa.string()), self.collations[i]).to_pylist()
                if (keys[1] < keys[0]) if func == "collated_min" else (keys[1] > keys[0]):
                    self.values[i] = value
        elif value is not None:
            old = self.values[i]
            self.values[i] = value if old is None else min(old, value) if func == "min" else max(old, value)

    def add_segment(self, segment, preds, names) -> bool:
        """False: a value the metadata path cannot compute exactly (the ordinary scan answers)."""
        info = segment.info
        undecided = []
        for p in preds:
            verdict = _zone_verdict(info.columns.get(names[p.column]), info.rows, p)
            if verdict is False:
                return True
            if verdict is None:
                undecided.append(p)
        if not undecided and not info.deleted:
            answers = [_from_zone_map(info, func, column) for _, func, column, _ in self.wanted]
            if all(a is not _UNKNOWN for a in answers):
                for i, answer in enumerate(answers):
                    self._add(i, answer)
                return True
        stored = list(dict.fromkeys([names[c] for c in _columns(undecided)] +
                                    [c for _, _, c, _ in self.wanted if c is not None]))
        for batch in segment.batches(stored, None, encoded=True):
            if not self._add_batch(batch, tuple(undecided), names):
                return False
        return True

    def add_rows(self, batch: pa.RecordBatch, preds, names) -> bool:
        stored = list(dict.fromkeys([names[c] for c in _columns(preds)] +
                                    [c for _, _, c, _ in self.wanted if c is not None]))
        return self._add_batch(batch.select(stored), preds, names)

    def _add_batch(self, batch: pa.RecordBatch, preds, names) -> bool:
        if not batch.num_rows:
            return True
        mask = None
        for p in preds:
            result = kernels.selection(p.evaluate(batch.column(names[p.column])))
            mask = result if mask is None else kernels.and_kleene(mask, result)
        for i, (_, func, column, _) in enumerate(self.wanted):
            if func == "count_star":
                self._add(i, batch.num_rows if mask is None else kernels.count_true(mask))
                continue
            array = decode_column(batch.column(column))
            if func == "count" and not array.null_count:       # no NULL: the selected rows, unfiltered
                self._add(i, batch.num_rows if mask is None else kernels.count_true(mask))
                continue
            if mask is not None:
                array = array.filter(mask)
            if func == "count":
                self._add(i, len(array) - array.null_count)
                continue
            value = _array_extreme(array, func, self.collations.get(i))
            if value is _UNKNOWN:
                return False
            self._add(i, value)
        return True

    def table(self) -> pa.Table:
        return pa.Table.from_arrays([pa.array([v], t) for v, (_, _, _, t) in zip(self.values, self.wanted)],
                                    names=[name for name, _, _, _ in self.wanted])


def _from_zone_map(info, func: str, column: Optional[str]):
    """The aggregate of a segment every row of which matches and none deleted, from its entry."""
    if func == "count_star":
        return info.rows
    stats = info.columns.get(column)
    if stats is None:
        return _UNKNOWN
    if func == "count":
        return info.rows - stats.nulls
    if func.startswith("collated_"):
        return _UNKNOWN          # zone maps order stored values, not collation keys
    if stats.nulls == info.rows:
        return None
    value = stats.min if func == "min" else stats.max
    return _UNKNOWN if value is None else value


_UNKNOWN = object()


def _columns(preds) -> list[str]:
    return list(dict.fromkeys(p.column for p in preds))


def _needed_columns(preds, names: dict[str, str], wanted) -> list[str]:
    """Stored names of the columns the conjuncts and the aggregates read."""
    return list(dict.fromkeys([names[c] for c in _columns(preds)] + [c for _, _, c, _ in wanted if c is not None]))


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
        column = batch.column(names[p.column])
        if p.key is not None:          # on the collation keys of the stored values (their dictionary)
            column = collation_keys(column, *p.key)
        return kernels.count_matches(column, p.op, *p.args)
    mask = None
    for p in preds:
        result = kernels.selection(p.evaluate(batch.column(names[p.column])))
        mask = result if mask is None else kernels.and_kleene(mask, result)
    return kernels.count_true(mask)


def _zone_verdict(stats: Optional[ColumnStats], rows: int, p: KernelPredicate) -> Optional[bool]:
    """False: no row of the segment satisfies ``p``; True: every row does; None: the rows decide."""
    if stats is None or p.negated or p.kind not in ("compare", "in") or p.key is not None:
        return None         # zone maps hold stored values, not collation keys
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


def _array_extreme(array, func: str, collation_name=None):
    """MIN or MAX of a plain array; None when every value is NULL; _UNKNOWN for types whose order
    the ordinary aggregate defines (floats: NaN). ``collated_min`` / ``collated_max``: the value
    whose collation key (under ``collation_name``) is the smallest / largest."""
    if array.null_count == len(array):
        return None
    if collation_name is not None:
        keys = collation_keys(array, collation_name)
        extreme = pc.min_max(keys)["min" if func == "collated_min" else "max"]
        return array[pc.index(keys, extreme).as_py()].as_py()
    if not (pa.types.is_integer(array.type) or pa.types.is_decimal(array.type)
            or pa.types.is_date(array.type) or pa.types.is_timestamp(array.type)
            or pa.types.is_string(array.type)):
        return _UNKNOWN
    return pc.min_max(array)[func].as_py()
