"""Collation keys of Arrow data (engine/collation.py says why keys; the evaluator's ``collation_key(x)``
and the scan's filter kernels call this).

A key of a dictionary-encoded array is a dictionary array with the same codes over the keys of its
dictionary, and a key of a run-end encoded array keeps its runs: the work is once per distinct stored
value, never a decode of the rows. A dictionary of keys may hold one key twice ('a' and 'A' both key
'A'); every consumer (compare, IN, hashing, group-by, sort) reads values through the codes.
"""
from __future__ import annotations

import functools

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import kernels
from engine import collation
from kernels.general_ci_weights import REPLACEMENT, weight_table


@functools.cache
def _general_ci() -> np.ndarray:
    """utf8mb4_general_ci's 65536 weights, built on first use (~10 ms, not at every start-up)."""
    return np.array(weight_table(), dtype=np.uint16)


def collation_keys(d, name: str, pad: bool = True):
    """The keys of strings ``d`` under collation ``name`` (PAD SPACE when ``pad``; LIKE compares
    without padding). Any Datum of strings in, the same shape out; NULL stays NULL."""
    if isinstance(d, pa.Scalar):
        if not d.is_valid:
            return d
        return collation_keys(pa.array([d.as_py()], d.type), name, pad)[0]
    if isinstance(d, pa.ChunkedArray):
        return pa.chunked_array([collation_keys(c, name, pad) for c in d.chunks], d.type)
    if pa.types.is_dictionary(d.type):
        # a key per entry: the codes stay valid, and Arrow's check of each one (safe=True) is waste
        return pa.DictionaryArray.from_arrays(d.indices, collation_keys(d.dictionary, name, pad), safe=False)
    if pa.types.is_run_end_encoded(d.type):
        # the keys of the runs, over the same logical slice (a sliced array keeps its parent's run ends)
        return pa.RunEndEncodedArray.from_arrays(d.run_ends, collation_keys(d.values, name, pad)).slice(d.offset, len(d))
    if not (pa.types.is_string(d.type) or pa.types.is_large_string(d.type)):
        return d        # a NULL-typed column: nothing to key
    like = not pad                              # LIKE and LOCATE match keys character by character
    pad = pad and collation.pads(name)          # NO PAD collations keep trailing spaces
    if collation.weighing(name) == "uca_cs":
        return _as_cs_keys(d, like)
    if collation.weighing(name) == "uca":
        from kernels import uca_ai_ci_weights      # on first use: its tables are not small (start-up)
        starts, weights = uca_ai_ci_weights.tables(like)
        return kernels.expanding_key(d, starts, weights, uca_ai_ci_weights.REPLACEMENT, pad)
    ascii, trailing_space = _shape(d)
    if collation.is_binary(name):
        return pc.utf8_rtrim(d, characters=" ") if pad and trailing_space else d
    if ascii and not (pad and trailing_space):
        return pc.ascii_upper(d)        # general_ci weighs an ASCII letter as its capital, the rest as itself
    return kernels.collation_key(d, _general_ci(), REPLACEMENT, pad)


def _as_cs_keys(d: pa.Array, like: bool) -> pa.Array:
    """utf8mb4_0900_as_cs (kernels/uca_as_cs_weights.py). The string in NFC (canonically equivalent
    spellings alike) with each character replaced by its full-weight class and ignorables dropped (the
    *exact* part) is equal exactly when the strings are; a LIKE pattern and its subjects (``like``) are
    keyed character by character as written (no NFC: 'e' + U+0301 is two characters, as in MySQL),
    each ignorable one as U+0000, keeping the wildcards (they are their own class). For comparisons the key orders as UCA's levels:
    the _ai_ci key (primary weights), a NUL, the secondary weights of the exact part (accents), a NUL,
    its tertiary weights (case, width: lower case first, as MySQL's 'a' < 'A'), a NUL, then the exact
    part. The tables weigh every code point, those above U+FFFF too ('😀' <> '🙂', '𝐀' = 'A' at the
    primary level, kernels/uca_supplementary_weights.py)."""
    from kernels import uca_ai_ci_weights, uca_as_cs_weights
    if like:        # character by character as written, as MySQL's LIKE (an ignorable one counts)
        starts, weights = uca_as_cs_weights.tables(like=True)
        return kernels.expanding_key(d, starts, weights, uca_ai_ci_weights.REPLACEMENT, False)
    nfc = pc.utf8_normalize(d, "NFC")
    starts, weights = uca_as_cs_weights.tables()
    exact = kernels.expanding_key(nfc, starts, weights, uca_ai_ci_weights.REPLACEMENT, False)
    starts, weights = uca_ai_ci_weights.tables()
    primary = kernels.expanding_key(nfc, starts, weights, uca_ai_ci_weights.REPLACEMENT, False)
    (starts2, weights2), (starts3, weights3) = uca_as_cs_weights.level_tables()
    secondary = kernels.expanding_key(exact, starts2, weights2, 0x20, False)
    tertiary = kernels.expanding_key(exact, starts3, weights3, 0x02, False)
    return pc.binary_join_element_wise(primary, secondary, tertiary, exact, "\x00").cast(d.type)


def _shape(d: pa.Array) -> tuple[bool, bool]:
    """(whether every byte the rows span is ASCII, whether some row may end with a space): a max and
    a gather of each row's last byte over the buffers (NumPy), which let most columns skip the kernel
    (and every trailing-space trim). An empty row's "last byte" is its predecessor's (or, first, the
    buffer's last): at worst a trim that changes nothing."""
    large = pa.types.is_large_string(d.type)
    buffers = d.buffers()
    if buffers[1] is None or buffers[2] is None or not len(d):
        return True, False
    offsets = np.frombuffer(buffers[1], np.int64 if large else np.int32, count=len(d) + 1,
                            offset=d.offset * (8 if large else 4))
    start, end = int(offsets[0]), int(offsets[-1])
    if start == end:
        return True, False
    data = np.frombuffer(buffers[2], np.uint8, count=end - start, offset=start)
    last = data.take(offsets[1:] - (start + 1), mode="wrap")
    return int(data.max()) < 0x80, bool((last == 0x20).any())


@functools.lru_cache(maxsize=256)
def list_keys(values: tuple, name: str, pad: bool = True) -> tuple:
    """The keys of a few constant strings (an IN list's, a LIKE escape), None kept; cached, as the
    filter kernels cache a built IN list."""
    return tuple(collation_keys(pa.array(list(values), pa.string()), name, pad).to_pylist())
