"""A scan concatenates its task's small stored batches (a small table's partitions) before filtering:
each batch costs the filters and every operator above a fixed amount, whatever its rows."""
import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from cluster.local import LocalRunner
from engine.exec.operators.scan import coalesced
from engine.session import Session
from engine.storage.columnstore.encoding import decode_batch


def _batch(values, names, encodings, types=None):
    columns = []
    for i, (v, kind) in enumerate(zip(values, encodings)):
        array = pa.array(v, type=types[i] if types else None)
        if kind == "dict":
            array = array.dictionary_encode()
        elif kind == "ree":
            array = pc.run_end_encode(array)
        columns.append(array)
    return pa.RecordBatch.from_arrays(columns, names=names)


def test_coalesced_keeps_every_row_in_order_whatever_the_encodings():
    rng = np.random.default_rng(5)
    batches, expected = [], []
    encodings = [("dict", "ree"), ("dict", "plain"), ("plain", "ree"), ("dict", "dict"), ("ree", "ree")]
    for i, kinds in enumerate(encodings * 3):
        n = int(rng.integers(0, 40))
        s = [f"v{x}" for x in rng.integers(0, 7 + i, n)]
        k = sorted(rng.integers(0, 5, n).tolist())
        batches.append(_batch([s, k], ["s", "k"], kinds, [pa.string(), pa.int64()]))
        expected.append(pa.table({"s": pa.array(s, type=pa.string()), "k": pa.array(k, type=pa.int64())}))
    out = list(coalesced(iter(batches), 100))
    assert len(out) < len(batches)
    assert all(b.num_rows <= 100 for b in out)
    got = pa.Table.from_batches([decode_batch(b) for b in out])
    assert got.equals(pa.concat_tables(expected))


def test_large_batches_pass_as_they_are():
    small = [_batch([[1, 2]], ["a"], ["plain"]) for _ in range(3)]
    large = _batch([list(range(500))], ["a"], ["ree"])
    out = list(coalesced(iter([*small, large, *small]), 100))
    assert [b.num_rows for b in out] == [6, 500, 6]
    assert out[1] is large
    assert list(coalesced(iter([]), 100)) == []


@pytest.fixture()
def session():
    runner = LocalRunner(leaves=2, partitions_per_leaf=4)
    s = Session(runner)
    yield s
    runner.shutdown()


def test_a_small_table_reads_as_one_batch_per_task(session):
    rng = np.random.default_rng(11)
    n = 3000
    names = np.array([f"name{i % 37}" for i in range(n)])
    amounts = rng.integers(0, 1000, n)
    session.execute("CREATE TABLE t (id BIGINT NOT NULL, name VARCHAR(20), amount BIGINT, PRIMARY KEY (id))")
    session.load_table("t", pa.table({"id": np.arange(n), "name": names, "amount": amounts}))
    sql = "SELECT name, SUM(amount) FROM t WHERE name LIKE 'name1%' AND amount > 100 GROUP BY name"
    result = session.execute(sql).table
    got = dict(zip(result.column(0).to_pylist(), result.column(1).to_pylist()))
    keep = np.char.startswith(names, "name1") & (amounts > 100)
    expected = {k: int(amounts[keep & (names == k)].sum()) for k in set(names[keep])}
    assert got == expected
    plan = session.execute("EXPLAIN ANALYZE " + sql).table.column(0).to_pylist()
    scan = next(line for line in plan if line.lstrip().startswith("Scan"))
    batches, tasks = map(int, re.search(r"(\d+) batches, [\d.]+ ms, (\d+) tasks", scan).groups())
    assert batches <= tasks <= 2, scan       # 8 partitions: 8 batches before
