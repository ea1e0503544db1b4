"""Binding of the aggregates beyond COUNT / SUM / AVG / MIN / MAX (their execution:
``engine.exec.extended_aggregates``): the statistical family (STDDEV, VARIANCE, CORR, COVAR), MEDIAN and
PERCENTILE_CONT / PERCENTILE_DISC (``WITHIN GROUP (ORDER BY x)``), APPROX_COUNT_DISTINCT, GROUP_CONCAT,
BIT_AND / BIT_OR / BIT_XOR and ANY_VALUE. Result types as MySQL / SingleStore: DOUBLE for the statistics
and continuous percentiles, the argument's type for PERCENTILE_DISC and ANY_VALUE, BIGINT UNSIGNED for the
bit aggregates (over the argument's 64 bits as a BIGINT: -1 is all ones), BIGINT for
APPROX_COUNT_DISTINCT, TEXT for GROUP_CONCAT."""
from __future__ import annotations

from sqlglot import exp

from engine import collation
from engine import types as T
from engine.errors import BindError, TypeMismatchError, UnsupportedError
from engine.plan.bind_collation import is_string, keyed
from engine.core.expressions import AggCall, Expr, Literal

# sqlglot's MySQL dialect reads STD / STDDEV as StddevPop and VARIANCE as VariancePop (MySQL's meaning).
EXTENDED = {
    exp.StddevSamp: "stddev_samp", exp.StddevPop: "stddev_pop", exp.Stddev: "stddev_pop",
    exp.Variance: "var_samp", exp.VariancePop: "var_pop",
    exp.Corr: "corr", exp.CovarSamp: "covar_samp", exp.CovarPop: "covar_pop",
    exp.Median: "median", exp.PercentileCont: "percentile_cont", exp.PercentileDisc: "percentile_disc",
    exp.ApproxDistinct: "approx_count_distinct", exp.GroupConcat: "group_concat",
    exp.BitwiseAndAgg: "bit_and", exp.BitwiseOrAgg: "bit_or", exp.BitwiseXorAgg: "bit_xor",
    exp.AnyValue: "any_value",
}

_STATISTICS = {"stddev_samp", "stddev_pop", "var_samp", "var_pop", "corr", "covar_samp", "covar_pop"}


def bind_extended(binder, node, ctx, inner_ctx, sql: str) -> AggCall:
    """The AggCall of ``node`` (one of EXTENDED, or WITHIN GROUP around a percentile); ``inner_ctx``
    binds the arguments (no aggregates inside)."""
    if isinstance(node, exp.WithinGroup):
        func = EXTENDED.get(type(node.this))
        if func not in ("percentile_cont", "percentile_disc"):
            raise UnsupportedError(f"WITHIN GROUP with {node.this.key.upper()}")
        order = node.expression.expressions if node.expression is not None else []
        if len(order) != 1:
            raise BindError(f"{sql} needs ORDER BY one expression")
        if order[0].args.get("desc"):
            raise UnsupportedError(f"{sql} with ORDER BY ... DESC")
        return _percentile(binder, func, node.this.this, order[0].this, inner_ctx, sql)
    func = EXTENDED[type(node)]
    if func in ("percentile_cont", "percentile_disc"):
        if node.args.get("expression") is None:
            raise BindError(f"{sql} needs WITHIN GROUP (ORDER BY ...)")
        return _percentile(binder, func, node.args["expression"], node.this, inner_ctx, sql)
    if func == "group_concat":
        return _group_concat(binder, node, inner_ctx, sql)
    target = node.this
    if isinstance(target, exp.Distinct):
        raise UnsupportedError(f"{func.upper()}(DISTINCT ...)")
    argument = binder.bind_expr(target, inner_ctx)
    if func in _STATISTICS:
        extra = ()
        if func in ("corr", "covar_samp", "covar_pop"):
            if node.args.get("expression") is None:
                raise BindError(f"{sql} needs two arguments")
            extra = (_number(binder, binder.bind_expr(node.args["expression"], inner_ctx), sql),)
        return AggCall(func, _number(binder, argument, sql), T.DOUBLE, extra=extra)
    if func == "median":
        return AggCall("median", _number(binder, argument, sql), T.DOUBLE, options=(0.5,))
    if func in ("bit_and", "bit_or", "bit_xor"):
        if argument.type.kind not in ("int", "bool", "null", "decimal", "float", "string"):
            raise TypeMismatchError(f"{func.upper()} needs an integer, got {argument.type} in {sql}")
        return AggCall(func, binder.coerce(argument, T.BIGINT), T.UBIGINT)
    if func == "approx_count_distinct":       # distinct under the collation: count the keys
        return AggCall(func, keyed(argument, argument.type.collation) if is_string(argument) else argument,
                       T.BIGINT)
    if func == "any_value":
        return AggCall(func, argument, argument.type if argument.type.kind != "null" else T.BIGINT)
    raise UnsupportedError(sql)


def _number(binder, e: Expr, sql: str) -> Expr:
    if e.type.kind in ("string", "null", "int", "bool", "decimal"):
        return binder.coerce(e, T.DOUBLE)
    if e.type.kind != "float":
        raise TypeMismatchError(f"{sql} needs a number, got {e.type}")
    return e


def _percentile(binder, func: str, fraction_node, value_node, inner_ctx, sql: str) -> AggCall:
    fraction = binder.bind_expr(fraction_node, inner_ctx)
    if not isinstance(fraction, Literal) or fraction.type.kind not in ("int", "decimal", "float") \
            or not 0 <= float(fraction.value) <= 1:
        raise BindError(f"the fraction of {sql} must be a constant between 0 and 1")
    value = binder.bind_expr(value_node, inner_ctx)
    if func == "percentile_cont":
        return AggCall(func, _number(binder, value, sql), T.DOUBLE, options=(float(fraction.value),))
    return AggCall(func, value, value.type, options=(float(fraction.value),))


def _group_concat(binder, node, inner_ctx, sql: str) -> AggCall:
    target = node.this
    order_nodes = []
    if isinstance(target, exp.Order):
        order_nodes = target.expressions
        target = target.this
    distinct = isinstance(target, exp.Distinct)
    if distinct:
        target = target.expressions[0] if len(target.expressions) == 1 else None
        if target is None:
            raise UnsupportedError("GROUP_CONCAT(DISTINCT a, b) of several expressions")
    value = binder._string_arg(target, inner_ctx)
    # strings order by their collation keys ('a', 'A', 'b' under _ci), as ORDER BY does
    order = tuple(keyed(e, e.type.collation) if is_string(e) else e
                  for e in (binder.bind_expr(o.this, inner_ctx) for o in order_nodes))
    descending = tuple(bool(o.args.get("desc")) for o in order_nodes)
    separator = node.args.get("separator")
    if separator is None:
        text = ","
    else:
        bound = binder.bind_expr(separator, inner_ctx)
        if not isinstance(bound, Literal) or not isinstance(bound.value, str):
            raise BindError(f"the SEPARATOR of {sql} must be a string constant")
        text = bound.value
    # DISTINCT compares the values under their collation (the third option): 'a' and 'A' are one
    return AggCall("group_concat", value, T.TEXT, distinct, extra=order,
                   options=(text, descending, value.type.collation or collation.DEFAULT))


# FILTER (WHERE c) masks these arguments of an aggregate (sqlglot's arg names); every aggregate listed
# skips a NULL input (a row, or for CORR / COVAR a pair, with a NULL adds nothing)
_FILTERED_ARGS = {exp.Count: ("this",), exp.Sum: ("this",), exp.Avg: ("this",), exp.Min: ("this",),
                  exp.Max: ("this",), exp.StddevSamp: ("this",), exp.StddevPop: ("this",), exp.Stddev: ("this",),
                  exp.Variance: ("this",), exp.VariancePop: ("this",), exp.Median: ("this",),
                  exp.Corr: ("this", "expression"), exp.CovarSamp: ("this", "expression"),
                  exp.CovarPop: ("this", "expression"), exp.ApproxDistinct: ("this",),
                  exp.BitwiseAndAgg: ("this",), exp.BitwiseOrAgg: ("this",), exp.BitwiseXorAgg: ("this",)}


def unfiltered(node: exp.Filter, sql: str) -> exp.Expression:
    """``agg(x) FILTER (WHERE c)`` as ``agg(CASE WHEN c THEN x END)``: the aggregate of the rows where
    ``c`` is TRUE, for an aggregate that skips NULLs (``COUNT(*)`` counts ``CASE WHEN c THEN 1 END``).
    Evaluated as ``x`` with ``c`` for its validity, no copy (engine.exec.evaluate._masked), so each
    aggregate's kernel accumulates only the rows of its own filter."""
    aggregate, where = node.this, node.expression
    if isinstance(node.parent, exp.Window):
        raise UnsupportedError(f"FILTER (WHERE ...) on a window function: {sql}")
    names = _FILTERED_ARGS.get(type(aggregate))
    if names is None:
        raise UnsupportedError(f"FILTER (WHERE ...) on {aggregate.sql(dialect='mysql').split('(')[0].upper()}: {sql}")
    condition = where.this if isinstance(where, exp.Where) else where
    out = aggregate.copy()
    for name in names:
        target = out.args.get(name)
        if name == "this" and isinstance(target, exp.Distinct):
            target.set("expressions", [_when(condition, e) for e in target.expressions])
        elif target is None or isinstance(target, exp.Star):
            out.set(name, _when(condition, exp.Literal.number(1)))       # COUNT(*)
        else:
            out.set(name, _when(condition, target))
    return out


def _when(condition: exp.Expression, value: exp.Expression) -> exp.Case:
    return exp.Case(ifs=[exp.If(this=condition.copy(), true=value)])
