"""Turn each MultiJoin into a tree of binary joins: dynamic programming over connected subgraphs.

For up to ``DP_LIMIT`` inputs (counting the EXISTS / IN semi and anti joins peeled off them), every
connected set of inputs gets its cheapest tree, built from the cheapest trees of two connected,
connected-to-each-other halves; the cost of a tree is the sum of the estimated rows of the joins in it
(its intermediate results). A pending semi / anti join is one more element of the sets: it is applied
on top of any set that holds the columns it needs, so it lands wherever filtering first is cheapest.
Only pairs joined by an equality are ever split, so the DP never builds a cross product; the trees of
the inputs' connected components (and inputs beyond ``DP_LIMIT``) are then joined greedily: repeatedly
the two subtrees whose join has the smallest estimated output, connected pairs first, a cross product
only when nothing else connects them (the query asked for one). The smaller side of each join becomes
its build (right) side. A join key implied by the equalities already applied below it (after the
transitive-predicates rule adds ``a.x = c.z`` beside ``a.x = b.y AND b.y = c.z``) is dropped.

>>> from engine.optimizer.cardinality import Estimator
>>> from engine.plan.expressions import Call
>>> from engine.plan.logical import Field, Values, filter_all
>>> from engine import types as T
>>> def rel(name, n): return Values((Field(name, name, T.BIGINT),), tuple((i,) for i in range(n)))
>>> a, b, c = rel("a", 1000), rel("b", 10), rel("c", 100)
>>> eq = lambda x, y: Call("eq", (x.fields[0].ref(), y.fields[0].ref()), T.BOOLEAN)
>>> class NoStats:
...     def table_rows(self, table): return 0
...     def column_ndv(self, table, column): return 0
...     def column_stats(self, table, column): return None
>>> ctx = OptimizerContext(Estimator(NoStats()))
>>> print(order_joins(MultiJoin((a, b, c), (eq(a, b), eq(b, c))), ctx).pretty())
Join inner ON c = b
  Values (100 rows)
  Join inner ON a = b
    Values (1000 rows)
    Values (10 rows)
"""
from __future__ import annotations

from engine.optimizer.context import OptimizerContext
from engine.plan.expressions import Call, ColumnRef, Expr, and_all, conjuncts
from engine.plan.logical import Filter, Join, LogicalPlan, MultiJoin, Scan, filter_all


def order_joins(plan: LogicalPlan, ctx: OptimizerContext) -> LogicalPlan:
    return _rewrite(plan, ctx)


def _rewrite(plan: LogicalPlan, ctx: OptimizerContext) -> LogicalPlan:
    plan = _map_inputs(plan, lambda child: _rewrite(child, ctx))
    if isinstance(plan, MultiJoin):
        return _order(plan, ctx)
    return plan


def _map_inputs(plan: LogicalPlan, fn) -> LogicalPlan:
    import dataclasses
    from engine.plan.logical import Aggregate, Limit, Project, Repeat, Sort, Union, Window
    if isinstance(plan, MultiJoin):
        return MultiJoin(tuple(fn(i) for i in plan.inputs), plan.conditions)
    if isinstance(plan, Union):
        return Union(tuple(fn(i) for i in plan.inputs), plan.fields)
    if isinstance(plan, Join):
        return dataclasses.replace(plan, left=fn(plan.left), right=fn(plan.right))
    if isinstance(plan, (Filter, Project, Aggregate, Sort, Limit, Repeat, Window)):
        return dataclasses.replace(plan, input=fn(plan.input))
    return plan


_FILTERING_JOINS = ("semi", "anti", "anti_null_aware")


def _peel_filtering_joins(plan: LogicalPlan, pending: list[Join]) -> LogicalPlan:
    """Take the EXISTS / IN semi and anti joins the binder attached to an input off it, so that the
    ordering below can apply each one where it is cheapest (TPC-H Q21 checks EXISTS for the lineitems
    of one nation's suppliers, after that join, not for all 3.8M late lineitems)."""
    while isinstance(plan, Join) and plan.kind in _FILTERING_JOINS:
        pending.append(plan)
        plan = plan.left
    return plan


def _needed_ids(join: Join) -> set[str]:
    needed = set().union(*(k.column_ids() for k in join.left_keys)) if join.left_keys else set()
    if join.residual is not None:
        needed |= join.residual.column_ids() - join.right.field_ids()
    return needed


DP_LIMIT = 10      # inputs + pending semi / anti joins: 3^n subset splits, ~60k at 10


def _order(node: MultiJoin, ctx: OptimizerContext) -> LogicalPlan:
    est = ctx.estimator
    trees: list[LogicalPlan] = []
    pending: list[Join] = []
    conditions = list(node.conditions)
    for child in node.inputs:
        child = _peel_filtering_joins(child, pending)
        ids = child.field_ids()
        local = [c for c in conditions if c.column_ids() and c.column_ids() <= ids]
        conditions = [c for c in conditions if c not in local]
        trees.append(filter_all(child, local))
    trees, pending, conditions = _dynamic(trees, pending, conditions, est)
    return _greedy(trees, pending, conditions, est)


def _dynamic(trees: list[LogicalPlan], pending: list[Join], conditions: list[Expr], est):
    """Replace each connected component of ``trees`` (with the pending joins it alone can take) that has
    at most DP_LIMIT elements by its cheapest tree; return the trees, pending joins and conditions left."""
    owner = {fid: i for i, t in enumerate(trees) for fid in t.field_ids()}

    def mask(ids) -> int | None:
        m = 0
        for fid in ids:
            if fid not in owner:
                return None
            m |= 1 << owner[fid]
        return m

    cond_masks = [mask(c.column_ids()) for c in conditions]
    equi = []                 # (left mask, right mask) of each equality between columns of disjoint inputs
    for c in conditions:
        if isinstance(c, Call) and c.op == "eq" and all(a.column_ids() for a in c.args):
            mx, my = mask(c.args[0].column_ids()), mask(c.args[1].column_ids())
            if mx and my and not mx & my:
                equi.append((mx, my))
    component = list(range(len(trees)))

    def find(i: int) -> int:
        while component[i] != i:
            component[i] = component[component[i]]
            i = component[i]
        return i

    for mx, my in equi:
        bits = [i for i in range(len(trees)) if (mx | my) >> i & 1]
        for i in bits[1:]:
            component[find(i)] = find(bits[0])
    groups: dict[int, list[int]] = {}
    for i in range(len(trees)):
        groups.setdefault(find(i), []).append(i)
    pending_masks = [mask(_needed_ids(j)) for j in pending]

    out_trees, used_conditions, used_pending = [], set(), set()
    for members in groups.values():
        group_mask = sum(1 << i for i in members)
        mine = [p for p, m in enumerate(pending_masks) if m is not None and m and m & group_mask == m]
        if len(members) < 2 and not mine or len(members) + len(mine) > DP_LIMIT:
            out_trees.extend(trees[i] for i in members)
            continue
        conds = [k for k, m in enumerate(cond_masks) if m and m & group_mask == m]
        best = _best_tree([trees[i] for i in members], members, [pending[p] for p in mine],
                          [pending_masks[p] for p in mine], [(conditions[k], cond_masks[k]) for k in conds],
                          equi, est)
        if best is None:      # joined only through expressions over several inputs: leave it to greedy
            out_trees.extend(trees[i] for i in members)
            continue
        out_trees.append(best)
        used_conditions.update(conds)
        used_pending.update(mine)
    return (out_trees, [j for p, j in enumerate(pending) if p not in used_pending],
            [c for k, c in enumerate(conditions) if k not in used_conditions])


def _best_tree(trees, positions, pending, pending_masks, conditions, equi, est) -> LogicalPlan | None:
    """The cheapest tree over all of ``trees`` and ``pending``; masks are over ``positions`` (the trees'
    indexes in the MultiJoin), re-based here onto bits 0..n-1 for trees and n.. for pending joins."""
    n, m = len(trees), len(pending)

    def rebase(mk: int) -> int:
        return sum(1 << k for k, pos in enumerate(positions) if mk >> pos & 1)

    relations = (1 << n) - 1
    edges = [(rebase(mx), rebase(my)) for mx, my in equi]
    edges = [(x, y) for x, y in edges if x and y and (x | y) & relations == x | y]
    conds = [(c, rebase(mk)) for c, mk in conditions]
    needs = [rebase(mk) for mk in pending_masks]
    neighbours = [0] * n
    for x, y in edges:
        for k in range(n):
            if (x | y) >> k & 1:
                neighbours[k] |= (x | y) & ~(1 << k)

    def connected(rel: int) -> bool:
        seen = reached = rel & -rel
        while reached:
            grown = 0
            for k in range(n):
                if reached >> k & 1:
                    grown |= neighbours[k]
            reached = grown & rel & ~seen
            seen |= reached
        return seen == rel

    best: dict[int, tuple[float, LogicalPlan]] = {1 << k: (0.0, t) for k, t in enumerate(trees)}
    for s in range(1, 1 << (n + m)):
        rel = s & relations
        if s in best or not rel or not connected(rel):
            continue
        choice = None
        for p in range(m):                   # a pending semi / anti join applied last
            bit = 1 << (n + p)
            if s & bit and (s ^ bit) in best and needs[p] & rel == needs[p]:
                cost, below = best[s ^ bit]
                j = pending[p]
                candidate = Join(below, j.right, j.kind, j.left_keys, j.right_keys, j.residual)
                score = (cost + est.rows(candidate), est.rows(candidate))
                if choice is None or score < choice[0]:
                    choice = (score, candidate)
        s1 = (s - 1) & s
        while s1:                            # every split into two halves, each half once
            s2 = s ^ s1
            if s1 < s2 and s1 in best and s2 in best and any(
                    x & s1 == x and y & s2 == y or x & s2 == x and y & s1 == y for x, y in edges):
                (c1, a), (c2, b) = best[s1], best[s2]
                r1, r2 = s1 & relations, s2 & relations
                joined = [c for c, mk in conds if mk & rel == mk and mk & r1 and mk & r2]
                candidate = _make_join(a, b, _drop_implied(joined, a, b), est)
                score = (c1 + c2 + est.rows(candidate), est.rows(candidate))
                if choice is None or score < choice[0]:
                    choice = (score, candidate)
            s1 = (s1 - 1) & s
        if choice is not None:
            best[s] = (choice[0][0], choice[1])
    full = best.get((1 << (n + m)) - 1)
    return full[1] if full else None


def _greedy(trees: list[LogicalPlan], pending: list[Join], conditions: list[Expr], est) -> LogicalPlan:
    while len(trees) > 1 or pending:
        best = None
        # a semi / anti join competes with the inner joins: it is applied when its output is the smallest
        for p, join in enumerate(pending):
            needed = _needed_ids(join)
            for i, tree in enumerate(trees):
                if needed <= tree.field_ids():
                    candidate = Join(tree, join.right, join.kind, join.left_keys, join.right_keys, join.residual)
                    score = (0, est.rows(candidate), est.rows(tree))
                    if best is None or score < best[0]:
                        best = (score, ("pending", p, i), candidate, [])
                    break
        for i in range(len(trees)):
            for j in range(i + 1, len(trees)):
                a, b = trees[i], trees[j]
                ids = a.field_ids() | b.field_ids()
                conds = [c for c in conditions if c.column_ids() <= ids
                         and c.column_ids() & a.field_ids() and c.column_ids() & b.field_ids()]
                connected = any(_is_equi(c, a, b) for c in conds)
                candidate = _make_join(a, b, _drop_implied(conds, a, b), est)
                rows = est.rows(candidate)
                score = (0 if connected else 1, rows, est.rows(a) + est.rows(b))
                if best is None or score < best[0]:
                    best = (score, ("join", i, j), candidate, conds)
        if best is None:              # pending joins whose columns no single tree holds: apply on top
            break
        _, (what, a, b), joined, used = best
        if what == "pending":
            pending.pop(a)
            trees[b] = joined
            continue
        conditions = [c for c in conditions if c not in used]
        trees = [t for k, t in enumerate(trees) if k not in (a, b)] + [joined]
    result = trees[0]
    if conditions:
        result = filter_all(result, conditions)
    for join in pending:
        result = Join(result, join.right, join.kind, join.left_keys, join.right_keys, join.residual)
    return result


def _drop_implied(conds: list[Expr], a: LogicalPlan, b: LogicalPlan) -> list[Expr]:
    """``conds`` less the column equalities that those applied inside ``a`` and ``b`` and the ones kept
    before it imply: with ``a.x = b.y`` applied in ``a``, ``b.y = c.z`` makes ``a.x = c.z`` redundant, and
    a redundant key would make the estimate count the same selectivity twice."""
    parent: dict[str, str] = {}

    def find(i: str) -> str:
        parent.setdefault(i, i)
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for x, y in _equalities(a) + _equalities(b):
        parent[find(x)] = find(y)
    kept = []
    for c in conds:
        pair = _column_equality(c)
        if pair is not None:
            x, y = find(pair[0]), find(pair[1])
            if x == y:
                continue
            parent[x] = y
        kept.append(c)
    return kept


def _column_equality(c: Expr):
    if isinstance(c, Call) and c.op == "eq" and all(isinstance(a, ColumnRef) for a in c.args):
        x, y = c.args
        if x.type.kind == y.type.kind:
            return x.id, y.id
    return None


def _equalities(plan: LogicalPlan) -> list[tuple[str, str]]:
    """Column equalities true of every row ``plan`` outputs, from its inner-join keys and filters."""
    if isinstance(plan, Filter):
        return [p for c in conjuncts(plan.predicate) if (p := _column_equality(c))] + _equalities(plan.input)
    if isinstance(plan, Scan):
        return [p for c in plan.filters if (p := _column_equality(c))]
    if isinstance(plan, Join):
        if plan.kind == "inner":
            keys = [p for l, r in zip(plan.left_keys, plan.right_keys)
                    if (p := _column_equality(Call("eq", (l, r), l.type)))]
            return keys + _equalities(plan.left) + _equalities(plan.right)
        if plan.kind in _FILTERING_JOINS or plan.kind == "left":
            return _equalities(plan.left)
    return []


def _is_equi(c: Expr, a: LogicalPlan, b: LogicalPlan) -> bool:
    return _split_equi(c, a.field_ids(), b.field_ids()) is not None


def _split_equi(c: Expr, left_ids, right_ids):
    if isinstance(c, Call) and c.op == "eq":
        x, y = c.args
        if x.column_ids() and y.column_ids():
            if x.column_ids() <= left_ids and y.column_ids() <= right_ids:
                return x, y
            if y.column_ids() <= left_ids and x.column_ids() <= right_ids:
                return y, x
    return None


def _make_join(a: LogicalPlan, b: LogicalPlan, conds: list[Expr], est) -> Join:
    # the larger input probes, the smaller one is built into the hash table (right side)
    if est.rows(a) < est.rows(b):
        a, b = b, a
    left_keys, right_keys, residual = [], [], []
    for c in conds:
        pair = _split_equi(c, a.field_ids(), b.field_ids())
        if pair:
            left_keys.append(pair[0])
            right_keys.append(pair[1])
        else:
            residual.append(c)
    kind = "inner" if left_keys or residual else "cross"
    return Join(a, b, kind, tuple(left_keys), tuple(right_keys), and_all(residual))
