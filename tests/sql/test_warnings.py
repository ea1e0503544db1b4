"""Warnings of truncating text-to-number conversions (MySQL's 1292 "Truncated incorrect DOUBLE value:
'12x'"): SHOW WARNINGS and @@warning_count after queries over several partitions, the expected
warnings computed in Python from the data (tests/sql/test_mysql_compat_mariadb.py compares with
MariaDB). Both runners (``CANOPY_RUNNER=ray``): the leaves' warnings travel with their results."""
import re
from collections import Counter

import pyarrow as pa
import pytest

import engine

# a text is clean when it is a number whole, leading whitespace aside; trailing whitespace is a Note
INTEGER = r"\s*[+-]?[0-9]+"
NUMBER = r"\s*[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
TEXTS = ["12x", "abc", " 7 ", "1.5e3", None, "8", "", "-3", ".5", "1e", "+4", "0x1A"]
ROWS = 300


@pytest.fixture(scope="module")
def con():
    connection = engine.connect()
    connection.execute("CREATE TABLE w (id BIGINT, s VARCHAR(20), SHARD KEY (id))")
    values = [TEXTS[i % len(TEXTS)] for i in range(ROWS)]
    connection.load_table("w", pa.table({"id": pa.array(range(ROWS), pa.int64()), "s": pa.array(values)}))
    yield connection
    connection.close()


def _diagnostics(con):
    rows = con.execute("SHOW WARNINGS").fetchall()
    count = con.execute("SELECT @@warning_count").fetchall()[0][0]
    return rows, count


def _level(text, pattern):
    """MariaDB's: None for a clean number, else the level of its warning."""
    if text is None or re.fullmatch(pattern, text):
        return None
    return "Note" if re.fullmatch(pattern + r"\s+", text) else "Warning"


def _bad(pattern, where=lambda i: True):
    """(level, text) of each row that warns."""
    texts = [TEXTS[i % len(TEXTS)] for i in range(ROWS) if where(i)]
    return [(_level(t, pattern), t) for t in texts if _level(t, pattern)]


@pytest.mark.parametrize("expression, pattern, name", [
    ("s + 0", NUMBER, "DOUBLE"),
    ("CAST(s AS SIGNED)", INTEGER, "INTEGER"),
    ("CAST(s AS UNSIGNED)", INTEGER, "INTEGER"),
    ("CAST(s AS DECIMAL(10, 2))", NUMBER, "DECIMAL"),
])
def test_rows_that_do_not_convert_warn(con, expression, pattern, name):
    con.execute(f"SELECT id, {expression} FROM w WHERE id < 60")
    rows, count = _diagnostics(con)
    bad = _bad(pattern, lambda i: i < 60)
    expected = [(level, 1292, f"Truncated incorrect {name} value: '{v}'") for level, v in bad]
    if "UNSIGNED" in expression:    # a negative integer read is wrapped: MariaDB's Note 1105 too
        expected += [("Note", 1105, "Cast to unsigned converted negative integer to it's positive complement")
                     for i in range(60) if re.match(r"\s*-[0-9]", TEXTS[i % len(TEXTS)] or "")]
    assert count == len(expected) > 0
    assert sorted((level, int(code), message) for level, code, message in rows) == sorted(expected)
    assert {level for level, _ in bad} == {"Warning", "Note"}


def test_at_most_64_listed_all_counted(con):
    """SHOW WARNINGS lists max_error_count (64) of them; @@warning_count counts every one."""
    con.execute("SELECT SUM(s + 0) FROM w")
    rows, count = _diagnostics(con)
    assert count == len(_bad(NUMBER)) > 64
    assert len(rows) == 64


def test_a_constant_warns_once(con):
    """MySQL evaluates a constant once: one warning however many rows (and batches) meet it."""
    con.execute("SELECT COUNT(*) FROM w WHERE id = 'x1'")      # text beside an integer: MariaDB's DECIMAL
    assert _diagnostics(con) == ([("Warning", "1292", "Truncated incorrect DECIMAL value: 'x1'")], 1)
    assert con.execute("SELECT '12x' + 1").fetchall() == [(13.0,)]
    assert _diagnostics(con)[1] == 1
    # a cached plan warns again on its next run, with the new constant
    con.execute("SELECT '13y' + 1")
    assert _diagnostics(con) == ([("Warning", "1292", "Truncated incorrect DOUBLE value: '13y'")], 1)


def test_clean_statements_reset_the_warnings(con):
    con.execute("SELECT CAST(s AS SIGNED) FROM w")
    assert _diagnostics(con)[1] > 0
    con.execute("SELECT CAST(s AS SIGNED) FROM w WHERE s IN ('8', '-3', '+4')")
    assert _diagnostics(con) == ([], 0)


def test_a_filter_compares_text_with_a_number(con):
    """``s = 0`` reads every text as a number: the ones read in part warn, and 'abc', '', '0x1A'
    ('0' then 'x1A') equal 0."""
    got = con.execute("SELECT COUNT(*) FROM w WHERE s = 0").fetchall()[0][0]
    assert got == sum(1 for i in range(ROWS) if TEXTS[i % len(TEXTS)] in ("abc", "", "0x1A"))
    assert _diagnostics(con)[1] == len(_bad(NUMBER))


@pytest.mark.parametrize("condition, name", [
    ("s = id", "DECIMAL"), ("s IN (1, 2)", "DECIMAL"), ("s < 3", "DECIMAL"),
    ("s = 1.5", "DOUBLE"), ("s = 1e0", "DOUBLE"), ("s + 1 > 0", "DOUBLE"),
])
def test_text_compared_with_integers_is_a_decimal_value(con, condition, name):
    """MariaDB names text read beside an integer a 'DECIMAL value', beside a DECIMAL or DOUBLE and in
    arithmetic a 'DOUBLE value' (tests/sql/test_mysql_compat_mariadb.py asks MariaDB itself)."""
    con.execute(f"SELECT COUNT(*) FROM w WHERE {condition}")
    rows, count = _diagnostics(con)
    bad = _bad(NUMBER)
    assert count == len(bad) > 0
    listed = Counter((level, message) for level, _, message in rows)       # the first 64 of them
    assert sum(listed.values()) == min(64, len(bad))
    assert not listed - Counter((level, f"Truncated incorrect {name} value: '{v}'") for level, v in bad)


def test_a_bigint_past_2_to_the_53_reads_as_the_nearest_double(con):
    # Arrow's safe cast refused these (out of range), so comparing such a BIGINT with text failed
    big = 2 ** 62 + 1
    assert con.execute(f"SELECT CAST({big} AS DOUBLE), {big} = '4611686018427387904'").fetchall() == \
        [(float(big), True)]


def test_the_listed_warnings_come_in_the_same_order_every_time(con, monkeypatch):
    """Each task records apart and the tasks' warnings are merged in (stage, task) order, so the 64
    listed are the same, in the same order, however the tasks' threads ran (every stage forced onto
    the thread pool here)."""
    import cluster.local
    monkeypatch.setattr(cluster.local, "INLINE_STAGE_ROWS", 0)
    listings = []
    for _ in range(6):
        con.execute("SELECT id, s + 0, CAST(s AS SIGNED) FROM w")
        listings.append(_diagnostics(con))
    assert all(listing == listings[0] for listing in listings), listings
    assert listings[0][1] == len(_bad(NUMBER)) + len(_bad(INTEGER)) and len(listings[0][0]) == 64


def test_a_retried_attempt_forgets_the_warnings_of_the_failed_one():
    """The scheduler rolls the statement's sink back to where the query started before a retry (the
    retry's tasks record theirs again); what earlier plans of the statement recorded stays."""
    from engine.exec.statement_warnings import Warnings
    sink = Warnings()
    sink.add("Warning", 1292, ["from an init plan"], 1)
    mark = sink.mark()
    sink.add("Warning", 1292, ["a", "b"], 5)
    sink.add("Note", 1292, ["constant"], 1, constant=True)
    sink.rollback(mark)
    sink.add("Warning", 1292, ["a", "b"], 5)
    rows = sink.result()
    assert rows.total == 6 and [m for _, _, m in rows] == ["from an init plan", "a", "b"]


def test_an_unsigned_cast_that_wraps_or_clips_says_so(con):
    """MariaDB's notes and warnings (tests/sql/test_mysql_compat_mariadb.py asks MariaDB itself): a
    negative integer wrapped (Note 1105), a DOUBLE clipped (Note 1916), a DECIMAL clipped (Warning
    1916), text past the range (Warning 1292); one per row, the values as MariaDB prints them."""
    con.execute("SELECT CAST(id - 150 AS UNSIGNED), CAST(id * 1e18 AS UNSIGNED), CAST(id - 299.5 AS UNSIGNED) FROM w")
    rows, count = _diagnostics(con)
    wrapped = [i for i in range(ROWS) if i - 150 < 0]
    doubles = [i for i in range(ROWS) if round(i * 1e18) >= 2 ** 64]
    assert count == len(wrapped) + len(doubles) + ROWS > 64 and len(rows) == 64     # -0.5 rounds to -1
    assert {(level, int(code)) for level, code, _ in rows} <= {("Note", 1105), ("Note", 1916), ("Warning", 1916)}
    con.execute("SELECT CAST(-1 AS UNSIGNED), CAST(1e30 AS UNSIGNED), CAST(-5.5 AS UNSIGNED), "
                "CAST('99999999999999999999' AS UNSIGNED)")
    assert sorted(_diagnostics(con)[0]) == sorted([
        ("Note", "1105", "Cast to unsigned converted negative integer to it's positive complement"),
        ("Note", "1916", "Got overflow when converting '1e30' to UNSIGNED BIGINT. Value truncated"),
        ("Warning", "1916", "Got overflow when converting '-5.5' to UNSIGNED INT. Value truncated"),
        ("Warning", "1292", "Truncated incorrect INTEGER value: '99999999999999999999'")])


def test_an_unsigned_cast_mentioned_twice_warns_twice(con):
    """Repeated subexpressions are computed once (shared_subexpressions), but not a cast that warns
    per row: MySQL counts one per mention."""
    con.execute("SELECT CAST(id - 150 AS UNSIGNED), CAST(id - 150 AS UNSIGNED) > 5 FROM w")
    assert _diagnostics(con)[1] == 2 * 150
