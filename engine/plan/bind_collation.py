"""How the binder applies collations (engine/collation.py): which collation an operand has, and the
collation keys that comparisons, IN, LIKE, GROUP BY, DISTINCT, ORDER BY and MIN / MAX run on."""
from __future__ import annotations

from typing import Optional

from engine import collation
from engine.core.expressions import Call, Expr, Literal, ScalarParam


def collation_of(e: Expr) -> tuple[str, int]:
    """(collation, coercibility) of a string operand: COLLATE / BINARY is explicit, a literal or a
    parameter coercible, anything else (a column, a function of columns) implicit."""
    name = e.type.collation or collation.DEFAULT
    if isinstance(e, Call) and e.op == "collate":
        return name, collation.EXPLICIT
    if isinstance(e, (Literal, ScalarParam)):
        return name, collation.COERCIBLE
    return name, collation.IMPLICIT


def common_collation(operands: list[Expr], where: str) -> str:
    result = collation_of(operands[0])
    for e in operands[1:]:
        result = collation.combine(result, collation_of(e), where)
    return result[0]


def is_string(e: Expr) -> bool:
    return e.type.kind == "string"


def keyed(e: Expr, name: Optional[str], pad: bool = True) -> Expr:
    """``collation_key(e)`` under collation ``name`` (an explicit COLLATE under it is dropped: it is
    the identity at run time, and a literal under it then folds to a literal key)."""
    name = name or collation.DEFAULT
    while isinstance(e, Call) and e.op == "collate":
        e = e.args[0]
    return Call("collation_key", (e,), e.type, (name, pad))


def needs_key(name: Optional[str], pad: bool = True) -> bool:
    """Whether values under ``name`` must be keyed to compare: a _ci collation always; a _bin one only
    for PAD SPACE equality (trailing spaces), never for LIKE."""
    return pad or not collation.is_binary(name)
