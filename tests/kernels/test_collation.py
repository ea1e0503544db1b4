"""Collation keys (kernels/collation.pyx): the compiled kernel and the NumPy reference against a
Python model of utf8mb4_general_ci (each character's weight from the table, trailing spaces dropped)
on random text of every UTF-8 width, with nulls, empties, trailing spaces, slices and large_string."""
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kernels
from kernels.general_ci_weights import REPLACEMENT, weight_table
from kernels.reference import collation as reference

try:
    from kernels import collation as compiled
except ImportError:
    if kernels.IMPLEMENTATION == "compiled":
        raise
    compiled = None

IMPLEMENTATIONS = [impl for impl in (compiled, reference) if impl is not None]
TABLE = np.array(weight_table(), dtype=np.uint16)
PROPERTY_SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ASCII (spaces, a tab), two-byte letters that fold to ASCII, to other two-byte letters and to
# three-byte ones (U+0250 weighs U+2C6F), three-byte and four-byte characters
ALPHABET = st.sampled_from(list("abcXYZ 09_%\t") + ["é", "É", "ß", "ø", "ı", "ɐ", "€", "中", "ｆ", "😀", "𝒜"])
TEXT = st.lists(ALPHABET, max_size=12).map("".join)


def model(s, pad=True):
    """The key of one Python string: its characters' weights, trailing spaces dropped (PAD SPACE)."""
    if s is None:
        return None
    key = "".join(chr(REPLACEMENT) if ord(ch) > 0xFFFF else chr(TABLE[ord(ch)]) for ch in s)
    return key.rstrip(" ") if pad else key


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=lambda m: m.__name__.split(".")[-2])
@pytest.mark.parametrize("large", [False, True])
@pytest.mark.parametrize("pad", [True, False])
@given(values=st.lists(st.none() | TEXT, max_size=40), cut=st.integers(0, 5))
@PROPERTY_SETTINGS
def test_keys_match_the_model(impl, large, pad, values, cut):
    arr = pa.array(values, pa.large_string() if large else pa.string())
    arr = arr.slice(min(cut, len(arr)))          # a slice: offsets not starting at 0
    keys = impl.collation_key(arr, TABLE, REPLACEMENT, pad)
    assert keys.type == arr.type
    keys.validate(full=True)
    assert keys.to_pylist() == [model(v, pad) for v in arr.to_pylist()]


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=lambda m: m.__name__.split(".")[-2])
def test_edges(impl):
    values = ["", " ", "   ", None, "a  ", " a", "Straße", "ÀÁÂÃÄÅàáâãäå", "😀", "x😀 ", "ǅ"]
    keys = impl.collation_key(pa.array(values), TABLE)
    assert keys.to_pylist() == ["", "", "", None, "A", " A", "STRASSE"[:4] + "SE", "A" * 12,
                                chr(REPLACEMENT), "X" + chr(REPLACEMENT), model("ǅ")]
    assert impl.collation_key(pa.array([], pa.string()), TABLE).to_pylist() == []
    assert impl.collation_key(pa.array([None, None], pa.string()), TABLE).to_pylist() == [None, None]


@pytest.mark.parametrize("impl", IMPLEMENTATIONS, ids=lambda m: m.__name__.split(".")[-2])
def test_refuses_what_is_not_one_string_array(impl):
    with pytest.raises(TypeError):
        impl.collation_key(pa.array([1, 2]), TABLE)
    with pytest.raises(TypeError):
        impl.collation_key(pa.chunked_array([["a"]]), TABLE)


def test_the_table_is_general_ci():
    """Spot checks of the table against MySQL's documented utf8mb4_general_ci equalities (the whole
    table is checked against a running MariaDB in tests/sql/test_collation_mariadb.py)."""
    assert model("aÀáÂãÄå") == "A" * 7
    assert model("ß") == "S" and model("Æ") != model("AE") and model("ø") != model("o")
    assert model("Ǆ") == model("ǆ")


# --- expanding keys: a character weighs none, one or several weights ----------------------------------
def _expanding_table():
    """A table over the ALPHABET's characters: 'é' weighs 'E', 'ß' 'SS', 'ø' nothing, '€' three
    weights, '中' a three-byte weight; the rest weigh themselves (upper-cased where ASCII)."""
    keys = [chr(cp) for cp in range(0x10000)]
    for cp in range(ord("a"), ord("z") + 1):
        keys[cp] = chr(cp - 32)
    special = {"é": "E", "É": "E", "ß": "SS", "ø": "", "€": "EUR", "中": "\u4e2d\u4e2d", " ": " ", "ı": "I"}
    for ch, text in special.items():
        keys[ord(ch)] = text
    starts = np.concatenate([[0], np.cumsum([len(k) for k in keys])]).astype(np.uint32)
    weights = np.array([ord(c) for k in keys for c in k], dtype=np.uint16)
    return keys, starts, weights


EXPANDING_KEYS, STARTS, WEIGHTS = _expanding_table()
# a collation module compiled before expanding_key (a worktree not rebuilt yet) has only the reference
EXPANDING = [impl for impl in IMPLEMENTATIONS if hasattr(impl, "expanding_key")]


def expanding_model(s, pad=False):
    if s is None:
        return None
    key = "".join(chr(REPLACEMENT) if ord(ch) > 0xFFFF else EXPANDING_KEYS[ord(ch)] for ch in s)
    return key.rstrip(" ") if pad else key


@pytest.mark.parametrize("impl", EXPANDING, ids=lambda m: m.__name__.split(".")[-2])
@pytest.mark.parametrize("large", [False, True])
@pytest.mark.parametrize("pad", [True, False])
@given(values=st.lists(st.none() | TEXT, max_size=40), cut=st.integers(0, 5))
@PROPERTY_SETTINGS
def test_expanding_keys_match_the_model(impl, large, pad, values, cut):
    arr = pa.array(values, pa.large_string() if large else pa.string())
    arr = arr.slice(min(cut, len(arr)))
    keys = impl.expanding_key(arr, STARTS, WEIGHTS, REPLACEMENT, pad)
    assert keys.type == arr.type
    keys.validate(full=True)
    assert keys.to_pylist() == [expanding_model(v, pad) for v in arr.to_pylist()]


def _full_table():
    """The same table over every code point: '😀' weighs itself (a four-byte weight), '𝒜' weighs
    'A', U+E0041 (a tag) nothing, U+20000 two four-byte weights; the rest of the supplementary planes
    weigh themselves."""
    from kernels.uca_supplementary_weights import extend
    listed = {0x1D49C: (ord("A"),), 0xE0041: (), 0x20000: (0x20000, 0x10FFFF)}
    return extend(STARTS, WEIGHTS.astype(np.uint32), listed)


FULL_STARTS, FULL_WEIGHTS = _full_table()
FULL_ALPHABET = st.sampled_from(list("abcXYZ 09_%\t") + ["é", "ß", "ø", "€", "中", "😀", "𝒜", "\U000E0041",
                                                         "\U00020000", "\U0010FFFF", "\U00010000"])


def full_model(s, pad=False):
    if s is None:
        return None
    special = {"𝒜": "A", "\U000E0041": "", "\U00020000": "\U00020000\U0010FFFF"}
    key = "".join(special.get(ch, ch) if ord(ch) > 0xFFFF else EXPANDING_KEYS[ord(ch)] for ch in s)
    return key.rstrip(" ") if pad else key


SUPPLEMENTARY = [impl for impl in EXPANDING if getattr(impl, "SUPPLEMENTARY", impl is reference)]


@pytest.mark.parametrize("impl", SUPPLEMENTARY, ids=lambda m: m.__name__.split(".")[-2])
@pytest.mark.parametrize("large", [False, True])
@pytest.mark.parametrize("pad", [True, False])
@given(values=st.lists(st.none() | st.lists(FULL_ALPHABET, max_size=12).map("".join), max_size=40),
       cut=st.integers(0, 5))
@PROPERTY_SETTINGS
def test_full_tables_weigh_every_code_point(impl, large, pad, values, cut):
    arr = pa.array(values, pa.large_string() if large else pa.string()).slice(cut)
    keys = impl.expanding_key(arr, FULL_STARTS, FULL_WEIGHTS, REPLACEMENT, pad)
    assert keys.type == arr.type
    keys.validate(full=True)
    assert keys.to_pylist() == [full_model(v, pad) for v in arr.to_pylist()]


@pytest.mark.parametrize("impl", SUPPLEMENTARY, ids=lambda m: m.__name__.split(".")[-2])
def test_a_table_that_points_past_its_weights_is_refused(impl):
    if impl is reference:
        pytest.skip("the reference indexes NumPy arrays: an IndexError")
    starts = FULL_STARTS.copy()
    starts[0x1F600 + 1:] += 10 ** 7
    with pytest.raises(ValueError, match="U\\+1F600"):
        impl.expanding_key(pa.array(["a😀"]), starts, FULL_WEIGHTS)


@pytest.mark.parametrize("impl", EXPANDING, ids=lambda m: m.__name__.split(".")[-2])
def test_expanding_edges(impl):
    values = ["", "ø", "øøø", None, "ß€", "a ø", "😀ø"]
    keys = impl.expanding_key(pa.array(values), STARTS, WEIGHTS, REPLACEMENT, True)
    assert keys.to_pylist() == ["", "", "", None, "SSEUR", "A", chr(REPLACEMENT)]
    assert impl.expanding_key(pa.array([], pa.string()), STARTS, WEIGHTS).to_pylist() == []
