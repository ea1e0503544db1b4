"""The in-memory partition store keeps scans cheap whatever the pattern of appends."""
import pyarrow as pa

from engine.storage import memory
from engine.storage.memory import MemoryPartitionStore

SCHEMA = pa.schema([("a", pa.int64())])


def _one_row(i: int) -> pa.RecordBatch:
    return pa.record_batch([pa.array([i])], schema=SCHEMA)


def test_many_one_row_appends_leave_few_batches_in_order():
    """A pipeline committing one small file at a time (or single-row INSERTs) appends thousands of tiny
    batches: a scan must not iterate over each of them, and the rows keep their order."""
    store = MemoryPartitionStore(SCHEMA)
    for i in range(10_000):
        store.append(_one_row(i))
    batches = store.snapshot()
    assert len(batches) <= memory._TAIL_PIECES
    assert store.row_count() == 10_000
    assert [v for b in store.scan() for v in b.column(0).to_pylist()] == list(range(10_000))


def test_tail_seals_into_full_batches_and_snapshots_stay_immutable():
    store = MemoryPartitionStore(SCHEMA)
    before = store.snapshot()
    rows = memory._COALESCE_BELOW_ROWS + 5
    for start in range(0, rows, 1000):
        store.append(pa.record_batch([pa.array(range(start, min(start + 1000, rows)))], schema=SCHEMA))
    batches = store.snapshot()
    assert before == ()                                     # an older snapshot does not change
    assert batches[0].num_rows >= memory._COALESCE_BELOW_ROWS   # the sealed part is one big batch
    assert sum(b.num_rows for b in batches) == rows == store.row_count()
    store.replace([_one_row(7)])
    store.append(_one_row(8))
    assert [v for b in store.scan() for v in b.column(0).to_pylist()] == [7, 8]
