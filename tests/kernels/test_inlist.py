"""IN-list kernels against the pyarrow.compute reference: short lists (compared value by value) and
long ones (Bloom filter + hash set), with NULL in the list and in the rows, dictionary and run-end
encoded columns, list values outside the column's type, and the NOT IN the engine builds on top."""
import datetime

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kernels
from engine.exec.kernel_filters import _built_in_list, in_list_contains
from kernels.reference import inlist as reference

try:
    from kernels import inlist as compiled
except ImportError:
    if kernels.IMPLEMENTATION == "compiled":
        raise
    compiled = None

needs_compiled = pytest.mark.skipif(compiled is None, reason="compiled kernels are not built")
PROPERTY = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

INT_TYPES = [pa.int8(), pa.int16(), pa.int32(), pa.int64()]
LENGTHS = st.sampled_from([0, 1, 7, 8, 9, 2047, 2049, 4100]) | st.integers(0, 300)
# 8 values is the longest list compared value by value; 9 and up go through the Bloom filter.
LIST_LENGTHS = st.sampled_from([0, 1, 3, 8, 9, 100, 904, 3000]) | st.integers(0, 40)


def int_column(t, n, rng, domain, null_fraction):
    info = np.iinfo(t.to_pandas_dtype())
    values = rng.integers(max(info.min, -domain), min(info.max, domain), n, endpoint=True)
    values[rng.random(n) < 0.03] = info.min
    values[rng.random(n) < 0.03] = info.max
    return pa.array(values.astype(t.to_pandas_dtype()), mask=rng.random(n) < null_fraction)


def str_column(n, rng, null_fraction):
    words = ["".join(rng.choice(list("abcd"), rng.integers(0, 5))) for _ in range(n)]
    nulls = rng.random(n) < null_fraction
    return pa.array([None if z else w for w, z in zip(words, nulls)], type=pa.string())


def encode(arr, encoding, pad):
    if encoding == "dictionary" and len(arr):
        arr = arr.dictionary_encode()
    elif encoding == "ree" and len(arr):
        arr = pc.run_end_encode(arr)
    return arr.slice(pad, max(len(arr) - 2 * pad, 0)) if len(arr) > 2 * pad else arr


@st.composite
def cases(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**32)))
    n, k = draw(LENGTHS), draw(LIST_LENGTHS)
    null_fraction = draw(st.sampled_from([0.0, 0.2, 1.0]))
    if draw(st.integers(0, 3)) == 0:
        t = draw(st.sampled_from([pa.string(), pa.large_string()]))
        arr = str_column(n, rng, null_fraction).cast(t)
        values = ["".join(rng.choice(list("abcd"), rng.integers(0, 5))) for _ in range(k)]
    else:
        t = draw(st.sampled_from(INT_TYPES))
        domain = draw(st.sampled_from([10, 1000, 2**62]))
        arr = int_column(t, n, rng, domain, null_fraction)
        # Some list values lie outside the column's type: they can never match.
        values = [int(v) for v in rng.integers(-domain, domain, k, endpoint=True)]
        if k and draw(st.booleans()):
            values[0] = 2**63 - 1 if t != pa.int64() else -(2**63)
    if draw(st.booleans()):
        values.append(None)
    draw(st.randoms()).shuffle(values)
    arr = encode(arr, draw(st.sampled_from(["plain", "plain", "dictionary", "ree"])), draw(st.integers(0, 9)))
    return arr, values, t


@needs_compiled
@PROPERTY
@given(cases())
def test_in_list_matches_reference(case):
    arr, values, t = case
    expected = reference.InList(values, t).contains(arr)
    result = compiled.InList(values, t).contains(arr)
    assert result.equals(expected), (t, len(values))


def old_in_list(a, values, negated):
    """The evaluator's ``in_list`` before the kernels (pc.is_in), the semantics to keep."""
    found = pc.is_in(a, value_set=pa.array(values, type=a.type), skip_nulls=True)
    if any(v is None for v in values):
        found = pc.if_else(found, True, pa.scalar(None, pa.bool_()))
    found = pc.if_else(pc.is_null(a), pa.scalar(None, pa.bool_()), found)
    return pc.invert(found) if negated else found


@pytest.mark.parametrize("values", [[1, 100, 200], [1, None], [None], [], list(range(0, 9040, 10)),
                                    list(range(0, 9040, 10)) + [None]])
@pytest.mark.parametrize("negated", [False, True])
def test_in_and_not_in_keep_the_evaluator_semantics(values, negated):
    a = pa.array([1, 5, None, 100, 9030, -7, 200], pa.int32())
    found = in_list_contains(tuple(values), a)
    result = kernels.not_kleene(found) if negated else found
    assert result.to_pylist() == old_in_list(a, values, negated).to_pylist()


def test_built_lists_are_cached_by_values_and_type():
    values = tuple(range(1000))
    arr = pa.array(np.arange(2000, dtype=np.int32))
    in_list_contains(values, arr)
    hits = _built_in_list.cache_info().hits
    in_list_contains(values, arr.slice(5))
    in_list_contains(values, pa.chunked_array([arr, arr]))
    assert _built_in_list.cache_info().hits == hits + 2


def test_dates_and_timestamps():
    days = pa.array([datetime.date(2024, 1, d) for d in range(1, 20)] + [None])
    wanted = [datetime.date(2024, 1, d) for d in (2, 3, 5, 7, 11, 13, 17, 19, 23)]
    assert kernels.InList(wanted, pa.date32()).contains(days).to_pylist() == \
        reference.InList(wanted, pa.date32()).contains(days).to_pylist()
    stamps = pa.array([datetime.datetime(2024, 1, 1, h) for h in range(24)], pa.timestamp("us"))
    assert kernels.count_true(kernels.InList([datetime.datetime(2024, 1, 1, 5)], stamps.type)
                              .contains(stamps)) == 1


def test_unsupported_types_raise_type_error():
    assert not kernels.supports_in_list(pa.float64())
    with pytest.raises(TypeError):
        kernels.InList([1.5], pa.float64())
