"""Hashing and hash partitioning: the compiled kernels against the NumPy reference, and the
properties the engine relies on (colocation across integer widths, uniform partitions, stable
scatter, lossless split) checked on whichever implementation ``kernels`` exports."""
import decimal
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kernels
from kernels import hash_columns, partition_ids, scatter_indices, split_batch
from kernels.reference import hashing as reference

try:
    from kernels import hashing as compiled
except ImportError:
    if kernels.IMPLEMENTATION == "compiled":
        raise
    compiled = None  # reference mode needs no build; comparisons with the kernels are then skipped

IMPLEMENTATIONS = [impl for impl in (compiled, reference) if impl is not None]
needs_compiled = pytest.mark.skipif(compiled is None, reason="compiled kernels are not built")

NULL_HASH = 0x6E756C6C6E756C6D
PROPERTY_SETTINGS = settings(max_examples=150, deadline=None,
                             suppress_health_check=[HealthCheck.too_slow])


# ---------------------------------------------------------------------------------------------------
# Random Arrow columns


def _int_range(bits, signed):
    return (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)


def _values(t):
    """A strategy for one non-null Python value of Arrow type ``t`` (as ``pa.array`` takes it)."""
    if pa.types.is_integer(t):
        lo, hi = _int_range(t.bit_width, pa.types.is_signed_integer(t))
        return st.integers(lo, hi) | st.sampled_from([lo, hi, 0, 1, -1 if lo < 0 else 2])
    if pa.types.is_boolean(t):
        return st.booleans()
    if pa.types.is_float32(t) or pa.types.is_float64(t):
        width = 32 if pa.types.is_float32(t) else 64
        return st.floats(width=width) | st.sampled_from([0.0, -0.0, float("nan"), float("inf")])
    if pa.types.is_decimal(t):
        bound = 10**t.precision - 1
        return st.integers(-bound, bound).map(lambda i: decimal.Decimal(f"{i}E-{t.scale}"))
    if pa.types.is_fixed_size_binary(t):
        return st.binary(min_size=t.byte_width, max_size=t.byte_width)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return st.text(max_size=20) | st.text(min_size=30, max_size=90)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return st.binary(max_size=20) | st.binary(min_size=30, max_size=90)
    if pa.types.is_null(t):
        return st.none()
    raise AssertionError(t)


# Temporal types are generated as their storage integers and viewed.
TEMPORAL = {
    pa.date32(): pa.int32(),
    pa.date64(): pa.int64(),
    pa.time32("ms"): pa.int32(),
    pa.time64("ns"): pa.int64(),
    pa.timestamp("s"): pa.int64(),
    pa.timestamp("ns", tz="UTC"): pa.int64(),
    pa.duration("us"): pa.int64(),
}
PLAIN_TYPES = [
    pa.int8(), pa.int16(), pa.int32(), pa.int64(),
    pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64(),
    pa.bool_(), pa.float32(), pa.float64(),
    pa.decimal128(38, 4), pa.decimal128(5, 0), pa.decimal256(50, 10), pa.binary(3),
    pa.string(), pa.large_string(), pa.binary(), pa.large_binary(), pa.null(),
]
ALL_TYPES = PLAIN_TYPES + list(TEMPORAL)
DICTIONARY_VALUE_TYPES = [t for t in ALL_TYPES if not pa.types.is_null(t)]


def _array_of(t, values):
    if t in TEMPORAL:
        return pa.array(values, type=TEMPORAL[t]).view(t)
    return pa.array(values, type=t)


@st.composite
def arrays(draw, length, types=ALL_TYPES):
    """A pa.Array of exactly ``length`` rows, with nulls, maybe sliced, maybe dictionary-encoded."""
    t = draw(st.sampled_from(types))
    storage = TEMPORAL.get(t, t)
    pad_left = draw(st.integers(0, 9))
    pad_right = draw(st.integers(0, 3))
    values = draw(st.lists(st.none() | _values(storage), min_size=length + pad_left + pad_right,
                           max_size=length + pad_left + pad_right))
    arr = _array_of(t, values)
    if not pa.types.is_null(t) and draw(st.booleans()):
        arr = _random_dictionary(draw, arr)
    return arr.slice(pad_left, length)


def _random_dictionary(draw, arr):
    """Dictionary-encode ``arr`` with a random index type, sometimes with a null dictionary entry
    and unused entries, so that the gather path sees everything Arrow allows."""
    encoded = arr.dictionary_encode()
    index_type = draw(st.sampled_from([pa.int8(), pa.int16(), pa.int32(), pa.int64(),
                                       pa.uint8(), pa.uint32()]))
    if len(encoded.dictionary) > 100:
        index_type = pa.int32()
    indices = encoded.indices.cast(index_type)
    dictionary = encoded.dictionary
    if draw(st.booleans()):
        # Prepend a null entry and an unused entry; shift the codes past them.
        t = dictionary.type
        extra = _array_of(t, [None, draw(_values(TEMPORAL.get(t, t)))])
        dictionary = pa.concat_arrays([extra, dictionary])
        indices = pc.add(indices.cast(pa.int64()), 2).cast(index_type)
    return pa.DictionaryArray.from_arrays(indices, dictionary)


def _chunked(draw, arr):
    cuts = sorted(draw(st.lists(st.integers(0, len(arr)), max_size=4)))
    bounds = [0, *cuts, len(arr)]
    return pa.chunked_array([arr.slice(a, b - a) for a, b in zip(bounds, bounds[1:])], arr.type)


@st.composite
def key_columns(draw, max_columns=3, max_length=120):
    length = draw(st.integers(0, max_length))
    columns = []
    for _ in range(draw(st.integers(1, max_columns))):
        arr = draw(arrays(length))
        columns.append(_chunked(draw, arr) if draw(st.booleans()) else arr)
    return columns


def _binary_layout(t):
    """The binary type stored like string/binary type ``t``: viewing random bytes as ``t`` skips
    UTF-8 validation, which the hash does not care about."""
    large = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
    return pa.large_binary() if large else pa.binary()


def _assert_same_hashes(columns):
    expected = reference.hash_columns(columns)
    actual = compiled.hash_columns(columns)
    assert actual.dtype == np.uint64 and expected.dtype == np.uint64
    np.testing.assert_array_equal(actual, expected)
    return actual


# ---------------------------------------------------------------------------------------------------
# Compiled kernels == reference


@needs_compiled
@PROPERTY_SETTINGS
@given(key_columns())
def test_compiled_matches_reference(columns):
    _assert_same_hashes(columns)


@needs_compiled
@pytest.mark.parametrize("t", ALL_TYPES, ids=str)
@pytest.mark.parametrize("length", [0, 1, 7, 8, 9, 31, 32, 33, 63, 64, 65, 1023, 1024, 1025, 4097])
def test_compiled_matches_reference_across_sizes(t, length):
    """Lengths around vector widths, bitmap bytes and XXH64's 32-byte stripes, with every bit
    offset of a sliced array."""
    rng = np.random.default_rng(length)
    storage = TEMPORAL.get(t, t)
    if pa.types.is_null(t):
        base = pa.nulls(length + 8)
    elif pa.types.is_integer(storage):
        lo, hi = _int_range(storage.bit_width, pa.types.is_signed_integer(storage))
        raw = rng.integers(lo, hi, size=length + 8, endpoint=True, dtype=storage.to_pandas_dtype())
        base = _array_of(t, raw)
    elif pa.types.is_floating(t):
        base = pa.array(rng.standard_normal(length + 8).astype(t.to_pandas_dtype()))
    elif pa.types.is_boolean(t):
        base = pa.array(rng.integers(0, 2, length + 8).astype(bool))
    elif pa.types.is_decimal(t) or pa.types.is_fixed_size_binary(t):
        base = pa.array([bytes(rng.integers(0, 256, t.byte_width, dtype=np.uint8))
                         for _ in range(length + 8)], pa.binary(t.byte_width))
        base = base.view(t)
    else:
        base = pa.array([bytes(rng.integers(0, 256, rng.integers(0, 70), dtype=np.uint8))
                         for _ in range(length + 8)], _binary_layout(t)).view(t)
    nulls = pa.array(rng.random(length + 8) < 0.2)
    with_nulls = pc.if_else(nulls, pa.scalar(None, base.type), base)
    for offset in range(8):
        _assert_same_hashes([base.slice(offset, length)])
        _assert_same_hashes([with_nulls.slice(offset, length)])
    _assert_same_hashes([with_nulls.slice(3, length), base.slice(5, length)])


def test_chunked_equals_contiguous():
    arr = pa.array([1, None, 3, 4, 5, None, 7], pa.int64())
    chunked = pa.chunked_array([arr.slice(0, 2), arr.slice(2, 0), arr.slice(2, 5)])
    for impl in IMPLEMENTATIONS:
        np.testing.assert_array_equal(impl.hash_columns([chunked]), impl.hash_columns([arr]))
        assert len(impl.hash_columns([pa.chunked_array([], pa.string())])) == 0


def test_dictionary_paths_agree():
    """Gather path (dictionary no larger than the rows) and decode path (a short slice of a large
    dictionary), with null codes whose stored values are out of range."""
    words = pa.array([f"w{i}" for i in range(50)] + [None])
    codes = pa.array(np.arange(1000) % 51, pa.int16())
    arr = pa.DictionaryArray.from_arrays(codes, words)
    decoded = arr.dictionary_decode()
    for impl in IMPLEMENTATIONS:
        np.testing.assert_array_equal(impl.hash_columns([arr]), impl.hash_columns([decoded]))
        np.testing.assert_array_equal(impl.hash_columns([arr.slice(990, 5)]),
                                      impl.hash_columns([decoded.slice(990, 5)]))

    # Codes 0, 99 (null slot, garbage), 1.
    garbage = pa.Array.from_buffers(pa.int32(), 3, [pa.py_buffer(bytes([0b101])),
                                                    pa.py_buffer(np.array([0, 99, 1], np.int32))])
    arr = pa.DictionaryArray.from_arrays(garbage, pa.array(["a", "b"]))
    for impl in IMPLEMENTATIONS:
        expected = impl.hash_columns([pa.array(["a", None, "b"])])
        np.testing.assert_array_equal(impl.hash_columns([arr]), expected)


# ---------------------------------------------------------------------------------------------------
# Properties of the hash, on the implementation `kernels` exports


@pytest.mark.parametrize("data, expected", [
    (b"", 0xEF46DB3751D8E999),
    (b"a", 0xD24EC4F1A98C6E5B),
    (b"abc", 0x44BC2CF5AD770999),
])
def test_strings_hash_as_xxh64(data, expected):
    for t in (pa.binary(), pa.large_binary(), pa.string(), pa.large_string()):
        arr = pa.array([data], pa.binary()).cast(t)
        assert hash_columns([arr]).tolist() == [expected]


def test_integers_hash_as_xxh64_of_little_endian_int64():
    assert hash_columns([pa.array([5], pa.int64())]).tolist() == [0x89BE0B2DD5C2593D]


def test_integer_widths_hash_alike():
    """Colocated joins between differently typed integer keys depend on this."""
    values = [0, 1, 5, 127, -1, -128]
    expected = hash_columns([pa.array(values, pa.int64())])
    for t in (pa.int8(), pa.int16(), pa.int32()):
        np.testing.assert_array_equal(hash_columns([pa.array(values, t)]), expected)
    unsigned = [0, 1, 5, 127, 255]
    expected = hash_columns([pa.array(unsigned, pa.int64())])
    for t in (pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()):
        np.testing.assert_array_equal(hash_columns([pa.array(unsigned, t)]), expected)
    days = pa.array([0, 19000, -1], pa.int32())
    np.testing.assert_array_equal(hash_columns([days.view(pa.date32())]),
                                  hash_columns([days.cast(pa.int64())]))
    np.testing.assert_array_equal(hash_columns([pa.array([False, True])]),
                                  hash_columns([pa.array([0, 1], pa.int64())]))


@PROPERTY_SETTINGS
@given(st.lists(st.none() | st.integers(-(2**31), 2**31 - 1), max_size=50), st.integers(0, 5))
def test_int32_and_int64_keys_hash_alike(values, offset):
    a32 = pa.array([None] * offset + values, pa.int32()).slice(offset)
    a64 = pa.array(values, pa.int64())
    other = pa.array([str(v) for v in values])
    np.testing.assert_array_equal(hash_columns([a32]), hash_columns([a64]))
    np.testing.assert_array_equal(hash_columns([other, a32]), hash_columns([other, a64]))


def test_extreme_integers():
    hashes = hash_columns([pa.array([-(2**63), 2**63 - 1, -1, 0], pa.int64())])
    assert len(set(hashes.tolist())) == 4
    # uint64 values hash as the int64 with the same bits.
    as_unsigned = hash_columns([pa.array([2**63, 2**63 - 1, 2**64 - 1, 0], pa.uint64())])
    np.testing.assert_array_equal(as_unsigned, hashes)


def test_floats_normalise_zero_and_nan():
    nan_bits = np.array([0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000001,
                         0x7FFFFFFFFFFFFFFF], np.uint64)
    nans = pa.array(nan_bits.view(np.float64))
    hashes = hash_columns([nans])
    assert len(set(hashes.tolist())) == 1
    assert hash_columns([pa.array([float("nan")], pa.float32())])[0] == hashes[0]
    zeros = hash_columns([pa.array([0.0, -0.0]), pa.array([-0.0, 0.0], pa.float32())])
    assert zeros[0] == zeros[1]
    np.testing.assert_array_equal(hash_columns([pa.array([1.5, -2.25], pa.float32())]),
                                  hash_columns([pa.array([1.5, -2.25], pa.float64())]))
    assert hash_columns([pa.array([1.0])])[0] != hash_columns([pa.array([-1.0])])[0]


def test_nulls_hash_to_one_constant():
    for t in ALL_TYPES:
        assert hash_columns([pa.nulls(3, t)]).tolist() == [NULL_HASH] * 3, t
    dictionary = pa.DictionaryArray.from_arrays(pa.array([0, None]), pa.array([None, "x"]))
    assert hash_columns([dictionary]).tolist() == [NULL_HASH] * 2
    assert int(reference.NULL_HASH) == NULL_HASH
    assert all(int(impl.NULL_HASH) == NULL_HASH for impl in IMPLEMENTATIONS)


def test_empty_and_long_strings():
    long = "x" * 10_000
    hashes = hash_columns([pa.array(["", None, long, long[:-1], "", "é"])])
    assert hashes[0] == hashes[4] == 0xEF46DB3751D8E999
    assert hashes[1] == NULL_HASH
    assert len({hashes[0], hashes[2], hashes[3], hashes[5]}) == 4
    # A string and a binary holding the same bytes hash alike.
    np.testing.assert_array_equal(hashes, hash_columns([pa.array(["", None, long, long[:-1], "", "é"],
                                                                 pa.large_binary())]))


def test_decimal_hash_ignores_precision_not_scale():
    values = [decimal.Decimal("1.50"), decimal.Decimal("-3.25"), None]
    narrow = hash_columns([pa.array(values, pa.decimal128(5, 2))])
    wide = hash_columns([pa.array(values, pa.decimal128(30, 2))])
    np.testing.assert_array_equal(narrow, wide)
    rescaled = hash_columns([pa.array(values, pa.decimal128(30, 3))])
    assert narrow[0] != rescaled[0]


@PROPERTY_SETTINGS
@given(st.data())
def test_dictionary_hashes_like_decoded(data):
    arr = data.draw(arrays(data.draw(st.integers(0, 60)), types=DICTIONARY_VALUE_TYPES))
    if not pa.types.is_dictionary(arr.type):
        arr = _random_dictionary(data.draw, arr)
    np.testing.assert_array_equal(hash_columns([arr]), hash_columns([arr.dictionary_decode()]))


def test_column_order_matters_and_columns_mix():
    a = pa.array([1, 2], pa.int64())
    b = pa.array([2, 1], pa.int64())
    ab, ba = hash_columns([a, b]), hash_columns([b, a])
    assert ab[0] != ba[0] and ab[0] == ba[1]
    assert ab[0] != ab[1]
    nulls = pa.nulls(2, pa.int64())
    assert hash_columns([nulls, a])[0] != hash_columns([a, nulls])[0]


def test_hash_columns_rejects_bad_input():
    with pytest.raises(ValueError):
        hash_columns([])
    with pytest.raises(ValueError):
        hash_columns([pa.array([1, 2]), pa.array([1])])
    with pytest.raises(TypeError):
        hash_columns([pa.array([[1], [2]])])
    with pytest.raises(TypeError):
        hash_columns([np.array([1, 2])])


# ---------------------------------------------------------------------------------------------------
# partition_ids


@PROPERTY_SETTINGS
@given(st.lists(st.integers(0, 2**64 - 1) | st.sampled_from([0, 2**64 - 1, 2**63, 2**32 - 1]),
                max_size=200),
       st.integers(1, 2**31 - 1) | st.sampled_from([1, 2, 3, 8, 1000, 2**31 - 1]))
def test_partition_ids_in_range_and_match_reference(hashes, n):
    hashes = np.array(hashes, dtype=np.uint64)
    ids = partition_ids(hashes, n)
    assert ids.dtype == np.int32 and ids.shape == hashes.shape
    assert ((ids >= 0) & (ids < n)).all()
    for impl in IMPLEMENTATIONS:
        np.testing.assert_array_equal(ids, impl.partition_ids(hashes, n))
    # The documented formula, in Python integers.
    assert ids.tolist() == [((int(h) >> 32) * n) >> 32 for h in hashes]


@pytest.mark.parametrize("n", [2, 3, 7, 8, 16, 100, 1000])
def test_partitions_of_sequential_keys_are_uniform(n):
    rows = 100_000
    ids = partition_ids(hash_columns([pa.array(np.arange(rows, dtype=np.int64))]), n)
    counts = np.bincount(ids, minlength=n)
    expected = rows / n
    if n <= 16:
        # Within 5% of the mean: at least 4 standard deviations of a fair die at these sizes.
        assert np.abs(counts - expected).max() <= 0.05 * expected, counts
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    # 99.9th percentile of chi-square with n - 1 degrees of freedom, roughly (Wilson-Hilferty).
    z = 3.09
    k = n - 1
    assert chi2 < k * (1 - 2 / (9 * k) + z * (2 / (9 * k)) ** 0.5) ** 3, (chi2, counts)


def test_partition_ids_rejects_bad_input():
    with pytest.raises(ValueError):
        partition_ids(np.zeros(3, np.uint64), 0)
    with pytest.raises(ValueError):
        partition_ids(np.zeros(3, np.uint64), 2**31)
    with pytest.raises(TypeError):
        partition_ids(np.zeros(3, np.int64), 4)


# ---------------------------------------------------------------------------------------------------
# scatter_indices


@PROPERTY_SETTINGS
@given(st.integers(1, 20).flatmap(
    lambda n: st.tuples(st.just(n), st.lists(st.integers(0, n - 1), max_size=300))))
def test_scatter_indices_is_a_stable_permutation(case):
    n, ids = case
    ids = np.array(ids, dtype=np.int32)
    indices, offsets = scatter_indices(ids, n)
    assert indices.dtype == np.int64 and offsets.dtype == np.int64
    assert offsets.shape == (n + 1,) and offsets[0] == 0 and offsets[-1] == len(ids)
    np.testing.assert_array_equal(np.sort(indices), np.arange(len(ids)))
    for p in range(n):
        rows = indices[offsets[p]:offsets[p + 1]]
        assert (ids[rows] == p).all()
        assert (np.diff(rows) > 0).all()
    for impl in IMPLEMENTATIONS:
        expected_indices, expected_offsets = impl.scatter_indices(ids, n)
        np.testing.assert_array_equal(indices, expected_indices)
        np.testing.assert_array_equal(offsets, expected_offsets)


@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.int32, np.int64, np.uint64])
def test_scatter_indices_accepts_any_integer_dtype(dtype):
    for impl in IMPLEMENTATIONS:
        indices, offsets = impl.scatter_indices(np.array([2, 0, 1, 0], dtype), 3)
        assert indices.tolist() == [1, 3, 2, 0] and offsets.tolist() == [0, 2, 3, 4]
        indices, offsets = impl.scatter_indices(np.array([2, 0, 1, 0], dtype)[::2], 3)
        assert indices.tolist() == [1, 0] and offsets.tolist() == [0, 0, 1, 2]


@pytest.mark.parametrize("ids", [[0, 3], [-1, 0], [0, 2**40]])
def test_scatter_indices_rejects_out_of_range_ids(ids):
    for dtype in (np.int32, np.int64):
        if np.iinfo(dtype).max < max(ids):
            continue
        with pytest.raises(ValueError):
            scatter_indices(np.array(ids, dtype), 3)
    with pytest.raises(TypeError):
        scatter_indices(np.array([0.0, 1.0]), 3)


# ---------------------------------------------------------------------------------------------------
# split_batch


def _sample_batch(rows, seed=0):
    rng = np.random.default_rng(seed)
    return pa.record_batch({
        "row": pa.array(np.arange(rows, dtype=np.int64)),
        "k1": pa.array(rng.integers(0, 50, rows), mask=rng.random(rows) < 0.1),
        "k2": pa.array([f"s{v}" for v in rng.integers(0, 20, rows)]),
        "payload": pa.array(rng.standard_normal(rows)),
    })


def _check_split(parts, source, keys, n):
    assert len(parts) == n
    assert all(type(part) is type(source) for part in parts)
    assert sum(part.num_rows for part in parts) == source.num_rows
    combined = pa.concat_tables([pa.Table.from_batches([p]) if isinstance(p, pa.RecordBatch) else p
                                 for p in parts])
    assert sorted(combined.column("row").to_pylist()) == list(range(source.num_rows))
    expected = pa.Table.from_batches([source]) if isinstance(source, pa.RecordBatch) else source
    assert combined.sort_by("row").equals(expected.sort_by("row"))
    for p, part in enumerate(parts):
        if part.num_rows:
            ids = partition_ids(hash_columns([part.column(k) for k in keys]), n)
            assert (ids == p).all()
            assert (np.diff(part.column("row").to_numpy()) > 0).all()


@pytest.mark.parametrize("n", [1, 2, 8, 13])
@pytest.mark.parametrize("keys", [["k1", "k2"], [1, 2], ["k2"]])
def test_split_batch_round_trips(n, keys):
    batch = _sample_batch(2_000)
    _check_split(split_batch(batch, keys, n), batch, keys, n)
    table = pa.Table.from_batches([batch.slice(0, 700), batch.slice(700, 0), batch.slice(700)])
    _check_split(split_batch(table, keys, n), table, keys, n)


def test_split_batch_matches_reference_and_handles_empty():
    batch = _sample_batch(500, seed=3)
    ours = split_batch(batch, ["k1", "k2"], 8)
    for impl in IMPLEMENTATIONS:
        assert all(a.equals(b) for a, b in zip(ours, impl.split_batch(batch, ["k1", "k2"], 8)))
    empty = split_batch(batch.slice(0, 0), ["k1"], 4)
    assert len(empty) == 4 and all(part.num_rows == 0 for part in empty)


def test_split_batch_rejects_bad_input():
    batch = _sample_batch(10)
    with pytest.raises(ValueError):
        split_batch(batch, ["k1"], 0)
    with pytest.raises(ValueError):
        split_batch(batch, [], 2)
    with pytest.raises(TypeError):
        split_batch(batch, "k1", 2)
    with pytest.raises(KeyError):
        split_batch(batch, ["missing"], 2)


# ---------------------------------------------------------------------------------------------------
# Low-level kernels reject malformed buffers instead of reading out of bounds


@needs_compiled
def test_kernels_reject_malformed_buffers():
    out = np.empty(2, np.uint64)
    with pytest.raises(ValueError):
        compiled.hash_binary(np.array([0, 3, 2], np.int32), np.zeros(4, np.uint8), out)
    with pytest.raises(ValueError):
        compiled.hash_binary(np.array([0, 3, 9], np.int64), np.zeros(4, np.uint8), out)
    with pytest.raises(ValueError):
        compiled.hash_dictionary_codes(np.zeros(2, np.uint64), np.array([0, 2], np.int8), None, 0, out)
    with pytest.raises(ValueError):
        compiled.hash_dictionary_codes(np.zeros(2, np.uint64), np.array([-1, 0], np.int64), None, 0, out)
    with pytest.raises(ValueError):
        compiled.set_null_hashes(np.zeros(1, np.uint8), 7, out)
    with pytest.raises(ValueError):
        compiled.hash_integers(np.zeros(3, np.int64), out)


# ---------------------------------------------------------------------------------------------------
# The CANOPY_KERNELS switch


def _import_kernels(env_value):
    env = {**os.environ, "CANOPY_KERNELS": env_value}
    code = ("import kernels; print(kernels.IMPLEMENTATION, sorted(kernels.__all__), "
            "kernels.hash_columns.__module__)")
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))


def test_switch_exports_reference():
    result = _import_kernels("reference")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[0] == "reference"
    for name in ("'IMPLEMENTATION'", "'hash_columns'", "'partition_ids'", "'scatter_indices'", "'split_batch'"):
        assert name in result.stdout      # other families add their own exports beside these
    assert result.stdout.split()[-1] == "kernels.reference.hashing"


def test_switch_rejects_unknown_value():
    result = _import_kernels("fast")
    assert result.returncode != 0 and "CANOPY_KERNELS" in result.stderr
