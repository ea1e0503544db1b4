"""A scan's runtime join filters and WHERE as one selection (engine.exec.runtime_filtering.ScanFilters):
whatever the order of the steps (the plain comparisons before or after the plain-key probes) and the
encodings of the key columns, the rows kept are exactly those that every Bloom filter may hold and the
predicate keeps (Arrow over the decoded batch), in order, with the columns asked for."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import kernels
from engine.core.expressions import Call, ColumnRef, Literal
from engine.exec.kernel_filters import KernelFilter
from engine.exec.runtime_filtering import BloomProbe, ScanFilters
from engine.storage.columnstore.encoding import decode_column
from engine.types import BIGINT, BOOLEAN, TEXT

TYPES = {"r": BIGINT, "d": BIGINT, "p": BIGINT, "q": BIGINT, "s": TEXT}


def _batch(seed: int, n: int) -> tuple[pa.RecordBatch, pa.RecordBatch]:
    """(encoded, plain): r run-end (sorted), d dictionary, p, q, s plain; nulls in d and p."""
    rng = np.random.default_rng(seed)
    r = np.sort(rng.integers(0, max(1, n // 10), n))
    d = pa.array(rng.integers(0, 20, n), mask=rng.random(n) < 0.1)
    p = pa.array(rng.integers(0, 200, n), mask=rng.random(n) < 0.1)
    q = pa.array(rng.integers(0, 100, n))
    s = pa.array(rng.choice(["x", "y", "zz"], n))
    plain = pa.RecordBatch.from_arrays([pa.array(r), d, p, q, s], names=list(TYPES))
    encoded = pa.RecordBatch.from_arrays([pc.run_end_encode(pa.array(r), run_end_type=pa.int32()),
                                          pc.dictionary_encode(d), p, q, s], names=list(TYPES))
    return encoded, plain


def _ref(name: str) -> ColumnRef:
    return ColumnRef(name, TYPES[name], name)


def _and(parts):
    out = None
    for part in parts:
        out = part if out is None else Call("and", (out, part), BOOLEAN)
    return out


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32), st.sampled_from([0, 1, 9, 700, 3000]),
       st.lists(st.sampled_from(["r", "d", "p"]), unique=True, min_size=1),
       st.lists(st.sampled_from(["between", "or", "string", "dict", "residual"]), unique=True),
       st.booleans(), st.booleans(), st.booleans())
@example(5, 3000, ["p"], ["between"], True, False, False)
@example(6, 3000, ["p", "r", "d"], ["or", "between", "string", "dict", "residual"], True, True, True)
@example(6, 3000, ["p", "r", "d"], ["or", "between", "string", "dict", "residual"], False, True, False)
@example(7, 700, ["r"], ["dict", "string"], False, True, True)
def test_runtime_filters_and_predicate_keep_what_each_keeps(seed, n, keyed, conjuncts, defer, keep, narrow_output):
    encoded, plain = _batch(seed, n)
    rng = np.random.default_rng(seed + 1)
    probes, expected = [], pa.array(np.ones(n, dtype=bool))
    for name in keyed:
        keys = pa.array(rng.choice(200, size=int(rng.integers(1, 40)), replace=False))
        bloom = kernels.JoinBloom(keys)
        probes.append(BloomProbe(name, bloom))
        expected = pc.and_kleene(expected, bloom.might_contain(plain.column(name)))
    parts = []
    if "between" in conjuncts:
        parts += [Call("ge", (_ref("q"), Literal(20, BIGINT)), BOOLEAN), Call("le", (_ref("q"), Literal(60, BIGINT)), BOOLEAN)]
        expected = pc.and_kleene(expected, pc.and_kleene(pc.greater_equal(plain.column("q"), 20),
                                                         pc.less_equal(plain.column("q"), 60)))
    if "or" in conjuncts:                           # an OR over one plain column
        parts.append(Call("or", (Call("lt", (_ref("q"), Literal(30, BIGINT)), BOOLEAN),
                                 Call("gt", (_ref("q"), Literal(50, BIGINT)), BOOLEAN)), BOOLEAN))
        expected = pc.and_kleene(expected, pc.or_kleene(pc.less(plain.column("q"), 30), pc.greater(plain.column("q"), 50)))
    if "string" in conjuncts:
        parts.append(Call("ne", (_ref("s"), Literal("zz", TEXT)), BOOLEAN))
        expected = pc.and_kleene(expected, pc.not_equal(plain.column("s"), "zz"))
    if "dict" in conjuncts:
        parts.append(Call("ne", (_ref("d"), Literal(3, BIGINT)), BOOLEAN))
        expected = pc.and_kleene(expected, pc.not_equal(plain.column("d"), 3))
    if "residual" in conjuncts:                     # column against column: no kernel runs it
        parts.append(Call("lt", (_ref("q"), _ref("p")), BOOLEAN))
        expected = pc.and_kleene(expected, pc.less(plain.column("q"), plain.column("p")))
    predicate = KernelFilter.of(_and(parts)) if parts else None
    filters = ScanFilters(probes, predicate)
    filters._defer_plain = lambda *_: defer
    output = ["p", "d", "s"] if narrow_output else None
    keeping = frozenset(["d"]) if keep else frozenset()
    got = filters.apply(encoded, keep=keeping, output=output)
    want = plain.filter(expected.fill_null(False))
    names = output or list(TYPES)
    assert got.schema.names == names and got.num_rows == want.num_rows
    for name in names:
        column = got.column(name)
        if pa.types.is_dictionary(column.type):
            assert name in keeping
            column = decode_column(column)
        assert column.equals(want.column(name)), name
    # the probes counted the rows they tested (every row at most once each) and what they kept
    for probe in probes:
        assert 0 <= probe.rows_kept <= probe.rows_in <= n


@pytest.mark.parametrize("kept_by_compare, defer", [(0.05, False), (0.95, True)])
def test_a_plain_comparison_that_keeps_most_rows_waits_for_a_selective_probe(kept_by_compare, defer):
    encoded, _ = _batch(7, 1000)
    probe = BloomProbe("p", kernels.JoinBloom(pa.array([5])))
    probe.rows_in, probe.rows_kept = 1000, 10               # the probe keeps 1%
    filters = ScanFilters([probe], None)
    filters.plain_in, filters.plain_kept = 1000, int(1000 * kept_by_compare)
    assert filters._defer_plain([probe]) is defer
