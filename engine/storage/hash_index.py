"""A hash index over one stored column: value hash -> row positions, for equality lookups.

A partition's stored pieces are immutable (a columnstore segment file, a memory store's sealed
batch), so each gets its index once and keeps it in memory: in a data_dir built when the segment is
written and kept in a file beside it (engine.storage.columnstore.index_files; derived data, rebuilt
from the column when missing or damaged), in memory built on first use.

Layout: the rows' 64-bit hashes, sorted, with the row positions in that order (a static hash table).
A lookup hashes the wanted values and binary-searches them (numpy, vectorised): it returns
candidate positions, a superset of the matching rows (hashes collide). The caller still evaluates the
filter on them. NULL rows are not indexed: NULL equals nothing.

Strings hash by a collation key, so a case- or accent-insensitive comparison finds its rows too: a
column has up to two indexes, each named apart (:func:`index_name`). The plain one hashes
utf8mb4_general_ci keys (PAD SPACE): strings equal under utf8mb4_general_ci, utf8mb4_bin or
utf8mb4_0900_bin have equal keys there. The UCA one (``<column>\\x00uca``) hashes utf8mb4_0900_ai_ci
keys (the kernels' UCA primary weights, engine.core.collation_keys): strings equal under 0900_ai_ci or
0900_as_cs (equal at every level, so at the primary one) have equal keys there, where general_ci may
key them apart ('e' + U+0301 and 'é', 'ß' and 'ss'). A UCA lookup brings its values already keyed
(:func:`uca_lookup_keys`: the comparison's own keys), so the index hashes them as they are.

>>> import pyarrow as pa
>>> index = HashIndex.build(pa.array([5, 7, None, 5]))
>>> index.lookup(pa.array([5])).tolist()
[0, 3]
>>> index.lookup(pa.array([6])).tolist()
[]
"""
from __future__ import annotations

import threading
from typing import Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

UCA = "\x00uca"             # the suffix naming a column's UCA index (a NUL: no column name has one)
UCA_COLLATION = "utf8mb4_0900_ai_ci"


def index_name(column: str, collation: Optional[str] = None) -> str:
    """The name of the index of ``column`` that answers an equality under ``collation`` (a UCA
    collation: the UCA index; any other, or None: the plain one)."""
    from engine import collation as collations
    return column + UCA if collation is not None and collations.weighing(collation) in ("uca", "uca_cs") else column


def index_column(name: str) -> tuple[str, bool]:
    """(column, whether the UCA index) of an index name."""
    return (name[:-len(UCA)], True) if name.endswith(UCA) else (name, False)


def uca_lookup_keys(keys: tuple, collation: str) -> tuple:
    """The utf8mb4_0900_ai_ci keys of the values of an equality compared under ``collation`` (a UCA
    one), from the comparison's keys: an _ai_ci key is one; an _as_cs key is its _ai_ci key, a NUL,
    then the rest (engine.core.collation_keys)."""
    from engine import collation as collations
    if collations.weighing(collation) == "uca_cs":
        return tuple(k.split("\x00", 1)[0] if isinstance(k, str) else k for k in keys)
    return keys


_PANDAS_IMPORT = threading.Lock()


def _hash_array(values: np.ndarray) -> np.ndarray:
    # pandas on first use (a plain scan does not load it), imported by one thread at a time: the
    # partitions of a unique-key check build their indexes in a thread pool, and two threads importing
    # pandas at once (its import is wrapped, engine.lazy_pandas) died with Python's _DeadlockError
    with _PANDAS_IMPORT:
        from pandas.util import hash_array
    return hash_array(values, categorize=False)


def value_hashes(array: pa.Array, strings: str = "general") -> Optional[np.ndarray]:
    """uint64 per value (NULLs: any value; the caller drops them), equal for values that compare
    equal; None for a type the index does not cover. ``strings``: how strings are keyed before they
    are hashed: "general" (utf8mb4_general_ci keys), "uca" (utf8mb4_0900_ai_ci keys) or "keys" (they
    are keys already)."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    t = array.type
    if pa.types.is_dictionary(t):
        array, t = array.dictionary_decode(), t.value_type
    if pa.types.is_run_end_encoded(t):
        array, t = pc.run_end_decode(array), t.value_type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        # collation keys (see the module docstring), so a lookup finds the rows of a case- or
        # accent-insensitive comparison too (lazy import: the keys are the evaluator's,
        # engine.core.collation_keys)
        from engine.core.collation_keys import collation_keys
        if strings != "keys":
            array = collation_keys(array, UCA_COLLATION if strings == "uca" else "utf8mb4_general_ci")
        return _hash_array(array.fill_null("").to_numpy(zero_copy_only=False))
    if pa.types.is_decimal(t):
        return _hash_array(array.cast(pa.string()).fill_null("").to_numpy(zero_copy_only=False))
    if pa.types.is_temporal(t):
        array, t = array.view(pa.int64() if t.bit_width == 64 else pa.int32()), None
    if t is None or pa.types.is_integer(t) or pa.types.is_boolean(t):
        return array.cast(pa.int64()).fill_null(0).to_numpy().view(np.uint64)
    if pa.types.is_floating(t):
        values = array.cast(pa.float64()).fill_null(0.0).to_numpy() + 0.0      # -0.0 == 0.0
        return _hash_array(values)
    return None


class HashIndex:
    """The index of one column of one immutable piece (see the module docstring)."""

    __slots__ = ("hashes", "positions", "uca")

    def __init__(self, hashes: np.ndarray, positions: np.ndarray, uca: bool = False):
        self.hashes = hashes
        self.positions = positions
        self.uca = uca              # strings hashed by their 0900_ai_ci keys (the UCA index)

    @classmethod
    def build(cls, column, uca: bool = False) -> Optional["HashIndex"]:
        """The index of ``column`` (every row, in stored order); None for a type it does not cover.
        ``uca``: the UCA index (see the module docstring)."""
        hashes = value_hashes(column, "uca" if uca else "general")
        if hashes is None:
            return None
        positions = np.arange(len(hashes), dtype=np.int64)
        if column.null_count:
            valid = pc.is_valid(column).to_numpy(zero_copy_only=False)
            hashes, positions = hashes[valid], positions[valid]
        order = np.argsort(hashes, kind="stable")
        return cls(hashes[order], positions[order], uca)

    def lookup(self, values: pa.Array) -> np.ndarray:
        """Sorted, distinct positions of the rows whose hash is one of ``values``' (a superset of the
        rows equal to one of them). The UCA index takes strings as 0900_ai_ci keys already."""
        wanted = value_hashes(values, "keys" if self.uca else "general")
        if values.null_count:
            wanted = wanted[pc.is_valid(values).to_numpy(zero_copy_only=False)]
        low = np.searchsorted(self.hashes, wanted, side="left")
        high = np.searchsorted(self.hashes, wanted, side="right")
        counts = high - low
        total = int(counts.sum())
        if total == 0:
            return np.empty(0, dtype=np.int64)
        # the ranges [low, high) laid end to end: start of each range repeated, plus 0..count-1
        starts = np.repeat(low - np.concatenate(([0], np.cumsum(counts)[:-1])), counts)
        return np.unique(self.positions[starts + np.arange(total)])

    @property
    def nbytes(self) -> int:
        return self.hashes.nbytes + self.positions.nbytes


def lookup_values(bound_values, column_type: pa.DataType) -> Optional[pa.Array]:
    """The looked-up literals as an array of the column's type; None when one does not convert
    exactly (the scan then reads every row and its filter decides)."""
    try:
        if isinstance(bound_values, pa.ChunkedArray):
            bound_values = bound_values.combine_chunks()
        if isinstance(bound_values, pa.Array):          # the keys a unique check looks for (engine.load.keys)
            return bound_values.cast(column_type, safe=True)
        return pa.array(list(bound_values), type=column_type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
        return None
