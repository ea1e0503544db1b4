"""Column statistics: collected per partition on the leaves (:mod:`engine.stats.collect`), merged on
the aggregator into a :class:`~engine.stats.histogram.ColumnStats` the optimizer's estimates read."""
from engine.stats.collect import collect_column
from engine.stats.histogram import Bucket, ColumnStats

__all__ = ["Bucket", "ColumnStats", "collect_column"]
