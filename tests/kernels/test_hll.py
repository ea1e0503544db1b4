"""HyperLogLog sketches: the compiled kernel against the NumPy reference (identical registers and
estimates), accuracy over the range ANALYZE meets, and merge = sketch of the union."""
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kernels
from kernels import hash_columns
from kernels.reference import hll as reference

try:
    from kernels import hll as compiled
except ImportError:
    if kernels.IMPLEMENTATION == "compiled":
        raise
    compiled = None

IMPLEMENTATIONS = [impl for impl in (compiled, reference) if impl is not None]
P = 14


def _sketch(impl, values, p=P):
    registers = np.zeros(1 << p, dtype=np.uint8)
    impl.hll_add(hash_columns([pa.array(values, type=pa.int64())]), registers)
    return registers


@pytest.mark.skipif(compiled is None, reason="compiled kernels are not built")
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(-2**63, 2**63 - 1), max_size=300), st.integers(4, 12))
def test_compiled_matches_reference(values, p):
    a, b = _sketch(compiled, values, p), _sketch(reference, values, p)
    assert np.array_equal(a, b)
    assert compiled.hll_estimate(a) == pytest.approx(reference.hll_estimate(b), rel=1e-12)


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=lambda m: m.__name__)
@pytest.mark.parametrize("n", [0, 1, 7, 100, 5_000, 40_000, 300_000])
def test_estimate_within_three_standard_errors(impl, n):
    values = np.random.default_rng(n).permutation(np.arange(n, dtype=np.int64) * 977 + 5)
    estimate = impl.hll_estimate(_sketch(impl, np.concatenate([values, values[: n // 2]])))  # duplicates too
    assert abs(estimate - n) <= max(0.5, 3 * 1.04 / np.sqrt(1 << P) * n)


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=lambda m: m.__name__)
def test_merge_is_the_sketch_of_the_union(impl):
    rng = np.random.default_rng(7)
    parts = [rng.integers(0, 50_000, size=20_000) for _ in range(4)]
    merged = np.zeros(1 << P, dtype=np.uint8)
    for part in parts:
        impl.hll_merge(merged, _sketch(impl, part))
    assert np.array_equal(merged, _sketch(impl, np.concatenate(parts)))


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=lambda m: m.__name__)
def test_rejects_bad_sizes(impl):
    with pytest.raises(ValueError, match="2\\*\\*p registers"):
        impl.hll_add(np.zeros(3, dtype=np.uint64), np.zeros(100, dtype=np.uint8))
    with pytest.raises(ValueError, match="cannot merge"):
        impl.hll_merge(np.zeros(16, dtype=np.uint8), np.zeros(32, dtype=np.uint8))
