"""Hash-join kernels against the NumPy/pyarrow reference: key ids, inner / left outer pairs (chunked),
semi / anti / NOT IN selections and the build side's hits, over integer, date, decimal, string and
multi-column keys with NULLs, empty and one-row sides, extreme values and sizes that cross the
kernels' blocks; the Bloom filter never drops a key and rejects most non-keys."""
import datetime
import decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kernels
from kernels.reference import join as reference

try:
    from kernels import join as compiled
except ImportError:
    if kernels.IMPLEMENTATION == "compiled":
        raise
    compiled = None

needs_compiled = pytest.mark.skipif(compiled is None, reason="compiled kernels are not built")
PROPERTY = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

LENGTHS = st.sampled_from([0, 1, 2, 63, 64, 65, 129, 1000]) | st.integers(0, 200)


def _column(kind, n, rng, domain, null_fraction):
    nulls = rng.random(n) < null_fraction
    if kind in ("int8", "int16", "int32", "int64", "uint64"):
        t = getattr(pa, kind)()
        dtype = t.to_pandas_dtype()
        info = np.iinfo(dtype)
        values = rng.integers(max(info.min, -domain), min(info.max, domain), n, endpoint=True,
                              dtype=np.uint64 if info.min == 0 else np.int64).astype(dtype)
        values[rng.random(n) < 0.05] = info.min
        values[rng.random(n) < 0.05] = info.max
        return pa.array(values, mask=nulls)
    if kind == "date32":
        days = rng.integers(0, domain, n)
        return pa.array(days.astype(np.int32), mask=nulls).view(pa.date32()) if not nulls.any() else \
            pa.array(days.astype(np.int32), mask=nulls).cast(pa.date32())
    if kind == "decimal":
        cents = rng.integers(-domain, domain, n, endpoint=True)
        return pa.array([None if z else decimal.Decimal(int(c)).scaleb(-2) for c, z in zip(cents, nulls)],
                        type=pa.decimal128(18, 2))
    words = ["".join(rng.choice(list("abc"), rng.integers(0, 1 + min(domain, 4)))) for _ in range(n)]
    return pa.array([None if z else w for w, z in zip(words, nulls)], type=pa.string() if kind == "string"
                    else pa.large_string())


KINDS = ["int8", "int32", "int64", "uint64", "date32", "decimal", "string", "large_string"]


@st.composite
def sides(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**32)))
    ncols = draw(st.sampled_from([1, 1, 2, 3]))
    kinds = [draw(st.sampled_from(KINDS)) for _ in range(ncols)]
    domain = draw(st.sampled_from([3, 50, 2**40]))
    nb, np_ = draw(LENGTHS), draw(LENGTHS)
    nf = draw(st.sampled_from([0.0, 0.1, 1.0]))
    build = [_column(k, nb, rng, domain, nf) for k in kinds]
    probe = [_column(k, np_, rng, domain, draw(st.sampled_from([0.0, 0.1]))) for k in kinds]
    # the probe side's integers may be another width; dictionary and sliced columns too
    probe = [c.cast(pa.int64()) if pa.types.is_int8(c.type) and draw(st.booleans()) else c for c in probe]
    if np_ > 4 and draw(st.booleans()):
        probe = [c.slice(2, np_ - 4) for c in probe]
    if draw(st.booleans()):
        build = [c.dictionary_encode() if pa.types.is_string(c.type) else c for c in build]
    return build, probe


def _pairs(table, ids, outer, max_pairs):
    chunks = list(table.pairs(ids, outer=outer, max_pairs=max_pairs))
    assert all(0 < len(p) <= max_pairs and len(p) == len(b) for p, b in chunks)
    return [(p.tolist(), b.tolist()) for p, b in chunks]


@needs_compiled
@PROPERTY
@given(sides(), st.sampled_from([1, 3, 64, 1 << 20]))
def test_join_matches_reference(case, max_pairs):
    build, probe = case
    ours, ref = compiled.JoinTable(build), reference.JoinTable(build)
    assert (ours.num_rows, ours.num_keys, ours.null_rows) == (ref.num_rows, ref.num_keys, ref.null_rows)
    assert ours.build_ids.tolist() == ref.build_ids.tolist()
    assert ours.first_rows.tolist() == ref.first_rows.tolist()
    ids = ours.lookup(probe)
    assert ids.tolist() == ref.lookup(probe).tolist()
    for outer in (False, True):
        assert _pairs(ours, ids, outer, max_pairs) == _pairs(ref, ids, outer, max_pairs)
    assert ours.semi(ids).tolist() == ref.semi(ids).tolist()
    for null_aware in (False, True):
        assert ours.anti(ids, null_aware).tolist() == ref.anti(ids, null_aware).tolist()
    assert ours.build_hits(ids).tolist() == ref.build_hits(ids).tolist()


def _acero_pairs(build, probe):
    """(probe row, build row) pairs of the inner join by Acero, sorted: the oracle for pairs."""
    left = pa.table({**{f"k{j}": c for j, c in enumerate(probe)}, "pi": np.arange(len(probe[0]))})
    right = pa.table({**{f"k{j}": c for j, c in enumerate(build)}, "bi": np.arange(len(build[0]))})
    keys = [f"k{j}" for j in range(len(build))]
    joined = left.join(right, keys=keys, join_type="inner", use_threads=False)
    return sorted(zip(joined.column("pi").to_pylist(), joined.column("bi").to_pylist()))


@needs_compiled
@PROPERTY
@given(sides())
def test_inner_pairs_match_acero(case):
    build, probe = case
    build = [c.dictionary_decode() if pa.types.is_dictionary(c.type) else c for c in build]
    probe = [c.cast(b.type) for c, b in zip(probe, build)]
    table = compiled.JoinTable(build)
    got = [pair for p, b in table.pairs(table.lookup(probe)) for pair in zip(p.tolist(), b.tolist())]
    assert got == _acero_pairs(build, probe)


def test_fan_out_is_chunked():
    impl = compiled or reference
    table = impl.JoinTable([pa.array(np.zeros(1000, dtype=np.int64))])
    ids = table.lookup([pa.array(np.zeros(50, dtype=np.int64))])
    chunks = list(table.pairs(ids, max_pairs=4096))
    assert [len(p) for p, _ in chunks] == [4096] * 12 + [50_000 - 12 * 4096]
    assert np.concatenate([b for _, b in chunks]).tolist() == list(range(1000)) * 50


def test_not_in_null_semantics():
    impl = compiled or reference
    probe = [pa.array([1, 2, None, 4])]
    assert impl.JoinTable([pa.array([2, 3])]).anti(impl.JoinTable([pa.array([2, 3])]).lookup(probe),
                                                     null_aware=True).tolist() == [0, 3]
    with_null = impl.JoinTable([pa.array([2, None])])
    assert with_null.anti(with_null.lookup(probe), null_aware=True).tolist() == []
    assert with_null.anti(with_null.lookup(probe)).tolist() == [0, 2, 3]
    empty = impl.JoinTable([pa.array([], pa.int64())])
    assert empty.anti(empty.lookup(probe), null_aware=True).tolist() == [0, 1, 2, 3]


def test_incompatible_keys_are_refused():
    impl = compiled or reference
    table = impl.JoinTable([pa.array([1, 2])])
    with pytest.raises(TypeError, match="cannot join a int64 key with a string key"):
        table.lookup([pa.array(["a"])])
    dec = impl.JoinTable([pa.array([decimal.Decimal("1.00")], pa.decimal128(10, 2))])
    with pytest.raises(TypeError, match="one scale"):
        dec.lookup([pa.array([decimal.Decimal("1.0")], pa.decimal128(10, 1))])
    with pytest.raises(TypeError, match="cannot join on a column of type double"):
        impl.JoinTable([pa.array([1.5])])
    with pytest.raises(ValueError, match="1 probe key columns for a JoinTable of 2"):
        impl.JoinTable([pa.array([1]), pa.array([2])]).lookup([pa.array([1])])


@needs_compiled
def test_low_level_kernels_check_their_inputs():
    table = compiled.JoinTable([pa.array([1, 2, 3])])
    with pytest.raises(ValueError, match="outside the build side's 3 keys"):
        list(table.pairs(np.array([0, 7])))
    with pytest.raises(ValueError, match="outside"):
        compiled.group_rows(np.array([0, 5]), np.empty(3, np.int64), np.empty(2, np.int64))
    with pytest.raises(ValueError, match="same length"):
        compiled.emit_pairs(np.array([0]), np.array([0, 1]), np.array([0]), False, 0, 0,
                            np.empty(1, np.int64), np.empty(2, np.int64))


@needs_compiled
@PROPERTY
@given(st.integers(0, 2**32), st.sampled_from([0, 1, 9, 1000, 20_000]),
       st.sampled_from(["int32", "int64", "string", "date32"]),
       st.sampled_from(["plain", "dictionary", "ree"]))
def test_bloom_has_no_false_negatives(seed, nkeys, kind, encoding):
    rng = np.random.default_rng(seed)
    keys = _column(kind, nkeys, rng, 10**6, 0.0)
    rows = pa.concat_arrays([keys, _column(kind, 3000, rng, 10**6, 0.1)]) if nkeys else \
        _column(kind, 3000, rng, 10**6, 0.1)
    plain = rows
    if encoding == "dictionary":
        rows = rows.dictionary_encode()
    elif encoding == "ree":
        rows = pc.run_end_encode(rows)
    ours = compiled.JoinBloom(keys).might_contain(rows)
    exact = reference.JoinBloom(keys).might_contain(rows)
    assert ours.is_null().equals(exact.is_null())
    ours, exact = ours.fill_null(False).to_numpy(zero_copy_only=False), exact.fill_null(False).to_numpy(zero_copy_only=False)
    assert not (exact & ~ours).any()                      # every key passes
    if kind != "string" and nkeys <= 1000:
        # few false positives, counted per distinct value: the rows repeat the type's MIN and MAX
        # (5% each), so one unlucky value alone is 5% of the rows
        wrong = pc.unique(pc.filter(plain, pa.array(ours & ~exact)))
        assert len(wrong) <= 0.05 * len(pc.unique(plain)) + 5


@needs_compiled
@pytest.mark.parametrize("step", [1, 1024, 2**20, 2**40])
def test_bloom_false_positives_stay_low_for_keys_with_trailing_zero_bits(step):
    # keys that are multiples of 2^k (surrogate keys with a stride, rounded timestamps, INT64_MIN) once
    # shared the few mask bits their hash's low bits chose: every such row passed a one-key filter
    keys = pa.array(np.arange(1, 11, dtype=np.int64) * step)
    probes = pa.array(np.concatenate([np.arange(1000, 21000, dtype=np.int64) * step,
                                      np.full(100, np.iinfo(np.int64).min)]))
    passed = compiled.JoinBloom(keys).might_contain(probes).fill_null(False).to_numpy(zero_copy_only=False)
    assert passed.sum() <= 0.02 * len(probes)


@needs_compiled
@PROPERTY
@given(st.integers(0, 2**32), st.sampled_from([1, 2, 9, 204, 5000]), st.sampled_from([1, 3, 40, 10**5]),
       st.sampled_from([-2**63, -2**31, -5, 0, 2**31, 2**63 - 2**20]),
       st.sampled_from([pa.int8(), pa.int32(), pa.int64(), pa.uint64(), pa.date32()]),
       st.sampled_from(["plain", "dictionary", "ree"]))
def test_narrow_integer_keys_filter_exactly(seed, nkeys, stride, low, probe_type, encoding):
    """Integer keys in a narrow range are held as a bitmap over it: exactly the reference's set (no
    false positive), for probes of any integer width below, inside and past the range, near the
    int64 extremes (the subtraction wraps) and NULL."""
    rng = np.random.default_rng(seed)
    dtype = probe_type.to_pandas_dtype() if probe_type != pa.date32() else np.int32
    offsets = np.unique(stride * rng.integers(0, nkeys * 4, nkeys).astype(np.uint64))
    with np.errstate(over="ignore"):
        keys = (np.uint64(low % 2**64) + offsets).view(np.int64).astype(dtype)     # wraps to the type
        near = np.concatenate([keys.astype(np.int64), [np.iinfo(np.int64).min, np.iinfo(np.int64).max]])
        near = np.concatenate([near - 1, near, near + 1]).astype(dtype)
    keys = np.unique(keys)
    probes = np.concatenate([near, rng.choice(near, 3000)])
    key_array = pa.array(keys) if probe_type != pa.date32() else pa.array(keys).view(pa.date32())
    rows = pa.array(probes, mask=rng.random(len(probes)) < 0.05)
    if probe_type == pa.date32():
        rows = rows.view(pa.date32())
    if encoding == "dictionary":
        rows = rows.dictionary_encode()
    elif encoding == "ree":
        rows = pc.run_end_encode(rows)
    ours = compiled.JoinBloom(key_array)
    span = int(keys.astype(np.int64).max()) - int(keys.astype(np.int64).min()) + 1
    got = ours.might_contain(rows)
    want = reference.JoinBloom(key_array).might_contain(rows)
    assert got.is_null().equals(want.is_null())
    if span <= 1 << 18:
        assert ours.exact
        assert got.fill_null(False).equals(want.fill_null(False))
    else:
        assert not (want.fill_null(False).to_numpy(zero_copy_only=False)
                    & ~got.fill_null(False).to_numpy(zero_copy_only=False)).any()


def test_narrow_key_range_gets_the_exact_bitmap():
    impl = compiled or reference
    if impl is reference:
        pytest.skip("the reference filter is always exact")
    assert compiled.JoinBloom(pa.array([1, 5, 200_000], pa.int64())).exact
    assert compiled.JoinBloom(pa.array([datetime.date(2024, 1, 2), datetime.date(1994, 1, 1)])).exact
    assert not compiled.JoinBloom(pa.array([1, 10**9], pa.int64())).exact          # a wide range: Bloom
    assert not compiled.JoinBloom(pa.array(["a", "b"])).exact
    bitmap = compiled.JoinBloom(pa.array([7, 9, None], pa.int32()))
    assert bitmap.might_contain(pa.array([6, 7, 8, 9, 10, None, -2**31], pa.int32())).to_pylist() == \
        [False, True, False, True, False, None, False]


def test_bloom_from_table_skips_multi_column_and_decimal_keys():
    impl = compiled or reference
    assert impl.JoinTable([pa.array([1]), pa.array([2])]).bloom() is None
    assert impl.JoinTable([pa.array([decimal.Decimal("1")], pa.decimal128(5, 0))]).bloom() is None
    bloom = impl.JoinTable([pa.array([datetime.date(2024, 1, 2), None])]).bloom()
    got = bloom.might_contain(pa.array([datetime.date(2024, 1, 2), None]))
    assert got.to_pylist() == [True, None]


@needs_compiled
@pytest.mark.parametrize("build", [[5, 6, 7, None, 6], [5, 6, 7, None, 6, 10**12], [-2**63, 2**63 - 1, 0]])
@pytest.mark.parametrize("probe_type", [pa.int8(), pa.int32(), pa.int64(), pa.uint64()])
def test_direct_address_and_hashed_lookups_agree(build, probe_type):
    """A dense range of integer keys is looked up by address, a sparse one by hash: same ids."""
    table = compiled.JoinTable([pa.array(build, pa.int64())])
    assert (table._dense is not None) == (len(build) == 5)
    values = [0, 5, 6, 7, 8, 127, None, 4]
    probe = pa.array(values, pa.int64()).cast(probe_type, safe=False) if probe_type != pa.uint64() else \
        pa.array([v if v is None else v % 2**64 for v in values], pa.uint64())
    assert table.lookup([probe]).tolist() == reference.JoinTable([pa.array(build, pa.int64())]).lookup([probe]).tolist()


@needs_compiled
@PROPERTY
@given(sides())
def test_unfiltered_integer_lookups_match_reference(case):
    """Integer keys too many for the Bloom-filtered lookup take the plain hashed one: same ids."""
    build, probe = case
    from kernels import join_table      # the module whose JoinTable reads these limits

    saved = join_table.FILTERED_LOOKUP_MAX_KEYS, join_table.DENSE_MIN_SLOTS, join_table.DENSE_SLOTS_PER_KEY
    join_table.FILTERED_LOOKUP_MAX_KEYS, join_table.DENSE_MIN_SLOTS, join_table.DENSE_SLOTS_PER_KEY = -1, 0, 0
    try:
        ours = compiled.JoinTable(build)
    finally:
        join_table.FILTERED_LOOKUP_MAX_KEYS, join_table.DENSE_MIN_SLOTS, join_table.DENSE_SLOTS_PER_KEY = saved
    assert ours.lookup(probe).tolist() == reference.JoinTable(build).lookup(probe).tolist()


def _chunked(column: pa.Array, cuts) -> pa.ChunkedArray:
    """``column`` cut at ``cuts`` (empty chunks where cuts repeat), the string chunks alternately
    dictionary-encoded (each chunk its own dictionary)."""
    bounds = [0, *sorted(min(c, len(column)) for c in cuts), len(column)]
    chunks = [column.slice(a, b - a) for a, b in zip(bounds, bounds[1:])]
    chunks = [c.dictionary_encode() if i % 2 and pa.types.is_string(c.type) else c for i, c in enumerate(chunks)]
    if len({c.type for c in chunks}) > 1:
        chunks = [c.dictionary_decode() if pa.types.is_dictionary(c.type) else c for c in chunks]
    return pa.chunked_array(chunks, type=chunks[0].type)


@needs_compiled
@PROPERTY
@given(sides(), st.lists(st.integers(0, 1000), min_size=1, max_size=4))
def test_chunked_probe_matches_one_chunk(case, cuts):
    """A probe key in many chunks is looked up chunk by chunk (one key column) or concatenated
    (several): the ids of the same rows in one array."""
    build, probe = case
    table = compiled.JoinTable(build)
    chunked = [_chunked(c, cuts) for c in probe]
    assert table.lookup(chunked).tolist() == reference.JoinTable(build).lookup(probe).tolist()
