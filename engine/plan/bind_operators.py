"""Operators and conditional forms: arithmetic, interval arithmetic, NOT / IS / BETWEEN / IN / LIKE,
CASE / IF / COALESCE / NULLIF / GREATEST / LEAST, COLLATE and CAST. A mixin of
:class:`engine.plan.binder.Binder`."""
from __future__ import annotations

import dataclasses
import decimal
from typing import Optional

from sqlglot import exp

from engine import collation
from engine import types as T
from engine.errors import BindError, TypeMismatchError, UnsupportedError
from engine.core.collation_keys import list_keys
from engine.plan.bind_collation import common_collation, is_string, keyed, needs_key
from engine.core.expressions import Call, Expr, Literal
from engine.exec.cast_range import CLIP, STRICT
from engine.exec.evaluate import QUIET, TEXT_AS_DECIMAL, constant_warnings
from engine.plan.bind_context import ZERO_DIVISOR_IS_ERROR, named_cast, node_name, strict_division, strict_writes
from engine.plan.bind_helpers import _BINARY_OPS, _COMPARISON_OPS, _MICROSECONDS_PER, _QUANTIFIABLE
from engine.plan.sql_words import sql_words


class OperatorBinding:
    # operators
    def _bind_binary(self, node, ctx) -> Expr:
        op = _BINARY_OPS[type(node)]
        left_node, right_node = node.this, node.expression
        if op in ("add", "subtract") and (isinstance(right_node, exp.Interval) or isinstance(left_node, exp.Interval)):
            return self._bind_interval_arith(node, op, ctx)
        if isinstance(right_node, (exp.Any, exp.All)) and op in _QUANTIFIABLE:
            if isinstance(right_node, exp.All):       # x > ALL (S) is NOT (x <= ANY (S))
                return self._bind_quantified(left_node, right_node.this, _QUANTIFIABLE[op], True, ctx)
            return self._bind_quantified(left_node, right_node.this, op, False, ctx)
        if op in _COMPARISON_OPS and isinstance(left_node, exp.Tuple) and isinstance(right_node, exp.Tuple):
            return self.bind_expr(_row_comparison(node, op), ctx)
        a, b = self.bind_expr(left_node, ctx), self.bind_expr(right_node, ctx)
        if op in _COMPARISON_OPS:
            return self.make_comparison(op, a, b)
        if op in ("and", "or"):
            for side in (a, b):
                if side.type.kind not in ("bool", "null", "int", "decimal", "float", "string"):
                    raise TypeMismatchError(f"{op.upper()} needs boolean operands, got {side.type} in {node_name(node)}")
            return self._fold(Call(op, (self._as_bool(a), self._as_bool(b)), T.BOOLEAN))
        division = (ZERO_DIVISOR_IS_ERROR,) if op in ("divide", "mod", "int_divide") and strict_division.get() \
            else ()
        if op == "int_divide":      # text read as DOUBLE first ('' DIV 2 is 0), as MySQL
            a, b = (self.coerce(x, T.DOUBLE) if x.type.kind == "string" else x for x in (a, b))
            return self._fold(Call(op, (a, b), T.BIGINT, division))
        symbol = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/", "mod": "%"}[op]
        if a.type.is_temporal or b.type.is_temporal:
            raise TypeMismatchError(f"operator {symbol} on {a.type} and {b.type} in {node_name(node)}; "
                                    "use INTERVAL arithmetic or DATEDIFF")
        if a.type.kind == "string":
            a = self.coerce(a, T.DOUBLE)
        if b.type.kind == "string":
            b = self.coerce(b, T.DOUBLE)
        result = T.arithmetic_type(symbol, a.type, b.type, node_name(node))
        return self._fold(Call(op, (a, b), result, division))

    def _as_bool(self, e: Expr) -> Expr:
        # MySQL reads any value as a truth value by comparing it with 0 (text as a number, with its warning)
        if e.type.kind in ("int", "decimal", "float", "string"):
            return self.make_comparison("ne", e, Literal(0, T.BIGINT))
        if e.type.kind == "null":
            return self.coerce(e, T.BOOLEAN)     # NULL AND FALSE: the Kleene kernels need a boolean NULL
        return e

    def _bind_interval_arith(self, node, op: str, ctx) -> Expr:
        date_node, interval = node.this, node.expression
        if isinstance(date_node, exp.Interval):
            if op == "subtract":
                raise TypeMismatchError(f"cannot subtract a date from an interval: {node_name(node)}")
            date_node, interval = interval, date_node
        d = self.bind_expr(date_node, ctx)
        if d.type.kind in ("string", "null"):
            d = self.coerce(d, T.DATE)
        if not d.type.is_temporal:
            raise TypeMismatchError(f"INTERVAL arithmetic needs a DATE or DATETIME, got {d.type} in {node_name(node)}")
        return self._interval(d, interval, -1 if op == "subtract" else 1, ctx)

    def _interval(self, d: Expr, interval: exp.Interval, sign: int, ctx) -> Expr:
        amount = self.bind_expr(interval.this, ctx)
        unit = (interval.unit.name if interval.unit is not None else "DAY").upper()
        if unit.endswith("S"):
            unit = unit[:-1]
        if amount.type.kind == "string":
            amount = self.coerce(amount, T.BIGINT)
        if sign < 0:
            amount = self._fold(Call("negate", (amount,), amount.type))
        if unit in ("DAY", "WEEK"):
            if unit == "WEEK":
                amount = self._fold(Call("multiply", (amount, Literal(7, T.BIGINT)), T.BIGINT))
            return self._fold(Call("date_add_days", (d, amount), d.type))
        if unit in ("MONTH", "QUARTER", "YEAR"):
            factor = {"MONTH": 1, "QUARTER": 3, "YEAR": 12}[unit]
            if factor != 1:
                amount = self._fold(Call("multiply", (amount, Literal(factor, T.BIGINT)), T.BIGINT))
            return self._fold(Call("date_add_months", (d, amount), d.type))
        if unit in _MICROSECONDS_PER:
            if amount.type.kind not in ("int", "null"):
                raise UnsupportedError(f"INTERVAL of a fractional number of {unit.lower()}s")
            amount = self._fold(Call("multiply", (self.coerce(amount, T.BIGINT),
                                                  Literal(_MICROSECONDS_PER[unit], T.BIGINT)), T.BIGINT))
            return self._fold(Call("date_add_micros", (self.coerce(d, T.DATETIME), amount), T.DATETIME))
        raise UnsupportedError(f"INTERVAL unit {unit}")

    def _bind_DateAdd(self, node, ctx) -> Expr:
        return self._date_add(node, ctx, 1)

    def _bind_DateSub(self, node, ctx) -> Expr:
        return self._date_add(node, ctx, -1)

    def _date_add(self, node, ctx, sign) -> Expr:
        d = self.bind_expr(node.this, ctx)
        if d.type.kind in ("string", "null"):
            d = self.coerce(d, T.DATE)
        interval = node.expression
        if not isinstance(interval, exp.Interval):
            interval = exp.Interval(this=interval, unit=node.args.get("unit") or exp.var("DAY"))
        return self._interval(d, interval, sign, ctx)

    def _bind_Neg(self, node, ctx) -> Expr:
        a = self.bind_expr(node.this, ctx)
        if a.type.kind in ("string", "bool"):         # -'3' is -3.0 (text read as DOUBLE), -TRUE is -1
            a = self.coerce(a, T.DOUBLE if a.type.kind == "string" else T.BIGINT)
        if isinstance(a, Literal) and a.value is not None and a.type.is_numeric:
            # copy_negate is exact; a Decimal's unary minus rounds to the context's 28 digits
            if isinstance(a.value, int) and not isinstance(a.value, bool):
                return Literal(-a.value, T.python_type_of(-a.value))    # -9223372036854775808 is a BIGINT
            return Literal(a.value.copy_negate() if isinstance(a.value, decimal.Decimal) else -a.value,
                           T.signed(a.type))
        return self._fold(Call("negate", (a,), T.signed(a.type)))      # -x of an UNSIGNED x is signed

    def _bind_Not(self, node, ctx) -> Expr:
        a = self._as_bool(self.bind_expr(node.this, ctx))
        return self._fold(Call("not", (a,), T.BOOLEAN))

    def _bind_Is(self, node: exp.Is, ctx) -> Expr:
        a = self.bind_expr(node.this, ctx)
        target = node.expression
        if isinstance(target, exp.Null):
            return self._fold(Call("is_null", (a,), T.BOOLEAN))
        if isinstance(target, exp.Boolean):
            truth = self._fold(Call("is_true", (self._as_bool(a),), T.BOOLEAN))
            return truth if target.this else self._fold(Call(
                "is_true", (self._fold(Call("not", (self._as_bool(a),), T.BOOLEAN)),), T.BOOLEAN))
        raise UnsupportedError(f"IS {node_name(target)}")

    def _bind_Between(self, node: exp.Between, ctx) -> Expr:
        x = self.bind_expr(node.this, ctx)
        low, high = self.bind_expr(node.args["low"], ctx), self.bind_expr(node.args["high"], ctx)
        # MySQL reads x once: a text x read as a number warns once (MariaDB), not once per bound
        high_side = _quiet_casts(self.make_comparison("le", x, high), x)
        return self._fold(Call("and", (self.make_comparison("ge", x, low), high_side), T.BOOLEAN))

    def _bind_In(self, node: exp.In, ctx) -> Expr:
        if node.args.get("query") is not None:
            return self._bind_quantified(node.this, node.args["query"], "eq", False, ctx)
        if isinstance(node.this, exp.Tuple):
            return self.bind_expr(_row_in_list(node), ctx)
        x = self.bind_expr(node.this, ctx)
        values = [self.bind_expr(v, ctx) for v in node.expressions]
        if all(isinstance(v, Literal) for v in values):
            common = x.type
            for v in values:
                if v.type.kind != "null":
                    common = T.common_type(common, v.type if not (v.type.kind == "string" and x.type.is_temporal)
                                           else x.type, "IN list")
            x2 = self.coerce_compared(x, common, *[v.type for v in values if v.type.kind != "null"])
            coerced = tuple(self._constant(self.coerce(v, common)) if v.type.kind != "null" else None
                            for v in values)
            if is_string(x2):
                name = common_collation([x] + [v for v in values if is_string(v)], "IN")
                x2 = keyed(x2, name)        # the evaluator keys the list's values alike
            # text in the list read as a number warns as in MariaDB: per row that reaches it where it is read
            # as a DECIMAL (beside integers), once where it is read as a DOUBLE (converted once)
            warned = tuple((i, TEXT_AS_DECIMAL in getattr(c, "options", ()), *w)
                           for i, c in enumerate(self.coerce_compared(v, common, x.type) if v.type.kind == "string"
                                                 else None for v in values)
                           if c is not None for w in constant_warnings(c)) \
                if common.kind != "string" and any(v.type.kind == "string" for v in values) else ()
            if warned:
                return self._fold(Call("in_list_warning", (x2,), T.BOOLEAN, (coerced, False, warned)))
            return self._fold(Call("in_list", (x2,), T.BOOLEAN, (coerced, False)))
        result = None
        for v in values:
            eq = self.make_comparison("eq", x, v)
            result = eq if result is None else Call("or", (result, eq), T.BOOLEAN)
        return result

    def _bind_Like(self, node, ctx, escape: Optional[str] = None, negated: bool = False) -> Expr:
        negated = negated or bool(node.args.get("negate"))      # sqlglot >= 28 folds NOT into LIKE
        a = self.bind_expr(node.this, ctx)
        pattern = self.bind_expr(node.expression, ctx)
        # MySQL matches the text of a number (or date) on either side: 5 LIKE 5, n LIKE '1%'
        if a.type.kind != "string":
            a = self.coerce(a, T.TEXT)
        if pattern.type.kind != "string":
            pattern = self.coerce(pattern, T.TEXT)
        if is_string(pattern):
            name = common_collation([a, pattern], "LIKE")
            if needs_key(name, pad=False):        # LIKE never pads: 'a ' LIKE 'a' is false
                a, pattern = keyed(a, name, pad=False), keyed(pattern, name, pad=False)
                escape = list_keys((escape,), name, False)[0] if escape else escape
        options = (escape,) if escape else ()
        return self._fold(Call("not_like" if negated else "like", (a, pattern), T.BOOLEAN, options))

    def _bind_Escape(self, node, ctx) -> Expr:
        escape = self.bind_expr(node.expression, ctx)
        if not isinstance(escape, Literal) or not isinstance(escape.value, str) or len(escape.value) != 1:
            raise BindError("ESCAPE needs a single character")
        if not isinstance(node.this, exp.Like):
            raise UnsupportedError(f"ESCAPE on {node_name(node.this)}")
        return self._bind_Like(node.this, ctx, escape.value)

    def _bind_ILike(self, node, ctx) -> Expr:
        a = self.bind_expr(node.this, ctx)
        a = a if a.type.kind == "string" else self.coerce(a, T.TEXT)
        lowered = Call("lower", (a,), T.TEXT)
        pattern = self.bind_expr(node.expression, ctx)
        pattern = pattern if pattern.type.kind == "string" else self.coerce(pattern, T.TEXT)
        op = "not_like" if node.args.get("negate") else "like"
        return self._fold(Call(op, (lowered, self._fold(Call("lower", (pattern,), T.TEXT))), T.BOOLEAN))

    def _bind_Case(self, node: exp.Case, ctx) -> Expr:
        operand = self.bind_expr(node.this, ctx) if node.this is not None else None
        conditions, values = [], []
        for branch in node.args.get("ifs") or []:
            cond = self.bind_expr(branch.this, ctx)
            if operand is not None:
                cond = self.make_comparison("eq", operand, cond)
            conditions.append(self._as_bool(cond))
            values.append(self.bind_expr(branch.args["true"], ctx))
        default = self.bind_expr(node.args["default"], ctx) if node.args.get("default") is not None \
            else Literal(None, T.NULL)
        result_type = default.type
        for v in values:
            result_type = T.result_type(result_type, v.type, "CASE")
        if result_type.kind == "null":
            result_type = T.TEXT
        args = []
        for c, v in zip(conditions, values):
            args.extend([c, self.coerce(v, result_type)])
        args.append(self.coerce(default, result_type))
        return Call("case", tuple(args), result_type)

    def _bind_If(self, node: exp.If, ctx) -> Expr:
        cond = self._as_bool(self.bind_expr(node.this, ctx))
        a = self.bind_expr(node.args["true"], ctx)
        b = self.bind_expr(node.args["false"], ctx) if node.args.get("false") is not None else Literal(None, T.NULL)
        t = T.result_type(a.type, b.type, "IF")
        return self._fold(Call("if", (cond, self.coerce(a, t), self.coerce(b, t)), t))

    def _bind_Coalesce(self, node, ctx) -> Expr:
        args = [self.bind_expr(node.this, ctx)] + [self.bind_expr(e, ctx) for e in node.expressions]
        t = args[0].type
        for a in args[1:]:
            t = T.result_type(t, a.type, "COALESCE")
        return self._fold(Call("coalesce", tuple(self.coerce(a, t) for a in args), t))

    def _bind_Nullif(self, node, ctx) -> Expr:
        a, b = self.bind_expr(node.this, ctx), self.bind_expr(node.expression, ctx)
        t = T.common_type(a.type, b.type, "NULLIF")
        if t != a.type and a.type.kind != "null":     # compared as t, the value stays a's: NULLIF('3', 0) is '3'
            equal = self._as_bool(self.make_comparison("eq", a, b))
            return self._fold(Call("case", (equal, Literal(None, a.type), a), a.type))
        options = (common_collation([a, b], "NULLIF"),) if t.kind == "string" else ()   # equal as keys
        return self._fold(Call("nullif", (self.coerce(a, t), self.coerce(b, t)), t, options))

    def _bind_Greatest(self, node, ctx) -> Expr:
        return self._extreme(node, ctx, "greatest")

    def _bind_Least(self, node, ctx) -> Expr:
        return self._extreme(node, ctx, "least")

    def _extreme(self, node, ctx, op) -> Expr:
        args = [self.bind_expr(node.this, ctx)] + [self.bind_expr(e, ctx) for e in node.expressions]
        t = args[0].type
        for a in args[1:]:
            t = T.common_type(t, a.type, op.upper())     # compared as MySQL compares: text beside a number as DOUBLE
        options = ()
        if t.kind == "string":      # strings compare under their common collation ('B' > 'a' under _ci)
            name = common_collation([a for a in args if is_string(a)] or args, op.upper())
            options = (name,) if not collation.is_binary(name) else ()
            t = t.with_collation(name)
        return self._fold(Call(op, tuple(self.coerce(a, t) for a in args), t, options))

    def _bind_Collate(self, node: exp.Collate, ctx) -> Expr:
        a = self.bind_expr(node.this, ctx)
        name = collation.resolve(node.expression.name)
        if a.type.kind == "null":
            a = self.coerce(a, T.TEXT)
        if a.type.kind != "string":
            raise BindError(f"COLLATE {name} needs a string, got {a.type} in {node_name(node)}")
        return Call("collate", (a,), a.type.with_collation(name))

    def _bind_Cast(self, node: exp.Cast, ctx) -> Expr:
        a = self.bind_expr(node.this, ctx)
        to = node.args["to"]
        if to.this in (exp.DataType.Type.BINARY, exp.DataType.Type.VARBINARY) and not to.expressions:
            # BINARY x / CAST(x AS BINARY): compared exactly. Canopy keeps it a string (no VARBINARY type).
            if a.type.kind != "string":
                a = self.coerce(a, T.TEXT)
            return Call("collate", (a,), a.type.with_collation(collation.BIN))
        target = self.sql_type(to)
        if target == T.JSON:
            return self.cast_to_json(a)
        if a.type.kind == "string" and target.kind == "string":
            return a
        # a value past SIGNED's or DECIMAL(p, s)'s range clips and warns (Note) or fails (a Warning in a
        # write: strict mode) as in MariaDB (engine.exec.cast_range)
        # (UNSIGNED and DOUBLE do not clip, but text that is not a number in full fails a write alike)
        clips = target.kind in ("int", "decimal") and not target.unsigned
        options = ((CLIP,) if clips else ()) + ((STRICT,) if strict_writes.get() and _is_number(target) else ())
        if clips:       # MariaDB's 1264 names the select list item: its alias, '(null)' inside an expression
            options += named_cast(node)
        return self._fold(Call("cast", (a,), target, options))

    _bind_TryCast = _bind_Cast

    def sql_type(self, dt: exp.DataType) -> T.SqlType:
        name = dt.this.name if hasattr(dt.this, "name") else str(dt.this)
        params = tuple(int(p.this.this) if isinstance(p.this, exp.Literal) else int(p.name)
                       for p in dt.expressions if isinstance(p, exp.DataTypeParam))
        name = name.upper()
        if name == "CHAR" and not params:
            return T.TEXT      # CAST(x AS CHAR)
        return T.from_sql_name(name, params)


def _is_number(t: T.SqlType) -> bool:
    return t.kind in ("int", "decimal", "float")


def _quiet_casts(expr: Expr, x: Expr) -> Expr:
    """``expr`` with its casts of ``x`` marked QUIET: they convert as before but record no warning (a
    second reading of a value the user wrote once)."""
    if not isinstance(expr, Call):
        return expr
    if expr.op == "cast" and expr.args and expr.args[0] == x:
        return Call("cast", expr.args, expr.type, expr.options + (QUIET,))
    args = tuple(_quiet_casts(a, x) for a in expr.args)
    return expr if args == expr.args else dataclasses.replace(expr, args=args)


def _row_in_list(node: exp.In) -> exp.Expression:
    """``(a, b) IN ((1, 2), (3, 4))`` as ``(a = 1 AND b = 2) OR (a = 3 AND b = 4)``: MySQL's row
    comparison under three-valued logic is exactly that (NULL where no row is equal and some is unknown)."""
    row = node.this.expressions
    alternatives = []
    for value in node.expressions:
        items = value.expressions if isinstance(value, exp.Tuple) else [value]
        if len(items) != len(row):
            raise BindError(f"Operand should contain {len(row)} column(s) in {sql_words(node)}")
        pairs = [exp.EQ(this=a.copy(), expression=b.copy()) for a, b in zip(row, items)]
        alternatives.append(exp.paren(exp.and_(*pairs)))
    return exp.paren(exp.or_(*alternatives))


_ROW_STEP = {"lt": exp.LT, "le": exp.LT, "gt": exp.GT, "ge": exp.GT}


def _row_comparison(node, op: str) -> exp.Expression:
    """``(a1, a2) op (b1, b2)`` element by element, as MySQL compares rows: = is every pair equal, <> some
    pair unequal, <=> every pair null-safe equal, and < <= > >= lexicographic (``a1 < b1 OR (a1 = b1
    AND a2 <= b2)``), which under three-valued logic is NULL exactly where MySQL's is."""
    left, right = node.this.expressions, node.expression.expressions
    if len(left) != len(right):
        raise BindError(f"Operand should contain {len(left)} column(s) in {sql_words(node)}")
    pairs = list(zip((a.copy() for a in left), (b.copy() for b in right)))
    if op in ("eq", "null_safe_eq"):
        pair_op = exp.EQ if op == "eq" else exp.NullSafeEQ
        return exp.paren(exp.and_(*[pair_op(this=a, expression=b) for a, b in pairs]))
    if op == "ne":
        return exp.paren(exp.or_(*[exp.NEQ(this=a, expression=b) for a, b in pairs]))
    last_a, last_b = pairs[-1]
    result = type(node)(this=last_a, expression=last_b)
    for a, b in reversed(pairs[:-1]):
        result = exp.or_(_ROW_STEP[op](this=a, expression=b),
                         exp.and_(exp.EQ(this=a.copy(), expression=b.copy()), exp.paren(result)))
    return exp.paren(result)
