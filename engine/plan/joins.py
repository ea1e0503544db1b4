"""Binding a FROM clause's joins: inner, comma, LEFT / RIGHT / FULL OUTER, ``USING (cols)``, ``NATURAL``,
LATERAL derived tables (engine/plan/lateral.py) and parenthesised joins (``FROM a JOIN (b JOIN c ON ...) ON ...``, ``FROM (t AS x CROSS JOIN t y)``).

Inner and comma joins are collected as items and conditions for the join-order rule (a MultiJoin);
an outer join closes everything to its left into one input and becomes a :class:`Join` of its own
(RIGHT is LEFT with the sides swapped). ``USING (a)`` and ``NATURAL`` add the equalities ``l.a = r.a``
and merge the two columns into one unqualified ``a``: the left one for inner and left joins, the right
one for right joins, ``COALESCE(l.a, r.a)`` for full joins. ``SELECT *`` shows merged columns first,
then the others (MySQL's and the standard's order; a RIGHT JOIN's as the LEFT JOIN with the tables
swapped); ``l.a`` and ``r.a`` stay reachable qualified.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp

from engine import types as T
from engine.errors import BindError, UnsupportedError
from engine.core.expressions import Call, Expr, and_all, equi_pair
from engine.plan.join_subqueries import filter_with_subqueries, outer_join_with_subqueries
from engine.plan.lateral import bind_lateral_table, join_lateral, reads_left
from engine.plan.logical import Field, Join, LogicalPlan, MultiJoin, Project, filter_all
from engine.plan.scope import Relation, Scope

if TYPE_CHECKING:
    from engine.plan.binder import Binder


def bind_join_chain(binder: "Binder", first: exp.Expression, joins, scope: Scope,
                    ctes: dict) -> tuple[list[LogicalPlan], list[Expr]]:
    """``first`` then each of ``joins``, left to right, into ``scope``: (items, conditions) — inner
    joined items under conditions, an outer join being one item."""
    start = len(scope.relations)          # this chain's relations are scope.relations[start:]
    items: list[LogicalPlan] = [binder.bind_table_item(first, scope, ctes)]
    conditions: list[Expr] = []
    for join in joins:
        side = (join.args.get("side") or "").upper()
        method = (join.args.get("method") or "").upper()
        if method and method != "NATURAL":
            raise UnsupportedError(f"{method} JOIN")
        right_scope = Scope(parent=scope.parent)
        lateral = isinstance(join.this, exp.Lateral)
        if lateral and (method or join.args.get("using")):
            raise UnsupportedError(f"LATERAL in a {method or 'USING'} join")
        if lateral:
            right = bind_lateral_table(binder, join.this, scope, right_scope, ctes)
        else:
            right = binder.bind_table_item(join.this, right_scope, ctes)
        pairs = _using_pairs(join, method == "NATURAL", scope.relations[start:], right_scope.relations)
        for relation in right_scope.relations:
            scope.add(relation)
        if pairs and side == "RIGHT":     # MySQL: ``*`` of a RIGHT JOIN ... USING lists the right table first
            moved = scope.relations[-len(right_scope.relations):]
            scope.relations[start:] = moved + scope.relations[start:-len(moved)]
        equalities = [binder.make_comparison("eq", l.ref(), r.ref()) for l, r in pairs]
        on = join.args.get("on")
        if lateral and reads_left(right, scope):
            if side in ("RIGHT", "FULL"):
                raise BindError(f"a LATERAL derived table that reads the left side of a {side} JOIN "
                                "(INNER, CROSS or LEFT JOIN only)")
            plain, valued = binder.bind_on(on, scope)
            if valued:
                raise UnsupportedError("a subquery in the ON condition of a LATERAL join")
            kind = "left" if side == "LEFT" else "inner"
            items, conditions = [join_lateral(binder, _close(items, conditions), right, kind, plain)], []
            continue
        if side in ("LEFT", "RIGHT", "FULL"):
            left = _close(items, conditions)
            if side == "RIGHT":
                left, right = right, left
                pairs = [(r, l) for l, r in pairs]
            kind = "full" if side == "FULL" else "left"
            joined = outer_join(binder, left, right, kind, on, equalities, scope)
            items, conditions = [joined], []
        else:
            items.append(right)
            plain, valued = binder.bind_on(on, scope)
            conditions.extend(equalities + plain)
            if valued:          # ON is a filter over the chain joined so far
                items, conditions = [filter_with_subqueries(_close(items, conditions), valued, binder.ids)], []
        if pairs:
            merged = _merge_using(binder, pairs, side, scope, start)
            if merged:
                items[0] = Project(items[0], tuple((f, f.ref()) for f in items[0].fields) + tuple(merged))
    return items, conditions


def bind_parenthesised(binder: "Binder", node: exp.Table, scope: Scope, ctes: dict) -> LogicalPlan:
    """``(a JOIN b ON ...)`` as one FROM item: its relations join the enclosing scope (their names
    stay visible: a parenthesised join has no alias of its own)."""
    first = node.copy()
    first.set("joins", None)
    items, conditions = bind_join_chain(binder, first, node.args["joins"], scope, ctes)
    return _close(items, conditions)


def outer_join(binder: "Binder", left: LogicalPlan, right: LogicalPlan, kind: str, on,
               equalities: list[Expr], scope: Scope) -> LogicalPlan:
    """A left or full outer join under ``equalities`` (USING's) and the conditions of ``on``: column
    equalities between the sides become keys; for a left join a condition on the right side alone
    filters the right input (it decides only which right rows can match); everything else is the
    residual, evaluated on key-matched pairs (a full join without keys is a nested loop in one task)."""
    left_ids, right_ids = left.field_ids(), right.field_ids()
    plain, valued = binder.bind_on(on, scope)
    if valued:
        return outer_join_with_subqueries(left, right, kind, list(equalities) + plain, valued, binder.ids)
    lkeys, rkeys, residual, right_filters = [], [], [], []
    for condition in list(equalities) + plain:
        ids = condition.column_ids()
        pair = equi_pair(condition, left_ids, right_ids)
        if pair:
            lkeys.append(pair[0])
            rkeys.append(pair[1])
        elif kind == "left" and ids and ids <= right_ids:
            right_filters.append(condition)
        else:
            residual.append(condition)
    if right_filters:
        right = filter_all(right, right_filters)
    return Join(left, right, kind, tuple(lkeys), tuple(rkeys), and_all(residual))


def _using_pairs(join: exp.Join, natural: bool, left_relations: list[Relation],
                 right_relations: list[Relation]) -> list[tuple[Field, Field]]:
    """(left column, right column) for each column named in USING, or common to both sides for
    NATURAL, in order (NATURAL: the left side's column order)."""
    using = join.args.get("using")
    if using and natural:
        raise BindError("NATURAL JOIN cannot have a USING clause")
    if natural:
        right_names = {f.name.lower() for r in right_relations for f in r.fields if f.id not in r.hidden}
        names, seen = [], set()
        for r in left_relations:
            for f in r.fields:
                if f.id not in r.hidden and f.name.lower() in right_names and f.name.lower() not in seen:
                    seen.add(f.name.lower())
                    names.append(f.name)
    elif using:
        names = [u.name for u in using]
    else:
        return []
    if len({n.lower() for n in names}) != len(names):
        raise BindError(f"column {names!r} appears twice in USING")
    pairs = []
    for name in names:
        pairs.append((_one(left_relations, name, "left"), _one(right_relations, name, "right")))
    return pairs


def _one(relations: list[Relation], name: str, side: str) -> Field:
    hits = [f for r in relations for f in r.find(name, qualified=False)]
    if not hits:
        raise BindError(f"unknown column {name!r} in the USING clause: the {side} side of the join has none")
    if len(hits) > 1:
        raise BindError(f"column {name!r} in the USING clause is ambiguous on the {side} side of the join")
    return hits[0]


def _merge_using(binder: "Binder", pairs: list[tuple[Field, Field]], side: str, scope: Scope,
                 start: int) -> list[tuple[Field, Expr]]:
    """Hide each pair's columns from unqualified names and ``*``, and put the merged columns first
    among this chain's relations. Returns the (field, COALESCE) columns a full join must compute."""
    computed: list[tuple[Field, Expr]] = []
    merged: list[Field] = []
    for left, right in pairs:
        if side == "FULL":
            t = T.common_type(left.type, right.type, f"USING ({left.name})")
            f = Field(binder.ids.new(left.name), left.name, t, True)
            computed.append((f, Call("coalesce", (binder.coerce(left.ref(), t), binder.coerce(right.ref(), t)), t)))
        else:     # RIGHT swapped the pairs: the preserved side's column comes first
            f = left
        merged.append(f)
        for relation in scope.relations[start:]:
            if any(x.id in (left.id, right.id) for x in relation.fields):
                relation.hidden |= {left.id, right.id}
    scope.relations.insert(start, Relation("", merged))
    return computed


def _close(items: list[LogicalPlan], conditions: list[Expr]) -> LogicalPlan:
    if len(items) == 1:
        return filter_all(items[0], conditions)
    return MultiJoin(tuple(items), tuple(conditions))

