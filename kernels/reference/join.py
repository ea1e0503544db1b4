"""NumPy / pyarrow reference for kernels/join.pyx: ``JoinTable`` and ``JoinBloom``, same results.

Key ids are dense in order of first occurrence of the build side's non-NULL keys (``pc.unique`` keeps
that order); several key columns are numbered column by column and the tuples of numbers densified
with ``np.unique``. The reference Bloom filter is exact (a set): the compiled one may also pass some
values that are not keys, never fewer.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["JoinTable", "JoinBloom", "supports_join_key"]

DEFAULT_MAX_PAIRS = 1 << 20

_WORD_TYPES = (pa.types.is_integer, pa.types.is_boolean, pa.types.is_date, pa.types.is_time,
               pa.types.is_timestamp, pa.types.is_duration)


def _plain_type(t: pa.DataType) -> pa.DataType:
    return t.value_type if pa.types.is_dictionary(t) else t


def _key_kind(t: pa.DataType):
    t = _plain_type(t)
    if any(check(t) for check in _WORD_TYPES):
        return "word"
    if pa.types.is_decimal128(t):
        return "decimal"
    if pa.types.is_string(t) or pa.types.is_binary(t) or pa.types.is_large_string(t) or pa.types.is_large_binary(t):
        return "bytes"
    return None


def supports_join_key(t: pa.DataType) -> bool:
    """See ``kernels.join.supports_join_key``."""
    return _key_kind(t) is not None


def _check_compatible(b: pa.DataType, p: pa.DataType) -> None:
    b, p = _plain_type(b), _plain_type(p)
    kb, kp = _key_kind(b), _key_kind(p)
    if kb is None or kp is None:
        raise TypeError(f"cannot join on a column of type {b if kb is None else p}")
    if kb != kp:
        raise TypeError(f"cannot join a {b} key with a {p} key")
    if kb == "word" and b != p and not (pa.types.is_integer(b) and pa.types.is_integer(p)):
        raise TypeError(f"cannot join a {b} key with a {p} key (cast both to one type first)")
    if kb == "decimal" and b.scale != p.scale:
        raise TypeError(f"cannot join a {b} key with a {p} key (cast both to one scale first)")


def _canonical(column) -> pa.Array:
    """The column as an Array of one type per kind: int64, decimal128(38, s), large_binary."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    elif not isinstance(column, pa.Array):
        raise TypeError(f"expected a pyarrow Array or ChunkedArray, got {type(column).__name__}")
    if pa.types.is_dictionary(column.type):
        column = column.dictionary_decode()
    t = column.type
    kind = _key_kind(t)
    if kind == "word":
        if pa.types.is_boolean(t):
            return column.cast(pa.int64())
        if pa.types.is_unsigned_integer(t) and t.bit_width == 64:
            return column.view(pa.int64())
        if not pa.types.is_integer(t):
            return column.view(pa.int64() if t.bit_width == 64 else pa.int32()).cast(pa.int64())
        return column.cast(pa.int64())
    if kind == "decimal":
        return column.cast(pa.decimal128(38, t.scale))
    if kind == "bytes":
        return column.cast(pa.large_binary())
    raise TypeError(f"cannot join on a column of type {t}")


def _first_order_ids(keys: np.ndarray) -> np.ndarray:
    """Dense ids of the rows of ``keys`` (1-D or 2-D int64), in order of first occurrence."""
    if len(keys) == 0:
        return np.zeros(0, dtype=np.int64), keys
    uniq, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return rank[inverse.reshape(-1)], uniq[order]


class JoinTable:
    """See ``kernels.join.JoinTable``."""

    def __init__(self, columns: Sequence) -> None:
        columns = list(columns)
        if not columns:
            raise ValueError("a JoinTable needs at least one key column")
        plain = [c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c for c in columns]
        self.types = [_plain_type(c.type) for c in plain]
        for t in self.types:
            if _key_kind(t) is None:
                raise TypeError(f"cannot join on a column of type {t}")
        canon = [_canonical(c) for c in plain]
        n = len(canon[0])
        if any(len(c) != n for c in canon):
            raise ValueError("key columns differ in length")
        self.num_rows = n
        valid = np.ones(n, dtype=bool)
        for c in canon:
            valid &= np.asarray(c.is_valid())
        self.null_rows = int(n - valid.sum())
        kept = np.flatnonzero(valid)
        self._uniques = []           # per column: its distinct non-NULL build values, first order
        codes = np.empty((len(kept), len(canon)), dtype=np.int64)
        for j, c in enumerate(canon):
            values = c.take(pa.array(kept))
            u = pc.unique(values)
            self._uniques.append(u)
            codes[:, j] = pc.index_in(values, value_set=u).to_numpy(zero_copy_only=False)
        ids, self._tuples = _first_order_ids(codes)
        self.num_keys = len(self._tuples)
        self.build_ids = np.full(n, -1, dtype=np.int64)
        self.build_ids[kept] = ids
        first = np.full(self.num_keys, n, dtype=np.int64)
        np.minimum.at(first, ids, kept)
        self._first = first
        self._order = np.argsort(np.where(self.build_ids < 0, self.num_keys, self.build_ids), kind="stable")
        counts = np.bincount(ids, minlength=self.num_keys)
        self._starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        self._single = plain[0] if len(plain) == 1 else None

    @property
    def has_null(self) -> bool:
        return self.null_rows > 0

    @property
    def first_rows(self) -> np.ndarray:
        return self._first

    def lookup(self, columns: Sequence) -> np.ndarray:
        """See ``kernels.join.JoinTable.lookup``."""
        columns = list(columns)
        if len(columns) != len(self.types):
            raise ValueError(f"{len(columns)} probe key columns for a JoinTable of {len(self.types)}")
        for t, c in zip(self.types, columns):
            _check_compatible(t, c.type)
        canon = [_canonical(c) for c in columns]
        n = len(canon[0])
        null = np.zeros(n, dtype=bool)
        codes = np.empty((n, len(canon)), dtype=np.int64)
        for j, (c, u) in enumerate(zip(canon, self._uniques)):
            null |= ~np.asarray(c.is_valid())
            codes[:, j] = pc.fill_null(pc.index_in(c, value_set=u), -1).to_numpy(zero_copy_only=False)
        ids = np.full(n, -1, dtype=np.int64)
        if self.num_keys and n:
            # The tuple's position among the build's distinct tuples, by a search over them sorted.
            order = np.lexsort(self._tuples.T[::-1])
            ordered = self._tuples[order]
            view = lambda a: np.ascontiguousarray(a).view([("", np.int64)] * a.shape[1]).reshape(-1)
            pos = np.searchsorted(view(ordered), view(codes))
            pos = np.minimum(pos, len(ordered) - 1)
            hit = (ordered[pos] == codes).all(axis=1)
            ids[hit] = order[pos[hit]]
        ids[null] = -2
        return ids

    def pairs(self, ids: np.ndarray, outer: bool = False,
              max_pairs: int = DEFAULT_MAX_PAIRS) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """See ``kernels.join.JoinTable.pairs``."""
        if max_pairs < 1:
            raise ValueError(f"max_pairs must be >= 1, not {max_pairs}")
        ids = np.asarray(ids, dtype=np.int64)
        safe = np.where(ids >= 0, ids, 0)
        starts = np.append(self._starts, self._starts[-1])      # room for the placeholder id 0
        counts = np.where(ids >= 0, starts[safe + 1] - starts[safe], 1 if outer else 0)
        probe = np.repeat(np.arange(len(ids), dtype=np.int64), counts)
        within = np.arange(len(probe), dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
        pid = ids[probe]
        build = np.full(len(probe), -1, dtype=np.int64)
        m = pid >= 0
        build[m] = self._order[self._starts[pid[m]] + within[m]]
        for start in range(0, len(probe), max_pairs):
            yield probe[start:start + max_pairs], build[start:start + max_pairs]

    def semi(self, ids: np.ndarray) -> np.ndarray:
        return np.flatnonzero(np.asarray(ids) >= 0)

    def anti(self, ids: np.ndarray, null_aware: bool = False) -> np.ndarray:
        ids = np.asarray(ids)
        if not null_aware:
            return np.flatnonzero(ids < 0)
        if self.num_rows == 0:
            return np.arange(len(ids), dtype=np.int64)
        if self.has_null:
            return np.zeros(0, dtype=np.int64)
        return np.flatnonzero(ids == -1)

    def build_hits(self, ids: np.ndarray) -> np.ndarray:
        ids = np.asarray(ids)
        return np.isin(self.build_ids, ids[ids >= 0]) & (self.build_ids >= 0)

    def bloom(self):
        if self._single is None or _key_kind(self.types[0]) == "decimal":
            return None
        return JoinBloom(self._single.take(pa.array(self._first)))


class JoinBloom:
    """See ``kernels.join.JoinBloom``; exact here (no false positives)."""

    def __init__(self, keys) -> None:
        if isinstance(keys, pa.ChunkedArray):
            keys = keys.combine_chunks()
        kind = _key_kind(keys.type)
        if kind not in ("word", "bytes"):
            raise TypeError(f"a join Bloom filter takes an integer-like or string key, not {keys.type}")
        self.type = _plain_type(keys.type)
        self._set = pc.unique(_canonical(keys).drop_null())
        self.num_keys = len(self._set)

    def might_contain(self, arr: pa.Array) -> pa.BooleanArray:
        if not isinstance(arr, pa.Array):
            raise TypeError(f"expected a pyarrow Array, got {type(arr).__name__}")
        if pa.types.is_run_end_encoded(arr.type):
            arr = pc.run_end_decode(arr)
        _check_compatible(self.type, arr.type)
        canon = _canonical(arr)
        found = pc.is_in(canon, value_set=self._set, skip_nulls=True)
        return pc.if_else(pc.is_null(canon), pa.scalar(None, pa.bool_()), found)
