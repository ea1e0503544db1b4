"""Hash group-by: the compiled factorizer and grouped aggregates against the pyarrow reference on
random batches (nulls, empties, one row, extreme values, dictionary batches, several key columns,
streams of batches crossing the table's growth and prefetch-block boundaries)."""
import decimal

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kernels
from kernels.reference import groupby as reference

try:
    from kernels import groupby as compiled
except ImportError:
    if kernels.IMPLEMENTATION == "compiled":
        raise
    compiled = None

needs_compiled = pytest.mark.skipif(compiled is None, reason="compiled kernels are not built")
IMPLEMENTATIONS = [impl for impl in (compiled, reference) if impl is not None]
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

KEY_TYPES = [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint32(), pa.date32(), pa.bool_(),
             pa.decimal128(12, 2), pa.decimal128(38, 0), pa.string(), pa.large_string(), pa.binary()]


def _value(t):
    if pa.types.is_boolean(t):
        return st.booleans()
    if pa.types.is_integer(t):
        signed = pa.types.is_signed_integer(t)
        lo, hi = (-(2 ** (t.bit_width - 1)), 2 ** (t.bit_width - 1) - 1) if signed else (0, 2 ** t.bit_width - 1)
        # a few distinct values so that groups repeat, and the extremes
        return st.integers(-3 if signed else 0, 3) | st.sampled_from([lo, hi])
    if pa.types.is_date32(t):
        return st.integers(-3, 3).map(lambda d: np.datetime64("1970-01-01") + np.timedelta64(d, "D")).map(
            lambda d: d.astype(object))
    if pa.types.is_decimal(t):
        bound = 10 ** t.precision - 1
        return (st.integers(-3, 3) | st.sampled_from([-bound, bound])).map(
            lambda i: decimal.Decimal(f"{i}E-{t.scale}"))
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return st.sampled_from(["", "a", "b", "ab", "é", "x" * 40])
    return st.sampled_from([b"", b"\x00", b"a", b"a\x00"])


@st.composite
def key_batches(draw, max_columns=3):
    types = draw(st.lists(st.sampled_from(KEY_TYPES), min_size=1, max_size=max_columns))
    sizes = draw(st.lists(st.integers(0, 40) | st.sampled_from([127, 128, 129, 300]), min_size=1, max_size=4))
    batches = []
    for n in sizes:
        columns = []
        for t in types:
            values = draw(st.lists(st.none() | _value(t), min_size=n, max_size=n))
            if draw(st.booleans()) and n:      # an array at a non-zero offset
                arr = pa.array(values[:1] + values, type=t).slice(1)
            else:
                arr = pa.array(values, type=t)
            if draw(st.booleans()) and n:
                arr = arr.dictionary_encode()
            columns.append(arr)
        batches.append(columns)
    return types, batches


def _run(impl, types, batches):
    f = impl.Factorizer(types)
    ids = [f.factorize(columns) for columns in batches]
    return ids, f.uniques(), f.num_groups


@needs_compiled
@SETTINGS
@given(key_batches())
def test_factorize_matches_reference(case):
    types, batches = case
    got_ids, got_keys, got_n = _run(compiled, types, batches)
    want_ids, want_keys, want_n = _run(reference, types, batches)
    assert got_n == want_n
    for g, w in zip(got_ids, want_ids):
        np.testing.assert_array_equal(g, w)
    for g, w in zip(got_keys, want_keys):
        assert g.equals(w), (g, w)


@st.composite
def coded_key_batches(draw):
    """Batches of two or three dictionary-encoded string keys, big enough (>= 1024 rows) for the
    compiled factorizer to group their combined codes: nulls in codes and in dictionaries, a
    dictionary holding one value twice (as a dictionary of collation keys does), narrow and wide
    codes, offsets, some batches decoded and some with a new dictionary."""
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    columns = draw(st.integers(2, 3))
    values = ["a", "A", "b", "", "é", "xyz"]
    batches = []
    for _ in range(draw(st.integers(1, 3))):
        n = draw(st.sampled_from([1024, 1500, 3000]))
        batch = []
        for _ in range(columns):
            size = int(rng.integers(1, 7))
            dictionary = pa.array([values[i] if rng.random() > 0.1 else None
                                   for i in rng.integers(0, len(values), size)] + ["a"], pa.string())
            codes = rng.integers(0, len(dictionary), n + 1)
            mask = rng.random(n + 1) < draw(st.sampled_from([0.0, 0.05]))
            index_type = draw(st.sampled_from([pa.int8(), pa.int32(), pa.uint16()]))
            arr = pa.DictionaryArray.from_arrays(pa.array(codes, index_type, mask=mask), dictionary).slice(1)
            batch.append(arr.dictionary_decode() if rng.random() < 0.1 else arr)
        batches.append(batch)
    return [pa.string()] * columns, batches


@needs_compiled
@SETTINGS
@given(coded_key_batches())
def test_combined_dictionary_codes_match_reference(case):
    types, batches = case
    got_ids, got_keys, got_n = _run(compiled, types, batches)
    want_ids, want_keys, want_n = _run(reference, types, batches)
    assert got_n == want_n
    for g, w in zip(got_ids, want_ids):
        np.testing.assert_array_equal(g, w)
    for g, w in zip(got_keys, want_keys):
        assert g.equals(w), (g, w)


@needs_compiled
@pytest.mark.skipif(compiled is not None and not hasattr(compiled, "mix_codes"),
                    reason="kernels/groupby was built before mix_codes: rebuild (setup.py build_ext --inplace)")
def test_mix_codes_nulls_and_bad_codes():
    arr = pa.array([1, None, 0], pa.int16())
    out = np.array([1, 1, 1], dtype=np.int64)
    compiled.mix_codes(np.array([1, 0, 0], dtype=np.int16), np.frombuffer(arr.buffers()[0], np.uint8), 0, 2, 10, out)
    assert out.tolist() == [11, 21, 1]               # a null is code 2 of a dictionary of 2
    with pytest.raises(ValueError, match="row 1 has dictionary code 5"):
        compiled.mix_codes(np.array([0, 5], dtype=np.int32), None, 0, 2, 1, np.zeros(2, dtype=np.int64))


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=lambda m: m.__name__)
def test_nulls_form_one_group_in_first_occurrence_order(impl):
    ids, keys = impl.factorize([pa.array([None, 5, None, 5, -1], pa.int64())])
    assert ids.tolist() == [0, 1, 0, 1, 2]
    assert keys[0].to_pylist() == [None, 5, -1]
    ids, keys = impl.factorize([pa.array(["a", None, "a"]), pa.array([None, None, None], pa.int32())])
    assert ids.tolist() == [0, 1, 0]
    assert keys[1].null_count == 2


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=lambda m: m.__name__)
def test_incremental_ids_stay_valid_across_dictionaries(impl):
    f = impl.Factorizer([pa.dictionary(pa.int32(), pa.string())])
    a = f.factorize([pa.array(["x", "y", "x"]).dictionary_encode()])
    b = f.factorize([pa.DictionaryArray.from_arrays(pa.array([1, 0, None]), pa.array(["y", "z"]))])
    assert a.tolist() == [0, 1, 0] and b.tolist() == [2, 1, 3]
    assert f.uniques()[0].to_pylist() == ["x", "y", "z", None]


def test_unused_dictionary_entries_make_no_groups():
    arr = pa.DictionaryArray.from_arrays(pa.array([2, 2], pa.int8()), pa.array(["a", "b", "c"]))
    ids, keys = kernels.factorize([arr])
    assert ids.tolist() == [0, 0] and keys[0].to_pylist() == ["c"]


@needs_compiled
def test_many_groups_grow_the_table():
    rng = np.random.default_rng(7)
    keys = rng.integers(-2**63, 2**63 - 1, 200_000, dtype=np.int64)
    keys = np.concatenate([keys, keys[::-1]])
    f = compiled.Factorizer([pa.int64()])
    ids = np.concatenate([f.factorize([pa.array(chunk)]) for chunk in np.array_split(keys, 7)])
    assert f.num_groups == len(np.unique(keys))
    np.testing.assert_array_equal(f.uniques()[0].to_numpy()[ids], keys)
    assert f.memory_bytes / f.num_groups < 64


AGG_TYPES = {
    "sum": [pa.int8(), pa.int64(), pa.uint64(), pa.bool_(), pa.float64(), pa.decimal128(15, 2), pa.decimal128(38, 4)],
    "min": [pa.int16(), pa.int64(), pa.float64(), pa.date32(), pa.decimal128(15, 2), pa.decimal128(38, 0)],
    "max": [pa.int32(), pa.uint64(), pa.float32(), pa.date32(), pa.decimal128(38, 0)],
    "count": [pa.int64(), pa.string()],
}


def _agg_value(t):
    if pa.types.is_floating(t):
        return st.floats(-1e6, 1e6, width=32 if t.bit_width == 32 else 64).map(lambda x: float(int(x)))
    if pa.types.is_integer(t):
        signed = pa.types.is_signed_integer(t)
        lo, hi = (-(2 ** (t.bit_width - 1)), 2 ** (t.bit_width - 1) - 1) if signed else (0, 2 ** t.bit_width - 1)
        return st.integers(lo, hi) | st.sampled_from([lo, hi])
    return _value(t)


@st.composite
def agg_case(draw):
    func = draw(st.sampled_from(sorted(AGG_TYPES)))
    t = draw(st.sampled_from(AGG_TYPES[func]))
    batches, groups = [], 0
    for extra in draw(st.lists(st.integers(0, 50), min_size=1, max_size=4)):
        # as from a Factorizer: a batch's rows create its new groups, so every group has a row
        added = draw(st.integers(0 if groups else 1, 5))
        ids = list(range(groups, groups + added))
        groups += added
        ids += draw(st.lists(st.integers(0, groups - 1), min_size=extra, max_size=extra))
        ids = np.array(draw(st.permutations(ids)), dtype=np.int64)
        n = len(ids)
        values = pa.array(draw(st.lists(st.none() | _agg_value(t), min_size=n, max_size=n)), type=t)
        batches.append((ids, groups, values))
    return func, t, batches


def _aggregate(impl, func, t, batches):
    agg = impl.GroupedAggregate(func, t)
    for ids, groups, values in batches:
        agg.update(ids, groups, values)
    return agg.result()


def _or_overflow(compute):
    """The result, or OverflowError where a SUM does not fit DECIMAL(38) (never a wrapped value)."""
    try:
        return compute()
    except OverflowError:
        return OverflowError


@needs_compiled
@SETTINGS
@given(agg_case())
def test_grouped_aggregates_match_reference(case):
    func, t, batches = case
    got = _or_overflow(lambda: _aggregate(compiled, func, t, batches))
    want = _or_overflow(lambda: _aggregate(reference, func, t, batches))
    if OverflowError in (got, want):
        assert got is want is OverflowError
        return
    assert got.type == want.type
    assert got.to_pylist() == want.to_pylist()


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=lambda m: m.__name__)
def test_integer_sums_are_exact_past_int64(impl):
    agg = impl.GroupedAggregate("sum", pa.int64())
    big = 2**63 - 1
    agg.update(np.array([0, 0, 0, 1, 1]), 2, pa.array([big, big, big, -big - 1, -big - 1]))
    assert agg.result().to_pylist() == [3 * big, 2 * (-big - 1)]


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=lambda m: m.__name__)
def test_count_all_and_partial_merge(impl):
    # leaf partials (keys, counts, sums) merged by the same keys: SUM of counts, SUM of sums
    leaves = [([1, 2, 1], [10, 20, 30]), ([2, 3], [5, None])]
    partials = []
    for keys, values in leaves:
        f = impl.Factorizer([pa.int64()])
        ids = f.factorize([pa.array(keys)])
        c, s = impl.GroupedAggregate("count_all"), impl.GroupedAggregate("sum", pa.int64())
        c.update(ids, f.num_groups)
        s.update(ids, f.num_groups, pa.array(values))
        partials.append((f.uniques()[0], c.result(), s.result()))
    f = impl.Factorizer([pa.int64()])
    c, s = impl.GroupedAggregate("sum", pa.int64()), impl.GroupedAggregate("sum", pa.decimal128(38, 0))
    for keys, counts, sums in partials:
        ids = f.factorize([keys])
        c.update(ids, f.num_groups, counts)
        s.update(ids, f.num_groups, sums)
    assert f.uniques()[0].to_pylist() == [1, 2, 3]
    assert c.result().to_pylist() == [2, 2, 1]
    assert s.result().to_pylist() == [40, 25, None]


@needs_compiled
def test_bad_ids_and_unsupported_types_are_refused():
    with pytest.raises(ValueError):
        compiled.group_count(np.array([0, 3]), np.zeros(3, dtype=np.int64))
    with pytest.raises(TypeError):
        compiled.Factorizer([pa.float64()])
    assert not kernels.supports_group_key(pa.list_(pa.int64()))
    assert not kernels.supports_aggregate("sum", pa.string())


def _keyless(impl, func, t, batches):
    """Keyless aggregate (ids=None, one group), opened by an empty update as HashAggregateExec does."""
    agg = impl.GroupedAggregate(func, t)
    agg.update(None, 1, None if func == "count_all" else pa.array([], t), rows=0)
    for _, _, values in batches:
        agg.update(None, 1, None if func == "count_all" else values, rows=len(values))
    return agg.result(1)


@SETTINGS
@given(agg_case(), st.booleans())
def test_keyless_aggregates_match_one_group_of_ids(case, count_all):
    func, t, batches = case
    if count_all:
        func, t = "count_all", None
    for impl in IMPLEMENTATIONS:
        one_group = [(np.zeros(len(values), dtype=np.int64), 1, values) for _, _, values in batches]
        want = _or_overflow(lambda: _aggregate(reference, func, t, one_group)) \
            if any(len(v) for *_, v in batches) else None
        got = _or_overflow(lambda: _keyless(impl, func, t, batches))
        if OverflowError in (got, want):
            assert got is want is OverflowError, impl.__name__
            continue
        assert len(got) == 1
        if want is not None:
            assert got.to_pylist() == want.to_pylist(), impl.__name__
        else:                     # no rows at all: COUNT 0, anything else NULL
            assert got.to_pylist() == [0 if func.startswith("count") else None]


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=lambda m: m.__name__)
def test_keyless_sum_exact_and_null_rules(impl):
    big = 2**63 - 1
    agg = impl.GroupedAggregate("sum", pa.int64())
    agg.update(None, 1, pa.array([big] * 5000 + [None]))
    agg.update(None, 1, pa.array([big, 1]))
    assert agg.result(1).to_pylist() == [5001 * big + 1]
    nulls = impl.GroupedAggregate("sum", pa.int32())
    nulls.update(None, 1, pa.array([None, None], pa.int32()))
    assert nulls.result(1).to_pylist() == [None]
    small = impl.GroupedAggregate("sum", pa.int16())
    small.update(None, 1, pa.array(np.full(10_000, -32768, dtype=np.int16)).slice(3))
    assert small.result(1).to_pylist() == [-32768 * 9997]
    with pytest.raises(ValueError, match="one group"):
        agg.update(None, 2, pa.array([1]))


@st.composite
def dictionary_batches(draw):
    values = draw(st.lists(st.text(alphabet="abcé", max_size=3), min_size=1, max_size=8))
    shared = pa.array(values + [None] if draw(st.booleans()) else values)
    batches = []
    for _ in range(draw(st.integers(1, 4))):
        # batches of one segment share a dictionary object; some batches bring their own
        dictionary = shared if draw(st.booleans()) else pa.array(draw(st.permutations(values)))
        n = draw(st.integers(0, 60))
        codes = draw(st.lists(st.none() | st.integers(0, len(dictionary) - 1), min_size=n, max_size=n))
        arr = pa.DictionaryArray.from_arrays(pa.array(codes, pa.int32()), dictionary)
        if n > 2 and draw(st.booleans()):
            arr = arr.slice(1, n - 2)
        batches.append(arr if draw(st.booleans()) else arr.dictionary_decode())
    return batches


@SETTINGS
@given(dictionary_batches())
def test_count_keys_counts_every_row_once(batches):
    rows = [v for b in batches for v in b.to_pylist()]
    expected = {}
    for v in rows:
        expected[v] = expected.get(v, 0) + 1
    for impl in IMPLEMENTATIONS:
        f = impl.Factorizer([pa.string()])
        for b in batches:
            f.count_keys(b)
        counts = f.key_counts()
        keys = f.uniques()[0].to_pylist()
        assert len(keys) == len(set(keys)) == f.num_groups, impl.__name__
        assert dict(zip(keys, counts.tolist())) == expected, impl.__name__


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=lambda m: m.__name__)
def test_count_codes_lanes_nulls_and_bad_codes(impl):
    codes = np.array([0, 0, 0, 0, 0, 1, 2, 2, 0], dtype=np.int16)
    counts = np.zeros(4, dtype=np.int64)
    impl.count_codes(codes, None, 0, counts)
    impl.count_codes(codes[:5], None, 0, counts)
    assert counts.tolist() == [11, 1, 2, 0]
    arr = pa.array([1, None, 2, None], pa.int32())
    counts = np.zeros(4, dtype=np.int64)
    impl.count_codes(np.array([1, 0, 2, 0], dtype=np.int32), np.frombuffer(arr.buffers()[0], np.uint8), 0, counts)
    assert counts.tolist() == [0, 1, 1, 2]
    with pytest.raises(ValueError, match="row 6 has dictionary code 3"):
        impl.count_codes(np.array([0, 1, 2, 0, 1, 2, 3], dtype=np.int64), None, 0, np.zeros(4, dtype=np.int64))


@needs_compiled
@SETTINGS
@given(st.lists(st.one_of(st.none(), st.integers(0, 40)), max_size=300), st.integers(0, 9),
       st.sampled_from([pa.int8(), pa.int16(), pa.int32(), pa.int64()]))
def test_count_codes_matches_reference(values, start, index_type):
    """Compiled against reference on sliced dictionary indices (a bit offset into the validity)."""
    indices = pa.array(values, index_type).slice(min(start, len(values)))
    codes = np.frombuffer(indices.buffers()[1], dtype=index_type.to_pandas_dtype(), count=len(indices),
                          offset=indices.offset * (index_type.bit_width // 8)) if len(indices) else \
        np.zeros(0, index_type.to_pandas_dtype())
    validity = np.frombuffer(indices.buffers()[0], np.uint8) if indices.null_count else None
    got, want = np.zeros(42, np.int64), np.zeros(42, np.int64)
    compiled.count_codes(codes, validity, indices.offset, got)
    reference.count_codes(codes, validity, indices.offset, want)
    assert got.tolist() == want.tolist()
    assert want[-1] == indices.null_count and want.sum() == len(indices)


# ---------------------------------------------------------------------------------------------------
# COUNT(DISTINCT): DistinctCount (a set of int64 values for integer-like columns, a Factorizer's
# table otherwise), sized ahead by estimate_distinct (a HyperLogLog pass)


@needs_compiled
@SETTINGS
@given(key_batches(max_columns=1), st.sampled_from([None, 0, 3, 5000]))
def test_distinct_count_matches_reference(case, reserve):
    types, batches = case
    counts = []
    for impl in (compiled, reference):
        counter = impl.DistinctCount(types[0])
        if reserve is not None:
            counter.reserve(reserve)
        for columns in batches:
            counter.add(columns[0])
        counts.append(counter.count)
    assert counts[0] == counts[1]


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=lambda m: m.__name__)
def test_distinct_count_edges(impl):
    counter = impl.DistinctCount(pa.int64())
    assert counter.count == 0
    counter.add(pa.array([None, None], pa.int64()))
    assert counter.count == 0                     # nulls are not values
    low, high = -2**63, 2**63 - 1                 # the set's empty-slot marker is a value too
    counter.add(pa.array([low, 0, high, None, low, 0], pa.int64()))
    assert counter.count == 3
    counter.add(pa.array([1, 2, 3], pa.int32()))  # narrower integers compare by value
    counter.add(pa.array([3, 4], pa.int64()).dictionary_encode())
    assert counter.count == 7
    with pytest.raises(TypeError):
        counter.add(pa.array(["a"]))
    with pytest.raises(TypeError):
        impl.DistinctCount(pa.float64())
    with pytest.raises(ValueError):
        counter.reserve(-1)
    strings = impl.DistinctCount(pa.string())
    strings.add(pa.array(["a", None, "", "a"]))
    strings.add(pa.chunked_array([pa.array(["b", ""], pa.string())]))
    assert strings.count == 3


@needs_compiled
@pytest.mark.parametrize("reserve", [None, 1000, 300_000, 2_000_000])
def test_distinct_set_grows_past_and_within_its_reservation(reserve):
    rng = np.random.default_rng(11)
    keys = rng.integers(-2**63, 2**63 - 1, 300_000, dtype=np.int64)
    keys[::1000] = -2**63
    keys = np.concatenate([keys, keys[::3], rng.integers(0, 50, 20_000)])
    validity = np.packbits(rng.random(len(keys)) < 0.9, bitorder="little")
    s = compiled.DistinctSet()
    if reserve is not None:
        s.reserve(reserve)
    for start in range(0, len(keys), 77_777):
        chunk = keys[start:start + 77_777]
        s.insert(chunk, validity, start)
    valid = np.unpackbits(validity, bitorder="little")[:len(keys)].astype(bool)
    assert s.count == len(np.unique(keys[valid]))
    with pytest.raises(ValueError):
        s.insert(keys, validity[:3], 0)


@needs_compiled
@pytest.mark.parametrize("reserve", [0, 10, 500_000])
def test_reserved_inline_table_gives_the_same_ids(reserve):
    rng = np.random.default_rng(5)
    keys = np.concatenate([rng.integers(-5, 5, 1000), rng.integers(-2**63, 2**63 - 1, 150_000), [0, -2**63]])
    keys = np.concatenate([keys, keys[::-2]]).astype(np.int64)
    arr = pa.array(keys, mask=rng.random(len(keys)) < 0.01)
    f = compiled.Factorizer([pa.int64()])
    assert f._table.inline_keys
    f.reserve(reserve)
    ids = np.concatenate([f.factorize([arr.slice(i, 40_000)]) for i in range(0, len(arr), 40_000)])
    want = reference.Factorizer([pa.int64()]).factorize([arr])
    np.testing.assert_array_equal(ids, want)
    assert f.uniques()[0].equals(arr.take(pa.array(np.unique(ids, return_index=True)[1])))
    with pytest.raises(ValueError):
        compiled.HashTable(2, inline_keys=True)


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=lambda m: m.__name__)
def test_estimate_distinct_is_close_even_inside_one_partition(impl):
    rng = np.random.default_rng(3)
    n = 60_000 if impl is reference else 400_000
    keys = rng.integers(0, n, 2 * n, dtype=np.int64)
    # the rows one repartition target gets: their hashes share the high bits
    part = np.asarray(kernels.partition_ids(kernels.hash_columns([pa.array(keys)]), 8))
    keys = keys[part == 3]
    arrays = [pa.array(chunk) for chunk in np.array_split(keys, 5)]
    estimate = impl.estimate_distinct(arrays)
    truth = len(np.unique(keys))
    assert abs(estimate - truth) < 0.06 * truth, (estimate, truth)
    assert impl.estimate_distinct([pa.array(["a"])]) is None
    assert impl.estimate_distinct([pa.array([None, None], pa.int64())]) == 0


@needs_compiled
def test_estimate_distinct_compiled_equals_reference():
    rng = np.random.default_rng(4)
    arrays = [pa.array(rng.integers(-2**40, 2**40, 5000), mask=rng.random(5000) < 0.1),
              pa.array(rng.integers(0, 100, 3000), pa.int32()).slice(7), pa.array([True, False])]
    assert compiled.estimate_distinct(arrays) == reference.estimate_distinct(arrays)


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=lambda m: m.__name__)
@pytest.mark.parametrize("t, values", [
    (pa.uint64(), [2**64 - 1, None, 0, 2**63, 2**64 - 1]),
    (pa.int8(), [-128, 127, None, -128, 0]),
    (pa.int64(), [None, None, -2**63, 2**63 - 1]),
])
def test_integer_keys_read_back_in_their_type(impl, t, values):
    f = impl.Factorizer([t])
    f.factorize([pa.array(values[:2], t)])
    f.factorize([pa.array(values[2:], t).dictionary_encode()])
    assert f.uniques()[0].type == t
    assert f.uniques()[0].to_pylist() == list(dict.fromkeys(values))


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=lambda m: m.__name__)
@pytest.mark.parametrize("func, t", [("count_all", None), ("sum", pa.int64()), ("min", pa.int32()),
                                     ("sum", pa.float64()), ("max", pa.decimal128(12, 2))])
def test_reserved_aggregate_states_give_the_same_results(impl, func, t):
    rng = np.random.default_rng(9)
    ids = rng.integers(0, 50, 500)
    ids[:50] = np.arange(50)
    values = None if t is None else pa.array(rng.integers(-100, 100, 500).astype(np.int32),
                                             mask=rng.random(500) < 0.2).cast(t)
    results = []
    for reserve in (None, 10, 1000):
        agg = impl.GroupedAggregate(func, t)
        if reserve is not None:
            agg.reserve(reserve)
        agg.update(ids[:200], 50, None if values is None else values.slice(0, 200))
        agg.update(ids[200:], 50, None if values is None else values.slice(200))
        results.append(agg.result())
        assert len(results[-1]) == 50
    assert results[0].equals(results[1]) and results[0].equals(results[2])


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=lambda m: m.__name__)
def test_integer_sums_stay_exact_across_the_int64_to_128_bit_switch(impl):
    # small values first (int64 accumulators), then values large enough that rows x magnitude
    # passes 2**63 (128-bit accumulators from there on), with nulls, then small again
    rng = np.random.default_rng(12)
    batches = [pa.array(rng.integers(-1000, 1000, 300), mask=rng.random(300) < 0.1),
               pa.array(rng.integers(-2**62, 2**62, 300)),
               pa.array(rng.integers(-5, 5, 300), pa.int64())]
    ids = [rng.integers(0, 20, 300) for _ in batches]
    for i in ids:
        i[:20] = np.arange(20)
    stepwise, at_end = impl.GroupedAggregate("sum", pa.int64()), impl.GroupedAggregate("sum", pa.int64())
    want = [0] * 20
    for batch, i in zip(batches, ids):
        stepwise.update(i, 20, batch)
        at_end.update(i, 20, batch)
        for g, v in zip(i.tolist(), batch.to_pylist()):
            want[g] += v or 0
        assert [int(d) for d in stepwise.result().to_pylist()] == want
    assert [int(d) for d in at_end.result().to_pylist()] == want


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=lambda m: m.__name__)
def test_decimal_sum_is_exact_when_its_running_total_passes_2_to_the_127(impl):
    """Two values near 10**38 wrap a 128-bit accumulator; a third brings the sum back into DECIMAL(38)
    range: the answer is that sum (MySQL sums in 65 digits), and a sum that ends out of range raises."""
    t = pa.decimal128(38, 4)
    big = decimal.Decimal(f"{10 ** 34 - 1}.9999")
    minus_big = decimal.Decimal(f"-{10 ** 34 - 1}.9999")
    for ids in (None, np.zeros(3, dtype=np.int64)):
        agg = impl.GroupedAggregate("sum", t)
        agg.update(ids, 1, pa.array([big, big, minus_big], type=t))
        assert agg.result(1).to_pylist() == [big]
        agg = impl.GroupedAggregate("sum", t)
        agg.update(ids, 1, pa.array([minus_big, minus_big, big], type=t))
        assert agg.result(1).to_pylist() == [minus_big]
        agg = impl.GroupedAggregate("sum", t)
        agg.update(None if ids is None else ids[:2], 1, pa.array([big, big], type=t))
        with pytest.raises(OverflowError):
            agg.result(1)


@st.composite
def growing_key_batches(draw):
    """Streams whose composite keys (strings, ints, dates, with nulls) fit the packed one-word key at
    first, then need a wider layout (values past the first batches' ranges, below them, many new
    strings), and sometimes more than 64 bits (the table goes wide with its groups kept)."""
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    types = draw(st.lists(st.sampled_from([pa.string(), pa.int32(), pa.int64(), pa.date32(), pa.int8()]),
                          min_size=2, max_size=4))
    batches = []
    spread = 4
    for _ in range(draw(st.integers(2, 5))):
        n = int(draw(st.sampled_from([0, 1, 50, 700])))
        spread = min(spread * int(draw(st.sampled_from([1, 4, 1000, 2 ** 20]))), 2 ** 62)
        columns = []
        for t in types:
            mask = rng.random(n) < 0.1
            if pa.types.is_string(t):
                arr = pa.array([f"s{v}" for v in rng.integers(0, min(spread, 5000), n)], t, mask=mask)
            elif t == pa.int8():
                arr = pa.array(rng.integers(-128, 128, n), t, mask=mask)
            else:
                low = -spread if draw(st.booleans()) else 0
                top = min(spread, 2 ** 31 - 1) if t != pa.int64() else spread
                values = rng.integers(max(low, -2 ** 31), top, n)
                arr = pa.array(values.astype(np.int32) if t != pa.int64() else values,
                               pa.int32() if t != pa.int64() else t, mask=mask)
                arr = arr.view(t) if t == pa.date32() else arr
            columns.append(arr.dictionary_encode() if draw(st.booleans()) and n else arr)
        batches.append(columns)
    return types, batches


@needs_compiled
@SETTINGS
@given(growing_key_batches())
def test_packed_keys_across_layouts_match_reference(case):
    types, batches = case
    got_ids, got_keys, got_n = _run(compiled, types, batches)
    want_ids, want_keys, want_n = _run(reference, types, batches)
    assert got_n == want_n
    for g, w in zip(got_ids, want_ids):
        np.testing.assert_array_equal(g, w)
    for g, w in zip(got_keys, want_keys):
        assert g.equals(w), (g, w)


def test_key_packing_layouts():
    from kernels.groupby_packing import KeyPacking

    packing = KeyPacking.fit([(5, 9), None, (0, 2)], growing=[2])
    assert packing.covers([(5, 9), None, (0, 2)]) and not packing.covers([(4, 9), None, None])
    words = [np.array([5, 9, 7]), np.array([0, 0, 0]), np.array([2, 0, 1])]
    valids = [None, np.array([False, False, False]), np.array([True, False, True])]
    unpacked = packing.unpack(packing.pack(words, valids))
    assert unpacked[0][0].tolist() == [5, 9, 7] and unpacked[0][1] is None
    assert unpacked[1][1].tolist() == [True, True, True]
    assert unpacked[2][1].tolist() == [False, True, False] and unpacked[2][0][[0, 2]].tolist() == [2, 1]
    wider = packing.widened([(-3, 100), None, (0, 50)], growing=[2])
    assert wider.covers([(5, 9), None, (0, 2)]) and wider.covers([(-3, 100), None, (0, 50)])
    assert KeyPacking.fit([(-2 ** 62, 2 ** 62), (0, 1)]) is None          # past 64 bits
    assert KeyPacking.fit([(-2 ** 63, -2 ** 63)]) is None
    two = KeyPacking.fit([(-2 ** 62, 2 ** 62), (0, 1), (7, 7)], max_words=2)   # two words
    assert two.words == 2 and two.word[0] != two.word[1]
    columns = [np.array([-2 ** 62, 5, 2 ** 62]), np.array([0, 1, 1]), np.array([7, 7, 7])]
    packed = two.pack(columns, [None, np.array([True, False, True]), None])
    assert packed.shape == (3, 2)
    back = two.unpack(packed)
    assert back[0][0].tolist() == columns[0].tolist() and back[1][1].tolist() == [False, True, False]
    assert KeyPacking.fit([(0, 2 ** 64)], max_words=4) is None              # one column past 64 bits


@st.composite
def shared_dictionary_batches(draw):
    """Composite keys whose string columns are slices of one dictionary array (the batches of a
    stored segment, or of a grouping set's encoded states): null codes, a null and a repeated value
    in the dictionary, entries no row uses, an int column beside."""
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    dictionary = pa.array(["a", None, "b", "a", "ccc", "", "unused"] + [f"v{i}" for i in range(draw(st.integers(0, 50)))])
    n = draw(st.integers(1, 400))
    codes = rng.integers(0, len(dictionary) - 1, n)
    strings = pa.DictionaryArray.from_arrays(pa.array(codes, pa.int32(), mask=rng.random(n) < 0.1), dictionary)
    other = pa.DictionaryArray.from_arrays(pa.array(rng.integers(0, 3, n), pa.int8()), pa.array(["x", "y", "z"]))
    ints = pa.array(rng.integers(-2, 3, n), pa.int64(), mask=rng.random(n) < 0.1)
    cuts = sorted(set(draw(st.lists(st.integers(0, n), max_size=3))) | {0, n})
    batches = [[strings.slice(a, b - a), ints.slice(a, b - a), other.slice(a, b - a)]
               for a, b in zip(cuts, cuts[1:])]
    return [pa.string(), pa.int64(), pa.string()], batches


@needs_compiled
@SETTINGS
@given(shared_dictionary_batches())
def test_shared_dictionary_codes_match_reference(case):
    types, batches = case
    got_ids, got_keys, got_n = _run(compiled, types, batches)
    want_ids, want_keys, want_n = _run(reference, types, batches)
    assert got_n == want_n
    for g, w in zip(got_ids, want_ids):
        np.testing.assert_array_equal(g, w)
    for g, w in zip(got_keys, want_keys):
        assert g.equals(w), (g, w)
    f = compiled.Factorizer(types)
    for columns in batches:
        f.factorize(columns)
    for g, w in zip(f.uniques(encoded=True), want_keys):     # string keys as dictionary arrays
        assert (g.dictionary_decode() if pa.types.is_dictionary(g.type) else g).equals(w)
