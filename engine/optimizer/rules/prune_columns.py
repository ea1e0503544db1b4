"""Keep only the columns a parent needs: narrow scans (projection pushdown) and projections, drop
unused aggregates. A column is dropped right after the operator that last reads it: a scan reads the
columns only its pushed filters read without outputting them, a join does not output its keys (or
the columns its residual reads) where nothing above reads them. So no exchange, join build side or
gather above carries a column nothing reads (TPC-H Q13's o_comment, 97 MiB at SF 1, was shipped
to the join that counts orders).

>>> from engine import types as T
>>> from engine.catalog import ColumnDef, TableDef
>>> from engine.core.expressions import Call, Literal
>>> from engine.plan.logical import Field
>>> t = TableDef("db", "t", tuple(ColumnDef(n, T.BIGINT) for n in "abc"))
>>> a, b, c = (Field(f"t.{n}#{i}", n, T.BIGINT) for i, n in enumerate("abc"))
>>> scan = Scan(t, (a, b, c), ("a", "b", "c"), (Call("gt", (b.ref(), Literal(0, T.BIGINT)), T.BOOLEAN),))
>>> plan = Project(scan, ((Field("x#4", "x", T.BIGINT), a.ref()),))   # SELECT a AS x FROM t WHERE b > 0
>>> print(prune_columns(plan, None).pretty())        # reads no estimates: no context needed
Project a AS x
  Scan t [a; filter only: b] WHERE (b > 0)
"""
from __future__ import annotations

import dataclasses

from typing import Optional

from engine.optimizer.context import OptimizerContext
from engine.plan.logical import (Aggregate, Filter, Join, Limit, LogicalPlan, MultiJoin, Project, Repeat, Scan,
                                 Sort, Union, Values, Window)


def prune_columns(plan: LogicalPlan, ctx: OptimizerContext) -> LogicalPlan:
    return _prune(plan, None)


def _ids(exprs) -> set[str]:
    out: set[str] = set()
    for e in exprs:
        if e is not None:
            out |= e.column_ids()
    return out


def _prune(node: LogicalPlan, required: Optional[set[str]]) -> LogicalPlan:
    if isinstance(node, Scan):
        if required is None:
            return node
        read = node.read_columns()
        keep = [(f, c) for f, c in read if f.id in required]
        filtered = _ids(node.filters)
        if not keep:   # COUNT(*): the columns the filters read, or the narrowest column, give the row count
            keep = [(f, c) for f, c in read if f.id in filtered] or \
                [min(read, key=lambda fc: _width(fc[0].type))]
        # a column only the filters read is read, filtered on and dropped by the scan itself
        hidden = [(f, c) for f, c in read if f.id in filtered and f.id not in {k.id for k, _ in keep}]
        return Scan(node.table, tuple(f for f, _ in keep), tuple(c for _, c in keep), node.filters, node.alias,
                    tuple(f for f, _ in hidden), tuple(c for _, c in hidden))
    if isinstance(node, Values):
        return node
    if isinstance(node, Project):
        exprs = node.exprs if required is None else tuple((f, e) for f, e in node.exprs if f.id in required)
        if not exprs and node.exprs:
            exprs = node.exprs[:1]
        return Project(_prune(node.input, _ids(e for _, e in exprs)), exprs)
    if isinstance(node, Filter):
        need = None if required is None else required | node.predicate.column_ids()
        return Filter(_prune(node.input, need), node.predicate)
    if isinstance(node, Join):
        need = (required if required is not None else node.field_ids()) | _ids(node.left_keys) | \
            _ids(node.right_keys) | _ids([node.residual])
        left = _prune(node.left, need & node.left.field_ids())
        right = _prune(node.right, need & node.right.field_ids())
        join = Join(left, right, node.kind, node.left_keys, node.right_keys, node.residual)
        return join if required is None else _output_only(join, required)
    if isinstance(node, MultiJoin):
        need = (required if required is not None else node.field_ids()) | _ids(node.conditions)
        return MultiJoin(tuple(_prune(i, need & i.field_ids()) for i in node.inputs), node.conditions)
    if isinstance(node, Aggregate):
        aggs = node.aggregates if required is None else tuple(
            (f, a) for f, a in node.aggregates if f.id in required)
        need = _ids(e for _, e in node.keys) | _ids(x for _, a in aggs for x in a.arguments())
        return dataclasses.replace(node, input=_prune(node.input, need), aggregates=aggs)
    if isinstance(node, Sort):
        need = None if required is None else required | _ids(k.expr for k in node.keys)
        return Sort(_prune(node.input, need), node.keys, node.limit)
    if isinstance(node, Limit):
        return Limit(_prune(node.input, required), node.count, node.offset)
    if isinstance(node, Repeat):
        need = None if required is None else required | node.count.column_ids()
        return Repeat(_prune(node.input, need), node.count)
    if isinstance(node, Window):
        calls = node.calls if required is None else tuple((f, c) for f, c in node.calls if f.id in required)
        if not calls:
            return _prune(node.input, required)
        need = None if required is None else (required - {f.id for f, _ in calls}) | \
            _ids(node.partition_by) | _ids(k.expr for k in node.order_by) | \
            _ids(a for _, c in calls for a in c.args)
        keep = node.keep if node.keep is not None and any(f.id == node.keep[0] for f, _ in calls) else None
        return Window(_prune(node.input, need), node.partition_by, node.order_by, calls, keep)
    if isinstance(node, Union):
        return Union(tuple(_prune(i, None) for i in node.inputs), node.fields)
    return node


def _output_only(join: Join, required: set[str]) -> Join:
    """``join`` outputting only the ``required`` columns: its keys and the columns only its residual
    reads are dropped by the join, never carried through the operators and exchanges above it. At
    least one column stays (a batch without columns has no rows): a COUNT(*) above counts its rows."""
    fields = join.fields
    kept = frozenset(f.id for f in fields if f.id in required)
    if len(kept) == len(fields):
        return join
    if not kept:
        kept = frozenset((min(fields, key=lambda f: _width(f.type)).id,))
    return dataclasses.replace(join, output=kept)


def _width(t) -> int:
    return {"bool": 1, "int": t.bits // 8, "date": 4, "float": 8, "decimal": 16}.get(t.kind, 32)
