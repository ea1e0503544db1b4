"""Transitive predicates across the equi-joins of a MultiJoin.

The inner-join conditions ``a.x = b.y`` of a MultiJoin put columns into equivalence classes: every row the
join outputs has equal, non-NULL values in all the columns of a class. Two kinds of predicate follow:

* a filter on one column of a class holds for every other column of it: ``a.x = b.y AND a.x = 5`` implies
  ``b.y = 5``, which then filters b's scan before the join instead of after it;
* columns of one class are equal pairwise: ``a.x = b.y AND b.y = c.z`` implies ``a.x = c.z``, a join
  option that lets the join-order rule join a with c directly (it drops the keys a join already implies).

Only what is safe under any collation or type is carried over: a filter made of comparisons of the
column with constants (``= <> < <= > >=``, IN lists, IS [NOT] NULL, AND / OR / NOT of those), and only
between plain columns of the same kind. A filter is taken from where it holds for every row an input
outputs: the input's filters and scan filters, through inner joins and the preserved side of left, semi
and anti joins. Derived predicates are added to the MultiJoin's conditions; the join-order rule turns
the single-input ones into filters of that input, and filter pushdown moves them into its scan.

>>> from engine.core.expressions import Call, ColumnRef, Literal
>>> from engine import types as T
>>> x, y, z = (ColumnRef(n, T.BIGINT) for n in "xyz")
>>> eq = lambda a, b: Call("eq", (a, b), T.BOOLEAN)
>>> known = {"x": [eq(x, Literal(5, T.BIGINT))]}
>>> for p in implied_predicates([eq(x, y), eq(y, z)], known): print(p)
(y = 5)
(z = 5)
(x = z)
"""
from __future__ import annotations

from engine.optimizer.context import OptimizerContext
from engine.core.expressions import Call, ColumnRef, Expr, Literal, ScalarParam, conjuncts, replace_columns
from engine.plan.logical import Filter, Join, LogicalPlan, MultiJoin, Scan
from engine.types import BOOLEAN


def transitive_predicates(plan: LogicalPlan, ctx: OptimizerContext) -> LogicalPlan:
    from engine.plan.logical import map_inputs
    plan = map_inputs(plan, lambda child: transitive_predicates(child, ctx))
    if not isinstance(plan, MultiJoin):
        return plan
    known: dict[str, list[Expr]] = {}
    for child in plan.inputs:
        for p in _holding_filters(child):
            _add_known(p, known)
    for c in plan.conditions:
        _add_known(c, known)
    implied = implied_predicates(list(plan.conditions), known)
    return MultiJoin(plan.inputs_, plan.conditions + tuple(implied)) if implied else plan


def implied_predicates(conditions: list[Expr], known: dict[str, list[Expr]]) -> list[Expr]:
    """What ``conditions`` (a MultiJoin's) and the single-column filters ``known`` (column id -> filters on
    that column alone) imply and do not already say: filters on the other columns of each column's
    equivalence class, then the missing equalities within each class, in a deterministic order."""
    classes = _equivalence_classes(conditions)
    out: list[Expr] = []
    for members in classes:
        for source in members:
            for p in known.get(source.id, []):
                for target in members:
                    if target.id == source.id:
                        continue
                    derived = replace_columns(p, {source.id: target})
                    if derived not in known.get(target.id, []) and derived not in out:
                        out.append(derived)
    for p in out:
        _add_known(p, known)
    linked = {frozenset(pair) for pair in _column_pairs(conditions)}
    for members in classes:
        for i, a in enumerate(members):
            for b in members[i + 1:]:
                if frozenset((a.id, b.id)) not in linked:
                    out.append(Call("eq", (a, b), BOOLEAN))
    return out

_CARRIED_OPS = ("eq", "ne", "lt", "le", "gt", "ge", "in_list", "is_null", "and", "or", "not", "cast")


def _column_pairs(conditions: list[Expr]):
    for c in conditions:
        if isinstance(c, Call) and c.op == "eq" and all(isinstance(a, ColumnRef) for a in c.args):
            x, y = c.args
            if x.id != y.id and x.type.kind == y.type.kind:
                yield x.id, y.id


def _equivalence_classes(conditions: list[Expr]) -> list[list[ColumnRef]]:
    parent: dict[str, str] = {}
    refs: dict[str, ColumnRef] = {}

    def find(i: str) -> str:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for c in conditions:
        if isinstance(c, Call) and c.op == "eq" and all(isinstance(a, ColumnRef) for a in c.args):
            x, y = c.args
            if x.id == y.id or x.type.kind != y.type.kind:
                continue
            for r in (x, y):
                refs.setdefault(r.id, r)
                parent.setdefault(r.id, r.id)
            parent[find(x.id)] = find(y.id)
    classes: dict[str, list[ColumnRef]] = {}
    for i in refs:                       # refs keeps first-seen order: the output is deterministic
        classes.setdefault(find(i), []).append(refs[i])
    return [m for m in classes.values() if len(m) > 1]


def _add_known(p: Expr, known: dict[str, list[Expr]]) -> None:
    ids = p.column_ids()
    if len(ids) == 1 and _carried(p):
        column = next(iter(ids))
        if p not in known.setdefault(column, []):
            known[column].append(p)


def _carried(p: Expr) -> bool:
    """Comparisons of one column with constants: true of a column iff true of any column equal to it."""
    for e in p.walk():
        if isinstance(e, Call) and e.op not in _CARRIED_OPS:
            return False
        if not isinstance(e, (Call, ColumnRef, Literal, ScalarParam)):
            return False
    return True


def _holding_filters(plan: LogicalPlan) -> list[Expr]:
    """Predicates true of every row ``plan`` outputs, as found on its filters and scans."""
    if isinstance(plan, Filter):
        return conjuncts(plan.predicate) + _holding_filters(plan.input)
    if isinstance(plan, Scan):
        return list(plan.filters)
    if isinstance(plan, Join):
        if plan.kind == "inner":
            return _holding_filters(plan.left) + _holding_filters(plan.right)
        if plan.kind in ("left", "semi", "anti", "anti_null_aware"):
            return _holding_filters(plan.left)
    return []
