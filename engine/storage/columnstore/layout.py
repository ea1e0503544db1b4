"""Where each column's bytes lie inside a segment's Arrow IPC file, for per-column checksums.

A segment keeps one CRC32 per column and one for the file's *structure* (the magic, the schema
message, every message's metadata and the footer), so a scan that reads a few columns of a wide
table verifies those columns' bytes only, still before using them, and a flipped byte anywhere that
a reader uses is caught: in a column's buffers by that column's checksum, in the structure (which
says where every buffer is) by the structure's. Bytes between buffers (alignment padding) are read
by nobody and checked by nobody.

The IPC file format (https://arrow.apache.org/docs/format/Columnar.html#ipc-file-format): ``ARROW1``
and padding, the stream's messages (each a 0xFFFFFFFF continuation marker, a metadata length, a
``Message`` flatbuffer, then the body), the ``Footer`` flatbuffer with the file offsets of every
dictionary and record batch message, its length, ``ARROW1``. A record batch's metadata lists its
buffers (offset and length inside the body) depth-first in schema order, so each top-level column's
buffers are a contiguous run of that list, of a length its type fixes (:func:`_buffer_count`); a
dictionary column's values live in a dictionary batch whose id the schema's field names.

pyarrow reads these files but does not expose buffer positions, so this module reads the few
flatbuffer tables it needs (Footer, Message, RecordBatch, DictionaryBatch, Schema, Field,
DictionaryEncoding) directly: a flatbuffer table is an offset to a vtable of field offsets.
"""
from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

_MAGIC = b"ARROW1"
_HEADER_SCHEMA, _HEADER_DICTIONARY, _HEADER_RECORD_BATCH = 1, 2, 3


class LayoutError(ValueError):
    """The file is not an Arrow IPC file this module can map (corrupt, or an unsupported type)."""


@dataclass(frozen=True)
class Layout:
    structure: list[tuple[int, int]]            # (offset, length) of the non-body bytes, in file order
    columns: list[list[tuple[int, int]]]        # per top-level column: its buffers' (offset, length)

    def structure_crc32(self, data) -> int:
        return _crc(data, self.structure)

    def column_crc32(self, data, index: int) -> int:
        return _crc(data, self.columns[index])


def _crc(data, ranges: list[tuple[int, int]]) -> int:
    """CRC32 of the bytes of ``ranges`` of ``data`` (bytes-like, or a pyarrow file with ``read_at``)."""
    crc = 0
    read_at = getattr(data, "read_at", None)
    view = None if read_at is not None else memoryview(data)
    for offset, length in ranges:
        crc = zlib.crc32(read_at(length, offset) if read_at is not None else view[offset:offset + length], crc)
    return crc


class _Table:
    """One flatbuffer table of ``buf`` at ``pos``."""

    def __init__(self, buf, pos: int):
        self.buf, self.pos = buf, pos
        vtable = pos - _i32(buf, pos)
        self._vsize = _u16(buf, vtable)
        self._vtable = vtable

    def _field(self, index: int) -> int:
        at = 4 + 2 * index
        return _u16(self.buf, self._vtable + at) if at < self._vsize else 0

    def scalar(self, index: int, fmt: str, default=0):
        off = self._field(index)
        return struct.unpack_from("<" + fmt, self.buf, self.pos + off)[0] if off else default

    def table(self, index: int) -> "_Table | None":
        off = self._field(index)
        if not off:
            return None
        at = self.pos + off
        return _Table(self.buf, at + _u32(self.buf, at))

    def vector(self, index: int) -> tuple[int, int]:
        """(position of the first element, element count); (0, 0) when absent."""
        off = self._field(index)
        if not off:
            return 0, 0
        at = self.pos + off
        start = at + _u32(self.buf, at)
        return start + 4, _u32(self.buf, start)

    def tables(self, index: int) -> list["_Table"]:
        start, count = self.vector(index)
        return [_Table(self.buf, start + 4 * i + _u32(self.buf, start + 4 * i)) for i in range(count)]


def _u16(buf, pos): return struct.unpack_from("<H", buf, pos)[0]      # noqa: E704
def _u32(buf, pos): return struct.unpack_from("<I", buf, pos)[0]      # noqa: E704
def _i32(buf, pos): return struct.unpack_from("<i", buf, pos)[0]      # noqa: E704


def _buffer_count(type_: pa.DataType) -> int:
    """Buffers a field of ``type_`` (children included) has in a record batch's buffer list."""
    if pa.types.is_dictionary(type_):
        return 2                                # validity + indices; the values are a dictionary batch
    if pa.types.is_run_end_encoded(type_):
        return _buffer_count(type_.run_end_type) + _buffer_count(type_.value_type)
    if pa.types.is_null(type_):
        return 0
    if (pa.types.is_string(type_) or pa.types.is_binary(type_) or pa.types.is_large_string(type_)
            or pa.types.is_large_binary(type_)):
        return 3
    if pa.types.is_list(type_) or pa.types.is_large_list(type_) or pa.types.is_map(type_):
        return 2 + _buffer_count(type_.value_type if not pa.types.is_map(type_) else
                                 pa.struct([type_.key_field, type_.item_field]))
    if pa.types.is_fixed_size_list(type_):
        return 1 + _buffer_count(type_.value_type)
    if pa.types.is_struct(type_):
        return 1 + sum(_buffer_count(type_.field(i).type) for i in range(type_.num_fields))
    if type_.bit_width:                         # fixed width: validity + values
        return 2
    raise LayoutError(f"no buffer layout known for type {type_}")


def _message(buf, block_offset: int) -> _Table:
    if _u32(buf, block_offset) != 0xFFFFFFFF:
        raise LayoutError(f"no message at offset {block_offset}")
    return _Table(buf, block_offset + 8 + _u32(buf, block_offset + 8))


def _blocks(footer: _Table, index: int) -> list[tuple[int, int, int]]:
    """(offset, metadata length, body length) of the footer's dictionary (1) or record batch (3) blocks."""
    start, count = footer.vector(index)
    return [struct.unpack_from("<qi4xq", footer.buf, start + 24 * i) for i in range(count)]


def _dictionary_ids(field: _Table) -> list[int]:
    """Dictionary ids of a schema field and its children (in a segment: the field's own, if any)."""
    ids = []
    encoding = field.table(4)
    if encoding is not None:
        ids.append(encoding.scalar(0, "q"))
    for child in field.tables(5):
        ids.extend(_dictionary_ids(child))
    return ids


def read_layout(data, schema: pa.Schema) -> Layout:
    """The layout of an IPC file (bytes-like, or a memory map: only its structure is read) whose
    schema as written is ``schema``. Raises :class:`LayoutError` when the bytes do not parse."""
    try:
        return _read_layout(data, schema)
    except (struct.error, IndexError, ValueError) as error:
        if isinstance(error, LayoutError):
            raise
        raise LayoutError(f"not a readable Arrow IPC file: {error}") from None


def _read_layout(data, schema: pa.Schema) -> Layout:
    read_at = getattr(data, "read_at", None)
    size = data.size() if read_at is not None else len(data)
    tail = bytes(read_at(10, size - 10)) if read_at is not None else bytes(data[size - 10:])
    if size < 18 or tail[4:] != _MAGIC:
        raise LayoutError("no Arrow file magic at the end")
    footer_length = struct.unpack_from("<i", tail)[0]
    footer_start = size - 10 - footer_length
    if footer_length <= 0 or footer_start < 8:
        raise LayoutError(f"footer length {footer_length} out of range")
    footer_bytes = bytes(read_at(footer_length, footer_start)) if read_at is not None else \
        bytes(data[footer_start:footer_start + footer_length])
    footer = _Table(footer_bytes, _u32(footer_bytes, 0))
    dictionaries, batches = _blocks(footer, 2), _blocks(footer, 3)
    counts = [_buffer_count(f.type) for f in schema]
    fields = footer.table(1).tables(1)
    if len(fields) != len(schema):
        raise LayoutError(f"footer schema has {len(fields)} fields, expected {len(schema)}")
    owner = {id_: i for i, f in enumerate(fields) for id_ in _dictionary_ids(f)}
    blocks = sorted(dictionaries + batches)
    first = blocks[0][0] if blocks else footer_start
    structure = [(0, first)]
    columns: list[list[tuple[int, int]]] = [[] for _ in schema]
    for offset, meta_length, body_length in blocks:
        if offset < first or offset + meta_length + body_length > footer_start:
            raise LayoutError(f"block at {offset} out of the file's range")
        structure.append((offset, meta_length))
        meta = bytes(read_at(meta_length, offset)) if read_at is not None else bytes(data[offset:offset + meta_length])
        message = _message(meta, 0)
        body = offset + meta_length
        kind = message.scalar(1, "B")
        header = message.table(2)
        if kind == _HEADER_DICTIONARY:
            column = owner.get(header.scalar(0, "q"))
            if column is None:
                raise LayoutError(f"dictionary batch at {offset} of no field")
            columns[column].append((body, body_length))
        elif kind == _HEADER_RECORD_BATCH:
            start, count = header.vector(2)
            if count != sum(counts):
                raise LayoutError(f"record batch at {offset} has {count} buffers, the schema {sum(counts)}")
            spans = np.frombuffer(meta, "<i8", count=2 * count, offset=start).reshape(-1, 2) if count else \
                np.zeros((0, 2), np.int64)
            if count and (spans[:, 0].min() < 0 or (spans[:, 0] + spans[:, 1]).max() > body_length):
                raise LayoutError(f"record batch at {offset}: a buffer lies outside its body")
            at = 0
            for column, n in enumerate(counts):
                columns[column].extend((body + int(o), int(l)) for o, l in spans[at:at + n] if l)
                at += n
        else:
            raise LayoutError(f"unexpected message type {kind} at {offset}")
    structure.append((footer_start, size - footer_start))
    return Layout(structure, columns)
