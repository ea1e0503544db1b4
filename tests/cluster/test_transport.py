"""The exchange transport on its own (no Ray): payload round trips, adaptive LZ4, backpressure, counters."""
from __future__ import annotations

import datetime
import decimal
import threading
import time

import pyarrow as pa
import pytest

from cluster import transport


def _batch(rows: int, start: int = 0) -> pa.RecordBatch:
    return pa.record_batch({
        "i": pa.array([None if k % 7 == 0 else k for k in range(start, start + rows)], pa.int64()),
        "s": pa.array([f"value-{k % 13}" for k in range(start, start + rows)]),
        "d": pa.array([decimal.Decimal(k) / 100 for k in range(rows)], pa.decimal128(12, 2)),
        "t": pa.array([datetime.date(2020, 1, 1 + k % 28) for k in range(rows)]),
    })


@pytest.mark.parametrize("compression", ["never", "always", "adaptive"])
def test_round_trip(compression):
    batches = [_batch(1000, k * 1000) for k in range(5)] + [_batch(1)]
    payload = transport.encode(batches, batches[0].schema, compression)
    back = transport.decode(payload)
    assert pa.Table.from_batches(back).equals(pa.Table.from_batches(batches))


def test_empty_payload_and_empty_batches_are_dropped():
    schema = _batch(1).schema
    assert transport.decode(transport.encode([], schema)) == []
    assert transport.decode(transport.encode([_batch(0)], schema)) == []


def test_dictionary_columns_arrive_decoded():
    batch = pa.record_batch({"s": pa.array(["a", "b", "a"]).dictionary_encode()})
    (back,) = transport.decode(transport.encode([batch], batch.schema))
    assert back.column(0).type == pa.string() and back.column(0).to_pylist() == ["a", "b", "a"]


def test_raw_frames_are_aligned_views_of_the_payload():
    payload = transport.encode([_batch(100), _batch(100)], _batch(1).schema)
    for batch in transport.decode(payload):
        for column in batch.columns:
            for buffer in column.buffers():
                if buffer is not None:
                    assert buffer.address % 8 == 0


def test_always_compresses_every_batch_and_counts_it():
    sender = transport.Sender(_batch(1).schema, 2, compression="always")
    for k in range(6):
        sender.send(k % 2, _batch(2000, k))
    payloads = sender.finish()
    c0, c1 = sender.counters
    assert (c0.batches, c0.batches_compressed, c0.rows) == (3, 3, 6000)
    assert c0.bytes_sent < c0.bytes_raw and c0.ratio > 1.5          # repetitive data compresses
    assert sum(len(p) for p in payloads) > c0.bytes_sent + c1.bytes_sent   # plus the schema headers


def test_adaptive_compresses_only_when_the_link_is_the_bottleneck():
    schema = _batch(1).schema
    fast = transport.Sender(schema, 1, compression="adaptive")
    for k in range(8):               # each batch is sent before the next is made: the queue stays short
        fast.send(0, _batch(1000, k))
        time.sleep(0.01)
    fast.finish()
    assert fast.counters[0].batches_compressed == 0

    # a link of 2 MB/s: the queue fills, so batches waiting behind more than 4 others go compressed
    slow = transport.Sender(schema, 1, compression="adaptive", throttle_bytes_per_s=2e6)
    for k in range(30):
        slow.send(0, _batch(1000, k))
    slow.finish()
    counters = slow.counters[0]
    assert 0 < counters.batches_compressed < counters.batches


def test_a_full_queue_blocks_the_producer():
    schema = _batch(1).schema
    sender = transport.Sender(schema, 1, compression="never", queue_limit=2, throttle_bytes_per_s=1e6)
    size = transport.encode_frame(_batch(1000), False).sent_length
    started = time.perf_counter()
    for k in range(8):
        sender.send(0, _batch(1000, k))
    blocked = time.perf_counter() - started
    sender.finish()
    # 8 sends through a 2-deep queue wait for at least 5 frames to cross the 1 MB/s link
    assert blocked >= 5 * size / 1e6 * 0.8


def test_a_failing_sender_surfaces_in_finish_and_abort_returns():
    sender = transport.Sender(pa.schema([("x", pa.int8())]), 1)
    sender.send(0, pa.record_batch({"x": pa.array([1000], pa.int64())}))   # cannot cast to int8
    with pytest.raises(pa.ArrowInvalid):
        sender.finish()
    blocked = transport.Sender(_batch(1).schema, 1, queue_limit=1, throttle_bytes_per_s=1e3)
    threading.Thread(target=lambda: [blocked.send(0, _batch(100)) for _ in range(3)], daemon=True).start()
    time.sleep(0.05)
    blocked.abort()


def test_repartition_gathers_pieces_per_link_into_few_frames():
    """route_payloads() holds a repartition's pieces per destination leaf until they make a full batch: one frame
    per link here (every row arrives, at the leaf of its partition), even from batches whose string
    column is dictionary-encoded in one and plain in the other."""
    import kernels
    from cluster.exchange import route_payloads
    from cluster.specs import ExchangeSpec, TransportOptions

    plain = pa.record_batch({"k": pa.array(range(3000), pa.int64()), "s": pa.array([f"s{i % 5}" for i in range(3000)])})
    encoded = pa.record_batch({"k": pa.array(range(3000, 5000), pa.int64()),
                               "s": pa.array([f"s{i % 5}" for i in range(2000)]).dictionary_encode()})
    batches = [plain.slice(0, 1000), encoded, plain.slice(1000)]
    exchange = ExchangeSpec("repartition", ("k",), num_leaves=2, partitions_per_leaf=2)
    payloads, links = route_payloads(iter(batches), plain.schema, exchange, TransportOptions("never"))
    assert [link["batches"] for link in links] == [1, 1]
    received = [pa.Table.from_batches(transport.decode(p)) for p in payloads]
    everything = pa.Table.from_batches([b.cast(plain.schema) if b.schema != plain.schema else b for b in batches])
    expected = kernels.split_batch(everything.combine_chunks().to_batches()[0], ["k"], 4)
    for leaf in range(2):
        want = sorted(k for piece in expected[leaf * 2:leaf * 2 + 2] for k in piece.column(0).to_pylist())
        assert sorted(received[leaf].column("k").to_pylist()) == want
    assert sum(t.num_rows for t in received) == 5000


def test_a_queue_backed_up_by_encoding_stays_raw():
    """No modelled wire (loopback: the payload is built in memory): however long the queue gets,
    encoding is the slow part, and compressing would only slow it further."""
    sender = transport.Sender(_batch(1).schema, 1, compression="adaptive", queue_limit=16)
    for k in range(40):              # produced as fast as possible: the queue fills
        sender.send(0, _batch(5000, k))
    sender.finish()
    assert sender.counters[0].batches == 40 and sender.counters[0].batches_compressed == 0


def test_a_destination_past_chunk_bytes_goes_to_put_as_it_comes():
    # memory_limit on a Ray leaf: a task holds at most chunk_bytes a destination, the rest went to
    # put (ray.put there; here the chunk itself), and the destination's payload reads back whole
    put: list = []
    batches = [_batch(1000, k * 1000) for k in range(12)]
    sender = transport.Sender(batches[0].schema, 2, compression="never", chunk_bytes=40_000,
                              put=lambda chunk: put.append(len(chunk)) or chunk)
    for k, batch in enumerate(batches):
        sender.send(k % 2, batch)
    first, second = sender.finish()
    assert isinstance(first, transport.Chunked) and isinstance(second, transport.Chunked)
    assert len(put) >= 4 and sender.chunked_bytes == sum(put)
    for destination, payload in ((0, first), (1, second)):
        want = pa.Table.from_batches(batches[destination::2])
        assert pa.Table.from_batches(transport.decode(payload)).equals(want)
        reader = transport.Payloads()
        reader.extend([payload])
        for _ in range(2):                  # a lazy input reads the chunks in order, as often as asked
            assert pa.Table.from_batches(list(reader)).equals(want)
    # without put nothing is chunked: one payload a destination, as before
    plain = transport.Sender(batches[0].schema, 1, compression="never", chunk_bytes=40_000)
    for batch in batches:
        plain.send(0, batch)
    assert isinstance(plain.finish()[0], bytes)
