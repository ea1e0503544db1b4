"""kernels.moments (compiled) against kernels/reference/moments.py and against NumPy's var/cov on
random data with nulls, empty groups, one-row groups and a large mean beside a small spread (where
summing squares would cancel), for row updates and for merges of partial states."""
import numpy as np
import pyarrow as pa
import pytest

compiled = pytest.importorskip("kernels.moments")
from kernels.reference import moments as reference


def _states(groups, width=3):
    return [np.zeros(groups, np.int64)] + [np.zeros(groups) for _ in range(width - 1)]


def _validity(arr: pa.Array):
    return np.frombuffer(arr.buffers()[0], np.uint8) if arr.null_count else np.zeros(0, np.uint8)


@pytest.mark.parametrize("seed", range(6))
def test_update_and_merge_match_reference_and_numpy(seed):
    rng = np.random.default_rng(seed)
    groups = int(rng.integers(1, 30))
    n = int(rng.integers(0, 400))
    ids = rng.integers(0, groups, n).astype(np.int64)
    values = rng.normal(1e9 if seed % 2 else 0.0, 1.0 + seed, n)
    arr = pa.array(values, mask=rng.random(n) < 0.2)[1:] if n else pa.array([], pa.float64())
    ids = ids[1:] if n else ids
    data = np.asarray(arr.fill_null(0.0))
    both = []
    for impl in (compiled, reference):
        # two batches into leaf states, merged into the aggregator's
        half = len(ids) // 2
        leaves = [_states(groups), _states(groups)]
        impl.moments_update(ids[:half], data[:half].copy(), _validity(arr.slice(0, half)), arr.slice(0, half).offset,
                            *leaves[0])
        impl.moments_update(ids[half:], data[half:].copy(), _validity(arr.slice(half)), arr.slice(half).offset,
                            *leaves[1])
        total = _states(groups)
        for leaf in leaves:
            impl.moments_merge(np.arange(groups, dtype=np.int64), *leaf, *total)
        both.append(total)
    for a, b in zip(*both):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)   # inputs near 1e9 carry ~1e-7 each
    count, mean, m2 = both[0]
    valid = ~np.asarray(arr.is_null())
    for g in range(groups):
        xs = data[(ids == g) & valid]
        assert count[g] == len(xs)
        if len(xs):
            np.testing.assert_allclose(mean[g], xs.mean(), rtol=1e-12)
            np.testing.assert_allclose(m2[g], ((xs - xs.mean()) ** 2).sum(), rtol=1e-6, atol=1e-6)
        else:
            assert mean[g] == 0 and m2[g] == 0


@pytest.mark.parametrize("seed", range(4))
def test_comoments_match_reference_and_numpy(seed):
    rng = np.random.default_rng(100 + seed)
    groups, n = int(rng.integers(1, 10)), int(rng.integers(0, 300))
    ids = rng.integers(0, groups, n).astype(np.int64)
    x = rng.normal(5e8 * (seed % 2), 2.0, n)
    y = 3 * x + rng.normal(0, 1, n)
    valid = (rng.random(n) > 0.15).astype(np.uint8)
    both = []
    for impl in (compiled, reference):
        half = n // 2
        leaves = [_states(groups, 6), _states(groups, 6)]
        impl.comoments_update(ids[:half], x[:half], y[:half], valid[:half], *leaves[0])
        impl.comoments_update(ids[half:], x[half:], y[half:], valid[half:], *leaves[1])
        total = _states(groups, 6)
        for leaf in leaves:
            impl.comoments_merge(np.arange(groups, dtype=np.int64), *leaf, *total)
        both.append(total)
    for a, b in zip(*both):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-5)
    count, _, _, _, _, c = both[0]
    for g in range(groups):
        keep = (ids == g) & valid.astype(bool)
        assert count[g] == keep.sum()
        if keep.sum() > 1:
            np.testing.assert_allclose(c[g] / (count[g] - 1), np.cov(x[keep], y[keep])[0, 1], rtol=1e-6)


def test_wrong_lengths_are_refused():
    with pytest.raises(ValueError):
        compiled.moments_update(np.zeros(3, np.int64), np.zeros(2), np.zeros(0, np.uint8), 0, *_states(2))
