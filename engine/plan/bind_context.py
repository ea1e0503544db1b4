"""What the binder's parts share: the contexts an expression is bound in (the SELECT's aggregates,
the scope and clause) and the statement-wide settings read while binding (strict modes)."""
from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Optional

from sqlglot import exp

from engine.exec.cast_range import NAMED
from engine.plan.bind_aggregates import EXTENDED
from engine.plan.bind_grouping import GroupingKeys
from engine.plan.decorrelate import SubqueryCollector
from engine.plan import bind_window
from engine.core.expressions import AggCall, ColumnRef, Expr
from engine.plan.logical import (Field, LogicalPlan)
from engine.plan.scope import IdGenerator, Scope


AGGREGATES = {exp.Count: "count", exp.Sum: "sum", exp.Avg: "avg", exp.Min: "min", exp.Max: "max",
              **EXTENDED, exp.WithinGroup: "within_group"}


def arg(node: exp.Expression, name: str):
    """sqlglot renamed some args (``from`` -> ``from_``); read either."""
    value = node.args.get(name)
    if value is None:
        value = node.args.get(name + "_")
    return value


def node_name(node: exp.Expression) -> str:
    return node.sql(dialect="mysql")


@dataclass
class AggContext:
    """Collects the aggregates of one SELECT while its select list, HAVING and ORDER BY are bound."""

    ids: IdGenerator
    calls: list[tuple[Field, AggCall]] = field(default_factory=list)
    grouping: Optional[GroupingKeys] = None      # the GROUP BY keys, for GROUPING(...)
    values: SubqueryCollector = field(default_factory=SubqueryCollector)   # subqueries in arguments

    def add(self, call: AggCall, name: str) -> ColumnRef:
        for f, existing in self.calls:
            if existing == call:
                return f.ref()
        f = Field(self.ids.new(name), name, call.type, True)
        self.calls.append((f, call))
        return f.ref()

    def ids_set(self) -> set[str]:
        return {f.id for f, _ in self.calls}


@dataclass
class ExprContext:
    scope: Scope
    agg: Optional[AggContext] = None
    aliases: Optional[dict[str, Expr]] = None   # select aliases visible (ORDER BY, HAVING, GROUP BY)
    clause: str = "expression"
    subqueries: Optional[SubqueryCollector] = None   # where a subquery may be a value (decorrelate.py)
    windows: Optional[bind_window.WindowContext] = None    # where window functions may appear


@dataclass
class SelectParts:
    """A SELECT bound up to its WHERE clause: what decorrelation needs to take apart."""

    plan: LogicalPlan
    scope: Scope
    correlated: list[Expr]


@dataclass(frozen=True)
class _Lifted:
    """A group key's value after the Aggregate that is an expression over its output, not one of its
    columns (a rolled-up string key's ``IF(key IS NULL, NULL, ANY_VALUE)``): it stands where a key
    Field does, and ``ref()`` is the expression."""

    expr: Expr

    def ref(self) -> Expr:
        return self.expr


_CHECK_EVERY = 1024         # expressions bound between two checks of statement_timeout


# MySQL's strict mode with ERROR_FOR_DIVISION_BY_ZERO: while an INSERT or UPDATE is bound (the session
# sets this, engine.sql.handlers.writes), x / 0, x DIV 0 and x MOD 0 of a non-NULL x are errors there
strict_division: ContextVar[bool] = ContextVar("strict_division", default=False)
ZERO_DIVISOR_IS_ERROR = "zero_divisor_is_error"
# MySQL's strict mode (Canopy always runs in it) while an INSERT or UPDATE is bound (the session sets
# this, engine.sql.handlers.writes): an explicit CAST past its type's range fails there; elsewhere it
# clips with a warning, as MariaDB (engine.exec.cast_range)
strict_writes: ContextVar[bool] = ContextVar("strict_writes", default=False)
# The select list item being bound: (its expression node, its alias or None). MariaDB's 1264 "Out of
# range value for column '%s'" of a CAST names the item: its alias, its text where the CAST is the
# item, '(null)' where the CAST is inside it (engine.exec.cast_range reads the cast's NAMED option)
select_item: ContextVar[Optional[tuple]] = ContextVar("select_item", default=None)


def named_cast(node) -> tuple:
    """The option naming a CAST ``node`` in its 1264 warning: () where it is not in a select list
    item, or is a whole item without an alias (it names itself)."""
    item = select_item.get()
    if item is None:
        return ()
    root, alias = item
    if node is not root:
        return (NAMED + "(null)",)
    return (NAMED + alias,) if alias else ()
# MySQL's strict mode in an UPDATE (SET and WHERE): text read as a number must be one ('abc' = 0 is an
# error there, 'Truncated incorrect DOUBLE value', where a SELECT reads 'abc' as 0)
strict_text_numbers: ContextVar[bool] = ContextVar("strict_text_numbers", default=False)
