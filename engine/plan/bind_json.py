"""JSON functions: JSON_EXTRACT / ``->``, ``->>``, JSON_UNQUOTE, JSON_VALID, JSON_TYPE, JSON_LENGTH,
JSON_KEYS, JSON_QUOTE, JSON_OBJECT, JSON_ARRAY, CAST(... AS JSON), and SingleStore's
JSON_EXTRACT_STRING / _BIGINT / _DOUBLE / _JSON. A mixin of :class:`engine.plan.binder.Binder`; the
executor's half is engine/exec/json_functions.py.

A JSON result has the type JSON (a string type), so JSON_OBJECT / JSON_ARRAY embed it as JSON, not as a
quoted string, as MySQL does.
"""
from __future__ import annotations

from sqlglot import exp

from engine import types as T
from engine.errors import BindError, UnsupportedError
from engine.core.expressions import Call, Expr, Literal
from engine.plan.sql_words import sql_words


def is_json(e: Expr) -> bool:
    return e.type.kind == "string" and e.type.name == "JSON"


class JsonBinding:
    def _json_document(self, node, ctx) -> Expr:
        e = self.bind_expr(node, ctx)
        if e.type.kind in ("string", "null"):
            return e
        raise UnsupportedError(f"a JSON function over {e.type} (a JSON document is text): {sql_words(node.parent)}")

    def _json_path(self, node, ctx) -> Expr:
        if isinstance(node, exp.JSONPath):          # sqlglot parsed the literal: its MySQL text, unquoted
            text = node.sql(dialect="mysql")
            return Literal(text[1:-1].replace("''", "'"), T.TEXT)
        path = self.bind_expr(node, ctx)
        return path if path.type.kind in ("string", "null") else self.coerce(path, T.TEXT)

    def _bind_JSONExtract(self, node, ctx) -> Expr:
        paths = [node.expression] + list(node.expressions or [])
        args = (self._json_document(node.this, ctx),) + tuple(self._json_path(p, ctx) for p in paths)
        return self._fold(Call("json_extract", args, T.JSON))

    def _bind_Lambda(self, node, ctx) -> Expr:
        """``j->'$.k'`` as an argument of a function sqlglot does not know (JSON_ARRAY(j->'$.k')): sqlglot
        reads it as a lambda; MySQL has no lambdas, so it is the JSON arrow it looks like."""
        params = node.expressions
        if len(params) == 1 and isinstance(node.this, exp.Literal) and node.this.is_string:
            return self._bind_JSONExtract(exp.JSONExtract(this=exp.column(params[0].name), expression=node.this), ctx)
        raise UnsupportedError(f"{sql_words(node)} (lambda expressions)")

    def _bind_JSONExtractScalar(self, node, ctx) -> Expr:
        if node.expressions:
            raise BindError(f"{sql_words(node)}: ->> takes one path")
        args = (self._json_document(node.this, ctx), self._json_path(node.expression, ctx))
        return self._fold(Call("json_unquote_extract", args, T.TEXT))

    def _bind_JSONType(self, node, ctx) -> Expr:
        return self._fold(Call("json_type", (self._json_document(node.this, ctx),), T.TEXT))

    def _bind_JSONKeys(self, node, ctx) -> Expr:
        args = (self._json_document(node.this, ctx),)
        if node.expression is not None:
            args += (self._json_path(node.expression, ctx),)
        return self._fold(Call("json_keys", args, T.JSON))

    def _bind_JSONObject(self, node, ctx) -> Expr:
        if node.args.get("null_handling") or node.args.get("unique_keys") or node.args.get("return_type"):
            raise UnsupportedError(f"{sql_words(node)}: JSON_OBJECT options")
        args, kinds = [], []
        for pair in node.expressions:
            if not isinstance(pair, exp.JSONKeyValue):
                raise BindError(f"{sql_words(node)}: JSON_OBJECT takes key, value pairs")
            key = self.bind_expr(pair.this, ctx)
            value, kind = self._json_member(pair.expression, ctx)
            args += [key if key.type.kind == "string" else self.coerce(key, T.TEXT), value]
            kinds.append(kind)
        return self._fold(Call("json_object", tuple(args), T.JSON, tuple(kinds)))

    def _json_member(self, node, ctx) -> tuple[Expr, str]:
        """A value put into JSON_OBJECT / JSON_ARRAY, and how it is written: 'json', 'string', 'bool' or
        'number'."""
        value = self.bind_expr(node, ctx)
        if is_json(value):
            return value, "json"
        if value.type.kind == "bool":
            return value, "bool"
        if value.type.kind in ("int", "decimal", "float", "null"):
            return value, "number"
        return (value if value.type.kind == "string" else self.coerce(value, T.TEXT)), "string"

    def cast_to_json(self, value: Expr) -> Expr:
        """CAST(x AS JSON): text is checked (and stays as written), other values become JSON scalars."""
        if is_json(value):
            return value
        if value.type.kind in ("string", "null"):
            return self._fold(Call("json_checked", (value,), T.JSON))
        member, kind = (value, "bool") if value.type.kind == "bool" else \
            (value, "number") if value.type.kind in ("int", "decimal", "float") else (self.coerce(value, T.TEXT), "string")
        return self._fold(Call("json_scalar", (member,), T.JSON, (kind,)))

    # --- names sqlglot leaves anonymous -------------------------------------------------------------------
    def bind_json_function(self, name: str, node: exp.Anonymous, ctx):
        """MySQL's and SingleStore's JSON functions sqlglot does not parse into classes; None for another name."""
        args = node.expressions
        if name in ("JSON_UNQUOTE", "JSON_VALID", "JSON_QUOTE"):
            self._arity(node, name, 1, 1)
            op, result = {"JSON_UNQUOTE": ("json_unquote", T.TEXT), "JSON_VALID": ("json_valid", T.BOOLEAN),
                          "JSON_QUOTE": ("json_quote", T.JSON)}[name]
            value = self.bind_expr(args[0], ctx)
            value = value if value.type.kind in ("string", "null") else self.coerce(value, T.TEXT)
            return self._fold(Call(op, (value,), result))
        if name == "JSON_LENGTH":
            self._arity(node, name, 1, 2)
            call_args = (self._json_document(args[0], ctx),) + tuple(self._json_path(a, ctx) for a in args[1:])
            return self._fold(Call("json_length", call_args, T.BIGINT))
        if name == "JSON_ARRAY":
            members = [self._json_member(a, ctx) for a in args]
            return self._fold(Call("json_array", tuple(m for m, _ in members), T.JSON, tuple(k for _, k in members)))
        typed = {"JSON_EXTRACT_STRING": ("string", T.TEXT), "JSON_EXTRACT_BIGINT": ("bigint", T.BIGINT),
                 "JSON_EXTRACT_DOUBLE": ("double", T.DOUBLE), "JSON_EXTRACT_JSON": ("json", T.JSON)}.get(name)
        if typed is not None:
            self._arity(node, name, 1, 10**4)
            keys = tuple(self.bind_expr(a, ctx) for a in args[1:])
            keys = tuple(k if k.type.kind in ("string", "int", "null") else self.coerce(k, T.TEXT) for k in keys)
            return self._fold(Call("json_extract_typed", (self._json_document(args[0], ctx),) + keys, typed[1],
                                   (typed[0],)))
        if name.startswith("JSON_"):
            raise UnsupportedError(f"function {name}() is not supported")
        return None

    @staticmethod
    def _arity(node, name: str, low: int, high: int) -> None:
        if not low <= len(node.expressions) <= high:
            raise BindError(f"{sql_words(node)}: wrong number of arguments to {name}")
