"""Per-column checksums of segment files: a scan verifies the columns it reads (and the file's
structure), a flipped byte in any column is caught when that column is read, naming the file and the
column, and segments of older manifests (no per-column checksums) fall back to the whole-file CRC32."""
from __future__ import annotations

import dataclasses
import json

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

import engine
from engine.errors import Error
from engine.storage.columnstore.layout import read_layout
from engine.storage.columnstore.segment import Segment, StorageCorruptionError, write_segment

ROWS = 3000


def _table() -> pa.Table:
    i = np.arange(ROWS)
    return pa.table({
        "sorted": pa.array(i // 100, pa.int32()),                                   # run-end
        "word": pa.array(np.array(["red", "green", "blue"])[i % 3]),                # dictionary
        "small": pa.array(1000 + (i * 7919) % 100_000, pa.int64()),                    # bit-packed
        "x": pa.array(np.random.default_rng(1).random(ROWS)),                       # plain
        "maybe": pa.array(np.where(i % 5 == 0, None, i * 1.5), pa.float64()),      # nulls
        "flag": pa.array(i % 2 == 0),
        "text": pa.array([f"row {v * 7919 % 10007}" for v in i]),
    })


@pytest.fixture()
def segment_file(tmp_path):
    table = _table()
    info = write_segment(tmp_path / "seg-1.arrow", table, chunk_rows=1000)
    assert {s.encoding for s in info.columns.values()} >= {"run_end", "dictionary", "bitpack", "plain"}
    return tmp_path, info, table


def _read(directory, info, schema, name):
    segment = Segment(directory, info, schema)
    return pa.concat_arrays([b.column(0) for b in segment.batches([name], None)])


def _flip(path, offset):
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x20
    path.write_bytes(bytes(data))


def test_layout_covers_every_byte_but_padding(segment_file):
    directory, info, _ = segment_file
    data = (directory / info.file).read_bytes()
    layout = read_layout(data, ipc.open_file(pa.BufferReader(data)).schema)
    covered = np.zeros(len(data), dtype=np.int8)
    for offset, length in layout.structure + [r for column in layout.columns for r in column]:
        covered[offset:offset + length] += 1
    assert covered.max() == 1                             # no byte counted twice
    assert len(data) - covered.sum() < 64 * 8 * 8         # only alignment padding is left out


@pytest.mark.parametrize("column", list(_table().schema.names))
def test_a_flipped_byte_in_a_column_is_caught_when_that_column_is_read(segment_file, column):
    directory, info, table = segment_file
    path = directory / info.file
    data = path.read_bytes()
    stored = ipc.open_file(pa.BufferReader(data)).schema
    layout = read_layout(data, stored)
    index = stored.get_field_index(column)
    offset, length = max(layout.columns[index], key=lambda r: r[1])
    _flip(path, offset + length // 2)
    with pytest.raises(StorageCorruptionError, match=f"{info.file} is corrupt in column '{column}'"):
        _read(directory, info, table.schema, column)
    other = next(n for n in table.schema.names if n != column)
    # the other columns are still read (and verified) without touching the corrupt one
    assert _read(directory, info, table.schema, other).equals(table.column(other).combine_chunks())


def test_a_flipped_byte_in_the_structure_is_caught(segment_file):
    directory, info, table = segment_file
    path = directory / info.file
    size = path.stat().st_size
    _flip(path, size - 40)           # inside the footer
    with pytest.raises(StorageCorruptionError, match=info.file):
        _read(directory, info, table.schema, "x")


def test_a_segment_without_column_checksums_is_checked_whole(segment_file):
    """An entry of an older manifest: one CRC32 of the file, so a flipped byte in any column fails
    every read of the file."""
    directory, info, table = segment_file
    old = dataclasses.replace(info, checksums=None)
    assert _read(directory, old, table.schema, "x").equals(table.column("x").combine_chunks())
    data = (directory / info.file).read_bytes()
    stored = ipc.open_file(pa.BufferReader(data)).schema
    offset, length = read_layout(data, stored).columns[stored.get_field_index("text")][0]
    _flip(directory / info.file, offset + length // 2)
    with pytest.raises(StorageCorruptionError, match=f"{info.file} is corrupt: CRC32"):
        _read(directory, old, table.schema, "x")


def test_a_data_directory_of_version_2_manifests_still_reads(tmp_path):
    """Manifests written before per-column checksums and sketches: read as they are, their
    segments checked by the file CRC32, their columns' first statistics from the distinct counts."""
    con = engine.connect(data_dir=str(tmp_path), flush_rows=1000, segment_rows=4000, chunk_rows=500)
    con.execute("CREATE TABLE t (a INT, b VARCHAR(10), SORT KEY (a))")
    con.load_table("t", pa.table({"a": pa.array(np.arange(5000), pa.int32()),
                                  "b": pa.array([f"v{i % 40}" for i in range(5000)])}))
    con.execute("OPTIMIZE TABLE t")
    con.close()
    manifests = sorted(tmp_path.glob("leaf-*/table-*/part-*/manifest.json"))
    for path in manifests:
        manifest = json.loads(path.read_text())["document"]        # under its checksum since version 4
        manifest["version"] = 2
        manifest.pop("wal_floor")
        for entry in manifest["segments"]:
            entry.pop("checksums")
            for column in entry["columns"].values():
                column.pop("sketch")
        path.write_text(json.dumps(manifest))
    con = engine.connect(data_dir=str(tmp_path))
    assert con.execute("SELECT COUNT(*), COUNT(DISTINCT b), SUM(a) FROM t").fetchall() == [(5000, 40, 12497500)]
    table = con.session.catalog.table("canopy", "t")
    quick = con.session.statistics.column_stats(table, "b")
    assert quick.source == "segment metadata" and quick.ndv == 40      # the segments' distinct counts
    con.close()
    segment = sorted(tmp_path.glob("leaf-*/table-*/part-*/seg-*.arrow"))[0]
    _flip(segment, segment.stat().st_size // 2)
    con = engine.connect(data_dir=str(tmp_path))
    with pytest.raises(Error, match=segment.name):
        con.execute("SELECT SUM(a) FROM t").fetchall()
    con.close()
