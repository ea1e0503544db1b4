"""What optimizer rules receive besides the plan."""
from __future__ import annotations

from dataclasses import dataclass

from engine.optimizer.cardinality import Estimator


@dataclass
class OptimizerContext:
    estimator: Estimator
    num_partitions: int = 8
    broadcast_row_limit: int = 200_000     # a join side estimated below this is broadcast instead of shuffled
    gather_groups_limit: int = 10_000      # an aggregate with fewer estimated groups finishes on the aggregator
