"""Per-leaf storage of table partitions.

:class:`PartitionStore` is the interface every storage engine implements: the in-memory store and the
durable columnstore (``engine.storage.columnstore``), both of encoded columnstore segments. A leaf owns
one store per (table, partition) it hosts.
"""
from engine.storage.interface import PartitionStore
from engine.storage.memory import MemoryPartitionStore

__all__ = ["PartitionStore", "MemoryPartitionStore"]
