"""Per-column encodings of a segment and the column statistics (zone maps) the manifest keeps.

A sorted segment's columns are stored encoded inside the Arrow IPC file, as Arrow's own encoded
array types, so a reader gets them back without a codec of ours:

* ``run_end``    — :class:`pyarrow.RunEndEncodedArray` when runs average 8 rows or more (sort-key
  columns, low-cardinality columns after the sort);
* ``dictionary`` — :class:`pyarrow.DictionaryArray` when distinct values are at most a quarter of
  the rows (and fewer than 2**16), with int8 / int16 codes where the dictionary allows;
* ``bitpack``    — integer columns that are neither, when ``max - min`` needs at most half the
  type's bits: frame-of-reference bit-packing (:func:`kernels.pack`). Arrow has no such type, so
  each IPC record batch stores the column as a binary column of the batch's length whose first slot
  holds the batch's packed words after a two-word header (base, bit width) and whose other slots are
  empty; the validity bitmap is the column's own (the first slot may be null and still hold the
  words, which Arrow allows). The field's metadata marks it and names the logical type. Segments
  decode such columns whole, per record batch, right after reading (:func:`unpack_stored`), so the
  rest of the engine never sees them;
* ``plain``      — otherwise.
"""
from __future__ import annotations

import base64
import datetime
import decimal
import math
from dataclasses import dataclass
from typing import Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import kernels

RUN_END_MIN_AVERAGE_RUN = 8
DICTIONARY_MAX_FRACTION = 0.25
DICTIONARY_MAX_VALUES = 1 << 16
_SAMPLE_ROWS = 4096
_SAMPLE_REPEATS = 0.9           # a sample this distinct or more: too many values for a dictionary
_MAX_STAT_STRING = 256          # longer strings get no min/max (a truncated max would be wrong)
BITPACK_MAX_WIDTH_FRACTION = 0.5
_BITPACK_KEY = b"canopy.encoding"
_BITPACK_TYPE_KEY = b"canopy.type"
_MASK64 = (1 << 64) - 1
# Each column of a segment keeps a HyperLogLog sketch of its values (1 KiB, ~3% error) in the
# manifest: the optimizer's first estimates of a new table merge them across segments and partitions
# (engine.stats.quick) instead of reading the column. Hashed at write time from what the encoding
# already holds: a dictionary's values, a run-end array's run values, else every value.
SKETCH_PRECISION = 10


@dataclass(frozen=True)
class ColumnStats:
    encoding: str
    min: object                 # Python value of the column's type; None: unknown or all null
    max: object
    nulls: int
    distinct: Optional[int]     # exact for run-end and dictionary columns, estimated from a sample otherwise
    # HLL registers (2**SKETCH_PRECISION bytes) of the non-null values; None in manifests written
    # before sketches were kept (version < 3) and for all-null columns
    sketch: Optional[bytes] = None

    def to_json(self, type_: pa.DataType) -> dict:
        out = {"encoding": self.encoding, "min": value_to_json(self.min, type_),
               "max": value_to_json(self.max, type_), "nulls": self.nulls, "distinct": self.distinct}
        if self.sketch is not None:     # zstd: a low-cardinality column's registers are mostly zero
            out["sketch"] = base64.b64encode(pa.compress(self.sketch, codec="zstd", asbytes=True)).decode()
        return out

    @classmethod
    def from_json(cls, data: dict, type_: pa.DataType) -> "ColumnStats":
        sketch = data.get("sketch")
        if sketch is not None:
            sketch = pa.decompress(base64.b64decode(sketch), 1 << SKETCH_PRECISION, codec="zstd", asbytes=True)
        return cls(data["encoding"], value_from_json(data["min"], type_), value_from_json(data["max"], type_),
                   data["nulls"], data.get("distinct"), sketch)


def _sketch(values: pa.Array) -> Optional[bytes]:
    """HLL registers of the non-null ``values`` (any repeats: a sketch ignores them)."""
    if values.null_count:
        values = values.drop_null()
    if not len(values):
        return None
    registers = np.zeros(1 << SKETCH_PRECISION, dtype=np.uint8)
    kernels.hll_add(kernels.hash_columns([values]), registers)
    return registers.tobytes()


def encode_column(array: pa.Array) -> tuple[pa.Array, ColumnStats]:
    """The encoded form of one segment column (a contiguous array) and its statistics.

    Min and max are taken from a run-end array's run values or a dictionary's values when the column
    gets either encoding (the same extremes; over strings a full ``min_max`` costs as much as the
    dictionary encoding itself)."""
    n = len(array)
    nulls = array.null_count
    if n == 0 or pa.types.is_null(array.type):
        return array, ColumnStats("plain", *_min_max(array), nulls, None)
    if pa.types.is_boolean(array.type):
        return array, ColumnStats("plain", *_min_max(array), nulls, None, _sketch(array))
    # runs counted by comparing neighbours (cheap); the run-end array is built only when chosen
    runs = 1 + (pc.sum(pc.not_equal(array.slice(1), array.slice(0, n - 1))).as_py() or 0) if n > 1 else 1
    if runs * RUN_END_MIN_AVERAGE_RUN <= n:
        try:
            ree = pc.run_end_encode(array, run_end_type=pa.int32())
            distinct = pc.count_distinct(ree.values, mode="only_valid").as_py()
            return ree, ColumnStats("run_end", *_min_max(ree.values), nulls, distinct, _sketch(ree.values))
        except pa.ArrowNotImplementedError:
            pass
    # a strided sample tells high-cardinality columns (hashing all of them is the slow part) apart
    sample = array.take(pa.array(range(0, n, max(1, n // _SAMPLE_ROWS)), pa.int64())) if n > _SAMPLE_ROWS else array
    sampled = pc.count_distinct(sample, mode="only_valid").as_py()
    if sampled <= len(sample) * _SAMPLE_REPEATS:
        try:
            encoded = pc.dictionary_encode(array)
        except pa.ArrowNotImplementedError:
            encoded = None
        if encoded is not None:
            distinct = len(encoded.dictionary) - (1 if nulls and encoded.dictionary.null_count else 0)
            sketch = _sketch(encoded.dictionary)
            low, high = _min_max(encoded.dictionary)
            if distinct <= n * DICTIONARY_MAX_FRACTION and distinct < DICTIONARY_MAX_VALUES:
                return narrow_indices(encoded), ColumnStats("dictionary", low, high, nulls, distinct, sketch)
            return array, ColumnStats(_plain_encoding(array, low, high), low, high, nulls, distinct, sketch)
    low, high = _min_max(array)
    estimate = min(n - nulls, round(sampled * n / max(len(sample), 1)))
    return array, ColumnStats(_plain_encoding(array, low, high), low, high, nulls, estimate, _sketch(array))


def _plain_encoding(array: pa.Array, low, high) -> str:
    """``bitpack`` for integer columns whose range needs at most half their bits, else ``plain``."""
    if not pa.types.is_integer(array.type) or low is None:
        return "plain"
    width = (high - low).bit_length()
    return "bitpack" if width <= array.type.bit_width * BITPACK_MAX_WIDTH_FRACTION else "plain"


def stored_field(field: pa.Field, stats: ColumnStats) -> pa.Field:
    """The IPC field a column with these statistics is written as (``field`` unless bit-packed)."""
    if stats.encoding != "bitpack":
        return field
    return pa.field(field.name, pa.binary(), nullable=True,
                    metadata={_BITPACK_KEY: b"bitpack", _BITPACK_TYPE_KEY: str(field.type).encode()})


def pack_stored(array: pa.Array) -> pa.Array:
    """One record batch's worth of a ``bitpack`` column as its stored binary column."""
    n, nulls = len(array), array.null_count
    validity = None
    if nulls:
        validity = pc.is_valid(array).buffers()[1]
        # slots under nulls are the caller's: fill them inside the range so they cost no bits
        low = pc.min(array)
        array = array.fill_null(low if low.is_valid else pa.scalar(0, array.type))
    values = array.to_numpy(zero_copy_only=False)
    base, width, packed = kernels.pack(values)
    data = np.concatenate([np.array([base & _MASK64, width], np.uint64), packed]).astype("<u8")
    offsets = np.full(n + 1, data.nbytes, np.int32)
    offsets[0] = 0
    return pa.Array.from_buffers(pa.binary(), n, [validity, pa.py_buffer(offsets), pa.py_buffer(data)],
                                 null_count=nulls)


def unpack_stored(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` (one whole record batch read from a segment) with its bit-packed columns decoded."""
    fields = batch.schema
    if not any(f.metadata and f.metadata.get(_BITPACK_KEY) == b"bitpack" for f in fields):
        return batch
    columns, out_fields = [], []
    for field, column in zip(fields, batch.columns):
        if field.metadata and field.metadata.get(_BITPACK_KEY) == b"bitpack":
            type_ = pa.type_for_alias(field.metadata[_BITPACK_TYPE_KEY].decode())
            column = _unpack_column(column, type_)
            field = pa.field(field.name, type_)
        columns.append(column)
        out_fields.append(field)
    return pa.RecordBatch.from_arrays(columns, schema=pa.schema(out_fields))


def _unpack_column(stored: pa.Array, type_: pa.DataType) -> pa.Array:
    n = len(stored)
    if stored.offset:
        raise ValueError("a bit-packed column must be decoded before it is sliced")
    validity, offsets, data = stored.buffers()
    start, end = np.frombuffer(offsets, np.int32, count=2)
    packed = np.frombuffer(data, np.uint8, count=int(end - start), offset=int(start))
    # the words are read in place when 8-byte aligned (an Arrow buffer's start is; a copy of a whole
    # column chunk a scan cost ~5% of a 6M-row bit-packed scan), else from an aligned copy
    words = (packed if packed.ctypes.data % 8 == 0 else packed.copy()).view("<u8")
    dtype = np.dtype(type_.to_pandas_dtype())
    base = int(words[0])
    if dtype.kind == "i" and base >= 1 << 63:
        base -= 1 << 64
    out = np.empty(n, dtype)
    kernels.unpack(base, int(words[1]), words[2:], n, out)
    return pa.Array.from_buffers(type_, n, [validity, pa.py_buffer(out)],
                                 null_count=stored.null_count)


def narrow_indices(array: pa.DictionaryArray) -> pa.DictionaryArray:
    """``array`` with the smallest signed index type its dictionary allows (int8 up to 127 values,
    int16 up to 32,767): a scan reads, and the column cache keeps, half or a quarter of the bytes
    of ``dictionary_encode``'s int32 codes."""
    values = len(array.dictionary)
    target = pa.int8() if values <= 127 else pa.int16() if values <= 32767 else None
    if target is None or array.type.index_type.bit_width <= target.bit_width:
        return array
    # safe=False here and below: the codes index the dictionary by construction, and Arrow's check
    # reads every code (~350 us a 131k-row batch, per column per batch of a scan)
    return pa.DictionaryArray.from_arrays(array.indices.cast(target), array.dictionary, safe=False)


def concat_stored(chunks: list[pa.Array], type_: pa.DataType) -> pa.Array:
    """One array of a segment column's chunks (as read: unpacked, possibly filtered), staying
    encoded: dictionary chunks sharing one dictionary (a segment's do) concatenate their narrowed
    codes; run-end chunks their runs (one run per chunk boundary at most more). No chunk: an empty
    array of the logical type ``type_``."""
    if not chunks:
        return pa.array([], type=type_)
    first = chunks[0]
    if pa.types.is_dictionary(first.type):
        dictionary = first.dictionary
        if all(c.dictionary is dictionary or c.dictionary.equals(dictionary) for c in chunks[1:]):
            indices = chunks[0].indices if len(chunks) == 1 else pa.concat_arrays([c.indices for c in chunks])
            return narrow_indices(pa.DictionaryArray.from_arrays(indices, dictionary, safe=False))
        return narrow_indices(pa.concat_arrays(chunks))
    if pa.types.is_run_end_encoded(first.type):
        run_ends, values, rows = [], [], 0
        for array in chunks:
            start, count = array.find_physical_offset(), array.find_physical_length()
            ends = pc.subtract(array.run_ends.slice(start, count), array.offset)
            ends = pc.min_element_wise(ends, len(array))       # the last run may reach past the slice
            run_ends.append(pc.add(ends, rows).cast(pa.int32()))
            values.append(array.values.slice(start, count))
            rows += len(array)
        return pa.RunEndEncodedArray.from_arrays(pa.concat_arrays(run_ends), pa.concat_arrays(values))
    return first if len(chunks) == 1 else pa.concat_arrays(chunks)


def decode_column(array: pa.Array) -> pa.Array:
    """The plain array of an encoded one (what operators downstream of a scan expect)."""
    if pa.types.is_run_end_encoded(array.type):
        return pc.run_end_decode(array)
    if pa.types.is_dictionary(array.type):
        return array.dictionary_decode()
    return array


def take_rows(array: pa.Array, positions: np.ndarray) -> pa.Array:
    """Rows ``positions`` (int64, of the logical array) of an encoded or plain array, decoded: a
    dictionary array's codes are taken, a run-end array's runs found by binary search over its run
    ends; the rest of the array is never decoded (an index lookup's few rows of a whole segment)."""
    if pa.types.is_run_end_encoded(array.type):
        # a sliced array keeps its parent's run ends and values: logical row i is physical i + offset
        runs = np.searchsorted(array.run_ends.to_numpy(), positions + array.offset, side="right")
        return decode_column(array.values.take(pa.array(runs, type=pa.int64())))
    return decode_column(array.take(pa.array(positions, type=pa.int64())))


def decode_batch(batch: pa.RecordBatch, schema: Optional[pa.Schema] = None,
                 keep: frozenset = frozenset()) -> pa.RecordBatch:
    """``batch`` with every run-end / dictionary column decoded to a plain array (fields from
    ``schema`` when given, else named as in ``batch``), but the columns named in ``keep``, as
    :func:`kept_encoded` leaves them."""
    if schema is None and not any(pa.types.is_run_end_encoded(c.type) or pa.types.is_dictionary(c.type)
                                  for c in batch.columns):
        return batch
    columns = [kept_encoded(c) if name in keep else decode_column(c) for name, c in zip(batch.schema.names, batch.columns)]
    if keep and schema is not None:
        schema = None       # a kept dictionary column's field differs from the plain schema's
    if schema is not None:
        return pa.RecordBatch.from_arrays(columns, schema=schema)
    return pa.RecordBatch.from_arrays(columns, names=batch.schema.names)


def kept_encoded(array: pa.Array) -> pa.Array:
    """A column kept encoded for a group-by: a dictionary array as it is; a run-end array as a
    dictionary array over its distinct run values (TPC-H Q1's l_linestatus runs along the sort key:
    its codes are grouped, not 6M strings keyed and hashed); any other array decoded."""
    if pa.types.is_dictionary(array.type):
        return array
    if not pa.types.is_run_end_encoded(array.type):
        return decode_column(array)
    n = len(array)
    start, count = array.find_physical_offset(), array.find_physical_length()
    ends = np.minimum(np.asarray(array.run_ends.slice(start, count)).astype(np.int64) - array.offset, n)
    lengths = np.diff(ends, prepend=0)
    coded = pc.dictionary_encode(array.values.slice(start, count))
    codes = coded.indices
    run_codes = np.asarray(codes.fill_null(0))
    mask = None
    if codes.null_count:
        mask = np.repeat(np.asarray(codes.is_null()), lengths)
    width = np.int8 if len(coded.dictionary) <= 127 else np.int16 if len(coded.dictionary) <= 32767 else np.int32
    indices = pa.array(np.repeat(run_codes.astype(width), lengths), mask=mask)
    return pa.DictionaryArray.from_arrays(indices, coded.dictionary, safe=False)


def _min_max(array: pa.Array) -> tuple[object, object]:
    if array.null_count == len(array) or not _has_order(array.type):
        return None, None
    result = pc.min_max(array)
    low, high = result["min"].as_py(), result["max"].as_py()
    if isinstance(low, float) and (math.isnan(low) or math.isnan(high)):
        return None, None
    if isinstance(low, str) and (len(low) > _MAX_STAT_STRING or len(high) > _MAX_STAT_STRING):
        return None, None
    return low, high


def _has_order(t: pa.DataType) -> bool:
    return (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)
            or pa.types.is_date(t) or pa.types.is_timestamp(t) or pa.types.is_string(t)
            or pa.types.is_large_string(t))


def value_to_json(value, type_: pa.DataType):
    if value is None:
        return None
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, datetime.date):        # datetime is a date too
        return value.isoformat()
    return value


def value_from_json(value, type_: pa.DataType):
    if value is None:
        return None
    if pa.types.is_decimal(type_):
        return decimal.Decimal(value)
    if pa.types.is_timestamp(type_):
        return datetime.datetime.fromisoformat(value)
    if pa.types.is_date(type_):
        return datetime.date.fromisoformat(value)
    return value


def may_match(stats: ColumnStats, rows: int, op: str, value) -> bool:
    """False only when no row of a segment with these statistics can satisfy ``column <op> value``
    (``op``: eq, ne, lt, le, gt, ge; ``between`` with a (low, high) pair; ``in`` with a tuple).
    NULL satisfies no comparison, so an all-NULL column matches nothing."""
    if stats.nulls == rows:
        return False
    low, high = stats.min, stats.max
    if low is None or high is None:
        return True
    try:
        if op == "eq":
            return low <= value <= high
        if op == "ne":
            return not (low == high == value)
        if op == "lt":
            return low < value
        if op == "le":
            return low <= value
        if op == "gt":
            return high > value
        if op == "ge":
            return high >= value
        if op == "between":
            return high >= value[0] and low <= value[1]
        if op == "in":
            return any(v is not None and low <= v <= high for v in value)
    except TypeError:              # a literal of another Python type than the column's: cannot prove
        return True
    return True


def filter_column(array: pa.Array, keep: np.ndarray, keep_array: pa.BooleanArray) -> pa.Array:
    """``array`` (plain, dictionary or run-end encoded) without the rows where ``keep`` is False,
    staying encoded. Arrow has no filter kernel for run-end arrays: their runs are recounted from the
    prefix sums of ``keep`` (runs left empty are dropped), so the cost grows with rows once, not runs."""
    if not pa.types.is_run_end_encoded(array.type):
        return array.filter(keep_array)
    n = len(array)
    start, count = array.find_physical_offset(), array.find_physical_length()
    ends = np.minimum(np.asarray(array.run_ends.slice(start, count)).astype(np.int64) - array.offset, n)
    kept_before = np.concatenate([np.zeros(1, np.int64), np.cumsum(keep, dtype=np.int64)])
    new_ends = kept_before[ends]
    nonempty = new_ends > np.concatenate([np.zeros(1, np.int64), new_ends[:-1]])
    values = array.values.slice(start, count).filter(pa.array(nonempty))
    return pa.RunEndEncodedArray.from_arrays(pa.array(new_ends[nonempty], array.type.run_end_type), values)
