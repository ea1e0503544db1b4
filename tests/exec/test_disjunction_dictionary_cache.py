"""An OR over one dictionary column (``KernelDisjunction.select``) is evaluated once per dictionary
entry, and the entries are kept for the next batches sharing that dictionary (a stored segment's
batches do): the same rows as Arrow's own evaluation, per batch, whichever dictionary comes."""
from __future__ import annotations

import pickle

import pyarrow as pa
import pyarrow.compute as pc

from engine.exec.kernel_filters import KernelDisjunction, KernelPredicate


def _or(*values: str) -> KernelDisjunction:
    return KernelDisjunction(tuple((KernelPredicate("c", "compare", "eq", (v,), False, None),) for v in values), None)


def _want(column: pa.Array, values) -> list[bool]:
    decoded = column.cast(column.type.value_type) if pa.types.is_dictionary(column.type) else column
    return pc.fill_null(pc.is_in(decoded, pa.array(values)), False).to_pylist()


def test_batches_of_one_dictionary_evaluate_the_or_once(monkeypatch):
    column = pa.array(["M", "W", "S", None, "D"] * 400).dictionary_encode()
    condition = _or("M", "D")
    calls = []
    original = KernelDisjunction._select
    monkeypatch.setattr(KernelDisjunction, "_select", lambda self, batch: calls.append(batch.num_rows) or original(self, batch))
    for start in range(0, len(column), 300):
        part = column.slice(start, 300)
        got = condition.select(pa.RecordBatch.from_arrays([part], names=["c"])).to_pylist()
        assert got == _want(part, ["M", "D"])
    assert calls == [4]         # once, over the 4 dictionary entries


def test_another_dictionary_is_evaluated_on_its_own():
    condition = _or("b", "c")
    for words in (["a", "b", "c"], ["c", "d"], ["b", "a", "e", "c"], ["a", "b", "c"]):
        column = pa.array(words * 50 + [None]).dictionary_encode()
        got = condition.select(pa.RecordBatch.from_arrays([column], names=["c"])).to_pylist()
        assert got == _want(column, ["b", "c"])


def test_a_shipped_condition_carries_no_cached_dictionary():
    condition = _or("x")
    column = pa.array(["x", "y"] * 10).dictionary_encode()
    condition.select(pa.RecordBatch.from_arrays([column], names=["c"]))
    assert condition._by_dictionary
    shipped = pickle.loads(pickle.dumps(condition))
    assert shipped._by_dictionary == {} and shipped == condition
    assert shipped.select(pa.RecordBatch.from_arrays([column], names=["c"])).to_pylist() == [True, False] * 10
