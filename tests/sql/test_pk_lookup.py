"""Point lookups by primary key (issue 16): ``WHERE pk = ?`` and ``WHERE pk IN (...)`` on a table of
several segments read only the segments whose hash index holds a looked-up key, and only the
candidate rows there, in memory and in a ``data_dir``, for a BIGINT and a collated VARCHAR key. What
was read comes from EXPLAIN ANALYZE (the stores' scan statistics, summed by the scan), so the module
runs on either runner (``CANOPY_RUNNER=ray``). Answers are checked against Python's own lookup of the
rows loaded. benchmarks/point_lookup.py times the same on 10M rows."""
from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import engine

ROWS = 3 * 140_000     # in memory, one bulk load of over flush_rows (131,072) rows becomes a segment


@pytest.fixture(scope="module", params=["memory", "data_dir"])
def con(request, tmp_path_factory):
    if request.param == "memory":
        connection = engine.connect(leaves=1, partitions_per_leaf=1)
        loads = 3           # three loads: three segments
    else:
        connection = engine.connect(data_dir=str(tmp_path_factory.mktemp("pk")), leaves=1, partitions_per_leaf=1,
                                    segment_rows=32_768, flush_rows=32_768)
        loads = 1
    rng = np.random.default_rng(5)
    ids = rng.permutation(ROWS).astype(np.int64)        # no segment's min/max rules a key out
    keys = pc.binary_join_element_wise("user-", pc.utf8_lpad(pc.cast(pa.array(ids), pa.string()), 8, "0"), "")
    data = pa.table({"id": ids, "k": keys, "v": rng.integers(0, 1000, ROWS).astype(np.int32)})
    connection.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, k VARCHAR(16), v INT)")
    connection.execute("CREATE TABLE ts (k VARCHAR(16) PRIMARY KEY, id BIGINT, v INT)")
    step = ROWS // loads
    for start in range(0, ROWS, step):
        piece = data.slice(start, step)
        connection.load_table("t", piece)
        connection.load_table("ts", piece)
    for table in ("t", "ts"):
        # statistics now (collecting them reads every segment) and the segments' indexes built
        connection.execute(f"ANALYZE TABLE {table}")
    connection.execute("SELECT * FROM t WHERE id = -1")
    connection.execute("SELECT * FROM ts WHERE k = ''")
    connection.expected = {int(i): (int(i), k, int(v)) for i, k, v in zip(*(data[c].to_numpy(zero_copy_only=False)
                                                                            for c in ("id", "k", "v")))}
    yield connection
    connection.close()


def reads(con, sql, params=None) -> tuple[int, int]:
    """(segments, rows) the scan of ``sql`` read from storage, from EXPLAIN ANALYZE."""
    text = "\n".join(r[0] for r in con.execute("EXPLAIN ANALYZE " + sql, params).fetchall())
    found = re.findall(r"read ([\d,]+) segments, ([\d,]+) rows from storage", text)
    assert len(found) == 1, text
    return tuple(int(n.replace(",", "")) for n in found[0])


def test_table_has_several_segments(con):
    segments, rows = reads(con, "SELECT * FROM t WHERE v + 1 = 0")    # no index, no zone map: every segment
    assert segments >= 3 and rows == ROWS


@pytest.mark.parametrize("key", [0, 77, 123_457, ROWS - 1])
def test_int_key_reads_one_row(con, key):
    assert con.execute("SELECT id, k, v FROM t WHERE id = %s", (key,)).fetchall() == [con.expected[key]]
    assert reads(con, "SELECT * FROM t WHERE id = %s", (key,)) == (1, 1)


def test_missing_key_reads_nothing(con):
    assert con.execute("SELECT * FROM t WHERE id = %s", (ROWS + 5,)).fetchall() == []
    assert reads(con, "SELECT * FROM t WHERE id = %s", (ROWS + 5,)) == (0, 0)
    assert reads(con, "SELECT * FROM ts WHERE k = %s", ("nobody",)) == (0, 0)


def test_in_list_reads_the_keys_rows(con):
    keys = [3, 140_001, 300_007, ROWS + 1]
    got = con.execute(f"SELECT id, k, v FROM t WHERE id IN ({', '.join(map(str, keys))}) ORDER BY id").fetchall()
    assert got == [con.expected[k] for k in keys if k in con.expected]
    segments, rows = reads(con, f"SELECT * FROM t WHERE id IN ({', '.join(map(str, keys))})")
    assert rows == 3 and 1 <= segments <= 3


def test_collated_varchar_key(con):
    row = con.expected[4242]
    want = [(row[1], row[0], row[2])]
    assert con.execute("SELECT k, id, v FROM ts WHERE k = %s", (row[1],)).fetchall() == want
    assert reads(con, "SELECT * FROM ts WHERE k = %s", (row[1],)) == (1, 1)
    # utf8mb4_general_ci: case and trailing spaces do not matter, and the index still answers
    shouted = row[1].upper() + "  "
    assert con.execute("SELECT k, id, v FROM ts WHERE k = %s", (shouted,)).fetchall() == want
    assert reads(con, "SELECT * FROM ts WHERE k = %s", (shouted,)) == (1, 1)
    assert con.execute("SELECT k FROM ts WHERE k = %s COLLATE utf8mb4_bin", (shouted,)).fetchall() == []
    others = [con.expected[n][1] for n in (1, 2, 3)]
    got = con.execute(f"SELECT id FROM ts WHERE k IN ('{others[0]}', '{others[1].upper()}', '{others[2]}', 'x') "
                      "ORDER BY id").fetchall()
    assert got == [(1,), (2,), (3,)]
    assert reads(con, f"SELECT * FROM ts WHERE k IN ('{others[0]}', '{others[1].upper()}', '{others[2]}')")[1] == 3
