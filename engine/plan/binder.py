"""The binder: the only module that reads sqlglot expressions of queries.

It resolves names against the catalog and the scopes, assigns every expression a SQL type (inserting the
casts that make operands agree), folds constants, and decorrelates subqueries:

* ``EXISTS`` / ``NOT EXISTS`` / ``IN (subquery)`` / ``NOT IN (subquery)`` among the WHERE conjuncts become
  semi, anti and null-aware anti joins; equality correlations become join keys, other correlated
  predicates (TPC-H Q21's ``l2.l_suppkey <> l1.l_suppkey``) the join's residual.
* A correlated scalar aggregate subquery compared in WHERE (Q2, Q17, Q20) becomes a join with the
  subquery's aggregate grouped by its correlation columns.
* An uncorrelated scalar subquery anywhere becomes an init plan, run once (``ScalarParam``).

The result is a :class:`~engine.plan.logical.Query`; no sqlglot object goes further.
"""
from __future__ import annotations

from typing import Optional

from sqlglot import exp

from engine import types as T
from engine.catalog import Catalog
from engine.errors import BindError
from engine.exec.evaluate import fold_constant
from engine.plan.bind_functions import FunctionBinding
from engine.core.expressions import Call, ColumnRef, Expr, Literal
from engine.plan.logical import (Field, LogicalPlan, Project,
                                 Query, Sort, Union, Values)
from engine.plan.scope import IdGenerator, Relation, Scope
from engine.plan.set_operations import lower_set_operation
from engine.plan.sql_words import sql_words

from engine.plan.bind_context import AggContext, ExprContext, arg, strict_division, strict_text_numbers
from engine.plan.bind_from_where import FromWhereBinding
from engine.plan.bind_select_list import SelectListBinding
from engine.plan.bind_expressions import ExpressionBinding
from engine.plan.bind_operators import OperatorBinding
from engine.plan.bind_builtins import BuiltinBinding
from engine.plan.bind_json import JsonBinding
from engine.plan.bind_library import LibraryBinding
from engine.plan.recursive_ctes import RecursiveCteBinding

# the names other modules import from here
__all__ = ["Binder", "ExprContext", "AggContext", "strict_division", "strict_text_numbers"]


class Binder(FromWhereBinding, SelectListBinding, ExpressionBinding, OperatorBinding, BuiltinBinding,
             FunctionBinding, LibraryBinding, JsonBinding, RecursiveCteBinding):
    """Binds one statement; its parts are mixins, one file each (bind_*.py)."""

    def __init__(self, catalog: Catalog, database: Optional[str], ids: Optional[IdGenerator] = None):
        self.catalog = catalog
        self.database = database
        self.ids = ids or IdGenerator()
        self.subqueries: list[Query] = []
        self.visible_ctes: dict = {}
        # id(plan bound for one reference to a WITH query) -> (id of its definition, its name, the plan):
        # each reference is bound on its own (fresh field ids); engine.optimizer.ctes finds the ones that
        # survive in the bound query and computes a CTE referenced more than once only once
        self.cte_uses: dict[int, tuple[int, str, LogicalPlan]] = {}
        self._bound = 0                  # expressions bound: the statement's deadline is checked every few

    # ---------------------------------------------------------------------------------------------
    # queries
    # ---------------------------------------------------------------------------------------------
    def bind_statement(self, node: exp.Expression) -> Query:
        plan, names = self.bind_query(node, None, {})
        return Query(plan, tuple(names), tuple(self.subqueries))

    def bind_query(self, node: exp.Expression, outer: Optional[Scope], ctes: dict) -> tuple[LogicalPlan, list[str]]:
        ctes = self._with_ctes(node, ctes)
        saved, self.visible_ctes = self.visible_ctes, ctes      # scalar subqueries see the CTEs (TPC-H Q15)
        try:
            return self._bind_query(node, outer, ctes)
        finally:
            self.visible_ctes = saved

    def _bind_query(self, node: exp.Expression, outer: Optional[Scope], ctes: dict) -> tuple[LogicalPlan, list[str]]:
        if isinstance(node, exp.Subquery):
            return self.bind_query(node.this, outer, ctes)
        if isinstance(node, exp.Select):
            return self.bind_select(node, outer, ctes)
        if isinstance(node, exp.Union):
            return self.bind_union(node, outer, ctes)
        if isinstance(node, (exp.Intersect, exp.Except)):
            return self.bind_intersect_except(node, outer, ctes)
        if isinstance(node, exp.Values):
            return self.bind_values(node)
        raise BindError(f"{sql_words(node)} is not a query (a subquery is needed here)")

    def _with_ctes(self, node: exp.Expression, ctes: dict) -> dict:
        with_ = arg(node, "with")
        if not with_:
            return ctes
        ctes = dict(ctes)
        for cte in with_.expressions:
            recursive = self.recursive_name(cte) if with_.args.get("recursive") else None
            ctes[cte.alias_or_name.lower()] = recursive or cte
        return ctes

    def bind_union(self, node: exp.Union, outer, ctes) -> tuple[LogicalPlan, list[str]]:
        left, names = self.bind_query(node.this, outer, ctes)
        right, right_names = self.bind_query(node.expression, outer, ctes)
        if len(left.fields) != len(right.fields):
            raise BindError(f"the SELECTs of a UNION have {len(left.fields)} and {len(right.fields)} columns")
        types = [T.result_type(a.type, b.type, "UNION") for a, b in zip(left.fields, right.fields)]
        out_fields = tuple(Field(self.ids.new(n), n, t, True) for n, t in zip(names, types))
        inputs = []
        for plan in (left, right):
            exprs = tuple((Field(self.ids.new(o.name), o.name, o.type), self.coerce(f.ref(), o.type))
                          for o, f in zip(out_fields, plan.fields))
            inputs.append(Project(plan, exprs))
        # flatten nested UNION ALLs so a 3-way union is one operator
        flat: list[LogicalPlan] = []
        for plan in inputs:
            if isinstance(plan.input, Union) and all(isinstance(e, ColumnRef) for _, e in plan.exprs):
                flat.append(plan)
            else:
                flat.append(plan)
        plan: LogicalPlan = Union(tuple(flat), out_fields)
        if node.args.get("distinct"):
            plan = self._distinct(plan, list(out_fields))
        plan = self._order_limit_for_set_operation(node, plan, names)
        return plan, names

    def bind_intersect_except(self, node: exp.Expression, outer, ctes) -> tuple[LogicalPlan, list[str]]:
        """INTERSECT / EXCEPT [ALL | DISTINCT]: both inputs typed as UNION types them, then lowered by
        :mod:`engine.plan.set_operations`."""
        kind = "intersect" if isinstance(node, exp.Intersect) else "except"
        left, names = self.bind_query(node.this, outer, ctes)
        right, _ = self.bind_query(node.expression, outer, ctes)
        if len(left.fields) != len(right.fields):
            raise BindError(f"the SELECTs of an {kind.upper()} have {len(left.fields)} and {len(right.fields)} columns")
        types = [T.result_type(a.type, b.type, kind.upper()) for a, b in zip(left.fields, right.fields)]
        types = [t if t.kind != "null" else T.BIGINT for t in types]     # SELECT NULL INTERSECT SELECT NULL
        out_fields = tuple(Field(self.ids.new(n), n, t, True) for n, t in zip(names, types))
        plan = lower_set_operation(
            kind, not node.args.get("distinct"), left, right, out_fields, self.ids,
            tuple(self.coerce(f.ref(), t) for f, t in zip(left.fields, types)),
            tuple(self.coerce(f.ref(), t) for f, t in zip(right.fields, types)))
        return self._order_limit_for_set_operation(node, plan, names), names

    def _order_limit_for_set_operation(self, node, plan: LogicalPlan, names: list[str]) -> LogicalPlan:
        order = arg(node, "order")
        if order:
            scope = Scope([Relation("", list(plan.fields))])
            keys = []
            for ordered in order.expressions:
                target = ordered.this
                if isinstance(target, exp.Literal) and not target.is_string:
                    position = int(target.this)
                    if not 1 <= position <= len(plan.fields):
                        raise BindError(f"ORDER BY position {position} is not in the select list")
                    expr: Expr = plan.fields[position - 1].ref()
                else:
                    expr = self.bind_expr(target, ExprContext(scope, clause="ORDER BY"))
                keys.append(self._sort_key(ordered, expr))
            plan = Sort(plan, tuple(keys))
        return self._limit(node, plan)

    def bind_values(self, node: exp.Values) -> tuple[LogicalPlan, list[str]]:
        rows = []
        for row in node.expressions:
            items = row.expressions if isinstance(row, exp.Tuple) else [row]
            rows.append([self.bind_expr(i, ExprContext(Scope(), clause="VALUES")) for i in items])
        width = len(rows[0])
        for number, row in enumerate(rows, start=1):
            if len(row) != width:
                raise BindError(f"VALUES rows differ in length: row 1 has {width} values, row {number} has {len(row)}")
        names = [f"column_{i}" for i in range(width)]
        types = []
        for i in range(width):
            t = rows[0][i].type
            for r in rows[1:]:
                t = T.result_type(t, r[i].type, "VALUES")
            types.append(t if t.kind != "null" else T.TEXT)
        values = tuple(tuple(self._constant(self._strict_coerce(e, t)) for e, t in zip(r, types)) for r in rows)
        fields = tuple(Field(self.ids.new(n), n, t) for n, t in zip(names, types))
        return Values(fields, values), names

    def _strict_coerce(self, e: Expr, target: T.SqlType) -> Expr:
        """A VALUES item as its column's common type, strictly: these are the rows of an INSERT, where
        MySQL refuses text that is no number ('12abc' beside 1 is an error, not 12)."""
        if e.type == target or target.kind == "null" or e.type.kind == target.kind == "string":
            return e
        return Call("cast", (e,), target, ("strict",))

    def _constant(self, e: Expr):
        if not isinstance(e, Literal):
            e = fold_constant(e, keep_warnings=False)
        return e.value
