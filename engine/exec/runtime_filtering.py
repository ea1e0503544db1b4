"""A scan's runtime join filters (Bloom filters from the hash joins above) and its WHERE conjuncts,
run as ONE selection per stored batch: the positions of the rows that pass, narrowed step by step,
and a single take of the output columns at the end (``ScanFilters.apply``).

The steps go cheapest per row first:

1. Over the whole batch, as masks ANDed together: the conjuncts cheaper per row than a Bloom probe of a
   plain column (``kernel_filters.is_cheap``: those on dictionary / run-end columns, compared per
   distinct value or run, and comparisons of plain non-string columns) and the runtime filters on a
   run-end or dictionary key column (probed once per run or dictionary value, then a bit per row);
   run-end keys first, and the batch ends at the first step that leaves no row.
2. At the positions left: the runtime filters on a plain key column (a hash and a random read per
   row, ~9x a comparison), most selective first; their key column is taken at those positions only.
3. At the positions left: the other conjuncts (strings, LIKE, ORs over several columns), each on its
   own columns taken there; then the output columns are taken once and decoded, and the residual
   (what no kernel runs) filters the result.

A comparison of a plain column that keeps most rows is not worth running over the whole batch when
a plain-key runtime filter keeps few: it moves to step 2, after the probes (``_defer_plain``), as
decided from the shares the steps kept on the scan's earlier batches.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import pyarrow as pa

import kernels
from engine.exec.kernel_filters import KernelFilter, KernelPredicate, is_cheap, mask_indices, take_column, take_encoded
from engine.storage.columnstore.encoding import decode_batch

# A runtime join filter is dropped by a scan once it has seen this many rows and kept more than
# RUNTIME_FILTER_MAX_KEPT of them: past that, hashing every row costs more than the rows it saves.
RUNTIME_FILTER_TRIAL_ROWS = 1 << 16
RUNTIME_FILTER_MAX_KEPT = 0.5

# Costs per row in ns (734k-row int32 columns, this repository's kernels): a BETWEEN with its mask
# AND 0.4, a Bloom probe of a plain column 2.7, a take at a position 0.65. A plain comparison goes
# over the whole batch first when  COMPARE + kept_c * (TAKE + PROBE) < PROBE + kept_b * (TAKE + COMPARE),
# kept_c its share kept, kept_b the plain probes' (both as measured on the batches before).
_COMPARE_NS, _PROBE_NS, _TAKE_NS = 0.4, 2.7, 0.65
# below this share of a batch left, a plain comparison runs at the positions left (TAKE + COMPARE a
# row kept) instead of over the whole batch (COMPARE a row)
_AT_POSITIONS = _COMPARE_NS / (_TAKE_NS + _COMPARE_NS)


class BloomProbe:
    """One runtime join filter of one scan run, switched off when it does not drop enough rows."""

    def __init__(self, column: str, bloom):
        self.column, self.bloom = column, bloom
        self.rows_in = self.rows_kept = 0
        self.active = True

    def kept_fraction(self) -> float:
        """The fraction of the rows it tested that it kept (0 before it has tested any)."""
        return self.rows_kept / self.rows_in if self.rows_in else 0.0

    def mask(self, column: pa.Array) -> pa.BooleanArray:
        """TRUE where the row's value may be in the filter (NULL keys are not), counted."""
        mask = kernels.selection(self.bloom.might_contain(column))
        kept = kernels.count_true(mask)
        self.rows_in += len(column)
        self.rows_kept += kept
        if self.rows_in >= RUNTIME_FILTER_TRIAL_ROWS and self.rows_kept > RUNTIME_FILTER_MAX_KEPT * self.rows_in:
            self.active = False
        return mask


def _encoded(column: pa.Array) -> bool:
    return pa.types.is_dictionary(column.type) or pa.types.is_run_end_encoded(column.type)


class ScanFilters:
    """The runtime filters and the kernel filter of one scan run (one partition), with what they kept
    so far (the order of the steps adapts to it)."""

    def __init__(self, runtime: list[BloomProbe], predicate: Optional[KernelFilter]):
        self.runtime, self.predicate = runtime, predicate
        self.plain_in = self.plain_kept = 0     # rows seen / kept by the plain comparisons

    def _defer_plain(self, probes: list[BloomProbe], passes: int = 1) -> bool:
        """Whether the comparisons of plain columns (``passes`` passes over a column in all) wait
        for the plain-key probes' survivors."""
        if not self.plain_in:
            return False
        compare = _COMPARE_NS * passes
        kept_c = self.plain_kept / self.plain_in
        kept_b = 1.0
        for f in probes:
            kept_b *= f.kept_fraction() if f.rows_in else 1.0
        return compare + kept_c * (_TAKE_NS + _PROBE_NS) > _PROBE_NS + kept_b * (_TAKE_NS + compare)

    def apply(self, batch: pa.RecordBatch, params: Sequence = (), keep: frozenset = frozenset(),
              output: Optional[list[str]] = None) -> pa.RecordBatch:
        """The rows of ``batch`` (stored, encoded; columns by field id) that pass every active runtime
        filter and the predicate, decoded but for the dictionary columns ``keep``; the columns
        ``output`` only (None: all)."""
        predicate = self.predicate
        if predicate is not None:
            batch = predicate.narrowed(batch)       # a sort key range first: fewer rows to look at
        active = [f for f in self.runtime if f.active]
        conjuncts = (*predicate.kernel, *predicate.disjunctions) if predicate is not None else ()
        cheap = [p for p in conjuncts if is_cheap(p, batch)]
        plain_probes = [f for f in active if not _encoded(batch.column(f.column))]
        deferred = []
        plain = [p for p in cheap if _on_plain(p, batch)]
        if plain_probes and plain and self._defer_plain(plain_probes, sum(map(_passes, plain))):
            deferred = plain
            cheap = [p for p in cheap if not _on_plain(p, batch)]
        # 1. masks over the whole batch: run-end keys first (a date range of a table sorted by date
        # often leaves no row of a batch), each step ending the batch when no row is left
        mask = None
        encoded_probes = sorted((f for f in active if f not in plain_probes),
                                key=lambda f: not pa.types.is_run_end_encoded(batch.column(f.column).type))
        for f in encoded_probes:
            mask = _and(mask, f.mask(batch.column(f.column)))
            count = kernels.count_true(mask)
            if not count:
                return _empty(batch, output, keep)
            if count < _AT_POSITIONS * len(mask):
                # few rows left: a plain comparison costs less at them (a take and a compare per row
                # kept) than over the whole batch (TPC-DS q82: inventory's date filter keeps 3%)
                deferred = deferred or [p for p in cheap if _on_plain(p, batch)]
                cheap = [p for p in cheap if not _on_plain(p, batch)]
        plain_mask = None
        done = set()                                # ids of the conjuncts applied
        for p in sorted(cheap, key=lambda p: _on_plain(p, batch)):
            try:
                found = p.select(batch)
            except TypeError:
                continue                            # left to step 3
            done.add(id(p))
            mask = _and(mask, found)
            if _on_plain(p, batch):
                plain_mask = _and(plain_mask, found)
            elif not kernels.count_true(mask):
                return _empty(batch, output, keep)
        if plain_mask is not None:
            self.plain_in += len(plain_mask)
            self.plain_kept += kernels.count_true(plain_mask)
        positions = None
        if mask is not None:
            kept = kernels.count_true(mask)
            if kept == 0:
                return _empty(batch, output, keep)
            if kept < len(mask):
                positions = mask_indices(mask, kept)
        # 2. plain-key probes, most selective first, at the positions left
        for f in sorted(plain_probes, key=BloomProbe.kept_fraction):
            column = batch.column(f.column)
            found = f.mask(column if positions is None else take_column(column, positions))
            positions = _narrow(positions, found)
            if positions is not None and not len(positions):
                return _empty(batch, output, keep)
        for p in deferred:
            try:
                found = p.select(_taken(batch, _columns(p), positions))
            except TypeError:
                continue                            # left to step 3
            done.add(id(p))
            self.plain_in += len(found)
            count = kernels.count_true(found)
            self.plain_kept += count
            positions = _narrow(positions, found, count)
            if positions is not None and not len(positions):
                return _empty(batch, output, keep)
        if positions is None:           # nothing dropped yet: the predicate as usual
            if predicate is not None:
                return predicate.apply(batch, params, keep, output)
            return decode_batch(batch if output is None else batch.select(output), keep=keep)
        if predicate is None:
            return take_encoded(batch if output is None else batch.select(output), positions, keep=keep)
        return predicate.apply_at(batch, positions, params, keep, output, done)


def bloom_filtered(batch: pa.RecordBatch, probes: list[BloomProbe]) -> pa.RecordBatch:
    """The rows of a decoded ``batch`` whose key of every active probe may be in its filter (an
    exchange's rows, read by a stage below a semi / anti join that ran its probe side first)."""
    positions = None
    for f in probes:
        if not f.active:
            continue
        column = batch.column(f.column)
        found = f.mask(column if positions is None else take_column(column, positions))
        positions = _narrow(positions, found)
        if positions is not None and not len(positions):
            return batch.slice(0, 0)
    return batch if positions is None else batch.take(pa.array(positions))


def _columns(p) -> list[str]:
    """The columns ``p`` (a kernel conjunct or an OR of them) reads."""
    if isinstance(p, KernelPredicate):
        return [p.column]
    return sorted({q.column for conjunction in p.disjuncts for q in conjunction})


def _passes(p) -> int:
    """The passes over its column(s) that ``p`` takes: one per kernel conjunct."""
    return 1 if isinstance(p, KernelPredicate) else sum(len(conjunction) for conjunction in p.disjuncts)


def _on_plain(p, batch: pa.RecordBatch) -> bool:
    """Whether ``p`` (a kernel conjunct or an OR of them) is one conjunct on a plain column. An OR
    over a plain column stays before the probes: deferred, it made TPC-DS q13 slower (184 -> 303 ms
    process CPU, load 24), which the cost model here does not explain."""
    return isinstance(p, KernelPredicate) and not _encoded(batch.column(p.column))


def _and(mask: Optional[pa.BooleanArray], found: pa.BooleanArray) -> pa.BooleanArray:
    return found if mask is None else kernels.and_kleene(mask, found)


def _narrow(positions: Optional[np.ndarray], found: pa.BooleanArray, kept: Optional[int] = None) -> Optional[np.ndarray]:
    """``positions`` (None: every row) less those where ``found`` (a mask over them, no nulls) is not TRUE."""
    kept = kernels.count_true(found) if kept is None else kept
    if kept == len(found):
        return positions
    chosen = mask_indices(found, kept)
    return chosen if positions is None else positions[chosen]


def _taken(batch: pa.RecordBatch, names: list[str], positions: Optional[np.ndarray]) -> pa.RecordBatch:
    """The columns ``names`` of ``batch`` at ``positions`` (None: all rows), still encoded."""
    if positions is None:
        return batch.select(names)
    return pa.RecordBatch.from_arrays([take_column(batch.column(n), positions) for n in names], names=names)


def _empty(batch: pa.RecordBatch, output: Optional[list[str]], keep: frozenset) -> pa.RecordBatch:
    return decode_batch((batch if output is None else batch.select(output)).slice(0, 0), keep=keep)
