"""What one aggregate operator does of a GROUP BY, chosen by the planner (engine.optimizer.physical)."""
from __future__ import annotations

from enum import StrEnum


class AggregateMode(StrEnum):
    PARTIAL = "partial"     # keys + partial states, per task, before the rows move
    FINAL = "final"         # merge partial states that arrive gathered or hashed by the keys
    SINGLE = "single"       # the whole aggregation in one step (input together, or hashed on the keys)
    MERGE = "merge"         # as FINAL, but emit the merged states for a further merge (grouping sets)

    @property
    def emits_states(self) -> bool:
        return self in (AggregateMode.PARTIAL, AggregateMode.MERGE)

    @property
    def reads_states(self) -> bool:
        return self in (AggregateMode.FINAL, AggregateMode.MERGE)


class AggregatePath(StrEnum):
    """How a hash aggregate computes over its rows or merges its states, chosen by the planner
    (engine.optimizer.aggregate_paths) from the aggregates' types (engine.exec.operators.hash_aggregate
    .rows_path); each path is its own file under engine/exec/operators."""
    KERNELS = "kernels"                 # kernels.Factorizer + GroupedAggregate, streaming (aggregate_kernels.py)
    DISTINCT_COUNT = "distinct_count"   # keyless COUNT(DISTINCT x) into kernels.DistinctCount (same file)
    ARROW = "arrow"                     # Arrow's group_by over the whole input (aggregate_arrow.py)
    GROUP_IDS = "group_ids"             # extended aggregates per dense group id (hash_aggregate.py)
