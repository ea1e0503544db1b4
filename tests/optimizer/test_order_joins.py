"""Join ordering: dynamic programming over connected subgraphs, pending semi / anti joins, no cross
products the query did not ask for. The estimates are given by hand (one row count per set of inputs),
so each test states the cost model it is about; TPC-H plan shapes are in test_join_rules.py."""
import doctest

import pytest

from engine import types as T
from engine.optimizer.context import OptimizerContext
from engine.optimizer.rules import order_joins as rule
from engine.core.expressions import Call
from engine.plan.logical import Field, Join, MultiJoin, Values


def rel(name: str) -> Values:
    return Values((Field(name, name, T.BIGINT),), ((1,),))


def eq(a: str, b: str) -> Call:
    return Call("eq", (rel(a).fields[0].ref(), rel(b).fields[0].ref()), T.BOOLEAN)


class HandEstimates:
    """rows(plan) by the inputs under it ('abc'), with a ' per semi / anti join applied ("a'")."""

    def __init__(self, sizes: dict[str, float], default: float = 1e9):
        self.sizes, self.default, self.asked = sizes, default, []

    def rows(self, plan) -> float:
        key = "".join(sorted(plan.field_ids())) + "'" * _filtering_joins(plan)
        self.asked.append(key)
        return self.sizes.get(key, self.default)

    def join_rows(self, left, right, left_keys, right_keys, residual) -> float:
        """The rows of a join of ``left`` and ``right`` not made (the greedy ordering weighs those)."""
        key = "".join(sorted(left.field_ids() | right.field_ids())) + \
            "'" * (_filtering_joins(left) + _filtering_joins(right))
        self.asked.append(key)
        return self.sizes.get(key, self.default)


def _filtering_joins(plan) -> int:
    own = isinstance(plan, Join) and plan.kind in ("semi", "anti")
    return own + sum(_filtering_joins(i) for i in plan.inputs if not (own and i is plan.right))


def joins(plan) -> list[Join]:
    out = [plan] if isinstance(plan, Join) else []
    for i in plan.inputs:
        out += joins(i)
    return out


def inputs_of(join: Join) -> tuple[str, str]:
    return "".join(sorted(join.left.field_ids())), "".join(sorted(join.right.field_ids()))


def order(multi: MultiJoin, sizes: dict[str, float], dp_limit: int = rule.DP_LIMIT, monkeypatch=None):
    monkeypatch.setattr(rule, "DP_LIMIT", dp_limit)
    return rule.order_joins(multi, OptimizerContext(HandEstimates(sizes)))


CHAIN = dict(a=100, b=100, c=100, d=100, ab=10, bc=20, cd=20, abc=1000, bcd=5, abcd=5)


def test_dp_finds_the_cheapest_tree_greedy_misses(monkeypatch):
    # greedy joins the smallest pair a-b first (10), then c-d (20), then both (5): 35 rows in all;
    # the DP joins b-c (20), then d (5), then a (5): 30 rows
    chain = MultiJoin((rel("a"), rel("b"), rel("c"), rel("d")), (eq("a", "b"), eq("b", "c"), eq("c", "d")))
    greedy = order(chain, CHAIN, dp_limit=0, monkeypatch=monkeypatch)
    dp = order(chain, CHAIN, monkeypatch=monkeypatch)
    assert ("ab" in {side for j in joins(greedy) for side in inputs_of(j)})
    assert sorted("".join(sorted(j.field_ids())) for j in joins(dp)) == ["abcd", "bc", "bcd"]
    assert all(j.left_keys for j in joins(dp))


def test_never_a_cross_product_the_query_did_not_ask_for(monkeypatch):
    # a x c is estimated at one row, but a and c are only connected through b
    sizes = dict(a=10, b=1000, c=10, ac=1, ab=1000, bc=1000, abc=1000)
    plan = order(MultiJoin((rel("a"), rel("b"), rel("c")), (eq("a", "b"), eq("b", "c"))), sizes,
                 monkeypatch=monkeypatch)
    assert [j.kind for j in joins(plan)] == ["inner", "inner"]
    assert "ac" not in {"".join(sorted(j.field_ids())) for j in joins(plan)}


def test_a_cross_product_the_query_asks_for_joins_the_components(monkeypatch):
    sizes = dict(a=10, b=10, c=10, d=10, ab=5, cd=5, abcd=25)
    plan = order(MultiJoin((rel("a"), rel("c"), rel("b"), rel("d")), (eq("a", "b"), eq("c", "d"))), sizes,
                 monkeypatch=monkeypatch)
    top, *below = joins(plan)
    assert top.kind == "cross" and {inputs_of(top)} == {("ab", "cd")}
    assert [j.kind for j in below] == ["inner", "inner"]


@pytest.mark.parametrize("sizes, lands_on", [
    (dict(a=1000, b=1000, ab=1000, **{"a'": 1, "ab'": 1}), "a"),      # filtering a first is cheapest
    (dict(a=1000, b=1000, ab=1, **{"a'": 900, "ab'": 1}), "ab"),      # the join filters more: semi on top
])
def test_a_semi_join_is_applied_where_its_output_is_smallest(monkeypatch, sizes, lands_on):
    s = rel("s")
    semi = Join(rel("a"), s, "semi", (rel("a").fields[0].ref(),), (s.fields[0].ref(),))
    plan = order(MultiJoin((semi, rel("b")), (eq("a", "b"),)), sizes, monkeypatch=monkeypatch)
    semis = [j for j in joins(plan) if j.kind == "semi"]
    assert len(semis) == 1 and "".join(sorted(semis[0].left.field_ids())) == lands_on


def test_a_key_the_joins_below_imply_is_dropped(monkeypatch):
    # a = b, b = c and (what the transitive rule adds) a = c: the second join needs one key, not two
    sizes = dict(a=10, b=10, c=10, ab=10, bc=10, ac=10, abc=10)
    plan = order(MultiJoin((rel("a"), rel("b"), rel("c")), (eq("a", "b"), eq("b", "c"), eq("a", "c"))), sizes,
                 monkeypatch=monkeypatch)
    assert [len(j.left_keys) for j in joins(plan)] == [1, 1]
    assert all(j.residual is None for j in joins(plan))


def test_more_inputs_than_the_dp_limit_are_ordered_greedily(monkeypatch):
    names = "abcdefghijkl"
    chain = MultiJoin(tuple(rel(n) for n in names), tuple(eq(x, y) for x, y in zip(names, names[1:])))
    estimates = HandEstimates({}, default=100)
    monkeypatch.setattr(rule, "DP_LIMIT", 10)
    plan = rule.order_joins(chain, OptimizerContext(estimates))
    assert len(joins(plan)) == 11 and all(j.kind == "inner" for j in joins(plan))
    assert len(estimates.asked) < 2000        # greedy: O(n^3) candidates, not the DP's subsets


def test_ten_inputs_are_planned_by_dp_quickly(monkeypatch):
    import time
    names = "abcdefghij"           # a star: every input joins a
    star = MultiJoin(tuple(rel(n) for n in names), tuple(eq("a", n) for n in names[1:]))
    started = time.perf_counter()
    plan = rule.order_joins(star, OptimizerContext(HandEstimates({}, default=100)))
    assert len(joins(plan)) == 9 and all(j.kind == "inner" for j in joins(plan))
    assert time.perf_counter() - started < 5


def test_doctests():
    assert doctest.testmod(rule).failed == 0


def _shape(kind: str, n: int) -> MultiJoin:
    names = [f"t{i:02d}" for i in range(n)]
    if kind == "chain":
        pairs = list(zip(names, names[1:]))
    elif kind == "cycle":
        pairs = list(zip(names, names[1:] + names[:1]))
    elif kind == "star":
        pairs = [(names[0], x) for x in names[1:]]
    else:                  # snowflake: a star whose every point has a point of its own
        half = n // 2
        pairs = [(names[0], x) for x in names[1:half]] + [(names[i - half + 1], names[i]) for i in range(half, n)]
    return MultiJoin(tuple(rel(x) for x in names), tuple(eq(x, y) for x, y in pairs))


@pytest.mark.parametrize("kind", ["chain", "cycle", "star", "snowflake"])
def test_sixty_inputs_cost_quadratically_many_estimates(kind):
    """60 inputs are ordered greedily, each pair's candidate estimated once: O(n^2) estimates, where
    re-estimating every pair on every step took O(n^3) (minutes of planning for a 60-table join)."""
    import time
    estimates = HandEstimates({}, default=100)
    started = time.process_time()
    plan = rule.order_joins(_shape(kind, 60), OptimizerContext(estimates))
    assert len(joins(plan)) == 59 and all(j.kind == "inner" for j in joins(plan))
    assert len(estimates.asked) < 60 * 60 * 3
    assert time.process_time() - started < 5


@pytest.mark.parametrize("kind", ["chain", "cycle", "star", "snowflake"])
def test_twelve_inputs_are_planned_by_dphyp_within_its_budget(kind):
    estimates = HandEstimates({}, default=100)
    plan = rule.order_joins(_shape(kind, 12), OptimizerContext(estimates))
    assert len(joins(plan)) == 11 and all(j.kind == "inner" for j in joins(plan))
