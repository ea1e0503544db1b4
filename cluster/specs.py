"""The frozen types that cross the boundary between the driver's scheduling and a leaf's task.

``StageSpec`` (engine.exec.stages) says what a stage computes; these say how one task of it is run and
where its output goes. They are plain values (picklable, compared by value), never live operators.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import pyarrow as pa

import kernels
from engine.exec.memory import held_bytes


@dataclass(frozen=True)
class ExchangeSpec:
    """Where a stage's output goes. ``kind``: ``gather`` (to the one consuming task), ``broadcast``
    (every consuming task reads all of it), ``repartition`` (row by the hash of ``keys``, to the leaf of
    its partition, the placement rule of sharded tables), ``keep`` (each task's output stays for the
    same task of the consumers: a materialized CTE kept on its leaves) or None (a final stage).
    ``destinations``: payloads one producing task makes (a leaf each for a repartition, else one)."""
    kind: Optional[str]
    keys: tuple[str, ...] = ()
    num_leaves: int = 1
    partitions_per_leaf: int = 1

    @classmethod
    def of(cls, stage, num_leaves: int, partitions_per_leaf: int) -> "ExchangeSpec":
        return cls(stage.output_kind, tuple(stage.output_keys), num_leaves, partitions_per_leaf)

    @property
    def destinations(self) -> int:
        return self.num_leaves if self.kind == "repartition" else 1

    def split(self, batch: pa.RecordBatch) -> list[tuple[int, pa.RecordBatch]]:
        """A repartition's non-empty pieces of ``batch`` with the destination leaf of each."""
        ppl = self.partitions_per_leaf
        pieces = kernels.split_batch(batch, list(self.keys), self.num_leaves * ppl)
        return [(partition // ppl, piece) for partition, piece in enumerate(pieces) if piece.num_rows]


@dataclass(frozen=True)
class TransportOptions:
    """How a leaf encodes its exchange payloads (:mod:`cluster.transport`)."""
    compression: str = "adaptive"
    throttle_bytes_per_s: Optional[float] = None


@dataclass(frozen=True)
class TaskSpec:
    """One task of one stage as the scheduler hands it to an executor.

    ``task``: the leaf index of a parallel stage's task (0 for a once-only stage); ``inputs``: what the
    task reads, ``(producing stage id, number of payloads)`` in the order the payloads follow;
    ``deadline``: (statement_timeout ms, seconds left) or None; ``profile``: count each operator's
    output (EXPLAIN ANALYZE); ``epoch``: the snapshot epoch the task's scans read (None: the stores as
    they are now) and ``floor``, the oldest one a running query still reads (:mod:`cluster.versions`);
    ``memory_limit``: the statement's memory_limit in bytes (None: unlimited)."""
    query_id: str
    stage_id: int
    task: int
    num_partitions: int
    params: tuple
    exchange: ExchangeSpec
    inputs: tuple[tuple[int, int], ...] = ()
    transport: TransportOptions = TransportOptions()
    profile: bool = False
    epoch: Optional[int] = None
    floor: Optional[int] = None
    deadline: Optional[tuple[int, float]] = None
    memory_limit: Optional[int] = None          # bytes one query's operators may hold (engine.exec.memory)

    @classmethod
    def make(cls, **values: Any) -> "TaskSpec":
        """``TaskSpec(**values)`` without the frozen dataclass ``__init__``'s ``object.__setattr__``
        per field: a query makes one per task, and those cost about as much as running a tiny task.
        The same object (same fields, equality, pickling); every field without a default is needed."""
        missing = _TASK_REQUIRED.difference(values)
        if missing:
            raise TypeError(f"TaskSpec.make() missing {sorted(missing)}")
        spec = object.__new__(cls)
        spec.__dict__.update(_TASK_DEFAULTS)
        spec.__dict__.update(values)
        return spec


_TASK_DEFAULTS = {f.name: f.default for f in dataclasses.fields(TaskSpec) if f.default is not dataclasses.MISSING}
_TASK_REQUIRED = frozenset(f.name for f in dataclasses.fields(TaskSpec)) - set(_TASK_DEFAULTS)


@dataclass(frozen=True)
class PartitionRef:
    """One producing task's output for one destination: ``data`` (the batches in this process, or a
    Ray object ref to a transport payload) with what is known of it without fetching it: ``rows`` and
    ``nbytes`` (None where the data is still being made remotely) and the destination it is bound for."""
    destination: int
    data: Any
    rows: Optional[int] = None
    nbytes: Optional[int] = None

    @classmethod
    def of_batches(cls, destination: int, batches: Sequence[pa.RecordBatch]) -> "PartitionRef":
        batches = list(batches)
        return cls(destination, batches, sum(b.num_rows for b in batches), sum(held_bytes(b) for b in batches))
