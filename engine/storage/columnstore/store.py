"""A durable partition: segments + an in-memory write buffer backed by a WAL, under one manifest.

Directory of one partition::

    manifest.json          the current state: segment files with zone maps, the live WAL file, format version
    seg-<id>.arrow         immutable segments (:mod:`.segment`)
    wal-<id>.log           the WAL of the rows in the write buffer (:mod:`.wal`)
    delta-<csn>.json       a prepared-but-not-installed change (new segments; for a rewrite, a new WAL)

Every change of ``manifest.json`` is an atomic replace, and a file is deleted only after the manifest
that stopped naming it is durable, so a crash at any point leaves a manifest whose files all exist.
Opening a partition redoes the deltas of committed statements (in csn order), drops the others,
replays the WAL records of committed statements into the buffer, truncates a torn WAL tail and deletes
files no manifest names.
"""
from __future__ import annotations

import json
import os
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional, Sequence

import pyarrow as pa

from engine.storage.columnstore.files import SyncedAppendFile, fsync_dir, write_atomic
from engine.storage.columnstore.segment import (Segment, SegmentInfo, StorageCorruptionError, sort_rows,
                                                write_segment)
from engine.storage.columnstore.wal import WAL_MAGIC, decode_batches, encode_batches, encode_record, read_records
from engine.storage.interface import PartitionStore

MANIFEST = "manifest.json"
MANIFEST_FORMAT = "canopy-partition"
MANIFEST_VERSION = 1
_COALESCE_BATCHES = 64       # write-buffer batches concatenated once this many small ones pile up


@dataclass(frozen=True)
class StoreOptions:
    segment_rows: int = 1 << 20       # rows per segment at most
    flush_rows: int = 1 << 17         # the write buffer becomes a segment past this many rows
    chunk_rows: int = 1 << 16         # rows per record batch inside a segment file
    merge_segments: int = 4           # merge when this many segments are under half of segment_rows

    @classmethod
    def from_options(cls, options: dict) -> "StoreOptions":
        known = {k: options.pop(k) for k in list(options) if k in cls.__dataclass_fields__}
        return cls(**known)


def _new_name(prefix: str, suffix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:16]}{suffix}"


class ColumnstorePartitionStore(PartitionStore):
    """One partition of one table on disk. Writes go through ``committer`` transactions (see
    :mod:`.commit`); ``append``/``replace`` called directly are one-partition transactions."""

    def __init__(self, directory: Path, schema: pa.Schema, sort_key: Sequence[str], options: StoreOptions,
                 committer, committed: frozenset[int] = frozenset()):
        self.directory = Path(directory)
        self.schema = schema
        self.sort_key = tuple(sort_key)
        self.options = options
        self.committer = committer
        self._lock = threading.Lock()
        self.directory.mkdir(parents=True, exist_ok=True)
        manifest_path = self.directory / MANIFEST
        if manifest_path.exists():
            manifest = self._read_manifest()
        else:
            manifest = {"format": MANIFEST_FORMAT, "version": MANIFEST_VERSION, "csn": 0,
                        "wal": _new_name("wal", ".log"), "segments": []}
            write_atomic(manifest_path, json.dumps(manifest).encode())
        self._manifest = self._recover_deltas(manifest, committed)
        self._segments = tuple(Segment(self.directory, SegmentInfo.from_json(s, schema), schema)
                               for s in self._manifest["segments"])
        self.csns_seen = {self._manifest["csn"]}
        self.wal_csns: set[int] = set()
        self._buffer: tuple[pa.RecordBatch, ...] = ()
        self._buffer_rows = 0
        wal_path = self.directory / self._manifest["wal"]
        records, valid = read_records(wal_path, (WAL_MAGIC,))
        for _, csn, payload in records:
            self.csns_seen.add(csn)
            if csn in committed:
                self.wal_csns.add(csn)
                self._buffer_add(decode_batches(payload))
        self._wal = SyncedAppendFile(wal_path, truncate_to=valid)   # drops a torn tail
        self._remove_unnamed_files()

    # -- recovery ---------------------------------------------------------------------------------
    def _read_manifest(self) -> dict:
        path = self.directory / MANIFEST
        try:
            manifest = json.loads(path.read_text())
        except ValueError as error:
            raise StorageCorruptionError(f"manifest {path} cannot be read: {error}") from None
        if manifest.get("format") != MANIFEST_FORMAT or manifest.get("version", 0) > MANIFEST_VERSION:
            raise StorageCorruptionError(f"manifest {path}: unknown format or version {manifest.get('version')}")
        return manifest

    def _recover_deltas(self, manifest: dict, committed: frozenset[int]) -> dict:
        deltas = sorted(self.directory.glob("delta-*.json"), key=lambda p: int(p.stem.split("-")[1]))
        for path in deltas:
            csn = int(path.stem.split("-")[1])
            if csn in committed:
                delta = json.loads(path.read_text())      # written atomically before the commit record
                manifest = _apply_delta(manifest, delta)
                write_atomic(self.directory / MANIFEST, json.dumps(manifest).encode())
            path.unlink()
        return manifest

    def _remove_unnamed_files(self) -> None:
        named = {s["file"] for s in self._manifest["segments"]} | {self._manifest["wal"], MANIFEST}
        for path in self.directory.iterdir():
            if path.name not in named and not path.name.startswith("delta-"):
                path.unlink()

    # -- PartitionStore ---------------------------------------------------------------------------
    def append(self, batch: pa.RecordBatch) -> None:
        txn = self.committer.begin()
        txn.append(self, batch)
        txn.commit()

    def replace(self, batches: Sequence[pa.RecordBatch]) -> None:
        txn = self.committer.begin()
        txn.replace(self, batches)
        txn.commit()

    def row_count(self) -> int:
        with self._lock:
            return sum(s.info.rows for s in self._segments) + self._buffer_rows

    def scan(self, columns: Optional[Sequence[str]] = None, batch_rows: Optional[int] = None,
             bounds: Optional[Sequence[tuple[str, str, object]]] = None,
             encoded: bool = False) -> Iterator[pa.RecordBatch]:
        segments, buffer = self.snapshot()
        names = list(columns) if columns is not None else self.schema.names
        for segment in segments:
            if bounds and not segment.info.may_match(bounds):
                continue
            yield from segment.batches(names, batch_rows, encoded)
        for batch in buffer:
            batch = batch.select(names)
            if batch_rows and batch.num_rows > batch_rows:
                for start in range(0, batch.num_rows, batch_rows):
                    yield batch.slice(start, batch_rows)
            else:
                yield batch

    def snapshot(self) -> tuple[tuple[Segment, ...], tuple[pa.RecordBatch, ...]]:
        """The segments and write-buffer batches a scan starting now reads (both immutable)."""
        with self._lock:
            return self._segments, self._buffer

    def segment_infos(self) -> tuple[SegmentInfo, ...]:
        with self._lock:
            return tuple(s.info for s in self._segments)

    # -- transaction phases (see commit.py) -------------------------------------------------------
    def prepare_append(self, csn: int, batches: list[pa.RecordBatch]) -> "_Prepared":
        batches = [self._conform(b) for b in batches]
        rows = sum(b.num_rows for b in batches)
        if rows >= self.options.flush_rows:           # a bulk insert goes straight to segments
            return self._prepare_delta(csn, "add", batches)
        offset = self._wal.append(encode_record(WAL_MAGIC, csn, encode_batches(self.schema, batches)))
        return _Prepared(self, csn, batches=batches, wal_offset=offset)

    def prepare_replace(self, csn: int, batches: list[pa.RecordBatch]) -> "_Prepared":
        return self._prepare_delta(csn, "replace", [self._conform(b) for b in batches])

    def _prepare_delta(self, csn: int, kind: str, batches: list[pa.RecordBatch]) -> "_Prepared":
        infos = self._write_segments(pa.Table.from_batches(batches, schema=self.schema))
        delta = {"csn": csn, "kind": kind, "segments": [i.to_json(self.schema) for i in infos]}
        if kind == "replace":
            delta["wal"] = _new_name("wal", ".log")
        path = self.directory / f"delta-{csn}.json"
        write_atomic(path, json.dumps(delta).encode())
        return _Prepared(self, csn, delta=delta, delta_path=path)

    def _write_segments(self, table: pa.Table) -> list[SegmentInfo]:
        table = sort_rows(table, self.sort_key)
        step = self.options.segment_rows
        infos = [write_segment(self.directory / _new_name("seg", ".arrow"), table.slice(start, step),
                               self.options.chunk_rows)
                 for start in range(0, table.num_rows, step)]
        if infos:
            fsync_dir(self.directory)
        return infos

    def _install(self, delta: dict) -> None:
        """Make a committed delta the partition's state (manifest first, then memory, then old files)."""
        with self._lock:
            manifest = _apply_delta(self._manifest, delta)
            write_atomic(self.directory / MANIFEST, json.dumps(manifest).encode())
            self._swap(manifest, clear_buffer=delta["kind"] == "replace")

    def _swap(self, manifest: dict, clear_buffer: bool) -> None:
        """Caller holds ``_lock`` and has made ``manifest`` durable."""
        old_segments = {s.info.file: s for s in self._segments}
        keep = {s["file"] for s in manifest["segments"]}
        self._segments = tuple(old_segments.get(s["file"]) or
                               Segment(self.directory, SegmentInfo.from_json(s, self.schema), self.schema)
                               for s in manifest["segments"])
        old_wal = self._manifest["wal"]
        self._manifest = manifest
        if clear_buffer:
            self._buffer, self._buffer_rows = (), 0
            self.wal_csns = set()
        if manifest["wal"] != old_wal:
            self._wal.close()
            self._wal = SyncedAppendFile(self.directory / manifest["wal"])
            (self.directory / old_wal).unlink(missing_ok=True)
        for name, segment in old_segments.items():
            if name not in keep:
                segment.close()         # an open scan keeps its own mapping; unlinking is safe on POSIX
                (self.directory / name).unlink(missing_ok=True)

    def _buffer_add(self, batches: list[pa.RecordBatch]) -> None:
        buffer = self._buffer + tuple(batches)
        small = [b for b in buffer if b.num_rows < self.options.chunk_rows]
        if len(small) >= _COALESCE_BATCHES:
            merged = pa.Table.from_batches(small, schema=self.schema).combine_chunks().to_batches()
            buffer = tuple(b for b in buffer if b.num_rows >= self.options.chunk_rows) + tuple(merged)
        self._buffer = buffer
        self._buffer_rows += sum(b.num_rows for b in batches)

    def _conform(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        if batch.schema.equals(self.schema):
            return batch
        return pa.RecordBatch.from_arrays(batch.columns, schema=self.schema)

    # -- maintenance (caller holds the committer's exclusive lock) --------------------------------
    def needs_maintenance(self) -> bool:
        """The buffer is past its threshold, or enough small segments wait for a merge."""
        if self._buffer_rows >= self.options.flush_rows:
            return True
        half = self.options.segment_rows // 2
        return sum(1 for s in self._segments if s.info.rows < half) >= self.options.merge_segments

    def flush(self) -> None:
        """Write the buffer as segments, start an empty WAL, then merge small segments."""
        with self._lock:
            buffer = self._buffer
        if buffer:
            infos = self._write_segments(pa.Table.from_batches(buffer, schema=self.schema))
            with self._lock:
                manifest = dict(self._manifest, wal=_new_name("wal", ".log"),
                                segments=self._manifest["segments"] + [i.to_json(self.schema) for i in infos])
                write_atomic(self.directory / MANIFEST, json.dumps(manifest).encode())
                self._swap(manifest, clear_buffer=True)
        self.merge()

    def merge(self, force: bool = False) -> int:
        """Combine segments under half of ``segment_rows`` (at least ``merge_segments`` of them, or two
        when ``force``) into full ones. Returns how many segments were merged."""
        with self._lock:
            small = [s for s in self._segments if s.info.rows < self.options.segment_rows // 2]
        if len(small) < (2 if force else self.options.merge_segments):
            return 0
        names = self.schema.names
        table = pa.Table.from_batches([b for s in small for b in s.batches(names, None)], schema=self.schema)
        infos = self._write_segments(table)
        merged = {s.info.file for s in small}
        with self._lock:
            manifest = dict(self._manifest, segments=[s for s in self._manifest["segments"] if s["file"] not in merged]
                            + [i.to_json(self.schema) for i in infos])
            write_atomic(self.directory / MANIFEST, json.dumps(manifest).encode())
            self._swap(manifest, clear_buffer=False)
        return len(small)

    def close(self) -> None:
        with self._lock:
            self._wal.close()
            for segment in self._segments:
                segment.close()


def _apply_delta(manifest: dict, delta: dict) -> dict:
    if delta["kind"] == "replace":
        if delta["csn"] <= manifest["csn"]:
            return manifest
        return dict(manifest, csn=delta["csn"], wal=delta["wal"], segments=list(delta["segments"]))
    # An add is idempotent by file name and leaves "csn" (the last rewrite) alone: concurrent inserts
    # may install out of csn order, and recovery must redo an older one after a newer one.
    if delta["csn"] < manifest["csn"]:
        return manifest
    present = {s["file"] for s in manifest["segments"]}
    added = [s for s in delta["segments"] if s["file"] not in present]
    return dict(manifest, segments=manifest["segments"] + added)


class _Prepared:
    """One partition's prepared part of a transaction."""

    def __init__(self, store: ColumnstorePartitionStore, csn: int, *, batches=None, wal_offset=0,
                 delta=None, delta_path: Optional[Path] = None):
        self.store, self.csn = store, csn
        self.batches, self.wal_offset = batches, wal_offset
        self.delta, self.delta_path = delta, delta_path

    def sync(self) -> None:
        if self.delta is None:
            self.store._wal.sync_to(self.wal_offset)

    def apply(self) -> None:
        store = self.store
        if self.delta is None:
            with store._lock:
                store._buffer_add(self.batches)
                store.wal_csns.add(self.csn)
        else:
            store._install(self.delta)
            self.delta_path.unlink(missing_ok=True)

    def abort(self) -> None:
        if self.delta is not None:          # WAL records of an uncommitted csn are ignored by recovery
            self.delta_path.unlink(missing_ok=True)
            for segment in self.delta["segments"]:
                (self.store.directory / segment["file"]).unlink(missing_ok=True)


