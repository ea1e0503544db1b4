"""Logical plan nodes: what a query computes, with typed expressions and an output schema.

Every node is a frozen dataclass whose ``fields`` is its output: a tuple of :class:`Field` whose ids
are unique within the query. ``pretty()`` renders the tree for tests and debugging.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Optional

from engine.catalog import TableDef
from engine.core.expressions import AggCall, ColumnRef, Expr, and_all
from engine.core.fields import Field, SortKey, WindowCall, describe_window, format_sets


class LogicalPlan:
    fields: tuple[Field, ...]

    @property
    def inputs(self) -> tuple["LogicalPlan", ...]:
        return ()

    def describe(self) -> str:
        return type(self).__name__

    def pretty(self, indent: int = 0) -> str:
        lines = ["  " * indent + self.describe()]
        for child in self.inputs:
            lines.append(child.pretty(indent + 1))
        return "\n".join(lines)

    def field_ids(self) -> frozenset[str]:
        """The ids of ``fields``, kept on the (immutable) node: a join's are its inputs', and the
        optimizer asks for them of every candidate join it weighs."""
        ids = self.__dict__.get("_field_ids")
        if ids is None:
            ids = self.__dict__["_field_ids"] = frozenset(f.id for f in self.fields)
        return ids


@dataclass(frozen=True)
class Scan(LogicalPlan):
    table: TableDef
    fields: tuple[Field, ...]
    column_names: tuple[str, ...]          # table column for each field, same order
    filters: tuple[Expr, ...] = ()         # conjuncts evaluated while scanning
    alias: str = ""
    # Columns read only for ``filters`` and not output (prune_columns): a filter-only column (TPC-H
    # Q13's o_comment) is dropped by the scan instead of being carried through joins and exchanges.
    filter_fields: tuple[Field, ...] = ()
    filter_columns: tuple[str, ...] = ()   # table column for each filter field, same order

    def read_columns(self) -> tuple[tuple[Field, str], ...]:
        """(field, table column) of every column the scan reads: its output, then the filter-only ones."""
        return tuple(zip(self.fields + self.filter_fields, self.column_names + self.filter_columns))

    def describe(self) -> str:
        cols = ", ".join(self.column_names)
        if self.filter_columns:
            cols += "; filter only: " + ", ".join(self.filter_columns)
        where = f" WHERE {' AND '.join(str(f) for f in self.filters)}" if self.filters else ""
        alias = f" AS {self.alias}" if self.alias and self.alias != self.table.name else ""
        return f"Scan {self.table.name}{alias} [{cols}]{where}"


@dataclass(frozen=True)
class Values(LogicalPlan):
    fields: tuple[Field, ...]
    rows: tuple[tuple[Any, ...], ...]

    def describe(self) -> str:
        return f"Values ({len(self.rows)} rows)"


@dataclass(frozen=True)
class CteScan(LogicalPlan):
    """One reference to a WITH query that is computed once per statement and read by all its references
    (``engine.optimizer.ctes``): its rows are those of materialized CTE number ``index``, whose columns
    are ``fields`` by position. ``definition`` is that CTE's optimized plan, for estimates only: it is
    not an input (rules do not rewrite it, it runs apart).

    ``kept``: the result stays distributed on the leaves that computed it, and the definition is planned
    into the same plan as its readers (one stage, read by all of them); otherwise it is gathered before
    the plan and every task that reads it gets all of it (small CTEs)."""

    fields: tuple[Field, ...]
    name: str
    index: int
    definition: LogicalPlan = field(compare=False, repr=False)
    kept: bool = False

    def describe(self) -> str:
        where = ", kept on the leaves" if self.kept else ""
        return f"CteScan {self.name} (materialized cte{self.index}{where})"


@dataclass(frozen=True)
class Filter(LogicalPlan):
    input: LogicalPlan
    predicate: Expr

    @property
    def fields(self) -> tuple[Field, ...]:
        return self.input.fields

    @property
    def inputs(self):
        return (self.input,)

    def describe(self) -> str:
        return f"Filter {self.predicate}"


def filter_all(plan: LogicalPlan, conditions) -> LogicalPlan:
    """``plan`` filtered by the conjunction of ``conditions``; ``plan`` itself when there are none
    left (every one folded to TRUE, as ``WHERE 1 = 1`` does): a Filter always has a predicate."""
    predicate = and_all(list(conditions))
    return plan if predicate is None else Filter(plan, predicate)


@dataclass(frozen=True)
class Project(LogicalPlan):
    input: LogicalPlan
    exprs: tuple[tuple[Field, Expr], ...]

    @property
    def fields(self) -> tuple[Field, ...]:
        return tuple(f for f, _ in self.exprs)

    @property
    def inputs(self):
        return (self.input,)

    def describe(self) -> str:
        return "Project " + ", ".join(
            str(e) if isinstance(e, ColumnRef) and e.id == f.id else f"{e} AS {f.name}" for f, e in self.exprs)


JOIN_KINDS = ("inner", "left", "full", "semi", "anti", "anti_null_aware", "cross")


@dataclass(frozen=True)
class Join(LogicalPlan):
    """``left`` is the probe/preserved side. semi/anti output only left fields.

    anti_null_aware is NOT IN: a left row is dropped when the right side has any NULL key (and is not
    empty), or when its own key is NULL and the right side is not empty. full (FULL OUTER JOIN) keeps
    the unmatched rows of both sides, padded with NULLs; RIGHT joins are left joins with the sides
    swapped by the binder.
    """

    left: LogicalPlan
    right: LogicalPlan
    kind: str
    left_keys: tuple[Expr, ...] = ()
    right_keys: tuple[Expr, ...] = ()
    residual: Optional[Expr] = None
    # The ids of the fields the join outputs, where it drops some (prune_columns: its keys, or columns
    # only its residual reads, that nothing above reads); None: all of its inputs' (by kind).
    output: Optional[frozenset[str]] = None

    @property
    def fields(self) -> tuple[Field, ...]:
        fields = self.__dict__.get("_fields")        # kept: a deep join tree's would be rebuilt per call
        if fields is None:
            fields = self.joined_fields()
            if self.output is not None:
                fields = tuple(f for f in fields if f.id in self.output)
            self.__dict__["_fields"] = fields
        return fields

    def joined_fields(self) -> tuple[Field, ...]:
        """The fields of the joined rows, before ``output`` drops any."""
        if self.kind in ("semi", "anti", "anti_null_aware"):
            return self.left.fields
        if self.kind == "left":
            return self.left.fields + _nullable(self.right.fields)
        if self.kind == "full":
            return _nullable(self.left.fields) + _nullable(self.right.fields)
        return self.left.fields + self.right.fields

    @property
    def inputs(self):
        return (self.left, self.right)

    def describe(self) -> str:
        keys = " AND ".join(f"{l} = {r}" for l, r in zip(self.left_keys, self.right_keys))
        residual = f" residual {self.residual}" if self.residual is not None else ""
        dropped = "" if self.output is None else \
            f" drops [{', '.join(f.name for f in self.joined_fields() if f.id not in self.output)}]"
        return f"Join {self.kind} ON {keys or 'TRUE'}{residual}{dropped}"


def _nullable(fields: tuple[Field, ...]) -> tuple[Field, ...]:
    return tuple(Field(f.id, f.name, f.type, True) for f in fields)


@dataclass(frozen=True)
class MultiJoin(LogicalPlan):
    """An unordered inner join of ``inputs`` under ``conditions``; the join-order rule replaces it."""

    inputs_: tuple[LogicalPlan, ...]
    conditions: tuple[Expr, ...]

    @property
    def inputs(self):
        return self.inputs_

    @property
    def fields(self) -> tuple[Field, ...]:
        out = self.__dict__.get("_fields")
        if out is None:
            out = ()
            for i in self.inputs_:
                out += i.fields
            self.__dict__["_fields"] = out
        return out

    def describe(self) -> str:
        return f"MultiJoin ON {' AND '.join(str(c) for c in self.conditions) or 'TRUE'}"


@dataclass(frozen=True)
class Aggregate(LogicalPlan):
    """GROUP BY ``keys``. With ``grouping_sets`` (ROLLUP, CUBE, GROUPING SETS: each set a sorted tuple
    of indices into ``keys``, duplicates meaningful) the output is the union of one grouping per set,
    the keys outside a row's set NULL, and ``grouping_id`` (after the aggregates) has bit ``i`` set
    where key ``i`` is rolled up in that row."""

    input: LogicalPlan
    keys: tuple[tuple[Field, Expr], ...]
    aggregates: tuple[tuple[Field, AggCall], ...]
    grouping_sets: tuple[tuple[int, ...], ...] = ()
    grouping_id: Optional[Field] = None

    @property
    def fields(self) -> tuple[Field, ...]:
        extra = (self.grouping_id,) if self.grouping_id is not None else ()
        return tuple(f for f, _ in self.keys) + tuple(f for f, _ in self.aggregates) + extra

    @property
    def inputs(self):
        return (self.input,)

    def describe(self) -> str:
        keys = ", ".join(str(e) for _, e in self.keys)
        aggs = ", ".join(str(a) for _, a in self.aggregates)
        sets = f" sets=[{format_sets(self.keys, self.grouping_sets)}]" if self.grouping_sets else ""
        return f"Aggregate keys=[{keys}]{sets} aggs=[{aggs}]"


@dataclass(frozen=True)
class Sort(LogicalPlan):
    input: LogicalPlan
    keys: tuple[SortKey, ...]
    limit: Optional[int] = None      # set by the optimizer when a Limit sits on top (top-N)

    @property
    def fields(self):
        return self.input.fields

    @property
    def inputs(self):
        return (self.input,)

    def describe(self) -> str:
        top = f" top {self.limit}" if self.limit is not None else ""
        return f"Sort{top} " + ", ".join(str(k) for k in self.keys)


@dataclass(frozen=True)
class Limit(LogicalPlan):
    input: LogicalPlan
    count: Optional[int]
    offset: int = 0

    @property
    def fields(self):
        return self.input.fields

    @property
    def inputs(self):
        return (self.input,)

    def describe(self) -> str:
        return f"Limit {self.count} offset {self.offset}"


@dataclass(frozen=True)
class Union(LogicalPlan):
    """UNION ALL of inputs with identical column types; ``fields`` are the output ids."""

    inputs_: tuple[LogicalPlan, ...]
    fields: tuple[Field, ...]

    @property
    def inputs(self):
        return self.inputs_

    def describe(self) -> str:
        return "UnionAll"


@dataclass(frozen=True)
class Repeat(LogicalPlan):
    """Each input row ``count`` times (an integer expression over the row; zero, negative or NULL drops
    it): the bag semantics of INTERSECT ALL / EXCEPT ALL over per-row multiplicities."""

    input: LogicalPlan
    count: Expr

    @property
    def fields(self):
        return self.input.fields

    @property
    def inputs(self):
        return (self.input,)

    def describe(self) -> str:
        return f"Repeat {self.count} times"


@dataclass(frozen=True)
class Query:
    """A bound SELECT: the plan, the user-visible column names, and init-plan subqueries whose scalar
    values the main plan reads through ScalarParam."""

    root: LogicalPlan
    names: tuple[str, ...]
    subqueries: tuple["Query", ...] = ()

    def pretty(self) -> str:
        text = self.root.pretty()
        for i, sub in enumerate(self.subqueries):
            text += f"\n$subquery{i}:\n" + "\n".join("  " + l for l in sub.pretty().splitlines())
        return text


@dataclass(frozen=True)
class Window(LogicalPlan):
    """Window functions sharing one PARTITION BY and ORDER BY: each input row is kept and gets the
    ``calls``' values computed over its partition (rows with equal ``partition_by`` values) in
    ``order_by`` order. The binder puts one Window node per distinct (PARTITION BY, ORDER BY) above
    the GROUP BY / HAVING and below the select list's projection, DISTINCT, ORDER BY and LIMIT."""

    input: LogicalPlan
    partition_by: tuple[ColumnRef, ...]
    order_by: tuple[SortKey, ...]
    calls: tuple[tuple[Field, WindowCall], ...]
    # (id of a ROW_NUMBER / RANK / DENSE_RANK call, N): only the rows whose value is at most N come out
    # (a filter above asks no more: engine/optimizer/rules/top_n.py); every call still sees all rows
    keep: Optional[tuple[str, int]] = None

    @property
    def fields(self) -> tuple[Field, ...]:
        return self.input.fields + tuple(f for f, _ in self.calls)

    @property
    def inputs(self):
        return (self.input,)

    def describe(self) -> str:
        return "Window " + describe_window(self.partition_by, self.order_by, self.calls, self.keep)


def map_inputs(plan: LogicalPlan, fn) -> LogicalPlan:
    """``plan`` with ``fn`` applied to each of its direct inputs (a leaf comes back as it is): the
    walk a bottom-up rewrite rule recurses with. ``plan`` itself when ``fn`` returned every input
    unchanged (the same object): a rule that changes nothing rebuilds nothing, and what the planner
    keeps per node (estimates, ordered joins: by identity) stays valid from one rule to the next."""
    if isinstance(plan, (MultiJoin, Union)):
        inputs = tuple(fn(i) for i in plan.inputs_)
        if all(new is old for new, old in zip(inputs, plan.inputs_)):
            return plan
        return MultiJoin(inputs, plan.conditions) if isinstance(plan, MultiJoin) else Union(inputs, plan.fields)
    if isinstance(plan, Join):
        left, right = fn(plan.left), fn(plan.right)
        if left is plan.left and right is plan.right:
            return plan
        return dataclasses.replace(plan, left=left, right=right)
    if isinstance(plan, (Filter, Project, Aggregate, Sort, Limit, Repeat, Window)):
        new = fn(plan.input)
        return plan if new is plan.input else dataclasses.replace(plan, input=new)
    return plan
