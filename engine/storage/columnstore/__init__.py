"""The durable columnstore of one leaf's partitions (``engine.connect(data_dir=...)``).

* :mod:`.store`    — :class:`ColumnstorePartitionStore`: segments + WAL-backed write buffer + manifest
* :mod:`.segment`  — sorted, encoded, zstd-compressed Arrow IPC segment files with CRC32 and zone maps
* :mod:`.encoding` — run-end / dictionary / plain per column, statistics, segment elimination
* :mod:`.wal`      — checksummed log records (partition WALs, the commit log)
* :mod:`.commit`   — statements commit atomically across partitions (prepare, sync, commit record, apply)
* :mod:`.files`    — atomic file replacement and group-committed fsync
"""
from engine.storage.columnstore.commit import CommitLog, Committer, Transaction
from engine.storage.columnstore.segment import StorageCorruptionError
from engine.storage.columnstore.store import ColumnstorePartitionStore, StoreOptions

__all__ = ["ColumnstorePartitionStore", "CommitLog", "Committer", "StorageCorruptionError", "StoreOptions",
           "Transaction"]
