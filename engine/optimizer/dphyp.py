"""DPhyp (Moerkotte & Neumann, SIGMOD 2008): every csg-cmp pair of a join hypergraph, each once.

A join graph's vertices are the inputs of a join, numbered 0..n-1 and held as bits of an int; an edge
``(u, v)`` says the inputs in ``u`` join those in ``v`` (both sides one input for ``a.x = b.y``, more for
``a.x + b.y = c.z``: a hyperedge). A *csg-cmp pair* is two disjoint connected sets joined by an edge:
exactly the joins a plan without cross products can make. Dynamic programming over them costs one step
per pair, where trying every split of every subset costs 3^n: a 12-input chain has 286 pairs (the split
enumeration tried 531,441), a 60-input chain 35,990. The pairs come in an order in which both halves'
own pairs have all come before, so a half's best plan is final when it is used.

The count of pairs grows exponentially on stars and cliques (a 12-input star has 11,264), so ``budget``
caps the steps; beyond it :class:`TooManyPairs` is raised and the caller plans greedily (DuckDB gives
its DPhyp 10,000 pairs).

>>> pairs = []
>>> csg_cmp_pairs(3, [(0b001, 0b010), (0b010, 0b100)], lambda s1, s2: pairs.append((s1, s2)))
>>> [(bin(a), bin(b)) for a, b in pairs]
[('0b10', '0b100'), ('0b1', '0b10'), ('0b1', '0b110'), ('0b11', '0b100')]
"""
from __future__ import annotations

from typing import Callable, Iterator


class TooManyPairs(Exception):
    """The enumeration ran past its budget of steps."""


def csg_cmp_pairs(n: int, edges: list[tuple[int, int]], emit: Callable[[int, int], None],
                  budget: int = 1 << 62) -> None:
    """Call ``emit(s1, s2)`` once per csg-cmp pair of the hypergraph over ``n`` vertices (unordered: either
    side may come first), smaller sets' pairs first. Raises :class:`TooManyPairs` after ``budget`` steps
    (pairs emitted plus candidate sets looked at)."""
    _Enumerator(n, edges, emit, budget).run()


def _subsets(mask: int) -> Iterator[int]:
    """The non-empty subsets of ``mask``, smallest (as numbers) first."""
    sub = mask & -mask
    while sub:
        yield sub
        sub = (sub - mask) & mask          # the next subset of mask in increasing order


def _bits_descending(mask: int) -> Iterator[int]:
    while mask:
        top = 1 << (mask.bit_length() - 1)
        yield top
        mask ^= top


class _Enumerator:
    def __init__(self, n: int, edges: list[tuple[int, int]], emit, budget: int):
        self.n, self.emit, self.budget = n, emit, budget
        self.simple = [0] * n                       # neighbours through edges between two single inputs
        self.complex: list[tuple[int, int]] = []    # hyperedges, both directions
        for u, v in edges:
            if not u or not v or u & v:
                continue
            if u & (u - 1) == 0 and v & (v - 1) == 0:
                self.simple[u.bit_length() - 1] |= v
                self.simple[v.bit_length() - 1] |= u
            else:
                self.complex += [(u, v), (v, u)]
        self.directed = [(u, v) for u, v in edges if u and v and not u & v] + \
                        [(v, u) for u, v in edges if u and v and not u & v]
        self.connected_sets = {1 << i for i in range(n)}      # the dp table's keys: sets known connected

    def _step(self) -> None:
        self.budget -= 1
        if self.budget < 0:
            raise TooManyPairs()

    def neighbours(self, s: int, x: int) -> int:
        """N(S, X): the inputs next to ``s`` outside ``s`` and ``x``; one representative (the lowest input)
        per hyperedge whose far side is wholly outside both."""
        out = 0
        rest = s
        while rest:
            low = rest & -rest
            out |= self.simple[low.bit_length() - 1]
            rest ^= low
        out &= ~(s | x)
        for u, v in self.complex:
            if u & s == u and not v & (s | x):
                out |= v & -v
        return out

    def joined(self, s1: int, s2: int) -> bool:
        return any(u & s1 == u and v & s2 == v for u, v in self.directed)

    def run(self) -> None:
        for i in reversed(range(self.n)):
            v = 1 << i
            self.emit_csg(v)
            self.enumerate_csg(v, (v << 1) - 1)

    def enumerate_csg(self, s1: int, x: int) -> None:
        near = self.neighbours(s1, x)
        if not near:
            return
        for sub in _subsets(near):
            self._step()
            if s1 | sub in self.connected_sets:
                self.emit_csg(s1 | sub)
        for sub in _subsets(near):
            self.enumerate_csg(s1 | sub, x | near)

    def emit_csg(self, s1: int) -> None:
        low = s1 & -s1
        x = s1 | (low << 1) - 1
        near = self.neighbours(s1, x)
        for v in _bits_descending(near):
            if self.joined(s1, v):
                self.emit_pair(s1, v)
            self.enumerate_cmp(s1, v, x | (near & ((v << 1) - 1)))

    def enumerate_cmp(self, s1: int, s2: int, x: int) -> None:
        near = self.neighbours(s2, x)
        if not near:
            return
        for sub in _subsets(near):
            self._step()
            if s2 | sub in self.connected_sets and self.joined(s1, s2 | sub):
                self.emit_pair(s1, s2 | sub)
        x |= near
        for sub in _subsets(near):
            self.enumerate_cmp(s1, s2 | sub, x)

    def emit_pair(self, s1: int, s2: int) -> None:
        self._step()
        self.connected_sets.add(s1 | s2)
        self.emit(s1, s2)
