"""Subqueries in a join's ON condition (``a JOIN b ON a.k = b.k AND b.x IN (SELECT ...)``).

A conjunct of ON that uses a subquery as a value is bound like a WHERE condition's (a
:class:`SubqueryUse` whose value ``engine.plan.decorrelate`` joins in), and placed where that is
correct:

* an inner join: ON is a filter over the joined rows, so the chain joined so far gets the values
  attached and is filtered by the conjunct;
* a LEFT join whose conjunct reads only the right side (and outer queries): it decides only which right
  rows can match, so the right input gets the values and the filter;
* otherwise (a LEFT join's conjunct reading the left side, any FULL join's): the matched pairs are the
  inner join under the whole ON condition, values attached; the left rows without a pair (an anti join
  of the left input to the pairs' left columns, NULL matching NULL: identical rows match alike, since
  the condition reads only their values) come out padded with NULLs, and for FULL the right rows
  without a pair too. Each appearance of an input is a copy with its own column ids.
"""
from __future__ import annotations

from engine.plan import decorrelate
from engine.plan.decorrelate import SubqueryUse, null_safe_keys
from engine.core.expressions import Expr, Literal, and_all, equi_pair
from engine.plan.logical import Field, Join, LogicalPlan, MultiJoin, Project, Union, filter_all
from engine.plan.plan_walk import free_refs, refresh
from engine.plan.scope import IdGenerator

# a bound ON conjunct that uses subqueries, with those uses
Valued = tuple[Expr, list[SubqueryUse]]


def filter_with_subqueries(plan: LogicalPlan, valued: list[Valued], ids: IdGenerator) -> LogicalPlan:
    """``plan`` filtered by the conjuncts of ``valued``, their subqueries' values attached first."""
    if not valued:
        return plan
    uses = [u for _, us in valued for u in us]
    return filter_all(decorrelate.attach(plan, uses, ids), [c for c, _ in valued])


def outer_join_with_subqueries(left: LogicalPlan, right: LogicalPlan, kind: str, conditions: list[Expr],
                               valued: list[Valued], ids: IdGenerator) -> LogicalPlan:
    """``left`` LEFT / FULL JOIN ``right`` ON ``conditions`` AND the conjuncts of ``valued``; the
    output has ``left``'s then ``right``'s fields (the right ones, and for FULL the left ones, nullable)."""
    right_ids = right.field_ids()
    if kind == "left":
        only_right = [v for v in valued if _reads(v) <= right_ids | _outer(v, left, right)]
        if len(only_right) == len(valued):
            right = filter_with_subqueries(right, only_right, ids)
            return _plain_join(left, right, kind, conditions)
    pairs = filter_with_subqueries(MultiJoin((left, right), tuple(conditions)), valued, ids)
    matched = Project(pairs, tuple((f, f.ref()) for f in left.fields + right.fields))
    out = tuple(Field(f.id, f.name, f.type, f.nullable or kind == "full") for f in left.fields) + \
        tuple(Field(f.id, f.name, f.type, True) for f in right.fields)
    inputs = [refresh(matched, ids)[0], _unmatched(left, right, matched, 0, ids)]
    if kind == "full":
        inputs.append(_unmatched(right, left, matched, len(left.fields), ids))
    return Union(tuple(inputs), out)


def _reads(v: Valued) -> set[str]:
    """The columns a conjunct and its subqueries read, other than the subqueries' own results."""
    condition, uses = v
    results = {u.result.id for u in uses}
    read = set(condition.column_ids()) - results
    for u in uses:
        read |= free_refs(u.plan)
        probes = u.probe if isinstance(u.probe, tuple) else (u.probe,) if u.probe is not None else ()
        for p in probes:
            read |= p.column_ids()
    return read


def _outer(v: Valued, left: LogicalPlan, right: LogicalPlan) -> set[str]:
    """The columns ``v`` reads from queries further out (neither side produces them)."""
    return _reads(v) - left.field_ids() - right.field_ids()


def _plain_join(left, right, kind, conditions) -> LogicalPlan:
    lkeys, rkeys, residual = [], [], []
    for c in conditions:
        pair = equi_pair(c, left.field_ids(), right.field_ids())
        if pair:
            lkeys.append(pair[0])
            rkeys.append(pair[1])
        else:
            residual.append(c)
    return Join(left, right, kind, tuple(lkeys), tuple(rkeys), and_all(residual))


def _unmatched(side: LogicalPlan, other: LogicalPlan, matched: LogicalPlan, offset: int,
               ids: IdGenerator) -> LogicalPlan:
    """The rows of ``side`` that are in no matched pair (``side``'s columns start at ``offset`` among
    the pair's), ``other``'s columns NULL; fields in the order left, right."""
    mine, _ = refresh(side, ids)
    pairs, _ = refresh(matched, ids)
    n = len(side.fields)
    pair_cols = pairs.fields[offset:offset + n]
    lkeys, rkeys = null_safe_keys([(a.ref(), b.ref(), a.nullable and b.nullable)
                                   for a, b in zip(mine.fields, pair_cols)])
    alone = Join(mine, pairs, "anti", lkeys, rkeys)
    own = [(Field(ids.new(f.name), f.name, f.type, f.nullable), f.ref()) for f in mine.fields]
    nulls = [(Field(ids.new(f.name), f.name, f.type, True), Literal(None, f.type)) for f in other.fields]
    return Project(alone, tuple(own + nulls) if offset == 0 else tuple(nulls + own))

