"""Reference hash group-by (see kernels/groupby.pyx): pyarrow's dictionary encoding and hash
aggregation define the ids, keys and aggregates the compiled kernels must reproduce."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["Factorizer", "factorize", "GroupedAggregate", "supports_group_key", "supports_aggregate",
           "DistinctCount", "estimate_distinct", "sketch_words", "count_codes"]

_WORD_TYPES = (pa.types.is_integer, pa.types.is_boolean, pa.types.is_date, pa.types.is_time,
               pa.types.is_timestamp, pa.types.is_duration)


def _plain(t: pa.DataType) -> pa.DataType:
    return t.value_type if pa.types.is_dictionary(t) else t


def supports_group_key(t: pa.DataType) -> bool:
    """See ``kernels.groupby.supports_group_key``."""
    t = _plain(t)
    return (any(check(t) for check in _WORD_TYPES) or pa.types.is_decimal128(t) or pa.types.is_string(t)
            or pa.types.is_binary(t) or pa.types.is_large_string(t) or pa.types.is_large_binary(t))


def _as_array(column) -> pa.Array:
    if isinstance(column, pa.ChunkedArray):
        return column.combine_chunks()
    if isinstance(column, pa.Array):
        return column
    raise TypeError(f"expected a pyarrow Array or ChunkedArray, got {type(column).__name__}")


def _decoded(arr: pa.Array, t: pa.DataType) -> pa.Array:
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    return arr if arr.type == t else arr.cast(t)


class Factorizer:
    """See ``kernels.groupby.Factorizer``: the distinct keys so far, re-encoded with each batch."""

    def __init__(self, types, keep_uniques: bool = True):
        self.types = [_plain(t) for t in types]
        if not self.types:
            raise ValueError("a Factorizer needs at least one key column")
        for t in self.types:
            if not supports_group_key(t):
                raise TypeError(f"cannot group by a column of type {t}")
        self._keep = keep_uniques
        self._uniques = [pa.array([], type=t) for t in self.types]
        self._key_counts = np.zeros(0, dtype=np.int64)

    @property
    def num_groups(self) -> int:
        return len(self._uniques[0])

    @property
    def memory_bytes(self) -> int:
        return sum(u.nbytes for u in self._uniques)

    def reserve(self, groups: int) -> None:
        """See ``kernels.groupby.Factorizer.reserve`` (sizes nothing here)."""
        if groups < 0:
            raise ValueError(f"groups must be >= 0, not {groups}")

    def factorize(self, columns) -> np.ndarray:
        columns = [_as_array(c) for c in columns]
        if len(columns) != len(self.types):
            raise ValueError(f"{len(columns)} key columns for a Factorizer of {len(self.types)}")
        n = len(columns[0])
        if any(len(c) != n for c in columns):
            raise ValueError("key columns differ in length")
        known = self.num_groups
        both = [pa.concat_arrays([u, _decoded(c, t)]) for u, c, t in zip(self._uniques, columns, self.types)]
        codes = np.stack([pc.dictionary_encode(b, null_encoding="encode").indices.to_numpy()
                          for b in both], axis=1) if n + known else np.empty((0, len(both)), np.int64)
        _, first, inverse = np.unique(codes, axis=0, return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")      # groups numbered by first occurrence
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        labels = rank[np.asarray(inverse).reshape(-1)]
        new_rows = np.sort(first[first >= known]) - known
        self._uniques = [pa.concat_arrays([u, _decoded(c, t).take(pa.array(new_rows, pa.int64()))])
                         for u, c, t in zip(self._uniques, columns, self.types)]
        return labels[known:].astype(np.int64)

    def count_keys(self, column) -> None:
        """See ``kernels.groupby.Factorizer.count_keys`` (same counts; groups of a dictionary column
        numbered in dictionary order, null last, as there)."""
        arr = _as_array(column)
        if len(self.types) != 1:
            raise TypeError("count_keys needs a Factorizer of one key column")
        if pa.types.is_dictionary(arr.type):
            nvalues = len(arr.dictionary)
            codes = np.where(np.asarray(arr.indices.is_valid()),
                             arr.indices.fill_null(0).to_numpy(zero_copy_only=False), nvalues)
            per_code = np.bincount(codes.astype(np.int64), minlength=nvalues + 1)
            used = np.flatnonzero(per_code)
            taken = pa.array(used, pa.int64(), mask=used == nvalues)
            ids = self.factorize([arr.dictionary.take(taken)])
            weights = per_code[used]
        else:
            ids = self.factorize([arr])
            weights = np.ones(len(ids), dtype=np.int64)
        counts = np.zeros(self.num_groups, dtype=np.int64)
        counts[:len(self._key_counts)] = self._key_counts
        np.add.at(counts, ids, weights)
        self._key_counts = counts

    def key_counts(self) -> np.ndarray:
        out = np.zeros(self.num_groups, dtype=np.int64)
        out[:len(self._key_counts)] = self._key_counts
        return out

    def uniques(self) -> list[pa.Array]:
        if not self._keep:
            raise ValueError("this Factorizer does not keep its keys")
        return list(self._uniques)


def factorize(columns):
    """See ``kernels.groupby.factorize``."""
    columns = [_as_array(c) for c in columns]
    f = Factorizer([c.type for c in columns])
    ids = f.factorize(columns)
    return ids, f.uniques()


def supports_aggregate(func: str, t) -> bool:
    """See ``kernels.groupby.supports_aggregate``."""
    if func == "count_all":
        return True
    if func == "count":
        return t is not None
    if t is None or pa.types.is_dictionary(t):
        return False
    is_int = pa.types.is_integer(t) or pa.types.is_boolean(t)
    if func == "sum":
        return is_int or pa.types.is_decimal128(t) or pa.types.is_float32(t) or pa.types.is_float64(t)
    if func in ("min", "max"):
        return (pa.types.is_integer(t) or pa.types.is_float32(t) or pa.types.is_float64(t)
                or pa.types.is_decimal128(t) or pa.types.is_date(t) or pa.types.is_timestamp(t)
                or pa.types.is_time(t) or pa.types.is_duration(t))
    return False


class GroupedAggregate:
    """See ``kernels.groupby.GroupedAggregate``: keeps every (id, value) and aggregates with Acero."""

    def __init__(self, func: str, type=None):
        if not supports_aggregate(func, type):
            raise TypeError(f"no grouped {func} over {type}")
        self.func, self.type = func, type
        self._ids: list[np.ndarray] = []
        self._values: list[pa.Array] = []
        self._groups = 0

    def reserve(self, num_groups: int) -> None:
        """See ``kernels.groupby.GroupedAggregate.reserve`` (sizes nothing here)."""
        if num_groups < 0:
            raise ValueError(f"num_groups must be >= 0, not {num_groups}")

    def update(self, ids, num_groups: int, values=None, rows: int | None = None) -> None:
        if ids is None:          # keyless: every row in group 0
            if num_groups != 1:
                raise ValueError(f"ids=None means one group, not {num_groups}")
            n = len(values) if values is not None else rows
            if n is None:
                raise ValueError("count_all without ids needs rows")
            ids = np.zeros(n, dtype=np.int64)
        ids = np.asarray(ids, dtype=np.int64)
        if num_groups < self._groups:
            raise ValueError(f"the number of groups went down from {self._groups} to {num_groups}")
        if ids.size and (ids.min() < 0 or ids.max() >= num_groups):
            raise ValueError(f"group ids outside [0, {num_groups})")
        self._groups = num_groups
        self._ids.append(ids)
        if self.func != "count_all":
            values = _as_array(values)
            if len(values) != len(ids):
                raise ValueError(f"{len(values)} values for {len(ids)} ids")
            self._values.append(values)

    def _state_type(self) -> pa.DataType:
        t = self.type
        if self.func in ("count", "count_all"):
            return pa.int64()
        if self.func == "sum":
            if pa.types.is_decimal128(t):
                return pa.decimal128(38, t.scale)
            return pa.float64() if pa.types.is_floating(t) else pa.decimal128(38, 0)
        return t

    def result(self, num_groups: int | None = None) -> pa.Array:
        g = self._groups if num_groups is None else num_groups
        ids = pa.array(np.concatenate(self._ids) if self._ids else np.empty(0, np.int64))
        if self.func == "count_all":
            counts = np.bincount(ids.to_numpy(), minlength=g).astype(np.int64)
            return pa.array(counts[:g])
        values = pa.concat_arrays(self._values) if self._values else pa.array([], type=self.type)
        if self.func == "sum":
            if pa.types.is_integer(values.type) or pa.types.is_boolean(values.type):
                if pa.types.is_boolean(values.type):
                    values = values.cast(pa.int8())
                values = values.cast(pa.decimal128(38, 0))
            elif pa.types.is_decimal128(values.type):
                # summed in 256 bits: a sum past DECIMAL(38) is an error below, not a wrap
                values = values.cast(pa.decimal256(76, values.type.scale))
            else:
                values = values.cast(pa.float64())
        func = "count" if self.func == "count" else self.func
        grouped = pa.table({"g": ids, "v": values}).group_by("g", use_threads=False).aggregate([("v", func)])
        state = np.full(g, -1, dtype=np.int64)
        state[grouped.column("g").to_numpy()] = np.arange(grouped.num_rows)
        out = grouped.column(f"v_{func}").combine_chunks().take(pa.array(state, mask=state < 0))
        if self.func == "count":
            out = out.fill_null(0)
        try:
            return out.cast(self._state_type())
        except pa.ArrowInvalid:
            raise OverflowError("DECIMAL value is out of range: a SUM does not fit DECIMAL(38)") from None


def _word_values(arr: pa.Array) -> np.ndarray:
    """Each value of an integer-like array widened to int64 (nulls as 0)."""
    t = arr.type
    if pa.types.is_boolean(t):
        arr = arr.cast(pa.int8())
    elif not pa.types.is_integer(t):
        arr = arr.view(pa.int64() if t.bit_width == 64 else pa.int32())
    return arr.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)


def _is_word(t: pa.DataType) -> bool:
    return any(check(_plain(t)) for check in _WORD_TYPES)


class DistinctCount:
    """See ``kernels.groupby.DistinctCount``: the distinct non-null values so far, by ``pc.unique``."""

    def __init__(self, type):
        if not supports_group_key(type):
            raise TypeError(f"cannot count distinct values of type {type}")
        self.type = _plain(type)
        self._uniques = pa.array([], type=self.type)

    def reserve(self, keys: int) -> None:
        if keys < 0:
            raise ValueError(f"keys must be >= 0, not {keys}")

    def add(self, column) -> None:
        arr = _as_array(column)
        if pa.types.is_dictionary(arr.type):
            arr = arr.dictionary_decode()
        if _plain(arr.type) != self.type and _is_word(arr.type) != _is_word(self.type):
            raise TypeError(f"a {arr.type} column for a DistinctCount of {self.type}")
        arr = pc.drop_null(arr if arr.type == self.type else arr.cast(self.type))
        self._uniques = pc.unique(pa.concat_arrays([self._uniques, arr]))

    @property
    def count(self) -> int:
        return len(self._uniques)


def sketch_words(keys: np.ndarray, validity, bit_offset: int, registers: np.ndarray) -> None:
    """See ``kernels.groupby.sketch_words``: the hash of kernels/reference/hashing.py rotated by 32
    bits, into kernels/reference/hll.py's registers."""
    from kernels.reference.hashing import hash_words
    from kernels.reference.hll import hll_add

    keys = np.asarray(keys, dtype=np.int64)
    if validity is not None:
        bits = np.unpackbits(np.asarray(validity, dtype=np.uint8), bitorder="little")
        keys = keys[bits[bit_offset:bit_offset + len(keys)].astype(bool)]
    h = hash_words(keys.view(np.uint64))
    hll_add((h << np.uint64(32)) | (h >> np.uint64(32)), registers)


def count_codes(codes, validity, bit_offset: int, counts) -> None:
    """See ``kernels.groupby.count_codes``: adds each valid code's rows to ``counts[code]`` and the
    null rows to ``counts[-1]``; ValueError for a valid code outside ``[0, len(counts) - 1)``."""
    codes = np.asarray(codes)
    num_values = len(counts) - 1
    if num_values < 0:
        raise ValueError("counts needs num_values + 1 slots (the last one for nulls)")
    valid = np.ones(len(codes), dtype=bool) if validity is None else \
        np.unpackbits(np.asarray(validity, dtype=np.uint8), bitorder="little")[bit_offset:bit_offset + len(codes)].astype(bool)
    present = codes[valid].astype(np.int64)
    bad = np.flatnonzero((present < 0) | (present >= num_values))
    if len(bad):
        row = np.flatnonzero(valid)[bad[0]]
        raise ValueError(f"row {row} has dictionary code {codes[row]} outside a dictionary of {num_values} entries")
    counts[:num_values] += np.bincount(present, minlength=num_values)
    counts[num_values] += len(codes) - len(present)


def estimate_distinct(columns, precision: int = 12):
    """See ``kernels.groupby.estimate_distinct`` (the same registers, so the same estimate)."""
    from kernels.reference.hll import hll_estimate

    registers = np.zeros(1 << precision, dtype=np.uint8)
    for column in columns:
        arr = _as_array(column)
        if pa.types.is_dictionary(arr.type):
            arr = arr.dictionary_decode()
        if not _is_word(arr.type):
            return None
        if len(arr):
            validity = None if arr.null_count == 0 else np.frombuffer(arr.buffers()[0], dtype=np.uint8)
            sketch_words(_word_values(arr), validity, arr.offset, registers)
    return hll_estimate(registers)
