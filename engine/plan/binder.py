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

import decimal
import re
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Optional

import sqlglot
from sqlglot import exp

from engine import collation
from engine import types as T
from engine.catalog import Catalog
from engine.errors import BadDataError, BindError, TypeMismatchError, UnsupportedError
from engine.exec.collation_keys import list_keys
from engine.exec.evaluate import fold_constant
from engine.exec.operators.base import check_statement_deadline
from engine.plan.bind_collation import common_collation, is_string, keyed, needs_key
from engine.plan.bind_aggregates import EXTENDED, bind_extended
from engine.plan.bind_functions import FunctionBinding
from engine.plan.bind_grouping import GroupingKeys, bind_group_keys, grouping_call
from engine.plan import decorrelate
from engine.plan.decorrelate import SubqueryCollector, SubqueryUse
from engine.plan.plan_walk import free_refs, substitute_plan
from engine.plan import bind_window
from engine.plan.expressions import AggCall, Call, ColumnRef, Expr, Literal, ScalarParam, and_all
from engine.plan.expressions import equi_pair as _equi_pair
from engine.plan.logical import (Aggregate, Field, Filter, Join, Limit, LogicalPlan, MultiJoin, Project,
                                 Query, Scan, Sort, SortKey, Union, Values, filter_all)
from engine.plan.joins import bind_join_chain, bind_parenthesised
from engine.plan.scope import IdGenerator, Relation, Scope
from engine.plan.set_operations import lower_set_operation
from engine.plan.sql_words import ORDERED_PARTS, SELECT_PARTS, TABLE_PARTS, generated, not_supported, refuse_unread, \
    sql_words

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
# MySQL's strict mode in an UPDATE (SET and WHERE): text read as a number must be one ('abc' = 0 is an
# error there, 'Truncated incorrect DOUBLE value', where a SELECT reads 'abc' as 0)
strict_text_numbers: ContextVar[bool] = ContextVar("strict_text_numbers", default=False)


class Binder(FunctionBinding):
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
            if with_.args.get("recursive"):
                raise UnsupportedError("WITH RECURSIVE is not supported")
            ctes[cte.alias_or_name.lower()] = cte
        return ctes

    def bind_union(self, node: exp.Union, outer, ctes) -> tuple[LogicalPlan, list[str]]:
        left, names = self.bind_query(node.this, outer, ctes)
        right, right_names = self.bind_query(node.expression, outer, ctes)
        if len(left.fields) != len(right.fields):
            raise BindError(f"the SELECTs of a UNION have {len(left.fields)} and {len(right.fields)} columns")
        types = [T.common_type(a.type, b.type, "UNION") for a, b in zip(left.fields, right.fields)]
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
        types = [T.common_type(a.type, b.type, kind.upper()) for a, b in zip(left.fields, right.fields)]
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
                t = T.common_type(t, r[i].type, "VALUES")
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
            e = fold_constant(e)
        return e.value

    # ---------------------------------------------------------------------------------------------
    # SELECT
    # ---------------------------------------------------------------------------------------------
    def bind_select(self, sel: exp.Select, outer: Optional[Scope], ctes: dict) -> tuple[LogicalPlan, list[str]]:
        parts = self.bind_select_core(sel, outer, ctes)
        plan = parts.plan
        if parts.correlated:        # a subquery's: engine.plan.decorrelate pushes the filter down
            plan = filter_all(plan, parts.correlated)
        return self.finish_select(sel, plan, parts.scope)

    def bind_select_core(self, sel: exp.Select, outer: Optional[Scope], ctes: dict) -> SelectParts:
        """FROM and WHERE: returns the joined, filtered relation and the correlated conjuncts."""
        refuse_unread(sel, SELECT_PARTS, "SELECT")
        ctes = self._with_ctes(sel, ctes)
        scope = Scope(parent=outer)
        items, conditions = self.bind_from(sel, scope, ctes)
        correlated: list[Expr] = []
        post_semis: list[tuple] = []
        values = SubqueryCollector()        # subqueries used as values in WHERE
        marked: list[Expr] = []             # the conditions that read them
        where = arg(sel, "where")
        for conjunct in _split_and(where.this) if where else []:
            self.bind_where_conjunct(conjunct, scope, ctes, items, conditions, correlated, post_semis,
                                     values, marked)
        if len(items) == 1:
            plan = items[0]
            plan = filter_all(plan, conditions)
        else:
            plan = MultiJoin(tuple(items), tuple(conditions))
        for right, kind, lkeys, rkeys, residual in post_semis:
            plan = Join(plan, right, kind, lkeys, rkeys, residual)
        if values.uses:
            plan = filter_all(decorrelate.attach(plan, values.uses, self.ids), marked)
        return SelectParts(plan, scope, correlated)

    # FROM ---------------------------------------------------------------------------------------
    def bind_from(self, sel: exp.Select, scope: Scope, ctes: dict) -> tuple[list[LogicalPlan], list[Expr]]:
        from_ = arg(sel, "from")
        if from_ is None:
            one_row = Values((Field(self.ids.new("dual"), "dual", T.BIGINT),), ((0,),))
            return [one_row], []
        return bind_join_chain(self, from_.this, sel.args.get("joins") or [], scope, ctes)

    def _bind_view(self, view, alias: str, scope: Scope) -> LogicalPlan:
        """A view read in FROM: its query bound as a derived table (so the optimizer pushes filters
        into it and prunes its columns like any subquery's)."""
        expanding = self.__dict__.setdefault("_views_expanding", set())
        if view.qualified_name.lower() in expanding:
            raise BindError(f"view {view.qualified_name} refers to itself")
        expanding.add(view.qualified_name.lower())
        try:
            plan, names = self.bind_query(sqlglot.parse_one(view.sql, read="mysql"), None, {})
        finally:
            expanding.discard(view.qualified_name.lower())
        return self._derived(plan, list(view.columns) or names, alias, scope)

    def bind_on(self, on: Optional[exp.Expression], scope: Scope) -> tuple[list[Expr], list]:
        """The conjuncts of a join's ON condition, bound in ``scope``: (plain conjuncts, conjuncts that
        use subqueries as values, each with its uses: engine.plan.join_subqueries places them)."""
        plain, valued = [], []
        for c in _split_and(on) if on is not None else []:
            uses = SubqueryCollector()
            bound = self.bind_expr(c, ExprContext(scope, clause="ON", subqueries=uses))
            if uses.uses:
                valued.append((bound, uses.uses))
            else:
                plain.append(bound)
        return plain, valued

    def bind_table_item(self, node: exp.Expression, scope: Scope, ctes: dict) -> LogicalPlan:
        if isinstance(node, exp.Table):
            refuse_unread(node, TABLE_PARTS, "FROM")
            name = node.name
            alias = node.alias or name
            db = node.db or self.database
            if not node.db and name.lower() in ctes:
                cte = ctes[name.lower()]
                plan, names = self.bind_query(cte.this, None, {k: v for k, v in ctes.items() if k != name.lower()})
                self.cte_uses[id(plan)] = (id(cte), name.lower(), plan)
                column_aliases = [c.name for c in cte.args["alias"].columns] if cte.args.get("alias") and \
                    cte.args["alias"].columns else names
                return self._derived(plan, column_aliases, alias, scope)
            if db is None:
                raise BindError(f"no database selected for table {name!r}; run USE <database> first")
            view = self.catalog.find_view(db, name)
            if view is not None:
                return self._bind_view(view, alias, scope)
            system = self.catalog.system_table(db, name)
            if system is not None:          # information_schema: its rows as of this statement
                fields = tuple(Field(self.ids.new(f"{alias}.{c.name}"), c.name, c.type, c.nullable)
                               for c in system.columns)
                scope.add(Relation(alias, list(fields)))
                return Values(fields, tuple(tuple(row) for row in system.rows()))
            table = self.catalog.table(db, name)
            fields = tuple(Field(self.ids.new(f"{alias}.{c.name}"), c.name, c.type, c.nullable)
                           for c in table.columns)
            scope.add(Relation(alias, list(fields)))
            return Scan(table, fields, tuple(c.name for c in table.columns), (), alias)
        if isinstance(node, exp.Subquery) and not node.alias and isinstance(node.this, exp.Table) \
                and node.this.args.get("joins"):
            return bind_parenthesised(self, node.this, scope, ctes)
        if isinstance(node, exp.Subquery):
            alias = node.alias
            if not alias:
                raise BindError("every derived table must have its own alias")
            plan, names = self.bind_query(node.this, None, ctes)
            table_alias = node.args.get("alias")
            if table_alias is not None and table_alias.columns:
                column_names = [c.name for c in table_alias.columns]
                if len(column_names) != len(names):
                    raise BindError(f"derived table {alias!r} has {len(names)} columns but "
                                    f"{len(column_names)} column aliases")
                names = column_names
            return self._derived(plan, names, alias, scope)
        if isinstance(node, exp.Lateral) or isinstance(node, exp.Unnest):
            raise UnsupportedError(f"{node.key.upper()} in FROM")
        raise UnsupportedError(f"{node_name(node)[:60]} in FROM")

    def _derived(self, plan: LogicalPlan, names: list[str], alias: str, scope: Scope) -> LogicalPlan:
        exprs = tuple((Field(self.ids.new(f"{alias}.{n}"), n, f.type, f.nullable), f.ref())
                      for n, f in zip(names, plan.fields))
        projected = Project(plan, exprs)
        scope.add(Relation(alias, [f for f, _ in exprs]))
        return projected

    # WHERE --------------------------------------------------------------------------------------
    def bind_where_conjunct(self, node, scope: Scope, ctes, items: list, conditions: list,
                            correlated: list, post_semis: list, values: SubqueryCollector,
                            marked: list) -> None:
        """One AND-ed WHERE condition. EXISTS / IN / a comparison with a correlated aggregate become
        semi / anti joins and grouped joins where their shape allows (the fast, common case); any other
        subquery is a value computed by engine.plan.decorrelate and the condition reads it."""
        negated = False
        inner = node
        while isinstance(inner, exp.Paren):
            inner = inner.this
        if isinstance(inner, exp.Not):
            negated, inner = True, inner.this
            while isinstance(inner, exp.Paren):
                inner = inner.this
        if isinstance(inner, exp.Exists):
            if self.bind_semi_join(inner.this, None, "anti" if negated else "semi", scope, ctes, items,
                                   post_semis):
                return
        elif isinstance(inner, exp.In) and inner.args.get("query") is not None \
                and not isinstance(_unparen(inner.this), exp.Tuple):
            probe = self.bind_expr(inner.this, ExprContext(scope, clause="WHERE"))
            kind = "anti_null_aware" if negated else "semi"
            if self.bind_semi_join(inner.args["query"], probe, kind, scope, ctes, items, post_semis):
                return
        comparison = _COMPARISONS.get(type(inner))
        if comparison and not negated and (isinstance(_unparen(inner.expression), exp.Subquery)
                                           or isinstance(_unparen(inner.this), exp.Subquery)):
            if self.try_correlated_scalar(inner, comparison, scope, ctes, items, conditions):
                return
        before = len(values.uses)
        bound = self.bind_expr(node, ExprContext(scope, clause="WHERE", subqueries=values))
        if len(values.uses) > before:
            marked.append(bound)
        elif bound.column_ids() - scope.own_ids() - self._init_ids():
            correlated.append(bound)
        else:
            conditions.append(bound)

    def _init_ids(self) -> set[str]:
        return set()

    def bind_semi_join(self, subquery, probe: Optional[Expr], kind: str, scope: Scope, ctes,
                       items: list, post_semis: list) -> bool:
        """Adds the semi / anti join; False (nothing added) for a shape only decorrelate.py handles."""
        query = subquery.this if isinstance(subquery, exp.Subquery) else subquery
        while isinstance(query, exp.Subquery):
            query = query.this
        if isinstance(query, exp.Select) and not (query.args.get("group") or _has_aggregate(query)
                                                   or arg(query, "limit") or query.args.get("distinct")):
            parts = self.bind_select_core(query, scope, ctes)
            right = parts.plan
            lkeys, rkeys, residual = [], [], []
            if probe is not None:
                select_items = query.expressions
                if len(select_items) != 1 or isinstance(select_items[0], exp.Star):
                    raise BindError("the subquery of IN must return exactly one column")
                value = self.bind_expr(_unalias(select_items[0]), ExprContext(parts.scope, clause="IN subquery"))
                if value.column_ids() - parts.scope.own_ids():
                    return False        # the select list reads the outer query
                common = T.common_type(probe.type, value.type, "IN subquery")
                left, right_key = self._collated_pair(probe, value, common)
                lkeys.append(left)
                rkeys.append(right_key)
            outer_ids = scope.own_ids()
            right_ids = right.field_ids()
            for c in parts.correlated:
                pair = _equi_pair(c, outer_ids, right_ids)
                if pair and kind != "anti_null_aware":
                    lkeys.append(pair[0])
                    rkeys.append(pair[1])
                else:
                    residual.append(c)
            if kind == "anti_null_aware" and residual:
                return False            # correlated NOT IN: NULLs per outer row
            if free_refs(right):
                return False            # correlated below its WHERE (a subquery two levels deep)
        else:
            # an aggregating / limited subquery: bind it whole; only uncorrelated ones are supported
            inner_scope_probe = Scope(parent=scope)
            right, names = self.bind_query(query, inner_scope_probe, ctes)
            if inner_scope_probe.outer_refs:
                return False            # correlated, with GROUP BY, aggregates, DISTINCT or LIMIT
            lkeys, rkeys, residual = [], [], []
            if probe is not None:
                if len(right.fields) != 1:
                    raise BindError("the subquery of IN must return exactly one column")
                common = T.common_type(probe.type, right.fields[0].type, "IN subquery")
                left, right_key = self._collated_pair(probe, right.fields[0].ref(), common)
                lkeys.append(left)
                rkeys.append(right_key)
        join = (right, kind, tuple(lkeys), tuple(rkeys), and_all(residual))
        needed = set().union(*(k.column_ids() for k in lkeys)) if lkeys else set()
        if join[4] is not None:
            needed |= join[4].column_ids() - right.field_ids()
        for i, item in enumerate(items):
            if needed and needed <= item.field_ids():
                items[i] = Join(item, *join)
                return True
        post_semis.append(join)
        return True

    def try_correlated_scalar(self, node, op: str, scope: Scope, ctes, items: list, conditions: list) -> bool:
        """``outer_expr <op> (SELECT agg(...) FROM ... WHERE inner = outer ...)`` -> join with a grouped
        aggregate. Returns False when the subquery is not correlated (then it is an init plan)."""
        left_node, right_node = node.this, node.expression
        flipped = isinstance(_unparen(left_node), exp.Subquery)
        sub_node = _unparen(left_node if flipped else right_node)
        other_node = right_node if flipped else left_node
        query = sub_node.this
        if not isinstance(query, exp.Select):
            return False
        probe_scope = Scope(parent=scope)
        # cheap correlation test: bind the core in a throw-away binder sharing our catalog
        trial = Binder(self.catalog, self.database, self.ids)
        trial.cte_uses = self.cte_uses
        trial_parts = trial.bind_select_core(query, scope, ctes)
        if not trial_parts.correlated:
            return False
        del probe_scope
        if query.args.get("group") or arg(query, "limit") or query.args.get("having") \
                or query.args.get("distinct") or not _has_aggregate(query) or len(query.expressions) != 1 \
                or query.expressions[0].find(exp.Count):     # COUNT of an empty group is 0, not NULL
            return False
        if free_refs(trial_parts.plan) or any(
                _equi_pair(c, scope.own_ids(), trial_parts.plan.field_ids()) is None for c in trial_parts.correlated):
            return False                # correlated below WHERE, or not by equalities: decorrelate.py
        parts = self.bind_select_core(query, scope, ctes)
        outer_ids, inner_ids = scope.own_ids(), parts.plan.field_ids()
        key_pairs = [_equi_pair(c, outer_ids, inner_ids) for c in parts.correlated]
        agg = AggContext(self.ids)
        key_fields = []
        for _, inner_expr in key_pairs:
            key_fields.append((Field(self.ids.new("corr"), "corr", inner_expr.type), inner_expr))
        value = self.bind_expr(_unalias(query.expressions[0]), ExprContext(parts.scope, agg=agg, clause="subquery"))
        value = self._lift_to_groups(value, key_fields, agg, parts.scope)
        aggregate = Aggregate(parts.plan, tuple(key_fields), tuple(agg.calls))
        value_field = Field(self.ids.new("subquery"), "subquery", value.type)
        derived = Project(aggregate, tuple((f, f.ref()) for f, _ in key_fields) + ((value_field, value),))
        items.append(derived)
        for (outer_expr, _), (key_field, _) in zip(key_pairs, key_fields):
            conditions.append(self.make_comparison("eq", outer_expr, key_field.ref()))
        other = self.bind_expr(other_node, ExprContext(scope, clause="WHERE"))
        if flipped:
            conditions.append(self.make_comparison(op, value_field.ref(), other))
        else:
            conditions.append(self.make_comparison(op, other, value_field.ref()))
        return True

    # SELECT list, GROUP BY, HAVING, ORDER BY, LIMIT -------------------------------------------
    def finish_select(self, sel: exp.Select, plan: LogicalPlan, scope: Scope) -> tuple[LogicalPlan, list[str]]:
        items = self._expand_select_list(sel, scope)
        group = sel.args.get("group")
        having = sel.args.get("having")
        order = arg(sel, "order")
        aggregating = bool(group) or any(_contains_aggregate(e) for e, _ in items) or \
            (having is not None) or (order is not None and any(_contains_aggregate(o) for o in order.expressions))
        windows = bind_window.WindowContext.for_select(sel)

        agg: Optional[AggContext] = None
        key_fields: list[tuple[Field, Expr]] = []
        grouping_sets: tuple[tuple[int, ...], ...] = ()
        grouping_id: Optional[Field] = None
        if aggregating:
            agg = AggContext(self.ids)
            if group:
                key_fields, grouping_sets = bind_group_keys(
                    group, lambda g: self._bind_group_item(g, items, scope), self.ids.new)
            if grouping_sets:
                grouping_id = Field(self.ids.new("grouping_id"), "grouping_id", T.BIGINT, False)
            agg.grouping = GroupingKeys(tuple(k for _, k in key_fields), grouping_id)
        plan_keys = key_fields
        if aggregating:
            plan_keys, key_fields = self._collated_group_keys(key_fields, agg, bool(grouping_sets))

        values = SubqueryCollector()       # subqueries used as values in SELECT, HAVING, ORDER BY
        ctx = ExprContext(scope, agg=agg, clause="SELECT", subqueries=values,
                          windows=windows)
        select_exprs: list[tuple[str, Expr]] = []
        for node, name in items:
            e = self.bind_expr(node, ctx)
            if aggregating:
                e = self._lift_to_groups(e, key_fields, agg, scope)
            select_exprs.append((name, e))

        having_expr = None
        if having is not None:
            alias_map = {n.lower(): e for n, e in select_exprs}
            having_ctx = ExprContext(scope, agg=agg, aliases=alias_map, clause="HAVING", subqueries=values)
            having_expr = self._lift_to_groups(self.bind_expr(having.this, having_ctx), key_fields, agg, scope)


        # projection (visible + hidden ORDER BY expressions)
        # A plain column keeps its NOT NULL (CREATE TABLE ... AS SELECT copies it); anything else may be NULL.
        not_null = {f.id for r in scope.relations for f in r.fields if not f.nullable} if not aggregating else set()
        out_fields = [Field(self.ids.new(name), name, e.type,
                            not (isinstance(e, ColumnRef) and e.id in not_null)) for name, e in select_exprs]
        projection = list(zip(out_fields, [e for _, e in select_exprs]))
        sort_keys: list[SortKey] = []
        hidden = 0
        if order is not None:
            for ordered in order.expressions:
                target = ordered.this
                expr = None
                if isinstance(target, exp.Literal) and not target.is_string:
                    position = int(target.this)
                    if not 1 <= position <= len(out_fields):
                        raise BindError(f"ORDER BY position {position} is not in the select list")
                    expr = out_fields[position - 1].ref()
                elif isinstance(target, exp.Column) and not target.table:
                    matches = [f for f in out_fields if f.name.lower() == target.name.lower()]
                    if matches:
                        expr = matches[0].ref()
                if expr is None:
                    bound = self.bind_expr(target, ExprContext(scope, agg=agg, clause="ORDER BY", subqueries=values,
                                                                  windows=windows))
                    if aggregating:
                        bound = self._lift_to_groups(bound, key_fields, agg, scope)
                    for f, e in projection:
                        if e == bound:
                            expr = f.ref()
                            break
                    else:
                        if sel.args.get("distinct"):
                            raise BindError("with SELECT DISTINCT, ORDER BY expressions must appear in the select list")
                        hidden_field = Field(self.ids.new("order"), "order", bound.type)
                        projection.append((hidden_field, bound))
                        hidden += 1
                        expr = hidden_field.ref()
                sort_keys.append(self._sort_key(ordered, expr))
        if aggregating:     # built last: ORDER BY may add aggregates
            if agg.values.uses:         # subqueries inside aggregates' arguments read the rows
                plan = decorrelate.attach(plan, agg.values.uses, self.ids)
            plan = Aggregate(plan, tuple(plan_keys), tuple(agg.calls), grouping_sets, grouping_id)
        if values.uses:
            if aggregating:
                self._lift_uses(values.uses, key_fields, agg, scope)
            plan = decorrelate.attach(plan, values.uses, self.ids)
        if having_expr is not None:
            plan = Filter(plan, having_expr)
        if windows.calls:        # after GROUP BY / HAVING, before DISTINCT / ORDER BY / LIMIT
            lift = (lambda e: self._lift_to_groups(e, key_fields, agg, scope)) if aggregating else (lambda e: e)
            plan = windows.plan(plan, lift, self.ids)
        plan = Project(plan, tuple(projection))
        if sel.args.get("distinct"):
            if sel.args["distinct"].args.get("on"):
                raise UnsupportedError("DISTINCT ON")
            plan = self._distinct(plan, list(out_fields))
        if sort_keys:
            plan = Sort(plan, tuple(sort_keys))
        plan = self._limit(sel, plan)
        if hidden:
            plan = Project(plan, tuple((f, f.ref()) for f in out_fields))
        return plan, [name for name, _ in select_exprs]

    def _collated_group_keys(self, keys: list[tuple[Field, Expr]], agg: AggContext, grouping_sets: bool):
        """GROUP BY a string groups by its collation key, and the group's value is the value of one of
        its rows (ANY_VALUE, as MySQL returns one row's). Returns (the Aggregate's keys, the keys the
        select list, HAVING and ORDER BY are lifted onto: a string key's value is its ANY_VALUE).

        With grouping sets (ROLLUP, CUBE, GROUPING SETS) a key rolled up in a row is NULL there while
        its ANY_VALUE is not: the value is ``IF(key IS NULL, NULL, ANY_VALUE)`` (a key is NULL exactly
        where the value is, so the test also keeps a group of NULLs NULL)."""
        plan_keys, lift_keys = [], []
        for f, k in keys:
            if not is_string(k):
                plan_keys.append((f, k))
                lift_keys.append((f, k))
                continue
            key = Field(self.ids.new("collation_key"), f.name, k.type, f.nullable)
            plan_keys.append((key, keyed(k, k.type.collation)))
            value = agg.add(AggCall("any_value", k, k.type), f.name)
            if not grouping_sets:
                lift_keys.append((Field(value.id, f.name, k.type, f.nullable), k))
                continue
            rolled = Call("if", (Call("is_null", (key.ref(),), T.BOOLEAN), Literal(None, k.type), value), k.type)
            lift_keys.append((_Lifted(rolled), k))
        return plan_keys, lift_keys

    def _distinct(self, plan: LogicalPlan, fields: list[Field]) -> LogicalPlan:
        """DISTINCT rows: grouped by all columns, strings by their collation keys (each kept row holds
        the values of one of the rows it stands for)."""
        keys, values, out = [], [], []
        for f in fields:
            if not is_string(f):
                keys.append((f, f.ref()))
                out.append((f, f.ref()))
                continue
            keys.append((Field(self.ids.new("collation_key"), f.name, f.type, f.nullable),
                         keyed(f.ref(), f.type.collation)))
            value = Field(self.ids.new(f.name), f.name, f.type, f.nullable)
            values.append((value, AggCall("any_value", f.ref(), f.type)))
            out.append((f, value.ref()))
        if not values:
            return Aggregate(plan, tuple(keys), ())
        return Project(Aggregate(plan, tuple(keys), tuple(values)), tuple(out))

    def _lift_uses(self, uses: list[SubqueryUse], keys, agg: AggContext, scope: Scope) -> None:
        """Subqueries read after GROUP BY see the group keys, not the rows: their references to
        grouped columns become references to the Aggregate's key fields."""
        mapping = {e.id: f.ref() for f, e in keys if isinstance(e, ColumnRef)}
        for use in uses:
            use.plan = substitute_plan(use.plan, mapping)
            stray = free_refs(use.plan) & scope.own_ids()
            if stray:
                name = next(f.name for r in scope.relations for f in r.fields if f.id in stray)
                raise BindError(f"column {name!r} must appear in GROUP BY or be used in an aggregate function")
            if isinstance(use.probe, tuple):
                use.probe = tuple(self._lift_to_groups(p, keys, agg, scope) for p in use.probe)
            elif use.probe is not None:
                use.probe = self._lift_to_groups(use.probe, keys, agg, scope)

    def _sort_key(self, ordered: exp.Ordered, expr: Expr) -> SortKey:
        refuse_unread(ordered, ORDERED_PARTS, "ORDER BY")
        descending = bool(ordered.args.get("desc"))
        # sqlglot's MySQL parser fills in MySQL's default (NULLs as the smallest value: first ascending,
        # last descending) and keeps an explicit NULLS FIRST / NULLS LAST.
        nulls_first = ordered.args.get("nulls_first")
        if nulls_first is None:
            nulls_first = not descending
        if is_string(expr):             # by the collation's keys (PAD SPACE: 'a' and 'a ' are peers)
            expr = keyed(expr, expr.type.collation)
        return SortKey(expr, not descending, bool(nulls_first))

    def _limit(self, node, plan: LogicalPlan) -> LogicalPlan:
        limit, offset = arg(node, "limit"), arg(node, "offset")
        if limit is None and offset is None:
            return plan
        count = self._int_clause(limit.expression if limit is not None else None, "LIMIT")
        skip = self._int_clause(offset.expression if offset is not None else None, "OFFSET") or 0
        if limit is not None and limit.args.get("offset") is not None:
            skip = self._int_clause(limit.args["offset"], "OFFSET")
        return Limit(plan, count, skip)

    def _int_clause(self, node, clause: str) -> Optional[int]:
        if node is None:
            return None
        value = self.bind_expr(node, ExprContext(Scope(), clause=clause))
        if not isinstance(value, Literal) or value.type.kind != "int" or value.value < 0:
            raise BindError(f"{clause} needs a non-negative integer constant, got {node_name(node)}")
        return int(value.value)

    def _expand_select_list(self, sel: exp.Select, scope: Scope) -> list[tuple[exp.Expression, str]]:
        items = []
        for node in sel.expressions:
            if isinstance(node, exp.Star):
                for f in scope.star():
                    items.append((_column_node(f), f.name))
                continue
            if isinstance(node, exp.Column) and isinstance(node.this, exp.Star):
                for f in scope.star(node.table):
                    items.append((_column_node(f), f.name))
                continue
            if isinstance(node, exp.Alias):
                items.append((node.this, node.alias))
            else:
                items.append((node, _display_name(node)))
        return items

    def _bind_group_item(self, g, items, scope: Scope) -> Expr:
        if isinstance(g, exp.Literal) and not g.is_string:
            position = int(g.this)
            if not 1 <= position <= len(items):
                raise BindError(f"GROUP BY position {position} is not in the select list")
            node = items[position - 1][0]
            if _contains_aggregate(node):
                raise BindError(f"cannot GROUP BY an aggregate: {node_name(node)}")
            return self.bind_expr(node, ExprContext(scope, clause="GROUP BY"))
        if isinstance(g, exp.Column) and not g.table and not scope.lookup_local(None, g.name):
            for node, name in items:
                if name.lower() == g.name.lower():
                    return self.bind_expr(node, ExprContext(scope, clause="GROUP BY"))
        return self.bind_expr(g, ExprContext(scope, clause="GROUP BY"))

    def _lift_to_groups(self, e: Expr, keys: list[tuple[Field, Expr]], agg: AggContext, scope: Scope) -> Expr:
        """Rewrite a post-aggregation expression over the Aggregate's output: group-key expressions
        become references to the key columns; any other column is an error (ONLY_FULL_GROUP_BY)."""
        for f, k in keys:
            if e == k:
                return f.ref()
        if isinstance(e, ColumnRef):
            if e.id in agg.ids_set() or e.id not in scope.own_ids():
                return e       # an aggregate's result, or a correlated outer column
            raise BindError(f"column {e.name!r} must appear in GROUP BY or be used in an aggregate function")
        if isinstance(e, Call):
            args = tuple(self._lift_to_groups(a, keys, agg, scope) for a in e.args)
            return Call(e.op, args, e.type, e.options)
        return e

    # ---------------------------------------------------------------------------------------------
    # expressions
    # ---------------------------------------------------------------------------------------------
    def bind_expr(self, node: exp.Expression, ctx: ExprContext) -> Expr:
        self._bound += 1
        if self._bound % _CHECK_EVERY == 0:          # statement_timeout: a statement of 500,000 values
            check_statement_deadline()
        if node is None:                             # an operand sqlglot left out: DAY() is Day(TsOrDsToDate())
            raise BindError(f"an argument is missing in {ctx.clause}")
        if isinstance(node, exp.Func) and any(required and node.args.get(name) is None
                                              for name, required in type(node).arg_types.items()):
            raise BindError(f"{sql_words(node)}: an argument is missing")     # sqlglot parses CEIL()
        handler = getattr(self, "_bind_" + type(node).__name__, None)
        if handler is None:
            if type(node) in AGGREGATES:
                return self._bind_aggregate(node, ctx)
            if type(node) in _BINARY_OPS:
                return self._bind_binary(node, ctx)
            if type(node) in _SIMPLE_FUNCTIONS:
                return self._bind_simple_function(node, ctx)
            raise not_supported(node)
        return handler(node, ctx)

    def _fold(self, e: Expr) -> Expr:
        if isinstance(e, Call) and e.op not in ("now", "current_date") and all(
                isinstance(a, Literal) for a in e.args):
            return fold_constant(e)
        return e

    def coerce(self, e: Expr, target: T.SqlType) -> Expr:
        if e.type == target or target.kind == "null":
            return e
        if e.type.kind == target.kind == "string":
            return e
        if e.type.kind == "string" and target.kind in ("int", "decimal", "float") and strict_text_numbers.get():
            return self._fold(Call("cast", (e,), target, ("strict",)))
        if e.type.kind == target.kind == "int" and e.type.bits <= target.bits:
            return Call("cast", (e,), target)
        return self._fold(Call("cast", (e,), target))

    def make_comparison(self, op: str, a: Expr, b: Expr) -> Expr:
        if a.type.kind == "string" and b.type.is_temporal:
            a = self.coerce(a, _temporal_of_string(a, b.type))
        elif b.type.kind == "string" and a.type.is_temporal:
            b = self.coerce(b, _temporal_of_string(b, a.type))
        if isinstance(b, Literal) and not isinstance(a, Literal) and _fits_exactly(b, a.type):
            return self._compared(op, a, b, a, self.coerce(b, a.type))    # cast the constant,
        if isinstance(a, Literal) and not isinstance(b, Literal) and _fits_exactly(a, b.type):
            return self._compared(op, a, b, self.coerce(a, b.type), b)    # not every row
        common = T.common_type(a.type, b.type, f"comparison {a} {op} {b}")
        if common.kind == "null":
            common = T.BOOLEAN       # NULL = NULL: any concrete type will do, the kernels need one
        return self._compared(op, a, b, self.coerce(a, common), self.coerce(b, common))

    def _collated_pair(self, a: Expr, b: Expr, common: T.SqlType) -> tuple[Expr, Expr]:
        """``a`` and ``b`` as compared as ``common`` (IN / ANY subqueries): strings by their keys."""
        a2, b2 = self.coerce(a, common), self.coerce(b, common)
        if is_string(a2) and is_string(b2):
            name = common_collation([a, b], "IN subquery")
            a2, b2 = keyed(a2, name), keyed(b2, name)
        return a2, b2

    def _compared(self, op: str, a: Expr, b: Expr, a2: Expr, b2: Expr) -> Expr:
        """``a2 op b2`` (``a``, ``b`` coerced); strings compare by their collation keys."""
        if is_string(a2) and is_string(b2):
            name = common_collation([a, b], f"comparison {a} {op} {b}")
            # a constant's key is not folded into the plan: the plan cache puts new values where the
            # old ones sit (the filter kernels key a constant once per scan)
            a2, b2 = keyed(a2, name), keyed(b2, name)
        return self._fold(Call(op, (a2, b2), T.BOOLEAN))

    # leaves
    def _bind_Column(self, node: exp.Column, ctx: ExprContext) -> Expr:
        if "canopy_field" in node.meta:
            return node.meta["canopy_field"].ref()
        if isinstance(node.this, exp.Star):
            raise BindError("* is only allowed in the select list and COUNT(*)")
        name, qualifier = node.name, node.table or None
        if ctx.aliases is not None and qualifier is None and not ctx.scope.lookup_local(None, name) \
                and name.lower() in ctx.aliases:
            return ctx.aliases[name.lower()]
        f = ctx.scope.resolve(qualifier, name)
        return f.ref()

    def _bind_Identifier(self, node: exp.Identifier, ctx: ExprContext) -> Expr:
        return self._bind_Column(exp.Column(this=node), ctx)

    def _bind_Literal(self, node: exp.Literal, ctx: ExprContext) -> Expr:
        if node.is_string:      # in the connection's collation (SET NAMES ... COLLATE), coercible
            return Literal(node.this, T.TEXT.with_collation(collation.connection()))
        text = node.this
        if any(c in text for c in ".eE") and not text.lower().startswith("0x"):
            if "e" in text.lower():
                value = float(text)
                if value in (float("inf"), float("-inf")):
                    raise BadDataError(f"the number {text} is out of the range of DOUBLE")
                return Literal(value, T.DOUBLE)
            value = decimal.Decimal(text)
        else:
            value = int(text, 0) if text.lower().startswith("0x") else int(text)
        if len(decimal.Decimal(value).as_tuple().digits) > T.MAX_DECIMAL_PRECISION:
            raise BadDataError(f"the number {text} has more than {T.MAX_DECIMAL_PRECISION} digits")
        return Literal(value, T.python_type_of(value))

    def _bind_Null(self, node, ctx) -> Expr:
        return Literal(None, T.NULL)

    def _bind_Boolean(self, node: exp.Boolean, ctx) -> Expr:
        return Literal(bool(node.this), T.BOOLEAN)

    def _bind_Paren(self, node, ctx) -> Expr:
        return self.bind_expr(node.this, ctx)

    def _bind_Placeholder(self, node, ctx) -> Expr:
        raise BindError("statement has a parameter placeholder but no parameters were given")

    def _bind_subquery_plan(self, node, ctx: ExprContext) -> tuple[LogicalPlan, list[str], bool]:
        """A subquery bound with its outer references in place: (plan, names, correlated)."""
        while isinstance(node, exp.Subquery) and not node.alias:
            node = node.this
        probe = Scope(parent=ctx.scope)
        sub = Binder(self.catalog, self.database, self.ids)
        sub.subqueries = self.subqueries
        sub.cte_uses = self.cte_uses
        plan, names = sub.bind_query(node, probe, self.visible_ctes)
        return plan, names, bool(probe.outer_refs)

    def _collector(self, ctx: ExprContext, what: str) -> SubqueryCollector:
        if ctx.subqueries is None:
            raise UnsupportedError(f"{what} in {ctx.clause}")
        return ctx.subqueries

    def _bind_Subquery(self, node: exp.Subquery, ctx: ExprContext) -> Expr:
        """A scalar subquery: uncorrelated, an init plan run once before the query; correlated, a value
        decorrelate.py joins in."""
        plan, names, correlated = self._bind_subquery_plan(node.this, ctx)
        if len(plan.fields) != 1:
            raise BindError(f"scalar subquery returns {len(plan.fields)} columns, expected 1")
        if correlated:
            result = Field(self.ids.new("subquery"), "subquery", plan.fields[0].type, True)
            return self._collector(ctx, "correlated scalar subquery").add(SubqueryUse("scalar", plan, result))
        self.subqueries.append(Query(plan, tuple(names), ()))
        return ScalarParam(len(self.subqueries) - 1, plan.fields[0].type)

    def _bind_Window(self, node: exp.Window, ctx: ExprContext) -> Expr:
        return bind_window.bind_window_call(self, node, ctx)

    def aggregate_call(self, node, ctx: ExprContext) -> AggCall:
        """The AggCall an aggregate node binds to in ``ctx``'s scope, not added to the SELECT's
        aggregates (a window aggregate is typed as the GROUP BY one is)."""
        collected = AggContext(self.ids)
        self._bind_aggregate(node, ExprContext(ctx.scope, collected, clause=ctx.clause))
        return collected.calls[0][1]

    def _bind_Exists(self, node, ctx) -> Expr:
        plan, names, correlated = self._bind_subquery_plan(node.this, ctx)
        if correlated:
            result = Field(self.ids.new("exists"), "exists", T.BOOLEAN, False)
            return self._collector(ctx, "correlated EXISTS").add(SubqueryUse("exists", plan, result))
        # uncorrelated: an init plan, COUNT(*) > 0 over its first row
        count = Field(self.ids.new("count"), "count", T.BIGINT, False)
        counted = Aggregate(Limit(plan, 1, 0), (), ((count, AggCall("count_star", None, T.BIGINT)),))
        found = Field(self.ids.new("exists"), "exists", T.BOOLEAN, False)
        self.subqueries.append(Query(Project(counted, ((found, Call("gt", (count.ref(), Literal(0, T.BIGINT)),
                                                                         T.BOOLEAN)),)), ("exists",), ()))
        return ScalarParam(len(self.subqueries) - 1, T.BOOLEAN)

    def _bind_quantified(self, probe_node, query_node, op: str, negate: bool, ctx: ExprContext) -> Expr:
        """``probe op ANY (query)`` (``negate``: NOT of it; IN is = ANY, ALL is NOT with the negated
        comparison); ``probe`` may be a row value (a tuple) for IN."""
        collector = self._collector(ctx, "IN (subquery)" if op == "eq" else "ANY / ALL (subquery)")
        probe_node = _unparen(probe_node)
        probe_nodes = probe_node.expressions if isinstance(probe_node, exp.Tuple) else [probe_node]
        probes = [self.bind_expr(p, ctx) for p in probe_nodes]
        plan, _, _ = self._bind_subquery_plan(query_node, ctx)
        if len(plan.fields) != len(probes):
            raise BindError(f"the subquery returns {len(plan.fields)} columns, the left side has {len(probes)}")
        if len(probes) > 1 and op != "eq":
            raise UnsupportedError("a row value compared with ANY / ALL other than = and <>")
        casts, coerced = [], []
        for p, f in zip(probes, plan.fields):
            common = T.common_type(p.type, f.type, "IN subquery")
            if common.kind == "null":
                common = T.BIGINT
            left, right_key = self._collated_pair(p, f.ref(), common)
            coerced.append(left)
            casts.append((Field(self.ids.new(f.name), f.name, common, True), right_key))
        plan = Project(plan, tuple(casts))
        result = Field(self.ids.new("in"), "in", T.BOOLEAN, True)
        probe = tuple(coerced) if isinstance(probe_node, exp.Tuple) else coerced[0]
        return collector.add(SubqueryUse("any", plan, result, probe, op, negate))

    # operators
    def _bind_binary(self, node, ctx) -> Expr:
        op = _BINARY_OPS[type(node)]
        left_node, right_node = node.this, node.expression
        if op in ("add", "subtract") and (isinstance(right_node, exp.Interval) or isinstance(left_node, exp.Interval)):
            return self._bind_interval_arith(node, op, ctx)
        if isinstance(right_node, (exp.Any, exp.All)) and op in _QUANTIFIABLE:
            if isinstance(right_node, exp.All):       # x > ALL (S) is NOT (x <= ANY (S))
                return self._bind_quantified(left_node, right_node.this, _QUANTIFIABLE[op], True, ctx)
            return self._bind_quantified(left_node, right_node.this, op, False, ctx)
        a, b = self.bind_expr(left_node, ctx), self.bind_expr(right_node, ctx)
        if op in _COMPARISON_OPS:
            return self.make_comparison(op, a, b)
        if op in ("and", "or"):
            for side in (a, b):
                if side.type.kind not in ("bool", "null", "int"):
                    raise TypeMismatchError(f"{op.upper()} needs boolean operands, got {side.type} in {node_name(node)}")
            return self._fold(Call(op, (self._as_bool(a), self._as_bool(b)), T.BOOLEAN))
        division = (ZERO_DIVISOR_IS_ERROR,) if op in ("divide", "mod", "int_divide") and strict_division.get() \
            else ()
        if op == "int_divide":
            return self._fold(Call(op, (a, b), T.BIGINT, division))
        symbol = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/", "mod": "%"}[op]
        if a.type.is_temporal or b.type.is_temporal:
            raise TypeMismatchError(f"operator {symbol} on {a.type} and {b.type} in {node_name(node)}; "
                                    "use INTERVAL arithmetic or DATEDIFF")
        if a.type.kind == "string":
            a = self.coerce(a, T.DOUBLE)
        if b.type.kind == "string":
            b = self.coerce(b, T.DOUBLE)
        result = T.arithmetic_type(symbol, a.type, b.type, node_name(node))
        return self._fold(Call(op, (a, b), result, division))

    def _as_bool(self, e: Expr) -> Expr:
        if e.type.kind == "int":
            return self.make_comparison("ne", e, Literal(0, T.BIGINT))
        if e.type.kind == "null":
            return self.coerce(e, T.BOOLEAN)     # NULL AND FALSE: the Kleene kernels need a boolean NULL
        return e

    def _bind_interval_arith(self, node, op: str, ctx) -> Expr:
        date_node, interval = node.this, node.expression
        if isinstance(date_node, exp.Interval):
            if op == "subtract":
                raise TypeMismatchError(f"cannot subtract a date from an interval: {node_name(node)}")
            date_node, interval = interval, date_node
        d = self.bind_expr(date_node, ctx)
        if d.type.kind in ("string", "null"):
            d = self.coerce(d, T.DATE)
        if not d.type.is_temporal:
            raise TypeMismatchError(f"INTERVAL arithmetic needs a DATE or DATETIME, got {d.type} in {node_name(node)}")
        return self._interval(d, interval, -1 if op == "subtract" else 1, ctx)

    def _interval(self, d: Expr, interval: exp.Interval, sign: int, ctx) -> Expr:
        amount = self.bind_expr(interval.this, ctx)
        unit = (interval.unit.name if interval.unit is not None else "DAY").upper()
        if unit.endswith("S"):
            unit = unit[:-1]
        if amount.type.kind == "string":
            amount = self.coerce(amount, T.BIGINT)
        if sign < 0:
            amount = self._fold(Call("negate", (amount,), amount.type))
        if unit in ("DAY", "WEEK"):
            if unit == "WEEK":
                amount = self._fold(Call("multiply", (amount, Literal(7, T.BIGINT)), T.BIGINT))
            return self._fold(Call("date_add_days", (d, amount), d.type))
        if unit in ("MONTH", "QUARTER", "YEAR"):
            factor = {"MONTH": 1, "QUARTER": 3, "YEAR": 12}[unit]
            if factor != 1:
                amount = self._fold(Call("multiply", (amount, Literal(factor, T.BIGINT)), T.BIGINT))
            return self._fold(Call("date_add_months", (d, amount), d.type))
        if unit in _MICROSECONDS_PER:
            if amount.type.kind not in ("int", "null"):
                raise UnsupportedError(f"INTERVAL of a fractional number of {unit.lower()}s")
            amount = self._fold(Call("multiply", (self.coerce(amount, T.BIGINT),
                                                  Literal(_MICROSECONDS_PER[unit], T.BIGINT)), T.BIGINT))
            return self._fold(Call("date_add_micros", (self.coerce(d, T.DATETIME), amount), T.DATETIME))
        raise UnsupportedError(f"INTERVAL unit {unit}")

    def _bind_DateAdd(self, node, ctx) -> Expr:
        return self._date_add(node, ctx, 1)

    def _bind_DateSub(self, node, ctx) -> Expr:
        return self._date_add(node, ctx, -1)

    def _date_add(self, node, ctx, sign) -> Expr:
        d = self.bind_expr(node.this, ctx)
        if d.type.kind in ("string", "null"):
            d = self.coerce(d, T.DATE)
        interval = node.expression
        if not isinstance(interval, exp.Interval):
            interval = exp.Interval(this=interval, unit=node.args.get("unit") or exp.var("DAY"))
        return self._interval(d, interval, sign, ctx)

    def _bind_Neg(self, node, ctx) -> Expr:
        a = self.bind_expr(node.this, ctx)
        if isinstance(a, Literal) and a.value is not None and a.type.is_numeric:
            # copy_negate is exact; a Decimal's unary minus rounds to the context's 28 digits
            if isinstance(a.value, int) and not isinstance(a.value, bool):
                return Literal(-a.value, T.python_type_of(-a.value))    # -9223372036854775808 is a BIGINT
            return Literal(a.value.copy_negate() if isinstance(a.value, decimal.Decimal) else -a.value,
                           T.signed(a.type))
        return self._fold(Call("negate", (a,), T.signed(a.type)))      # -x of an UNSIGNED x is signed

    def _bind_Not(self, node, ctx) -> Expr:
        a = self._as_bool(self.bind_expr(node.this, ctx))
        return self._fold(Call("not", (a,), T.BOOLEAN))

    def _bind_Is(self, node: exp.Is, ctx) -> Expr:
        a = self.bind_expr(node.this, ctx)
        target = node.expression
        if isinstance(target, exp.Null):
            return self._fold(Call("is_null", (a,), T.BOOLEAN))
        if isinstance(target, exp.Boolean):
            truth = self._fold(Call("is_true", (self._as_bool(a),), T.BOOLEAN))
            return truth if target.this else self._fold(Call(
                "is_true", (self._fold(Call("not", (self._as_bool(a),), T.BOOLEAN)),), T.BOOLEAN))
        raise UnsupportedError(f"IS {node_name(target)}")

    def _bind_Between(self, node: exp.Between, ctx) -> Expr:
        x = self.bind_expr(node.this, ctx)
        low, high = self.bind_expr(node.args["low"], ctx), self.bind_expr(node.args["high"], ctx)
        return self._fold(Call("and", (self.make_comparison("ge", x, low), self.make_comparison("le", x, high)),
                               T.BOOLEAN))

    def _bind_In(self, node: exp.In, ctx) -> Expr:
        if node.args.get("query") is not None:
            return self._bind_quantified(node.this, node.args["query"], "eq", False, ctx)
        x = self.bind_expr(node.this, ctx)
        values = [self.bind_expr(v, ctx) for v in node.expressions]
        if all(isinstance(v, Literal) for v in values):
            common = x.type
            for v in values:
                if v.type.kind != "null":
                    common = T.common_type(common, v.type if not (v.type.kind == "string" and x.type.is_temporal)
                                           else x.type, "IN list")
            x2 = self.coerce(x, common)
            coerced = tuple(self._constant(self.coerce(v, common)) if v.type.kind != "null" else None
                            for v in values)
            if is_string(x2):
                name = common_collation([x] + [v for v in values if is_string(v)], "IN")
                x2 = keyed(x2, name)        # the evaluator keys the list's values alike
            return self._fold(Call("in_list", (x2,), T.BOOLEAN, (coerced, False)))
        result = None
        for v in values:
            eq = self.make_comparison("eq", x, v)
            result = eq if result is None else Call("or", (result, eq), T.BOOLEAN)
        return result

    def _bind_Like(self, node, ctx, escape: Optional[str] = None, negated: bool = False) -> Expr:
        negated = negated or bool(node.args.get("negate"))      # sqlglot >= 28 folds NOT into LIKE
        a = self.bind_expr(node.this, ctx)
        pattern = self.bind_expr(node.expression, ctx)
        # MySQL matches the text of a number (or date) on either side: 5 LIKE 5, n LIKE '1%'
        if a.type.kind != "string":
            a = self.coerce(a, T.TEXT)
        if pattern.type.kind != "string":
            pattern = self.coerce(pattern, T.TEXT)
        if is_string(pattern):
            name = common_collation([a, pattern], "LIKE")
            if needs_key(name, pad=False):        # LIKE never pads: 'a ' LIKE 'a' is false
                a, pattern = keyed(a, name, pad=False), keyed(pattern, name, pad=False)
                escape = list_keys((escape,), name, False)[0] if escape else escape
        options = (escape,) if escape else ()
        return self._fold(Call("not_like" if negated else "like", (a, pattern), T.BOOLEAN, options))

    def _bind_Escape(self, node, ctx) -> Expr:
        escape = self.bind_expr(node.expression, ctx)
        if not isinstance(escape, Literal) or not isinstance(escape.value, str) or len(escape.value) != 1:
            raise BindError("ESCAPE needs a single character")
        if not isinstance(node.this, exp.Like):
            raise UnsupportedError(f"ESCAPE on {node_name(node.this)}")
        return self._bind_Like(node.this, ctx, escape.value)

    def _bind_ILike(self, node, ctx) -> Expr:
        a = self.bind_expr(node.this, ctx)
        a = a if a.type.kind == "string" else self.coerce(a, T.TEXT)
        lowered = Call("lower", (a,), T.TEXT)
        pattern = self.bind_expr(node.expression, ctx)
        pattern = pattern if pattern.type.kind == "string" else self.coerce(pattern, T.TEXT)
        op = "not_like" if node.args.get("negate") else "like"
        return self._fold(Call(op, (lowered, self._fold(Call("lower", (pattern,), T.TEXT))), T.BOOLEAN))

    def _bind_Case(self, node: exp.Case, ctx) -> Expr:
        operand = self.bind_expr(node.this, ctx) if node.this is not None else None
        conditions, values = [], []
        for branch in node.args.get("ifs") or []:
            cond = self.bind_expr(branch.this, ctx)
            if operand is not None:
                cond = self.make_comparison("eq", operand, cond)
            conditions.append(self._as_bool(cond))
            values.append(self.bind_expr(branch.args["true"], ctx))
        default = self.bind_expr(node.args["default"], ctx) if node.args.get("default") is not None \
            else Literal(None, T.NULL)
        result_type = default.type
        for v in values:
            result_type = T.common_type(result_type, v.type, "CASE")
        if result_type.kind == "null":
            result_type = T.TEXT
        args = []
        for c, v in zip(conditions, values):
            args.extend([c, self.coerce(v, result_type)])
        args.append(self.coerce(default, result_type))
        return Call("case", tuple(args), result_type)

    def _bind_If(self, node: exp.If, ctx) -> Expr:
        cond = self._as_bool(self.bind_expr(node.this, ctx))
        a = self.bind_expr(node.args["true"], ctx)
        b = self.bind_expr(node.args["false"], ctx) if node.args.get("false") is not None else Literal(None, T.NULL)
        t = T.common_type(a.type, b.type, "IF")
        return self._fold(Call("if", (cond, self.coerce(a, t), self.coerce(b, t)), t))

    def _bind_Coalesce(self, node, ctx) -> Expr:
        args = [self.bind_expr(node.this, ctx)] + [self.bind_expr(e, ctx) for e in node.expressions]
        t = args[0].type
        for a in args[1:]:
            t = T.common_type(t, a.type, "COALESCE")
        return self._fold(Call("coalesce", tuple(self.coerce(a, t) for a in args), t))

    def _bind_Nullif(self, node, ctx) -> Expr:
        a, b = self.bind_expr(node.this, ctx), self.bind_expr(node.expression, ctx)
        t = T.common_type(a.type, b.type, "NULLIF")
        options = (common_collation([a, b], "NULLIF"),) if t.kind == "string" else ()   # equal as keys
        return self._fold(Call("nullif", (self.coerce(a, t), self.coerce(b, t)), t, options))

    def _bind_Greatest(self, node, ctx) -> Expr:
        return self._extreme(node, ctx, "greatest")

    def _bind_Least(self, node, ctx) -> Expr:
        return self._extreme(node, ctx, "least")

    def _extreme(self, node, ctx, op) -> Expr:
        args = [self.bind_expr(node.this, ctx)] + [self.bind_expr(e, ctx) for e in node.expressions]
        t = args[0].type
        for a in args[1:]:
            t = T.common_type(t, a.type, op.upper())
        options = ()
        if t.kind == "string":      # strings compare under their common collation ('B' > 'a' under _ci)
            name = common_collation([a for a in args if is_string(a)] or args, op.upper())
            options = (name,) if not collation.is_binary(name) else ()
            t = t.with_collation(name)
        return self._fold(Call(op, tuple(self.coerce(a, t) for a in args), t, options))

    def _bind_Collate(self, node: exp.Collate, ctx) -> Expr:
        a = self.bind_expr(node.this, ctx)
        name = collation.resolve(node.expression.name)
        if a.type.kind == "null":
            a = self.coerce(a, T.TEXT)
        if a.type.kind != "string":
            raise BindError(f"COLLATE {name} needs a string, got {a.type} in {node_name(node)}")
        return Call("collate", (a,), a.type.with_collation(name))

    def _bind_Cast(self, node: exp.Cast, ctx) -> Expr:
        a = self.bind_expr(node.this, ctx)
        to = node.args["to"]
        if to.this in (exp.DataType.Type.BINARY, exp.DataType.Type.VARBINARY) and not to.expressions:
            # BINARY x / CAST(x AS BINARY): compared exactly. Canopy keeps it a string (no VARBINARY type).
            if a.type.kind != "string":
                a = self.coerce(a, T.TEXT)
            return Call("collate", (a,), a.type.with_collation(collation.BIN))
        target = self.sql_type(to)
        if a.type.kind == "string" and target.kind == "string":
            return a
        return self._fold(Call("cast", (a,), target))

    _bind_TryCast = _bind_Cast

    def sql_type(self, dt: exp.DataType) -> T.SqlType:
        name = dt.this.name if hasattr(dt.this, "name") else str(dt.this)
        params = tuple(int(p.this.this) if isinstance(p.this, exp.Literal) else int(p.name)
                       for p in dt.expressions if isinstance(p, exp.DataTypeParam))
        name = name.upper()
        if name == "CHAR" and not params:
            return T.TEXT      # CAST(x AS CHAR)
        return T.from_sql_name(name, params)

    def _bind_Extract(self, node: exp.Extract, ctx) -> Expr:
        unit = node.this.name.upper()
        d = self.bind_expr(node.expression, ctx)
        if d.type.kind in ("string", "null"):
            d = self.coerce(d, T.DATE)
        if not d.type.is_temporal:
            raise TypeMismatchError(f"EXTRACT({unit} FROM ...) needs a date, got {d.type}")
        return self._fold(Call("extract", (d,), T.BIGINT, (unit,)))

    def _date_part(self, node, ctx, unit) -> Expr:
        inner = node.this
        if isinstance(inner, exp.TsOrDsToDate):     # sqlglot reads YEAR(x) as YEAR(DATE(x))
            inner = inner.this
        d = self.bind_expr(inner, ctx)
        if d.type.kind in ("string", "null"):
            d = self.coerce(d, T.DATE)
        if not d.type.is_temporal:
            raise TypeMismatchError(f"{unit}() needs a date, got {d.type} in {node_name(node)}")
        return self._fold(Call("extract", (d,), T.BIGINT, (unit,)))

    def _bind_Year(self, node, ctx):
        return self._date_part(node, ctx, "YEAR")

    def _bind_Month(self, node, ctx):
        return self._date_part(node, ctx, "MONTH")

    def _bind_Day(self, node, ctx):
        return self._date_part(node, ctx, "DAY")

    def _bind_Quarter(self, node, ctx):
        return self._date_part(node, ctx, "QUARTER")

    def _bind_DayOfMonth(self, node, ctx):
        return self._date_part(node, ctx, "DAY")

    def _bind_DayOfWeek(self, node, ctx):
        return self._date_part(node, ctx, "DAYOFWEEK")

    def _bind_DayOfYear(self, node, ctx):
        return self._date_part(node, ctx, "DAYOFYEAR")

    def _bind_DateDiff(self, node, ctx) -> Expr:
        a, b = self.bind_expr(node.this, ctx), self.bind_expr(node.expression, ctx)
        a = self.coerce(a, T.DATE) if a.type.kind in ("string", "null") else a
        b = self.coerce(b, T.DATE) if b.type.kind in ("string", "null") else b
        return self._fold(Call("datediff", (a, b), T.BIGINT))

    def _bind_CurrentDate(self, node, ctx) -> Expr:
        return Call("current_date", (), T.DATE)

    def _bind_CurrentTimestamp(self, node, ctx) -> Expr:
        return Call("now", (), T.DATETIME)

    def _bind_Substring(self, node: exp.Substring, ctx) -> Expr:
        s = self._string_arg(node.this, ctx)
        start = self.bind_expr(node.args["start"], ctx) if node.args.get("start") is not None else Literal(1, T.BIGINT)
        args = [s, start]
        if node.args.get("length") is not None:
            args.append(self.bind_expr(node.args["length"], ctx))
        return self._fold(Call("substring", tuple(args), T.varchar(s.type.length)))

    def _string_arg(self, node, ctx) -> Expr:
        e = self.bind_expr(node, ctx)
        if e.type.kind == "bool":
            e = self.coerce(e, T.BIGINT)     # MySQL's booleans are integers: CONCAT(TRUE) is '1'
        return e if e.type.kind == "string" else self.coerce(e, T.TEXT)

    def _bind_Length(self, node, ctx) -> Expr:
        s = self._string_arg(node.this, ctx)
        return self._fold(Call("octet_length" if node.args.get("binary") else "char_length", (s,), T.BIGINT))

    def _bind_Trim(self, node, ctx) -> Expr:
        if node.args.get("expression") is not None:
            raise UnsupportedError("TRIM(... FROM ...) with explicit characters")
        position = (node.args.get("position") or "BOTH").upper()
        op = {"BOTH": "trim", "LEADING": "ltrim", "TRAILING": "rtrim"}[position]
        return self._fold(Call(op, (self._string_arg(node.this, ctx),), T.TEXT))

    def _bind_Concat(self, node, ctx) -> Expr:
        args = tuple(self._string_arg(e, ctx) for e in node.expressions)
        return self._fold(Call("concat", args, T.TEXT))

    def _bind_StrPosition(self, node, ctx) -> Expr:
        haystack = self._string_arg(node.this, ctx)
        needle = self._string_arg(node.args["substr"], ctx)
        args = (needle, haystack)
        if node.args.get("position") is not None:        # LOCATE(substr, str, pos)
            args += (self._int_arg(node.args["position"], ctx),)
        name = common_collation([needle, haystack], "LOCATE")       # 'A' is found in 'bar' under _ci
        return self._fold(Call("locate", args, T.BIGINT, () if collation.is_binary(name) else (name,)))

    def _int_arg(self, node, ctx) -> Expr:
        e = self.bind_expr(node, ctx)
        return e if e.type.kind in ("int", "null") else self.coerce(e, T.BIGINT)

    def _bind_Left(self, node, ctx) -> Expr:
        args = (self._string_arg(node.this, ctx), self._int_arg(node.expression, ctx))
        return self._fold(Call("left", args, T.TEXT))

    def _bind_Right(self, node, ctx) -> Expr:
        args = (self._string_arg(node.this, ctx), self._int_arg(node.expression, ctx))
        return self._fold(Call("right", args, T.TEXT))

    def _bind_Replace(self, node, ctx) -> Expr:
        if node.args.get("replacement") is None:
            raise BindError(f"{sql_words(node)}: REPLACE takes 3 arguments")
        args = tuple(self._string_arg(node.args[name], ctx) for name in ("this", "expression", "replacement"))
        return self._fold(Call("replace", args, T.TEXT))

    def _bind_TsOrDsToDate(self, node, ctx) -> Expr:
        """DATE(x): the date part of a DATETIME, or a string read as a date."""
        d = self.bind_expr(node.this, ctx)
        if d.type.kind not in ("date", "datetime", "string", "null"):
            raise TypeMismatchError(f"DATE() needs a date, datetime or string, got {d.type} in {node_name(node)}")
        return self.coerce(d, T.DATE)

    def _bind_Log(self, node, ctx) -> Expr:
        """MySQL LOG(x) is ln(x); LOG(b, x) is the logarithm of x to the base b."""
        if node.expression is None:
            return self._fold(Call("ln", (self.bind_expr(node.this, ctx),), T.DOUBLE))
        base, x = self.bind_expr(node.this, ctx), self.bind_expr(node.expression, ctx)
        ln_x, ln_base = Call("ln", (x,), T.DOUBLE), Call("ln", (base,), T.DOUBLE)
        return self._fold(Call("divide", (ln_x, ln_base), T.DOUBLE))

    def _bind_Round(self, node, ctx) -> Expr:
        a = self.bind_expr(node.this, ctx)
        digits = self.bind_expr(node.args["decimals"], ctx) if node.args.get("decimals") is not None else None
        if digits is not None and not isinstance(digits, Literal):
            raise UnsupportedError("ROUND with a non-constant number of digits")
        if digits is not None and digits.value is None:
            return Literal(None, a.type if a.type.kind in ("int", "float", "decimal") else T.DOUBLE)
        nd = _round_digits(digits, node) if digits is not None else 0
        if a.type.kind == "decimal":
            scale = max(0, min(nd, a.type.scale))
            t = T.decimal_type(min(38, a.type.precision - a.type.scale + scale + 1), scale)
        else:
            t = a.type if a.type.kind in ("int", "float") else T.DOUBLE
        args = (a, Literal(nd, T.BIGINT))
        return self._fold(Call("round", args, t))

    def _bind_Anonymous(self, node: exp.Anonymous, ctx) -> Expr:
        name = node.name.upper()
        bound = self.bind_anonymous_function(name, node, ctx)
        if bound is not None:
            return bound
        args = [self.bind_expr(e, ctx) for e in node.expressions]
        if name in ("NOW", "SYSDATE", "LOCALTIMESTAMP"):
            return Call("now", (), T.DATETIME)
        if name in ("MID",):
            s = args[0] if args[0].type.kind == "string" else self.coerce(args[0], T.TEXT)
            return self._fold(Call("substring", (s, *args[1:]), T.TEXT))
        if name in ("IFNULL", "NVL"):
            t = T.common_type(args[0].type, args[1].type, name)
            return self._fold(Call("coalesce", (self.coerce(args[0], t), self.coerce(args[1], t)), t))
        if name in ("CURDATE",):
            return Call("current_date", (), T.DATE)
        raise UnsupportedError(f"function {name}() is not supported")

    def _bind_simple_function(self, node, ctx) -> Expr:
        op, kind = _SIMPLE_FUNCTIONS[type(node)]
        operands = [node.this] + list(node.expressions or [])
        if node.args.get("expression") is not None:
            operands.append(node.args["expression"])
        args = [self.bind_expr(e, ctx) for e in operands if e is not None]
        if kind == "string":
            args = [a if a.type.kind == "string" else self.coerce(a, T.TEXT) for a in args]
            return self._fold(Call(op, tuple(args), T.TEXT if op not in ("starts_with",) else T.BOOLEAN))
        if kind == "float":
            return self._fold(Call(op, tuple(args), T.DOUBLE))
        if kind == "same":
            return self._fold(Call(op, tuple(args), args[0].type))
        if kind == "int":
            t = args[0].type if args[0].type.kind == "int" else T.BIGINT
            return self._fold(Call(op, tuple(args), t))
        raise UnsupportedError(op)

    def _bind_Grouping(self, node: exp.Grouping, ctx: ExprContext) -> Expr:
        if ctx.agg is None or ctx.agg.grouping is None:
            raise BindError(f"{node_name(node)} is not allowed in {ctx.clause}: only with GROUP BY, "
                            "in the select list, HAVING and ORDER BY")
        args = [self.bind_expr(e, ExprContext(ctx.scope, clause="GROUPING")) for e in node.expressions]
        return grouping_call(args, ctx.agg.grouping, node_name(node))

    # aggregates
    def _bind_aggregate(self, node, ctx: ExprContext) -> Expr:
        func = AGGREGATES[type(node)]
        if ctx.agg is None:
            raise BindError(f"aggregate {node_name(node)} is not allowed in {ctx.clause}")
        inner_ctx = ExprContext(ctx.scope, None, None, clause=f"the argument of {func.upper()}",
                                subqueries=ctx.agg.values if ctx.subqueries is not None else None)
        if type(node) in EXTENDED or isinstance(node, exp.WithinGroup):
            inner = node.this if isinstance(node, exp.WithinGroup) else node
            parts = list(inner.iter_expressions()) + ([node.expression] if inner is not node else [])
            if any(_contains_aggregate(a) for a in parts):
                raise BindError(f"aggregate functions cannot be nested: {node_name(node)}")
            call = bind_extended(self, node, ctx, inner_ctx, node_name(node))
            return ctx.agg.add(call, call.func)
        target = node.this
        distinct = False
        if isinstance(target, exp.Distinct):
            distinct = True
            if len(target.expressions) != 1:
                raise UnsupportedError(f"{func.upper()}(DISTINCT a, b) with several columns")
            target = target.expressions[0]
        if func == "count" and (target is None or isinstance(target, exp.Star)):
            return ctx.agg.add(AggCall("count_star", None, T.BIGINT), "count")
        if _contains_aggregate(target):
            raise BindError(f"aggregate functions cannot be nested: {node_name(node)}")
        argument = self.bind_expr(target, inner_ctx)
        t = argument.type
        if func == "count":
            result = T.BIGINT
        elif func in ("sum", "avg"):
            if t.kind == "string":
                argument, t = self.coerce(argument, T.DOUBLE), T.DOUBLE
            if not t.is_numeric and t.kind != "null":
                raise TypeMismatchError(f"{func.upper()} needs a number, got {t} in {node_name(node)}")
            if t.kind in ("int", "bool", "null"):
                if t.kind == "null":
                    argument, t = self.coerce(argument, T.BIGINT), T.BIGINT
                result = T.aggregate_type(func, t)
                if func == "sum":
                    argument = self.coerce(argument, T.BIGINT)
            elif t.kind == "decimal":
                result = T.aggregate_type(func, t)
            else:
                result = T.DOUBLE
        else:
            result = t
        if distinct and is_string(argument):       # COUNT(DISTINCT s): distinct under s's collation
            argument = keyed(argument, argument.type.collation)
        if func in ("min", "max") and is_string(argument) and not collation.is_binary(t.collation):
            # the value whose collation key is smallest / largest (engine/exec/extended_aggregates.py)
            return ctx.agg.add(AggCall("collated_" + func, argument, result,
                                       options=(t.collation or collation.DEFAULT,)), func)
        return ctx.agg.add(AggCall(func, argument, result, distinct), func)


# --- helpers ---------------------------------------------------------------------------------------
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
