"""A kernel conjunct on a dictionary column (``KernelPredicate.select``) is evaluated once per entry of
a dictionary, kept for the next batches sharing it (and for the column taken at some positions, as a
scan does after its runtime filters), then looked up per row: the same rows as Arrow's own evaluation,
NULL rows and NULL entries never selected; an OR over two dictionary columns agrees too."""
from __future__ import annotations

import pickle
import random

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.exec.kernel_filters import KernelDisjunction, KernelPredicate, take_column


def _eq(column: str, value) -> KernelPredicate:
    return KernelPredicate(column, "compare", "eq", (value,), False, None)


def _decoded(column: pa.Array) -> pa.Array:
    return column.cast(column.type.value_type) if pa.types.is_dictionary(column.type) else column


def test_batches_of_one_dictionary_evaluate_the_conjunct_once(monkeypatch):
    column = pa.array(["M", "W", None, "S", "D"] * 400).dictionary_encode()
    p = _eq("c", "W")
    entries = []
    original = KernelPredicate.evaluate
    monkeypatch.setattr(KernelPredicate, "evaluate", lambda self, c: entries.append(len(c)) or original(self, c))
    for start in range(0, len(column), 300):
        part = column.slice(start, 300)
        got = p.select(pa.RecordBatch.from_arrays([part], names=["c"])).to_pylist()
        assert got == pc.fill_null(pc.equal(_decoded(part), "W"), False).to_pylist()
    taken = take_column(column, np.array([1, 2, 6, 1999]))
    assert p.select(pa.RecordBatch.from_arrays([taken], names=["c"])).to_pylist() == [True, False, True, False]
    assert entries == [4]           # once, over the 4 dictionary entries


def test_or_over_two_dictionary_columns_matches_arrow():
    rng = random.Random(7)
    rows = 3000
    a = pa.array([rng.choice(["M", "W", "S", None]) for _ in range(rows)])
    b = pa.array([rng.choice(["U", "A", "P", None]) for _ in range(rows)])
    # a NULL dictionary entry as well as NULL codes
    b_dict = pa.DictionaryArray.from_arrays(
        pa.array([None if v is None else ["U", "A", "P"].index(v) + (1 if v == "P" and i % 2 else 0)
                  for i, v in enumerate(b.to_pylist())], pa.int8()), pa.array(["U", "A", "P", None]))
    b = b_dict.cast(pa.string())
    condition = KernelDisjunction(((_eq("a", "M"), _eq("b", "U")), (_eq("a", "W"), _eq("b", "A"))), None)
    want = pc.fill_null(pc.or_kleene(pc.and_kleene(pc.equal(a, "M"), pc.equal(b, "U")),
                                     pc.and_kleene(pc.equal(a, "W"), pc.equal(b, "A"))), False)
    batch = pa.RecordBatch.from_arrays([a.dictionary_encode(), b_dict], names=["a", "b"])
    for start in range(0, rows, 700):
        part = batch.slice(start, 700)
        assert condition.select(part).to_pylist() == want.slice(start, 700).to_pylist()
    positions = np.array(sorted(rng.sample(range(rows), 40)))
    taken = pa.RecordBatch.from_arrays([take_column(batch.column(n), positions) for n in ("a", "b")], names=["a", "b"])
    assert condition.select(taken).to_pylist() == want.take(pa.array(positions)).to_pylist()


def test_a_shipped_conjunct_carries_no_cached_dictionary():
    p = _eq("c", "x")
    column = pa.array(["x", "y"] * 10).dictionary_encode()
    p.select(pa.RecordBatch.from_arrays([column], names=["c"]))
    assert p._by_dictionary
    shipped = pickle.loads(pickle.dumps(p))
    assert shipped._by_dictionary == {} and shipped == p and hash(shipped) == hash(p)
    assert shipped.select(pa.RecordBatch.from_arrays([column], names=["c"])).to_pylist() == [True, False] * 10
