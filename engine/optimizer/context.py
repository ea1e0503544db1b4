"""What optimizer rules receive besides the plan."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from engine.optimizer.cardinality import Estimator


@dataclass
class OptimizerContext:
    estimator: Estimator
    num_partitions: int = 8
    # a join side estimated above this is never broadcast (every leaf would hold all of it); below it,
    # broadcast or repartition is a cost choice
    broadcast_row_limit: int = 200_000
    gather_groups_limit: int = 10_000      # an aggregate with fewer estimated groups finishes on the aggregator
    num_tasks: Optional[int] = None        # tasks a partitioned stage runs (one per leaf); None: num_partitions
    join_algorithm: Optional[str] = None   # "hash" | "nested loop" | "batched key": force where it applies
    # id(node) -> (node, its subtree with every MultiJoin ordered): engine.optimizer.rules.order_joins
    ordered: dict = field(default_factory=dict, repr=False)
    # id(tree) -> (tree, its optimized plan): engine.optimizer.optimize_logical
    optimized: dict = field(default_factory=dict, repr=False)
    # join ordering's inputs and candidate joins, by the identity of what they are made of
    joins: dict = field(default_factory=dict, repr=False)
