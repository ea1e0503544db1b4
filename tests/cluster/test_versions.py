"""cluster.versions without Ray: which version of a store an epoch reads, pruning by the floor, and
versions of durable stores surviving flushes and merges (their retired segment files outlive them)."""
from __future__ import annotations

import gc

import pyarrow as pa
import pytest

from cluster.versions import VersionHistory
from engine.errors import CanopyInternalError
from engine.storage import MemoryPartitionStore

SCHEMA = pa.schema([("x", pa.int64())])


def _batch(*values) -> pa.RecordBatch:
    return pa.record_batch([pa.array(values, pa.int64())], schema=SCHEMA)


def _rows(store, snapshot) -> list:
    return sorted(v for b in store.scan(["x"], snapshot=snapshot) for v in b.column(0).to_pylist())


def _append(history, epoch, stores: dict, *values, floor=None):
    history.prune(floor)
    with history.changing(epoch, stores):
        for store in stores.values():
            store.append(_batch(*values))


def test_each_epoch_reads_its_version_of_every_store():
    history = VersionHistory()
    a, b = MemoryPartitionStore(SCHEMA), MemoryPartitionStore(SCHEMA)
    stores = {(1, 0): a, (1, 1): b}
    history.prune(0)
    _append(history, 1, stores, 1, 2)           # queries of epoch 0 are still running
    _append(history, 2, {(1, 0): a}, 3)
    view0, view1, view2 = history.view(0), history.view(1), history.view(2)
    assert _rows(a, view0.get((1, 0))) == [] and _rows(b, view0.get((1, 1))) == []
    assert _rows(a, view1.get((1, 0))) == [1, 2] and _rows(b, view1.get((1, 1))) == [1, 2]
    assert _rows(a, view2.get((1, 0))) == [1, 2, 3]
    assert _rows(b, view2.get((1, 1))) == [1, 2]         # unchanged by epoch 2: its epoch-1 version
    # a store never written has no versions: read as it is now; so does a query without an epoch
    assert view0.get((1, 5)) is None and history.view(None).get((1, 0)) is None
    assert history.latest == 2


def test_pruning_keeps_what_epochs_from_the_floor_on_read():
    history = VersionHistory()
    store = MemoryPartitionStore(SCHEMA)
    key = (7, 3)
    for epoch in range(1, 5):
        _append(history, epoch, {key: store}, epoch)        # floor stays at the start: all kept
    assert history.versions_of(key) == [-1, 1, 2, 3, 4]
    history.prune(2)            # the oldest query reads epoch 2: it and the newer versions stay
    assert history.versions_of(key) == [2, 3, 4]
    assert _rows(store, history.view(2).get(key)) == [1, 2]
    history.prune(1)            # a lower floor (a task submitted earlier) changes nothing
    assert history.versions_of(key) == [2, 3, 4]
    history.prune(4)            # only the current rows are left: the store is read as it is now
    assert history.versions_of(key) == [] and history.view(4).get(key) is None
    # the next statement keeps the rows before it for the readers of epoch 4
    _append(history, 5, {key: store}, 5)
    assert history.versions_of(key) == [-1, 5]
    assert _rows(store, history.view(4).get(key)) == [1, 2, 3, 4]


def test_a_prune_never_drops_the_version_of_a_statement_being_applied():
    history = VersionHistory()
    store = MemoryPartitionStore(SCHEMA)
    with history.changing(1, {(1, 0): store}):
        history.prune(0)        # its only version (the rows before it) is the store's current rows, still kept
        store.append(_batch(9))
    assert _rows(store, history.view(0).get((1, 0))) == []


def test_epochs_only_grow_and_no_epoch_drops_versions():
    history = VersionHistory()
    store = MemoryPartitionStore(SCHEMA)
    _append(history, 3, {(1, 0): store}, 1)
    with pytest.raises(CanopyInternalError, match="epoch 2 applied after epoch 3"):
        _append(history, 2, {(1, 0): store}, 2)
    with history.changing(None, {(1, 0): store}):       # an old driver: readers see the latest
        store.append(_batch(3))
    assert history.versions_of((1, 0)) == []
    _append(history, 4, {(1, 0): store, (2, 0): MemoryPartitionStore(SCHEMA)}, 4)
    history.forget([(1, 0)])                                # a dropped table
    assert history.keys() == [(2, 0)]
    history.forget()                                        # the leaf reopened its partitions
    assert history.keys() == []


def test_durable_versions_outlive_flushes_and_merges(tmp_path):
    """A version of a columnstore holds its segments: after a flush and a forced merge retire them the
    version still reads its rows, and their files go only when the floor passes it."""
    from engine.storage.columnstore import ColumnstorePartitionStore, Committer, StoreOptions

    committer = Committer(None)                 # a Ray leaf's: statements come as prepare / apply
    store = ColumnstorePartitionStore(tmp_path / "part", SCHEMA, (), StoreOptions.from_options(
        {"flush_rows": 4, "segment_rows": 100}), committer, frozenset())
    history = VersionHistory()
    key = (1, 0)

    def write(epoch, values):                   # as LeafActor.commit_write: apply, then flush
        prepared = store.prepare_append(epoch, [_batch(*values)])
        prepared.sync()
        with history.changing(epoch, {key: store}):
            prepared.apply()
        committer.maintain([store])

    try:
        write(1, [1, 2, 3, 4, 5])
        write(2, [6, 7, 8, 9, 10])
        old_files = {s.path for s in history.view(1).get(key)[0]}
        assert old_files and all(path.exists() for path in old_files)
        with committer.lock.exclusive():
            store.merge(force=True)             # the epoch-1 segments are retired by the merge
        assert not old_files & {s.path for s in store.snapshot()[0]}
        gc.collect()
        assert all(path.exists() for path in old_files)     # epoch 1 still reads them
        assert _rows(store, history.view(1).get(key)) == [1, 2, 3, 4, 5]
        assert _rows(store, history.view(2).get(key)) == list(range(1, 11))
        assert _rows(store, history.view(0).get(key)) == []
        history.prune(2)
        gc.collect()
        assert not any(path.exists() for path in old_files)     # released with the last version
        assert _rows(store, None) == list(range(1, 11))
    finally:
        store.close()
        committer.close()
