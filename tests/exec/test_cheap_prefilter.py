"""Which scan conjuncts run before a runtime join filter's hash and probe (``is_cheap``; see
engine.exec.runtime_filtering): those cheaper per row than a probe. An OR over one dictionary column is one lookup per row and goes
first; an OR over several columns costs a pass per conjunct and waits for the probe's survivors."""
from __future__ import annotations

import pyarrow as pa

from engine.exec.kernel_filters import KernelDisjunction, KernelPredicate, is_cheap


def _eq(column: str, value: str) -> KernelPredicate:
    return KernelPredicate(column, "compare", "eq", (value,), False, None)


BATCH = pa.RecordBatch.from_arrays(
    [pa.array(["M", "W", "S"] * 100).dictionary_encode(), pa.array(["U", "A"] * 150).dictionary_encode(),
     pa.array(["x", "y"] * 150)], names=["marital", "education", "plain"])


def test_an_or_over_one_dictionary_column_goes_before_the_probe():
    one_column = KernelDisjunction(((_eq("marital", "M"),), (_eq("marital", "W"),)), None)
    assert is_cheap(one_column, BATCH)


def test_an_or_of_ands_over_two_columns_waits_for_the_probe():
    two_columns = KernelDisjunction(((_eq("marital", "M"), _eq("education", "U")),
                                     (_eq("marital", "W"), _eq("education", "A"))), None)
    assert not is_cheap(two_columns, BATCH)


def test_a_plain_string_comparison_waits_for_the_probe():
    assert not is_cheap(_eq("plain", "x"), BATCH)
    assert is_cheap(_eq("marital", "M"), BATCH)
