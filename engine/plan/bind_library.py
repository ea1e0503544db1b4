"""MySQL's function library past the everyday functions: bit operators and BIT_COUNT, TRUNCATE, PI and
the rest of the trigonometry, SUBSTRING_INDEX, FIELD, FIND_IN_SET, ELT, STRCMP, INSERT, SPACE, ASCII /
ORD, CONV / BIN / OCT, CRC32, TO_BASE64, QUOTE, FORMAT, INTERVAL(), HOUR / MINUTE / SECOND /
MICROSECOND, WEEK in every mode, WEEKDAY, WEEKOFYEAR, YEARWEEK, MAKEDATE, FROM_DAYS, TO_SECONDS,
ADDDATE / SUBDATE, UTC_DATE / UTC_TIMESTAMP. A mixin of :class:`engine.plan.binder.Binder`; the
executor's halves are engine/exec/math_functions.py, text_functions.py and date_functions.py.

Types follow MySQL: bit operations are BIGINT UNSIGNED over ``CAST(x AS UNSIGNED)`` of each operand;
TRUNCATE keeps an integer or DECIMAL exact; FIELD compares as strings when every argument is one, as
numbers when every argument is one, as DOUBLE otherwise.
"""
from __future__ import annotations

import math

from sqlglot import exp

from engine import collation
from engine import types as T
from engine.errors import BindError, UnsupportedError
from engine.core.expressions import Call, Expr, Literal
from engine.plan.bind_collation import collation_of, common_collation
from engine.plan.sql_words import sql_words

_BIT_OPERATORS = {exp.BitwiseAnd: "&", exp.BitwiseOr: "|", exp.BitwiseXor: "^",
                  exp.BitwiseLeftShift: "<<", exp.BitwiseRightShift: ">>"}


class LibraryBinding:
    # --- numbers ------------------------------------------------------------------------------------------
    def _unsigned_operand(self, node, ctx) -> Expr:
        e = self.bind_expr(node, ctx)
        if e.type.kind == "bool":
            e = self.coerce(e, T.BIGINT)
        if e.type.kind in ("int", "null") and not e.type.unsigned:
            return self.coerce(e, T.BIGINT)
        if e.type.kind in ("decimal", "float"):
            return e                                # rounded half away from zero when run
        if e.type.kind == "string":
            return self.coerce(e, T.DOUBLE)
        if e.type.kind == "int":
            return self.coerce(e, T.UBIGINT)
        raise UnsupportedError(f"{sql_words(node.parent)}: a bit operation on {e.type}")

    def _bit_operator(self, node, ctx) -> Expr:
        a, b = self._unsigned_operand(node.this, ctx), self._unsigned_operand(node.expression, ctx)
        return self._fold(Call("bit_op", (a, b), T.UBIGINT, (_BIT_OPERATORS[type(node)],)))

    _bind_BitwiseAnd = _bind_BitwiseOr = _bind_BitwiseXor = _bit_operator
    _bind_BitwiseLeftShift = _bind_BitwiseRightShift = _bit_operator

    def _bind_BitwiseNot(self, node, ctx) -> Expr:
        return self._fold(Call("bit_not", (self._unsigned_operand(node.this, ctx),), T.UBIGINT))

    def _bind_BitwiseCount(self, node, ctx) -> Expr:
        return self._fold(Call("bit_count", (self._unsigned_operand(node.this, ctx),), T.BIGINT))

    def _bind_Pi(self, node, ctx) -> Expr:
        return Literal(math.pi, T.DOUBLE)

    def _bind_Trunc(self, node, ctx) -> Expr:
        x = self.bind_expr(node.this, ctx)
        digits_node = node.args.get("decimals")
        if digits_node is None:
            raise BindError(f"{sql_words(node)}: TRUNCATE takes 2 arguments")
        digits = self.bind_expr(digits_node, ctx)
        if not isinstance(digits, Literal):
            raise UnsupportedError("TRUNCATE with a non-constant number of digits")
        if digits.value is None:
            return Literal(None, x.type if x.type.kind in ("int", "decimal", "float") else T.DOUBLE)
        nd = int(digits.value)
        if x.type.kind == "decimal" and not x.type.unsigned:
            scale = max(0, min(nd, x.type.scale))
            t = T.decimal_type(max(1, x.type.precision - x.type.scale + scale), scale)
        elif x.type.kind == "int" or x.type.unsigned:
            t = x.type
        else:
            x, t = self.coerce(x, T.DOUBLE), T.DOUBLE
        return self._fold(Call("truncate", (x, Literal(nd, T.BIGINT)), t))

    def _double_function(self, op: str, node, ctx, *operands) -> Expr:
        args = tuple(self.coerce(self.bind_expr(o, ctx), T.DOUBLE) for o in operands)
        return self._fold(Call(op, args, T.DOUBLE))

    def _bind_Atan(self, node, ctx) -> Expr:
        if node.args.get("expression") is not None:         # ATAN(y, x) is ATAN2(y, x)
            return self._double_function("atan2", node, ctx, node.this, node.expression)
        return self._double_function("atan", node, ctx, node.this)

    def _bind_Atan2(self, node, ctx) -> Expr:
        return self._double_function("atan2", node, ctx, node.this, node.expression)

    def _bind_Asin(self, node, ctx) -> Expr:
        return self._double_function("asin", node, ctx, node.this)

    def _bind_Acos(self, node, ctx) -> Expr:
        return self._double_function("acos", node, ctx, node.this)

    def _bind_Cot(self, node, ctx) -> Expr:
        return self._double_function("cot", node, ctx, node.this)

    def _bind_Degrees(self, node, ctx) -> Expr:
        return self._double_function("degrees", node, ctx, node.this)

    def _bind_Radians(self, node, ctx) -> Expr:
        return self._double_function("radians", node, ctx, node.this)

    def _bind_Interval(self, node, ctx) -> Expr:
        """INTERVAL(n, n1, n2, ...), the function (an INTERVAL of date arithmetic is bound where it is
        added to a date)."""
        if not isinstance(node.this, exp.Tuple) or node.args.get("unit") is not None:
            raise UnsupportedError(f"{sql_words(node)} outside date arithmetic")
        args = [self.bind_expr(e, ctx) for e in node.this.expressions]
        if len(args) < 2:
            raise BindError("INTERVAL() takes at least 2 arguments")
        t = T.BIGINT if all(a.type.kind in ("int", "bool", "null") for a in args) else T.DOUBLE
        return self._fold(Call("interval_index", tuple(self.coerce(a, t) for a in args), T.BIGINT))

    # --- strings ---------------------------------------------------------------------------------------------
    def _field_operands(self, args: list[Expr], where: str) -> tuple[tuple[Expr, ...], tuple]:
        """FIELD's / STRCMP's arguments made comparable, and the options naming the collation."""
        if all(a.type.kind in ("string", "null") for a in args):
            name = common_collation(args, where)
            return tuple(args), (() if collation.is_binary(name) else (name,))
        if all(a.type.kind in ("int", "bool", "null") for a in args):
            return tuple(self.coerce(a, T.BIGINT) for a in args), ()
        if all(a.type.kind in ("int", "bool", "decimal", "null") and not a.type.unsigned for a in args):
            t = args[0].type if args[0].type.kind == "decimal" else T.decimal_type(38, 0)
            for a in args:
                if a.type.kind == "decimal":
                    t = T.common_type(t, a.type, where)
            return tuple(self.coerce(a, t) for a in args), ()
        return tuple(self.coerce(a, T.DOUBLE) for a in args), ()

    def _bind_SubstringIndex(self, node, ctx) -> Expr:
        s = self._string_arg(node.this, ctx)
        args = (s, self._string_arg(node.args["delimiter"], ctx), self._int_arg(node.args["count"], ctx))
        return self._fold(Call("substring_index", args, T.TEXT))

    def _bind_Elt(self, node, ctx) -> Expr:
        strings = tuple(self._string_arg(e, ctx) for e in node.expressions)
        return self._fold(Call("elt", (self._int_arg(node.this, ctx),) + strings, T.TEXT))

    def _bind_Space(self, node, ctx) -> Expr:
        return self._fold(Call("space", (self._int_arg(node.this, ctx),), T.TEXT))

    def _bind_Stuff(self, node, ctx) -> Expr:
        args = (self._string_arg(node.this, ctx), self._int_arg(node.args["start"], ctx),
                self._int_arg(node.args["length"], ctx), self._string_arg(node.expression, ctx))
        return self._fold(Call("insert", args, T.TEXT))

    def _bind_Ascii(self, node, ctx) -> Expr:
        return self._fold(Call("ascii", (self._string_arg(node.this, ctx),), T.BIGINT))

    def _bind_BitLength(self, node, ctx) -> Expr:
        octets = Call("octet_length", (self._string_arg(node.this, ctx),), T.BIGINT)
        return self._fold(Call("multiply", (octets, Literal(8, T.BIGINT)), T.BIGINT))

    def _bind_ToBase64(self, node, ctx) -> Expr:
        return self._fold(Call("to_base64", (self._string_arg(node.this, ctx),), T.TEXT))

    def _bind_NumberToStr(self, node, ctx) -> Expr:
        culture = node.args.get("culture")
        if culture is not None and not (isinstance(culture, exp.Literal) and culture.name == "en_US"):
            raise UnsupportedError(f"FORMAT with the locale {culture.sql(dialect='mysql')} (only 'en_US')")
        x = self.bind_expr(node.this, ctx)
        if x.type.kind not in ("int", "decimal", "float"):
            x = self.coerce(x, T.DOUBLE)
        return self._fold(Call("format_number", (x, self._int_arg(node.args["format"], ctx)), T.TEXT))

    # --- dates --------------------------------------------------------------------------------------------------
    def _time_part(self, node, ctx, unit: str) -> Expr:
        d = self.bind_expr(node.this if not isinstance(node, exp.Anonymous) else node.expressions[0], ctx)
        if d.type.kind in ("string", "null", "date"):
            d = self.coerce(d, T.DATETIME)
        if not d.type.is_temporal:
            raise UnsupportedError(f"{unit}() of {d.type} (TIME values are not supported)")
        return self._fold(Call("extract", (d,), T.BIGINT, (unit,)))

    def _bind_Hour(self, node, ctx) -> Expr:
        return self._time_part(node, ctx, "HOUR")

    def _bind_Minute(self, node, ctx) -> Expr:
        return self._time_part(node, ctx, "MINUTE")

    def _bind_Second(self, node, ctx) -> Expr:
        return self._time_part(node, ctx, "SECOND")

    def _week_function(self, node, ctx, op: str, mode_node) -> Expr:
        mode = 0
        if mode_node is not None:
            bound = self.bind_expr(mode_node, ctx)
            if not isinstance(bound, Literal) or bound.value is None:
                raise UnsupportedError(f"{op.upper()} with a non-constant mode")
            mode = int(bound.value)
        d = self._datetime_arg(node.this if not isinstance(node, exp.Anonymous) else node.expressions[0],
                               ctx, op.upper())
        return self._fold(Call(op, (d,), T.BIGINT, (mode & 7,)))

    def _bind_Week(self, node, ctx) -> Expr:
        return self._week_function(node, ctx, "week", node.args.get("mode"))

    def _bind_WeekOfYear(self, node, ctx) -> Expr:
        return self._week_function(node, ctx, "week", exp.Literal.number(3))

    def _bind_UtcDate(self, node, ctx) -> Expr:
        return Call("current_date", (), T.DATE)            # the session time zone is UTC

    def _bind_UtcTimestamp(self, node, ctx) -> Expr:
        return Call("now", (), T.DATETIME)

    def _bind_Collation(self, node, ctx) -> Expr:
        """COLLATION(x): the collation x compares by ('binary' for a number or date)."""
        e = self.bind_expr(node.this, ctx)
        name = collation_of(e)[0] if e.type.kind == "string" else "binary"
        return Literal(name, T.TEXT)

    def _anonymous_charset(self, name, node, ctx) -> Expr:
        """CHARSET(x): utf8mb4 (or utf8) for text, 'binary' for numbers and dates; COERCIBILITY(x):
        MySQL's 0 (explicit COLLATE) to 5 (NULL)."""
        e = self.bind_expr(node.expressions[0], ctx)
        if name == "COERCIBILITY":
            if e.type.kind == "null":
                return Literal(6 if isinstance(e, Literal) else 5, T.BIGINT)
            return Literal(collation_of(e)[1] if e.type.kind == "string" else 5, T.BIGINT)
        if e.type.kind != "string":
            return Literal("binary", T.TEXT)
        return Literal(collation.COLLATIONS[collation.resolve(collation_of(e)[0])].charset, T.TEXT)

    # --- MySQL functions sqlglot leaves anonymous ---------------------------------------------------------
    def bind_library_function(self, name: str, node: exp.Anonymous, ctx):
        """FIELD, FIND_IN_SET, STRCMP, CONV, BIN, OCT, CRC32, QUOTE, ORD, OCTET_LENGTH, WEEKDAY,
        YEARWEEK, MAKEDATE, FROM_DAYS, TO_SECONDS, MICROSECOND, ADDDATE, SUBDATE; None for another name."""
        binder = _ANONYMOUS.get(name)
        if binder is None:
            return self.bind_json_function(name, node, ctx)
        arity = _ARITY[name]
        if not arity[0] <= len(node.expressions) <= arity[1]:
            raise BindError(f"{sql_words(node)}: wrong number of arguments to {name}")
        return binder(self, name, node, ctx)

    def _anonymous_field(self, name, node, ctx) -> Expr:
        args, options = self._field_operands([self.bind_expr(e, ctx) for e in node.expressions], name)
        return self._fold(Call("field", args, T.BIGINT, options))

    def _anonymous_find_in_set(self, name, node, ctx) -> Expr:
        args = [self._string_arg(e, ctx) for e in node.expressions]
        name_of = common_collation(args, name)
        return self._fold(Call("find_in_set", tuple(args), T.BIGINT,
                               () if collation.is_binary(name_of) else (name_of,)))

    def _anonymous_strcmp(self, name, node, ctx) -> Expr:
        args = [self._string_arg(e, ctx) for e in node.expressions]
        name_of = common_collation(args, name)
        return self._fold(Call("strcmp", tuple(args), T.BIGINT,
                               () if collation.is_binary(name_of) else (name_of,)))

    def _anonymous_conv(self, name, node, ctx) -> Expr:
        first = self.bind_expr(node.expressions[0], ctx)
        # a number is read as its text: CONV(1.67, 10, 16) reads '1.67' up to the point
        text = first if first.type.kind == "string" else self.coerce(first, T.TEXT)
        bases = {"BIN": (2,), "OCT": (8,)}.get(name)
        if bases is None:
            from_base, to_base = (self._int_arg(e, ctx) for e in node.expressions[1:])
        else:
            from_base, to_base = Literal(10, T.BIGINT), Literal(bases[0], T.BIGINT)
        return self._fold(Call("conv", (text, from_base, to_base), T.TEXT))

    def _anonymous_string_function(self, name, node, ctx) -> Expr:
        op, result = {"CRC32": ("crc32", T.BIGINT), "QUOTE": ("quote", T.TEXT), "ORD": ("ord", T.BIGINT),
                      "OCTET_LENGTH": ("octet_length", T.BIGINT)}[name]
        return self._fold(Call(op, (self._string_arg(node.expressions[0], ctx),), result))

    def _anonymous_weekday(self, name, node, ctx) -> Expr:
        return self._fold(Call("weekday", (self._datetime_arg(node.expressions[0], ctx, name),), T.BIGINT))

    def _anonymous_yearweek(self, name, node, ctx) -> Expr:
        return self._week_function(node, ctx, "yearweek",
                                   node.expressions[1] if len(node.expressions) > 1 else None)

    def _anonymous_makedate(self, name, node, ctx) -> Expr:
        args = tuple(self._int_arg(e, ctx) for e in node.expressions)
        return self._fold(Call("makedate", args, T.DATE))

    def _anonymous_from_days(self, name, node, ctx) -> Expr:
        return self._fold(Call("from_days", (self._int_arg(node.expressions[0], ctx),), T.DATE))

    def _anonymous_to_seconds(self, name, node, ctx) -> Expr:
        return self._fold(Call("to_seconds", (self._datetime_arg(node.expressions[0], ctx, name),), T.BIGINT))

    def _anonymous_microsecond(self, name, node, ctx) -> Expr:
        return self._time_part(node, ctx, "MICROSECOND")

    def _anonymous_adddate(self, name, node, ctx) -> Expr:
        """ADDDATE(d, n) / ADDDATE(d, INTERVAL ...): DATE_ADD's (SUBDATE: DATE_SUB's) other spellings."""
        d, amount = node.expressions
        shifted = (exp.DateAdd if name == "ADDDATE" else exp.DateSub)(this=d, expression=amount)
        return self.bind_expr(shifted, ctx)


_ANONYMOUS = {
    "FIELD": LibraryBinding._anonymous_field, "FIND_IN_SET": LibraryBinding._anonymous_find_in_set,
    "STRCMP": LibraryBinding._anonymous_strcmp, "CONV": LibraryBinding._anonymous_conv,
    "BIN": LibraryBinding._anonymous_conv, "OCT": LibraryBinding._anonymous_conv,
    "CRC32": LibraryBinding._anonymous_string_function, "QUOTE": LibraryBinding._anonymous_string_function,
    "ORD": LibraryBinding._anonymous_string_function, "OCTET_LENGTH": LibraryBinding._anonymous_string_function,
    "WEEKDAY": LibraryBinding._anonymous_weekday, "YEARWEEK": LibraryBinding._anonymous_yearweek,
    "MAKEDATE": LibraryBinding._anonymous_makedate, "FROM_DAYS": LibraryBinding._anonymous_from_days,
    "TO_SECONDS": LibraryBinding._anonymous_to_seconds, "MICROSECOND": LibraryBinding._anonymous_microsecond,
    "ADDDATE": LibraryBinding._anonymous_adddate, "SUBDATE": LibraryBinding._anonymous_adddate,
    "CHARSET": LibraryBinding._anonymous_charset, "COERCIBILITY": LibraryBinding._anonymous_charset,
}
_ARITY = {"FIELD": (2, 10**6), "FIND_IN_SET": (2, 2), "STRCMP": (2, 2), "CONV": (3, 3), "BIN": (1, 1),
          "OCT": (1, 1), "CRC32": (1, 1), "QUOTE": (1, 1), "ORD": (1, 1), "OCTET_LENGTH": (1, 1),
          "WEEKDAY": (1, 1), "YEARWEEK": (1, 2), "MAKEDATE": (2, 2), "FROM_DAYS": (1, 1), "TO_SECONDS": (1, 1),
          "MICROSECOND": (1, 1), "ADDDATE": (2, 2), "SUBDATE": (2, 2), "CHARSET": (1, 1), "COERCIBILITY": (1, 1)}
