"""Compute a WITH query referenced more than once once per statement, and read it from every reference.

The binder inlines a CTE: each reference is bound on its own, with fresh field ids, and records the plan
it bound (``Binder.cte_uses``). Inlined, TPC-H Q15's ``revenue0`` (an aggregate over lineitem) is
computed twice: in the scalar subquery's init plan and again in the main query. Here, after binding,
the references that survived into the query (its root and its init plans) are counted per CTE; a CTE
that is

* referenced two or more times,
* worth it: it aggregates or joins (a plain scan with filters is cheaper to read again than to move,
  and inlined its filters are pushed into the scan),
* and independent of scalar subqueries (no ``$subqueryN`` in it: it runs before them),

is *materialized* when

* it is small: estimated (once optimized) at most ``broadcast_row_limit`` rows. Its plan (the first
  reference's) runs once before the plans that read it, gathered to the aggregator, and every
  reference becomes a :class:`CteScan` of that result, which every task that reads it gets whole (it
  is replicated, like VALUES);
* or, bigger, when all its references are in one plan (the query's, or one scalar subquery's) and the
  physical planner prices that plan cheaper with the CTE computed once than inlined at every
  reference. Inlined, each reference gets its own filters and column pruning pushed into it (TPC-DS
  q04 reads ``year_total`` six times, each for one channel and one year: inlined, each reads only
  that); computed once, its work is not repeated (q47 reads a windowed aggregate three times, each
  reference all of it). It is then *kept*: the definition is planned into the plan that reads it, its
  rows stay on the leaves that computed them, and every reference reads that one stage.

Nested CTEs are decided outermost first: a CTE used twice only inside the definition of a
materialized one is then used once. A CTE referenced once stays inlined, where filters and column
pruning reach into it.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, Optional

from engine.catalog import TableDef
from engine.optimizer.context import OptimizerContext
from engine.core.expressions import ScalarParam
from engine.optimizer.rules.existence_joins import as_set
from engine.plan.logical import Aggregate, CteScan, Filter, Join, LogicalPlan, MultiJoin, Project, Query, Window
from engine.types import SqlType


@dataclass(frozen=True)
class MaterializedCte:
    name: str
    index: int                 # the CteScan.index that reads it; CTEs run in index order
    plan: LogicalPlan          # optimized
    reads: int                 # references that read it


def materialize_ctes(query: Query, uses: dict, ctx: OptimizerContext,
                     optimize: Callable[[LogicalPlan], LogicalPlan],
                     price: Optional[Callable[[LogicalPlan], float]] = None, first_index: int = 0,
                     ) -> tuple[Query, tuple[MaterializedCte, ...]]:
    """``uses``: the binder's ``cte_uses``. Returns the query with the references of materialized CTEs
    replaced by CteScans, and the CTEs computed before the plans in the order they must run (one's
    definition may read an earlier one); kept CTEs are planned into their readers' plan instead.
    ``price(plan)``: the estimated cost of a bound plan once optimized and planned (None: no CTE above
    ``broadcast_row_limit`` rows is materialized). ``first_index``: the first CteScan number to give (the
    numbers below are the statement's recursive WITH queries', engine.plan.recursive_ctes)."""
    if not uses:
        return query, ()
    roots = [query.root] + [sub.root for sub in query.subqueries]
    chosen: list[tuple[int, list[LogicalPlan], bool]] = []  # (CTE key, its references, kept), outermost first
    rejected: set[int] = set()
    while True:
        live = roots + [inner for _, refs, _ in chosen for inner in refs[0].inputs]     # definitions' bodies
        done = {key for key, _, _ in chosen}
        found: dict[int, list[LogicalPlan]] = {}
        for tree in live:
            _collect(tree, uses, found, done)
        candidates = {key for key, refs in found.items()
                      if key not in done and key not in rejected and len(refs) >= 2}
        worth: dict[int, bool] = {}         # CTE key -> kept
        for key in candidates:
            how = _how(found[key], roots, uses, done, ctx, optimize, price)
            if how is not None:
                worth[key] = how
        rejected |= candidates - worth.keys()
        if not worth:
            break
        nested: dict[int, list[LogicalPlan]] = {}
        for key in worth:          # a candidate referenced inside another candidate waits for the next round
            for ref in found[key]:
                for inner in ref.inputs:
                    _collect(inner, uses, nested, done)
        chosen.extend((key, found[key], worth[key]) for key in found if key in worth and key not in nested)

    if not chosen:
        return query, ()
    # run order: a CTE chosen later is referenced inside one chosen earlier, so it runs first
    order = list(reversed(chosen))
    scans: dict[int, CteScan] = {}
    materialized = []
    kept_index = first_index + len([c for c in chosen if not c[2]])     # kept CTEs: after the computed ones
    for key, refs, kept in order:
        name = uses[id(refs[0])][1]
        definition = optimize(_replace(refs[0], scans, top=False))
        if kept:
            index, kept_index = kept_index, kept_index + 1
        else:
            index = first_index + len(materialized)
            materialized.append(MaterializedCte(name, index, definition, len(refs)))
        for ref in refs:
            scans[id(ref)] = CteScan(ref.fields, name, index, definition, kept)
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


def _how(refs: list[LogicalPlan], roots: list[LogicalPlan], uses: dict, done: set, ctx: OptimizerContext,
         optimize: Callable[[LogicalPlan], LogicalPlan],
         price: Optional[Callable[[LogicalPlan], float]]) -> Optional[bool]:
    """How a CTE read by ``refs`` is best computed: False gathered before the plans (small), True kept
    in the plan that reads it, None inlined at every reference.

    The size is estimated on the optimized plan: as bound, its joins are a MultiJoin estimated by a
    flat default (TPC-DS q14's cross_items at SF1: 305k rows against 17k once its joins are ordered, so
    the INTERSECT of three fact-table joins inside it was computed once per reference, three times)."""
    plan = refs[0]
    if not _computes(plan) or _holds(plan, ScalarParam):
        return None
    definition = optimize(plan)
    if all(any(_tested_for_existence(root, ref) for root in roots) for ref in refs) and any(
            as_set(definition, {f.id}) is not None for f in definition.fields):
        # read only by IN / EXISTS, inlined it shrinks to a semi join (rules/existence_joins.py: TPC-DS
        # q95's self-join of web_sales, 6.6M pairs computed once, or two semi joins of 719k rows each)
        return None
    if ctx.estimator.rows(definition) <= ctx.broadcast_row_limit:
        return False
    if price is None:
        return None
    home = None                    # the one plan holding every reference
    for root in roots:
        here: dict[int, list[LogicalPlan]] = {}
        _collect(root, uses, here, done)
        count = sum(1 for found in here.values() for ref in found if any(ref is r for r in refs))
        if count == len(refs):
            home = root
        elif count:
            return None
    if home is None:
        return None
    name = uses[id(plan)][1]
    scans = {id(ref): CteScan(ref.fields, name, 0, definition, kept=True) for ref in refs}
    return True if price(_replace(home, scans)) < price(home) else None


def _tested_for_existence(root: LogicalPlan, ref: LogicalPlan) -> bool:
    """Whether ``ref`` is read in ``root`` only for the set of its rows' values: under the right side of
    a semi or anti join, through projections, filters, inner joins and DISTINCT."""
    def walk(plan: LogicalPlan, existence: bool) -> Optional[bool]:
        if plan is ref:
            return existence
        if isinstance(plan, CteScan):
            return None
        for i, child in enumerate(plan.inputs):
            if isinstance(plan, Join) and plan.kind in ("semi", "anti", "anti_null_aware"):
                inside = i == 1 or existence
            elif isinstance(plan, (Join, MultiJoin)):
                inside = existence and (not isinstance(plan, Join) or plan.kind == "inner")
            elif isinstance(plan, Aggregate):
                inside = existence and not plan.aggregates and not plan.grouping_sets
            else:
                inside = existence and isinstance(plan, (Project, Filter))
            found = walk(child, inside)
            if found is not None:
                return found
        return None
    return bool(walk(root, False))


def _computes(plan: LogicalPlan) -> bool:
    return isinstance(plan, (Aggregate, Join, MultiJoin, Window)) or any(_computes(i) for i in plan.inputs)


def _holds(obj, kind: type) -> bool:
    """Whether ``obj`` (a plan or an expression, any nesting of dataclasses and tuples) holds a ``kind``.
    A table's definition and a type hold no expression: not walked (a scan's TableDef is most of a
    plan's objects)."""
    if isinstance(obj, kind):
        return True
    if isinstance(obj, (TableDef, SqlType)):
        return False
    if isinstance(obj, (tuple, list)):
        return any(_holds(item, kind) for item in obj)
    names = _FIELD_NAMES.get(type(obj))
    if names is None:
        names = _FIELD_NAMES[type(obj)] = tuple(f.name for f in dataclasses.fields(obj)) \
            if dataclasses.is_dataclass(obj) and not isinstance(obj, type) else ()
    return any(_holds(getattr(obj, name), kind) for name in names)


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}      # a dataclass -> its fields' names (none: not one)


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
