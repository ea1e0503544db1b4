"""Expressions: the dispatch on sqlglot's node class, coercions, comparisons, leaves (columns,
literals), subqueries as values, and aggregate calls. A mixin of :class:`engine.plan.binder.Binder`."""
from __future__ import annotations

import decimal

from sqlglot import exp

from engine import collation
from engine import types as T
from engine.errors import BadDataError, BindError, TypeMismatchError, UnsupportedError
from engine.exec.evaluate import TEXT_AS_DECIMAL, ConstantWarns, fold_constant
from engine.core.deadline import check_statement_deadline
from engine.plan.bind_collation import common_collation, is_string, keyed
from engine.plan.bind_aggregates import EXTENDED, bind_extended, unfiltered
from engine.plan.bind_grouping import grouping_call
from engine.plan.decorrelate import SubqueryCollector, SubqueryUse
from engine.plan import bind_window
from engine.core.expressions import AggCall, Call, Expr, Literal, ScalarParam
from engine.plan.logical import (Aggregate, Field, Limit, LogicalPlan, Project,
                                 Query)
from engine.plan.scope import Scope
from engine.plan.sql_words import not_supported, sql_words
from engine.plan.bind_context import AGGREGATES, AggContext, ExprContext, _CHECK_EVERY, node_name, strict_text_numbers
from engine.plan.bind_helpers import (_BINARY_OPS, _SIMPLE_FUNCTIONS, _contains_aggregate, _fits_exactly,
                                      _temporal_of_string, _unparen)


class ExpressionBinding:
    # ---------------------------------------------------------------------------------------------
    # expressions
    # ---------------------------------------------------------------------------------------------
    def bind_expr(self, node: exp.Expression, ctx: ExprContext) -> Expr:
        self._bound += 1
        if self._bound % _CHECK_EVERY == 0:          # statement_timeout: a statement of 500,000 values
            check_statement_deadline()
        if node is None:                             # an operand sqlglot left out: DAY() is Day(TsOrDsToDate())
            raise BindError(f"an argument is missing in {ctx.clause}")
        if isinstance(node, exp.Func) and any(required and node.args.get(name) is None
                                              for name, required in type(node).arg_types.items()):
            raise BindError(f"{sql_words(node)}: an argument is missing")     # sqlglot parses CEIL()
        handler = getattr(self, "_bind_" + type(node).__name__, None)
        if handler is None:
            if type(node) in AGGREGATES:
                return self._bind_aggregate(node, ctx)
            if type(node) in _BINARY_OPS:
                return self._bind_binary(node, ctx)
            if type(node) in _SIMPLE_FUNCTIONS:
                return self._bind_simple_function(node, ctx)
            raise not_supported(node)
        return handler(node, ctx)

    def _fold(self, e: Expr) -> Expr:
        if isinstance(e, Call) and e.op not in ("now", "current_date") and all(
                isinstance(a, Literal) for a in e.args):
            try:
                return fold_constant(e)
            except ConstantWarns:       # left to run with the statement, for SHOW WARNINGS
                return e
        return e

    def coerce(self, e: Expr, target: T.SqlType) -> Expr:
        if e.type == target or target.kind == "null":
            return e
        if e.type.kind == target.kind == "string":
            return e
        if e.type.kind == "string" and target.kind in ("int", "decimal", "float") and strict_text_numbers.get():
            return self._fold(Call("cast", (e,), target, ("strict",)))
        if e.type.kind == target.kind == "int" and e.type.bits <= target.bits:
            return Call("cast", (e,), target)
        return self._fold(Call("cast", (e,), target))

    def make_comparison(self, op: str, a: Expr, b: Expr) -> Expr:
        if a.type.kind == "string" and b.type.is_temporal:
            a = self.coerce(a, _temporal_of_string(a, b.type))
        elif b.type.kind == "string" and a.type.is_temporal:
            b = self.coerce(b, _temporal_of_string(b, a.type))
        if isinstance(b, Literal) and not isinstance(a, Literal) and _fits_exactly(b, a.type):
            return self._compared(op, a, b, a, self.coerce(b, a.type))    # cast the constant,
        if isinstance(a, Literal) and not isinstance(b, Literal) and _fits_exactly(a, b.type):
            return self._compared(op, a, b, self.coerce(a, b.type), b)    # not every row
        common = T.common_type(a.type, b.type, f"comparison {a} {op} {b}")
        if common.kind == "null":
            common = T.BOOLEAN       # NULL = NULL: any concrete type will do, the kernels need one
        return self._compared(op, a, b, self.coerce_compared(a, common, b.type),
                              self.coerce_compared(b, common, a.type))

    def coerce_compared(self, e: Expr, target: T.SqlType, *others: T.SqlType) -> Expr:
        """``e`` coerced to ``target`` to be compared with values of types ``others``: text compared
        with integers is read as a number like any text, but MariaDB names it a DECIMAL in its warning
        ('Truncated incorrect DECIMAL value: 'abc'', where text beside a DOUBLE or DECIMAL, or in
        arithmetic, is a DOUBLE value): the cast carries ``TEXT_AS_DECIMAL`` for the evaluator."""
        if e.type.kind == "string" and target.kind == "float" and not strict_text_numbers.get() and others \
                and all(t.kind == "int" or (t.unsigned and t.kind == "decimal") for t in others):
            return self._fold(Call("cast", (e,), target, (TEXT_AS_DECIMAL,)))
        return self.coerce(e, target)

    def _collated_pair(self, a: Expr, b: Expr, common: T.SqlType) -> tuple[Expr, Expr]:
        """``a`` and ``b`` as compared as ``common`` (IN / ANY subqueries): strings by their keys."""
        a2, b2 = self.coerce(a, common), self.coerce(b, common)
        if is_string(a2) and is_string(b2):
            name = common_collation([a, b], "IN subquery")
            a2, b2 = keyed(a2, name), keyed(b2, name)
        return a2, b2

    def _compared(self, op: str, a: Expr, b: Expr, a2: Expr, b2: Expr) -> Expr:
        """``a2 op b2`` (``a``, ``b`` coerced); strings compare by their collation keys."""
        if is_string(a2) and is_string(b2):
            name = common_collation([a, b], f"comparison {a} {op} {b}")
            # a constant's key is not folded into the plan: the plan cache puts new values where the
            # old ones sit (the filter kernels key a constant once per scan)
            a2, b2 = keyed(a2, name), keyed(b2, name)
        return self._fold(Call(op, (a2, b2), T.BOOLEAN))

    # leaves
    def _bind_Column(self, node: exp.Column, ctx: ExprContext) -> Expr:
        if "canopy_field" in node.meta:
            return node.meta["canopy_field"].ref()
        if isinstance(node.this, exp.Star):
            raise BindError("* is only allowed in the select list and COUNT(*)")
        name, qualifier = node.name, node.table or None
        if ctx.aliases is not None and qualifier is None and not ctx.scope.lookup_local(None, name) \
                and name.lower() in ctx.aliases:
            return ctx.aliases[name.lower()]
        f = ctx.scope.resolve(qualifier, name, ctx.clause)
        return f.ref()

    def _bind_Identifier(self, node: exp.Identifier, ctx: ExprContext) -> Expr:
        return self._bind_Column(exp.Column(this=node), ctx)

    def _bind_Literal(self, node: exp.Literal, ctx: ExprContext) -> Expr:
        if node.is_string:      # in the connection's collation (SET NAMES ... COLLATE), coercible
            return Literal(node.this, T.TEXT.with_collation(collation.connection()))
        text = node.this
        if any(c in text for c in ".eE") and not text.lower().startswith("0x"):
            if "e" in text.lower():
                value = float(text)
                if value in (float("inf"), float("-inf")):
                    raise BadDataError(f"the number {text} is out of the range of DOUBLE")
                return Literal(value, T.DOUBLE)
            value = decimal.Decimal(text)
        else:
            value = int(text, 0) if text.lower().startswith("0x") else int(text)
        if len(decimal.Decimal(value).as_tuple().digits) > T.MAX_DECIMAL_PRECISION:
            raise BadDataError(f"the number {text} has more than {T.MAX_DECIMAL_PRECISION} digits")
        return Literal(value, T.python_type_of(value))

    def _bind_National(self, node, ctx) -> Expr:       # N'text': MySQL's national charset is utf8
        return self._bind_Literal(exp.Literal.string(node.this), ctx)

    def _bind_Introducer(self, node, ctx) -> Expr:
        """_utf8mb4'text' (a character set named before a string): the text, in that character set. Only
        the UTF-8 ones (the text arrives as Unicode); _binary and others are refused."""
        charset = node.this.lstrip("_").lower() if isinstance(node.this, str) else node.this.name.lstrip("_").lower()
        if charset not in ("utf8mb4", "utf8", "utf8mb3") or not isinstance(node.expression, exp.Literal) \
                or not node.expression.is_string:
            raise UnsupportedError(f"the character set introducer _{charset}")
        return self._bind_Literal(node.expression, ctx)

    def _bind_Null(self, node, ctx) -> Expr:
        return Literal(None, T.NULL)

    def _bind_Boolean(self, node: exp.Boolean, ctx) -> Expr:
        return Literal(bool(node.this), T.BOOLEAN)

    def _bind_Paren(self, node, ctx) -> Expr:
        return self.bind_expr(node.this, ctx)

    def _bind_Placeholder(self, node, ctx) -> Expr:
        raise BindError("statement has a parameter placeholder but no parameters were given")

    def _bind_subquery_plan(self, node, ctx: ExprContext) -> tuple[LogicalPlan, list[str], bool]:
        """A subquery bound with its outer references in place: (plan, names, correlated)."""
        while isinstance(node, exp.Subquery) and not node.alias:
            node = node.this
        probe = Scope(parent=ctx.scope)
        sub = type(self)(self.catalog, self.database, self.ids)
        sub.subqueries = self.subqueries
        sub.cte_uses = self.cte_uses
        sub.recursive_ctes = self.recursive_ctes
        plan, names = sub.bind_query(node, probe, self.visible_ctes)
        return plan, names, bool(probe.outer_refs)

    def _collector(self, ctx: ExprContext, what: str) -> SubqueryCollector:
        if ctx.subqueries is None:
            raise UnsupportedError(f"{what} in {ctx.clause}")
        return ctx.subqueries

    def _bind_Subquery(self, node: exp.Subquery, ctx: ExprContext) -> Expr:
        """A scalar subquery: uncorrelated, an init plan run once before the query; correlated, a value
        decorrelate.py joins in."""
        plan, names, correlated = self._bind_subquery_plan(node.this, ctx)
        if len(plan.fields) != 1:
            raise BindError(f"scalar subquery returns {len(plan.fields)} columns, expected 1")
        if correlated:
            result = Field(self.ids.new("subquery"), "subquery", plan.fields[0].type, True)
            return self._collector(ctx, "correlated scalar subquery").add(SubqueryUse("scalar", plan, result))
        self.subqueries.append(Query(plan, tuple(names), ()))
        return ScalarParam(len(self.subqueries) - 1, plan.fields[0].type)

    def _bind_Filter(self, node: exp.Filter, ctx: ExprContext) -> Expr:
        if _contains_aggregate(node.expression):
            raise BindError(f"aggregate functions are not allowed in FILTER (WHERE ...): {node_name(node)}")
        return self.bind_expr(unfiltered(node, node_name(node)), ctx)

    def _bind_Window(self, node: exp.Window, ctx: ExprContext) -> Expr:
        return bind_window.bind_window_call(self, node, ctx)

    def aggregate_call(self, node, ctx: ExprContext) -> AggCall:
        """The AggCall an aggregate node binds to in ``ctx``'s scope, not added to the SELECT's
        aggregates (a window aggregate is typed as the GROUP BY one is)."""
        collected = AggContext(self.ids)
        self._bind_aggregate(node, ExprContext(ctx.scope, collected, clause=ctx.clause))
        return collected.calls[0][1]

    def _bind_Exists(self, node, ctx) -> Expr:
        plan, names, correlated = self._bind_subquery_plan(node.this, ctx)
        if correlated:
            result = Field(self.ids.new("exists"), "exists", T.BOOLEAN, False)
            return self._collector(ctx, "correlated EXISTS").add(SubqueryUse("exists", plan, result))
        # uncorrelated: an init plan, COUNT(*) > 0 over its first row
        count = Field(self.ids.new("count"), "count", T.BIGINT, False)
        counted = Aggregate(Limit(plan, 1, 0), (), ((count, AggCall("count_star", None, T.BIGINT)),))
        found = Field(self.ids.new("exists"), "exists", T.BOOLEAN, False)
        self.subqueries.append(Query(Project(counted, ((found, Call("gt", (count.ref(), Literal(0, T.BIGINT)),
                                                                         T.BOOLEAN)),)), ("exists",), ()))
        return ScalarParam(len(self.subqueries) - 1, T.BOOLEAN)

    def _bind_quantified(self, probe_node, query_node, op: str, negate: bool, ctx: ExprContext) -> Expr:
        """``probe op ANY (query)`` (``negate``: NOT of it; IN is = ANY, ALL is NOT with the negated
        comparison); ``probe`` may be a row value (a tuple) for IN."""
        collector = self._collector(ctx, "IN (subquery)" if op == "eq" else "ANY / ALL (subquery)")
        probe_node = _unparen(probe_node)
        probe_nodes = probe_node.expressions if isinstance(probe_node, exp.Tuple) else [probe_node]
        probes = [self.bind_expr(p, ctx) for p in probe_nodes]
        plan, _, _ = self._bind_subquery_plan(query_node, ctx)
        if len(plan.fields) != len(probes):
            raise BindError(f"the subquery returns {len(plan.fields)} columns, the left side has {len(probes)}")
        if len(probes) > 1 and op != "eq":
            raise UnsupportedError("a row value compared with ANY / ALL other than = and <>")
        casts, coerced = [], []
        for p, f in zip(probes, plan.fields):
            common = T.common_type(p.type, f.type, "IN subquery")
            if common.kind == "null":
                common = T.BIGINT
            left, right_key = self._collated_pair(p, f.ref(), common)
            coerced.append(left)
            casts.append((Field(self.ids.new(f.name), f.name, common, True), right_key))
        plan = Project(plan, tuple(casts))
        result = Field(self.ids.new("in"), "in", T.BOOLEAN, True)
        probe = tuple(coerced) if isinstance(probe_node, exp.Tuple) else coerced[0]
        return collector.add(SubqueryUse("any", plan, result, probe, op, negate))

    def _bind_Grouping(self, node: exp.Grouping, ctx: ExprContext) -> Expr:
        if ctx.agg is None or ctx.agg.grouping is None:
            raise BindError(f"{node_name(node)} is not allowed in {ctx.clause}: only with GROUP BY, "
                            "in the select list, HAVING and ORDER BY")
        args = [self.bind_expr(e, ExprContext(ctx.scope, clause="GROUPING")) for e in node.expressions]
        return grouping_call(args, ctx.agg.grouping, node_name(node))

    # aggregates
    def _bind_aggregate(self, node, ctx: ExprContext) -> Expr:
        func = AGGREGATES[type(node)]
        if ctx.agg is None:
            raise BindError(f"aggregate {node_name(node)} is not allowed in {ctx.clause}")
        inner_ctx = ExprContext(ctx.scope, None, None, clause=f"the argument of {func.upper()}",
                                subqueries=ctx.agg.values if ctx.subqueries is not None else None)
        if type(node) in EXTENDED or isinstance(node, exp.WithinGroup):
            inner = node.this if isinstance(node, exp.WithinGroup) else node
            parts = list(inner.iter_expressions()) + ([node.expression] if inner is not node else [])
            if any(_contains_aggregate(a) for a in parts):
                raise BindError(f"aggregate functions cannot be nested: {node_name(node)}")
            call = bind_extended(self, node, ctx, inner_ctx, node_name(node))
            return ctx.agg.add(call, call.func)
        target = node.this
        distinct = False
        if isinstance(target, exp.Distinct):
            distinct = True
            if len(target.expressions) != 1:
                raise UnsupportedError(f"{func.upper()}(DISTINCT a, b) with several columns")
            target = target.expressions[0]
        if func == "count" and (target is None or isinstance(target, exp.Star)):
            return ctx.agg.add(AggCall("count_star", None, T.BIGINT), "count")
        if _contains_aggregate(target):
            raise BindError(f"aggregate functions cannot be nested: {node_name(node)}")
        argument = self.bind_expr(target, inner_ctx)
        t = argument.type
        if func == "count":
            result = T.BIGINT
        elif func in ("sum", "avg"):
            if t.kind == "string":
                argument, t = self.coerce(argument, T.DOUBLE), T.DOUBLE
            if not t.is_numeric and t.kind != "null":
                raise TypeMismatchError(f"{func.upper()} needs a number, got {t} in {node_name(node)}")
            if t.kind in ("int", "bool", "null"):
                if t.kind == "null":
                    argument, t = self.coerce(argument, T.BIGINT), T.BIGINT
                result = T.aggregate_type(func, t)
                if func == "sum":
                    argument = self.coerce(argument, T.BIGINT)
            elif t.kind == "decimal":
                result = T.aggregate_type(func, t)
            else:
                result = T.DOUBLE
        else:
            result = t
        if distinct and is_string(argument):       # COUNT(DISTINCT s): distinct under s's collation
            argument = keyed(argument, argument.type.collation)
        if func in ("min", "max") and is_string(argument) and not collation.is_binary(t.collation):
            # the value whose collation key is smallest / largest (engine/exec/extended_aggregates.py)
            return ctx.agg.add(AggCall("collated_" + func, argument, result,
                                       options=(t.collation or collation.DEFAULT,)), func)
        return ctx.agg.add(AggCall(func, argument, result, distinct), func)
