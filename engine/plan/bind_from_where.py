"""A SELECT's FROM and WHERE: table items, views and derived tables, joins' ON, and the WHERE
conjuncts that become semi / anti joins or decorrelated scalar comparisons. A mixin of
:class:`engine.plan.binder.Binder`."""
from __future__ import annotations

from typing import Optional

import sqlglot
from sqlglot import exp

from engine import types as T
from engine.errors import BindError, UnsupportedError
from engine.plan import decorrelate
from engine.plan.decorrelate import SubqueryCollector
from engine.plan.plan_walk import free_refs
from engine.core.expressions import Expr, and_all
from engine.core.expressions import equi_pair as _equi_pair
from engine.plan.logical import (Aggregate, Field, Join, LogicalPlan, MultiJoin, Project,
                                 Scan, Values, filter_all)
from engine.plan.joins import bind_join_chain, bind_parenthesised
from engine.plan.lateral import bind_lateral_table
from engine.plan.recursive_ctes import RecursiveName
from engine.plan.scope import Relation, Scope
from engine.plan.sql_words import SELECT_PARTS, TABLE_PARTS, refuse_unread
from engine.plan.bind_context import AggContext, ExprContext, SelectParts, arg, node_name
from engine.plan.bind_helpers import _COMPARISONS, _has_aggregate, _split_and, _unalias, _unparen


class FromWhereBinding:
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
        if from_ is not None and _is_dual(from_.this) and not sel.args.get("joins"):
            from_ = None        # FROM DUAL (a reserved word in MySQL: no table can be named so)
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
                if isinstance(cte, RecursiveName):
                    return self.bind_recursive_reference(cte, alias, scope, ctes)
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
        if isinstance(node, exp.Lateral):       # first in FROM: it may read the enclosing query only
            return bind_lateral_table(self, node, scope, scope, ctes)
        if isinstance(node, exp.Unnest):
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
        bound = self._as_bool(self.bind_expr(node, ExprContext(scope, clause="WHERE", subqueries=values)))
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
        trial = type(self)(self.catalog, self.database, self.ids)
        trial.cte_uses = self.cte_uses
        trial.recursive_ctes = self.recursive_ctes
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


def _is_dual(node) -> bool:
    return isinstance(node, exp.Table) and not node.args.get("db") and node.name.upper() == "DUAL" \
        and not node.args.get("alias")
