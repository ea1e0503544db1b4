"""The durable columnstore of one leaf's partitions (``engine.connect(data_dir=...)``).

* :mod:`.store`    — :class:`ColumnstorePartitionStore`: segments + WAL-backed write buffer + manifest
* :mod:`.segment`  — sorted, encoded, zstd-compressed Arrow IPC segment files with CRC32 and zone maps
* :mod:`.memory_segment` — the same segments without a file (the in-memory store, ``engine.storage.memory``)
* :mod:`.encoding` — run-end / dictionary / plain per column, statistics, segment elimination
* :mod:`.manifest` — a partition's manifest and delta files: checked reads, checksummed writes
* :mod:`.wal`      — checksummed log records (partition WALs, the commit log); torn tail vs damage
* :mod:`.commit`   — statements commit atomically across partitions (prepare, sync, commit record, apply)
* :mod:`.verify`   — read-only checks of a data directory against its commit log (open, ``engine.fsck``)
* :mod:`.files`    — atomic file replacement, checksummed JSON and group-committed fsync
"""
from engine.storage.columnstore.commit import CommitLog, Committer
from engine.errors import StorageCorruptionError
from engine.storage.columnstore.store import ColumnstorePartitionStore, StoreOptions

__all__ = ["ColumnstorePartitionStore", "CommitLog", "Committer", "StorageCorruptionError", "StoreOptions"]
