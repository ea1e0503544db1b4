"""A durable partition: segments + an in-memory write buffer backed by a WAL, under one manifest.

Directory of one partition::

    manifest.json          the current state: segment files with zone maps, the live WAL file, format version
    seg-<id>.arrow         immutable segments (:mod:`.segment`)
    dels-<id>.bin          a segment's deletion bitmap (:func:`.segment.write_deletes`), named beside it
    wal-<id>.log           the WAL of the rows in the write buffer (:mod:`.wal`)
    delta-<csn>.json       a prepared-but-not-installed change (new segments; for a rewrite, a new WAL)
    delta-<csn>-d.json     a prepared DELETE: new delete files; a new WAL when buffer rows are deleted

Every change of ``manifest.json`` is an atomic replace (:mod:`.manifest`: checksummed), and a file is
deleted only after the manifest that stopped naming it is durable, so a crash at any point leaves a
manifest whose files all exist. Opening a partition redoes the deltas of committed statements (in csn
order), drops the others, replays the WAL records of committed statements into the buffer, truncates
a torn WAL tail and deletes files no manifest names. Damage (a manifest, delta or WAL record failing
its checksum, a committed WAL record cut short) raises :class:`StorageCorruptionError` before any file
is changed; a data directory is checked as a whole before its partitions open (:mod:`.verify`).
"""
from __future__ import annotations

import contextlib
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional, Sequence

import numpy as np
import pyarrow as pa

from engine.storage.columnstore.cache import DEFAULT_COLUMN_CACHE_BYTES, ColumnCache
from engine.errors import StorageCorruptionError
from engine.storage.columnstore.files import SyncedAppendFile, fsync_dir
from engine.storage.columnstore.index_files import column_of, remove_indexes, write_index
from engine.storage.columnstore.manifest import (MANIFEST, apply_delta, delta_csn, new_manifest, read_delta,
                                                 read_manifest, write_delta, write_manifest)
from engine.storage.columnstore.segment import Segment, SegmentInfo, sort_rows, write_deletes, write_segment
from engine.storage.columnstore.wal import WAL_MAGICS, decode_wal_record, encode_wal_record, scan_log
from engine.storage.interface import PartitionStore

_COALESCE_BATCHES = 64       # write-buffer batches concatenated once this many small ones pile up


@dataclass(frozen=True)
class StoreOptions:
    segment_rows: int = 1 << 20       # rows per segment at most
    flush_rows: int = 1 << 17         # the write buffer becomes a segment past this many rows
    chunk_rows: int = 1 << 16         # rows per record batch inside a segment file
    merge_segments: int = 4           # merge when this many segments are under half of segment_rows (merger.py)
    # decoded encoded columns kept in memory, shared by every partition of these options (cache.py)
    column_cache_bytes: int = DEFAULT_COLUMN_CACHE_BYTES

    def __post_init__(self):
        # Not a field: dataclasses.asdict (what a Ray leaf is sent) must not copy it.
        object.__setattr__(self, "column_cache", ColumnCache(self.column_cache_bytes))

    @classmethod
    def from_options(cls, options: dict) -> "StoreOptions":
        known = {k: options.pop(k) for k in list(options) if k in cls.__dataclass_fields__}
        return cls(**known)


def _new_name(prefix: str, suffix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:16]}{suffix}"


class ColumnstorePartitionStore(PartitionStore):
    """One partition of one table on disk. A runner's statements prepare and apply through
    ``prepare_append`` / ``prepare_replace`` / ``prepare_delete`` (see :mod:`.commit`);
    ``append``/``replace`` called directly are one-partition statements (``Committer.commit_alone``)."""

    def __init__(self, directory: Path, schema: pa.Schema, sort_key: Sequence[str], options: StoreOptions,
                 committer, committed: frozenset[int] = frozenset(), indexed: Sequence[str] = ()):
        self.directory = Path(directory)
        self.schema = schema
        self.sort_key = tuple(sort_key)
        self.options = options
        self.committer = committer
        self._lock = threading.Lock()
        # "leaf-N/table-ID/part-P": how commit records name this partition
        self.participant = "/".join(self.directory.parts[-3:])
        self.directory.mkdir(parents=True, exist_ok=True)
        try:
            manifest = read_manifest(self.directory)
        except FileNotFoundError:
            manifest = new_manifest(_new_name("wal", ".log"))
            write_manifest(self.directory, manifest)
        # everything is read and checked before recovery changes a file
        deltas = self._read_deltas(committed)
        wal_path = self.directory / _effective_wal(manifest, deltas)
        scan = scan_log(wal_path, WAL_MAGICS)
        if scan.damage is not None:
            offset, what = scan.damage
            raise StorageCorruptionError(f"WAL {wal_path} is corrupt at byte {offset}: {what}", wal_path, offset)
        if scan.tail_csn is not None and scan.tail_csn in committed:
            raise StorageCorruptionError(f"WAL {wal_path} is corrupt at byte {scan.valid}: the record of committed "
                                         f"statement {scan.tail_csn} is cut short", wal_path, scan.valid)
        try:
            segments = [SegmentInfo.from_json(s, schema) for s in _after_deltas(manifest, deltas)["segments"]]
        except (KeyError, TypeError, ValueError) as error:
            raise StorageCorruptionError(f"manifest {self.directory / MANIFEST} is corrupt: a segment entry "
                                         f"cannot be read ({error!r})", self.directory / MANIFEST) from None
        self._manifest = self._recover_deltas(manifest, deltas)
        self._segments = tuple(Segment(self.directory, info, schema, cache=options.column_cache) for info in segments)
        self.csns_seen = {self._manifest["csn"]}
        # what scans read (tests and EXPLAIN-free checks of index use): segments and rows read,
        # index lookups made; counted without a lock (a statistic, not an invariant)
        self.scan_stats = {"segments_read": 0, "rows_read": 0, "index_lookups": 0}
        self.wal_csns: set[int] = set()
        self._buffer: tuple[pa.RecordBatch, ...] = ()
        self._buffer_rows = 0
        self._pending_wal: Optional[SyncedAppendFile] = None     # a prepared DELETE's new WAL
        self._closed = False
        self._wal_top = self._manifest.get("wal_floor") or 0     # the newest csn applied to the live WAL
        for magic, csn, payload in scan.records:
            self.csns_seen.add(csn)
            if csn in committed:
                self.wal_csns.add(csn)
                self._wal_top = max(self._wal_top, csn)
                self._buffer_add(decode_wal_record(magic, payload))
        self._wal = SyncedAppendFile(wal_path, truncate_to=scan.valid if scan.torn else None)  # drops a torn tail
        # columns whose hash index segments get when written (the table's key columns, those of the
        # index files here, and each column a lookup uses): engine.storage.columnstore.index_files
        self._indexed: set[str] = {name for name in indexed if _index_column(name) in schema.names}
        self._remove_unnamed_files()

    # -- recovery ---------------------------------------------------------------------------------
    def _read_deltas(self, committed: frozenset[int]) -> list[tuple[Path, Optional[dict]]]:
        """Every delta file in csn order, read (None: of a statement that did not commit)."""
        deltas = sorted(self.directory.glob("delta-*.json"), key=delta_csn)
        return [(path, read_delta(path) if delta_csn(path) in committed else None) for path in deltas]

    def _recover_deltas(self, manifest: dict, deltas: list[tuple[Path, Optional[dict]]]) -> dict:
        for path, delta in deltas:
            if delta is not None:       # written atomically before the commit record
                manifest = apply_delta(manifest, delta)
                write_manifest(self.directory, manifest)
            path.unlink()
        return manifest

    def _remove_unnamed_files(self) -> None:
        segments = {s["file"] for s in self._manifest["segments"]}
        named = segments | {self._manifest["wal"], MANIFEST}
        named |= {s["deletes"] for s in self._manifest["segments"] if s.get("deletes")}
        for path in self.directory.iterdir():
            indexed = column_of(path.name)
            if indexed is not None and indexed[0] in segments:
                self._indexed.add(indexed[1])   # a lookup column: new segments get its index built
                continue
            if path.name not in named and not path.name.startswith("delta-"):
                path.unlink()

    # -- PartitionStore ---------------------------------------------------------------------------
    def append(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows:
            self.committer.commit_alone(self, lambda csn: self.prepare_append(csn, [batch]))

    def replace(self, batches: Sequence[pa.RecordBatch]) -> None:
        batches = [b for b in batches if b.num_rows]
        self.committer.commit_alone(self, lambda csn: self.prepare_replace(csn, batches), exclusive=True,
                                    maintain=False)

    def row_count(self) -> int:
        with self._lock:
            return sum(s.info.live_rows for s in self._segments) + self._buffer_rows

    def scan(self, columns: Optional[Sequence[str]] = None, batch_rows: Optional[int] = None,
             bounds: Optional[Sequence[tuple[str, str, object]]] = None,
             encoded: bool = False, snapshot=None, stats: Optional[dict] = None) -> Iterator[pa.RecordBatch]:
        segments, buffer = snapshot if snapshot is not None else self.snapshot()
        names = list(columns) if columns is not None else self.schema.names
        lookup = index_lookup(self.schema, bounds)
        if lookup is not None and lookup[0] not in self._indexed:
            self._indexed.add(lookup[0])
        return scan_snapshot(segments, buffer, names, batch_rows, bounds, encoded, lookup,
                             (self.scan_stats,) if stats is None else (self.scan_stats, stats))

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
        wal = self._pending_wal or self._wal      # after this statement's DELETE: the WAL it starts
        offset = wal.append(encode_wal_record(csn, self.schema, batches, self._seen()))
        return _Prepared(self, csn, batches=batches, wal_offset=offset, wal=wal)

    def prepare_replace(self, csn: int, batches: list[pa.RecordBatch]) -> "_Prepared":
        return self._prepare_delta(csn, "replace", [self._conform(b) for b in batches])

    def prepare_delete(self, csn: int, matcher, collect: bool = False) -> "_Prepared":
        """Mark the live rows ``matcher`` selects as deleted; nothing is visible until apply. The
        caller holds the committer's exclusive lock (no other statement is between prepare and apply).

        ``matcher(batch)``: a bool ndarray per decoded batch of ``matcher.columns`` (True: delete);
        ``matcher.bounds`` (optional): (column, op, value) conjuncts every matched row satisfies, for
        segment elimination. Segment rows get a new delete file per segment touched (the old bitmap
        OR the new rows) named by ``delta-<csn>-d.json``; buffer rows are deleted by starting a new
        WAL holding the buffer's kept rows under this csn. ``collect``: the prepared part keeps the
        deleted rows (all columns) in ``deleted_rows`` (UPDATE re-inserts their new versions)."""
        columns = list(matcher.columns)
        bounds = getattr(matcher, "bounds", None)
        entries, written, collected, count = [], [], [], 0
        wal_name, wal_file, kept_buffer = None, None, None
        try:
            for segment in self._segments:
                if bounds and not segment.info.may_match(bounds):
                    continue
                old = segment.deleted_mask()
                masks = [matcher(b) for b in segment.batches(columns, None, with_deleted=True)]
                hit = np.concatenate(masks) if masks else np.zeros(segment.info.rows, bool)
                if old is not None:
                    hit &= ~old
                matched = int(np.count_nonzero(hit))
                if not matched:
                    continue
                if collect:
                    rows = pa.Table.from_batches(list(segment.batches(self.schema.names, None, with_deleted=True)),
                                                 schema=self.schema)
                    collected.extend(rows.filter(pa.array(hit)).to_batches())
                new = hit if old is None else old | hit
                name = _new_name("dels", ".bin")
                written.append(name)
                crc = write_deletes(self.directory / name, new)
                entries.append({"file": segment.info.file, "deleted": int(np.count_nonzero(new)), "deletes": name,
                                "deletes_crc32": crc})
                count += matched
            masks = [matcher(b.select(columns)) for b in self._buffer]
            if any(m.any() for m in masks):
                kept_buffer = tuple(b.filter(pa.array(~m)) for b, m in zip(self._buffer, masks) if not m.all())
                for b, m in zip(self._buffer, masks):
                    count += int(np.count_nonzero(m))
                    if collect and m.any():
                        collected.append(b.filter(pa.array(m)))
                wal_name = _new_name("wal", ".log")
                written.append(wal_name)
                wal_file = SyncedAppendFile(self.directory / wal_name)
                if kept_buffer:
                    wal_file.append(encode_wal_record(csn, self.schema, list(kept_buffer), self._seen()))
                wal_file.sync()
            if not count:
                return _Prepared(self, csn, deleted=0)
            fsync_dir(self.directory)
            delta = {"csn": csn, "kind": "delete", "deletes": entries}
            if wal_name is not None:
                delta["wal"] = wal_name
            path = self.directory / f"delta-{csn}-d.json"
            write_delta(path, delta)
        except BaseException:
            if wal_file is not None:
                wal_file.close()
            for name in written:
                (self.directory / name).unlink(missing_ok=True)
            raise
        self._pending_wal = wal_file
        return _Prepared(self, csn, delta=delta, delta_path=path, deleted=count, deleted_rows=collected,
                         kept_buffer=kept_buffer, wal=wal_file, written=written, wal_record=bool(kept_buffer))

    def _prepare_delta(self, csn: int, kind: str, batches: list[pa.RecordBatch]) -> "_Prepared":
        infos = self._write_segments(pa.Table.from_batches(batches, schema=self.schema))
        delta = {"csn": csn, "kind": kind, "segments": [i.to_json(self.schema) for i in infos]}
        if kind == "replace":
            delta["wal"] = _new_name("wal", ".log")
        path = self.directory / f"delta-{csn}.json"
        write_delta(path, delta)
        return _Prepared(self, csn, delta=delta, delta_path=path)

    def _write_segments(self, table: pa.Table) -> list[SegmentInfo]:
        table = sort_rows(table, self.sort_key)
        step = self.options.segment_rows
        infos = []
        for start in range(0, table.num_rows, step):
            rows = table.slice(start, step)
            infos.append(write_segment(self.directory / _new_name("seg", ".arrow"), rows, self.options.chunk_rows))
            self._write_indexes(self.directory / infos[-1].file, rows)
        if infos:
            fsync_dir(self.directory)
        return infos

    def _write_indexes(self, path: Path, rows: pa.Table) -> None:
        """Build the hash index of each column lookups have used on this partition (a key's first
        column: every INSERT's unique check looks it up) for a segment being written (a flush, a
        merge, a bulk insert), so no lookup has to read the segment to build it."""
        if not self._indexed:
            return
        from engine.storage.hash_index import HashIndex, index_column
        for name in sorted(self._indexed):
            column, uca = index_column(name)
            if column in rows.column_names:
                index = HashIndex.build(rows.column(column).combine_chunks(), uca)
                if index is not None:
                    write_index(path, name, index)

    def _install(self, delta: dict, buffer: Optional[tuple] = None,
                 wal_file: Optional[SyncedAppendFile] = None) -> None:
        """Make a committed delta the partition's state (manifest first, then memory, then old files)."""
        with self._lock:
            manifest = apply_delta(self._manifest, delta)
            write_manifest(self.directory, manifest)
            if delta["kind"] == "replace":
                buffer = ()
            self._swap(manifest, buffer, wal_file, csn=delta["csn"])

    def _swap(self, manifest: dict, buffer: Optional[tuple] = None, wal_file: Optional[SyncedAppendFile] = None,
              csn: Optional[int] = None) -> None:
        """Caller holds ``_lock`` and has made ``manifest`` durable. ``buffer``: the write buffer's
        new batches (None: unchanged), held in ``wal_file`` (opened here when None) under ``csn``."""
        old_segments = {s.info.file: s for s in self._segments}
        keep = {s["file"] for s in manifest["segments"]}
        segments = []
        for entry in manifest["segments"]:
            previous = old_segments.get(entry["file"])
            if previous is not None and previous.info.deletes == entry.get("deletes"):
                segments.append(previous)
            else:
                segments.append(Segment(self.directory, SegmentInfo.from_json(entry, self.schema), self.schema,
                                        previous, cache=self.options.column_cache))
        kept_deletes = {s.info.deletes for s in segments}
        current_deletes = {s.info.file: s.info.deletes for s in segments}
        self._segments = tuple(segments)
        old_wal = self._manifest["wal"]
        self._manifest = manifest
        if buffer is not None:
            self._buffer, self._buffer_rows = buffer, sum(b.num_rows for b in buffer)
            self.wal_csns = {csn} if buffer and csn is not None else set()
        if manifest["wal"] != old_wal:
            self._wal_top = max(manifest.get("wal_floor") or 0, csn if buffer and csn is not None else 0)
            self._wal.close()
            self._wal = wal_file or SyncedAppendFile(self.directory / manifest["wal"])
            (self.directory / old_wal).unlink(missing_ok=True)
        for name, segment in old_segments.items():
            if segment.info.deletes is not None and segment.info.deletes not in kept_deletes:
                segment.deleted_mask()      # a scan of an older snapshot still reads it: load before unlinking
                (self.directory / segment.info.deletes).unlink(missing_ok=True)
            if name not in keep:
                segment.retire()        # unlinked once no snapshot reads it any more
            elif name in current_deletes and current_deletes[name] != segment.info.deletes:
                segment.forget_cached()     # its rows under the old delete bitmap: no new snapshot reads them

    def _seen(self) -> Optional[int]:
        """The newest csn the commit log has committed (None: this process does not keep the log)."""
        log = getattr(self.committer, "log", None)
        return log.high_committed if log is not None else None

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
    def _merge_candidates(self, segments, force: bool) -> list[Segment]:
        return merge_candidates(segments, self.options, force)

    def needs_flush(self) -> bool:
        return self._buffer_rows >= self.options.flush_rows

    def needs_merge(self) -> bool:
        with self._lock:
            return not self._closed and bool(self._merge_candidates(self._segments, force=False))

    def flush(self) -> None:
        """Write the buffer as segments and start an empty WAL (caller holds the exclusive lock).
        Nothing to do once closed (a background flush of a dropped table)."""
        with self._lock:
            if self._closed:
                return
            buffer = self._buffer
        if buffer:
            infos = self._write_segments(pa.Table.from_batches(buffer, schema=self.schema))
            with self._lock:
                # every statement applied to the old WAL is in the new segments
                floor = max(self._manifest.get("wal_floor") or 0, self._wal_top)
                manifest = dict(self._manifest, wal=_new_name("wal", ".log"), wal_floor=floor,
                                segments=self._manifest["segments"] + [i.to_json(self.schema) for i in infos])
                write_manifest(self.directory, manifest)
                self._swap(manifest, buffer=())

    def merge(self, force: bool = False, commit_lock=None, stop=None) -> int:
        """Rewrite the merge candidates (:meth:`_merge_candidates`) as full segments of their live
        rows. Returns how many segments were merged (0: none, or the merge was abandoned).

        Called either under the committer's exclusive lock (OPTIMIZE TABLE, a Ray leaf's maintenance)
        or, by the background merger, with no lock while reading and writing: then ``commit_lock``
        (the commit lock's shared side) is taken only to install the result, so no DELETE is between
        prepare and apply, and the merge is abandoned (its files removed) if a candidate changed or
        left meanwhile (a DELETE marked rows, a TRUNCATE, OPTIMIZE) or the store was closed. Readers
        are never blocked: they keep the segments of their snapshot, whose files outlive the
        manifest that stops naming them until the last reader drops them. ``stop()``: abandon early."""
        with self._lock:
            if self._closed:
                return 0
            small = self._merge_candidates(self._segments, force)
        if not small:
            return 0
        names = self.schema.names
        batches = []
        for segment in small:
            if stop is not None and stop():
                return 0
            batches.extend(segment.batches(names, None))
        infos = self._write_segments(pa.Table.from_batches(batches, schema=self.schema))
        merged = {s.info.file: s.info.deletes for s in small}
        with commit_lock() if commit_lock is not None else contextlib.nullcontext():
            with self._lock:
                current = {s.info.file: s.info.deletes for s in self._segments}
                stale = self._closed or any(f not in current or current[f] != d for f, d in merged.items())
                if not stale:
                    manifest = dict(self._manifest,
                                    segments=[s for s in self._manifest["segments"] if s["file"] not in merged]
                                    + [i.to_json(self.schema) for i in infos])
                    write_manifest(self.directory, manifest)
                    self._swap(manifest)
        if stale:
            for info in infos:
                (self.directory / info.file).unlink(missing_ok=True)
                remove_indexes(self.directory / info.file)
            return 0
        return len(small)

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Close the WAL and drop the segments: their memory maps close when the last scan (or a
        background merge still reading them) lets go of them."""
        with self._lock:
            self._closed = True
            self._wal.close()
            for segment in self._segments:
                segment.forget_cached(every=True)
            self._segments = ()


def _effective_wal(manifest: dict, deltas: list[tuple[Path, Optional[dict]]]) -> str:
    return _after_deltas(manifest, deltas)["wal"]


def _after_deltas(manifest: dict, deltas: list[tuple[Path, Optional[dict]]]) -> dict:
    for _, delta in deltas:
        if delta is not None:
            manifest = apply_delta(manifest, delta)
    return manifest


class _Prepared:
    """One partition's prepared part of a transaction: WAL rows (``batches``), a delta (new segments,
    or a DELETE's delete files and WAL), or nothing (a DELETE that matched no row here)."""

    def __init__(self, store: ColumnstorePartitionStore, csn: int, *, batches=None, wal_offset=0, wal=None,
                 delta=None, delta_path: Optional[Path] = None, deleted: int = 0, deleted_rows=(),
                 kept_buffer=None, written=(), wal_record=None):
        self.store, self.csn = store, csn
        # a WAL record of this statement is in the partition (the commit record names the partition)
        self.wal_record = wal_record if wal_record is not None else (delta is None and batches is not None)
        self.batches, self.wal_offset, self.wal = batches, wal_offset, wal
        self.delta, self.delta_path = delta, delta_path
        self.deleted, self.deleted_rows = deleted, list(deleted_rows)
        self.kept_buffer, self.written = kept_buffer, written

    def sync(self) -> None:
        if self.delta is None and self.batches is not None:
            self.wal.sync_to(self.wal_offset)

    def apply(self) -> None:
        store = self.store
        if self.delta is None:
            if self.batches is not None:
                with store._lock:
                    store._buffer_add(self.batches)
                    store.wal_csns.add(self.csn)
                    store._wal_top = max(store._wal_top, self.csn)
        elif self.delta["kind"] == "delete":
            store._pending_wal = None
            store._install(self.delta, self.kept_buffer, self.wal)
            self.delta_path.unlink(missing_ok=True)
        else:
            store._install(self.delta)
            self.delta_path.unlink(missing_ok=True)

    def abort(self) -> None:
        if self.delta is None:              # WAL records of an uncommitted csn are ignored by recovery
            return
        self.delta_path.unlink(missing_ok=True)
        if self.delta["kind"] == "delete":
            if self.store._pending_wal is self.wal:
                self.store._pending_wal = None
            if self.wal is not None:
                self.wal.close()
            for name in self.written:
                (self.store.directory / name).unlink(missing_ok=True)
            return
        for segment in self.delta["segments"]:
            (self.store.directory / segment["file"]).unlink(missing_ok=True)
            remove_indexes(self.store.directory / segment["file"])




def _index_column(name: str) -> str:
    """The column an index name (engine.storage.hash_index.index_name) indexes, without importing
    hash_index for a table with no index."""
    from engine.storage.hash_index import UCA
    return name[:-len(UCA)] if name.endswith(UCA) else name


def scan_snapshot(segments, tail, names: list[str], batch_rows: Optional[int], bounds, encoded: bool,
                  lookup: Optional[tuple[str, pa.Array]], stats: tuple[dict, ...]) -> Iterator[pa.RecordBatch]:
    """Read a store's snapshot (``segments`` then the plain ``tail`` batches), columns ``names``:
    segments whose zone maps rule out ``bounds`` are skipped, and with an index ``lookup``
    (:func:`index_lookup`) only each segment's candidate rows are read. Both stores (files and
    memory) scan through here; each of ``stats`` counts segments and rows read and lookups made (the
    store's, and the scan's own where it asked)."""
    for segment in segments:
        if bounds and not segment.info.may_match(bounds):
            continue
        index = segment.hash_index(lookup[0]) if lookup is not None else None
        if index is not None:
            # an equality on an indexed column: only this segment's candidate rows are read
            positions = index.lookup(lookup[1])
            _count(stats, "index_lookups", 1)
            if not len(positions):
                continue
            _count(stats, "segments_read", 1)
            batch = segment.rows_at(names, positions)
            if batch is not None:
                _count(stats, "rows_read", batch.num_rows)
                yield batch
            continue
        _count(stats, "segments_read", 1)
        _count(stats, "rows_read", segment.info.live_rows)
        yield from segment.batches(names, batch_rows, encoded)
    for batch in tail:          # plain batches (a write buffer): no index, every row read
        _count(stats, "rows_read", batch.num_rows)
        batch = batch.select(names)
        if batch_rows and batch.num_rows > batch_rows:
            for start in range(0, batch.num_rows, batch_rows):
                yield batch.slice(start, batch_rows)
        else:
            yield batch


def index_lookup(schema: pa.Schema, bounds) -> Optional[tuple[str, pa.Array]]:
    """(column, values) of the first ``("column", "index", values)`` bound whose values convert
    to the column's type: the planner marks equality / IN conjuncts on indexed columns so."""
    if not any(op == "index" for _, op, _ in bounds or ()):
        return None             # (hash_index imports pandas: a plain scan must not load it)
    from engine.storage.hash_index import index_column, lookup_values
    for name, op, value in bounds or ():
        column, uca = index_column(name) if op == "index" else (name, False)
        if op == "index" and column in schema.names:
            # a UCA lookup's values are 0900_ai_ci keys: strings whatever the column's type
            values = lookup_values(value, pa.string() if uca else schema.field(column).type)
            if values is not None:
                return name, values
    return None


def merge_candidates(segments, options: StoreOptions, force: bool) -> list:
    """Segments a merge rewrites (both stores): those under half of ``segment_rows`` live rows (at
    least ``merge_segments`` of them, or two when ``force``), plus those with a quarter of their rows
    deleted (``force``: any deleted row) — a merge drops deleted rows. Empty: nothing worth it."""
    half = options.segment_rows // 2
    small = [s for s in segments if s.info.live_rows < half]
    dead = [s for s in segments if s.info.deleted and (force or s.info.deleted * 4 >= s.info.rows)]
    if len(small) < (2 if force else options.merge_segments):
        small = []
    chosen = {id(s) for s in small + dead}
    return [s for s in segments if id(s) in chosen]


def _count(stats: tuple[dict, ...], key: str, n: int) -> None:
    for counters in stats:
        counters[key] += n
