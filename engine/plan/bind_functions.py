"""Binding of MySQL's string and date function library (engine/exec/string_functions.py and
date_functions.py): sqlglot's MySQL dialect parses each to its own expression class; here they get
their argument coercions and result types. A mixin of :class:`engine.plan.binder.Binder` (it uses
``bind_expr``, ``_string_arg``, ``_int_arg``, ``_interval`` and ``_fold``)."""
from __future__ import annotations

from sqlglot import exp

from engine import types as T
from engine.errors import BindError, TypeMismatchError, UnsupportedError
from engine.date_formats import format_pieces
from engine.core.expressions import Call, Literal


class FunctionBinding:
    def _constant_operand(self, e, node, what: str):
        """The executors take patterns, formats and lengths as constants: refuse others here, quoting
        the call as written."""
        if not isinstance(e, Literal):
            raise UnsupportedError(f"{node.sql(dialect='mysql')[:80]} with a non-constant {what}")
        return e

    def _bind_ConcatWs(self, node, ctx):
        args = tuple(self._string_arg(e, ctx) for e in node.expressions)
        if len(args) < 2:
            raise UnsupportedError("CONCAT_WS needs a separator and at least one string")
        return self._fold(Call("concat_ws", args, T.TEXT))

    def _bind_Pad(self, node, ctx):
        fill = node.args.get("fill_pattern")
        if fill is None:
            raise UnsupportedError("LPAD / RPAD without a fill string")
        length = self._constant_operand(self._int_arg(node.expression, ctx), node, "length")
        args = (self._string_arg(node.this, ctx), length,
                self._constant_operand(self._string_arg(fill, ctx), node, "fill string"))
        return self._fold(Call("lpad" if node.args.get("is_left") else "rpad", args, T.TEXT))

    def _bind_Repeat(self, node, ctx):
        args = (self._string_arg(node.this, ctx), self._int_arg(node.args["times"], ctx))
        return self._fold(Call("repeat", args, T.TEXT))

    def _bind_MD5(self, node, ctx):
        return self._fold(Call("md5", (self._string_arg(node.this, ctx),), T.TEXT))

    def _bind_SHA(self, node, ctx):
        return self._fold(Call("sha1", (self._string_arg(node.this, ctx),), T.TEXT))

    def _bind_SHA2(self, node, ctx):
        bits = node.args.get("length")
        if bits is None:
            bits = Literal(256, T.BIGINT)
        else:
            bits = self._constant_operand(self._int_arg(bits, ctx), node, "length")
        return self._fold(Call("sha2", (self._string_arg(node.this, ctx), bits), T.TEXT))

    def _bind_Hex(self, node, ctx):
        a = self.bind_expr(node.this, ctx)
        if a.type.kind == "float":          # a DOUBLE: rounded half away from zero (MariaDB: HEX(2.5) is 3)
            return self._fold(Call("hex_int", (a,), T.TEXT))
        if a.type.kind in ("int", "bool", "decimal"):     # a number: its rounded BIGINT's digits
            return self._fold(Call("hex_int", (self.coerce(a, T.BIGINT),), T.TEXT))
        if a.type.kind not in ("string", "null"):
            raise UnsupportedError(f"HEX of a {a.type} value (only strings and integers)")
        return self._fold(Call("hex", (self._string_arg(node.this, ctx),), T.TEXT))

    def _bind_RegexpLike(self, node, ctx):
        if node.args.get("flag") is not None:
            raise UnsupportedError("REGEXP_LIKE with a match type argument")
        args = (self._string_arg(node.this, ctx),
                self._constant_operand(self._string_arg(node.expression, ctx), node, "pattern"))
        return self._fold(Call("regexp_like", args, T.BOOLEAN))

    def _bind_RegexpReplace(self, node, ctx):
        extra = [k for k in ("position", "occurrence", "modifiers") if node.args.get(k) is not None]
        if extra:
            raise UnsupportedError("REGEXP_REPLACE with position / occurrence / match type arguments")
        if node.args.get("replacement") is None:
            raise BindError("REGEXP_REPLACE takes 3 arguments")
        args = (self._string_arg(node.this, ctx),
                self._constant_operand(self._string_arg(node.expression, ctx), node, "pattern"),
                self._constant_operand(self._string_arg(node.args["replacement"], ctx), node, "replacement"))
        return self._fold(Call("regexp_replace", args, T.TEXT))

    def _bind_RegexpSubstr(self, node, ctx):
        extra = [k for k in ("position", "occurrence", "parameters", "group") if node.args.get(k) is not None]
        if extra:
            raise UnsupportedError("REGEXP_SUBSTR with position / occurrence / match type arguments")
        args = (self._string_arg(node.this, ctx),
                self._constant_operand(self._string_arg(node.expression, ctx), node, "pattern"))
        return self._fold(Call("regexp_substr", args, T.TEXT))


    # --- dates (engine/exec/date_functions.py) -----------------------------------------------------
    def _datetime_arg(self, node, ctx, what: str):
        if isinstance(node, (exp.TsOrDsToDate, exp.TsOrDsToTimestamp)):
            node = node.this            # sqlglot wraps the argument of DATE_FORMAT / WEEK / ...
        d = self.bind_expr(node, ctx)
        if d.type.kind in ("string", "null"):
            return self.coerce(d, T.DATETIME)
        if d.type.kind == "date":
            return self.coerce(d, T.DATETIME)
        if d.type.kind != "datetime":
            raise TypeMismatchError(f"{what} needs a date or datetime, got {d.type}")
        return d

    def _bind_TimeToStr(self, node, ctx):
        d = self._datetime_arg(node.this, ctx, "DATE_FORMAT")
        fmt = self._constant_operand(self._string_arg(node.args["format"], ctx), node, "format")
        if fmt.value is not None:
            format_pieces(fmt.value)            # an unimplemented directive is refused now, by name
        return self._fold(Call("date_format", (d, fmt), T.TEXT))

    def _bind_Dayname(self, node, ctx):
        d = self._datetime_arg(node.this, ctx, "DAYNAME")
        return self._fold(Call("date_format", (d, Literal("%A", T.TEXT)), T.TEXT))

    def _bind_StrToDate(self, node, ctx):
        return self._str_to_date(node, ctx, T.DATE)

    def _bind_StrToTime(self, node, ctx):
        return self._str_to_date(node, ctx, T.DATETIME)

    def _str_to_date(self, node, ctx, result_type):
        args = (self._string_arg(node.this, ctx),
                self._constant_operand(self._string_arg(node.args["format"], ctx), node, "format"))
        return self._fold(Call("str_to_date", args, result_type))

    def _bind_TimestampDiff(self, node, ctx):
        unit = node.unit.name.upper() if node.unit is not None else "DAY"
        if unit not in ("MICROSECOND", "SECOND", "MINUTE", "HOUR", "DAY", "WEEK", "MONTH", "QUARTER", "YEAR"):
            raise UnsupportedError(f"TIMESTAMPDIFF({unit}, ...)")
        start = self._datetime_arg(node.expression, ctx, "TIMESTAMPDIFF")
        end = self._datetime_arg(node.this, ctx, "TIMESTAMPDIFF")
        return self._fold(Call("timestampdiff", (start, end), T.BIGINT, (unit,)))

    def _bind_TimestampAdd(self, node, ctx):
        d = self.bind_expr(node.this, ctx)
        if d.type.kind in ("string", "null"):
            d = self.coerce(d, T.DATETIME)
        interval = exp.Interval(this=node.expression, unit=node.args.get("unit") or exp.var("DAY"))
        return self._interval(d, interval, 1, ctx)

    def _bind_UnixToTime(self, node, ctx):
        if node.args.get("format") is not None:
            raise UnsupportedError("FROM_UNIXTIME with a format argument")
        return self._fold(Call("from_unixtime", (self._int_arg(node.this, ctx),), T.DATETIME))

    def _bind_LastDay(self, node, ctx):
        if node.args.get("unit") is not None:
            raise UnsupportedError("LAST_DAY with a unit")
        d = self._datetime_arg(node.this, ctx, "LAST_DAY")
        return self._fold(Call("last_day", (d,), T.DATE))

    def _bind_DateTrunc(self, node, ctx):
        unit = node.args.get("unit")
        name = (unit.name if unit is not None else "").upper()
        if name not in ("YEAR", "QUARTER", "MONTH", "WEEK", "DAY", "HOUR", "MINUTE", "SECOND"):
            raise UnsupportedError(f"DATE_TRUNC('{name.lower()}', ...)")
        d = self._datetime_arg(node.this, ctx, "DATE_TRUNC")
        return self._fold(Call("date_trunc", (d,), T.DATETIME, (name,)))

    def bind_anonymous_function(self, name, node, ctx):
        """MySQL functions sqlglot leaves anonymous; None when the name is not one of them."""
        if name == "UNIX_TIMESTAMP":
            if len(node.expressions) > 1:
                raise UnsupportedError("UNIX_TIMESTAMP with more than one argument")
            d = self._datetime_arg(node.expressions[0], ctx, "UNIX_TIMESTAMP") if node.expressions \
                else Call("now", (), T.DATETIME)
            return self._fold(Call("unix_timestamp", (d,), T.BIGINT)) if node.expressions \
                else Call("unix_timestamp", (d,), T.BIGINT)
        return self.bind_library_function(name, node, ctx)
