"""PEP 249 ``pyformat`` parameters, bound into the parsed statement as literals.

``%s`` (positional) and ``%(name)s`` (named) markers outside string literals, quoted identifiers and
comments become named placeholders (``:canopy_p0``) before parsing; after parsing, each placeholder node
is replaced by a literal node built from the Python value. A value is therefore always one literal in the
tree: no value can change the statement's structure, whatever text it contains.
"""
from __future__ import annotations

import datetime
import decimal
import math
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from sqlglot import exp
from sqlglot.tokens import TokenType

from engine.errors import BindError, Error, ProgrammingError
from engine.sql import interruptible

PLACEHOLDER_PREFIX = "canopy_p"


class ParameterError(BindError):
    """Wrong number of parameters, a missing name, or a value of a type that cannot be bound."""


def mark_placeholders(sql: str, params: Optional[Sequence | Mapping]) -> tuple[str, list[Any]]:
    """Replace pyformat markers by numbered placeholders; return the text and the values in order.

    With ``params`` None the text is left alone (a literal ``%`` needs no doubling then), as PyMySQL does.

    >>> mark_placeholders("SELECT '%s', a FROM t WHERE b = %s AND c LIKE 'x%%'", (5,))
    ("SELECT '%s', a FROM t WHERE b = :canopy_p0 AND c LIKE 'x%'", [5])
    """
    if params is None:
        return sql, []
    if isinstance(params, (str, bytes)) or not isinstance(params, (Sequence, Mapping)):
        raise ProgrammingError(f"parameters must be a sequence or a mapping, not {type(params).__name__}")
    named = isinstance(params, Mapping)
    out: list[str] = []
    values: list[Any] = []
    used_positional = 0
    i, n = 0, len(sql)
    while i < n:
        c = sql[i]
        if c in ("'", '"', "`"):
            end = _end_of_quoted(sql, i)
            # As in Python's % formatting (and PyMySQL), %% is one percent everywhere once parameters
            # are given; a %s inside a literal stays text, since a value never goes inside a literal.
            out.append(sql[i:end].replace("%%", "%"))
            i = end
            continue
        if c == "-" and sql.startswith("--", i) or c == "#":
            end = sql.find("\n", i)
            end = n if end < 0 else end
            out.append(sql[i:end])
            i = end
            continue
        if c == "/" and sql.startswith("/*", i):
            end = sql.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(sql[i:end])
            i = end
            continue
        if c == "%" and i + 1 < n:
            nxt = sql[i + 1]
            if nxt == "%":
                out.append("%")
                i += 2
                continue
            if nxt == "s":
                if named:
                    raise ParameterError("the statement uses %s but the parameters are a mapping")
                # past the last parameter: keep counting markers, so the error below says how many
                values.append(params[used_positional] if used_positional < len(params) else None)
                used_positional += 1
                out.append(f":{PLACEHOLDER_PREFIX}{len(values) - 1}")
                i += 2
                continue
            if nxt == "(":
                close = sql.find(")s", i)
                if close < 0:
                    raise ParameterError(f"unterminated %(name)s marker at offset {i}")
                name = sql[i + 2:close]
                if not named:
                    raise ParameterError(f"the statement uses %({name})s but the parameters are a sequence")
                if name not in params:
                    raise ParameterError(f"no value for parameter {name!r}")
                values.append(params[name])
                out.append(f":{PLACEHOLDER_PREFIX}{len(values) - 1}")
                i = close + 2
                continue
        out.append(c)
        i += 1
    if not named and used_positional != len(params):
        raise ParameterError(
            f"the statement has {used_positional} %s markers but {len(params)} parameters were given")
    return "".join(out), values


def qmark_to_pyformat(sql: str) -> str:
    """A prepared statement's ``?`` markers as ``%s`` (MySQL's binary protocol numbers them by
    position), every other ``%`` doubled, so :func:`mark_placeholders` binds the values as literals.

    >>> qmark_to_pyformat("SELECT a FROM t WHERE b = ? AND c LIKE 'x%?' -- ?")
    "SELECT a FROM t WHERE b = %s AND c LIKE 'x%%?' -- ?"
    """
    out: list[str] = []
    i, n = 0, len(sql)
    while i < n:
        c = sql[i]
        if c in ("'", '"', "`"):
            end = _end_of_quoted(sql, i)
            out.append(sql[i:end].replace("%", "%%"))
            i = end
            continue
        if c == "-" and sql.startswith("--", i) or c == "#" or c == "/" and sql.startswith("/*", i):
            end = (sql.find("*/", i + 2) + 2 if c == "/" else sql.find("\n", i))
            end = n if end < (2 if c == "/" else 0) else end
            out.append(sql[i:end].replace("%", "%%"))
            i = end
            continue
        out.append("%s" if c == "?" else "%%" if c == "%" else c)
        i += 1
    return "".join(out)


# Literals after these tokens stay in the text: they are part of a type or a clause's syntax
# (DATE '1998-12-01', INTERVAL 90 DAY, LIMIT 10, GROUP BY 1, 2), not values a placeholder may stand for.
_KEEP_AFTER = frozenset({TokenType.DATE, TokenType.DATETIME, TokenType.TIMESTAMP, TokenType.TIME,
                         TokenType.INTERVAL, TokenType.LIMIT, TokenType.OFFSET, TokenType.ORDER_BY,
                         TokenType.GROUP_BY})
_QUERY_STARTS = ("select", "with", "(")
_TEMPLATES: dict[str, Optional[tuple[str, list[Any]]]] = {}
_MAX_TEMPLATES = 1024


def parameterize_literals(sql: str) -> Optional[tuple[str, list[Any]]]:
    """A query written with literals as a placeholder text and its values, for the plan cache
    (SingleStore parameterizes literals the same way so one plan serves ``WHERE i = 2`` and
    ``WHERE i = 3``); None for a statement that is not a query or has no literal to lift.

    Integer literals become ints, other numbers Decimals (their scale kept), strings strs. The caller
    checks that binding the values back gives the tree the original text parses to, so a literal that
    is syntax (``GROUP BY 1``, a charset introducer) only costs the cache, never the meaning.

    >>> parameterize_literals("SELECT COUNT(*) FROM t WHERE i = 2 AND s = 'x' LIMIT 5")
    ('SELECT COUNT(*) FROM t WHERE i = :canopy_p0 AND s = :canopy_p1 LIMIT 5', [2, 'x'])
    """
    if not sql.lstrip()[:6].lower().startswith(_QUERY_STARTS):
        return None
    try:
        return _TEMPLATES[sql]
    except KeyError:
        pass
    try:
        tokens = interruptible.tokenize(sql)
    except Error:           # statement_timeout / KILL QUERY while tokenizing
        raise
    except Exception:       # noqa: BLE001 - not tokenizable: the ordinary path reports the error
        template = None
    else:
        out, values, position, previous, ordinals = [], [], 0, None, False
        for token in tokens:
            kept = previous in _KEEP_AFTER or (ordinals and previous == TokenType.COMMA)
            value = _literal_value(token) if not kept else _NO_VALUE
            # GROUP BY 1, 2 / ORDER BY 2, 1: the ordinals go on through commas
            if token.token_type != TokenType.COMMA:
                ordinals = kept and previous in (TokenType.ORDER_BY, TokenType.GROUP_BY, TokenType.COMMA)
            previous = token.token_type
            if value is _NO_VALUE:
                continue
            out.append(sql[position:token.start])
            out.append(f":{PLACEHOLDER_PREFIX}{len(values)}")
            values.append(value)
            position = token.end + 1
        out.append(sql[position:])
        template = ("".join(out), values) if values else None
    if len(_TEMPLATES) >= _MAX_TEMPLATES:
        _TEMPLATES.pop(next(iter(_TEMPLATES)))
    _TEMPLATES[sql] = template
    return template


_NO_VALUE = object()


def _literal_value(token) -> Any:
    if token.token_type == TokenType.STRING:
        return token.text
    if token.token_type == TokenType.NUMBER:
        text = token.text
        if text.isdigit():
            return int(text)
        if "e" not in text.lower():
            try:
                return decimal.Decimal(text)
            except decimal.InvalidOperation:
                return _NO_VALUE
    return _NO_VALUE


def _end_of_quoted(sql: str, start: int) -> int:
    quote = sql[start]
    i = start + 1
    while i < len(sql):
        c = sql[i]
        if c == "\\" and quote != "`":
            i += 2
            continue
        if c == quote:
            if i + 1 < len(sql) and sql[i + 1] == quote:    # doubled quote inside the literal
                i += 2
                continue
            return i + 1
        i += 1
    return len(sql)


def bind_placeholders(tree: exp.Expression, values: list[Any]) -> exp.Expression:
    """Replace every ``:canopy_pN`` placeholder node of ``tree`` by the literal of ``values[N]``."""
    if not values:
        return tree

    placeholders = [node for node in tree.find_all(exp.Placeholder)
                    if str(node.this or "").startswith(PLACEHOLDER_PREFIX)]
    for node in placeholders:
        literal = to_literal_node(values[int(str(node.this)[len(PLACEHOLDER_PREFIX):])])
        if node is tree:
            return literal
        _replace_child(node, literal)
    return tree


def _replace_child(node: exp.Expression, new: exp.Expression) -> None:
    """``node.replace(new)`` in constant time: sqlglot's ``set`` re-parents every sibling in a list,
    which makes binding the 904 values of an IN list quadratic."""
    parent, key, index = node.parent, node.arg_key, node.index
    if index is None or not isinstance(parent.args.get(key), list):
        node.replace(new)
        return
    parent.args[key][index] = new
    new.parent, new.arg_key, new.index = parent, key, index
    ancestor = parent
    while ancestor is not None:          # cached hashes of the enclosing nodes are stale now
        ancestor._hash = None
        ancestor = ancestor.parent


def to_literal_node(value: Any) -> exp.Expression:
    """A sqlglot literal for a Python value (the binder types it like the same literal in SQL text)."""
    if value is None:
        return exp.Null()
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, int):
        return exp.Literal.number(str(value))
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise ParameterError(f"cannot bind the float {value!r}: SQL has no NaN or infinity literal")
        text = repr(value)
        return exp.Literal.number(text if "e" in text else text + "e0")     # the exponent makes it a DOUBLE
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            raise ParameterError(f"cannot bind the decimal {value}")
        return exp.Literal.number(format(value, "f"))
    if isinstance(value, str):
        return exp.Literal.string(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return exp.Literal.string(bytes(value).decode("utf-8", errors="replace"))
    if isinstance(value, datetime.datetime):
        return exp.Cast(this=exp.Literal.string(value.isoformat(sep=" ")), to=exp.DataType.build("DATETIME"))
    if isinstance(value, datetime.date):
        return exp.Cast(this=exp.Literal.string(value.isoformat()), to=exp.DataType.build("DATE"))
    if isinstance(value, datetime.time):
        return exp.Literal.string(value.isoformat())
    raise ParameterError(f"cannot bind a parameter of Python type {type(value).__name__}")
