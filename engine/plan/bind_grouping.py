"""GROUP BY with grouping sets: ``ROLLUP``, ``CUBE``, ``GROUPING SETS``, MySQL's ``WITH ROLLUP`` and
their mixes, and ``GROUPING(...)``.

A GROUP BY clause is a list of elements; each element stands for a list of grouping sets (a plain
expression for one set of itself, ``ROLLUP(a, b)`` for ``(a, b), (a), ()``, ``CUBE(a, b)`` for every
subset, ``GROUPING SETS (...)`` for the union of its members'), and the clause means the cross product
of its elements' lists, in order, duplicates kept (as the SQL standard, PostgreSQL and DuckDB do).
``GROUP BY a, b WITH ROLLUP`` is ``GROUP BY ROLLUP(a, b)``.

The result is the distinct key expressions (the finest grouping: what the leaves aggregate by once) and
each grouping set as a tuple of indices into them. The Aggregate then also outputs a grouping id, bit
``i`` set where key ``i`` is rolled up (NULL) in that row: ``GROUPING(x, y)`` reads it, with MySQL's
and DuckDB's bit order (``GROUPING(x) << 1 | GROUPING(y)``).
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations, product
from typing import Callable, Optional

from sqlglot import exp

from engine import types as T
from engine.errors import BindError, UnsupportedError
from engine.core.expressions import Call, Expr, Literal
from engine.plan.logical import Field

# One grouping set while expanding: the sqlglot key nodes it groups by, in order.
_Set = tuple


@dataclass(frozen=True)
class GroupingKeys:
    """What GROUPING(...) needs: the key expressions and the Aggregate's grouping-id column (None for
    a plain GROUP BY, where nothing is ever rolled up)."""

    keys: tuple[Expr, ...]
    grouping_id: Optional[Field]


def expand_group_by(group: exp.Group) -> tuple[list[exp.Expression], Optional[list[_Set]]]:
    """(the key nodes in order of first appearance, the grouping sets as lists of nodes), or
    (keys, None) for a plain GROUP BY."""
    elements = list(group.expressions)
    plain = all(not isinstance(e, (exp.Rollup, exp.Cube, exp.GroupingSets)) for e in elements)
    with_rollup = bool(group.args.get("rollup")) and all(isinstance(r, exp.Rollup) and not r.expressions
                                                         for r in group.args["rollup"])
    extra = [group.args.get(name) for name in ("rollup", "cube", "grouping_sets")]
    if not with_rollup:
        for name, nodes in zip(("rollup", "cube", "grouping_sets"), extra):
            elements.extend(nodes or [])
            plain = plain and not nodes
    elif group.args.get("cube") or group.args.get("grouping_sets"):
        raise UnsupportedError("WITH ROLLUP combined with CUBE or GROUPING SETS")
    if with_rollup:
        if not plain:
            raise UnsupportedError("WITH ROLLUP combined with ROLLUP, CUBE or GROUPING SETS")
        sets = _rollup(elements)
    elif plain:
        return elements, None
    else:
        sets = [()]
        for element in elements:
            sets = [left + right for left, right in product(sets, _sets_of(element))]
    keys: list[exp.Expression] = []
    for s in sets:
        for node in s:
            if not any(node == k for k in keys):
                keys.append(node)
    return keys, sets


def _rollup(nodes: list) -> list[_Set]:
    return [tuple(nodes[:n]) for n in range(len(nodes), -1, -1)]


def _sets_of(element: exp.Expression) -> list[_Set]:
    if isinstance(element, exp.Rollup):
        return _rollup([_unwrap(e) for e in element.expressions])
    if isinstance(element, exp.Cube):
        nodes = [_unwrap(e) for e in element.expressions]
        if len(nodes) > 12:
            raise UnsupportedError(f"CUBE of {len(nodes)} expressions (at most 12)")
        return [tuple(c) for n in range(len(nodes), -1, -1) for c in combinations(nodes, n)]
    if isinstance(element, exp.GroupingSets):
        out: list[_Set] = []
        for member in element.expressions:
            out.extend(_sets_of(member))
        return out
    if isinstance(element, exp.Tuple):            # (a, b) inside GROUPING SETS; () is the empty set
        sets = [()]
        for e in element.expressions:
            sets = [left + right for left, right in product(sets, _sets_of(e))]
        return sets
    if isinstance(element, exp.Paren):
        return _sets_of(element.this)
    return [(element,)]


def _unwrap(node):
    while isinstance(node, exp.Paren):
        node = node.this
    return node


def bind_group_keys(group: exp.Group, bind_item: Callable[[exp.Expression], Expr], new_id: Callable[[str], str]
                    ) -> tuple[list[tuple[Field, Expr]], tuple[tuple[int, ...], ...]]:
    """The Aggregate's key fields (distinct bound expressions) and its grouping sets as sorted tuples of
    key indices (empty for a plain GROUP BY). ``bind_item`` binds one GROUP BY item (positions and
    select aliases resolved), ``new_id`` makes a field id from a name."""
    nodes, sets = expand_group_by(group)
    key_fields: list[tuple[Field, Expr]] = []
    index_of_node: list[int] = []
    for node in nodes:
        expr = bind_item(node)
        for i, (_, k) in enumerate(key_fields):
            if k == expr:
                index_of_node.append(i)
                break
        else:
            name = (node.name if isinstance(node, exp.Column) else "") or "group"
            index_of_node.append(len(key_fields))
            key_fields.append((Field(new_id(name), name, expr.type), expr))
    if sets is None:
        return key_fields, ()
    out = []
    for s in sets:
        out.append(tuple(sorted({index_of_node[next(i for i, n in enumerate(nodes) if n == node)] for node in s})))
    return key_fields, tuple(out)


def grouping_call(args: list[Expr], info: Optional[GroupingKeys], sql: str) -> Expr:
    """GROUPING(a, b, ...) over the grouping-id column: bit (n-1-j) of the result is 1 where the j-th
    argument is rolled up in the row."""
    if info is None:
        raise BindError(f"{sql} needs a GROUP BY")
    if not args or len(args) > 62:
        raise BindError(f"{sql} takes 1 to 62 arguments")
    positions = []
    for a in args:
        matches = [i for i, k in enumerate(info.keys) if k == a]
        if not matches:
            raise BindError(f"the arguments of {sql} must be GROUP BY expressions; {a} is not")
        positions.append(matches[0])
    if info.grouping_id is None:
        return Literal(0, T.BIGINT)
    gid = info.grouping_id.ref()
    result: Optional[Expr] = None
    for j, position in enumerate(positions):
        bit: Expr = Call("mod", (Call("int_divide", (gid, Literal(1 << position, T.BIGINT)), T.BIGINT),
                                 Literal(2, T.BIGINT)), T.BIGINT)
        weight = len(positions) - 1 - j
        if weight:
            bit = Call("multiply", (bit, Literal(1 << weight, T.BIGINT)), T.BIGINT)
        result = bit if result is None else Call("add", (result, bit), T.BIGINT)
    return result
