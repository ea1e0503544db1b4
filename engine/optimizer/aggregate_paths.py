"""The physical rule that chooses, once the stages are known, how each hash aggregate computes, from
what the plan knows of its input (its types, its encoding, its place in the stages):

* whether it reads its input's store instead of its rows: an aggregate straight over a scan in its
  stage (no exchange between) answers COUNT / MIN / MAX from segment metadata, or counts a stored
  GROUP BY key's codes, as ``HashAggregateExec.stored_access`` says it can;
* its path over the rows (``AggregatePath``: hash kernels, distinct counters, Arrow's group_by, group
  ids), from its keys' and aggregates' types (``rows_path``);
* which string key columns of the scan below it reads as stored dictionaries (``coded_columns``), and
  whether it sizes its hash table once from an estimate (its input is an exchange's, all there).

The operator no longer looks at its input at run time to decide; it does what the plan says (and reads
the rows where a store cannot answer). EXPLAIN shows the choice (``path=kernels coded=[...]``)."""
from __future__ import annotations

import dataclasses

from engine.exec.aggregate_mode import AggregatePath
from engine.exec.operators.base import PhysicalOperator
from engine.exec.operators.exchange import ExchangeExec
from engine.exec.operators.hash_aggregate import HashAggregateExec, rows_path


def choose_aggregate_path(original: PhysicalOperator, op: PhysicalOperator) -> PhysicalOperator:
    """A ``Rewriter`` change (engine.optimizer.rewrite): ``op`` with its path chosen."""
    if not isinstance(op, HashAggregateExec):
        return op
    path = rows_path(op.mode, op.keys, op.aggregates)
    # one key over an exchange's rows (all there before the first insert): estimate its distinct
    # values and size the hash table once
    presize = path == AggregatePath.KERNELS and len(op.keys) == 1 and isinstance(op.input, ExchangeExec)
    chosen = dict(stored=op.stored_access(), path=path, presize=presize,
                  coded=op.coded_columns() if path == AggregatePath.KERNELS else ())
    if all(getattr(op, name) == value for name, value in chosen.items()):
        return op
    return dataclasses.replace(op, **chosen)
