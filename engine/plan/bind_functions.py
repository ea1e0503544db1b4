"""Binding of MySQL's string function library (engine/exec/string_functions.py): sqlglot's MySQL
dialect parses each to its own expression class; here they get their argument coercions and result
types. A mixin of :class:`engine.plan.binder.Binder` (it uses ``bind_expr``, ``_string_arg``,
``_int_arg`` and ``_fold``)."""
from __future__ import annotations

from engine import types as T
from engine.errors import BindError, UnsupportedError
from engine.plan.expressions import Call, Literal


class FunctionBinding:
    def _bind_ConcatWs(self, node, ctx):
        args = tuple(self._string_arg(e, ctx) for e in node.expressions)
        if len(args) < 2:
            raise UnsupportedError("CONCAT_WS needs a separator and at least one string")
        return self._fold(Call("concat_ws", args, T.TEXT))

    def _bind_Pad(self, node, ctx):
        fill = node.args.get("fill_pattern")
        if fill is None:
            raise UnsupportedError("LPAD / RPAD without a fill string")
        args = (self._string_arg(node.this, ctx), self._int_arg(node.expression, ctx), self._string_arg(fill, ctx))
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
        bits = self._int_arg(bits, ctx) if bits is not None else Literal(256, T.BIGINT)
        return self._fold(Call("sha2", (self._string_arg(node.this, ctx), bits), T.TEXT))

    def _bind_Hex(self, node, ctx):
        a = self.bind_expr(node.this, ctx)
        if a.type.kind in ("int", "bool"):
            return self._fold(Call("hex_int", (self.coerce(a, T.BIGINT),), T.TEXT))
        if a.type.kind not in ("string", "null"):
            raise UnsupportedError(f"HEX of a {a.type} value (only strings and integers)")
        return self._fold(Call("hex", (self._string_arg(node.this, ctx),), T.TEXT))

    def _bind_RegexpLike(self, node, ctx):
        if node.args.get("flag") is not None:
            raise UnsupportedError("REGEXP_LIKE with a match type argument")
        args = (self._string_arg(node.this, ctx), self._string_arg(node.expression, ctx))
        return self._fold(Call("regexp_like", args, T.BOOLEAN))

    def _bind_RegexpReplace(self, node, ctx):
        extra = [k for k in ("position", "occurrence", "modifiers") if node.args.get(k) is not None]
        if extra:
            raise UnsupportedError("REGEXP_REPLACE with position / occurrence / match type arguments")
        if node.args.get("replacement") is None:
            raise BindError("REGEXP_REPLACE takes 3 arguments")
        args = (self._string_arg(node.this, ctx), self._string_arg(node.expression, ctx),
                self._string_arg(node.args["replacement"], ctx))
        return self._fold(Call("regexp_replace", args, T.TEXT))

    def _bind_RegexpSubstr(self, node, ctx):
        extra = [k for k in ("position", "occurrence", "parameters", "group") if node.args.get(k) is not None]
        if extra:
            raise UnsupportedError("REGEXP_SUBSTR with position / occurrence / match type arguments")
        args = (self._string_arg(node.this, ctx), self._string_arg(node.expression, ctx))
        return self._fold(Call("regexp_substr", args, T.TEXT))

