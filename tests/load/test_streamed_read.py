"""The streamed read of LOAD DATA (stream_delimited): blocks parsed ahead while the loader routes the
previous one must add up to exactly what the whole-file read (read_delimited) returns, or give way to
it (WholeFileNeeded) — and through LOAD DATA the table and every error message are those of the whole
read, for blocks far smaller than a file."""
from __future__ import annotations

import gzip

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engine
from engine.catalog import ColumnDef, TableDef
from engine.errors import BadDataError, ConstraintError
from engine.load import delimited, parse_load_data, read_delimited
from engine.load.delimited import WholeFileNeeded, stream_delimited
from engine.types import BIGINT, DOUBLE, TEXT, varchar

CSV = "FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"'"
T = TableDef("db", "t", (ColumnDef("id", BIGINT, nullable=False), ColumnDef("name", varchar(12)),
                         ColumnDef("x", DOUBLE), ColumnDef("note", TEXT)))


def statement(path, clauses=CSV):
    return parse_load_data(f"LOAD DATA INFILE '{path}' INTO TABLE t {clauses}")


def streamed(path, clauses=CSV, chunk_bytes=64):
    """The streamed blocks concatenated, or None when the stream gave way to the whole read."""
    try:
        blocks = [block for block, _ in stream_delimited(statement(path, clauses), T, chunk_bytes=chunk_bytes)]
    except WholeFileNeeded:
        return None
    assert all(b.schema == T.arrow_schema for b in blocks)
    return pa.concat_tables(blocks, promote_options="none").combine_chunks() if blocks else None


def whole(path, clauses=CSV):
    return read_delimited(statement(path, clauses), T).combine_chunks()


def rows_text(n, start=0):
    return "".join(f'{i},"n, {i % 7}",{i / 4},"say ""{i}"""\n' for i in range(start, start + n))


def test_blocks_add_up_to_the_whole_read(tmp_path):
    """Also holds the reader to its one reused buffer: every block is compared after the last was
    read into it, so a parsed block that pointed into the buffer would show the last run's bytes."""
    path = tmp_path / "a.csv"
    path.write_text("id,name,x,note\n" + rows_text(500))
    for chunk_bytes in (1, 40, 333, 4096, 1 << 20):
        result = streamed(path, CSV + " IGNORE 1 LINES", chunk_bytes)
        assert result is not None, chunk_bytes          # a well-formed file takes the fast path
        assert result.equals(whole(path, CSV + " IGNORE 1 LINES"))
        assert result.num_rows == 500


def test_a_last_line_without_its_line_end(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text(rows_text(30).rstrip("\n"))
    assert streamed(path).equals(whole(path))


def test_compressed_input_streams(tmp_path):
    path = tmp_path / "a.csv.gz"
    path.write_bytes(gzip.compress(rows_text(300).encode()))
    assert streamed(path, chunk_bytes=100).equals(whole(path))


@pytest.mark.parametrize("text", [
    rows_text(20) + '21,"two\nlines",1,x\n' + rows_text(20, 22),     # a quoted line end
    rows_text(20) + "\n" + rows_text(5, 20),                         # a blank line
    rows_text(20) + "21,a\\,b,1,x\n",                                # an escape character
    rows_text(20) + '21,ab"c,1,x\n',                                 # an odd number of quotes
    "",                                                              # an empty file
])
def test_files_the_fast_path_cannot_trust_give_way(tmp_path, text):
    path = tmp_path / "a.csv"
    path.write_text(text)
    assert streamed(path) is None


# Lines built from pieces that stress the fast path: quotes, doubled quotes, commas and line ends
# inside quotes, escapes, blank lines, missing fields.
_FIELD = st.one_of(st.integers(-5, 10 ** 6).map(str), st.sampled_from(["", "a", "xyz", "a b"]),
                   st.sampled_from(['"q, r"', '"say ""hi"""', '"two\nlines"', '"', "\\N", "\\t", "é"]))
_LINE = st.lists(_FIELD, min_size=3, max_size=5).map(",".join)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(_LINE, max_size=30), chunk_bytes=st.integers(1, 200), newline_at_end=st.booleans())
def test_stream_equals_whole_read_or_gives_way(tmp_path, lines, chunk_bytes, newline_at_end):
    path = tmp_path / "p.csv"
    path.write_text("\n".join(lines) + ("\n" if newline_at_end and lines else ""))
    try:
        expected = whole(path)
    except (BadDataError, ConstraintError):
        expected = None
    try:
        blocks = [b for b, _ in stream_delimited(statement(path), T, chunk_bytes=chunk_bytes)]
    except WholeFileNeeded:
        return
    except (BadDataError, ConstraintError) as error:     # a value check on a block
        # the whole read fails too (checking column by column, it may name another bad value first)
        assert expected is None, error
        return
    assert expected is not None
    assert pa.concat_tables(blocks).combine_chunks().equals(expected)


# -- through LOAD DATA ---------------------------------------------------------------------------
@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(delimited, "STREAM_CHUNK_BYTES", 256)


def _load(tmp_path, text, clauses=CSV):
    path = tmp_path / "l.csv"
    path.write_text(text)
    with engine.connect(progress=False, load_dir=str(tmp_path)) as con:
        con.execute("CREATE TABLE t (id BIGINT NOT NULL, name VARCHAR(12), x DOUBLE, note TEXT, SHARD KEY (id))")
        try:
            count = con.execute(f"LOAD DATA INFILE '{path}' INTO TABLE t {clauses}").rowcount
        except Exception as error:      # noqa: BLE001 - compared with the whole read's below
            assert con.execute("SELECT COUNT(*) FROM t").fetchone()[0] == 0     # nothing visible
            return error
        return count, con.execute("SELECT id, name, x, note FROM t ORDER BY id").fetchall()


def test_load_data_in_small_blocks(tmp_path, small_chunks):
    count, got = _load(tmp_path, rows_text(400))
    assert count == 400
    assert got == [(i, f"n, {i % 7}", i / 4, f'say "{i}"') for i in range(400)]


def test_load_data_falls_back_after_routing_blocks(tmp_path, small_chunks):
    """A quoted line end far into the file: the blocks routed before it are dropped, not doubled."""
    count, got = _load(tmp_path, rows_text(300) + '300,"two\nlines",1,x\n' + rows_text(10, 301))
    assert count == 311
    assert len(got) == 311 and got[300] == (300, "two\nlines", 1.0, "x")


@pytest.mark.parametrize("bad_line, message", [
    ('350,"much too long a name",1,x', "line 351, column 'name'"),
    ("351,a,not-a-number,x", "line 351, column 'x'"),
    ("352,a,1", "line 351: expected 4 fields, got 3"),
])
def test_errors_in_a_late_block_name_the_line(tmp_path, small_chunks, bad_line, message):
    error = _load(tmp_path, rows_text(350) + bad_line + "\n" + rows_text(5, 400))
    assert isinstance(error, (BadDataError, ConstraintError)) and message in str(error), error


@pytest.fixture
def small_load_batches(monkeypatch):
    import cluster.load
    monkeypatch.setattr(cluster.load, "LOAD_CHUNK_ROWS", 50)


def test_routed_pieces_are_concatenated_per_partition(tmp_path, small_chunks, small_load_batches, monkeypatch):
    """The embedded runner concatenates a partition's pieces as the load goes: the stores get batches
    of LOAD_CHUNK_ROWS rows, not one per parsed block, and every row once."""
    from engine.storage import memory
    monkeypatch.setattr(memory, "_TAIL_PIECES", 1 << 30)    # the store's own coalescing would hide the load's
    path = tmp_path / "l.csv"
    path.write_text(rows_text(2000))
    with engine.connect(progress=False, load_dir=str(tmp_path)) as con:
        con.execute("CREATE TABLE t (id BIGINT NOT NULL, name VARCHAR(12), x DOUBLE, note TEXT, SHARD KEY (id))")
        con.execute(f"LOAD DATA INFILE '{path}' INTO TABLE t {CSV}")
        assert con.execute("SELECT COUNT(*), COUNT(DISTINCT id), SUM(id) FROM t").fetchone() == (2000, 2000, 1999000)
        runner, table = con.session.runner, con.session.catalog.table("canopy", "t")
        if type(runner).__name__ != "LocalRunner":       # a Ray runner's leaves are actors
            pytest.skip("the embedded runner's stores")
        stores = [leaf.storage.store(table.table_id, p) for leaf in runner.leaves for p in leaf.partitions]
        # 2000 rows stay in the stores' tails (a segment starts at flush_rows): the batches appended
        sizes = [b.num_rows for store in stores for b in store.snapshot()[1]]
        # each partition: batches of >= 50 rows, plus the pieces of fewer than 50 rows left at the end
        assert sum(sizes) == 2000 and sum(n for n in sizes if n < 50) < 50 * len(stores)
        assert sum(1 for n in sizes if n >= 50) >= 2000 // 100


def test_fallback_drops_concatenated_batches_too(tmp_path, small_chunks, small_load_batches):
    count, got = _load(tmp_path, rows_text(600) + '600,"two\nlines",1,x\n' + rows_text(10, 601))
    assert count == 611 and [r[0] for r in got] == list(range(611))


def test_wrong_field_count_in_a_file_with_escapes_names_the_line(tmp_path):
    """The escape rewrite's placeholders are not UTF-8; the error for a short row must still name it."""
    path = tmp_path / "e.csv"
    path.write_text('1,a,1,\\N\n2,b\\\\c,2,x\n3,\\N,3\n4,d,4,y\n')
    with pytest.raises(BadDataError, match=r"line 3: expected 4 fields, got 3$"):      # the row itself not echoed
        whole(path)


def test_skip_parser_errors_skips_a_short_row_holding_escapes(tmp_path):
    """Under SKIP PARSER ERRORS the short row holding ``\\N`` is skipped and counted (pyarrow decodes a
    skipped row as UTF-8, which the escape placeholders are not); the other rows keep their escapes."""
    path = tmp_path / "e.csv"
    path.write_text('1,a,1,\\N\n2,b\\\\c,2,x\n3,\\N,3\n4,d\\N,4,\\\\\n')
    with engine.connect(progress=False, load_dir=str(tmp_path)) as con:
        con.execute("CREATE TABLE t (id BIGINT, name VARCHAR(12), x DOUBLE, note TEXT)")
        loaded = con.execute(f"LOAD DATA INFILE '{path}' SKIP PARSER ERRORS INTO TABLE t "
                             "FIELDS TERMINATED BY ',' ESCAPED BY '\\\\'")
        assert loaded.rowcount == 3
        assert con.execute("SHOW WARNINGS").fetchall() == [
            ("Warning", "1261", f"LOAD DATA {path}: line 3: expected 4 fields, got 3")]
        assert con.execute("SELECT * FROM t ORDER BY id").fetchall() == [
            (1, "a", 1.0, None), (2, "b\\c", 2.0, "x"), (4, "dN", 4.0, "\\")]


def test_the_leaves_keep_no_staged_chunks_after_a_load(tmp_path, small_chunks, small_load_batches):
    """The embedded runner stages a load's concatenated pieces on its leaves (cluster.leaf_writes) as it
    reads: the commit takes every staged chunk, and a load failing late drops what the leaves held."""
    good, bad = tmp_path / "good.csv", tmp_path / "bad.csv"
    good.write_text(rows_text(1500))
    bad.write_text(rows_text(1500, 2000) + "3500,a,not-a-number,x\n" + rows_text(20, 3501))
    with engine.connect(progress=False, load_dir=str(tmp_path)) as con:
        runner = con.session.runner
        if not hasattr(runner, "_leaves_writes"):
            pytest.skip("the embedded runner's leaves")
        staged = lambda: [w.staged_info() for w in runner._leaves_writes.writes]   # noqa: E731
        con.execute("CREATE TABLE t (id BIGINT NOT NULL, name VARCHAR(12), x DOUBLE, note TEXT, SHARD KEY (id))")
        assert con.execute(f"LOAD DATA INFILE '{good}' INTO TABLE t {CSV}").rowcount == 1500
        assert staged() == [{}] * runner.num_leaves
        with pytest.raises(BadDataError, match="line 1501"):
            con.execute(f"LOAD DATA INFILE '{bad}' INTO TABLE t {CSV}")
        assert staged() == [{}] * runner.num_leaves
        assert con.execute("SELECT COUNT(*), SUM(id) FROM t").fetchone() == (1500, sum(range(1500)))
