"""The vocabulary operators share with plans: a column of a relation (``Field``), a sort key, a
window function call and its frame, and how EXPLAIN writes grouping sets and windows. Logical plans
(engine.plan.logical) and physical operators (engine.exec.operators) are both made of these."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from engine.core.expressions import ColumnRef, Expr
from engine.types import SqlType


@dataclass(frozen=True)
class Field:
    id: str
    name: str
    type: SqlType
    nullable: bool = True

    def ref(self) -> ColumnRef:
        return ColumnRef(self.id, self.type, self.name)


@dataclass(frozen=True)
class SortKey:
    expr: Expr
    ascending: bool = True
    nulls_first: bool = True   # MySQL: NULLs first ascending, last descending

    def __str__(self) -> str:
        return f"{self.expr} {'ASC' if self.ascending else 'DESC'}"


def format_sets(keys, sets) -> str:
    """``(a, b), (a), ()``: the grouping sets for EXPLAIN."""
    return ", ".join("(" + ", ".join(str(keys[i][1]) for i in s) + ")" for s in sets)


FRAME_BOUNDS = ("unbounded_preceding", "preceding", "current_row", "following", "unbounded_following")


@dataclass(frozen=True)
class FrameBound:
    """One end of a window frame; ``offset`` (a non-negative number) for ``preceding`` / ``following``."""

    kind: str
    offset: Any = None

    def __str__(self) -> str:
        if self.kind in ("preceding", "following"):
            return f"{self.offset} {self.kind.upper()}"
        return self.kind.replace("_", " ").upper()


@dataclass(frozen=True)
class WindowFrame:
    """``ROWS`` or ``RANGE BETWEEN start AND end``. A RANGE offset is a distance in the (single,
    numeric) ORDER BY key; CURRENT ROW in RANGE mode means the row's peers (equal ORDER BY keys)."""

    units: str              # rows | range
    start: FrameBound
    end: FrameBound

    def __str__(self) -> str:
        return f"{self.units.upper()} BETWEEN {self.start} AND {self.end}"


# The functions a Window node computes. Ranking and offset functions ignore the frame.
RANKING_FUNCTIONS = ("row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile")
OFFSET_FUNCTIONS = ("lag", "lead")
VALUE_FUNCTIONS = ("first_value", "last_value", "nth_value")
WINDOW_AGGREGATES = ("count_star", "count", "sum", "avg", "min", "max", "var_pop", "var_samp", "stddev_pop",
                     "stddev_samp")


@dataclass(frozen=True)
class WindowCall:
    """One window function of a Window node. ``args``: the value (LAG / LEAD: then the default; an
    aggregate: its argument); ``options``: constants (NTILE's buckets, LAG / LEAD's offset,
    NTH_VALUE's n). ``frame`` is set for aggregates and value functions (the binder fills in the
    standard defaults), None for the others."""

    func: str
    args: tuple[Expr, ...]
    type: SqlType
    frame: Optional[WindowFrame] = None
    options: tuple = ()

    def __str__(self) -> str:
        args = [str(a) for a in self.args] + [str(o) for o in self.options]
        if self.func == "count_star":
            args = ["*"]
        name = "count" if self.func == "count_star" else self.func
        frame = f" {self.frame}" if self.frame is not None else ""
        return f"{name}({', '.join(args)}){frame}"


def describe_window(partition_by, order_by, calls, keep=None) -> str:
    parts = []
    if partition_by:
        parts.append("partition=[" + ", ".join(str(p) for p in partition_by) + "]")
    if order_by:
        parts.append("order=[" + ", ".join(str(k) for k in order_by) + "]")
    parts.append("[" + ", ".join(f"{c} AS {f.name}" for f, c in calls) + "]")
    if keep is not None:
        parts.append(f"keep {next(f.name for f, _ in calls if f.id == keep[0])} <= {keep[1]}")
    return " ".join(parts)
