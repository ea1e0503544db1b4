"""Exchange routing and coalescing, once for both runners.

A stage's output goes by its :class:`cluster.specs.ExchangeSpec`: gathered, broadcast, or repartitioned
by the hash of its keys to the leaf of each row's partition. A repartition cuts every input batch into a
piece per partition: 100 scan batches of a 226k-row filter become ~800 pieces of ~300 rows, and the
consuming operators pay their per-batch cost on each (TPC-H Q15's aggregate over the shuffled rows: 166 ms
on the pieces, 50 ms on whole batches), and a Ray link would send a tiny frame per piece. So the pieces
bound for one destination wait in a :class:`Coalescer` until they make about COALESCE_ROWS rows, then go
on as one batch (one copy). The embedded runner keeps the routed batches in memory (:func:`route_batches`);
a Ray leaf encodes them into one transport payload per destination (:func:`route_payloads`).
"""
from __future__ import annotations

from typing import Callable, Iterable, Optional

import pyarrow as pa

from cluster import transport
from cluster.specs import ExchangeSpec, TransportOptions

COALESCE_ROWS = 64 * 1024


class Coalescer:
    """Pieces per destination gathered into batches of about ``rows`` rows, handed to ``emit(destination,
    batch)``. A piece already half that size goes on as it is when nothing waits (no copy); pieces of
    differently typed batches (a dictionary-encoded column in one, plain in the next) are kept apart."""

    def __init__(self, destinations: int, emit: Callable[[int, pa.RecordBatch], None], rows: int = COALESCE_ROWS):
        self._emit = emit
        self._rows = rows
        self._held: list[list[pa.RecordBatch]] = [[] for _ in range(destinations)]
        self._held_rows = [0] * destinations

    def add(self, destination: int, piece: pa.RecordBatch) -> None:
        held = self._held[destination]
        if held and not piece.schema.equals(held[0].schema):
            self.flush(destination)
        if not held and piece.num_rows >= self._rows // 2 or not piece.num_columns:
            self._emit(destination, piece)
            return
        held.append(piece)
        self._held_rows[destination] += piece.num_rows
        if self._held_rows[destination] >= self._rows:
            self.flush(destination)

    def flush(self, destination: int) -> None:
        pieces = self._held[destination]
        if pieces:
            self._emit(destination, concat(pieces))
        self._held[destination], self._held_rows[destination] = [], 0

    def finish(self) -> None:
        for destination in range(len(self._held)):
            self.flush(destination)


def concat(batches: list[pa.RecordBatch]) -> pa.RecordBatch:
    if len(batches) == 1:
        return batches[0]
    return pa.Table.from_batches(batches).combine_chunks().to_batches()[0]


def route_batches(batches: Iterable[pa.RecordBatch], exchange: ExchangeSpec,
                  map_: Callable = map, sink: Callable = list) -> dict[int, list[pa.RecordBatch]]:
    """The batches each consuming task reads (a leaf; task 0 of a gather's consumer).
    ``map_``: how the repartition's splits run (the embedded runner passes its pool's ``map`` for a
    large exchange: hashing, scattering and take release the GIL). ``sink``: makes what a
    repartition's destination collects into (anything with ``append``: a list, or the embedded
    runner's ExchangeBuffer, which spills past memory_limit)."""
    if exchange.kind == "gather":
        return {0: batches}
    if exchange.kind == "broadcast":
        return {leaf: batches for leaf in range(exchange.num_leaves)}
    if exchange.kind != "repartition":
        raise ValueError(f"unknown exchange kind {exchange.kind!r}")
    routed = {leaf: sink() for leaf in range(exchange.num_leaves)}
    coalescer = Coalescer(exchange.destinations, lambda d, batch: routed[d].append(batch))
    for pieces in map_(exchange.split, batches):
        for destination, piece in pieces:
            coalescer.add(destination, piece)
    coalescer.finish()
    return routed


def route_payloads(batches: Iterable[pa.RecordBatch], schema: pa.Schema, exchange: ExchangeSpec,
                   options: TransportOptions = TransportOptions(),
                   check: Optional[Callable[[], None]] = None, chunk_bytes: Optional[int] = None,
                   put: Optional[Callable] = None, stats: Optional[dict] = None) -> tuple[list, list[dict]]:
    """A Ray task's output batches through a :class:`transport.Sender`, streamed as they come: the
    payloads (one per destination) and the per-link counters. ``check``: called per batch (deadline).
    ``chunk_bytes``, ``put``: a destination's output past ``chunk_bytes`` goes to ``put`` as it comes
    (see the Sender); ``stats["chunked"]``: the bytes that went."""
    destinations = exchange.destinations
    sender = transport.Sender(schema, destinations, compression=options.compression,
                              throttle_bytes_per_s=options.throttle_bytes_per_s, chunk_bytes=chunk_bytes, put=put)
    # pieces are held in the sender's schema (dictionaries decoded), so they concatenate
    coalescer = Coalescer(destinations, sender.send)
    try:
        for batch in batches:
            if check is not None:
                check()
            if exchange.kind == "repartition":
                for destination, piece in exchange.split(batch):
                    coalescer.add(destination, sender.conform(piece))
            else:                           # gather, broadcast, a final stage: one destination
                sender.send(0, batch)
        coalescer.finish()
        sent = sender.finish()
    except BaseException:
        sender.abort()
        raise
    if stats is not None:
        stats["chunked"] = sender.chunked_bytes
    return sent, [vars(c) for c in sender.counters]
