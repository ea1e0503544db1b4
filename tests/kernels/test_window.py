"""Window kernels: the compiled ones against the NumPy references (and both against brute force on
small inputs) on random sorted partitions with NULLs, empty and one-row partitions, ties, and every
frame shape: running, sliding, shrinking, empty frames."""
import decimal

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kernels
from kernels.reference import window as reference

try:
    from kernels import window as compiled
except ImportError:
    if kernels.IMPLEMENTATION == "compiled":
        raise
    compiled = None

IMPLEMENTATIONS = [impl for impl in (compiled, reference) if impl is not None]
SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def partitions(draw):
    """(sorted partition ids, new-partition flags) over up to 60 rows."""
    sizes = draw(st.lists(st.integers(1, 12), min_size=0, max_size=6))
    ids = np.repeat(np.arange(len(sizes)), sizes).astype(np.int64)
    flags = np.ones(len(ids), dtype=np.uint8)
    flags[1:] = (ids[1:] != ids[:-1]).astype(np.uint8)
    return ids, flags


def bounds(impl, flags):
    n = len(flags)
    start, end = np.empty(n, np.int64), np.empty(n, np.int64)
    impl.segment_bounds(flags, start, end)
    return start, end


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
@given(partitions())
@SETTINGS
def test_segment_bounds(impl, part):
    ids, flags = part
    start, end = bounds(impl, flags)
    for i in range(len(ids)):
        members = np.flatnonzero(ids == ids[i])
        assert start[i] == members[0] and end[i] == members[-1] + 1


@st.composite
def rows_frames(draw):
    """Partitions and the [lo, hi) of a ROWS frame with random offsets (possibly empty frames)."""
    ids, flags = draw(partitions())
    n = len(ids)
    a = draw(st.integers(-4, 4))
    b = draw(st.integers(a - 1, 5))
    start, end = bounds(reference, flags)
    i = np.arange(n)
    lo = np.clip(i + a, start, end) if draw(st.booleans()) else start.copy()
    hi = np.clip(i + b + 1, start, end) if draw(st.booleans()) else end.copy()
    return ids, flags, start, lo.astype(np.int64), hi.astype(np.int64)


def valid_of(draw_values, n):
    return np.array([v is not None for v in draw_values], dtype=np.uint8)


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
@given(rows_frames(), st.data())
@SETTINGS
def test_count_and_sums(impl, frames, data):
    ids, flags, start, lo, hi = frames
    n = len(ids)
    values = data.draw(st.lists(st.none() | st.integers(-10**20, 10**20), min_size=n, max_size=n))
    valid = valid_of(values, n)
    counts = np.empty(n, np.int64)
    impl.window_count(valid, start, lo, hi, counts)
    arr = pa.array([None if v is None else decimal.Decimal(v) for v in values], pa.decimal128(38, 0))
    words = np.frombuffer(arr.buffers()[1], dtype=np.int64)[:2 * n].copy() if n else np.zeros(0, np.int64)
    sums = np.empty(2 * n, np.int64)
    impl.window_sum_words(words, valid, start, lo, hi, sums)
    floats = np.array([0.0 if v is None else float(v % 1000) for v in values])
    fsums = np.empty(n, np.float64)
    impl.window_sum_float(floats, valid, start, lo, hi, fsums)
    for i in range(n):
        frame = [v for v in values[lo[i]:hi[i]] if v is not None] if hi[i] > lo[i] else []
        assert counts[i] == len(frame)
        got = int(np.uint64(sums[2 * i])) + (int(sums[2 * i + 1]) << 64)
        assert got == sum(frame)
        assert fsums[i] == pytest.approx(sum(float(v % 1000) for v in frame))


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
@given(rows_frames(), st.data(), st.booleans())
@SETTINGS
def test_arg_extreme(impl, frames, data, want_max):
    ids, flags, start, lo, hi = frames
    n = len(ids)
    values = data.draw(st.lists(st.none() | st.integers(-3, 3), min_size=n, max_size=n))
    valid = valid_of(values, n)
    ranks = np.array([0 if v is None else v for v in values], dtype=np.int64)
    out = np.empty(n, np.int64)
    impl.window_arg_extreme(ranks, valid, lo, hi, want_max, out)
    for i in range(n):
        frame = [v for v in values[lo[i]:hi[i]] if v is not None] if hi[i] > lo[i] else []
        if not frame:
            assert out[i] == -1
        else:
            assert lo[i] <= out[i] < hi[i] and values[out[i]] == (max(frame) if want_max else min(frame))


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
def test_arg_extreme_refuses_frames_moving_backwards(impl):
    lo, hi = np.array([1, 0], np.int64), np.array([2, 2], np.int64)
    with pytest.raises(ValueError):
        impl.window_arg_extreme(np.zeros(2, np.int64), np.ones(2, np.uint8), lo, hi, False, np.empty(2, np.int64))


KINDS = {"unbounded_preceding": 0, "offset": 1, "current_row": 2, "unbounded_following": 3}


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
@pytest.mark.parametrize("dtype", [np.int64, np.float64])
@given(partitions(), st.data())
@SETTINGS
def test_range_frame(impl, dtype, part, data):
    ids, flags = part
    n = len(ids)
    raw = data.draw(st.lists(st.none() | st.integers(-6, 6), min_size=n, max_size=n))
    # sorted within each partition, NULLs first or last (as the operator's sort leaves them)
    nulls_first = data.draw(st.booleans())
    keys_list = []
    for p in np.unique(ids):
        chunk = [raw[i] for i in np.flatnonzero(ids == p)]
        nn = sorted(v for v in chunk if v is not None)
        nulls = [None] * (len(chunk) - len(nn))
        keys_list += nulls + nn if nulls_first else nn + nulls
    valid = valid_of(keys_list, n)
    keys = np.array([0 if v is None else v for v in keys_list], dtype=dtype)
    new_peer = flags.copy()
    for i in range(1, n):
        if keys_list[i] != keys_list[i - 1]:
            new_peer[i] = 1
    part_start, part_end = bounds(reference, flags)
    peer_start, peer_end = bounds(reference, new_peer)
    lo_kind = data.draw(st.sampled_from(["unbounded_preceding", "offset", "current_row"]))
    hi_kind = data.draw(st.sampled_from(["offset", "current_row", "unbounded_following"]))
    lo_delta = dtype(data.draw(st.integers(-4, 4)))
    hi_delta = dtype(data.draw(st.integers(-4, 4)))
    lo, hi = np.empty(n, np.int64), np.empty(n, np.int64)
    impl.range_frame(keys, valid, part_start, part_end, peer_start, peer_end, KINDS[lo_kind], lo_delta,
                     KINDS[hi_kind], hi_delta, lo, hi)
    for i in range(n):
        p, q = part_start[i], part_end[i]
        rows = range(p, q)
        if lo_kind == "unbounded_preceding":
            want_lo = p
        elif lo_kind == "current_row" or keys_list[i] is None:
            want_lo = peer_start[i]
        else:
            inside = [j for j in rows if keys_list[j] is not None and keys_list[j] >= keys_list[i] + lo_delta]
            want_lo = inside[0] if inside else max((j + 1 for j in rows if keys_list[j] is not None), default=p)
        if hi_kind == "unbounded_following":
            want_hi = q
        elif hi_kind == "current_row" or keys_list[i] is None:
            want_hi = peer_end[i]
        else:
            inside = [j for j in rows if keys_list[j] is not None and keys_list[j] <= keys_list[i] + hi_delta]
            want_hi = inside[-1] + 1 if inside else min((j for j in rows if keys_list[j] is not None), default=q)
        # an empty frame may be reported at any position: only its emptiness matters
        if want_hi <= want_lo:
            assert hi[i] <= lo[i], (i, lo[i], hi[i], want_lo, want_hi)
        else:
            assert (lo[i], hi[i]) == (want_lo, want_hi), (i, keys_list, lo_kind, lo_delta, hi_kind, hi_delta)
