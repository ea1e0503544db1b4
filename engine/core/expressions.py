"""Typed scalar and aggregate expressions, shared by logical and physical plans.

Expressions are frozen dataclasses (hashable, picklable: they travel inside StageSpecs). Columns are
referenced by a plan-unique id (``ColumnRef.id``), which is also the field name in the Arrow batches
the operators exchange, so a column keeps its identity across joins of a table with itself.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Optional

from engine.types import BOOLEAN, SqlType


class Expr:
    type: SqlType

    def children(self) -> tuple["Expr", ...]:
        return ()

    def walk(self) -> Iterator["Expr"]:
        yield self
        for child in self.children():
            yield from child.walk()

    def column_ids(self) -> frozenset[str]:
        """The ids of the columns the expression reads; kept on the (immutable) expression, since the
        planner asks the same ones again and again (not pickled: see ``__getstate__``)."""
        ids = self.__dict__.get("_column_ids")
        if ids is None:
            ids = frozenset(e.id for e in self.walk() if isinstance(e, ColumnRef))
            self.__dict__["_column_ids"] = ids      # frozen dataclass: not through setattr
        return ids

    def __getstate__(self):
        state = self.__dict__
        return {k: v for k, v in state.items() if k != "_column_ids"} if "_column_ids" in state else state


@dataclass(frozen=True)
class ColumnRef(Expr):
    id: str
    type: SqlType
    name: str = ""          # for EXPLAIN; ids are opaque

    def __str__(self) -> str:
        return self.name or self.id


@dataclass(frozen=True)
class Literal(Expr):
    value: Any              # Python value of the type: int, Decimal, float, str, date, datetime, bool, None
    type: SqlType

    def __str__(self) -> str:
        if isinstance(self.value, str):
            return "'" + self.value.replace("'", "''") + "'"
        if self.value is None:
            return "NULL"
        if self.type.kind == "date":
            return f"DATE '{self.value}'"
        return str(self.value)


@dataclass(frozen=True)
class Call(Expr):
    """A scalar function or operator. ``options`` carries non-expression arguments (IN-list values,
    LIKE escape, the unit of EXTRACT, the target of CAST is ``type``)."""

    op: str
    args: tuple[Expr, ...]
    type: SqlType
    options: tuple = ()

    def children(self) -> tuple[Expr, ...]:
        return self.args

    def __str__(self) -> str:
        infix = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/", "mod": "%", "eq": "=",
                 "ne": "<>", "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "and": "AND", "or": "OR"}
        if self.op in infix and len(self.args) == 2:
            return f"({self.args[0]} {infix[self.op]} {self.args[1]})"
        if self.op == "in_list":
            values = ", ".join(str(Literal(v, self.args[0].type)) for v in self.options[0])
            return f"({self.args[0]} IN ({values}))"
        if self.op == "extract":
            return f"extract({self.options[0]} FROM {self.args[0]})"
        if self.op == "cast":
            return f"CAST({self.args[0]} AS {self.type})"
        if self.op in ("like", "not_like"):
            return f"({self.args[0]} {'NOT ' if self.op == 'not_like' else ''}LIKE {self.args[1]})"
        return f"{self.op}({', '.join(str(a) for a in self.args)})"


@dataclass(frozen=True)
class ScalarParam(Expr):
    """The value of an uncorrelated scalar subquery, computed once before the main plan runs
    (an 'init plan'): ``index`` points into the plan's ``subqueries``."""

    index: int
    type: SqlType

    def __str__(self) -> str:
        return f"$subquery{self.index}"


@dataclass(frozen=True)
class AggCall:
    """An aggregate: func in count_star, count, sum, avg, min, max, or one of
    ``engine.exec.extended_aggregates.FUNCTIONS`` (var_samp, corr, median, group_concat, ...); distinct
    for COUNT/SUM/AVG(DISTINCT) and GROUP_CONCAT(DISTINCT). ``extra``: further arguments (CORR's y,
    GROUP_CONCAT's ORDER BY expressions); ``options``: constants (a percentile's fraction, GROUP_CONCAT's
    separator and sort directions)."""

    func: str
    arg: Optional[Expr]
    type: SqlType
    distinct: bool = False
    extra: tuple[Expr, ...] = ()
    options: tuple = ()

    def arguments(self) -> tuple[Expr, ...]:
        return ((self.arg,) if self.arg is not None else ()) + self.extra

    def __str__(self) -> str:
        if self.func == "count_star":
            return "count(*)"
        args = ", ".join(str(a) for a in self.arguments())
        options = "".join(f", {o!r}" for o in self.options)
        return f"{self.func}({'DISTINCT ' if self.distinct else ''}{args}{options})"


def conjuncts(expr: Optional[Expr]) -> list[Expr]:
    """Split an AND tree into its conjuncts."""
    if expr is None:
        return []
    if isinstance(expr, Call) and expr.op == "and":
        out: list[Expr] = []
        for arg in expr.args:
            out.extend(conjuncts(arg))
        return out
    return [expr]


def and_all(exprs: list[Expr]) -> Optional[Expr]:
    exprs = [e for e in exprs if not (isinstance(e, Literal) and e.value is True)]
    if not exprs:
        return None
    result = exprs[0]
    for e in exprs[1:]:
        result = Call("and", (result, e), BOOLEAN)
    return result


def equi_pair(c: Expr, left_ids: set[str], right_ids: set[str]) -> Optional[tuple[Expr, Expr]]:
    """If ``c`` is ``l = r`` with l over left columns and r over right columns, return (l, r)."""
    if not (isinstance(c, Call) and c.op == "eq"):
        return None
    a, b = c.args
    ia, ib = a.column_ids(), b.column_ids()
    if ia and ib and ia <= left_ids and ib <= right_ids:
        return a, b
    if ia and ib and ib <= left_ids and ia <= right_ids:
        return b, a
    return None


def replace_columns(expr: Expr, mapping: dict[str, Expr]) -> Expr:
    """Substitute column references by id (used when pushing expressions through projections)."""
    if isinstance(expr, ColumnRef):
        return mapping.get(expr.id, expr)
    if isinstance(expr, Call):
        new_args = tuple(replace_columns(a, mapping) for a in expr.args)
        if new_args != expr.args:
            return Call(expr.op, new_args, expr.type, expr.options)
    return expr
