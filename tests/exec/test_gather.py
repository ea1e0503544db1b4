"""engine.exec.gather.take (and take_ascending over chunked columns) against Arrow's own take: every fixed-width type it gathers over NumPy (and
those it leaves to Arrow), sliced arrays, NULLs among the values, positions in any order and repeated,
and a left join's missing positions."""
import datetime
import decimal

import numpy as np
import pyarrow as pa
import pytest

from engine.exec.gather import take, take_ascending
from engine.exec.kernel_filters import mask_indices

N = 5000


def _arrays(rng):
    ints = rng.integers(-10**6, 10**6, N)
    yield pa.array(ints)
    yield pa.array(ints.astype(np.int8))
    yield pa.array(ints.astype(np.int16), mask=rng.random(N) < 0.2)
    yield pa.array(ints.astype(np.int32))
    yield pa.array(ints.astype(np.uint64), mask=rng.random(N) < 0.5)
    yield pa.array(rng.normal(size=N), mask=rng.random(N) < 0.1)
    yield pa.array(rng.normal(size=N).astype(np.float32))
    yield pa.array([datetime.date(2000, 1, 1) + datetime.timedelta(days=int(d)) for d in ints % 5000], pa.date32())
    yield pa.array(ints, pa.int64()).cast(pa.timestamp("us", tz="UTC"))
    yield pa.array((ints % 86400).astype(np.int32), pa.time32("s"), mask=rng.random(N) < 0.3)
    yield pa.array([decimal.Decimal(int(i)) / 100 for i in ints], pa.decimal128(12, 2))
    yield pa.array([None if i % 7 == 0 else decimal.Decimal(int(i)) for i in ints], pa.decimal128(38, 0))
    yield pa.array([decimal.Decimal(int(i)) for i in ints], pa.decimal256(50, 0))
    yield pa.array([f"s{i}" for i in ints], mask=rng.random(N) < 0.1)           # Arrow's
    yield pa.array(ints % 2 == 0)                                                # Arrow's
    yield pa.array([f"d{i % 5}" for i in ints]).dictionary_encode()
    yield pa.chunked_array([pa.array(ints[:400]), pa.array(ints[400:])])
    yield pa.chunked_array([pa.array(ints, mask=rng.random(N) < 0.4)])


@pytest.mark.parametrize("seed", range(3))
def test_take_matches_arrow(seed):
    rng = np.random.default_rng(seed)
    for array in _arrays(rng):
        for sliced in (array, array[37:4900]):
            n = len(sliced)
            # many positions (the validity bitmap unpacked), a few of a long array (bit by bit), fewer
            # than the NumPy path takes, none
            for indices in (rng.integers(0, n, 3000), np.sort(rng.choice(n, n // 2, replace=False)),
                            rng.integers(0, n, 600), rng.integers(0, n, 20), rng.integers(0, n, 4500), np.zeros(0, np.int64)):
                indices = indices.astype(np.int64)
                want = sliced.take(pa.array(indices, pa.int64()))
                got = take(sliced, indices)
                assert got.type == want.type
                assert got.to_pylist() == want.to_pylist()
                assert got.null_count == (want.null_count if not isinstance(want, pa.ChunkedArray)
                                          else sum(c.null_count for c in want.chunks))
                got.validate(full=True)
                missing = rng.random(len(indices)) < 0.25
                want = sliced.take(pa.array(indices, pa.int64(), mask=missing))
                got = take(sliced, indices, missing)
                assert got.to_pylist() == want.to_pylist()
                got.validate(full=True)


def test_take_of_empty_array_all_missing():
    array = pa.array([], pa.int64())
    got = take(array, np.zeros(500, np.int64), np.ones(500, bool))
    assert got.null_count == 500 and len(got) == 500 and got.type == pa.int64()


@pytest.mark.parametrize("seed", range(3))
def test_take_ascending_over_chunks_matches_arrow(seed):
    """Each type above split into chunks (sliced ones, an empty one, NULLs in some chunks only):
    ascending positions, dense or sparse, some chunks without any."""
    rng = np.random.default_rng(seed)
    for array in _arrays(rng):
        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks()
        cuts = np.sort(rng.choice(np.arange(1, N), 5, replace=False))
        pieces = [array[a:b] for a, b in zip([0, *cuts], [*cuts, N])]
        pieces.insert(2, array[0:0])
        column = pa.chunked_array(pieces, type=array.type)
        for indices in (np.sort(rng.choice(N, N // 2, replace=False)), np.sort(rng.choice(N, 300, replace=False)),
                        np.arange(N), np.arange(cuts[1], cuts[3]), np.sort(rng.choice(N, 5, replace=False)),
                        np.zeros(0, np.int64)):
            indices = indices.astype(np.int64)
            want = array.take(pa.array(indices, pa.int64()))
            for distinct in (False, True):      # every set above is strictly ascending
                got = take_ascending(column, indices, distinct=distinct)
                assert isinstance(got, pa.Array) and got.type == want.type
                assert got.to_pylist() == want.to_pylist()
                assert got.null_count == want.null_count
                got.validate(full=True)
        assert take_ascending(array, np.arange(10)).to_pylist() == array[:10].to_pylist()


@pytest.mark.parametrize("seed", range(3))
def test_mask_indices(seed):
    """The TRUE rows of a mask, NULL not TRUE, sliced masks (a bitmap offset) included."""
    rng = np.random.default_rng(seed)
    for n, share in ((0, 0.5), (1, 1.0), (1000, 0.02), (1000, 0.5), (1003, 0.97), (70000, 0.3)):
        values = rng.random(n) < share
        nulls = rng.random(n) < 0.1
        for mask in (pa.array(values), pa.array(values, mask=nulls), pa.array(values)[3:], pa.array(values, mask=nulls)[5:n - 2]):
            want = [i for i, v in enumerate(mask.to_pylist()) if v is True]
            got = mask_indices(mask)
            assert got.dtype == np.int64 and got.tolist() == want
