"""cluster.exchange and cluster.placement without a runner: every row reaches the leaf of its partition
(the placement rule of sharded tables), and a repartition's small pieces arrive as few batches."""
from types import SimpleNamespace

import pyarrow as pa

import kernels
from engine import types as T
from engine.catalog import ColumnDef, TableDef
from cluster.exchange import COALESCE_ROWS, Coalescer, route_batches
from cluster.placement import Placement
from cluster.specs import ExchangeSpec


def _batches(n: int, size: int) -> list[pa.RecordBatch]:
    return [pa.record_batch({"k": pa.array(range(i * size, (i + 1) * size), pa.int64())}) for i in range(n)]


def test_repartition_routes_each_row_to_the_leaf_of_its_partition_in_few_batches():
    batches = _batches(40, 1000)
    routed = route_batches(batches, ExchangeSpec("repartition", ("k",), num_leaves=3, partitions_per_leaf=2))
    whole = pa.Table.from_batches(batches).combine_chunks().to_batches()[0]
    expected = kernels.split_batch(whole, ["k"], 6)
    for leaf in range(3):
        want = sorted(k for piece in expected[leaf * 2:leaf * 2 + 2] for k in piece.column(0).to_pylist())
        assert sorted(k for b in routed[leaf] for k in b.column(0).to_pylist()) == want
        assert len(routed[leaf]) == 1          # 240 pieces of ~170 rows: one batch per leaf
    assert sum(b.num_rows for bs in routed.values() for b in bs) == 40_000


def test_gather_and_broadcast_keep_the_batches():
    batches = _batches(3, 10)
    assert route_batches(batches, ExchangeSpec("gather")) == {0: batches}
    assert route_batches(batches, ExchangeSpec("broadcast", num_leaves=2)) == {0: batches, 1: batches}


def test_coalescer_cuts_at_its_size_and_passes_big_pieces_without_a_copy():
    out: list[tuple[int, pa.RecordBatch]] = []
    coalescer = Coalescer(2, lambda d, b: out.append((d, b)), rows=100)
    big = _batches(1, 60)[0]
    coalescer.add(1, big)
    assert out == [(1, big)]                   # nothing waited: it goes on as it is
    for piece in _batches(7, 30):
        coalescer.add(0, piece)
    coalescer.finish()
    assert [(d, b.num_rows) for d, b in out[1:]] == [(0, 120), (0, 90)]
    assert COALESCE_ROWS >= 32 * 1024


def test_placement_spreads_keyless_tables_and_shards_by_key():
    placement = Placement(num_leaves=2, partitions_per_leaf=2)
    keyless = SimpleNamespace(reference=False, shard_key=(), table_id=901)   # what placement reads of a TableDef
    data = pa.Table.from_batches(_batches(4, 5))
    by_leaf = placement.by_leaf(keyless, data)
    assert {leaf: sorted(parts) for leaf, parts in by_leaf.items()} == {0: [0, 1], 1: [2, 3]}
    sharded = TableDef("db", "t", (ColumnDef("k", T.BIGINT),), shard_key=("k",))
    pieces = placement.route(sharded, data.to_batches()[0])
    expected = kernels.split_batch(data.to_batches()[0], ["k"], 4)
    assert [(p, b.num_rows) for p, b in pieces] == [(p, b.num_rows) for p, b in enumerate(expected) if b.num_rows]
    assert placement.keys(sharded, 1) == [2, 3]


def test_placement_hashes_a_string_shard_key_by_its_collation_key():
    """A _ci string key's rows go where an exchange of collation_key(k) sends them ('a', 'A', 'a ' on
    one partition); a table placed before that (collated_placement False) keeps hashing the values."""
    from engine.core.collation_keys import collation_keys
    placement = Placement(num_leaves=2, partitions_per_leaf=4)
    words = [w for base in ("alpha", "beta", "gamma", "delta", "straße", "émile") for w in
             (base, base.upper(), base + " ", base.title())]
    batch = pa.record_batch({"k": words, "n": pa.array(range(len(words)), pa.int64())})
    for name in ("utf8mb4_general_ci", "utf8mb4_bin"):
        table = TableDef("db", "t", (ColumnDef("k", T.TEXT.with_collation(name)), ColumnDef("n", T.BIGINT)),
                         shard_key=("k",))
        placed = {row: p for p, piece in placement.route(table, batch) for row in piece.column("n").to_pylist()}
        keyed = pa.record_batch({"k": collation_keys(batch.column("k"), name), "n": batch.column("n")})
        expected = {row: p for p, piece in enumerate(kernels.split_batch(keyed, ["k"], 8))
                    for row in piece.column("n").to_pylist()}
        assert placed == expected
        partitions_of_key = {}
        for i, key in enumerate(keyed.column("k").to_pylist()):
            partitions_of_key.setdefault(key, set()).add(placed[i])
        assert all(len(p) == 1 for p in partitions_of_key.values())     # equal under the collation: together
        assert len(partitions_of_key) == (18 if name == "utf8mb4_bin" else 7)   # 'STRASSE' is not 'straße'
    legacy = TableDef("db", "t", (ColumnDef("k", T.TEXT), ColumnDef("n", T.BIGINT)), shard_key=("k",),
                      collated_placement=False)
    pieces = placement.route(legacy, batch)
    assert [(p, b.num_rows) for p, b in pieces] == [(p, b.num_rows) for p, b in
                                                    enumerate(kernels.split_batch(batch, ["k"], 8)) if b.num_rows]


def test_an_exchange_buffer_keeps_batches_in_memory_until_the_limit_then_on_disk(tmp_path, monkeypatch):
    from cluster.exchange_buffer import Chain, ExchangeBuffer
    from engine.exec.memory import MemoryPool

    monkeypatch.setenv("CANOPY_SPILL_DIR", str(tmp_path))
    pool = MemoryPool(1 << 20)
    batches = _batches(40, 8192)                # 64 KiB each: 16 fit in 1 MiB, the rest go to disk
    buffer = ExchangeBuffer(pool).extend(batches)
    assert buffer.spilled and buffer.rows == 40 * 8192 and buffer.nbytes == sum(b.nbytes for b in batches)
    assert 0 < pool.reserved <= 1 << 20
    want = pa.Table.from_batches(batches)
    for _ in range(2):                          # read in order, as often as asked
        assert pa.Table.from_batches(list(buffer)).equals(want)
    assert pool.spilled_by["Exchange"] > 0      # counted once its file is finished
    assert pa.Table.from_batches(list(Chain([buffer, batches[:1]]))).num_rows == 41 * 8192
    # a repartition into buffers routes every row once, streaming from disk
    routed = route_batches(buffer, ExchangeSpec("repartition", ("k",), num_leaves=3, partitions_per_leaf=2),
                           sink=lambda: ExchangeBuffer(pool))
    assert sorted(k for b in routed.values() for batch in b for k in batch.column(0).to_pylist()) == \
        list(range(40 * 8192))
    buffer.discard()
    for b in routed.values():
        b.discard()
    assert pool.reserved == 0
    pool.close()
    assert list(tmp_path.iterdir()) == []


def test_a_spilled_exchange_buffer_keeps_dictionary_columns_so_a_repartition_concatenates(tmp_path, monkeypatch):
    from cluster.exchange_buffer import ExchangeBuffer
    from engine.exec.memory import MemoryPool

    monkeypatch.setenv("CANOPY_SPILL_DIR", str(tmp_path))
    pool = MemoryPool(1 << 20)
    words = pa.array([f"word {i % 50}" for i in range(20_000)])
    batches = [pa.record_batch({"k": pa.array(range(i * 20_000, (i + 1) * 20_000), pa.int64()),
                                "s": words.dictionary_encode()}) for i in range(8)]
    buffer = ExchangeBuffer(pool).extend(batches)        # held and read back: dictionaries both
    assert buffer.spilled
    assert {b.schema for b in buffer} == {batches[0].schema}
    routed = route_batches(buffer, ExchangeSpec("repartition", ("k",), num_leaves=2, partitions_per_leaf=2))
    assert sum(b.num_rows for bs in routed.values() for b in bs) == 8 * 20_000
    pool.close()
