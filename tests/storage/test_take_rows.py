"""``take_rows`` (what an index lookup reads of a segment) against decoding the whole column and
taking from it, on plain, dictionary and run-end arrays, sliced or not, with NULLs."""
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from engine.storage.columnstore.encoding import decode_column, take_rows


def _arrays(rng):
    values = pa.array([None if v % 7 == 0 else int(v) for v in rng.integers(0, 5, 300)], pa.int64())
    strings = pa.array([None if v == 0 else f"s{v}" for v in rng.integers(0, 4, 300)])
    yield values
    yield strings.dictionary_encode()
    yield pc.run_end_encode(pa.array(np.repeat(rng.integers(0, 9, 60), rng.integers(1, 9, 60))))
    yield pc.run_end_encode(strings.sort(), run_end_type=pa.int16())


@pytest.mark.parametrize("seed", range(5))
def test_take_rows_matches_decoding_all(seed):
    rng = np.random.default_rng(seed)
    for array in _arrays(rng):
        for sliced in (array, array.slice(17, len(array) - 40)):
            positions = np.unique(rng.integers(0, len(sliced), 12)).astype(np.int64)
            expected = decode_column(sliced).take(pa.array(positions))
            got = take_rows(sliced, positions)
            assert got.type == expected.type and got.to_pylist() == expected.to_pylist()
    assert len(take_rows(pa.array([1, 2]), np.empty(0, np.int64))) == 0
