"""Rows written to disk in hash partitions of their keys: the grace hash join's and the partitioned
hash aggregate's spill (not an operator; the operators that spill use it).

Rows whose keys are equal land in the same partition, so an operator whose result for a key depends
only on the rows with that key (a join, a GROUP BY) runs partition by partition, holding one at a
time. The keys are hashed by ``kernels.split_batch`` (the exchanges' hash) after casting them to one
type per key (``hash_types``), so two inputs whose key types differ only in width or encoding (INT
against BIGINT, a dictionary against plain text) put equal keys in the same partition.

The partition count is prime: the rows a task holds came through a repartition by the same hash
modulo the cluster's partition count (a power of two), which a prime count spreads evenly again.

A partition still too large for the limit when its turn comes (far more data than 61 times the
limit, or keys that hash alike) is split again, recursively, by the same hash modulo the next prime
(``PRIMES``): its rows all have one residue modulo the previous primes, which says nothing of their
residue modulo a new one, so they spread evenly again (the Chinese remainder theorem). A split that
leaves every row in one partition (one key's rows: skew that hashing cannot spread) stops the
recursion, and reading the partition fails with MemoryLimitError as before.
"""
from __future__ import annotations

from typing import Iterator, Optional, Sequence

import pyarrow as pa
import pyarrow.compute as pc

import kernels
from engine.exec.evaluate import evaluate_array
from engine.exec.memory import MemoryPool, SpillFile
from engine.exec.operators.base import conform
from engine.core.expressions import Expr

PARTITIONS = 61
PRIMES = (PARTITIONS, 67, 71, 73)       # the partition counts of the splits, level by level


def hold_or_spill(batches, memory, spill, cost=lambda batch: batch.nbytes, hold=lambda batch: batch):
    """The input's non-empty batches held, each reserved (``cost`` bytes: what holding it takes);
    when one does not fit, ``spill()`` (None: it cannot, and the reservation raises MemoryLimitError
    naming the operator and the limit) makes partitions on disk that take what was held and the rest.
    ``hold``: what is kept of a batch held in memory. Returns (held batches, None) or ([], the
    partitions)."""
    held: list = []
    spilled = None
    for batch in batches:
        if not batch.num_rows:
            continue
        if spilled is None and not memory.try_grow(cost(batch)):
            spilled = spill()
            if spilled is None:
                memory.grow(cost(batch))            # raises: the operator and the limit
            memory.free()                       # what was held moves to the spill (which accounts its own)
            for kept in held:
                spilled.add(kept)
            held = []
        if spilled is not None:
            spilled.add(batch)
        else:
            held.append(hold(batch))
    return held, spilled


def hash_type(a: pa.DataType, b: Optional[pa.DataType] = None) -> Optional[pa.DataType]:
    """The type both sides' keys are hashed as (``b``: the other side's key type, if any); None when
    they differ otherwise (the caller picks the type both cast to, as its comparison does)."""
    b = a if b is None else b
    a = a.value_type if pa.types.is_dictionary(a) else a
    b = b.value_type if pa.types.is_dictionary(b) else b
    if pa.types.is_integer(a) and pa.types.is_integer(b):
        return pa.int64()
    if all(pa.types.is_string(t) or pa.types.is_large_string(t) for t in (a, b)):
        return pa.large_string()
    return a if a == b else None


class SpillPartitions:
    """``add`` batches of ``schema``; each row goes to the file of its keys' partition. ``keys``:
    expressions over the batches (evaluated with ``params``), cast to ``hash_types`` for hashing."""

    def __init__(self, pool: MemoryPool, schema: pa.Schema, keys: Sequence[Expr], hash_types: Sequence[pa.DataType],
                 params: Sequence, partitions: Optional[int] = None, operator: str = "", level: int = 0):
        self.pool = pool
        self.operator = operator
        self.level = level              # how many splits made these partitions (PRIMES[level] of them)
        self.stuck = False              # the split that made them left every row in one: none helps
        self.schema = schema
        self.keys = tuple(keys)
        self.hash_types = tuple(hash_types)
        self.params = params
        self.files: list[Optional[SpillFile]] = [None] * (partitions or PRIMES[level])

    def add(self, batch: pa.RecordBatch) -> None:
        if not batch.num_rows:
            return
        batch = conform(batch, self.schema)
        names = list(self.schema.names)
        hashed = [f"__hash{i}" for i in range(len(self.keys))]
        columns = list(batch.columns)
        for expr, target in zip(self.keys, self.hash_types):
            values = evaluate_array(expr, batch, self.params)
            values = values if values.type == target else values.cast(target)
            if pa.types.is_floating(target):        # equal as the join compares them: -0.0 is 0.0, NaN is NaN
                values = pc.add(values, 0.0)
                values = pc.if_else(pc.is_nan(values), float("nan"), values)
            columns.append(values)
        keyed = pa.RecordBatch.from_arrays(columns, names=names + hashed)
        for index, piece in enumerate(kernels.split_batch(keyed, hashed, len(self.files))):
            if piece.num_rows:
                if self.files[index] is None:
                    self.files[index] = self.pool.spill_file(self.schema, self.operator)
                self.files[index].write(piece.select(names))

    @classmethod
    def over(cls, pool: MemoryPool, schema: pa.Schema, keys: Sequence[Expr], params: Sequence,
             operator: str) -> "SpillPartitions":
        """Partitions of batches of ``schema`` by the values of ``keys`` (each hashed as its own type,
        widened by ``hash_type``): an operator's spill whose result per key depends only on the rows
        with that key (a window's PARTITION BY, a GROUP BY held whole)."""
        empty = pa.RecordBatch.from_arrays([pa.array([], f.type) for f in schema], schema=schema)
        types = [evaluate_array(e, empty, params).type for e in keys]
        types = [t.value_type if pa.types.is_dictionary(t) else t for t in types]
        return cls(pool, schema, keys, [hash_type(t) or t for t in types], params, operator=operator)

    def each(self, memory, cost=lambda rows, size: size, stream: bool = False) -> Iterator:
        """Every non-empty partition in turn, ``memory`` (the operator's reservation) holding it
        alone; one whose ``cost(rows, bytes)`` (what working on it holds) does not fit is split
        again first (``split``). With ``stream``, one that still does not fit and cannot be split
        (one key's rows) comes as its ``SpillFile``, for the caller to read a batch at a time. The
        files are deleted as read (all of them, also when the consumer stops early)."""
        try:
            for index in range(len(self.files)):
                if self.files[index] is None:
                    continue
                memory.free()
                if self.splittable(index):
                    if not memory.try_grow(cost(self.rows(index), self.bytes(index))):
                        yield from self.split(index).each(memory, cost, stream)
                        continue
                elif stream and not memory.try_grow(cost(self.rows(index), self.bytes(index))):
                    memory.free()
                    spilled, self.files[index] = self.files[index], None
                    try:
                        yield spilled
                    finally:
                        spilled.delete()
                    continue
                table = self.read(index)
                if table.num_rows:
                    memory.free()
                    memory.grow(table.nbytes, spilled=True)
                    yield table
        finally:
            self.discard()

    def rows(self, index: int) -> int:
        spilled = self.files[index]
        return spilled.rows if spilled is not None else 0

    def bytes(self, index: int) -> int:
        """What partition ``index`` holds once read (uncompressed)."""
        spilled = self.files[index]
        return spilled.bytes if spilled is not None else 0

    def splittable(self, index: int) -> bool:
        return self.level + 1 < len(PRIMES) and self.rows(index) > 1 and not self.stuck

    def split(self, index: int) -> "SpillPartitions":
        """Partition ``index`` split into ``PRIMES[level + 1]`` partitions of its own, read a batch at a
        time (its file is deleted). When every row lands in one of them (one key's rows), the result
        cannot be split again (``stuck``). An empty partition splits into empty ones."""
        spilled = self.files[index]
        self.files[index] = None
        child = SpillPartitions(self.pool, self.schema, self.keys, self.hash_types, self.params,
                                PRIMES[self.level + 1], self.operator, self.level + 1)
        if spilled is None:
            return child
        try:
            for batch in spilled.read():
                child.add(batch)
        except BaseException:
            child.discard()
            raise
        finally:
            spilled.delete()
        child.stuck = not child.progressed
        return child

    @property
    def progressed(self) -> bool:
        """More than one partition holds rows."""
        return sum(f is not None for f in self.files) > 1

    def read(self, index: int) -> pa.Table:
        """Partition ``index`` whole (its file is deleted once read)."""
        spilled = self.files[index]
        if spilled is None:
            return self.schema.empty_table()
        table = spilled.read_all()
        spilled.delete()
        self.files[index] = None
        return table

    def discard(self) -> None:
        for spilled in self.files:
            if spilled is not None:
                spilled.delete()
