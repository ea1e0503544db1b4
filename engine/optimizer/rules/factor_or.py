"""OR-factoring: pull the conjuncts every branch of an OR shares out in front of it.

``(a AND b) OR (a AND c)`` becomes ``a AND (b OR c)``. TPC-H Q19 needs it: each of its three OR branches
repeats ``p_partkey = l_partkey``; once factored out, that equality is a hash-join key instead of a
predicate checked on the cross product of part and lineitem. A branch left with no conjuncts makes the
whole OR true, so the OR disappears (``a OR (a AND b)`` is ``a``).

What stays an OR also yields implied single-column filters: when every branch constrains column ``c``,
the OR of those constraints holds too and is added beside it. In TPC-H Q7,
``(n1 = 'FRANCE' AND n2 = 'GERMANY') OR (n1 = 'GERMANY' AND n2 = 'FRANCE')`` implies
``n1 = 'FRANCE' OR n1 = 'GERMANY'``, which reaches the nation scan and shrinks the joins above it twelvefold;
in Q19 the brand, size, container and quantity bounds of the three branches reach part and lineitem.

>>> from engine.core.expressions import Call, ColumnRef
>>> from engine import types as T
>>> a, b, c = (Call("eq", (ColumnRef(n, T.BIGINT), ColumnRef(n + "'", T.BIGINT)), T.BOOLEAN) for n in "abc")
>>> print(factor_expression(Call("or", (Call("and", (a, b), T.BOOLEAN), Call("and", (a, c), T.BOOLEAN)), T.BOOLEAN)))
((a = a') AND ((b = b') OR (c = c')))
"""
from __future__ import annotations

import dataclasses

from engine import types as T
from engine.optimizer.context import OptimizerContext
from engine.core.expressions import Call, Expr, and_all, conjuncts
from engine.plan.logical import Filter, Join, LogicalPlan, MultiJoin


def factor_or(plan: LogicalPlan, ctx: OptimizerContext) -> LogicalPlan:
    from engine.plan.logical import map_inputs
    plan = map_inputs(plan, lambda child: factor_or(child, ctx))
    if isinstance(plan, Filter):
        return Filter(plan.input, factor_expression(plan.predicate))
    if isinstance(plan, MultiJoin):
        factored: list[Expr] = []
        for condition in plan.conditions:
            factored.extend(conjuncts(factor_expression(condition)))
        return MultiJoin(plan.inputs_, tuple(factored))
    if isinstance(plan, Join) and plan.residual is not None:
        return dataclasses.replace(plan, residual=factor_expression(plan.residual))
    return plan


def factor_expression(expr: Expr) -> Expr:
    """Factor every OR among the conjuncts of ``expr`` (recursively); other expressions are unchanged."""
    out: list[Expr] = []
    for conjunct in conjuncts(expr):
        for factored in conjuncts(_factor_or(conjunct)):
            out.append(factored)
            out.extend(d for d in _implied_column_filters(factored) if d not in out)
    return and_all(out) if out else expr


def _implied_column_filters(expr: Expr) -> list[Expr]:
    """For an OR whose every branch has conjuncts on one column ``c`` alone: OR of those, per column."""
    if not (isinstance(expr, Call) and expr.op == "or"):
        return []
    branches = [conjuncts(d) for d in _disjuncts(expr)]
    by_column: list[dict[str, list[Expr]]] = []
    for branch in branches:
        columns: dict[str, list[Expr]] = {}
        for c in branch:
            ids = c.column_ids()
            if len(ids) == 1:
                columns.setdefault(next(iter(ids)), []).append(c)
        by_column.append(columns)
    shared = set(by_column[0]).intersection(*by_column[1:])
    implied = []
    for column in sorted(shared):
        disjunction = and_all(by_column[0][column])
        for columns in by_column[1:]:
            disjunction = Call("or", (disjunction, and_all(columns[column])), T.BOOLEAN)
        implied.append(disjunction)
    return implied


def _disjuncts(expr: Expr) -> list[Expr]:
    if isinstance(expr, Call) and expr.op == "or":
        return [d for arg in expr.args for d in _disjuncts(arg)]
    return [expr]


def _factor_or(expr: Expr) -> Expr:
    if not (isinstance(expr, Call) and expr.op == "or"):
        return expr
    branches = [conjuncts(factor_expression(d)) for d in _disjuncts(expr)]
    common = [c for c in branches[0] if all(c in other for other in branches[1:])]
    if not common:
        return expr
    rests = [[c for c in branch if c not in common] for branch in branches]
    if any(not rest for rest in rests):
        return and_all(common)          # one branch is exactly the common part: the OR adds nothing
    disjunction = and_all(rests[0])
    for rest in rests[1:]:
        disjunction = Call("or", (disjunction, and_all(rest)), T.BOOLEAN)
    return and_all(common + [disjunction])
