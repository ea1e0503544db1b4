"""A SELECT after its WHERE: the select list, GROUP BY, HAVING, DISTINCT, ORDER BY and LIMIT. A mixin
of :class:`engine.plan.binder.Binder`."""
from __future__ import annotations

from typing import Optional

from sqlglot import exp

from engine import types as T
from engine.errors import BindError, UnsupportedError
from engine.plan.bind_collation import is_string, keyed
from engine.plan.bind_grouping import GroupingKeys, bind_group_keys
from engine.plan import decorrelate
from engine.plan.decorrelate import SubqueryCollector, SubqueryUse
from engine.plan.plan_walk import free_refs, substitute_plan
from engine.plan import bind_window
from engine.core.expressions import AggCall, Call, ColumnRef, Expr, Literal
from engine.plan.logical import (Aggregate, Field, Filter, Limit, LogicalPlan, Project,
                                 Sort, SortKey)
from engine.plan.scope import Scope
from engine.plan.sql_words import ORDERED_PARTS, refuse_unread
from engine.plan.bind_context import AggContext, ExprContext, _Lifted, arg, node_name, select_item
from engine.plan.bind_helpers import _column_node, _contains_aggregate, _display_name


class SelectListBinding:
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
        aliased = {id(x.this): x.alias for x in sel.expressions if isinstance(x, exp.Alias)}
        for node, name in items:
            token = select_item.set((node, aliased.get(id(node))))
            try:
                e = self.bind_expr(node, ctx)
            finally:
                select_item.reset(token)
            if aggregating:
                e = self._lift_to_groups(e, key_fields, agg, scope)
            select_exprs.append((name, e))

        having_expr = None
        if having is not None:
            alias_map = {n.lower(): e for n, e in select_exprs}
            having_ctx = ExprContext(scope, agg=agg, aliases=alias_map, clause="HAVING", subqueries=values)
            having_expr = self._lift_to_groups(self._as_bool(self.bind_expr(having.this, having_ctx)), key_fields,
                                               agg, scope)


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
