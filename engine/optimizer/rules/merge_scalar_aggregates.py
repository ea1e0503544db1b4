"""Merge single-row aggregates over the same tree into one aggregation, so each table is read once.

A query often asks several aggregates without GROUP BY of one FROM / JOIN tree, each under its own
WHERE: derived tables cross-joined (``FROM (SELECT COUNT(*) c FROM t WHERE a < 5) x, (SELECT AVG(b) v
FROM t WHERE a >= 5) y``), or scalar subqueries side by side (``SELECT (SELECT COUNT(*) FROM t WHERE a <
5), (SELECT AVG(b) FROM t WHERE a >= 5)``). Each would scan (and join) the tree again. Here those whose
trees are the same (the same tables, columns, joins and join conditions, compared up to column ids) become
ONE aggregation over the tree, filtered by the conjuncts they all share AND the OR of what each adds
(pushed into the scan like any filter), each aggregate reading only its own rows as ``agg(CASE WHEN own
THEN x END)`` (Spark's MergeScalarSubqueries does the same for scalar subqueries).

Correct because every aggregate merged skips NULL inputs (COUNT, SUM, AVG, MIN, MAX, the statistics,
the bit aggregates, GROUP_CONCAT, the percentiles, each with or without DISTINCT): a row outside its own
filter adds a NULL, which changes nothing; ``COUNT(*)`` becomes ``COUNT(CASE WHEN own THEN TRUE END)``.
An aggregate without GROUP BY gives exactly one row, so over no rows COUNT is still 0 and SUM / AVG NULL,
and a cross join of one-row inputs is their one row side by side. Each own filter is computed once, as
a boolean column below the aggregation, whatever number of aggregates read it.

Merged only where it cannot cost more than it saves: every conjunct an aggregate adds reads one input of
the tree (one table of its joins), so the OR of them is a filter of that input and the joins see no more
rows than the least selective aggregate's would; and none reads the leading column of a table's SORT
KEY (there each narrow filter alone skips most segments by their zone maps, their OR would skip none).
Over ONE table, an aggregate whose states do not merge (DISTINCT, MEDIAN) stays apart (its rows go to
one task, and merged all the members' rows would), and the OR is left out (each own filter would be evaluated twice per row; a row outside all
of them is masked off every aggregate anyway): the scan keeps the shared conjuncts and the bounds the own
filters imply (``_hull``). A conditional argument costs no copy (``CASE WHEN own THEN x END`` is ``x``
with ``own`` as its validity bitmap, engine.exec.evaluate._masked), so one scan with masked aggregates
costs less than a filtered scan per aggregate (TPC-DS q09 at SF 1, 15 subqueries over store_sales:
process CPU 316 ms apart, 222 ms merged). Not merged: GROUP BY, HAVING, correlated aggregates,
volatile functions (NOW()), ANY_VALUE (which keeps a NULL), scalar subqueries reading another's value.

>>> from engine import types as T
>>> from engine.core.expressions import AggCall, Call, Literal
>>> from engine.plan.logical import Field, Values
>>> def t(n): return Values((Field(f"a#{n}", "a", T.BIGINT), Field(f"b#{n}", "b", T.BIGINT)), ((1, 2), (7, 8)))
>>> def u(n): return Values((Field(f"k#{n}", "k", T.BIGINT),), ((1,), (7,)))
>>> def star(n, op, k):
...     a, key = Field(f"a#{n}", "a", T.BIGINT).ref(), Field(f"k#{n}", "k", T.BIGINT).ref()
...     return MultiJoin((t(n), u(n)), (Call("eq", (a, key), T.BOOLEAN), Call(op, (a, Literal(k, T.BIGINT)), T.BOOLEAN)))
>>> x = Aggregate(star(1, "lt", 5), (), ((Field("c", "c", T.BIGINT), AggCall("count_star", None, T.BIGINT)),))
>>> y = Aggregate(star(2, "ge", 5), (), ((Field("v", "v", T.BIGINT), AggCall("sum", Field("b#2", "b", T.BIGINT).ref(), T.BIGINT)),))
>>> print(merge_scalar_aggregates(MultiJoin((x, y), ()), None).pretty())
Project c, v
  Aggregate keys=[] aggs=[count(case(filter1, True, NULL)), sum(case(filter2, b, NULL))]
    Project a, b, k, (a < 5) AS filter1, (a >= 5) AS filter2
      MultiJoin ON (a = k) AND ((a < 5) OR (a >= 5))
        Values (2 rows)
        Values (2 rows)
"""
from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass
from typing import Optional

from engine import types as T
from engine.core.expressions import AggCall, Call, ColumnRef, Expr, Literal, ScalarParam, and_all, conjuncts, \
    replace_columns
from engine.errors import UnsupportedError
from engine.exec.extended_aggregates import mergeable
from engine.optimizer.context import OptimizerContext
from engine.plan.logical import (Aggregate, Field, Filter, Join, LogicalPlan, MultiJoin, Project, Query, Scan,
                                 Values, filter_all, map_inputs)
from engine.plan.plan_walk import node_exprs, substitute

# aggregates a NULL input leaves as they were (ANY_VALUE may return it: not here)
_SKIP_NULLS = frozenset({"count_star", "count", "sum", "avg", "min", "max", "collated_min", "collated_max",
                         "var_samp", "var_pop", "stddev_samp", "stddev_pop", "covar_samp", "covar_pop", "corr",
                         "bit_and", "bit_or", "bit_xor", "approx_count_distinct", "median", "percentile_cont",
                         "percentile_disc", "group_concat"})
# a different value per evaluation: two reads of the tree are not one
_VOLATILE = frozenset({"now", "current_date", "unix_timestamp", "single_row", "rand", "uuid"})

_ids = itertools.count(1)


def merge_scalar_aggregates(plan: LogicalPlan, ctx: Optional[OptimizerContext]) -> LogicalPlan:
    """The rule: one-row aggregates cross-joined (inputs of one inner join) merged where they share a tree."""
    plan = map_inputs(plan, lambda child: merge_scalar_aggregates(child, ctx))
    if not isinstance(plan, MultiJoin):
        return plan
    groups = _groups([_member(i) for i in plan.inputs_])
    if not groups:
        return plan
    first = {id(group[0].plan): merged for group, merged in groups}
    gone = {id(m.plan) for group, _ in groups for m in group[1:]}
    inputs = tuple(first.get(id(i), i) for i in plan.inputs_ if id(i) not in gone)
    if len(inputs) == 1:
        return filter_all(inputs[0], plan.conditions)
    return MultiJoin(inputs, plan.conditions)


def merge_scalar_subqueries(subqueries: tuple[Query, ...]) -> tuple[tuple[LogicalPlan, tuple[int, ...]], ...]:
    """Uncorrelated scalar subqueries (a query's init plans) as the plans to run: ``(plan, indices)``,
    the plan's column ``i`` the value of ``$subquery<indices[i]>``. A merged plan stands where its first
    subquery stood; those merged read no other subquery's value, so each value is still known before
    any later subquery reads it."""
    members = [_member(sub.root, scalar=True) if not sub.subqueries else None for sub in subqueries]
    merged = {id(group[0].plan): (plan, group) for group, plan in _groups(members)}
    taken = {id(m.plan) for _, group in merged.values() for m in group}
    out = []
    for index, sub in enumerate(subqueries):
        if id(sub.root) in merged:
            plan, group = merged[id(sub.root)]
            out.append((plan, tuple(members.index(m) for m in group)))
        elif id(sub.root) not in taken:
            out.append((sub.root, (index,)))
    return tuple(out)


class _Unmatched(Exception):
    """A tree (or expression) this rule does not compare."""


@dataclass(frozen=True, eq=False)
class _Member:
    """One aggregate without GROUP BY: ``plan`` = projections over ``aggregate`` over the WHERE
    ``conds`` (and inner join conditions) over ``tree``; ``key`` compares trees, ``tokens`` names each
    column of ``tree`` by its place in it (the same in every tree of equal ``key``)."""

    plan: LogicalPlan
    projects: tuple[Project, ...]
    aggregate: Aggregate
    tree: LogicalPlan
    conds: tuple[Expr, ...]
    key: tuple
    tokens: dict


def _member(plan: LogicalPlan, scalar: bool = False) -> Optional[_Member]:
    projects = []
    node = plan
    while isinstance(node, Project):
        projects.append(node)
        node = node.input
    if not (isinstance(node, Aggregate) and not node.keys and not node.grouping_sets and node.grouping_id is None
            and all(a.func in _SKIP_NULLS for _, a in node.aggregates)):
        return None
    if scalar and len(plan.fields) != 1:
        return None
    body, conds = node.input, []
    while isinstance(body, Filter):
        conds += conjuncts(body.predicate)
        body = body.input
    if isinstance(body, MultiJoin):
        conds += body.conditions
        body = MultiJoin(body.inputs_, ())
    if len(_relations(body)) < 2 and not all(mergeable(a) for _, a in node.aggregates):
        # over one table, an aggregate whose states do not merge (DISTINCT, MEDIAN) takes its rows to
        # one task: merged, every member's rows would go there, each masked (TPC-DS q28's six COUNT(
        # DISTINCT)s: 30% of store_sales gathered to one aggregation, 0.27 s against 0.21 s apart)
        return None
    tokens: dict = {}
    try:
        key = _shape(body, "", tokens)
        reads = conds + [x for _, a in node.aggregates for x in a.arguments()]
        reads += [e for p in projects for _, e in p.exprs]
        if scalar:          # an init plan reading another's value must run after it: kept apart
            reads += [e for n in _nodes(body) for e in node_exprs(n)]
        if any(_volatile(e, scalar) for e in reads):
            return None
    except (_Unmatched, UnsupportedError):
        return None
    produced = set(tokens) | {f.id for f, _ in node.aggregates} | {f.id for p in projects for f, _ in p.exprs}
    if not all(e.column_ids() <= produced for e in reads):     # correlated: reads an outer column
        return None
    return _Member(plan, tuple(projects), node, body, tuple(conds), key, tokens)


def _volatile(e: Expr, params: bool) -> bool:
    return any((isinstance(x, Call) and x.op in _VOLATILE) or (params and isinstance(x, ScalarParam))
               for x in e.walk())


def _nodes(plan: LogicalPlan):
    yield plan
    for child in plan.inputs:
        yield from _nodes(child)


def _groups(members: list) -> list[tuple[list[_Member], LogicalPlan]]:
    """The members with equal trees (two or more), each group with its merged plan."""
    groups: list[list[_Member]] = []
    for m in members:
        if m is None:
            continue
        for group in groups:
            if group[0].key == m.key:
                group.append(m)
                break
        else:
            groups.append([m])
    out = []
    for group in groups:
        if len(group) > 1:
            merged = _merge(group)
            if merged is not None:
                out.append((group, merged))
    return out


def _merge(group: list[_Member]) -> Optional[LogicalPlan]:
    first = group[0]
    by_token = {token: id_ for id_, token in first.tokens.items()}
    types = {f.id: f for f in _all_fields(first.tree)}
    remapped = []           # per member: a mapping of its tree's columns to the first member's
    for m in group:
        mapping = {}
        for id_, token in m.tokens.items():
            f = types[by_token[token]]
            mapping[id_] = ColumnRef(f.id, f.type, f.name)
        remapped.append(mapping)
    conds = [[replace_columns(c, mapping) for c in m.conds] for m, mapping in zip(group, remapped)]
    common = [c for c in _unique(conds[0]) if all(c in other for other in conds[1:])]
    own = [[c for c in _unique(cs) if c not in common] for cs in conds]
    # the OR of the own filters must be a filter of one input of the tree: else the joins below it
    # would make rows no single aggregate's joins made
    relations = [r.field_ids() for r in _relations(first.tree)]
    read = frozenset().union(*(c.column_ids() for cs in own for c in cs))
    if read and not any(read <= r for r in relations):
        return None
    if read & _leading_sort_columns(first.tree):
        return None
    wheres = [and_all(cs) for cs in own]
    where = common
    if all(w is not None for w in wheres):
        where = common + _hull(own)
        if len(relations) > 1:
            # the joins see only rows some aggregate reads; over one table the OR would cost a
            # second evaluation of every own filter per row, and a row outside all of them is
            # masked off every aggregate anyway
            where.append(_or_all(_unique(wheres)))
    tree = MultiJoin(first.tree.inputs_, tuple(where)) if isinstance(first.tree, MultiJoin) \
        else filter_all(first.tree, where)
    flags: dict = {}        # each distinct own filter -> its boolean column
    for w in wheres:
        if w is not None and w not in flags:
            name = f"filter{len(flags) + 1}"
            flags[w] = Field(f"{name}#m{next(_ids)}", name, T.BOOLEAN, True)
    if flags:
        tree = Project(tree, tuple((f, f.ref()) for f in tree.fields) + tuple((f, w) for w, f in flags.items()))
    aggregates, outputs = [], []
    for m, mapping, w in zip(group, remapped, wheres):
        flag = flags[w].ref() if w is not None else None
        aggregates += [(f, _conditional(substitute(a, mapping), flag)) for f, a in m.aggregate.aggregates]
        outputs += _composed(m)
    return Project(Aggregate(tree, (), tuple(aggregates)), tuple(outputs))


_LOWER = {"ge": "ge", "gt": "ge", "eq": "ge"}
_UPPER = {"le": "le", "lt": "le", "eq": "le"}
_FLIPPED = {"ge": "le", "gt": "lt", "le": "ge", "lt": "gt", "eq": "eq"}


def _hull(own: list[list[Expr]]) -> list[Expr]:
    """Bounds the OR of the own filters implies: where each bounds column ``c`` from below (above) by
    a constant, ``c >= `` the least of them (``c <=`` the greatest). A conjunct the scan checks by its
    kernels and zone maps before the OR (which it evaluates row by row): TPC-DS q28's six quantity
    ranges 0-5 ... 26-30 give ``ss_quantity BETWEEN 0 AND 30``."""
    per_filter = []
    for conds in own:
        bounds: dict = {}
        for c in conds:
            if not (isinstance(c, Call) and c.op in _FLIPPED and len(c.args) == 2):
                continue
            column, value = c.args
            op = c.op
            if isinstance(column, Literal):
                column, value, op = value, column, _FLIPPED[op]
            if not (isinstance(column, ColumnRef) and isinstance(value, Literal) and value.value is not None):
                continue
            for side, sides in (("lower", _LOWER), ("upper", _UPPER)):
                if op in sides:
                    bounds.setdefault((column, side), []).append(value)
        per_filter.append(bounds)
    out = []
    for column, side in per_filter[0]:
        values = [v for bounds in per_filter for v in bounds.get((column, side), [None])]
        if any(v is None for v in values):
            continue
        try:
            # the loosest bound of all: each filter's own tightest is not needed, any of its bounds holds
            pick = min(values, key=lambda v: v.value) if side == "lower" else max(values, key=lambda v: v.value)
        except TypeError:
            continue
        out.append(Call("ge" if side == "lower" else "le", (column, pick), T.BOOLEAN))
    return out


def _relations(tree: LogicalPlan) -> list[LogicalPlan]:
    """The inputs of a tree's joins (the tree itself when it joins nothing)."""
    if isinstance(tree, MultiJoin):
        return [r for i in tree.inputs_ for r in _relations(i)]
    if isinstance(tree, Join):
        return _relations(tree.left) + _relations(tree.right)
    return [tree]


def _leading_sort_columns(tree: LogicalPlan) -> frozenset[str]:
    """The columns of the tree's scans that lead their table's SORT KEY. A filter on one skips the
    segments whose zone maps rule it out; an OR of such filters skips none (storage checks conjuncts),
    so several narrow ranges merged could read the whole table where each alone read a few segments."""
    out = set()
    for node in _nodes(tree):
        if isinstance(node, Scan) and node.table.sort_key:
            lead = node.table.sort_key[0].lower()
            out |= {f.id for f, c in zip(node.fields, node.column_names) if c.lower() == lead}
    return frozenset(out)


def _conditional(agg: AggCall, flag: Optional[ColumnRef]) -> AggCall:
    """``agg`` over the rows where ``flag`` is true only: its argument NULL elsewhere."""
    if flag is None:
        return agg
    if agg.func == "count_star":
        return AggCall("count", Call("case", (flag, Literal(True, T.BOOLEAN), Literal(None, T.BOOLEAN)), T.BOOLEAN),
                       agg.type)
    arg = Call("case", (flag, agg.arg, Literal(None, agg.arg.type)), agg.arg.type)
    return dataclasses.replace(agg, arg=arg)


def _composed(m: _Member) -> list[tuple[Field, Expr]]:
    """The member's output columns as expressions of its aggregates (its projections folded)."""
    if not m.projects:
        return [(f, f.ref()) for f, _ in m.aggregate.aggregates]
    exprs = list(m.projects[0].exprs)
    for below in m.projects[1:]:
        mapping = dict((f.id, e) for f, e in below.exprs)
        exprs = [(f, replace_columns(e, mapping)) for f, e in exprs]
    return exprs


def _or_all(exprs: list[Expr]) -> Expr:
    out = exprs[0]
    for e in exprs[1:]:
        out = Call("or", (out, e), T.BOOLEAN)
    return out


def _unique(exprs: list) -> list:
    out = []
    for e in exprs:
        if e not in out:
            out.append(e)
    return out


def _all_fields(plan: LogicalPlan):
    yield from plan.fields
    for child in plan.inputs:
        yield from _all_fields(child)


def _shape(plan: LogicalPlan, path: str, tokens: dict) -> tuple:
    """A comparable description of ``plan`` with every column named by its place in the tree (put in
    ``tokens``, id -> name): two trees of equal shape compute the same rows, column for column."""
    if isinstance(plan, Scan):
        _name(plan.fields, path, tokens)
        return ("Scan", plan.table.table_id, plan.column_names, _canonical(plan.filters, tokens))
    if isinstance(plan, Values):
        _name(plan.fields, path, tokens)
        return ("Values", tuple(f.type for f in plan.fields), plan.rows)
    if isinstance(plan, Filter):
        inner = _shape(plan.input, path + "f", tokens)
        return ("Filter", inner, _canonical((plan.predicate,), tokens))
    if isinstance(plan, Project):
        inner = _shape(plan.input, path + "p", tokens)
        exprs = _canonical(tuple(e for _, e in plan.exprs), tokens)
        _name(plan.fields, path, tokens)
        return ("Project", inner, exprs)
    if isinstance(plan, MultiJoin):
        inner = tuple(_shape(i, f"{path}/{n}", tokens) for n, i in enumerate(plan.inputs_))
        return ("MultiJoin", inner, tuple(sorted(_canonical(plan.conditions, tokens), key=repr)))
    if isinstance(plan, Join):
        left = _shape(plan.left, path + "l", tokens)
        right = _shape(plan.right, path + "r", tokens)
        residual = () if plan.residual is None else (plan.residual,)
        return ("Join", plan.kind, left, right, _canonical(plan.left_keys + plan.right_keys + residual, tokens))
    if isinstance(plan, Aggregate):
        inner = _shape(plan.input, path + "a", tokens)
        keys = _canonical(tuple(e for _, e in plan.keys), tokens)
        aggs = tuple(dataclasses.replace(a, arg=None, extra=()) for _, a in plan.aggregates)
        args = _canonical(tuple(x for _, a in plan.aggregates for x in a.arguments()), tokens)
        _name(plan.fields, path, tokens)
        return ("Aggregate", inner, keys, aggs, args, plan.grouping_sets)
    raise _Unmatched(plan.describe())


def _name(fields, path: str, tokens: dict) -> None:
    for i, f in enumerate(fields):
        tokens[f.id] = f"{path}.{i}"


def _canonical(exprs, tokens: dict) -> tuple:
    out = []
    for e in exprs:
        mapping = {}
        for x in e.walk():
            if isinstance(x, ColumnRef):
                if x.id not in tokens:
                    raise _Unmatched(str(x))          # an outer column: not compared
                mapping[x.id] = ColumnRef(tokens[x.id], x.type)
        out.append(replace_columns(e, mapping))
    return tuple(out)
