"""Turn each MultiJoin into a tree of binary joins: DPhyp over the join graph, greedy beyond it.

For up to ``DP_LIMIT`` inputs (counting the EXISTS / IN semi and anti joins peeled off them), every
connected set of inputs gets its cheapest tree, built from the cheapest trees of two connected,
connected-to-each-other halves, enumerated by DPhyp (:mod:`engine.optimizer.dphyp`: one step per such
pair, within ``DP_BUDGET`` steps, as DuckDB does); the cost of a tree is the sum of the estimated rows
of the joins in it (its intermediate results). A pending semi / anti join is one more element of the
sets: it is applied on top of any set that holds the columns it needs, so it lands wherever filtering
first is cheapest.
Only pairs joined by an equality are ever split, so the DP never builds a cross product; the trees of
the inputs' connected components (and inputs beyond ``DP_LIMIT`` or the budget) are then joined greedily
(GOO, each pair's candidate estimated once): repeatedly the two subtrees whose join has the smallest
estimated output, connected pairs first, a cross product only when nothing else connects them (the query asked for one). The smaller side of each join becomes
its build (right) side. A join key implied by the equalities already applied below it (after the
transitive-predicates rule adds ``a.x = c.z`` beside ``a.x = b.y AND b.y = c.z``) is dropped.

>>> from engine.optimizer.cardinality import Estimator
>>> from engine.core.expressions import Call
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
from engine.optimizer.dphyp import TooManyPairs, csg_cmp_pairs
from engine.core.expressions import Call, ColumnRef, Expr, and_all, conjuncts
from engine.plan.logical import Filter, Join, LogicalPlan, MultiJoin, Scan, filter_all, map_inputs


def order_joins(plan: LogicalPlan, ctx: OptimizerContext) -> LogicalPlan:
    return _rewrite(plan, ctx)


def _rewrite(plan: LogicalPlan, ctx: OptimizerContext) -> LogicalPlan:
    # A subtree ordered before is not ordered again: eager aggregation orders the joins it weighs
    # (engine.optimizer.rules.eager_aggregation._ordered), and the rule's own pass meets the same
    # nodes (rules rebuild only what they change). Kept by identity for one planning, the node held
    # so its id stays unique; the answer is a function of the subtree and the statistics alone.
    done = ctx.ordered.get(id(plan))
    if done is not None and done[0] is plan:
        return done[1]
    ordered = map_inputs(plan, lambda child: _rewrite(child, ctx))
    if isinstance(ordered, MultiJoin):
        ordered = _order(ordered, ctx)
    ctx.ordered[id(plan)] = (plan, ordered)
    return ordered


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


DP_LIMIT = 12      # inputs + pending semi / anti joins planned by DPhyp (DuckDB: 12 and 10,000 pairs)
DP_BUDGET = 4_000  # DPhyp steps (pairs plus sets looked at); a star or clique beyond it is planned greedily


def _order(node: MultiJoin, ctx: OptimizerContext) -> LogicalPlan:
    est = ctx.estimator
    trees: list[LogicalPlan] = []
    pending: list[Join] = []
    conditions = [(c, frozenset(c.column_ids())) for c in node.conditions]   # column ids walked once
    for child in node.inputs:
        child = _peel_filtering_joins(child, pending)
        ids = child.field_ids()
        local = [c for c, cids in conditions if cids and cids <= ids]
        conditions = [(c, cids) for c, cids in conditions if not (cids and cids <= ids)]
        trees.append(_kept(ctx.joins, ("filter", child, *local), lambda: filter_all(child, local)))
    trees, pending, conditions = _dynamic(trees, pending, conditions, est, ctx.joins)
    return _greedy(trees, pending, conditions, est, ctx.joins)


def _kept(memo: dict, parts: tuple, make):
    """``make()``, kept in ``memo`` by the identity of ``parts`` (a tag, then plans and expressions) for
    one planning: join ordering is asked about subsets of the same inputs again (eager aggregation
    weighs each split of a join, then the rule orders the one chosen), and an input, a candidate
    join, met again is then the same object, whose estimate the Estimator keeps. ``memo`` holds the
    parts, so their ids stay unique while it lives."""
    key = (parts[0],) + tuple(id(p) for p in parts[1:])
    hit = memo.get(key)
    if hit is None:
        hit = memo[key] = (parts, make())
    return hit[1]


def _join(a: LogicalPlan, b: LogicalPlan, conds: list[Expr], est, equalities: dict, memo: dict) -> Join:
    """The candidate join of ``a`` and ``b`` on ``conds`` (less those implied), made once per planning."""
    return _kept(memo, ("join", a, b, *conds), lambda: _make_join(a, b, _drop_implied(conds, a, b, equalities), est))


def _dynamic(trees: list[LogicalPlan], pending: list[Join], conditions: list[tuple[Expr, frozenset]], est,
             memo: dict):
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

    cond_masks = [mask(ids) for _, ids in conditions]
    equi = []                 # (left mask, right mask) of each equality between columns of disjoint inputs
    for c, _ in conditions:
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
                          [pending_masks[p] for p in mine], [(conditions[k][0], cond_masks[k]) for k in conds],
                          equi, est, memo)
        if best is None:      # joined only through expressions over several inputs, or too many pairs
            out_trees.extend(trees[i] for i in members)
            continue
        out_trees.append(best)
        used_conditions.update(conds)
        used_pending.update(mine)
    return (out_trees, [j for p, j in enumerate(pending) if p not in used_pending],
            [c for k, c in enumerate(conditions) if k not in used_conditions])


def _best_tree(trees, positions, pending, pending_masks, conditions, equi, est, memo) -> LogicalPlan | None:
    """The cheapest tree over all of ``trees`` and ``pending`` (None past DP_BUDGET); masks are over
    ``positions`` (the trees' indexes in the MultiJoin), re-based here onto bits 0..n-1.

    DPhyp enumerates the joins of two connected sets of inputs; each set keeps its cheapest tree per
    subset of the pending semi / anti joins applied inside it (a pending join is applied on top of a
    set that holds the columns it needs, once that set's own joins are all known)."""
    n, m = len(trees), len(pending)

    def rebase(mk: int) -> int:
        return sum(1 << k for k, pos in enumerate(positions) if mk >> pos & 1)

    relations = (1 << n) - 1
    edges = [(rebase(mx), rebase(my)) for mx, my in equi]
    edges = [(x, y) for x, y in edges if x and y and (x | y) & relations == x | y]
    conds = [(c, rebase(mk)) for c, mk in conditions]
    needs = [rebase(mk) for mk in pending_masks]
    # best[rel][applied pending joins] = (cost, rows, tie-break, tree); of equal costs and rows, a pending
    # join applied last wins (the first of them), then the split whose numerically smaller half is largest
    best: dict[int, dict[int, tuple[float, float, tuple, LogicalPlan]]] = {
        1 << k: {0: (0.0, 0.0, (0, 0), t)} for k, t in enumerate(trees)}
    closed: set[int] = set()
    equalities: dict = {}

    def offer(rel: int, applied: int, cost: float, tie: tuple, candidate: LogicalPlan) -> None:
        rows = est.rows(candidate)
        entry = best.setdefault(rel, {}).get(applied)
        if entry is None or (cost + rows, rows, tie) < entry[:3]:
            best[rel][applied] = (cost + rows, rows, tie, candidate)

    def close(rel: int) -> dict[int, tuple[float, float, tuple, LogicalPlan]]:
        """Add the pending joins ``rel`` can take on top of its trees (fewest applied first)."""
        if rel not in closed:
            closed.add(rel)
            fits = [p for p in range(m) if needs[p] & rel == needs[p]]
            fit_mask = sum(1 << p for p in fits)
            subsets = [a for a in range(1 << m) if a & fit_mask == a]
            for applied in sorted(subsets, key=lambda a: bin(a).count("1")):
                if applied not in best[rel]:
                    continue
                cost, below = best[rel][applied][0], best[rel][applied][3]
                for p in fits:
                    if not applied >> p & 1:
                        j = pending[p]
                        offer(rel, applied | 1 << p, cost, (0, p), _kept(memo, ("pending", below, j), lambda: Join(
                            below, j.right, j.kind, j.left_keys, j.right_keys, j.residual)))
        return best[rel]

    def emit(r1: int, r2: int) -> None:
        rel = r1 | r2
        joined = [c for c, mk in conds if mk & rel == mk and mk & r1 and mk & r2]
        for p1, (c1, _, _, a) in close(r1).items():
            for p2, (c2, _, _, b) in close(r2).items():
                if not p1 & p2:
                    left, right = (a, b) if r1 | p1 << n < r2 | p2 << n else (b, a)
                    tie = (1, -min(r1 | p1 << n, r2 | p2 << n))
                    offer(rel, p1 | p2, c1 + c2, tie, _join(left, right, joined, est, equalities, memo))

    try:
        csg_cmp_pairs(n, edges, emit, DP_BUDGET)
    except TooManyPairs:
        return None
    if relations not in best:
        return None
    full = close(relations).get((1 << m) - 1)
    return full[3] if full else None


def _greedy(trees: list[LogicalPlan], pending: list[Join], conditions: list[tuple[Expr, frozenset]],
            est, memo: dict) -> LogicalPlan:
    """GOO: repeatedly join the two trees whose join has the smallest estimated output, pairs joined by
    an equality first, a cross product only when nothing else connects them. A pair's candidate join is
    estimated once, when the second of its trees is made, so n inputs cost O(n^2) estimates."""
    owner = {fid: i for i, t in enumerate(trees) for fid in t.field_ids()}
    masks = {id(t): 1 << i for i, t in enumerate(trees)}
    cond_masks = []
    for _, ids in conditions:
        mk = 0
        for fid in ids:
            mk = mk | 1 << owner[fid] if fid in owner else -1
            if mk < 0:
                break
        cond_masks.append(max(mk, 0))      # 0: never applied by a join (columns from outside, or none)
    used: set[int] = set()
    touching = {id(t): [k for k, mk in enumerate(cond_masks) if mk & masks[id(t)] and mk != masks[id(t)]]
                for t in trees}
    scored: dict[tuple[int, int], tuple] = {}    # (id(a), id(b)) -> (score, conditions, condition indexes)
    equalities: dict = {}

    def score(a: LogicalPlan, b: LogicalPlan, ks: list[int]) -> tuple:
        """The pair's rank and conditions; its Join is made only if it is picked (:func:`_candidate_rows`)."""
        conds = [conditions[k][0] for k in ks]
        connected = any(_is_equi(c, a, b) for c in conds)
        rows = _candidate_rows(a, b, _drop_implied(conds, a, b, equalities), est)
        return (0 if connected else 1, rows, est.rows(a) + est.rows(b)), conds, ks

    def score_partners(t: LogicalPlan, pos: int, in_list: list[LogicalPlan]) -> None:
        """Score ``t`` (at ``pos`` of ``in_list``) with every tree a condition joins it to, in one pass
        over its conditions; the earlier tree of a pair is the candidate's left, as the loop below sees
        them (the probe side of equal estimates)."""
        mt = masks[id(t)]
        by_partner: dict[int, list[int]] = {}
        for k in touching[id(t)]:
            rest = cond_masks[k] & ~mt
            o = holder.get(rest & -rest)          # the tree holding the condition's other inputs, if one does
            if o is not None and o is not t and rest & ~masks[id(o)] == 0:
                by_partner.setdefault(id(o), []).append(k)
        for q, o in enumerate(in_list):
            if id(o) in by_partner and o is not t:
                a, b = (o, t) if q < pos else (t, o)
                if (id(a), id(b)) not in scored:
                    scored[(id(a), id(b))] = score(a, b, sorted(by_partner[id(o)]))

    holder = {1 << i: t for i, t in enumerate(trees)}     # input bit -> the tree that holds it now
    for i, t in enumerate(trees):
        score_partners(t, i, trees)
    pending_scored: dict[tuple[int, int], tuple] = {}
    while len(trees) > 1 or pending:
        best = None
        # a semi / anti join competes with the inner joins: it is applied when its output is the smallest
        for p, join in enumerate(pending):
            needed = _needed_ids(join)
            for i, tree in enumerate(trees):
                if needed <= tree.field_ids():
                    key = (id(join), id(tree))
                    if key not in pending_scored:
                        candidate = Join(tree, join.right, join.kind, join.left_keys, join.right_keys,
                                         join.residual)
                        pending_scored[key] = ((0, est.rows(candidate), est.rows(tree)), candidate)
                    s, candidate = pending_scored[key]
                    if best is None or s < best[0]:
                        best = (s, ("pending", p, i), candidate, [])
                    break
        for tier in (0, 1):
            for i in range(len(trees)):
                for j in range(i + 1, len(trees)):
                    entry = scored.get((id(trees[i]), id(trees[j])))
                    if entry is None and tier == 1:    # no condition joins them: a cross product
                        entry = score(trees[i], trees[j], [])
                    if entry is not None and (best is None or entry[0] < best[0]):
                        best = (entry[0], ("join", i, j), entry[1], entry[2])
            if best is not None:
                break
        if best is None:              # pending joins whose columns no single tree holds: apply on top
            break
        _, (what, a, b), joined, ks = best
        if what == "join":
            joined = _join(trees[a], trees[b], joined, est, equalities, memo)
        if what == "pending":
            pending.pop(a)
            masks[id(joined)] = masks[id(trees[b])]
            touching[id(joined)] = touching[id(trees[b])]
            trees[b] = joined
            _hold(holder, masks[id(joined)], joined)
            score_partners(joined, b, trees)
            continue
        used.update(ks)
        merged = masks[id(trees[a])] | masks[id(trees[b])]
        masks[id(joined)] = merged
        touching[id(joined)] = [k for k in dict.fromkeys(touching[id(trees[a])] + touching[id(trees[b])])
                                if k not in used and cond_masks[k] & ~merged]
        trees = [t for k, t in enumerate(trees) if k not in (a, b)] + [joined]
        _hold(holder, merged, joined)
        score_partners(joined, len(trees) - 1, trees)
    result = trees[0]
    left = [c for k, (c, _) in enumerate(conditions) if k not in used]
    if left:
        result = filter_all(result, left)
    for join in pending:
        result = Join(result, join.right, join.kind, join.left_keys, join.right_keys, join.residual)
    return result


def _hold(holder: dict, mask: int, tree: LogicalPlan) -> None:
    while mask:
        low = mask & -mask
        holder[low] = tree
        mask ^= low


def _drop_implied(conds: list[Expr], a: LogicalPlan, b: LogicalPlan, cache: dict | None = None) -> list[Expr]:
    """``conds`` less the column equalities that those applied inside ``a`` and ``b`` and the ones kept
    before it imply: with ``a.x = b.y`` applied in ``a``, ``b.y = c.z`` makes ``a.x = c.z`` redundant, and
    a redundant key would make the estimate count the same selectivity twice. Each side's classes of
    equal columns are kept per tree (``cache``): a candidate join costs its conditions, not its sides'
    sizes (a 60-table join weighs some 2,000 candidates)."""
    classes_a, classes_b = _classes(a, cache), _classes(b, cache)
    parent: dict[str, str] = {}

    def find(i: str) -> str:
        i = classes_a.get(i) or classes_b.get(i) or i
        parent.setdefault(i, i)
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

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


_NO_CLASSES: dict[str, str] = {}


def _classes(plan: LogicalPlan, cache: dict | None = None) -> dict[str, str]:
    """Column id -> a representative of its class of columns equal on every row ``plan`` outputs (from
    its inner-join keys and filters; columns in no equality are left out). ``cache`` (id(plan) -> (plan,
    classes)) keeps a tree's across the candidates built on it; the dicts are never changed."""
    cached = cache.get(id(plan)) if cache is not None else None
    if cached is not None and cached[0] is plan:
        return cached[1]
    if isinstance(plan, Filter):
        base, pairs = _classes(plan.input, cache), [p for c in conjuncts(plan.predicate) if (p := _column_equality(c))]
    elif isinstance(plan, Scan):
        base, pairs = _NO_CLASSES, [p for c in plan.filters if (p := _column_equality(c))]
    elif isinstance(plan, Join) and plan.kind == "inner":
        left, right = _classes(plan.left, cache), _classes(plan.right, cache)
        base = {**left, **right} if left and right else left or right
        pairs = [p for l, r in zip(plan.left_keys, plan.right_keys)
                 if (p := _column_equality(Call("eq", (l, r), l.type)))]
    elif isinstance(plan, Join) and (plan.kind in _FILTERING_JOINS or plan.kind == "left"):
        base, pairs = _classes(plan.left, cache), []
    else:
        base, pairs = _NO_CLASSES, []
    if pairs:
        base = dict(base)
        for x, y in pairs:
            rx, ry = base.get(x, x), base.get(y, y)
            if rx == ry:
                continue
            members = [k for k, v in base.items() if v == ry] or [ry]
            for k in members + [y, ry]:
                base[k] = rx
            base.setdefault(x, rx)
            base[rx] = rx
    if cache is not None:
        cache[id(plan)] = (plan, base)
    return base


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


def _candidate_rows(a: LogicalPlan, b: LogicalPlan, conds: list[Expr], est) -> float:
    """The estimated rows of ``_make_join(a, b, conds)``, without making it."""
    if est.rows(a) < est.rows(b):
        a, b = b, a
    left_ids, right_ids = a.field_ids(), b.field_ids()
    left_keys, right_keys, residual = [], [], False
    for c in conds:
        pair = _split_equi(c, left_ids, right_ids)
        if pair:
            left_keys.append(pair[0])
            right_keys.append(pair[1])
        else:
            residual = True
    return max(1.0, est.join_rows(a, b, tuple(left_keys), tuple(right_keys), residual))


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
