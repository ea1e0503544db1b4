"""Ray actor shells around the same :class:`cluster.leaf.Leaf` code the embedded runner uses.

A :class:`LeafActor` owns the partitions of one leaf (in-memory partition stores inside the actor process)
and a copy of every reference table. It receives encoded StageSpecs and exchange payloads, runs one task
with ``Leaf``, and returns its output already split per destination as transport payloads. No planning,
no SQL, no live operators cross the actor boundary.

The :class:`AggregatorActor` is the deployment's registry: its shape (leaves, partitions per leaf) and
the catalog as the last driver left it, so a second driver can reconnect by name. Queries' once-only
stages run in the driver (the driver is the aggregator); the actor only keeps state.

These classes are plain Python; :mod:`cluster.ray_runner` wraps them with ``ray.remote`` so that this
module imports without Ray.
"""
from __future__ import annotations

import os
import socket
import threading
import time
from typing import Any, Optional, Sequence

import pyarrow as pa
import pyarrow.compute as pc

import kernels
from cluster import transport
from cluster.leaf import Leaf
from engine.errors import CanopyInternalError, ExecutionError
from engine.exec.stages import decode_stage

# What a consumer task reads: [(stage id, number of payloads)], the payloads following as arguments.
Layout = Sequence[tuple[int, int]]


class LeafActor:
    def __init__(self, leaf_id: int, partitions: Sequence[int], restarted: bool = False,
                 debug_task_delay_s: float = 0.0):
        self.leaf = Leaf(leaf_id, partitions)
        self.restarted = restarted
        self.debug_task_delay_s = debug_task_delay_s
        self._pending: dict[str, list] = {}        # write transactions prepared, not yet committed
        self._cancelled: set[str] = set()
        self._lock = threading.Lock()

    # -- control ----------------------------------------------------------------------------------
    def ping(self) -> dict:
        return {"leaf": self.leaf.leaf_id, "pid": os.getpid(), "host": socket.gethostname(),
                "restarted": self.restarted}

    def cancel(self, query_id: str) -> None:
        """Ask the running task of ``query_id`` to stop at its next batch."""
        with self._lock:
            self._cancelled.add(query_id)

    # -- tables -----------------------------------------------------------------------------------
    def create_table(self, table_id: int, schema: pa.Schema, keys: Sequence[Optional[int]]) -> None:
        self.leaf.storage.create(table_id, schema, keys)

    def drop_table(self, table_id: int) -> None:
        self.leaf.storage.drop(table_id)

    def prepare_write(self, txn: str, table_id: int, pieces: Sequence[tuple[Optional[int], list]],
                      replace: bool) -> None:
        """Check that every target store exists and hold the pieces until ``commit_write``."""
        stores = {key: self._store(table_id, key) for key, _ in pieces}
        self._pending[txn] = [(stores[key], batches, replace) for key, batches in pieces]

    def commit_write(self, txn: str) -> None:
        for store, batches, replace in self._pending.pop(txn, ()):
            if replace:
                store.replace(batches)
            else:
                for batch in batches:
                    store.append(batch)

    def abort_write(self, txn: str) -> None:
        self._pending.pop(txn, None)

    def row_count(self, table_id: int, keys: Sequence[Optional[int]]) -> int:
        return sum(self._store(table_id, key).row_count() for key in keys)

    def distinct_values(self, table_id: int, keys: Sequence[Optional[int]], column: str) -> pa.Array:
        chunks = [b.column(0) for key in keys for b in self._store(table_id, key).scan([column])]
        if not chunks:
            return pa.array([])
        return pc.unique(pa.chunked_array(chunks).combine_chunks()).drop_null()

    def map_column(self, table_id: int, keys: Sequence[Optional[int]], column: str, type_: pa.DataType,
                   fn) -> list[Any]:
        out = []
        for key in keys:
            chunks = [b.column(0) for b in self._store(table_id, key).scan([column])]
            out.append(fn(pa.chunked_array(chunks, type=type_)))
        return out

    def _store(self, table_id: int, key: Optional[int]):
        try:
            return self.leaf.storage.store(table_id, key)
        except CanopyInternalError as error:
            raise self._lost(error) from None

    def _lost(self, error: Exception) -> Exception:
        if not self.restarted:
            return error
        return ExecutionError(
            f"leaf {self.leaf.leaf_id} was restarted after a crash and lost its in-memory partitions "
            f"({error}); in-memory storage is not durable: drop and reload the table")

    # -- queries ----------------------------------------------------------------------------------
    def run_task(self, query_id: str, stage_bytes: bytes, task: int, num_partitions: int, params: Sequence,
                 output: dict, layout: Layout, *payloads) -> tuple:
        """Run one task of a stage; return ``(meta, payload per destination...)``.

        ``output``: ``kind`` (gather | broadcast | repartition | None for a final stage run here),
        ``keys``, ``destinations`` and ``partitions_per_leaf`` (a repartitioned row goes to the leaf of
        its partition, ``partition // partitions_per_leaf``), plus the transport options.
        """
        started = time.perf_counter()
        while time.perf_counter() - started < self.debug_task_delay_s:
            self._check_cancel(query_id)
            time.sleep(0.01)
        stage = decode_stage(stage_bytes)
        inputs: dict[int, list[pa.RecordBatch]] = {}
        position = 0
        for stage_id, count in layout:
            for payload in payloads[position:position + count]:
                inputs.setdefault(stage_id, []).extend(transport.decode(payload))
            position += count
        try:
            self._check_cancel(query_id)
            batches = self.leaf.task_batches(stage, task, num_partitions, params, inputs)
            result = route(batches, stage.root.schema, output, lambda: self._check_cancel(query_id))
        except CanopyInternalError as error:
            raise self._lost(error) from None
        finally:
            with self._lock:
                self._cancelled.discard(query_id)
        sent, counters = result
        meta = {"leaf": self.leaf.leaf_id, "stage": stage.stage_id, "task": task,
                "seconds": time.perf_counter() - started, "links": counters}
        return (meta, *sent)

    def _check_cancel(self, query_id: str) -> None:
        if query_id in self._cancelled:
            raise ExecutionError(f"query cancelled on leaf {self.leaf.leaf_id}")


def route(batches, schema: pa.Schema, output: dict, check=None) -> tuple[list[bytes], list[dict]]:
    """Send a task's output batches through a :class:`transport.Sender` by the stage's exchange; return
    the payloads (one per destination) and the per-link counters."""
    kind = output["kind"]
    destinations = output["destinations"]
    sender = transport.Sender(schema, destinations, compression=output.get("compression", "adaptive"),
                              compress_after=output.get("compress_after", transport.COMPRESS_AFTER),
                              throttle_bytes_per_s=output.get("throttle_bytes_per_s"))
    try:
        for batch in batches:
            if check is not None:
                check()
            if kind == "repartition":
                ppl = output["partitions_per_leaf"]
                pieces = kernels.split_batch(batch, list(output["keys"]), destinations * ppl)
                for partition, piece in enumerate(pieces):
                    sender.send(partition // ppl, piece)
            else:                           # gather, broadcast, a final stage: one destination
                sender.send(0, batch)
        sent = sender.finish()
    except BaseException:
        sender.abort()
        raise
    return sent, [vars(c) for c in sender.counters]


class AggregatorActor:
    """The deployment's registry: shape, leaf names and the catalog a reconnecting driver picks up."""

    def __init__(self, info: dict):
        self.info = dict(info)
        self.catalog_state: Optional[bytes] = None

    def describe(self) -> dict:
        return dict(self.info)

    def save_catalog(self, state: bytes) -> None:
        self.catalog_state = state

    def load_catalog(self) -> Optional[bytes]:
        return self.catalog_state
