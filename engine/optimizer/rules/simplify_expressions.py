"""Simplify the expressions a plan holds, never changing a result under MySQL's NULL and type rules.

Everywhere: ``NOT NOT p`` -> ``p``; ``NOT (p AND q)`` -> ``NOT p OR NOT q`` and ``NOT (p OR q)`` ->
``NOT p AND NOT q`` (De Morgan holds in three-valued logic); ``p AND TRUE`` -> ``p``, ``p OR FALSE`` ->
``p``, ``p AND FALSE`` -> ``FALSE``, ``p OR TRUE`` -> ``TRUE`` (``NULL AND FALSE`` is FALSE, ``NULL OR
TRUE`` is TRUE); a conjunct or disjunct repeated is kept once; ``x >= c AND x <= c`` (``BETWEEN c AND
c``) -> ``x = c``; ``x + 0``, ``x - 0``, ``x * 1`` and ``x / 1`` -> ``x`` where the result has ``x``'s own
type (``int + 0.0`` is a DECIMAL, and stays); a CASE branch whose condition is a constant is taken or
dropped; a call of literals only (a CAST of a literal, and what the rewrites above leave) is evaluated
now, unless its function is not deterministic (NOW()).

In a predicate (a filter, a join condition: there NULL and FALSE both reject the row) ``x = x`` ->
``x IS NOT NULL``; in a SELECT list it stays, since there it is NULL where ``x IS NOT NULL`` is FALSE.
Floating-point columns keep their comparisons as written.

Under an aggregate: ``COUNT(f(x))`` -> ``COUNT(x)`` where ``f`` is NULL exactly when ``x`` is, and never
fails (UPPER, TRIM, SUBSTRING by constants, CHAR_LENGTH, CONCAT with constants, a widening integer
CAST, a number or a date CAST to text...): COUNT only asks whether the value is NULL, so ``f`` need not
run (DuckDB counts ``s`` for ``COUNT(SUBSTR(s, 1, 9))``). Not under DISTINCT, where ``f`` may merge values.

>>> from engine import types as T
>>> from engine.core.expressions import Call, ColumnRef, Literal
>>> x = ColumnRef("x", T.BIGINT, "x")
>>> p = Call("gt", (x, Literal(1, T.BIGINT)), T.BOOLEAN)
>>> print(simplify(Call("not", (Call("not", (Call("and", (p, Literal(True, T.BOOLEAN)), T.BOOLEAN),), T.BOOLEAN),), T.BOOLEAN)))
(x > 1)
>>> print(simplify(Call("eq", (x, x), T.BOOLEAN), predicate=True))
is_not_null(x)
>>> print(simplify(Call("add", (x, Literal(0, T.BIGINT)), T.BIGINT)))
x
"""
from __future__ import annotations

import dataclasses

from engine import types as T
from engine.optimizer.context import OptimizerContext
from engine.core.expressions import AggCall, Call, Expr, Literal
from engine.plan.logical import (Aggregate, Filter, Join, LogicalPlan, MultiJoin, Project, Scan,
                                 map_inputs)

# not deterministic: evaluated per statement (or per row), never folded or deduplicated
_VOLATILE = frozenset({"now", "current_date", "unix_timestamp", "single_row"})
# left as written over a literal: the estimator and the scans read ``collation_key(col) = collation_key('x')``
_KEPT = frozenset({"collation_key", "collate"})
# NULL exactly when their first argument is, given constant non-NULL further arguments; never raise
_NULL_PRESERVING = frozenset({"upper", "lower", "trim", "ltrim", "rtrim", "reverse", "char_length",
                              "octet_length", "substring", "left", "right", "collation_key", "concat"})
# a value of these kinds always converts to text (unlike text to a number or a date, which may warn)
_TEXT_ALWAYS = frozenset({"int", "decimal", "float", "date", "datetime", "bool"})
_COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge")
_NEGATED = {"eq": "ne", "ne": "eq", "lt": "ge", "ge": "lt", "gt": "le", "le": "gt"}


def simplify_expressions(plan: LogicalPlan, ctx: OptimizerContext) -> LogicalPlan:
    return _rewrite(plan)


def _rewrite(plan: LogicalPlan) -> LogicalPlan:
    plan = map_inputs(plan, _rewrite)
    if isinstance(plan, Filter):
        predicate = simplify(plan.predicate, predicate=True)
        if isinstance(predicate, Literal) and predicate.value is True:
            return plan.input
        return dataclasses.replace(plan, predicate=predicate)
    if isinstance(plan, Scan) and plan.filters:
        filters = _dedup([simplify(f, predicate=True) for f in plan.filters])
        return dataclasses.replace(plan, filters=tuple(f for f in filters if not _is_true(f)))
    if isinstance(plan, MultiJoin):
        conditions = _dedup([simplify(c, predicate=True) for c in plan.conditions])
        return MultiJoin(plan.inputs, tuple(c for c in conditions if not _is_true(c)))
    if isinstance(plan, Join) and plan.residual is not None:
        # NOT IN's null-aware anti join tells a NULL comparison from a FALSE one: no predicate rewrites
        residual = simplify(plan.residual, predicate=plan.kind != "anti_null_aware")
        return dataclasses.replace(plan, residual=None if _is_true(residual) else residual)
    if isinstance(plan, Project):
        return dataclasses.replace(plan, exprs=tuple((f, _keep_type(simplify(e), e)) for f, e in plan.exprs))
    if isinstance(plan, Aggregate):
        keys = tuple((f, _keep_type(simplify(e), e)) for f, e in plan.keys)
        aggregates = tuple((f, _simplify_aggregate(a)) for f, a in plan.aggregates)
        return dataclasses.replace(plan, keys=keys, aggregates=aggregates)
    return plan


def _simplify_aggregate(agg: AggCall) -> AggCall:
    if agg.arg is None:
        return agg
    arg = _keep_type(simplify(agg.arg), agg.arg)
    if agg.func == "count" and not agg.distinct:
        arg = _null_source(arg)
    return dataclasses.replace(agg, arg=arg) if arg is not agg.arg else agg


def _null_source(e: Expr) -> Expr:
    """The expression whose NULLs are exactly ``e``'s, found by stripping NULL-preserving calls."""
    while isinstance(e, Call):
        columns = [a for a in e.args if not isinstance(a, Literal)]
        constants_ok = all(a.value is not None for a in e.args if isinstance(a, Literal))
        if len(columns) != 1 or not constants_ok:
            return e
        if e.op in _NULL_PRESERVING:
            if e.op != "concat" and e.args[0] is not columns[0]:    # SUBSTRING(constant, column)
                return e
            e = columns[0]
        elif e.op == "cast" and e.type.kind == "int" and columns[0].type.kind == "int" and \
                e.type.bits >= columns[0].type.bits:
            e = columns[0]
        elif e.op == "cast" and e.type.kind == "string" and e.type.length is None and \
                columns[0].type.kind in _TEXT_ALWAYS:
            e = columns[0]          # a number or a date always has a text (CAST(x AS CHAR))
        else:
            return e
    return e


def _keep_type(new: Expr, old: Expr) -> Expr:
    """A simplified value expression must keep its type (the result's schema): else it stays as it was."""
    if new.type == old.type:
        return new
    if isinstance(new, Literal) and new.value is None:
        return Literal(None, old.type)
    return old


def simplify(e: Expr, predicate: bool = False) -> Expr:
    """``e`` simplified; ``predicate``: ``e`` decides whether a row is kept (NULL counts as FALSE)."""
    if not isinstance(e, Call):
        return e
    if e.op == "not":
        pushed = _push_not(e.args[0])
        if pushed is not None:
            return simplify(pushed, predicate)
    args = tuple(simplify(a, predicate and e.op in ("and", "or")) for a in e.args)
    if args != e.args:
        e = Call(e.op, args, e.type, e.options)
    if e.op in ("and", "or"):
        return _connective(e, predicate)
    if e.op in _COMPARISONS:
        return _comparison(e, predicate)
    if e.op in ("add", "subtract", "multiply", "divide"):
        return _identity(e)
    if e.op == "case":
        return _case(e)
    if e.op in ("is_null", "is_not_null"):          # x IS NULL exactly when f(x) is
        source = _null_source(e.args[0])
        if source is not e.args[0]:
            return Call(e.op, (source,), e.type, e.options)
    return _fold(e)


def _fold(e: Call) -> Expr:
    if e.op in _VOLATILE or e.op in _KEPT or not all(isinstance(a, Literal) for a in e.args):
        return e
    from engine.exec.evaluate import fold_constant
    try:
        return fold_constant(e)
    except Exception:           # an error (1 / 0 under strict mode...) is the query's to raise when it runs
        return e


def _truth(e: Expr):
    """True / False / None for a boolean literal (None: NULL), ``...`` for anything else."""
    if isinstance(e, Literal) and (e.value is None or isinstance(e.value, bool)):
        return e.value
    return ...


def _is_true(e: Expr) -> bool:
    return _truth(e) is True


def _push_not(p: Expr):
    """``NOT p`` without its NOT where that is the same in three-valued logic, else None."""
    if isinstance(p, Call) and p.op == "not":
        return p.args[0]
    if isinstance(p, Call) and p.op in ("and", "or") and all(a.type.kind == "bool" for a in p.args):
        flipped = "or" if p.op == "and" else "and"             # De Morgan
        return Call(flipped, tuple(Call("not", (a,), T.BOOLEAN) for a in p.args), T.BOOLEAN)
    if isinstance(p, Call) and p.op in _NEGATED and p.args[0].type.kind not in ("float", "bool"):
        return Call(_NEGATED[p.op], p.args, p.type, p.options)     # NOT (x < c): x >= c, NULL alike
    return None


def _flatten(e: Expr, op: str) -> list[Expr]:
    if isinstance(e, Call) and e.op == op:
        return [x for a in e.args for x in _flatten(a, op)]
    return [e]


def _connective(e: Call, predicate: bool) -> Expr:
    if not all(a.type.kind in ("bool", "null") for a in e.args):
        return _fold(e)          # MySQL's AND over integers: left to the evaluator
    absorbing = e.op == "or"     # TRUE absorbs an OR, FALSE an AND
    terms = []
    for t in _dedup(_flatten(e, e.op)):
        truth = _truth(t)
        if truth is absorbing:
            return Literal(absorbing, T.BOOLEAN)
        if truth is not (not absorbing):          # the neutral constant drops out
            terms.append(t)
    if e.op == "and":
        terms = _equal_bounds(terms)
    if not terms:
        return Literal(not absorbing, T.BOOLEAN)
    out = terms[0]
    for t in terms[1:]:
        out = Call(e.op, (out, t), T.BOOLEAN)
    return out


def _dedup(terms: list[Expr]) -> list[Expr]:
    out, seen = [], set()
    for t in terms:
        if t in seen and not _volatile(t):
            continue
        seen.add(t)
        out.append(t)
    return out


def _volatile(e: Expr) -> bool:
    return any(isinstance(x, Call) and x.op in _VOLATILE for x in e.walk())


def _equal_bounds(terms: list[Expr]) -> list[Expr]:
    """``x >= c`` and ``x <= c`` among ``terms`` become one ``x = c`` (BETWEEN c AND c)."""
    bounds = {}
    for i, t in enumerate(terms):
        if isinstance(t, Call) and t.op in ("ge", "le") and isinstance(t.args[1], Literal) and \
                t.args[1].value is not None and not _volatile(t.args[0]):
            bounds.setdefault((t.args[0], t.args[1]), {})[t.op] = i
    merged, dropped = {}, set()
    for (x, c), ops in bounds.items():
        if len(ops) == 2:
            merged[min(ops.values())] = Call("eq", (x, c), T.BOOLEAN)
            dropped.add(max(ops.values()))
    return [merged.get(i, t) for i, t in enumerate(terms) if i not in dropped]


def _comparison(e: Call, predicate: bool) -> Expr:
    x, y = e.args
    if predicate and e.op == "eq" and x == y and x.type.kind != "float" and not _volatile(x):
        return Call("is_not_null", (x,), T.BOOLEAN)
    return _fold(e)


def _identity(e: Call) -> Expr:
    x, y = e.args
    if e.type == x.type and x.type.kind in ("int", "decimal") and isinstance(y, Literal) and \
            y.value is not None and not isinstance(y.value, bool):
        if e.op in ("add", "subtract") and y.value == 0 or e.op in ("multiply", "divide") and y.value == 1:
            return x
    if e.op in ("add", "multiply") and e.type == y.type and y.type.kind in ("int", "decimal") and \
            isinstance(x, Literal) and x.value is not None and not isinstance(x.value, bool):
        if e.op == "add" and x.value == 0 or e.op == "multiply" and x.value == 1:
            return y
    return _fold(e)


def _case(e: Call) -> Expr:
    """CASE WHEN c1 THEN v1 ... ELSE d: a FALSE / NULL condition's branch goes, a TRUE one ends it."""
    *pairs, default = e.args
    kept: list[Expr] = []
    for c, v in zip(pairs[0::2], pairs[1::2]):
        truth = _truth(c)
        if truth is True:          # this branch is taken whenever the ones before are not
            default = v
            break
        if truth is ...:           # FALSE / NULL: never taken
            kept += [c, v]
    if not kept:
        return _keep_type(default, e)
    if len(kept) == len(pairs) and default is e.args[-1]:
        return e
    return Call("case", tuple(kept) + (default,), e.type, e.options)
