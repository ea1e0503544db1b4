"""Exchange transport: how one task's output batches travel to the tasks that consume them.

A producing task hands its output batches to a :class:`Sender`. The sender keeps one *link* per
destination (a consuming task: a leaf, or task 0 on the aggregator) and a bounded queue of batches that
a sender thread drains, encoding each batch as an Arrow IPC record-batch message into its link's
*payload*. The payload is one binary blob per link; the Ray runner returns it from the actor task as an
object, so it moves producer -> object store -> consumer, never through the driver's Python heap.

Backpressure: ``send`` blocks while the queue holds ``queue_limit`` batches, so a producer that outruns
its links cannot pile up unbounded memory.

Adaptive LZ4 (MemSQL 6.7): when the link is the bottleneck a batch goes LZ4-compressed, otherwise raw
(no CPU spent where the wire keeps up). MemSQL reads "the link is the bottleneck" from its queue: more
than ``compress_after`` batches waiting behind the one being sent. The sender here measures it instead:
once a frame is handed to the wire, will the wire stay busy longer than encoding that frame took? That
decides (the first frame goes raw, unmeasured), with the queue's length as a second witness: a batch
is compressed when the wire is the slow part and either the queue is longer than ``compress_after`` or
the previous frame was compressed too. So a slow link's frames go compressed to the last one, and a
loopback whose queue backs up only because encoding is the slow part stays raw (compressing there
measured 0.83x raw speed). ``compression="always"|"never"`` forces either (benchmarks).
``throttle_bytes_per_s`` models a slow network link (a benchmark mode): a frame occupies the wire for
``len / rate`` seconds, one frame may wait in the socket buffer behind the one on the wire (so encoding
the next frame overlaps sending this one), and ``finish`` returns once the last byte is across.

A streaming load's chunks (``cluster.load.StreamingLoad``, sent by
``cluster.ray_writes.RayLeaves.stage_chunk``) are payloads of the same layout, built whole by
:func:`encode_payload`; the load applies the queue rule itself, per leaf, counting the chunks its leaf
has not acknowledged yet.

Payload layout (little-endian)::

    b"CNPX" | u32 schema length | schema IPC message, padded | frame*
    frame = u8 flags (1 = LZ4), 7 pad | u64 raw length | u64 body length | body, padded
    (padding to 8 bytes keeps every raw body 8-aligned in the payload, as Arrow's buffers want)

Dictionary-encoded columns are decoded before sending: the consumer casts to the plan's types anyway,
and a bare record-batch message cannot carry dictionaries.
"""
from __future__ import annotations

import queue
import struct
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable, Iterable, Iterator, Optional

import lz4.block
import pyarrow as pa

MAGIC = b"CNPX"
_FRAME = struct.Struct("<B7xQQ")
_LZ4 = 1
COMPRESS_AFTER = 4          # batches waiting in the send queue before a batch is compressed
QUEUE_LIMIT = 16            # batches the send queue holds before ``send`` blocks


@dataclass
class LinkCounters:
    """What crossed one link (one producer task -> one consumer task)."""
    batches: int = 0
    batches_compressed: int = 0
    rows: int = 0
    bytes_raw: int = 0           # IPC bytes before compression
    bytes_sent: int = 0          # bytes in the payload (compressed where compressed)

    def add(self, other: "LinkCounters") -> None:
        for name, value in asdict(other).items():
            setattr(self, name, getattr(self, name) + value)

    @property
    def ratio(self) -> float:
        return self.bytes_raw / self.bytes_sent if self.bytes_sent else 1.0


class Sender:
    """The outgoing side of one task: ``send(destination, batch)`` per batch, then ``finish()``.

    Contract: one producer thread calls ``send`` and ``finish``; the sender thread alone touches the
    links' buffers and counters until ``finish`` has joined it (before the thread starts, at the second
    batch, the producer holds the first batch and touches nothing else).
    """

    def __init__(self, schema: pa.Schema, destinations: int, *, compression: str = "adaptive",
                 compress_after: int = COMPRESS_AFTER, queue_limit: int = QUEUE_LIMIT,
                 throttle_bytes_per_s: Optional[float] = None, chunk_bytes: Optional[int] = None,
                 put: Optional[Callable[[bytes], Any]] = None):
        """``chunk_bytes`` and ``put`` (memory_limit on a Ray leaf): a destination's frames past
        ``chunk_bytes`` are handed to ``put`` (``ray.put``: Ray's object store, which spills to disk
        under pressure) as one payload, and the task holds at most ``chunk_bytes`` a destination;
        ``finish`` then returns a :class:`Chunked` payload for it."""
        if compression not in ("adaptive", "always", "never"):
            raise ValueError(f"compression must be adaptive, always or never, not {compression!r}")
        self.schema = _plain_schema(schema)
        self.compression = compression
        self.compress_after = compress_after
        self.throttle = throttle_bytes_per_s
        header = _header(self.schema)
        self._parts: list[list] = [[header] for _ in range(destinations)]
        self._header = header
        self._held = [0] * destinations         # bytes of frames in _parts, per destination
        self._chunks: list[list] = [[] for _ in range(destinations)]
        self.chunk_bytes = chunk_bytes if put is not None else None
        self._put = put
        self.chunked_bytes = 0                  # bytes handed to ``put``
        self.counters = [LinkCounters() for _ in range(destinations)]
        self._queue: "queue.Queue[Optional[tuple[int, pa.RecordBatch]]]" = queue.Queue(maxsize=queue_limit)
        self._error: Optional[BaseException] = None
        self._stop = threading.Event()          # set by abort: cut a throttled frame's wait short
        self._wire_free_at = 0.0                # throttled: when the modelled wire has sent all frames
        # Whether the wire, not the encoding, holds the queue up: after the latest frame was handed
        # to it, the wire stays busy longer than encoding that frame took.
        self._link_bound = False
        self._compressing = False               # the previous frame went compressed
        # The sender thread starts with the second batch: a task whose output is one batch (a partial
        # aggregate, a top-N) encodes it in ``finish`` with an empty queue, as the thread would, and
        # saves starting and joining a thread (most of a small query's task time on a busy leaf).
        self._first: Optional[tuple[int, pa.RecordBatch]] = None
        self._thread: Optional[threading.Thread] = None

    def send(self, destination: int, batch: pa.RecordBatch) -> None:
        if self._error is not None:
            raise self._error
        if not batch.num_rows:
            return
        if self._thread is None:
            if self._first is None:
                self._first = (destination, batch)
                return
            self._thread = threading.Thread(target=self._drain, name="canopy-sender", daemon=True)
            self._thread.start()
            self._queue.put(self._first)
            self._first = None
        self._queue.put((destination, batch))          # blocks when full: backpressure

    def conform(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """``batch`` in the schema the links carry (dictionaries decoded, types as the plan's)."""
        return _plain_batch(batch, self.schema)

    def finish(self) -> list[bytes]:
        """Flush the queue and return one payload per destination."""
        if self._thread is None:
            if self._first is not None:
                self._encode(*self._first)
                self._first = None
        else:
            self._queue.put(None)
            self._thread.join()
        if self._error is not None:
            raise self._error
        self._stop.wait(max(0.0, self._wire_free_at - time.monotonic()))
        payloads: list = []
        for destination, parts in enumerate(self._parts):
            chunks = self._chunks[destination]
            if not chunks:
                payloads.append(b"".join(parts))
            else:
                payloads.append(Chunked(chunks + ([b"".join(parts)] if len(parts) > 1 else [])))
        return payloads

    def abort(self) -> None:
        """Stop the sender thread without waiting for queued batches (the task failed)."""
        self._error = self._error or RuntimeError("sender aborted")
        self._stop.set()
        self._first = None
        if self._thread is None:
            return
        while True:                     # make room for the sentinel, dropping what waits
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
        self._queue.put(None)
        self._thread.join()

    def _drain(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            if self._error is not None:
                continue
            self._encode(*item)

    def _encode(self, destination: int, batch: pa.RecordBatch) -> None:
        try:
            compress = self.compression == "always" or self.compression == "adaptive" and self._link_bound and (
                self._queue.qsize() > self.compress_after or self._compressing)
            started = time.monotonic()
            frame = encode_frame(_plain_batch(batch, self.schema), compress)
            encoded = time.monotonic()
            counters = self.counters[destination]
            counters.batches += 1
            counters.rows += batch.num_rows
            counters.bytes_raw += frame.raw_length
            counters.bytes_sent += frame.sent_length
            counters.batches_compressed += frame.compressed
            self._parts[destination].extend(frame.parts)
            self._held[destination] += frame.sent_length
            if self.chunk_bytes is not None and self._held[destination] > self.chunk_bytes:
                chunk = b"".join(self._parts[destination])
                self._chunks[destination].append(self._put(chunk))
                self.chunked_bytes += len(chunk)
                self._parts[destination], self._held[destination] = [self._header], 0
            if self.throttle:
                self._transmit(frame.sent_length)
            # (no modelled wire: the payload is built in memory and the wire is never the slow part)
            self._link_bound = self._wire_free_at - time.monotonic() > encoded - started
            self._compressing = frame.compressed
        except BaseException as error:      # noqa: BLE001 - handed to the producer in send/finish
            self._error = error

    def _transmit(self, length: int) -> None:
        """Hand a frame to the modelled wire: wait while the previous frame is still on it."""
        self._stop.wait(max(0.0, self._wire_free_at - time.monotonic()))
        self._wire_free_at = max(self._wire_free_at, time.monotonic()) + length / self.throttle


@dataclass
class _Frame:
    parts: tuple  # bytes-like: bytes, or a pa.Buffer of a raw message
    raw_length: int
    sent_length: int
    compressed: bool


def encode_frame(batch: pa.RecordBatch, compress: bool) -> _Frame:
    message = batch.serialize()
    raw = message.size
    body = lz4.block.compress(message, store_size=False) if compress else message   # raw: no copy until finish
    length = len(body) if compress else body.size
    flags = _LZ4 if compress else 0
    padding = _pad(length)
    return _Frame((_FRAME.pack(flags, raw, length), body, padding), raw, _FRAME.size + length + len(padding),
                  compress)


def _header(schema: pa.Schema) -> bytes:
    schema_bytes = schema.serialize().to_pybytes()
    return MAGIC + struct.pack("<I", len(schema_bytes)) + schema_bytes + _pad(len(schema_bytes))


def _pad(length: int) -> bytes:
    return b"\0" * (-length % 8)


def encode(batches: Iterable[pa.RecordBatch], schema: pa.Schema, compression: str = "never") -> bytes:
    """One payload of ``batches`` without a sender thread (tests, small driver-side payloads)."""
    sender = Sender(schema, 1, compression=compression)
    for batch in batches:
        sender.send(0, batch)
    return sender.finish()[0]


def encode_payload(batches: Iterable[pa.RecordBatch], schema: pa.Schema,
                   compress: bool) -> tuple[bytes, LinkCounters]:
    """One payload of ``batches``, every frame LZ4-compressed or every one raw, built in the calling
    thread (no sender thread, no queue): for callers that decide compression per payload themselves (a
    load's chunks, see ``cluster.ray_writes.RayLeaves.stage_chunk``). Empty batches are kept, so the
    payload's frames stay aligned with whatever the caller sends beside it. Returns the payload and its counters."""
    plain = _plain_schema(schema)
    parts: list = [_header(plain)]
    counters = LinkCounters()
    for batch in batches:
        frame = encode_frame(_plain_batch(batch, plain), compress)
        parts.extend(frame.parts)
        counters.batches += 1
        counters.batches_compressed += frame.compressed
        counters.rows += batch.num_rows
        counters.bytes_raw += frame.raw_length
        counters.bytes_sent += frame.sent_length
    return b"".join(parts), counters


class Chunked:
    """One destination's output in several payloads, in order: Ray object refs (chunks a leaf put
    into the object store as its task went, see ``Sender``) and the last one's bytes."""

    def __init__(self, chunks: list):
        self.chunks = chunks

    def payloads(self) -> Iterator:
        for chunk in self.chunks:
            if isinstance(chunk, (bytes, bytearray, memoryview)):
                yield chunk
            else:
                import ray      # only a Ray task makes refs; the module loads without Ray

                yield ray.get(chunk)


class Payloads:
    """Payloads read as one exchange input: iterating yields their batches, each payload decoded when
    reached (re-iterable: a stage may read its input more than once)."""

    def __init__(self):
        self.payloads: list = []

    def extend(self, payloads) -> None:
        self.payloads.extend(payloads)

    def __iter__(self):
        for payload in self.payloads:
            yield from decode_each(payload)


def decode_each(payload) -> Iterator[pa.RecordBatch]:
    """The batches of a payload or of a :class:`Chunked` one, each chunk fetched when reached."""
    if isinstance(payload, Chunked):
        for chunk in payload.payloads():
            yield from decode(chunk)
    else:
        yield from decode(payload)


def decode(payload) -> list[pa.RecordBatch]:
    """The batches of one payload. Raw frames are read in place (no copy of the payload)."""
    if isinstance(payload, Chunked):
        return list(decode_each(payload))
    view = memoryview(payload)
    if bytes(view[:4]) != MAGIC:
        raise ValueError("not a Canopy exchange payload")
    (schema_length,) = struct.unpack_from("<I", view, 4)
    schema = pa.ipc.read_schema(pa.py_buffer(view[8:8 + schema_length]))
    offset = 8 + schema_length + (-schema_length % 8)
    buffer = pa.py_buffer(view)
    batches = []
    while offset < len(view):
        flags, raw, length = _FRAME.unpack_from(view, offset)
        offset += _FRAME.size
        if flags & _LZ4:
            body = pa.py_buffer(lz4.block.decompress(view[offset:offset + length], uncompressed_size=raw))
        else:
            body = buffer.slice(offset, length)
        batches.append(pa.ipc.read_record_batch(body, schema))
        offset += length + (-length % 8)
    return batches


def _plain_schema(schema: pa.Schema) -> pa.Schema:
    return pa.schema([pa.field(f.name, f.type.value_type if pa.types.is_dictionary(f.type) else f.type,
                               f.nullable) for f in schema])


def _plain_batch(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    if batch.schema.equals(schema):
        return batch
    columns = [c if c.type == f.type else c.cast(f.type) for c, f in zip(batch.columns, schema)]
    return pa.RecordBatch.from_arrays(columns, schema=schema)
