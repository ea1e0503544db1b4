"""DPhyp's csg-cmp pairs against their definition, enumerated by brute force over every split of
every subset: the same pairs, each once, in an order that builds both halves of a pair first."""
import random

import pytest

from engine.optimizer.dphyp import TooManyPairs, csg_cmp_pairs


def brute_force(n: int, edges) -> set:
    """Pairs of disjoint buildable sets joined by an edge; a set is buildable when it is one vertex or
    such a pair (a hyperedge joins only sets holding each of its sides whole)."""
    buildable = {1 << i for i in range(n)}
    pairs = set()
    for s in sorted(range(1, 1 << n), key=lambda m: bin(m).count("1")):
        s1 = (s - 1) & s
        while s1:
            s2 = s ^ s1
            if s1 < s2 and s1 in buildable and s2 in buildable and any(
                    u & s1 == u and v & s2 == v or u & s2 == u and v & s1 == v for u, v in edges):
                pairs.add((s1, s2))
                buildable.add(s)
            s1 = (s1 - 1) & s
    return pairs


def enumerate_pairs(n: int, edges) -> list:
    out = []
    csg_cmp_pairs(n, edges, lambda a, b: out.append((min(a, b), max(a, b))))
    return out


def assert_halves_first(pairs: list) -> None:
    last_made = {}
    for k, (a, b) in enumerate(pairs):
        last_made[a | b] = k
    for k, (a, b) in enumerate(pairs):
        assert last_made.get(a, -1) < k and last_made.get(b, -1) < k


@pytest.mark.parametrize("shape, n, edges, count", [
    ("chain", 10, [(1 << i, 1 << i + 1) for i in range(9)], (10 ** 3 - 10) // 6),
    ("star", 10, [(1, 1 << i) for i in range(1, 10)], 9 * 2 ** 8),
    ("cycle", 9, [(1 << i, 1 << (i + 1) % 9) for i in range(9)], None),
    ("clique", 7, [(1 << i, 1 << j) for i in range(7) for j in range(i + 1, 7)], (3 ** 7 - 2 ** 8 + 1) // 2),
])
def test_known_graphs(shape, n, edges, count):
    pairs = enumerate_pairs(n, edges)
    assert len(pairs) == len(set(pairs))
    assert set(pairs) == brute_force(n, edges)
    if count is not None:
        assert len(pairs) == count
    assert_halves_first(pairs)


def test_random_hypergraphs():
    rng = random.Random(17)
    for _ in range(200):
        n = rng.randint(2, 7)
        edges = []
        for _ in range(rng.randint(1, 10)):
            if rng.random() < 0.7:
                u, v = 1 << rng.randrange(n), 1 << rng.randrange(n)
            else:
                u, v = rng.randint(1, (1 << n) - 1), rng.randint(1, (1 << n) - 1)
            if not u & v:
                edges.append((u, v))
        pairs = enumerate_pairs(n, edges)
        assert len(pairs) == len(set(pairs)) and set(pairs) == brute_force(n, edges), (n, edges)
        assert_halves_first(pairs)


def test_the_budget_stops_a_star():
    with pytest.raises(TooManyPairs):
        enumerate_pairs_budget = []
        csg_cmp_pairs(40, [(1, 1 << i) for i in range(1, 40)], lambda a, b: enumerate_pairs_budget.append(a),
                      budget=10_000)
