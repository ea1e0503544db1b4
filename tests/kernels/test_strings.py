"""String kernels (CHAR_LENGTH, SUBSTRING, fused LENGTH(SUBSTRING)): the compiled kernels against the
pyarrow reference on random text (ASCII and multi-byte, nulls, empties, sliced arrays, large_string),
a Python model of MySQL's SUBSTRING on the edge positions, and DuckDB where its semantics match."""
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kernels
from kernels.reference import strings as reference

try:
    from kernels import strings as compiled
except ImportError:
    if kernels.IMPLEMENTATION == "compiled":
        raise
    compiled = None

IMPLEMENTATIONS = [impl for impl in (compiled, reference) if impl is not None]
needs_compiled = pytest.mark.skipif(compiled is None, reason="compiled kernels are not built")
PROPERTY_SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

POSITIONS = [-100, -25, -6, -5, -4, -1, 0, 1, 2, 3, 5, 6, 7, 40, 2**40, -2**40, 2**63 - 1, -2**63]
LENGTHS = [None, -3, -1, 0, 1, 2, 3, 9, 100, 2**63 - 1, -2**63]

# ASCII, two-, three- and four-byte characters
ALPHABET = st.sampled_from(list("abcXYZ 09") + ["é", "ß", "€", "中", "😀"])
TEXT = st.lists(ALPHABET, max_size=12).map("".join)


def mysql_substring(s, pos, length=None):
    """MySQL's SUBSTRING over Python characters (the definition the kernels follow)."""
    if s is None:
        return None
    if pos == 0 or (length is not None and length <= 0):
        return ""
    if pos > 0:
        begin = pos - 1
    else:
        if -pos > len(s):
            return ""
        begin = len(s) + pos
    end = len(s) if length is None else min(len(s), begin + length)
    return s[begin:end]


@st.composite
def string_arrays(draw):
    values = draw(st.lists(st.none() | TEXT, max_size=40))
    large = draw(st.booleans())
    arr = pa.array(values, type=pa.large_string() if large else pa.string())
    if len(arr) > 2 and draw(st.booleans()):
        start = draw(st.integers(0, len(arr) - 1))
        arr = arr.slice(start, draw(st.integers(0, len(arr) - start)))
    return arr


@PROPERTY_SETTINGS
@given(arr=string_arrays(), pos=st.sampled_from(POSITIONS) | st.integers(-15, 15),
       length=st.sampled_from(LENGTHS) | st.integers(-3, 15))
def test_substring_matches_mysql_model(arr, pos, length):
    expected = [mysql_substring(s, pos, length) for s in arr.to_pylist()]
    for impl in IMPLEMENTATIONS:
        got = impl.substring(arr, pos, length)
        assert got.type == arr.type
        assert got.to_pylist() == expected, impl.__name__
        for chars in (False, True):
            lengths = impl.substring_length(arr, pos, length, chars=chars)
            assert lengths.type == pa.int64()
            assert lengths.to_pylist() == [None if s is None else len(s) if chars else len(s.encode())
                                           for s in expected], (impl.__name__, chars)


@PROPERTY_SETTINGS
@given(arr=string_arrays())
def test_char_length(arr):
    expected = [None if s is None else len(s) for s in arr.to_pylist()]
    for impl in IMPLEMENTATIONS:
        assert impl.char_length(arr).to_pylist() == expected


@needs_compiled
def test_ascii_fast_path_large_batch_agrees_with_reference():
    rng = np.random.default_rng(0)
    words = ["".join(chr(c) for c in rng.integers(32, 127, rng.integers(0, 30))) for _ in range(5000)]
    arr = pa.array([None if i % 97 == 0 else w for i, w in enumerate(words)])
    mixed = pa.array([w + ("é" if i == 4000 else "") for i, w in enumerate(words)])   # one non-ASCII row
    for a in (arr, mixed, arr.slice(13, 3001)):
        for pos, length in [(1, 9), (3, None), (-4, 2), (0, 5), (30, 1), (-40, None)]:
            assert compiled.substring_length(a, pos, length).equals(reference.substring_length(a, pos, length))
            assert compiled.substring_length(a, pos, length, chars=True).equals(
                reference.substring_length(a, pos, length, chars=True))
            assert compiled.substring(a, pos, length).equals(reference.substring(a, pos, length))
        assert compiled.char_length(a).equals(reference.char_length(a))


@needs_compiled
def test_is_ascii():
    assert compiled.is_ascii(np.frombuffer(b"a" * 100, dtype=np.uint8))
    assert compiled.is_ascii(np.empty(0, dtype=np.uint8))
    for where in (0, 31, 32, 63, 99):
        data = bytearray(b"a" * 100)
        data[where] = 0xC3
        assert not compiled.is_ascii(np.frombuffer(bytes(data), dtype=np.uint8))


@needs_compiled
def test_bad_input_is_rejected():
    with pytest.raises(TypeError, match="string array"):
        compiled.substring(pa.array([1, 2]), 1, 2)
    with pytest.raises(TypeError, match="one Array"):
        compiled.char_length(pa.chunked_array([["a"]]))
    with pytest.raises(TypeError, match="integer"):
        compiled.substring(pa.array(["a"]), 1.5)
    offsets = np.array([0, 3, 2], dtype=np.int32)
    with pytest.raises(ValueError, match="row 1 has offsets"):
        compiled.char_lengths(offsets, np.frombuffer(b"abc", dtype=np.uint8), np.empty(2, dtype=np.int64))
    with pytest.raises(ValueError, match="data buffer"):
        compiled.char_lengths(np.array([0, 9], dtype=np.int32), np.frombuffer(b"abc", dtype=np.uint8),
                              np.empty(1, dtype=np.int64))
    with pytest.raises(ValueError, match="slots"):
        compiled.substring_lengths(np.array([0, 1], dtype=np.int64), np.frombuffer(b"a", dtype=np.uint8),
                                   1, 1, True, False, np.empty(3, dtype=np.int64))


def test_matches_duckdb_where_semantics_agree():
    """DuckDB's substring counts characters as MySQL does for positive positions and for negative
    ones within the string (it differs when -pos exceeds the length: MySQL gives '')."""
    duckdb = pytest.importorskip("duckdb")
    values = ["Hello World", "", None, "héllo wörld", "中文字符串", "😀a😀b", "ab"]
    arr = pa.array(values)
    con = duckdb.connect()
    con.register("t", pa.table({"s": arr}))
    for pos, length in [(1, 9), (2, 3), (3, None), (-3, None), (-2, 1), (1, 0), (5, 100)]:
        tail = "" if length is None else f", {length}"
        expected = [r[0] for r in con.execute(f"SELECT substring(s, {pos}{tail}) FROM t").fetchall()]
        lengths = [r[0] for r in con.execute(f"SELECT strlen(substring(s, {pos}{tail})) FROM t").fetchall()]
        for impl in IMPLEMENTATIONS:
            if pos < 0 and impl is not None:
                keep = [v is None or len(v) >= -pos for v in values]      # MySQL and DuckDB agree there
            else:
                keep = [True] * len(values)
            got = impl.substring(arr, pos, length).to_pylist()
            got_len = impl.substring_length(arr, pos, length).to_pylist()
            assert [g for g, k in zip(got, keep) if k] == [e for e, k in zip(expected, keep) if k]
            assert [g for g, k in zip(got_len, keep) if k] == [e for e, k in zip(lengths, keep) if k]
