"""LATERAL derived tables (MySQL 8.0.14+): ``FROM t, LATERAL (SELECT ... WHERE x = t.a) AS d``, also
``[CROSS] JOIN LATERAL (...) d [ON ...]`` and ``LEFT JOIN LATERAL (...) d ON ...``.

The subquery sees the tables to its left in the same FROM clause (and the enclosing queries, as any
subquery does). It is bound as a correlated subquery and decorrelated as DuckDB does a lateral join
(Neumann & Kemper, engine/plan/decorrelate.py): the distinct values of the left columns it reads form
the *domain*, the dependent join of the domain with the subquery is pushed down through it
(``push_domain``: an aggregate groups by the domain too, so ``LATERAL (SELECT MAX(y) ...)`` has its one
row per left row, NULL where nothing matched; ``ORDER BY ... LIMIT n`` becomes a ROW_NUMBER per domain
value), and the result is joined back to the left side on the domain columns, NULL matching NULL.
A LATERAL subquery that reads nothing of its left is an ordinary derived table.

Without LATERAL a derived table cannot see its left (MySQL: ``Unknown column 't.a' in 'WHERE'``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp

from engine.errors import BindError, UnsupportedError
from engine.plan import decorrelate
from engine.core.expressions import Expr, and_all
from engine.plan.logical import Join, LogicalPlan, Project, filter_all
from engine.plan.plan_walk import free_refs
from engine.plan.scope import Scope

if TYPE_CHECKING:
    from engine.plan.binder import Binder


def bind_lateral_table(binder: "Binder", node: exp.Lateral, left_scope: Scope, right_scope: Scope,
                       ctes: dict) -> LogicalPlan:
    """The plan of ``LATERAL (subquery) alias``, its outer references to ``left_scope``'s relations left
    free (:func:`join_lateral` joins it); its relation goes into ``right_scope``."""
    if node.args.get("view") or node.args.get("cross_apply") is not None or node.args.get("ordinality"):
        raise UnsupportedError("LATERAL VIEW / APPLY / WITH ORDINALITY (MySQL's LATERAL (subquery) alias is)")
    subquery = node.this
    if not isinstance(subquery, exp.Subquery):
        raise UnsupportedError("LATERAL over anything but a subquery (LATERAL (SELECT ...) AS alias)")
    alias = node.args.get("alias")
    if alias is None or not alias.name:
        raise BindError("every derived table must have its own alias")
    # the subquery sees the FROM items to its left, as an enclosing query's columns
    visible = Scope(relations=list(left_scope.relations), parent=left_scope.parent)
    plan, names = binder.bind_query(subquery.this, visible, ctes)
    if alias.columns:
        columns = [c.name for c in alias.columns]
        if len(columns) != len(names):
            raise BindError(f"derived table {alias.name!r} has {len(names)} columns but {len(columns)} column aliases")
        names = columns
    return binder._derived(plan, names, alias.name, right_scope)


def join_lateral(binder: "Binder", left: LogicalPlan, right: LogicalPlan, kind: str,
                 conditions: list[Expr]) -> LogicalPlan:
    """``left`` joined to the LATERAL ``right`` (``kind``: inner or left, ``conditions`` its ON): the
    left rows each with the rows ``right`` has for their values (a left join keeps a left row without
    any, NULL-padded). ``right`` must read some column of ``left`` (else it is a plain join)."""
    left_fields = {f.id: f for f in left.fields}
    correlated = sorted(free_refs(right) & set(left_fields))
    columns = tuple(left_fields[c] for c in correlated)
    domain = decorrelate.Domain(decorrelate.domain_source(left, set(correlated)), columns, binder.ids)
    inner, d_map = decorrelate.push_domain(right, domain, binder.ids)
    lkeys, rkeys = decorrelate.null_safe_keys(
        [(f.ref(), d_map[f.id].ref(), f.nullable and d_map[f.id].nullable) for f in columns])
    if kind == "left":
        joined: LogicalPlan = Join(left, inner, "left", lkeys, rkeys, and_all(conditions))
    else:
        joined = filter_all(Join(left, inner, "inner", lkeys, rkeys), conditions)
    domain_ids = {f.id for f in d_map.values()}
    return Project(joined, tuple((f, f.ref()) for f in joined.fields if f.id not in domain_ids))


def reads_left(right: LogicalPlan, left_scope: Scope) -> bool:
    """Whether a LATERAL subquery's plan reads a column of the FROM items to its left."""
    return bool(free_refs(right) & left_scope.own_ids())
