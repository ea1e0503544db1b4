"""Statistics a query can have at once, without a pass over the column: the optimizer's first
estimates on a new (or much changed) table, while the full collection (:mod:`engine.stats.collect`)
runs on a background thread (:mod:`engine.statistics`) and replaces them when done — SingleStore's
autostats idea.

Per partition (:func:`summarize_store`, run where the partition lives):

* a columnstore partition, durable or in memory (both keep encoded segments), answers from its
  segments' statistics: every segment's rows, nulls, min, max and the HyperLogLog sketch written
  with it (``encoding.SKETCH_PRECISION``), plus the write buffer's or tail's rows (at most
  ``flush_rows``) hashed into the same sketch: source ``segment metadata``.
  Deleted rows are taken off the row counts (nulls in proportion); min, max and the sketch still
  cover them (bounds, not exact values). Segments of manifests older than sketches give their
  distinct count, a lower bound of the column's;
* a store without segments (the :class:`~engine.storage.PartitionStore` interface does not require
  them): rows and nulls are Arrow metadata, min and max one vectorized pass, the sketch hashes a
  uniform sample of :data:`SAMPLE_ROWS` rows (all of them when fewer): source ``sample``; the NDV
  is scaled from the sample to the rows (:func:`_scale_ndv`).

The aggregator merges the summaries into a :class:`~engine.stats.histogram.ColumnStats` with one
bucket spanning ``[min, max]`` (values uniform in it) and no frequent values.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import kernels
from engine.stats.histogram import Bucket, ColumnStats
# the precision of the segments' write-time sketches (1 KiB of registers, ~3% error)
from engine.storage.columnstore.encoding import SKETCH_PRECISION as PRECISION

# An in-memory partition's sample is hashed into a finer sketch (16 KiB, ~0.8% error): its NDV is
# scaled up from what the sample shows, and a key column must read as all distinct.
SAMPLE_PRECISION = 14
SAMPLE_ROWS = 65_536            # rows per in-memory partition hashed for the NDV
SEGMENT_METADATA = "segment metadata"
SAMPLE = "sample"


@dataclass(frozen=True)
class QuickSummary:
    """One partition's cheap statistics of one column."""

    rows: int                   # live rows
    nulls: int
    min: Any
    max: Any
    sketch: Optional[np.ndarray]  # HLL registers (2**PRECISION) of the values hashed; None: none hashed
    hashed: int                 # non-null rows the sketch saw (fewer than rows - nulls: a sample)
    floor_distinct: int         # distinct values of pieces without a sketch (old segments): a lower bound
    source: str


def summarize_store(store, column: str) -> QuickSummary:
    """``column``'s :class:`QuickSummary` of one partition store (a module function: a Ray leaf
    runs it by pickle)."""
    if hasattr(store, "segment_infos") and hasattr(store, "snapshot"):
        return _from_segments(store, column)
    batches = store.snapshot()
    chunks = [b.column(b.schema.get_field_index(column)) for b in batches]
    type_ = store.schema.field(column).type
    return _from_values(pa.chunked_array(chunks, type=type_), SAMPLE)


def _from_segments(store, column: str) -> QuickSummary:
    segments, buffer = store.snapshot()
    type_ = store.schema.field(column).type
    chunks = [b.column(b.schema.get_field_index(column)) for b in buffer]
    summary = _from_values(pa.chunked_array(chunks, type=type_), SEGMENT_METADATA, sample=False,
                           precision=PRECISION)
    rows, nulls, hashed, floor = summary.rows, summary.nulls, summary.hashed, summary.floor_distinct
    lows, highs = [summary.min], [summary.max]
    sketch = summary.sketch if summary.sketch is not None else np.zeros(1 << PRECISION, np.uint8)
    for segment in segments:
        info = segment.info
        stats = info.columns.get(column)
        if stats is None or not info.live_rows:
            continue
        live = info.live_rows / info.rows
        rows += info.live_rows
        nulls += round(stats.nulls * live)
        hashed += round((info.rows - stats.nulls) * live)
        lows.append(stats.min)
        highs.append(stats.max)
        if stats.sketch is not None:
            kernels.hll_merge(sketch, np.frombuffer(stats.sketch, np.uint8))
        elif stats.distinct is not None:
            floor = max(floor, stats.distinct)
    lows, highs = [v for v in lows if v is not None], [v for v in highs if v is not None]
    return QuickSummary(rows, nulls, min(lows) if lows else None, max(highs) if highs else None, sketch,
                        hashed, floor, SEGMENT_METADATA)


def _from_values(values: pa.ChunkedArray, source: str, sample: bool = True,
                 precision: int = SAMPLE_PRECISION) -> QuickSummary:
    """Rows, nulls, min, max of ``values`` and a sketch of them (of a sample of :data:`SAMPLE_ROWS`
    when ``sample`` and there are more)."""
    rows, nulls = len(values), values.null_count
    low = high = None
    if rows > nulls and _ordered(values.type):
        bounds = pc.min_max(values)
        low, high = bounds["min"].as_py(), bounds["max"].as_py()
        if isinstance(low, float) and (math.isnan(low) or math.isnan(high)):
            low = high = None
    sketch = None
    hashed = 0
    valid = pc.drop_null(values) if nulls else values
    if len(valid):
        if sample and len(valid) > SAMPLE_ROWS:
            picks = np.sort(np.random.default_rng(len(valid)).choice(len(valid), SAMPLE_ROWS, replace=False))
            valid = valid.take(pa.array(picks))
        sketch = np.zeros(1 << precision, np.uint8)
        for chunk in valid.chunks:
            if len(chunk):
                kernels.hll_add(kernels.hash_columns([chunk]), sketch)
        hashed = len(valid)
    return QuickSummary(rows, nulls, low, high, sketch, hashed, 0, source)


def _ordered(t: pa.DataType) -> bool:
    return (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t) or pa.types.is_date(t)
            or pa.types.is_timestamp(t) or pa.types.is_string(t) or pa.types.is_large_string(t)
            or pa.types.is_boolean(t))


def merge(summaries: Sequence[QuickSummary]) -> ColumnStats:
    """The column's statistics from its partitions' summaries: one bucket over ``[min, max]``."""
    rows = sum(s.rows for s in summaries)
    nulls = min(sum(s.nulls for s in summaries), rows)
    valid = rows - nulls
    source = SAMPLE if any(s.source == SAMPLE for s in summaries) else SEGMENT_METADATA
    lows = [s.min for s in summaries if s.min is not None]
    highs = [s.max for s in summaries if s.max is not None]
    if not valid:
        return ColumnStats(rows, nulls, 0.0, None, None, source=source)
    sketches = [s.sketch for s in summaries if s.sketch is not None]
    sketch = np.zeros(len(sketches[0]) if sketches else 1 << PRECISION, np.uint8)
    for registers in sketches:      # one table's partitions are all durable or all in memory: one size
        kernels.hll_merge(sketch, registers)
    seen = kernels.hll_estimate(sketch)
    hashed = sum(s.hashed for s in summaries)
    ndv = _scale_ndv(seen, hashed, valid) if hashed < valid and source == SAMPLE else seen
    ndv = max(ndv, float(max(s.floor_distinct for s in summaries)), 1.0)
    low, high = (min(lows), max(highs)) if lows else (None, None)
    if isinstance(low, int) and not isinstance(low, bool):
        ndv = min(ndv, float(high - low + 1))
    ndv = min(ndv, float(valid))
    buckets = (Bucket(high, valid, ndv),) if low is not None else ()
    return ColumnStats(rows, nulls, ndv, low, high, {}, buckets, source=source)


def _scale_ndv(seen: float, sampled: int, rows: int) -> float:
    """Distinct values of ``rows`` rows whose uniform sample of ``sampled`` rows shows ``seen``: the
    domain size D that makes a uniform draw of ``sampled`` rows show ``seen`` distinct values
    (``seen = D (1 - exp(-sampled / D))``, solved by bisection), then the distinct values ``rows``
    such draws show. A sample of distinct values only (a key): every row distinct."""
    if sampled <= 0 or seen <= 0:
        return 0.0
    if seen >= sampled * 0.975:     # within 3 standard errors of the sketch of all distinct values
        return float(rows)
    lo, hi = seen, float(rows) * 1e3
    for _ in range(100):
        mid = (lo + hi) / 2
        if mid * -math.expm1(-sampled / mid) < seen:
            lo = mid
        else:
            hi = mid
    return min(float(rows), hi * -math.expm1(-rows / hi))
