"""Frame-of-reference bit-packing: round trips on whichever implementation ``kernels`` exports, and
the compiled kernels against the NumPy reference (identical words, since stored segments written by
one are read by the other)."""
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kernels
from kernels import bit_width_of
from kernels.reference import bitpack as reference

try:
    from kernels import bitpack as compiled
except ImportError:
    if kernels.IMPLEMENTATION == "compiled":
        raise
    compiled = None  # reference mode needs no build; comparisons with the kernels are then skipped

IMPLEMENTATIONS = [impl for impl in (compiled, reference) if impl is not None]
needs_compiled = pytest.mark.skipif(compiled is None, reason="compiled kernels are not built")

PROPERTY_SETTINGS = settings(max_examples=120, deadline=None,
                             suppress_health_check=[HealthCheck.too_slow])

DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


@st.composite
def integer_arrays(draw, dtypes=DTYPES):
    """Arrays of any integer dtype whose range is full, narrow or a single value, with sizes that
    land on, just before and just after 64-value block boundaries."""
    dtype = np.dtype(draw(st.sampled_from(dtypes)))
    info = np.iinfo(dtype)
    n = draw(st.integers(0, 70) | st.sampled_from([63, 64, 65, 127, 128, 129, 191, 640, 1000]))
    lo = draw(st.integers(int(info.min), int(info.max)) | st.sampled_from([int(info.min), 0]))
    span = draw(st.sampled_from([0, 1, 2, 7, 255, 2**13, 2**31, 2**63, 2**64])) - 1
    hi = min(int(info.max), lo + max(span, 0))
    seed = draw(st.integers(0, 2**32 - 1))
    values = np.random.default_rng(seed).integers(lo, hi, n, dtype=dtype, endpoint=True)
    # Edge values of the frame, somewhere in the array.
    if n and draw(st.booleans()):
        values[draw(st.integers(0, n - 1))] = lo
        values[draw(st.integers(0, n - 1))] = hi
    return values


def _round_trip(impl, values):
    base, width, packed = impl.pack(values)
    assert packed.dtype == np.uint64 and packed.shape == ((len(values) * width + 63) // 64,)
    out = np.empty_like(values)
    impl.unpack(base, width, packed, len(values), out)
    np.testing.assert_array_equal(out, values)
    return base, width, packed


@PROPERTY_SETTINGS
@given(integer_arrays())
def test_round_trip(values):
    base, width, packed = _round_trip(kernels, values)
    if len(values):
        assert base == int(values.min())
        assert width == (int(values.max()) - int(values.min())).bit_length() == bit_width_of(values)
    else:
        assert (base, width) == (0, 0)


@PROPERTY_SETTINGS
@given(integer_arrays())
def test_compiled_matches_reference(values):
    results = [_round_trip(impl, values) for impl in IMPLEMENTATIONS]
    base, width, packed = results[0]
    for other_base, other_width, other_packed in results[1:]:
        assert (other_base, other_width) == (base, width)
        assert other_packed.tobytes() == packed.tobytes()
    # Each decodes the other's words.
    for impl in IMPLEMENTATIONS:
        out = np.empty_like(values)
        impl.unpack(base, width, results[-1][2], len(values), out)
        np.testing.assert_array_equal(out, values)
    for impl in IMPLEMENTATIONS:
        assert impl.bit_width_of(values) == width


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=lambda m: m.__name__)
@pytest.mark.parametrize("dtype", DTYPES)
def test_extremes_take_the_whole_width(impl, dtype):
    info = np.iinfo(dtype)
    values = np.array([info.max, info.min, 0, info.max], dtype)
    base, width, _ = _round_trip(impl, values)
    assert base == int(info.min) and width == info.bits


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=lambda m: m.__name__)
def test_int64_min_max_is_width_64(impl):
    values = np.array([-(2**63), 2**63 - 1] * 40, np.int64)
    base, width, packed = _round_trip(impl, values)
    assert (base, width) == (-(2**63), 64)
    assert packed.view(np.int64).tolist() == [0, -1] * 40      # deltas 0 and 2**64 - 1


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=lambda m: m.__name__)
@pytest.mark.parametrize("n", [0, 1, 64, 65, 1000])
def test_equal_values_take_no_bits(impl, n):
    values = np.full(n, -7, np.int32)
    base, width, packed = _round_trip(impl, values)
    assert width == 0 and packed.shape == (0,) and base == (-7 if n else 0)


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=lambda m: m.__name__)
def test_layout_is_a_little_endian_bit_stream(impl):
    # Deltas 0..5 in 3 bits: bits 0-2 hold 0, 3-5 hold 1, ... (value i at bits [3i, 3i+3)).
    base, width, packed = impl.pack(np.arange(10, 16, dtype=np.int16))
    assert (base, width) == (10, 3)
    assert packed.tolist() == [sum(i << (3 * i) for i in range(6))]
    # 22 values of 3 bits cross a word boundary at value 21 (bits 63..65).
    base, width, packed = impl.pack(np.array([0] * 21 + [5, 7], np.int64))
    assert packed.tolist() == [(5 << 63) & (2**64 - 1), (5 >> 1) | (7 << 2)]


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=lambda m: m.__name__)
def test_unpack_into_a_slice_and_from_longer_buffers(impl):
    values = np.arange(-100, 100, dtype=np.int64) * 3
    base, width, packed = impl.pack(values)
    out = np.empty(200, np.int64)
    impl.unpack(base, width, np.concatenate([packed, np.full(3, 2**64 - 1, np.uint64)]), 200, out)
    np.testing.assert_array_equal(out, values)
    # The first 70 values decode from the first words alone.
    impl.unpack(base, width, packed, 70, out[:70])
    np.testing.assert_array_equal(out[:70], values[:70])


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=lambda m: m.__name__)
def test_rejects_bad_input(impl):
    base, width, packed = impl.pack(np.arange(100, dtype=np.int32))
    with pytest.raises(ValueError):
        impl.unpack(base, width, packed[:-1], 100, np.empty(100, np.int32))   # too few words
    with pytest.raises(ValueError):
        impl.unpack(base, width, packed, 100, np.empty(99, np.int32))         # out too short
    with pytest.raises(ValueError):
        impl.unpack(base, 65, packed, 100, np.empty(100, np.int32))
    with pytest.raises(ValueError):
        impl.unpack(300, width, packed, 100, np.empty(100, np.int8))          # base not an int8
    with pytest.raises(ValueError):                                           # 100 needs 7 bits
        impl.pack_into(np.arange(101, dtype=np.int32), 0, 6, np.empty(10, np.uint64))
    with pytest.raises(ValueError):                                           # below the base
        impl.pack_into(np.array([4, 5], np.int64), 5, 1, np.empty(1, np.uint64))
    with pytest.raises(ValueError):
        impl.pack_into(np.arange(10, dtype=np.int32), 0, 4, np.empty(2, np.uint64))  # wrong size
    with pytest.raises(TypeError):
        impl.pack(np.array([1.0, 2.0]))


def test_switch_exports_reference():
    env = {**os.environ, "CANOPY_KERNELS": "reference"}
    code = "import kernels; print(kernels.pack.__module__, 'bit_width_of' in kernels.__all__)"
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                            cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["kernels.reference.bitpack", "True"]
