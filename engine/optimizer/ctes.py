"""Compute a WITH query referenced more than once once per statement, and read it from every reference.

The binder inlines a CTE: each reference is bound on its own, with fresh field ids, and records the plan
it bound (``Binder.cte_uses``). Inlined, TPC-H Q15's ``revenue0`` (an aggregate over lineitem) is
computed twice: in the scalar subquery's init plan and again in the main query. Here, after binding,
the references that survived into the query (its root and its init plans) are counted per CTE; a CTE
that is

* referenced two or more times,
* worth it: it aggregates or joins (a plain scan with filters is cheaper to read again than to move,
  and inlined its filters are pushed into the scan),
* small: estimated (once optimized) at most ``broadcast_row_limit`` rows, since every task that reads
  it gets all of it (it is replicated, like VALUES),
* and independent of scalar subqueries (no ``$subqueryN`` in it: it runs before them),

is *materialized*: its plan (the first reference's) runs once before the plans that read it, gathered
to the aggregator, and every reference becomes a :class:`CteScan` of that result. Nested CTEs are
decided outermost first: a CTE used twice only inside the definition of a materialized one is then
used once. A CTE referenced once stays inlined, where filters and column pruning reach into it.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

from engine.optimizer.context import OptimizerContext
from engine.plan.expressions import ScalarParam
from engine.plan.logical import Aggregate, CteScan, Join, LogicalPlan, MultiJoin, Query, Window


@dataclass(frozen=True)
class MaterializedCte:
    name: str
    index: int                 # the CteScan.index that reads it; CTEs run in index order
    plan: LogicalPlan          # optimized
    reads: int                 # references that read it


def materialize_ctes(query: Query, uses: dict, ctx: OptimizerContext,
                     optimize: Callable[[LogicalPlan], LogicalPlan]) -> tuple[Query, tuple[MaterializedCte, ...]]:
    """``uses``: the binder's ``cte_uses``. Returns the query with the references of materialized CTEs
    replaced by CteScans, and those CTEs in the order they must run (one's definition may read an
    earlier one)."""
    if not uses:
        return query, ()
    roots = [query.root] + [sub.root for sub in query.subqueries]
    chosen: list[tuple[int, list[LogicalPlan]]] = []       # (CTE key, its references), outermost first
    rejected: set[int] = set()
    while True:
        live = roots + [inner for _, refs in chosen for inner in refs[0].inputs]     # definitions' bodies
        done = {key for key, _ in chosen}
        found: dict[int, list[LogicalPlan]] = {}
        for tree in live:
            _collect(tree, uses, found, done)
        candidates = {key for key, refs in found.items()
                      if key not in done and key not in rejected and len(refs) >= 2}
        worth = {key for key in candidates if _worth_it(found[key][0], ctx, optimize)}
        rejected |= candidates - worth
        if not worth:
            break
        nested: dict[int, list[LogicalPlan]] = {}
        for key in worth:          # a candidate referenced inside another candidate waits for the next round
            for ref in found[key]:
                for inner in ref.inputs:
                    _collect(inner, uses, nested, done)
        chosen.extend((key, found[key]) for key in found if key in worth and key not in nested)

    if not chosen:
        return query, ()
    # run order: a CTE chosen later is referenced inside one chosen earlier, so it runs first
    order = list(reversed(chosen))
    scans: dict[int, CteScan] = {}
    materialized = []
    for index, (key, refs) in enumerate(order):
        name = uses[id(refs[0])][1]
        definition = optimize(_replace(refs[0], scans, top=False))
        for ref in refs:
            scans[id(ref)] = CteScan(ref.fields, name, index, definition)
        materialized.append(MaterializedCte(name, index, definition, len(refs)))
    subqueries = tuple(dataclasses.replace(sub, root=_replace(sub.root, scans)) for sub in query.subqueries)
    return dataclasses.replace(query, root=_replace(query.root, scans), subqueries=subqueries), tuple(materialized)


def _collect(plan: LogicalPlan, uses: dict, found: dict, done: set) -> None:
    """References in ``plan`` by CTE key, not looking inside references of CTEs already materialized
    (their definitions are walked on their own)."""
    use = uses.get(id(plan))
    if use is not None and use[2] is plan:
        found.setdefault(use[0], []).append(plan)
        if use[0] in done:
            return
    if isinstance(plan, CteScan):
        return
    for child in plan.inputs:
        _collect(child, uses, found, done)


def _worth_it(plan: LogicalPlan, ctx: OptimizerContext, optimize: Callable[[LogicalPlan], LogicalPlan]) -> bool:
    """Estimated on the optimized plan: as bound, its joins are a MultiJoin estimated by a flat default
    (TPC-DS q14's cross_items at SF1: 305k rows against 17k once its joins are ordered, so the
    INTERSECT of three fact-table joins inside it was computed once per reference, three times)."""
    return (_computes(plan) and not _holds(plan, ScalarParam)
            and ctx.estimator.rows(optimize(plan)) <= ctx.broadcast_row_limit)


def _computes(plan: LogicalPlan) -> bool:
    return isinstance(plan, (Aggregate, Join, MultiJoin, Window)) or any(_computes(i) for i in plan.inputs)


def _holds(obj, kind: type) -> bool:
    """Whether ``obj`` (a plan or an expression, any nesting of dataclasses and tuples) holds a ``kind``."""
    if isinstance(obj, kind):
        return True
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return any(_holds(getattr(obj, f.name), kind) for f in dataclasses.fields(obj))
    if isinstance(obj, (tuple, list)):
        return any(_holds(item, kind) for item in obj)
    return False


def _replace(plan: LogicalPlan, scans: dict, top: bool = True) -> LogicalPlan:
    """``plan`` with every reference in ``scans`` (by identity) replaced by its CteScan; ``top=False``
    keeps ``plan`` itself (a definition, which is one of its CTE's references)."""
    if top and id(plan) in scans:
        return scans[id(plan)]
    if isinstance(plan, CteScan) or not plan.inputs:
        return plan
    changed = {}
    for f in dataclasses.fields(plan):
        value = getattr(plan, f.name)
        if isinstance(value, LogicalPlan):
            new = _replace(value, scans)
            if new is not value:
                changed[f.name] = new
        elif isinstance(value, tuple) and value and all(isinstance(v, LogicalPlan) for v in value):
            new = tuple(_replace(v, scans) for v in value)
            if any(a is not b for a, b in zip(new, value)):
                changed[f.name] = new
    return dataclasses.replace(plan, **changed) if changed else plan
