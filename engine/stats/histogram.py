"""One column's statistics and the row counts they imply for predicates.

The histogram keeps the most frequent values exact (``frequent``: value -> rows) and spreads the other
values over equi-depth buckets. A bucket holds the non-frequent values in ``(previous upper, upper]``
(the first from the column's min): its rows are exact (counted in ANALYZE's second pass), its distinct
count is shared out from the sketch's NDV. Inside a bucket values are assumed uniform: an equality
gets ``rows / distinct``, a range the bucket's rows in proportion to the overlap (interpolated on
:func:`ordinal`, or half a bucket for values with no numeric position).

Every method answers in rows of the table as it was when analyzed (``rows``), or None when the
constant cannot be compared with the column's values (a string against an INT column): the caller
then falls back to a default.
"""
from __future__ import annotations

import bisect
import datetime
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Optional


@dataclass(frozen=True)
class Bucket:
    upper: Any          # inclusive upper bound
    rows: int
    distinct: float


@dataclass(frozen=True)
class ColumnStats:
    rows: int                       # rows of the table, nulls included
    nulls: int
    ndv: float                      # distinct non-null values
    min: Any
    max: Any
    frequent: dict = field(default_factory=dict)     # value -> exact rows
    buckets: tuple[Bucket, ...] = ()
    # text columns: a uniform sample of the non-null values, for predicates no histogram answers
    # (LIKE '%green%'): the share of the sample that matches estimates the share of the rows
    sample: Any = field(default=None, compare=False, hash=False)
    # Order of the values as scans return them, summed over partitions (None: not measured). ``runs``:
    # stretches of equal consecutive values (nulls equal), what a streaming GROUP BY emits; ``descents``:
    # places where a value is below the one before, so ``descents + partitions`` ascending runs are what
    # a merge sort of the column has to merge (0: every partition arrives sorted).
    runs: Optional[int] = None
    descents: Optional[int] = None
    partitions: int = 1
    # what these statistics come from, as EXPLAIN names it: "histogram" (collected over the rows:
    # engine.stats.collect), "segment metadata" or "sample" (engine.stats.quick: a single bucket over
    # [min, max], no frequent values, while the histogram is collected in the background)
    source: str = field(default="histogram", compare=False)

    @property
    def valid(self) -> int:
        return self.rows - self.nulls

    def accepts(self, value) -> bool:
        """Whether ``value`` (a literal's Python value) compares with this column's values."""
        return value is not None and self.min is not None and _kind(value) == _kind(self.min)

    # -- predicates, in rows ------------------------------------------------------------------------
    def eq_rows(self, value) -> Optional[float]:
        if not self.accepts(value):
            return None
        exact = self.frequent.get(value)
        if exact is not None:
            return float(exact)
        bucket = self._bucket_of(value)
        return bucket.rows / bucket.distinct if bucket is not None else 0.0

    def range_rows(self, lo=None, lo_inclusive=True, hi=None, hi_inclusive=True) -> Optional[float]:
        """Rows with ``lo <(=) value <(=) hi``; a missing bound is open."""
        if (lo is not None and not self.accepts(lo)) or (hi is not None and not self.accepts(hi)):
            return None
        total = 0.0
        for value, n in self.frequent.items():
            if _inside(value, lo, lo_inclusive, hi, hi_inclusive):
                total += n
        lower = self.min
        for i, b in enumerate(self.buckets):
            under = 0.0 if lo is None else self._bucket_at_most(b, lower, i == 0, lo, not lo_inclusive)
            upto = b.rows if hi is None else self._bucket_at_most(b, lower, i == 0, hi, hi_inclusive)
            total += max(0.0, upto - under)
            lower = b.upper
        return total

    def prefix_rows(self, prefix: str) -> Optional[float]:
        """Rows of a string column starting with ``prefix`` (LIKE 'prefix%')."""
        if not prefix:
            return float(self.valid)
        return self.range_rows(prefix, True, prefix[:-1] + chr(ord(prefix[-1]) + 1), False)

    # -- joins --------------------------------------------------------------------------------------
    def rows_for(self, value) -> float:
        """Rows equal to ``value`` (0 when not comparable): the other side's frequent values probe here."""
        rows = self.eq_rows(value)
        return rows or 0.0

    # -- helpers ------------------------------------------------------------------------------------
    def _bucket_of(self, value) -> Optional[Bucket]:
        if self.min is None or value < self.min or value > self.max or not self.buckets:
            return None
        i = bisect.bisect_left(self.buckets, value, key=lambda b: b.upper)    # first upper >= value
        return self.buckets[i] if i < len(self.buckets) else None

    def _bucket_at_most(self, b: Bucket, lower, first: bool, x, inclusive: bool) -> float:
        """Rows of bucket ``b`` (values in ``(lower, b.upper]``, ``[lower, ...]`` for the first) that
        are ``<= x`` (``< x`` when not inclusive)."""
        point = b.rows / max(b.distinct, 1.0)
        if x > b.upper:
            return float(b.rows)
        if x == b.upper:
            return float(b.rows) if inclusive else b.rows - point
        if x < lower or (x == lower and not first):
            return 0.0
        if x == lower:        # the first bucket starts at the column's min
            return point if inclusive else 0.0
        if b.distinct <= 1:
            return 0.0
        share = self._sampled_share(lower, first, b.upper, x, inclusive) if isinstance(x, str) else None
        if share is None:
            lo, hi, at = ordinal(lower), ordinal(b.upper), ordinal(x)
            share = 0.5 if lo is None or hi is None or at is None or hi <= lo else (at - lo) / (hi - lo)
        return b.rows * min(max(share, 0.0), 1.0)

    def _sampled_share(self, lower, first: bool, upper, x, inclusive: bool) -> Optional[float]:
        """Share of a text bucket's sampled values that are ``<= x`` (``< x``), or None when the sample
        holds fewer than :data:`_MIN_BUCKET_SAMPLE` of them. Text is sparse in byte order ('forest'
        and 'foresu' are next to each other between 'almond' and 'green'), so interpolating on
        :func:`ordinal` misses a prefix's rows by orders of magnitude: TPC-H's p_name LIKE 'forest%'
        was estimated at 1 row of 2,127."""
        if self.sample is None or len(self.sample) == 0 or not isinstance(lower, str):
            return None
        import pyarrow.compute as pc       # lazily: histograms are also read where pyarrow is not needed
        sample = self.sample
        inside = pc.and_(pc.greater_equal(sample, lower) if first else pc.greater(sample, lower),
                         pc.less_equal(sample, upper))
        if self.frequent:                  # the bucket holds the values that are not frequent
            inside = pc.and_(inside, pc.invert(pc.is_in(sample, value_set=_frequent_strings(self))))
        total = pc.sum(inside).as_py() or 0
        if total < _MIN_BUCKET_SAMPLE:
            return None
        below = pc.less_equal(sample, x) if inclusive else pc.less(sample, x)
        return (pc.sum(pc.and_(inside, below)).as_py() or 0) / total


# Sampled values a text bucket needs before its share of a range is read from them.
_MIN_BUCKET_SAMPLE = 20


def _frequent_strings(stats: ColumnStats):
    import pyarrow as pa
    return pa.array([v for v in stats.frequent if isinstance(v, str)], type=pa.string())


def _inside(value, lo, lo_inclusive, hi, hi_inclusive) -> bool:
    if lo is not None and (value < lo or (value == lo and not lo_inclusive)):
        return False
    if hi is not None and (value > hi or (value == hi and not hi_inclusive)):
        return False
    return True


def _kind(value) -> str:
    if isinstance(value, (bool, int, float, Decimal)):
        return "number"
    if isinstance(value, datetime.datetime):      # naive and aware datetimes do not compare
        return "datetime" if value.tzinfo is None else "datetime with time zone"
    if isinstance(value, datetime.date):
        return "date"
    if isinstance(value, datetime.time):
        return "time"
    if isinstance(value, datetime.timedelta):
        return "interval"
    return type(value).__name__


def ordinal(value) -> Optional[float]:
    """A number that orders like ``value``, for interpolating inside a bucket; None if there is none."""
    if isinstance(value, (bool, int, float, Decimal)):
        return float(value)
    if isinstance(value, datetime.datetime):
        return value.toordinal() + (value.hour * 3600 + value.minute * 60 + value.second) / 86400.0
    if isinstance(value, datetime.date):
        return float(value.toordinal())
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, str):
        value = value.encode("utf-8", "surrogatepass")
    if isinstance(value, bytes):
        return float(int.from_bytes(value[:8].ljust(8, b"\0"), "big"))
    return None


def join_rows(a: ColumnStats, b: ColumnStats) -> float:
    """Rows of ``a``'s table joined with ``b``'s on ``a = b``, both unfiltered (PostgreSQL's eqjoinsel):
    frequent values meet exactly, a frequent value of one side meets the other's bucket share for it,
    and the remaining rows join as uniform (rows x rows / the larger NDV)."""
    total = 0.0
    used_a = used_b = 0.0      # rows of the non-frequent part already matched by the other's frequent
    met_a = met_b = 0          # ... and how many of its distinct values
    for value, n in a.frequent.items():
        m = b.frequent.get(value)
        if m is not None:
            total += n * m
            continue
        share = b.rows_for(value)
        total += n * share
        used_b += share
        met_b += share > 0
    for value, m in b.frequent.items():
        if value not in a.frequent:
            share = a.rows_for(value)
            total += m * share
            used_a += share
            met_a += share > 0
    rest_a = a.valid - sum(a.frequent.values()) - used_a
    rest_b = b.valid - sum(b.frequent.values()) - used_b
    ndv_a = a.ndv - len(a.frequent) - met_a
    ndv_b = b.ndv - len(b.frequent) - met_b
    if rest_a > 0 and rest_b > 0:
        total += rest_a * rest_b / max(ndv_a, ndv_b, 1.0)
    return total
