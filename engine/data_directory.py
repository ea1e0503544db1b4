"""A ``data_dir``: what ``engine.connect(data_dir=...)`` persists, and reopening it.

Layout::

    data_dir/
      cluster.json            format version and cluster shape (leaves, partitions per leaf)
      catalog.json            the catalog (engine.catalog_store)
      statistics.json         the optimizer's column statistics (engine.catalog_store.PersistentStatistics)
      commit.log              commit records of statements (commit.CommitLog)
      LOCK                    flock()ed by the process that has the directory open
      leaf-N/table-ID/part-P  one partition (store.ColumnstorePartitionStore); part-ref: a reference copy

Opening first checks, reading only: ``cluster.json``, the catalog and the statistics (their CRC32s), the
commit log, and every partition against it (:mod:`engine.storage.columnstore.verify`); any damage but a torn tail raises
:class:`StorageCorruptionError` with every file as it was. Then it recovers: catalog; commit log (torn
tail dropped); every table's partitions (deltas redone or dropped, WAL replayed for committed csns);
then the commit log is compacted and table directories the catalog does not name are removed.
"""
from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path
from typing import Iterable

from engine.errors import ExecutionError, StorageCorruptionError
from engine.storage.columnstore.commit import CommitLog, CommitLogContents, Committer
from engine.storage.columnstore.files import read_checked_json, write_checked_json
from engine.storage.columnstore.store import StoreOptions
from engine.storage.columnstore.verify import check_partitions

FORMAT = "canopy-data-dir"
VERSION = 2                 # 2: cluster.json under a CRC32


class DataDirectory:
    def __init__(self, path, leaves: int, partitions_per_leaf: int, options: dict, verify: bool = True):
        """``verify``: check the directory before recovering it (False: a driver attaching to a
        running deployment, whose leaves opened and checked it and are writing to it now)."""
        from engine.catalog_store import PersistentCatalog, PersistentStatistics, check_statistics_file
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.options = StoreOptions.from_options(dict(options))
        unknown = set(options) - set(StoreOptions.__dataclass_fields__)
        if unknown:
            raise ValueError(f"unknown storage options {sorted(unknown)}")
        self._lock_fd = os.open(self.path / "LOCK", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock_fd)
            raise ExecutionError(f"data directory {self.path} is open in another process") from None
        try:
            self._check_shape(leaves, partitions_per_leaf)
            # read only until every check passed: a damaged directory stays as it was
            self.catalog = PersistentCatalog(self.path / "catalog.json")
            if verify:
                check_statistics_file(self.path / "statistics.json")
                log = CommitLogContents.read(self.path / "commit.log")
                log.check()
                tables = [(t.table_id, t.reference, None) for t in self.catalog.all_tables()]
                problems = check_partitions(self.path, tables, leaves, partitions_per_leaf, log)
                if problems:
                    first = problems[0]
                    others = len(problems) - 1
                    more = f" (and {others} more problem{'s' if others > 1 else ''}: python -m engine.fsck " \
                        f"{self.path})" if others else ""
                    raise StorageCorruptionError(f"{first}{more}", first.path, first.offset)
            self.catalog.create_database("canopy", if_not_exists=True)
            self.statistics = PersistentStatistics(self.path / "statistics.json", self.catalog)
            self.log = CommitLog(self.path / "commit.log")
        except BaseException:
            os.close(self._lock_fd)
            self._lock_fd = -1
            raise
        self.committer = Committer(self.log, background_merges=True)

    def _check_shape(self, leaves: int, partitions_per_leaf: int) -> None:
        path = self.path / "cluster.json"
        shape = {"leaves": leaves, "partitions_per_leaf": partitions_per_leaf}
        if path.exists():
            stored, checked = read_checked_json(path, "cluster file")
            if stored.get("format") != FORMAT or not isinstance(stored.get("version"), int) \
                    or (not checked and stored["version"] > 1):
                raise StorageCorruptionError(f"cluster file {path} is corrupt: not a Canopy data directory file", path)
            if stored["version"] > VERSION:
                raise ExecutionError(f"{path}: a Canopy data directory of a newer version ({stored['version']})")
            if {k: stored.get(k) for k in shape} != shape:
                raise ExecutionError(f"data directory {self.path} was created with leaves={stored.get('leaves')}, "
                                     f"partitions_per_leaf={stored.get('partitions_per_leaf')}; reopen it with those")
        else:
            write_checked_json(path, {"format": FORMAT, "version": VERSION, **shape})

    def leaf_dir(self, leaf: int) -> Path:
        return self.path / f"leaf-{leaf}"

    @property
    def committed(self) -> frozenset[int]:
        return frozenset(self.log.committed)

    def finish_recovery(self, stores: Iterable, table_ids: set[int]) -> None:
        """After every table's partitions are open: number new statements above every csn seen, keep
        only the commit records a WAL still needs, remove directories of tables the catalog lacks."""
        keep: set[int] = set()
        for store in stores:
            for csn in store.csns_seen:
                self.log.observe(csn)
            keep |= store.wal_csns
        self.log.compact(keep)
        for leaf_dir in self.path.glob("leaf-*"):
            for table_dir in leaf_dir.glob("table-*"):
                if int(table_dir.name.split("-")[1]) not in table_ids:
                    shutil.rmtree(table_dir, ignore_errors=True)

    def close(self) -> None:
        self.committer.close()
        self.log.close()
        if self._lock_fd >= 0:
            os.close(self._lock_fd)       # releases the flock
            self._lock_fd = -1
