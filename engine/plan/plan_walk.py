"""Rewriting bound plans as a whole: the expressions of each node, the columns a subtree reads from
outside itself (a correlated subquery's outer references), substituting columns throughout a tree and
copying a tree with fresh column ids (so it can appear twice in one plan).

Used by :mod:`engine.plan.decorrelate`; every node kind the binder produces is listed here, and an
unknown one raises rather than being copied wrongly.
"""
from __future__ import annotations

import dataclasses

from engine.errors import UnsupportedError
from engine.core.expressions import AggCall, ColumnRef, Expr, replace_columns
from engine.plan.logical import (Aggregate, CteScan, Field, Filter, Join, Limit, LogicalPlan, MultiJoin,
                                 Project, Repeat, Scan, Sort, SortKey, Union, Values, Window)
from engine.plan.scope import IdGenerator


def node_exprs(plan: LogicalPlan) -> list:
    """The expressions (and aggregate calls) one node evaluates, not those of its inputs."""
    if isinstance(plan, Scan):
        return list(plan.filters)
    if isinstance(plan, Filter):
        return [plan.predicate]
    if isinstance(plan, Project):
        return [e for _, e in plan.exprs]
    if isinstance(plan, Aggregate):
        return [e for _, e in plan.keys] + [x for _, a in plan.aggregates for x in a.arguments()]
    if isinstance(plan, Join):
        return list(plan.left_keys) + list(plan.right_keys) + ([plan.residual] if plan.residual is not None else [])
    if isinstance(plan, MultiJoin):
        return list(plan.conditions)
    if isinstance(plan, Sort):
        return [k.expr for k in plan.keys]
    if isinstance(plan, Repeat):
        return [plan.count]
    if isinstance(plan, Window):
        return list(plan.partition_by) + [k.expr for k in plan.order_by] + \
            [a for _, call in plan.calls for a in call.args]
    if isinstance(plan, (Values, CteScan, Limit, Union)):
        return []
    raise UnsupportedError(f"a correlated subquery over {plan.describe().split()[0]}")


def free_refs(plan: LogicalPlan) -> set[str]:
    """Ids of the columns a subtree reads that none of its nodes produce: its outer references."""
    produced: set[str] = set()
    used: set[str] = set()
    for node in _nodes(plan):
        produced |= node.field_ids()
        for e in node_exprs(node):
            used |= e.column_ids()
    return used - produced


def _nodes(plan: LogicalPlan):
    yield plan
    for child in plan.inputs:
        yield from _nodes(child)


def substitute(e, mapping: dict[str, Expr]):
    if isinstance(e, AggCall):
        arg = None if e.arg is None else replace_columns(e.arg, mapping)
        return dataclasses.replace(e, arg=arg, extra=tuple(replace_columns(x, mapping) for x in e.extra))
    return replace_columns(e, mapping)


def substitute_plan(plan: LogicalPlan, mapping: dict[str, Expr]) -> LogicalPlan:
    """``plan`` with the column references of ``mapping`` replaced in every node's expressions (the
    fields the nodes produce keep their ids)."""
    return _copy(plan, mapping, None)


def refresh(plan: LogicalPlan, ids: IdGenerator) -> tuple[LogicalPlan, dict[str, str]]:
    """A copy of ``plan`` whose produced columns have new ids; returns it and old id -> new id.
    Outer references (columns the subtree does not produce) keep theirs."""
    mapping: dict[str, Expr] = {}
    copy = _copy(plan, mapping, ids)
    return copy, {old: new.id for old, new in mapping.items() if isinstance(new, ColumnRef)}


def _renamed(fields, mapping: dict[str, Expr], ids) -> tuple[Field, ...]:
    if ids is None:
        return tuple(fields)
    out = []
    for f in fields:
        new = Field(ids.new(f.name or "col"), f.name, f.type, f.nullable)
        mapping[f.id] = new.ref()
        out.append(new)
    return tuple(out)


def _copy(plan: LogicalPlan, mapping: dict[str, Expr], ids) -> LogicalPlan:
    """Copy bottom-up; with ``ids``, each field a node defines gets a new id recorded in ``mapping``
    (which the nodes above read through); without, only ``mapping``'s substitutions apply."""
    sub = lambda e: substitute(e, mapping)      # noqa: E731
    if isinstance(plan, Scan):
        fields = _renamed(plan.fields, mapping, ids)
        hidden = _renamed(plan.filter_fields, mapping, ids)
        return dataclasses.replace(plan, fields=fields, filter_fields=hidden,
                                   filters=tuple(sub(f) for f in plan.filters))
    if isinstance(plan, Values):
        return dataclasses.replace(plan, fields=_renamed(plan.fields, mapping, ids))
    if isinstance(plan, CteScan):
        return dataclasses.replace(plan, fields=_renamed(plan.fields, mapping, ids))
    if isinstance(plan, Filter):
        child = _copy(plan.input, mapping, ids)
        return Filter(child, sub(plan.predicate))
    if isinstance(plan, Project):
        child = _copy(plan.input, mapping, ids)
        exprs = [sub(e) for _, e in plan.exprs]
        fields = _renamed([f for f, _ in plan.exprs], mapping, ids)
        return Project(child, tuple(zip(fields, exprs)))
    if isinstance(plan, Aggregate):
        child = _copy(plan.input, mapping, ids)
        keys = [sub(e) for _, e in plan.keys]
        aggs = [sub(a) for _, a in plan.aggregates]
        key_fields = _renamed([f for f, _ in plan.keys], mapping, ids)
        agg_fields = _renamed([f for f, _ in plan.aggregates], mapping, ids)
        grouping_id = _renamed([plan.grouping_id], mapping, ids)[0] if plan.grouping_id is not None else None
        return dataclasses.replace(plan, input=child, keys=tuple(zip(key_fields, keys)),
                                   aggregates=tuple(zip(agg_fields, aggs)), grouping_id=grouping_id)
    if isinstance(plan, Join):
        left = _copy(plan.left, mapping, ids)
        right = _copy(plan.right, mapping, ids)
        residual = sub(plan.residual) if plan.residual is not None else None
        return Join(left, right, plan.kind, tuple(sub(k) for k in plan.left_keys),
                    tuple(sub(k) for k in plan.right_keys), residual)
    if isinstance(plan, MultiJoin):
        inputs = tuple(_copy(i, mapping, ids) for i in plan.inputs_)
        return MultiJoin(inputs, tuple(sub(c) for c in plan.conditions))
    if isinstance(plan, Sort):
        child = _copy(plan.input, mapping, ids)
        return Sort(child, tuple(SortKey(sub(k.expr), k.ascending, k.nulls_first) for k in plan.keys), plan.limit)
    if isinstance(plan, Limit):
        return Limit(_copy(plan.input, mapping, ids), plan.count, plan.offset)
    if isinstance(plan, Repeat):
        child = _copy(plan.input, mapping, ids)
        return Repeat(child, sub(plan.count))
    if isinstance(plan, Union):
        inputs = tuple(_copy(i, mapping, ids) for i in plan.inputs_)
        return Union(inputs, _renamed(plan.fields, mapping, ids))
    if isinstance(plan, Window):
        child = _copy(plan.input, mapping, ids)
        partition_by = tuple(sub(p) for p in plan.partition_by)
        if not all(isinstance(p, ColumnRef) for p in partition_by):
            raise UnsupportedError("a correlated subquery partitioning a window by an outer column")
        order_by = tuple(SortKey(sub(k.expr), k.ascending, k.nulls_first) for k in plan.order_by)
        calls = [dataclasses.replace(c, args=tuple(sub(a) for a in c.args)) for _, c in plan.calls]
        fields = _renamed([f for f, _ in plan.calls], mapping, ids)
        keep = None if plan.keep is None else \
            (next(new.id for new, (old, _) in zip(fields, plan.calls) if old.id == plan.keep[0]), plan.keep[1])
        return Window(child, partition_by, order_by, tuple(zip(fields, calls)), keep)
    raise UnsupportedError(f"a correlated subquery over {plan.describe().split()[0]}")
