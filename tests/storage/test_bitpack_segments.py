"""Bit-packed integer columns in segments: chosen for narrow ranges, stored as valid Arrow IPC (a
binary column plus field metadata), decoded on read with nulls, record-batch boundaries and small
read batches intact."""
import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from engine.storage.columnstore.encoding import decode_batch
from engine.storage.columnstore.segment import Segment, write_segment

ROWS = 1_300
CHUNK = 500


def _table():
    rng = np.random.default_rng(11)
    null = rng.random(ROWS) < 0.1
    null[0] = True                                  # a record batch whose first slot is null
    null[CHUNK:2 * CHUNK] = True                    # and one that is all null
    columns = {
        # few distinct values: dictionary wins over bit-packing
        "i8": pa.array(rng.integers(-100, -90, ROWS).astype(np.int8), mask=null),
        "i16": pa.array(rng.integers(1000, 1100, ROWS).astype(np.int16)),
        "i32": pa.array(rng.integers(-(2**31), -(2**31) + 2**15, ROWS).astype(np.int32), mask=null),
        "i64": pa.array(rng.integers(-(10**12), -(10**12) + 2**30, ROWS), mask=null),
        "u64": pa.array(rng.integers(2**63, 2**63 + 2**20, ROWS, dtype=np.uint64)),
        "wide": pa.array(rng.integers(-(2**62), 2**62, ROWS)),            # 63 bits: plain
        "same": pa.array(np.full(ROWS, 7, np.int32)),
    }
    return pa.table(columns)


def test_narrow_integers_are_bit_packed_and_read_back(tmp_path):
    table = _table()
    info = write_segment(tmp_path / "s.arrow", table, CHUNK)
    encodings = {name: stats.encoding for name, stats in info.columns.items()}
    assert encodings == {"i8": "dictionary", "i16": "dictionary", "i32": "bitpack", "i64": "bitpack",
                         "u64": "bitpack", "wide": "plain", "same": "run_end"}
    assert info.columns["i64"].nulls == table.column("i64").null_count
    with pa.memory_map(str(tmp_path / "s.arrow")) as source:
        reader = ipc.open_file(source)
        field = reader.schema.field("i32")
        assert field.type == pa.binary() and field.metadata[b"canopy.encoding"] == b"bitpack"
        assert reader.num_record_batches == 3
        for i in range(3):
            reader.get_batch(i).validate(full=True)
    segment = Segment(tmp_path, info, table.schema)
    try:
        names = table.column_names
        for batch_rows in (None, 64, 333):
            for encoded in (False, True):
                batches = list(segment.batches(names, batch_rows, encoded=encoded))
                assert all(batch_rows is None or b.num_rows <= batch_rows for b in batches)
                # encoded scans get packed columns already decoded, run-end / dictionary ones not
                got = pa.Table.from_batches([decode_batch(b, table.schema) for b in batches])
                assert got.equals(table), (batch_rows, encoded)
        # a projection of one packed column, out of file order
        got = pa.concat_arrays([b.column(0) for b in segment.batches(["i64"], 100)])
        assert got.equals(table.column("i64").combine_chunks())
    finally:
        segment.close()
