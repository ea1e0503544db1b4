"""Where rows live: the one placement rule both runners use for writes and for repartitioned exchanges.

A cluster has ``num_leaves`` leaves of ``partitions_per_leaf`` partitions each; partition ``p`` lives on
leaf ``p // partitions_per_leaf``. A sharded table's row goes to the partition of the hash of its shard
key (``kernels.split_batch``, the same kernel a repartition exchange uses, so a join on the shard key
needs no exchange), a string key's collation keys hashed in place of its values (as the binder keys a
join, GROUP BY or PARTITION BY on it); a keyless table's batches go whole to the partitions in turn, so
rows spread evenly; a reference table is copied to every leaf (its copy's key is ``None``).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Callable, Optional

import pyarrow as pa

import kernels
from engine.catalog import TableDef
from engine.core.collation_keys import collation_keys

# (partition, or None for a reference table's copy on every leaf; the rows that go there)
Piece = tuple[Optional[int], pa.RecordBatch]


@dataclass
class Placement:
    """The cluster's shape and the keyless tables' round-robin cursors (the only state: thread-safe)."""
    num_leaves: int
    partitions_per_leaf: int
    _cursor: dict = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def num_partitions(self) -> int:
        return self.num_leaves * self.partitions_per_leaf

    def leaf_of(self, partition: int) -> int:
        return partition // self.partitions_per_leaf

    def keys(self, table: TableDef, leaf: int) -> list[Optional[int]]:
        """The store keys of ``table`` on ``leaf``: its partitions, or ``[None]`` (a reference copy)."""
        if table.reference:
            return [None]
        return list(range(leaf * self.partitions_per_leaf, (leaf + 1) * self.partitions_per_leaf))

    def route(self, table: TableDef, batch: pa.RecordBatch) -> list[Piece]:
        """The non-empty pieces of ``batch`` with the partition each goes to (None: every leaf's copy)."""
        if table.reference:
            return [(None, batch)]
        n = self.num_partitions
        if table.shard_key:
            collations = table.shard_key_collations()
            if not any(collations):
                pieces = kernels.split_batch(batch, list(table.shard_key), n)
                return [(p, piece) for p, piece in enumerate(pieces) if piece.num_rows]
            # a string key hashes as its collation keys: 'a' and 'A' (equal under _ci) on one
            # partition, where a join's exchange of collation_key(k) sends them
            keys = [batch.column(c) if name is None else collation_keys(batch.column(c), name)
                    for c, name in zip(table.shard_key, collations)]
            indices, offsets = kernels.scatter_indices(kernels.partition_ids(kernels.hash_columns(keys), n), n)
            taken, bounds = batch.take(indices), offsets.tolist()
            return [(p, taken.slice(bounds[p], bounds[p + 1] - bounds[p])) for p in range(n)
                    if bounds[p + 1] > bounds[p]]
        with self._lock:
            partition = self._cursor.get(table.table_id, 0)
            self._cursor[table.table_id] = (partition + 1) % n
        return [(partition, batch)]

    def by_leaf(self, table: TableDef, data: "pa.Table | list[pa.RecordBatch]",
                map_: Callable = map) -> dict[int, dict[Optional[int], list[pa.RecordBatch]]]:
        """``{leaf: {partition (None: the reference copy): [batches]}}`` of ``data``'s non-empty batches
        (a reference table's batches go to every leaf). ``map_``: how the batches are routed (the
        embedded runner passes its leaf pool's)."""
        batches = [b for b in (data.to_batches() if isinstance(data, pa.Table) else data) if b.num_rows]
        placed: dict[int, dict[Optional[int], list]] = {}
        for pieces in map_(lambda batch: self.route(table, batch), batches):
            for partition, piece in pieces:
                leaves = range(self.num_leaves) if partition is None else [self.leaf_of(partition)]
                for leaf in leaves:
                    placed.setdefault(leaf, {}).setdefault(partition, []).append(piece)
        return placed

    def replacing(self, table: TableDef, placed: dict) -> dict:
        """``placed`` with every store of ``table`` named (the ones no row goes to with none): a
        replace empties them."""
        for leaf in range(self.num_leaves):
            for key in self.keys(table, leaf):
                placed.setdefault(leaf, {}).setdefault(key, [])
        return placed
