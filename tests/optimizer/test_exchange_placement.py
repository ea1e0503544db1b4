"""Exchanges are placed by one rule from what operators declare (engine.optimizer.exchanges): an operator
states the distribution it requires of each input and the one it produces; the rule moves rows only
where the two differ. The plans this gives for TPC-H / TPC-DS are pinned by the EXPLAIN tests; here the
rule itself, on hand-built operators, including one it has never heard of."""
from dataclasses import dataclass

from engine import types as T
from engine.exec.distribution import (ANY, NEEDS_BROADCAST, NEEDS_SINGLE, REPLICATED, SINGLE, Required,
                                      hashed, join_output)
from engine.exec.operators.base import PhysicalOperator
from engine.exec.operators.exchange import ExchangeExec
from engine.exec.operators.filter import FilterExec
from engine.exec.operators.hash_aggregate import HashAggregateExec
from engine.exec.operators.scan import ScanExec
from engine.optimizer.exchanges import ExchangePlacer
from engine.core.expressions import AggCall, ColumnRef
from engine.plan.logical import Field

A = Field("t.a#1", "a", T.BIGINT)
B = Field("t.b#2", "b", T.BIGINT)
N = Field("n#3", "n", T.BIGINT)


def scan(shard_key=(), reference=False):
    return ScanExec(1, "t", (A, B), ("a", "b"), replicated=reference, shard_key=shard_key)


def group_by_b(op, requires):
    return HashAggregateExec(op, "single", ((B, ColumnRef(B.id, B.type, "b")),),
                             ((N, AggCall("count_star", None, T.BIGINT)),), requires=requires)


def shape(op) -> list[str]:
    """The tree as "Exchange kind [keys] parallel" / operator class names, top down."""
    if isinstance(op, ExchangeExec):
        head = f"Exchange {op.kind} {list(op.keys)} {'parallel' if op.parallel_input else 'once'}"
    else:
        head = type(op).__name__
    return [head] + [line for child in op.children for line in shape(child)]


def test_scans_declare_where_their_rows_are():
    placer = ExchangePlacer()
    assert placer.distribution(scan(("a",))) == hashed([A.id])
    assert placer.distribution(scan(("A",))) == hashed([A.id])        # stored names match case-blind
    assert placer.distribution(scan()) == ANY
    assert placer.distribution(scan(reference=True)) == REPLICATED
    # a filter keeps its input's distribution; an aggregate renames its key columns
    assert placer.distribution(FilterExec(scan(("b",)), ColumnRef(A.id, T.BOOLEAN, "a"))) == hashed([B.id])
    assert placer.distribution(group_by_b(scan(("b",)), ())) == hashed([B.id])


def test_rows_move_only_where_the_requirement_is_not_met():
    colocated = (Required.colocated([B.id]),)
    # sharded on the group key: no exchange
    assert shape(ExchangePlacer().place(group_by_b(scan(("b",)), colocated))) == ["HashAggregateExec", "ScanExec"]
    # sharded on another column, or keyless: repartitioned by the key
    for source in (scan(("a",)), scan()):
        assert shape(ExchangePlacer().place(group_by_b(source, colocated))) == [
            "HashAggregateExec", f"Exchange repartition ['{B.id}'] parallel", "ScanExec"]
    # a reference table is repartitioned from one copy of it
    assert shape(ExchangePlacer().place(group_by_b(scan(reference=True), colocated))) == [
        "HashAggregateExec", f"Exchange repartition ['{B.id}'] once", "Exchange gather [] once", "ScanExec"]
    # the root's requirement: gathered
    assert shape(ExchangePlacer().place(scan(("a",)), NEEDS_SINGLE)) == ["Exchange gather [] parallel", "ScanExec"]
    assert shape(ExchangePlacer().place(scan(reference=True), NEEDS_BROADCAST)) == ["ScanExec"]


@dataclass(frozen=True)
class PairwiseExec(PhysicalOperator):
    """An operator the rule knows nothing of: its left input wherever it is, a copy of its right."""
    left: PhysicalOperator
    right: PhysicalOperator

    @property
    def fields(self):
        return self.left.fields

    @property
    def children(self):
        return (self.left, self.right)

    def required_distributions(self):
        return (None, NEEDS_BROADCAST)


def test_a_new_operator_gets_its_exchanges_from_what_it_declares():
    shared = scan()
    placed = ExchangePlacer().place(PairwiseExec(shared, shared), NEEDS_SINGLE)
    assert shape(placed) == ["Exchange gather [] parallel", "PairwiseExec", "ScanExec",
                             "Exchange broadcast [] parallel", "ScanExec"]
    # the input read twice stays one operator
    pairwise = placed.input
    assert pairwise.left is pairwise.right.input


def test_requirements_and_join_outputs():
    assert Required.colocated([A.id, B.id]).satisfied_by(hashed([B.id]))
    assert Required.colocated([A.id]).satisfied_by(SINGLE)
    assert not Required.hash([A.id, B.id]).satisfied_by(hashed([B.id, A.id]))    # order is the hash's
    assert not Required.colocated([A.id]).satisfied_by(ANY)
    assert join_output("inner", hashed([A.id]), REPLICATED) == hashed([A.id])
    assert join_output("inner", REPLICATED, hashed([B.id])) == hashed([B.id])
    assert join_output("full", hashed([A.id]), hashed([B.id])) == ANY
    assert join_output("left", SINGLE, SINGLE) == SINGLE
