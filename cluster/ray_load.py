"""A Ray load that streams to the leaves as it is read (``RayRunner.begin_load``): the driver routes each
parsed block with the cluster's placement and sends every leaf its rows in chunks as it goes; the
leaves stage them (``LeafActor.stage_chunk``) until the load's transaction prepares them.
"""
from __future__ import annotations

import collections
import dataclasses
import time
import uuid
from typing import TYPE_CHECKING, Optional

import pyarrow as pa
import ray
import ray.exceptions as rex

from cluster import transport
from engine.catalog import TableDef
from engine.errors import ExecutionError
from engine.runner import LoadWriter

if TYPE_CHECKING:
    from cluster.ray_runner import RayRunner


LOAD_CHUNK_ROWS = 65536     # rows a streaming load gathers for one leaf before sending them as one chunk
LOAD_MAX_OUTSTANDING = 8    # a leaf's unacknowledged chunks before the load waits for the oldest


@dataclasses.dataclass
class LoadStats:
    """What one streaming load sent to the leaves (``RayRunner.last_load``)."""
    rows: int = 0
    chunks: int = 0
    chunks_compressed: int = 0
    bytes_raw: int = 0           # Arrow IPC bytes of the chunks
    bytes_sent: int = 0          # bytes of the payloads (LZ4 where compressed)
    waits: int = 0               # times the load waited for a leaf with LOAD_MAX_OUTSTANDING chunks unacknowledged
    compression: str = "adaptive"

    @property
    def ratio(self) -> float:
        return self.bytes_raw / self.bytes_sent if self.bytes_sent else 1.0


class RayLoad(LoadWriter):
    """A load that streams to the leaves as it is read. Each added block is routed here on the driver;
    the pieces bound for one leaf wait until they make LOAD_CHUNK_ROWS rows, then go to that leaf as one
    chunk: a :mod:`cluster.transport` payload (Arrow IPC frames, one per partition) sent with
    ``stage_chunk``, which the leaf decodes and keeps under the load's id. The commit sends what is left,
    and one transaction (``RayRunner._write``) prepares the staged rows on every leaf together with those
    of ``add_related`` tables (a pipeline batch's file marks), ``on_commit`` running inside it: the rows
    and their marks become durable and visible together; ``abort`` drops the staged chunks.

    Adaptive LZ4 (MemSQL 6.7's rule, per leaf): a chunk goes compressed when more than
    ``transport.COMPRESS_AFTER`` chunks to its leaf are still unacknowledged (the link, or the leaf,
    is the bottleneck), raw otherwise; the runner's ``compression="always"|"never"`` forces either. A
    leaf with LOAD_MAX_OUTSTANDING chunks unacknowledged makes the load wait for the oldest, which bounds
    the driver's memory. ``throttle_bytes_per_s`` (the runner's transport option, a benchmark mode)
    models each leaf's link: a chunk occupies it for ``bytes / rate`` and counts as unacknowledged until
    it is across and the leaf has answered.
    """

    def __init__(self, runner: RayRunner, table: TableDef):
        super().__init__(runner, table)
        self.load_id = uuid.uuid4().hex
        leaves = runner.num_leaves
        options = runner.transport_options
        self.stats = LoadStats(compression=options["compression"])
        self._throttle = options["throttle_bytes_per_s"]
        self._held: list[dict[Optional[int], list]] = [{} for _ in range(leaves)]     # per leaf: partition -> pieces
        self._held_rows = [0] * leaves
        self._next_seq = [0] * leaves           # the number the next chunk to each leaf gets
        self._sent_rows = [0] * leaves          # rows each leaf holds for this load (sent, or on their way)
        self._unacked: list[collections.deque] = [collections.deque() for _ in range(leaves)]  # (ref, across at)
        self._wire_free_at = [0.0] * leaves     # throttled: when each leaf's modelled link is idle again

    # -- adding -------------------------------------------------------------------------------------
    def add(self, data: "pa.Table | pa.RecordBatch") -> None:
        if isinstance(data, pa.RecordBatch):
            data = pa.Table.from_batches([data])
        for leaf, pieces in self.runner._place(self.table, data).items():
            held = self._held[leaf]
            for key, batches in pieces.items():
                held.setdefault(key, []).extend(batches)
                self._held_rows[leaf] += sum(b.num_rows for b in batches)
            if self._held_rows[leaf] >= LOAD_CHUNK_ROWS:
                self._send(leaf)
        self.rows += data.num_rows

    def _send(self, leaf: int) -> None:
        """Send what waits for ``leaf`` as chunks of about LOAD_CHUNK_ROWS rows (each partition's pieces
        concatenated, then cut into as many slices as chunks, so partitions stay in their order)."""
        held, rows = self._held[leaf], self._held_rows[leaf]
        if not rows:
            return
        self._held[leaf], self._held_rows[leaf] = {}, 0
        keys = list(held)
        whole = [pa.concat_batches(held[key]) if len(held[key]) > 1 else held[key][0] for key in keys]
        del held
        count = max(1, round(rows / LOAD_CHUNK_ROWS))
        for part in range(count):
            slices = [(key, batch.slice(batch.num_rows * part // count,
                                        batch.num_rows * (part + 1) // count - batch.num_rows * part // count))
                      for key, batch in zip(keys, whole)]
            slices = [(key, batch) for key, batch in slices if batch.num_rows]
            self._send_chunk(leaf, [key for key, _ in slices], [batch for _, batch in slices])

    def _send_chunk(self, leaf: int, keys: list, batches: list[pa.RecordBatch]) -> None:
        self._reap(leaf)
        mode = self.stats.compression
        compress = mode == "always" or mode == "adaptive" and len(self._unacked[leaf]) > transport.COMPRESS_AFTER
        payload, counters = transport.encode_payload(batches, self.table.arrow_schema, compress)
        seq = self._next_seq[leaf]
        self._next_seq[leaf] += 1
        ref = self.runner.leaves[leaf].stage_chunk.remote(self.load_id, self.table.table_id, seq, keys, payload)
        del payload
        across = 0.0
        if self._throttle:
            across = self._wire_free_at[leaf] = \
                max(self._wire_free_at[leaf], time.monotonic()) + counters.bytes_sent / self._throttle
        self._unacked[leaf].append((ref, across))
        self._sent_rows[leaf] += counters.rows
        stats = self.stats
        stats.chunks += 1
        stats.chunks_compressed += counters.batches_compressed > 0
        stats.bytes_raw += counters.bytes_raw
        stats.bytes_sent += counters.bytes_sent
        while len(self._unacked[leaf]) >= LOAD_MAX_OUTSTANDING:
            stats.waits += 1
            self._settle_oldest(leaf)

    def _reap(self, leaf: int) -> None:
        """Forget the chunks to ``leaf`` that are across and acknowledged (raising a leaf's error)."""
        unacked = self._unacked[leaf]
        if not unacked:
            return
        ready, _ = ray.wait([ref for ref, _ in unacked], num_returns=len(unacked), timeout=0)
        ready = set(ready)
        now = time.monotonic()
        while unacked and unacked[0][0] in ready and unacked[0][1] <= now:
            self.get(unacked.popleft()[0], "sending")

    def _settle_oldest(self, leaf: int) -> None:
        ref, across = self._unacked[leaf].popleft()
        self.get(ref, "sending")
        time.sleep(max(0.0, across - time.monotonic()))

    def get(self, refs, doing: str):
        """``ray.get`` of the load's calls; a leaf that died fails the load naming it."""
        try:
            return ray.get(refs)
        except rex.RayActorError as error:
            self.runner._forget()           # cached counts: the leaf may have lost rows
            actor_id = getattr(error, "actor_id", None)
            leaf = self.runner._leaf_by_actor.get(
                actor_id if isinstance(actor_id, str) else getattr(actor_id, "hex", lambda: "")())
            who = f"leaf {leaf} ({self.runner.name}-leaf-{leaf})" if leaf is not None else "a leaf"
            raise ExecutionError(f"{who} died while {doing} the load into {self.table.name}: nothing of the load "
                                 f"is visible; run it again once Ray has restarted the leaf") from None
        except rex.RayError as error:
            raise self.runner._translate(error) from None

    # -- savepoints ---------------------------------------------------------------------------------
    def savepoint(self) -> tuple:
        held = [{key: (len(pieces), sum(b.num_rows for b in pieces)) for key, pieces in by_key.items()}
                for by_key in self._held]
        return self.rows, list(self._next_seq), list(self._sent_rows), held

    def rollback_to(self, savepoint: tuple) -> None:
        """Back to ``savepoint``: for a leaf that was sent chunks since, the pieces that waited here then
        went first in those chunks; the leaf keeps that many rows of each partition and drops the rest.
        Otherwise the waiting pieces are cut back here."""
        self.rows, marks, sent_rows, held = savepoint
        for leaf, mark in enumerate(marks):
            if self._next_seq[leaf] > mark:
                keep = {key: rows for key, (_, rows) in held[leaf].items()}
                ref = self.runner.leaves[leaf].rollback_staged.remote(self.load_id, mark, keep)
                self._unacked[leaf].append((ref, 0.0))
                self._held[leaf], self._held_rows[leaf] = {}, 0
                self._sent_rows[leaf] = sent_rows[leaf] + sum(keep.values())
            else:
                self._held[leaf] = {key: self._held[leaf][key][:count] for key, (count, _) in held[leaf].items()}
                self._held_rows[leaf] = sum(rows for _, rows in held[leaf].values())
                self._sent_rows[leaf] = sent_rows[leaf]

    def add_related(self, table: TableDef, data: pa.Table) -> None:
        self._related.append((table, self.runner._place(table, data), False))

    # -- the end ------------------------------------------------------------------------------------
    def staged_rows(self) -> dict[int, int]:
        """{leaf: rows it must hold} for every leaf that was sent chunks."""
        return {leaf: self._sent_rows[leaf] for leaf in range(self.runner.num_leaves) if self._next_seq[leaf]}

    def commit(self, on_commit=None) -> int:
        for leaf in range(self.runner.num_leaves):
            self._send(leaf)
        for leaf in range(self.runner.num_leaves):
            while self._unacked[leaf]:
                self._settle_oldest(leaf)
        related, self._related = self._related, []
        self.runner._write(related, on_commit=on_commit, staged=self)
        self.stats.rows = self.rows
        self.runner.last_load = self.stats
        return self.rows

    def abort(self) -> None:
        """Drop what the leaves hold of the load (the abort of its transaction drops its staged chunks
        too, should ``_write`` have started it) and what waits here."""
        for leaf in range(self.runner.num_leaves):
            if self._next_seq[leaf]:
                self.runner.leaves[leaf].drop_staged.remote(self.load_id)
        self._held = [{} for _ in range(self.runner.num_leaves)]
        self._unacked = [collections.deque() for _ in range(self.runner.num_leaves)]
        self._related = []
        self.rows = 0
