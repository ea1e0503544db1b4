"""The physical rule that chooses, once the stages are known, which aggregates read their input's
store instead of its rows: an aggregate straight over a scan in its stage (no exchange between)
answers COUNT / MIN / MAX from segment metadata, or counts a stored GROUP BY key's codes, as
``HashAggregateExec.stored_access`` says it can. The operator no longer looks at its input at run
time to decide; it does what the plan says (and reads the rows where a store cannot answer)."""
from __future__ import annotations

import dataclasses

from engine.exec.operators.base import PhysicalOperator
from engine.exec.operators.hash_aggregate import HashAggregateExec


def choose_stored_access(original: PhysicalOperator, op: PhysicalOperator) -> PhysicalOperator:
    """A ``Rewriter`` change (engine.optimizer.rewrite): ``op`` with its stored access chosen."""
    if not isinstance(op, HashAggregateExec):
        return op
    access = op.stored_access()
    return op if access == op.stored else dataclasses.replace(op, stored=access)
