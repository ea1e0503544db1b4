"""Secondary indexes (issue 16): ``KEY`` / ``INDEX`` in CREATE TABLE, ``CREATE INDEX``, ``DROP INDEX``,
``ALTER TABLE ... ADD INDEX|KEY`` / ``DROP INDEX|KEY``, listed by SHOW INDEX and
information_schema.STATISTICS; equality and IN lookups on an indexed column (or a key's first
column) read only the segments whose hash index holds a looked-up value (engine.storage.hash_index).
Answers are checked against Python's own filtering of the rows loaded; runs on either runner
(``CANOPY_RUNNER=ray``); the rows-read checks look at the embedded runner's stores."""
from __future__ import annotations

import itertools
import os

import numpy as np
import pyarrow as pa
import pytest

import engine
from engine.errors import NotSupportedError, ProgrammingError

_names = itertools.count()
RAY = os.environ.get("CANOPY_RUNNER") == "ray"
SEGMENT_ROWS = 8192


@pytest.fixture(scope="module")
def con(tmp_path_factory):
    # small segments, so a modest table has many of them
    connection = engine.connect(data_dir=str(tmp_path_factory.mktemp("indexes")), leaves=1, partitions_per_leaf=2,
                                segment_rows=SEGMENT_ROWS, flush_rows=SEGMENT_ROWS)
    yield connection
    connection.close()


@pytest.fixture
def name(con):
    table = f"ix{next(_names)}"
    yield table
    con.execute(f"DROP TABLE IF EXISTS {table}")


def index_rows(con, table):
    # sorted here, in Python's (binary) order: ORDER BY would sort under the case-insensitive collation
    return sorted(con.execute(f"SELECT INDEX_NAME, SEQ_IN_INDEX, COLUMN_NAME, NON_UNIQUE, INDEX_TYPE FROM "
                              f"information_schema.STATISTICS WHERE TABLE_NAME = '{table}'").fetchall())


def test_index_ddl_is_listed(con, name):
    con.execute(f"CREATE TABLE {name} (id BIGINT PRIMARY KEY, k INT, s VARCHAR(10), KEY (k), "
                f"INDEX by_s (s, k) USING HASH)")
    assert index_rows(con, name) == [("PRIMARY", 1, "id", 0, "HASH"), ("__SHARDKEY", 1, "id", 1, "METADATA_ONLY"),
                                     ("by_s", 1, "s", 1, "HASH"), ("by_s", 2, "k", 1, "HASH"),
                                     ("k", 1, "k", 1, "HASH")]
    con.execute(f"CREATE INDEX by_k ON {name} (k)")
    con.execute(f"ALTER TABLE {name} ADD KEY (s)")          # unnamed: named after its column
    con.execute(f"ALTER TABLE {name} ADD INDEX by_id (id)")
    shown = con.execute(f"SHOW INDEX FROM {name}").fetchall()
    assert [(r[2], r[4]) for r in shown] == [("PRIMARY", "id"), ("k", "k"), ("by_s", "s"), ("by_s", "k"),
                                             ("by_k", "k"), ("s", "s"), ("by_id", "id"), ("__SHARDKEY", "id")]
    con.execute(f"DROP INDEX by_k ON {name}")
    con.execute(f"ALTER TABLE {name} DROP INDEX s")
    con.execute(f"ALTER TABLE {name} DROP KEY by_id")
    assert [r[0] for r in index_rows(con, name)] == ["PRIMARY", "__SHARDKEY", "by_s", "by_s", "k"]
    assert "KEY `by_s` (`s`, `k`) USING HASH" in con.execute(f"SHOW CREATE TABLE {name}").fetchall()[0][1]


def test_index_ddl_errors(con, name):
    con.execute(f"CREATE TABLE {name} (id INT PRIMARY KEY, k INT, KEY by_k (k))")
    with pytest.raises(ProgrammingError, match="Duplicate key name"):
        con.execute(f"CREATE INDEX by_k ON {name} (id)")
    with pytest.raises(ProgrammingError, match="check that column/key exists"):
        con.execute(f"DROP INDEX nope ON {name}")
    with pytest.raises(ProgrammingError, match="unknown column|Unknown column"):
        con.execute(f"CREATE INDEX by_x ON {name} (x)")
    with pytest.raises(NotSupportedError, match="PRIMARY or UNIQUE"):
        con.execute(f"ALTER TABLE {name} DROP INDEX `PRIMARY`")
    with pytest.raises(NotSupportedError, match="CREATE UNIQUE INDEX"):
        con.execute(f"CREATE UNIQUE INDEX u ON {name} (k)")
    with pytest.raises(NotSupportedError, match="FULLTEXT"):
        con.execute(f"ALTER TABLE {name} ADD FULLTEXT INDEX f (k)")
    assert [r[0] for r in index_rows(con, name)] == ["PRIMARY", "__SHARDKEY", "by_k"]


def test_dropped_column_leaves_its_indexes(con, name):
    con.execute(f"CREATE TABLE {name} (id INT PRIMARY KEY, a INT, b INT, KEY ab (a, b), KEY only_b (b))")
    con.execute(f"INSERT INTO {name} VALUES (1, 2, 3)")
    con.execute(f"ALTER TABLE {name} DROP COLUMN b")
    assert [(r[0], r[2]) for r in index_rows(con, name)] == [("PRIMARY", "id"), ("__SHARDKEY", "id"), ("ab", "a")]
    assert con.execute(f"SELECT * FROM {name} WHERE a = 2").fetchall() == [(1, 2)]


def _load(con, name, rows: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    data = pa.table({"id": np.arange(rows, dtype=np.int64),
                     "k": rng.integers(0, rows // 4, rows),
                     "s": pa.array([f"v{i % 997}" for i in range(rows)]),
                     "d": rng.integers(0, 100, rows).astype(np.float64)})
    con.execute(f"CREATE TABLE {name} (id BIGINT PRIMARY KEY, k BIGINT, s VARCHAR(10), d DOUBLE, "
                f"KEY (k), KEY (s))")
    con.load_table(name, data)
    # statistics now: collecting them later (for the optimizer) reads columns of every segment,
    # which the read counts below would include
    con.execute(f"ANALYZE TABLE {name}")
    return data


def _stores(con, name):
    table = con.session.catalog.table("canopy", name)
    return [s for leaf in con.session.runner.leaves for _, s in leaf.storage.stores_of(table.table_id)]


def _reads(con, name, sql, params=None):
    """(rows answered, segments read, rows read) of one query, summed over the table's stores."""
    stores = _stores(con, name)
    before = [dict(s.scan_stats) for s in stores]
    cursor = con.execute(sql, params)
    out = cursor.fetchall() if cursor.description else None
    segments = sum(s.scan_stats["segments_read"] - b["segments_read"] for s, b in zip(stores, before))
    rows = sum(s.scan_stats["rows_read"] - b["rows_read"] for s, b in zip(stores, before))
    return out, segments, rows


def test_lookups_match_python(con, name):
    data = _load(con, name, 40_000).to_pandas()
    con.execute(f"DELETE FROM {name} WHERE id % 7 = 3")       # delete files: positions must skip them
    con.execute(f"UPDATE {name} SET k = -1 WHERE id = 11")
    data = data[data.id % 7 != 3].copy()
    data.loc[data.id == 11, "k"] = -1
    for k in [int(data.k.iloc[5]), -1, 10**9]:
        got = con.execute(f"SELECT id FROM {name} WHERE k = %s ORDER BY id", (k,)).fetchall()
        assert [r[0] for r in got] == sorted(data.id[data.k == k].tolist())
    keys = [int(v) for v in data.k.iloc[[1, 2, 3]]] + [123456789]
    got = con.execute(f"SELECT id, k FROM {name} WHERE k IN ({', '.join(map(str, keys))}) ORDER BY id").fetchall()
    assert got == [(int(i), int(k)) for i, k in data[data.k.isin(keys)][["id", "k"]].itertuples(index=False)]
    got = con.execute(f"SELECT count(*), sum(d) FROM {name} WHERE s = 'v42'").fetchall()
    chosen = data[data.s == "v42"]
    assert got == [(len(chosen), float(chosen.d.sum()))]
    # utf8mb4_general_ci: case and trailing spaces do not matter; under utf8mb4_bin they do
    assert con.execute(f"SELECT count(*), sum(d) FROM {name} WHERE s = 'V42 '").fetchall() == got
    assert con.execute(f"SELECT count(*) FROM {name} WHERE s IN ('V42', 'x')").fetchall() == [(len(chosen),)]
    assert con.execute(f"SELECT count(*) FROM {name} WHERE s = 'V42' COLLATE utf8mb4_bin").fetchall() == [(0,)]
    assert con.execute(f"SELECT id FROM {name} WHERE id = 10").fetchall() == []       # deleted
    assert con.execute(f"SELECT id, k FROM {name} WHERE id = 11").fetchall() == [(11, -1)]
    assert con.execute(f"SELECT count(*) FROM {name} WHERE k = 5 AND s = 'v1'").fetchall() == \
        [(int(((data.k == 5) & (data.s == "v1")).sum()),)]


@pytest.mark.skipif(RAY, reason="counts the embedded runner's store reads")
def test_point_lookup_reads_one_segment(con, name):
    rows = 200_000
    _load(con, name, rows)
    stores = _stores(con, name)
    segments = sum(len(s.segment_infos()) for s in stores)
    assert segments >= 20
    _, full_segments, full_rows = _reads(con, name, f"SELECT id, k FROM {name} WHERE d = 5")
    assert full_segments == segments and full_rows == rows          # no index on d: every segment
    _reads(con, name, f"SELECT id FROM {name} WHERE id = 0")      # first lookup builds the indexes
    for key in (77, 123_457, rows - 1):
        out, read, rows_read = _reads(con, name, f"SELECT id, k FROM {name} WHERE id = %s", (key,))
        assert [r[0] for r in out] == [key]
        assert read == 1 and rows_read == 1, (read, rows_read)
    _reads(con, name, f"SELECT id FROM {name} WHERE k = 0")
    out, read, _ = _reads(con, name, f"SELECT id FROM {name} WHERE k IN (3, 4)")
    assert read <= len(out)
    plan = "\n".join(r[0] for r in con.execute(f"EXPLAIN SELECT * FROM {name} WHERE id = 5").fetchall())
    assert "index lookup on id" in plan


@pytest.mark.skipif(RAY, reason="counts the embedded runner's store reads")
def test_unique_check_uses_the_index(con, name):
    _load(con, name, 100_000)
    con.execute(f"INSERT INTO {name} VALUES (-5, 1, 'x', 0)")       # builds the indexes
    _, read, rows_read = _reads(con, name, f"INSERT INTO {name} VALUES (-6, 1, 'x', 0)")
    assert read == 0 and rows_read <= 2 * SEGMENT_ROWS
    from engine.errors import IntegrityError
    with pytest.raises(IntegrityError, match="Duplicate entry '99999' for key 'PRIMARY'"):
        con.execute(f"INSERT INTO {name} VALUES (99999, 1, 'x', 0)")


def test_indexes_survive_reopen(tmp_path):
    first = engine.connect(data_dir=str(tmp_path), leaves=1, partitions_per_leaf=2, segment_rows=SEGMENT_ROWS,
                           flush_rows=SEGMENT_ROWS)
    data = _load(first, "t", 30_000, seed=3).to_pandas()
    first.execute("CREATE INDEX by_d ON t (d)")
    first.close()
    again = engine.connect(data_dir=str(tmp_path), leaves=1, partitions_per_leaf=2, segment_rows=SEGMENT_ROWS,
                           flush_rows=SEGMENT_ROWS)
    try:
        assert [r[0] for r in index_rows(again, "t")] == ["PRIMARY", "__SHARDKEY", "by_d", "k", "s"]
        got = again.execute("SELECT id FROM t WHERE d = 7 ORDER BY id").fetchall()
        assert [r[0] for r in got] == sorted(data.id[data.d == 7].tolist())
    finally:
        again.close()


@pytest.mark.skipif(RAY, reason="counts the embedded runner's store reads")
def test_point_lookup_in_memory_reads_one_row():
    """Without a data_dir the store keeps the same encoded segments (engine.storage.memory), and a
    lookup on an indexed column reads only the candidate rows there too."""
    memory = engine.connect(leaves=1, partitions_per_leaf=1)
    try:
        rows = 300_000          # one bulk load this big is encoded into a segment, not kept as the tail
        data = _load(memory, "t", rows).to_pandas()
        _, _, full_rows = _reads(memory, "t", "SELECT id, k FROM t WHERE d = 5")
        assert full_rows == rows                                      # no index on d: every row
        _reads(memory, "t", "SELECT id FROM t WHERE id = 0")          # first lookup builds the indexes
        for key in (77, 123_457, rows - 1):
            out, read, rows_read = _reads(memory, "t", "SELECT id, k FROM t WHERE id = %s", (key,))
            assert out == [(key, int(data.k[data.id == key].iloc[0]))]
            assert read == 1 and rows_read == 1, (read, rows_read)
        memory.execute("DELETE FROM t WHERE id = 77")
        assert _reads(memory, "t", "SELECT id FROM t WHERE id = 77")[0] == []
    finally:
        memory.close()


# mixed case, accents, canonically equivalent spellings (NFD 'e' + U+0301 beside NFC 'é'), expansions
# ('ß' = 'ss' under UCA, not under general_ci) and trailing spaces (NO PAD under the 0900 collations)
WORDS = ["resume", "Resume", "RÉSUMÉ", "résumé", "re\u0301sume\u0301", "strasse", "Straße", "STRASSE", "abc",
         "abc ", "ABC", "Åland", "A\u030aland", "\u212bland", "aland", "ǅemal", "dzemal", "Œuvre", "oeuvre"]
PROBES = ["resume", "RESUME", "résumé", "re\u0301sume\u0301", "Straße", "strasse", "abc", "abc ", "åland",
          "Aland", "ǆemal", "oeuvre", "nothing"]


@pytest.mark.parametrize("collation, compared", [
    ("utf8mb4_0900_ai_ci", ""), ("utf8mb4_0900_as_cs", ""), ("utf8mb4_0900_ai_ci", " COLLATE utf8mb4_0900_as_cs"),
    ("utf8mb4_general_ci", " COLLATE utf8mb4_0900_ai_ci"), ("utf8mb4_0900_as_cs", " COLLATE utf8mb4_0900_bin")])
def test_uca_collated_lookups_match_scans(con, name, collation, compared):
    """A key on a string column under a UCA collation answers equality and IN through the column's
    UCA index (0900_ai_ci keys), as does a comparison under an explicit UCA COLLATE on a general_ci
    column: the rows are those a scan of an unindexed copy finds, and fewer segments are read."""
    rows = 5 * SEGMENT_ROWS
    words = pa.array([WORDS[i % len(WORDS)] + ("" if i % 3 else f"#{i % 50}") for i in range(rows)])
    data = pa.table({"id": np.arange(rows, dtype=np.int64), "w": words})
    scanned = name + "_scan"
    for table, key in ((name, ", KEY (w)"), (scanned, "")):
        con.execute(f"CREATE TABLE {table} (id BIGINT PRIMARY KEY, w VARCHAR(20) COLLATE {collation}{key})")
        con.load_table(table, data)
        con.execute(f"ANALYZE TABLE {table}")
    try:
        plan = "\n".join(r[0] for r in con.execute(f"EXPLAIN SELECT id FROM {name} WHERE w{compared} = 'x'"))
        assert "index lookup on w" in plan
        found = 0
        for probe in PROBES + ["abc#0", "Straße#3"]:
            sql = "SELECT id FROM {} WHERE w%s = %%s ORDER BY id" % compared
            expected = con.execute(sql.format(scanned), (probe,)).fetchall()
            got, segments, rows_read = (con.execute(sql.format(name), (probe,)).fetchall(), 0, 0) if RAY \
                else _reads(con, name, sql.format(name), (probe,))
            assert got == expected, probe
            found += len(got)
            # only the index's candidates are read: the rows of equal 0900_ai_ci keys ('RESUME' reads
            # the rows of 'resume' under as_cs, a few words of the 19), none for a word no row has
            assert rows_read < rows // 3, (probe, rows_read)
            assert probe != "nothing" or (segments, rows_read) == (0, 0)
        assert found > rows // 4            # the probes do find rows
        probes = "', '".join(PROBES[:5])
        sql = f"SELECT id FROM {{}} WHERE w{compared} IN ('{probes}') ORDER BY id"
        assert con.execute(sql.format(name)).fetchall() == con.execute(sql.format(scanned)).fetchall()
    finally:
        con.execute(f"DROP TABLE IF EXISTS {scanned}")
