"""A partition's ``manifest.json`` and its ``delta-<csn>[-d].json`` files: reading (checked), writing
(checksummed, atomic) and applying a delta to a manifest.

A manifest names the partition's segment files (with zone maps and checksums), their delete files,
the live WAL and two csns: ``csn``, the last statement that rewrote the partition (TRUNCATE, a DELETE
installed by a delta), and ``wal_floor``: every committed statement numbered above it that wrote a
WAL record to this partition has that record in the live WAL (the ones at or below it are in
segments, or folded into the WAL's first record by a DELETE). Recovery checks the commit log's
records against it (:mod:`.verify`). Version 4 files carry a CRC32 (``files.write_checked_json``);
versions 1-3 (plain JSON, no ``wal_floor``) are still read.
"""
from __future__ import annotations

from pathlib import Path

from engine.errors import StorageCorruptionError
from engine.storage.columnstore.files import read_checked_json, write_checked_json

MANIFEST = "manifest.json"
MANIFEST_FORMAT = "canopy-partition"
# 2: segments may name a delete file; 3: per-column checksums and HLL sketches per segment (older
# manifests' segments are checked by the whole-file CRC32); 4: the file's CRC32 and ``wal_floor``.
MANIFEST_VERSION = 4
_UNCHECKED_VERSIONS = 3         # the newest version written without a checksum


def new_manifest(wal: str) -> dict:
    return {"format": MANIFEST_FORMAT, "version": MANIFEST_VERSION, "csn": 0, "wal_floor": 0,
            "wal": wal, "segments": []}


def write_manifest(directory: Path, manifest: dict) -> None:
    write_checked_json(directory / MANIFEST, dict(manifest, version=MANIFEST_VERSION))


def read_manifest(directory: Path) -> dict:
    """The partition's manifest, checked: its CRC32 (version 4), format, version and shape.
    :class:`StorageCorruptionError` when it fails; FileNotFoundError when there is none."""
    path = directory / MANIFEST
    manifest, checked = read_checked_json(path, "manifest")
    version = manifest.get("version")
    if manifest.get("format") != MANIFEST_FORMAT or not isinstance(version, int) or version > MANIFEST_VERSION \
            or (not checked and version > _UNCHECKED_VERSIONS):
        raise StorageCorruptionError(f"manifest {path} is corrupt: unknown format or version {version!r}", path)
    segments = manifest.get("segments")
    if not (isinstance(manifest.get("wal"), str) and isinstance(manifest.get("csn"), int)
            and isinstance(segments, list)
            and all(isinstance(s, dict) and isinstance(s.get("file"), str) and isinstance(s.get("rows"), int)
                    for s in segments)):
        raise StorageCorruptionError(f"manifest {path} is corrupt: fields missing or of the wrong type", path)
    if not checked:
        manifest.setdefault("wal_floor", None)       # unknown: written before the commit log named partitions
    return manifest


def delta_csn(path: Path) -> int:
    """The csn a delta file's name carries (``delta-<csn>.json``, ``delta-<csn>-d.json``)."""
    return int(path.name[len("delta-"):-len(".json")].split("-")[0])


def write_delta(path: Path, delta: dict) -> None:
    write_checked_json(path, delta)


def read_delta(path: Path) -> dict:
    delta, _ = read_checked_json(path, "delta")
    if delta.get("kind") not in ("add", "replace", "delete") or not isinstance(delta.get("csn"), int):
        raise StorageCorruptionError(f"delta {path} is corrupt: fields missing or of the wrong type", path)
    return delta


def delta_files(delta: dict) -> list[str]:
    """The files a delta names (each must exist until the delta is installed)."""
    names = [s["file"] for s in delta.get("segments", ())] + [e["deletes"] for e in delta.get("deletes", ())]
    return names + ([delta["wal"]] if "wal" in delta and delta["kind"] == "delete" else [])


def apply_delta(manifest: dict, delta: dict) -> dict:
    """``manifest`` with the committed ``delta`` installed (idempotent: recovery may redo it)."""
    if delta["kind"] == "delete":
        # Statements that delete hold the commit lock exclusively, so every csn below theirs is
        # installed already; the delta names whole bitmaps, so redoing it is idempotent anyway.
        if delta["csn"] <= manifest["csn"]:
            return manifest
        marks = {e["file"]: e for e in delta["deletes"]}
        segments = [dict(s, deleted=marks[s["file"]]["deleted"], deletes=marks[s["file"]]["deletes"],
                         deletes_crc32=marks[s["file"]]["deletes_crc32"]) if s["file"] in marks else s
                    for s in manifest["segments"]]
        out = dict(manifest, csn=delta["csn"], segments=segments, version=MANIFEST_VERSION)
        if "wal" in delta:
            # the new WAL's first record (under this csn) holds every earlier statement's kept rows
            out.update(wal=delta["wal"], wal_floor=delta["csn"] - 1)
        return out
    if delta["kind"] == "replace":
        if delta["csn"] <= manifest["csn"]:
            return manifest
        return dict(manifest, csn=delta["csn"], wal=delta["wal"], wal_floor=delta["csn"] - 1,
                    segments=list(delta["segments"]))
    # An add is idempotent by file name and leaves "csn" (the last rewrite) alone: concurrent inserts
    # may install out of csn order, and recovery must redo an older one after a newer one.
    if delta["csn"] < manifest["csn"]:
        return manifest
    present = {s["file"] for s in manifest["segments"]}
    added = [s for s in delta["segments"] if s["file"] not in present]
    # "applied": the newest statement installed here (checked against the commit log's end)
    return dict(manifest, segments=manifest["segments"] + added, applied=max(manifest.get("applied", 0), delta["csn"]))
