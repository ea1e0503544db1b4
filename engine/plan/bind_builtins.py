"""Built-in scalar functions sqlglot parses to their own classes or leaves anonymous: date parts,
strings, LOG / ROUND, and the simple one-to-one ones (engine/plan/bind_functions.py has the rest
of MySQL's string and date library). A mixin of :class:`engine.plan.binder.Binder`."""
from __future__ import annotations


from sqlglot import exp

from engine import collation
from engine import types as T
from engine.errors import BindError, TypeMismatchError, UnsupportedError
from engine.plan.bind_collation import common_collation
from engine.core.expressions import Call, Expr, Literal
from engine.plan.sql_words import sql_words
from engine.plan.bind_context import node_name
from engine.plan.bind_helpers import _SIMPLE_FUNCTIONS, _round_digits


class BuiltinBinding:
    def _bind_Extract(self, node: exp.Extract, ctx) -> Expr:
        unit = node.this.name.upper()
        d = self.bind_expr(node.expression, ctx)
        with_time = any(part in unit for part in ("HOUR", "MINUTE", "SECOND"))
        if d.type.kind in ("string", "null") or (with_time and d.type.kind == "date"):
            d = self.coerce(d, T.DATETIME if with_time else T.DATE)
        if not d.type.is_temporal:
            raise TypeMismatchError(f"EXTRACT({unit} FROM ...) needs a date, got {d.type}")
        return self._fold(Call("extract", (d,), T.BIGINT, (unit,)))

    def _date_part(self, node, ctx, unit) -> Expr:
        inner = node.this
        if isinstance(inner, exp.TsOrDsToDate):     # sqlglot reads YEAR(x) as YEAR(DATE(x))
            inner = inner.this
        d = self.bind_expr(inner, ctx)
        if d.type.kind in ("string", "null"):
            d = self.coerce(d, T.DATE)
        if not d.type.is_temporal:
            raise TypeMismatchError(f"{unit}() needs a date, got {d.type} in {node_name(node)}")
        return self._fold(Call("extract", (d,), T.BIGINT, (unit,)))

    def _bind_Year(self, node, ctx):
        return self._date_part(node, ctx, "YEAR")

    def _bind_Month(self, node, ctx):
        return self._date_part(node, ctx, "MONTH")

    def _bind_Day(self, node, ctx):
        return self._date_part(node, ctx, "DAY")

    def _bind_Quarter(self, node, ctx):
        return self._date_part(node, ctx, "QUARTER")

    def _bind_DayOfMonth(self, node, ctx):
        return self._date_part(node, ctx, "DAY")

    def _bind_DayOfWeek(self, node, ctx):
        return self._date_part(node, ctx, "DAYOFWEEK")

    def _bind_DayOfYear(self, node, ctx):
        return self._date_part(node, ctx, "DAYOFYEAR")

    def _bind_DateDiff(self, node, ctx) -> Expr:
        a = self.bind_expr(node.this, ctx)
        if _is_year_zero(node.expression):
            # sqlglot reads TO_DAYS(x) as DATEDIFF(x, '0000-01-01') + 1; year 0 is outside the DATE range
            # (and MySQL's day numbering of it is its own), so count from 1970-01-01, MySQL's day 719528
            a = self.coerce(a, T.DATE) if a.type.kind in ("string", "null") else a
            since_epoch = self._fold(Call("datediff", (a, self.coerce(Literal("1970-01-01", T.TEXT), T.DATE)),
                                          T.BIGINT))
            return self._fold(Call("add", (since_epoch, Literal(_DAYS_BEFORE_1970, T.BIGINT)), T.BIGINT))
        b = self.bind_expr(node.expression, ctx)
        a = self.coerce(a, T.DATE) if a.type.kind in ("string", "null") else a
        b = self.coerce(b, T.DATE) if b.type.kind in ("string", "null") else b
        return self._fold(Call("datediff", (a, b), T.BIGINT))

    def _bind_CurrentDate(self, node, ctx) -> Expr:
        return Call("current_date", (), T.DATE)

    def _bind_CurrentTimestamp(self, node, ctx) -> Expr:
        return Call("now", (), T.DATETIME)

    def _bind_Substring(self, node: exp.Substring, ctx) -> Expr:
        s = self._string_arg(node.this, ctx)
        start = self.bind_expr(node.args["start"], ctx) if node.args.get("start") is not None else Literal(1, T.BIGINT)
        args = [s, start]
        if node.args.get("length") is not None:
            args.append(self.bind_expr(node.args["length"], ctx))
        return self._fold(Call("substring", tuple(args), T.varchar(s.type.length)))

    def _string_arg(self, node, ctx) -> Expr:
        e = self.bind_expr(node, ctx)
        if e.type.kind == "bool":
            e = self.coerce(e, T.BIGINT)     # MySQL's booleans are integers: CONCAT(TRUE) is '1'
        return e if e.type.kind == "string" else self.coerce(e, T.TEXT)

    def _bind_Length(self, node, ctx) -> Expr:
        s = self._string_arg(node.this, ctx)
        return self._fold(Call("octet_length" if node.args.get("binary") else "char_length", (s,), T.BIGINT))

    def _bind_Trim(self, node, ctx) -> Expr:
        position = (node.args.get("position") or "BOTH").upper()
        if node.args.get("expression") is not None:         # TRIM([where] r FROM s): the string r
            args = (self._string_arg(node.this, ctx), self._string_arg(node.expression, ctx))
            return self._fold(Call("trim_string", args, T.TEXT, (position,)))
        op = {"BOTH": "trim", "LEADING": "ltrim", "TRAILING": "rtrim"}[position]
        return self._fold(Call(op, (self._string_arg(node.this, ctx),), T.TEXT))

    def _bind_Concat(self, node, ctx) -> Expr:
        args = tuple(self._string_arg(e, ctx) for e in node.expressions)
        return self._fold(Call("concat", args, T.TEXT))

    def _bind_StrPosition(self, node, ctx) -> Expr:
        haystack = self._string_arg(node.this, ctx)
        needle = self._string_arg(node.args["substr"], ctx)
        args = (needle, haystack)
        if node.args.get("position") is not None:        # LOCATE(substr, str, pos)
            args += (self._int_arg(node.args["position"], ctx),)
        name = common_collation([needle, haystack], "LOCATE")       # 'A' is found in 'bar' under _ci
        return self._fold(Call("locate", args, T.BIGINT, () if collation.is_binary(name) else (name,)))

    def _int_arg(self, node, ctx) -> Expr:
        e = self.bind_expr(node, ctx)
        return e if e.type.kind in ("int", "null") else self.coerce(e, T.BIGINT)

    def _bind_Left(self, node, ctx) -> Expr:
        args = (self._string_arg(node.this, ctx), self._int_arg(node.expression, ctx))
        return self._fold(Call("left", args, T.TEXT))

    def _bind_Right(self, node, ctx) -> Expr:
        args = (self._string_arg(node.this, ctx), self._int_arg(node.expression, ctx))
        return self._fold(Call("right", args, T.TEXT))

    def _bind_Replace(self, node, ctx) -> Expr:
        if node.args.get("replacement") is None:
            raise BindError(f"{sql_words(node)}: REPLACE takes 3 arguments")
        args = tuple(self._string_arg(node.args[name], ctx) for name in ("this", "expression", "replacement"))
        return self._fold(Call("replace", args, T.TEXT))

    def _bind_TsOrDsToDate(self, node, ctx) -> Expr:
        """DATE(x): the date part of a DATETIME, or a string read as a date."""
        d = self.bind_expr(node.this, ctx)
        if d.type.kind not in ("date", "datetime", "string", "null"):
            raise TypeMismatchError(f"DATE() needs a date, datetime or string, got {d.type} in {node_name(node)}")
        return self.coerce(d, T.DATE)

    def _bind_Log(self, node, ctx) -> Expr:
        """MySQL LOG(x) is ln(x); LOG(b, x) is the logarithm of x to the base b."""
        if node.expression is None:
            return self._fold(Call("ln", (self.bind_expr(node.this, ctx),), T.DOUBLE))
        base, x = self.bind_expr(node.this, ctx), self.bind_expr(node.expression, ctx)
        ln_x, ln_base = Call("ln", (x,), T.DOUBLE), Call("ln", (base,), T.DOUBLE)
        return self._fold(Call("divide", (ln_x, ln_base), T.DOUBLE))

    def _bind_Round(self, node, ctx) -> Expr:
        a = self.bind_expr(node.this, ctx)
        if a.type.kind in ("string", "bool"):         # text read as DOUBLE, TRUE as 1
            a = self.coerce(a, T.DOUBLE if a.type.kind == "string" else T.BIGINT)
        digits = self.bind_expr(node.args["decimals"], ctx) if node.args.get("decimals") is not None else None
        if digits is not None and not isinstance(digits, Literal):
            raise UnsupportedError("ROUND with a non-constant number of digits")
        if digits is not None and digits.value is None:
            return Literal(None, a.type if a.type.kind in ("int", "float", "decimal") else T.DOUBLE)
        nd = _round_digits(digits, node) if digits is not None else 0
        if a.type.kind == "decimal":
            scale = max(0, min(nd, a.type.scale))
            t = T.decimal_type(min(38, a.type.precision - a.type.scale + scale + 1), scale)
        else:
            t = a.type if a.type.kind in ("int", "float") else T.DOUBLE
        args = (a, Literal(nd, T.BIGINT))
        return self._fold(Call("round", args, t))

    def _bind_Anonymous(self, node: exp.Anonymous, ctx) -> Expr:
        name = node.name.upper()
        bound = self.bind_anonymous_function(name, node, ctx)
        if bound is not None:
            return bound
        args = [self.bind_expr(e, ctx) for e in node.expressions]
        if name in ("NOW", "SYSDATE", "LOCALTIMESTAMP"):
            return Call("now", (), T.DATETIME)
        if name in ("MID",):
            s = args[0] if args[0].type.kind == "string" else self.coerce(args[0], T.TEXT)
            return self._fold(Call("substring", (s, *args[1:]), T.TEXT))
        if name in ("IFNULL", "NVL"):
            t = T.result_type(args[0].type, args[1].type, name)
            return self._fold(Call("coalesce", (self.coerce(args[0], t), self.coerce(args[1], t)), t))
        if name in ("CURDATE",):
            return Call("current_date", (), T.DATE)
        raise UnsupportedError(f"function {name}() is not supported")

    def _bind_simple_function(self, node, ctx) -> Expr:
        op, kind = _SIMPLE_FUNCTIONS[type(node)]
        operands = [node.this] + list(node.expressions or [])
        if node.args.get("expression") is not None:
            operands.append(node.args["expression"])
        args = [self.bind_expr(e, ctx) for e in operands if e is not None]
        if kind == "string":
            args = [a if a.type.kind == "string" else self.coerce(a, T.TEXT) for a in args]
            return self._fold(Call(op, tuple(args), T.TEXT if op not in ("starts_with",) else T.BOOLEAN))
        # MySQL reads text and booleans in a numeric function as numbers: text as DOUBLE (with its
        # warnings for what is not a number), TRUE as 1
        args = [self.coerce(a, T.DOUBLE) if a.type.kind in ("string", "null") else
                self.coerce(a, T.BIGINT) if a.type.kind == "bool" else a for a in args]
        if kind == "float":
            return self._fold(Call(op, tuple(a if a.type.kind == "float" else self.coerce(a, T.DOUBLE)
                                             for a in args), T.DOUBLE))
        if kind == "same":
            return self._fold(Call(op, tuple(args), args[0].type))
        if kind == "int":
            # FLOOR / CEIL / SIGN: an integer stays itself, a DECIMAL becomes BIGINT, a DOUBLE stays a DOUBLE
            t = args[0].type if args[0].type.kind == "int" else T.DOUBLE if args[0].type.kind == "float" \
                and op != "sign" else T.BIGINT
            return self._fold(Call(op, tuple(args), t))
        raise UnsupportedError(op)


# DATEDIFF('1970-01-01', '0000-01-01') in MySQL's calendar: TO_DAYS('1970-01-01') is 719528
_DAYS_BEFORE_1970 = 719527


def _is_year_zero(node) -> bool:
    """Whether ``node`` is the constant date '0000-01-01' (as sqlglot writes TO_DAYS)."""
    while isinstance(node, (exp.TsOrDsToDate, exp.Cast)):
        node = node.this
    return isinstance(node, exp.Literal) and node.is_string and node.this == "0000-01-01"
