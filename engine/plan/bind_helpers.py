"""The binder's small helpers over sqlglot nodes and bound literals, and its operator tables."""
from __future__ import annotations

import decimal
import re

from sqlglot import exp

from engine import types as T
from engine.errors import BadDataError, TypeMismatchError
from engine.core.expressions import Expr, Literal
from engine.plan.bind_context import AGGREGATES, node_name
from engine.plan.logical import (Field)
from engine.plan.sql_words import generated


_BINARY_OPS = {
    exp.Add: "add", exp.Sub: "subtract", exp.Mul: "multiply", exp.Div: "divide", exp.Mod: "mod",
    exp.IntDiv: "int_divide",
    exp.EQ: "eq", exp.NEQ: "ne", exp.LT: "lt", exp.LTE: "le", exp.GT: "gt", exp.GTE: "ge",
    exp.NullSafeEQ: "null_safe_eq", exp.And: "and", exp.Or: "or",
}
_COMPARISON_OPS = {"eq", "ne", "lt", "le", "gt", "ge", "null_safe_eq"}
_QUANTIFIABLE = {"eq": "ne", "ne": "eq", "lt": "ge", "ge": "lt", "gt": "le", "le": "gt"}   # op: its negation
_COMPARISONS = {exp.EQ: "eq", exp.NEQ: "ne", exp.LT: "lt", exp.LTE: "le", exp.GT: "gt", exp.GTE: "ge"}

# time units of INTERVAL / TIMESTAMPADD: added to a DATETIME (a DATE becomes one, as in MySQL)
_MICROSECONDS_PER = {"HOUR": 3_600_000_000, "MINUTE": 60_000_000, "SECOND": 1_000_000, "MICROSECOND": 1}

_SIMPLE_FUNCTIONS = {
    exp.Upper: ("upper", "string"), exp.Lower: ("lower", "string"), exp.Reverse: ("reverse", "string"),
    exp.Abs: ("abs", "same"), exp.Sqrt: ("sqrt", "float"), exp.Ln: ("ln", "float"), exp.Exp: ("exp", "float"),
    exp.Pow: ("power", "float"), exp.Floor: ("floor", "int"), exp.Ceil: ("ceil", "int"),
    exp.Sign: ("sign", "int"),
}


def _split_and(node) -> list:
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.And):
        return _split_and(node.this) + _split_and(node.expression)
    return [node]


def _unparen(node):
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def _unalias(node):
    return node.this if isinstance(node, exp.Alias) else node


def _contains_aggregate(node) -> bool:
    if node is None:
        return False
    for sub in node.walk():
        if isinstance(sub, tuple(AGGREGATES)):
            if isinstance(sub.parent, exp.Window) and sub.parent.this is sub:
                continue        # SUM(x) OVER (...) is a window function (its argument may aggregate)
            if sub is node:
                return True
            # aggregates inside a nested subquery belong to that subquery
            parent = sub.parent
            nested = False
            while parent is not None and parent is not node:
                if isinstance(parent, (exp.Subquery, exp.Select)):
                    nested = True
                    break
                parent = parent.parent
            if not nested:
                return True
    return False


def _has_aggregate(sel: exp.Select) -> bool:
    return any(_contains_aggregate(e) for e in sel.expressions)


def _display_name(node) -> str:
    if isinstance(node, exp.Column):
        return node.name
    return generated(node)


def _column_node(f: Field) -> exp.Expression:
    """A placeholder sqlglot node that binds straight back to ``f`` (used for ``*`` expansion)."""
    node = exp.Column(this=exp.to_identifier(f.name))
    node.meta["canopy_field"] = f
    return node


def _temporal_of_string(s: Expr, other: T.SqlType) -> T.SqlType:
    """The type a string compared with a DATE or DATETIME is read as. MySQL compares a DATE with a
    constant that has a time part as DATETIMEs: DATE '2024-01-01' < '2024-01-01 10:00:00' is true."""
    if other.kind == "date" and isinstance(s, Literal) and isinstance(s.value, str) and len(s.value.strip()) > 10:
        return T.DATETIME
    return other


def _fits_exactly(literal: Literal, target: T.SqlType) -> bool:
    """Whether a numeric constant converts to ``target`` without changing its value (so a comparison
    can cast the constant once instead of casting the column on every row)."""
    value = literal.value
    if value is None or isinstance(value, bool) or literal.type.kind not in ("int", "decimal"):
        return False
    bounds = T.integer_range(target)
    if bounds is not None and not (bounds[0] <= value <= bounds[1]):
        return False        # -1 against an UNSIGNED column: compared as numbers, not cast (and wrapped)
    if target.kind == "int":
        bits = target.bits
        # an integer beyond BIGINT is typed DECIMAL(p, 0) but is still a Python int
        return (isinstance(value, int) or value == value.to_integral_value()) and \
            -(1 << (bits - 1)) <= int(value) < (1 << (bits - 1))
    if target.kind == "decimal":
        d = decimal.Decimal(value)
        if d != d.quantize(decimal.Decimal(1).scaleb(-target.scale)):
            return False
        return abs(d) < decimal.Decimal(10) ** (target.precision - target.scale)
    return False


_NUMBER_PREFIX = re.compile(r"\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def _round_digits(digits: Literal, node) -> int:
    """ROUND's constant number of digits as MySQL reads it: a number rounded to an integer (1.7 is 2),
    a string's leading number ('1' is 1, 'abc' is 0)."""
    value = digits.value
    if isinstance(value, bool) or digits.type.kind in ("int", "bool"):
        return int(value)
    if isinstance(value, str):
        match = _NUMBER_PREFIX.match(value)
        value = match.group(0).strip() if match else "0"
    elif digits.type.kind not in ("decimal", "float"):
        raise TypeMismatchError(f"ROUND needs a number of digits, got {digits.type} in {node_name(node)}")
    try:
        number = decimal.Decimal(value) if isinstance(value, str) else decimal.Decimal(repr(value)) \
            if isinstance(value, float) else decimal.Decimal(value)
        # past 400 digits either way nothing changes any more (a DOUBLE has 308 at most)
        return max(-400, min(400, int(number.to_integral_value(rounding=decimal.ROUND_HALF_UP))))
    except (decimal.InvalidOperation, ValueError, OverflowError):
        raise BadDataError(f"ROUND's number of digits {value!r} is not a number") from None
