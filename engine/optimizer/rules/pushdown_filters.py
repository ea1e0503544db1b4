"""Push predicates toward the scans: through projections, into join inputs and join keys, below
aggregates (on group keys), into union branches, and finally into ``Scan.filters``.

Example: ``SELECT * FROM (SELECT a AS x FROM t) s WHERE x > 1`` becomes a scan of ``t`` with ``a > 1``.

>>> from engine import types as T
>>> from engine.catalog import ColumnDef, TableDef
>>> from engine.core.expressions import Call, Literal
>>> from engine.plan.logical import Field
>>> t = TableDef("db", "t", (ColumnDef("a", T.BIGINT), ColumnDef("b", T.BIGINT)))
>>> a, b, x = Field("t.a#1", "a", T.BIGINT), Field("t.b#2", "b", T.BIGINT), Field("x#3", "x", T.BIGINT)
>>> s = Project(Scan(t, (a, b), ("a", "b")), ((x, a.ref()),))          # (SELECT a AS x FROM t) s
>>> plan = Filter(s, Call("gt", (x.ref(), Literal(1, T.BIGINT)), T.BOOLEAN))
>>> print(plan.pretty())
Filter (x > 1)
  Project a AS x
    Scan t [a, b]
>>> print(pushdown_filters(plan, None).pretty())     # reads no estimates: no context needed
Project a AS x
  Scan t [a, b] WHERE (a > 1)
"""
from __future__ import annotations

import dataclasses

from engine.optimizer.context import OptimizerContext
from engine.types import BOOLEAN
from engine.errors import BadDataError
from engine.exec.evaluate import fold_constant
from engine.core.expressions import Call, ColumnRef, Expr, Literal, ScalarParam, and_all, conjuncts, replace_columns
from engine.plan.logical import (Aggregate, Filter, Join, Limit, LogicalPlan, MultiJoin, Project, Repeat, Scan,
                                 Sort, Union, Values, Window)


def pushdown_filters(plan: LogicalPlan, ctx: OptimizerContext) -> LogicalPlan:
    return _push(plan, [])


def _wrap(node: LogicalPlan, predicates: list[Expr]) -> LogicalPlan:
    if any(_constant(p) in (None, False) for p in predicates):
        return Values(node.fields, ())          # the input is not computed at all
    predicate = and_all([p for p in predicates if _constant(p) is not True])
    return Filter(node, predicate) if predicate is not None else node


_NOT_CONSTANT = object()


def _constant(p: Expr):
    """The value of a predicate without columns (folded), else ``_NOT_CONSTANT``. A filter pushed
    through a projection of constants becomes one, e.g. a CTE's UNION ALL branch tagged
    ``'s' AS sale_type`` read as ``sale_type = 'w'``: false there, so that branch is not computed
    (TPC-DS q04 computed every branch for each of the CTE's six references)."""
    if p.column_ids() or not _deterministic(p) or any(isinstance(x, ScalarParam) for x in p.walk()):
        return _NOT_CONSTANT
    try:
        return p.value if isinstance(p, Literal) else fold_constant(p).value
    except BadDataError:             # an error the query must still raise where it is evaluated
        return _NOT_CONSTANT


def _deterministic(e: Expr) -> bool:
    return not any(isinstance(x, Call) and x.op in ("now", "current_date") for x in e.walk())


def _push(node: LogicalPlan, predicates: list[Expr]) -> LogicalPlan:
    if isinstance(node, Filter):
        return _push(node.input, predicates + conjuncts(node.predicate))
    if isinstance(node, Scan):
        local = [p for p in predicates if p.column_ids() and p.column_ids() <= node.field_ids()]
        rest = [p for p in predicates if p not in local]
        scan = Scan(node.table, node.fields, node.column_names, node.filters + tuple(local), node.alias)
        return _wrap(scan, rest)
    if isinstance(node, Project):
        mapping = {f.id: e for f, e in node.exprs}
        pushed = [replace_columns(p, mapping) for p in predicates if _deterministic(p)]
        kept = [p for p in predicates if not _deterministic(p)]
        return _wrap(Project(_push(node.input, pushed), node.exprs), kept)
    if isinstance(node, MultiJoin):
        conditions = list(node.conditions) + predicates
        inputs = []
        for child in _inner_where_rejected(node.inputs, conditions):
            ids = child.field_ids()
            mine = [c for c in conditions if c.column_ids() and c.column_ids() <= ids]
            conditions = [c for c in conditions if c not in mine]
            inputs.append(_push(child, mine))
        return MultiJoin(tuple(inputs), tuple(conditions))
    if isinstance(node, Join):
        return _push_join(node, predicates)
    if isinstance(node, Aggregate):
        # a key rolled up in some grouping set is NULL in that set's rows: only the keys of every set
        # hold a value that the input rows had
        in_all = [i for i in range(len(node.keys)) if all(i in s for s in node.grouping_sets)]
        key_map = {f.id: e for i, (f, e) in enumerate(node.keys) if not node.grouping_sets or i in in_all}
        below, above = [], []
        for p in predicates:
            if p.column_ids() and p.column_ids() <= set(key_map) and _deterministic(p):
                below.append(replace_columns(p, key_map))
            else:
                above.append(p)
        return _wrap(dataclasses.replace(node, input=_push(node.input, below)), above)
    if isinstance(node, Sort):
        if node.limit is None:
            return Sort(_push(node.input, predicates), node.keys, node.limit)
        return _wrap(Sort(_push(node.input, []), node.keys, node.limit), predicates)
    if isinstance(node, Limit):
        return _wrap(Limit(_push(node.input, []), node.count, node.offset), predicates)
    if isinstance(node, Repeat):       # copies of a row pass a deterministic filter together
        below = [p for p in predicates if _deterministic(p)]
        return _wrap(Repeat(_push(node.input, below), node.count), [p for p in predicates if p not in below])
    if isinstance(node, Window):
        # a filter on PARTITION BY columns keeps or drops whole partitions: it commutes with the
        # window; any other would change the rows a window function sees
        keys = {k.id for k in node.partition_by}
        below = [p for p in predicates if p.column_ids() and p.column_ids() <= keys and _deterministic(p)]
        above = [p for p in predicates if not any(p is b for b in below)]
        return _wrap(Window(_push(node.input, below), node.partition_by, node.order_by, node.calls, node.keep), above)
    if isinstance(node, Union):
        branches = []
        for branch in node.inputs:
            mapping = {out.id: f.ref() for out, f in zip(node.fields, branch.fields)}
            branches.append(_push(branch, [replace_columns(p, mapping) for p in predicates]))
        return Union(tuple(branches), node.fields)
    if isinstance(node, Values):
        return _wrap(node, predicates)
    return _wrap(node, predicates)


def _rejects_nulls_of(p: Expr, ids: set[str]) -> bool:
    """Whether ``p`` is never true when the columns ``ids`` are NULL: a comparison with one of them
    as an operand (through casts) is NULL then, and a WHERE drops the row."""
    if not (isinstance(p, Call) and p.op in _NULL_REJECTING):
        return False
    for arg in p.args:
        while isinstance(arg, Call) and arg.op == "cast":
            arg = arg.args[0]
        if isinstance(arg, ColumnRef) and arg.id in ids:
            return True
    return False


_NULL_REJECTING = {"eq", "ne", "lt", "le", "gt", "ge"}


def _inner_where_rejected(inputs, conditions: list[Expr]) -> list[LogicalPlan]:
    """A LEFT JOIN among the inputs of an inner join whose conditions reject NULLs of its right side
    keeps no NULL-padded row: it is an inner join, and its two sides join the others as inputs, so
    the join order is free (``FROM a LEFT JOIN b ON ..., c WHERE b.x = c.y``). ``conditions`` gains
    the join's own. Everything else is returned as is."""
    result = []
    for child in inputs:
        if isinstance(child, Join) and child.kind == "left" and any(
                _rejects_nulls_of(c, child.right.field_ids()) for c in conditions):
            conditions.extend(Call("eq", (lk, rk), BOOLEAN) for lk, rk in zip(child.left_keys, child.right_keys))
            conditions.extend(conjuncts(child.residual))
            result.extend(_inner_where_rejected((child.left, child.right), conditions))
        else:
            result.append(child)
    return result


def _push_join(node: Join, predicates: list[Expr]) -> LogicalPlan:
    left_ids, right_ids = node.left.field_ids(), node.right.field_ids()
    if node.kind == "left" and any(_rejects_nulls_of(p, right_ids) for p in predicates):
        node = dataclasses.replace(node, kind="inner")      # no NULL-padded row survives the WHERE
    to_left, to_right, above = [], [], []
    left_keys, right_keys = list(node.left_keys), list(node.right_keys)
    residual = conjuncts(node.residual)
    for p in predicates:
        ids = p.column_ids()
        if ids and ids <= left_ids and node.kind != "full":    # a full join pads either side with NULLs
            to_left.append(p)
        elif node.kind in ("inner", "cross") and ids and ids <= right_ids:
            to_right.append(p)
        elif node.kind in ("inner", "cross") and ids and ids <= left_ids | right_ids:
            pair = _equi(p, left_ids, right_ids)
            if pair:
                left_keys.append(pair[0])
                right_keys.append(pair[1])
            else:
                residual.append(p)
        else:
            above.append(p)
    if node.kind in ("inner", "cross"):
        # residual conjuncts that mention one side only are filters on that side
        kept = []
        for r in residual:
            ids = r.column_ids()
            if ids and ids <= left_ids:
                to_left.append(r)
            elif ids and ids <= right_ids:
                to_right.append(r)
            else:
                kept.append(r)
        residual = kept
    kind = node.kind
    if kind == "cross" and left_keys:
        kind = "inner"
    join = Join(_push(node.left, to_left), _push(node.right, to_right), kind, tuple(left_keys),
                tuple(right_keys), and_all(residual))
    return _wrap(join, above)


def _equi(p: Expr, left_ids: set[str], right_ids: set[str]):
    if isinstance(p, Call) and p.op == "eq":
        a, b = p.args
        if a.column_ids() and b.column_ids():
            if a.column_ids() <= left_ids and b.column_ids() <= right_ids:
                return a, b
            if b.column_ids() <= left_ids and a.column_ids() <= right_ids:
                return b, a
    return None
