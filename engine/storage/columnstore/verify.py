"""Read-only checks of a data directory's partitions against its commit log.

Run before recovery changes anything (:class:`engine.data_directory.DataDirectory`, so a damaged directory is
refused with every file as it was) and by ``python -m engine.fsck`` (which adds the segment and
delete-file checksums: ``deep``). Each problem is a :class:`StorageCorruptionError` naming the file
and, where known, the byte offset; the checks go on past one, so the list is complete.

What is checked, per partition of every table the catalog names:

* ``manifest.json`` and committed ``delta-*.json`` files parse and pass their CRC32, and every file
  they name exists (deep: segments and delete files pass their checksums too);
* the live WAL has no damage but a torn tail, and that tail is no committed statement's record;
* every committed statement whose commit record names the partition, numbered above the manifest's
  ``wal_floor``, has its record in the WAL (a record cut off or removed is caught, whatever the bytes);
* no manifest has applied, and no WAL record has seen committed, a statement numbered above the last
  one the commit log knows (records missing from the end of ``commit.log``).
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, Optional

import pyarrow as pa

from engine.errors import StorageCorruptionError
from engine.storage.columnstore.commit import CommitLogContents
from engine.storage.columnstore.manifest import (MANIFEST, apply_delta, delta_csn, delta_files, read_delta,
                                                 read_manifest)
from engine.storage.columnstore.segment import Segment, SegmentInfo, read_deletes
from engine.storage.columnstore.wal import WAL_MAGICS, scan_log, wal_seen


def partition_dirs(data_dir: Path, table_id: int, reference: bool, leaves: int,
                   partitions_per_leaf: int) -> list[Path]:
    """The partition directories of a table (``leaf-N/table-ID/part-P``; ``part-ref`` per leaf)."""
    out = []
    for leaf in range(leaves):
        parts = ["part-ref"] if reference else \
            [f"part-{p}" for p in range(leaf * partitions_per_leaf, (leaf + 1) * partitions_per_leaf)]
        out.extend(data_dir / f"leaf-{leaf}" / f"table-{table_id}" / part for part in parts)
    return out


def check_partitions(data_dir: Path, tables: Iterable[tuple[int, bool, Optional[pa.Schema]]], leaves: int,
                     partitions_per_leaf: int, log: CommitLogContents,
                     deep: bool = False) -> list[StorageCorruptionError]:
    """Problems of the partitions of ``tables`` ((table id, reference, Arrow schema: needed when
    ``deep``)) under ``data_dir``, against the commit log's contents ``log``."""
    problems: list[StorageCorruptionError] = []
    for table_id, reference, schema in tables:
        for directory in partition_dirs(data_dir, table_id, reference, leaves, partitions_per_leaf):
            problems.extend(_check_partition(directory, log, schema if deep else None))
    return problems


def _check_partition(directory: Path, log: CommitLogContents,
                     schema: Optional[pa.Schema]) -> list[StorageCorruptionError]:
    participant = "/".join(directory.parts[-3:])
    expected = {csn for csn, names in log.committed.items() if names is not None and participant in names}
    try:
        manifest = read_manifest(directory)
    except FileNotFoundError:
        if expected:
            path = directory / MANIFEST
            return [StorageCorruptionError(f"manifest {path} is missing, but the commit log names the partition "
                                           f"in statement {min(expected)}", path)]
        return []
    except StorageCorruptionError as error:
        return [error]
    problems = []
    for path in sorted(directory.glob("delta-*.json")):
        try:
            csn = delta_csn(path)
        except ValueError:
            continue                    # not a delta this version writes: recovery removes it
        if csn not in log.committed:
            continue                    # an uncommitted statement's: recovery drops it
        try:
            delta = read_delta(path)
        except StorageCorruptionError as error:
            problems.append(error)
            continue
        problems.extend(_missing(directory, delta_files(delta), f"delta {path}"))
        manifest = apply_delta(manifest, delta)
    problems.extend(_check_against_log(directory, manifest, log))
    problems.extend(_check_files(directory, manifest, schema))
    problems.extend(_check_wal(directory, manifest, log, expected))
    return problems


def _missing(directory: Path, names: Iterable[str], named_by: str) -> list[StorageCorruptionError]:
    return [StorageCorruptionError(f"{directory / name} is missing ({named_by} names it)", directory / name)
            for name in names if not (directory / name).exists()]


def _check_against_log(directory: Path, manifest: dict, log: CommitLogContents) -> list[StorageCorruptionError]:
    applied = max(manifest["csn"], manifest.get("wal_floor") or 0, manifest.get("applied", 0))
    if applied > log.high_water:
        path = directory / MANIFEST
        return [StorageCorruptionError(
            f"commit log {log.scan.path} ends at statement {log.high_water}, but {path} has applied statement "
            f"{applied}: commit records are missing", log.scan.path, log.scan.valid)]
    return []


def _check_files(directory: Path, manifest: dict, schema: Optional[pa.Schema]) -> list[StorageCorruptionError]:
    manifest_path = directory / MANIFEST
    problems = _missing(directory, [s["file"] for s in manifest["segments"]]
                        + [s["deletes"] for s in manifest["segments"] if s.get("deletes")], f"manifest {manifest_path}")
    if schema is None or problems:
        return problems
    for entry in manifest["segments"]:
        try:
            info = SegmentInfo.from_json(entry, schema)
            segment = Segment(directory, info, schema)
            segment.verify()
            if info.deletes is not None:
                read_deletes(directory / info.deletes, info.rows, info.deletes_crc32)
        except StorageCorruptionError as error:
            problems.append(error)
        except (KeyError, TypeError, ValueError) as error:
            problems.append(StorageCorruptionError(f"manifest {manifest_path}: the entry of segment "
                                                   f"{entry.get('file')} cannot be read ({error!r})", manifest_path))
    return problems


def _check_wal(directory: Path, manifest: dict, log: CommitLogContents,
               expected: set[int]) -> list[StorageCorruptionError]:
    path = directory / manifest["wal"]
    scan = scan_log(path, WAL_MAGICS)
    problems = []
    if scan.damage is not None:
        offset, what = scan.damage
        problems.append(StorageCorruptionError(f"WAL {path} is corrupt at byte {offset}: {what}", path, offset))
    elif scan.tail_csn is not None and scan.tail_csn in log.committed:
        problems.append(StorageCorruptionError(f"WAL {path} is corrupt at byte {scan.valid}: the record of "
                                               f"committed statement {scan.tail_csn} is cut short", path, scan.valid))
    seen = max((wal_seen(magic, payload) or 0 for magic, _, payload in scan.records), default=0)
    if seen > log.high_water:
        problems.append(StorageCorruptionError(
            f"commit log {log.scan.path} ends at statement {log.high_water}, but WAL {path} holds a record written "
            f"after statement {seen} committed: commit records are missing", log.scan.path, log.scan.valid))
    floor = manifest.get("wal_floor")
    if floor is not None:
        present = {csn for _, csn, _ in scan.records}
        lost = sorted(csn for csn in expected if csn > floor and csn not in present)
        if lost:
            problems.append(StorageCorruptionError(
                f"WAL {path} is corrupt at byte {scan.valid}: it lacks the records of committed statements "
                f"{lost[:5]}{' ...' if len(lost) > 5 else ''} (the commit log names this partition in them)",
                path, scan.valid))
    return problems
