"""utf8mb4_0900_as_cs (MySQL 8: accent- and case-sensitive UCA, NO PAD) against a Python model of it
for the Latin text drawn here: strings are equal when their NFC forms are, once characters that weigh
nothing (the soft hyphen) are dropped; they order by the primary level first (tests/sql/
test_collation_0900.model). Comparisons, GROUP BY, DISTINCT, joins, IN and LIKE, on both runners
(``CANOPY_RUNNER=ray``); tests/sql/test_collation_mariadb.py checks the tables and expressions against
MariaDB's utf8mb4_uca1400_nopad_as_cs."""
import collections
import random
import re
import unicodedata

import pyarrow as pa
import pytest

import engine
from engine.errors import ProgrammingError
from tests.sql.test_collation_0900 import LETTERS, model as primary

AS_CS = "utf8mb4_0900_as_cs"


def exact(s):
    """What _as_cs compares for this text: the NFC form without ignorable characters."""
    return unicodedata.normalize("NFC", s).replace("\u00AD", "")


def like(s, pattern):
    """MySQL's LIKE: character by character as written (no NFC: 'e' + U+0301 is two), a character
    that weighs nothing (the soft hyphen) one of its own."""
    regex = "".join(".*" if ch == "%" else "." if ch == "_" else re.escape(ch) for ch in pattern)
    return re.fullmatch(regex, s, re.DOTALL) is not None


@pytest.fixture(scope="module")
def con():
    rng = random.Random(11)
    words = ["".join(rng.choice(LETTERS) for _ in range(rng.randint(0, 4))) for _ in range(400)]
    words += ["a", "a ", "A", "á", "a\u0301", "ss", "ß", "fi", "ﬁ", "Ａ", "e\u0301", "é", "x\u00ADy", "xy"]
    connection = engine.connect()
    connection.execute(f"CREATE TABLE w (id BIGINT, s VARCHAR(20) COLLATE {AS_CS}, g VARCHAR(20), SHARD KEY (id))")
    connection.load_table("w", pa.table({"id": pa.array(range(len(words)), pa.int64()), "s": words, "g": words}))
    connection.words = words
    yield connection
    connection.close()


# each checked on MariaDB 10.11's utf8mb4_uca1400_nopad_as_cs
EXPECTED = [("'a' = 'A'", 0), ("'a' = 'á'", 0), ("'é' = 'e\u0301'", 1), ("'a' = 'a\x01'", 1),
            ("'ﬁ' = 'fi'", 0), ("'ａ' = 'a'", 0), ("'a ' = 'a'", 0), ("'ß' = 'ss'", 0), ("'Å' = '\u212B'", 1),
            ("'x\u200By' = 'xy'", 1), ("'\u0661' = '1'", 1), ("'ǅ' = 'Dž'", 0), ("'b' > 'A'", 1), ("'a' < 'B'", 1),
            ("'ﬁ' > 'fi'", 1), ("'É' LIKE 'é'", 0), ("'é' LIKE '_'", 1), ("'ABC' LIKE 'a%'", 0),
            ("'Straße' LIKE 'Stra_e'", 1), ("LOCATE('é', 'xÉé')", 3), ("'x' IN ('X', 'y')", 0),
            # UCA's levels: accents (secondary) over the whole string before case (tertiary), lower
            # case first ('a' < 'A', MySQL 8's order); characters above U+FFFF weigh apart
            ("'a' < 'A'", 1), ("'A' < 'á'", 1), ("'Á' < 'ä'", 1), ("'Ae' < 'aé'", 1), ("'ab' < 'aB'", 1),
            ("'aB' < 'Ab'", 1), ("'ａ' > 'a'", 1), ("'ａ' < 'A'", 1), ("'😀' = '🙂'", 0), ("'😀' < '🙂'", 1),
            # LIKE character by character as written; characters above U+FFFF weigh apart
            ("'é' LIKE 'é'", 0), ("'é' LIKE '__'", 1), ("'x­y' LIKE 'xy'", 0),
            ("'x­y' LIKE 'x_y'", 1), ("'😀' LIKE '🙂'", 0), ("'😀x' LIKE '😀_'", 1), ("'𝐀' = 'A'", 0),
            ("'𐐀' = '𐐨'", 0), ("'x󠁁y' = 'xy'", 1)]


@pytest.mark.parametrize("expression,want", EXPECTED, ids=[e for e, _ in EXPECTED])
def test_expressions(con, expression, want):
    con.execute(f"SET NAMES utf8mb4 COLLATE {AS_CS}")
    try:
        assert con.execute(f"SELECT {expression}").fetchall() == [(want,)]
    finally:
        con.execute("SET NAMES utf8mb4")


def test_group_distinct_and_join_follow_the_model(con):
    want = collections.Counter(exact(w) for w in con.words)
    got = con.execute("SELECT s, COUNT(*) FROM w GROUP BY s").fetchall()
    assert sorted(n for _, n in got) == sorted(want.values())
    assert all(want[exact(s)] == n for s, n in got)
    assert con.execute("SELECT COUNT(DISTINCT s) FROM w").fetchall() == [(len(want),)]
    pairs = sum(n * n for n in want.values())
    assert con.execute("SELECT COUNT(*) FROM w x JOIN w y ON x.s = y.s").fetchall() == [(pairs,)]


@pytest.mark.parametrize("value", ["a", "A", "é", "e\u0301", "ss", "ß", "ﬁ", "x\u00ADy", "a "])
def test_filters_follow_the_model(con, value):
    ids = sorted(i for i, w in enumerate(con.words) if exact(w) == exact(value))
    assert [r[0] for r in con.execute("SELECT id FROM w WHERE s = %s ORDER BY id", (value,)).fetchall()] == ids
    others = sorted(i for i, w in enumerate(con.words) if exact(w) in (exact(value), "b"))
    got = con.execute("SELECT id FROM w WHERE s IN (%s, 'b') ORDER BY id", (value,)).fetchall()
    assert [r[0] for r in got] == others


@pytest.mark.parametrize("pattern", ["a%", "A%", "%é%", "_", "%ß", "s_", "%\u00AD%"])
def test_like_follows_the_model(con, pattern):
    ids = sorted(i for i, w in enumerate(con.words) if like(w, pattern))
    got = con.execute("SELECT id FROM w WHERE s LIKE %s ORDER BY id", (pattern,)).fetchall()
    assert [r[0] for r in got] == ids


def test_order_is_primary_first(con):
    """ORDER BY: alphabetical (the primary level) first; equal strings next to each other."""
    got = [r[0] for r in con.execute("SELECT s FROM w ORDER BY s").fetchall()]
    keys = [primary(s) for s in got]
    assert keys == sorted(keys)
    seen, last = set(), None
    for s in got:
        if exact(s) != last:
            assert exact(s) not in seen
            seen.add(last)
            last = exact(s)


# MySQL 8's documented order of utf8mb4_0900_as_cs (DUCET's three levels: letters, then accents, then
# case with the lower case first)
DOCUMENTED = ["a", "A", "á", "Á", "ä", "Ä", "ab", "aB", "Ab", "AB", "áb", "b", "B", "e", "E", "é", "É", "ê", "ë"]


def test_order_follows_the_uca_levels():
    con = engine.connect()
    try:
        con.execute(f"CREATE TABLE d (id BIGINT, s VARCHAR(5) COLLATE {AS_CS})")
        shuffled = random.Random(3).sample(DOCUMENTED, len(DOCUMENTED))
        con.load_table("d", pa.table({"id": pa.array(range(len(shuffled)), pa.int64()), "s": shuffled}))
        assert [r[0] for r in con.execute("SELECT s FROM d ORDER BY s").fetchall()] == DOCUMENTED
        assert [r[0] for r in con.execute("SELECT s FROM d ORDER BY s DESC").fetchall()] == DOCUMENTED[::-1]
        assert con.execute("SELECT MIN(s), MAX(s) FROM d").fetchall() == [("a", "ë")]
        # characters above U+FFFF are told apart (MySQL's 0900 weights give each its own)
        con.execute("INSERT INTO d VALUES (100, '😀'), (101, '🙂'), (102, '😀')")
        assert con.execute("SELECT COUNT(DISTINCT s) FROM d WHERE id >= 100").fetchall() == [(2,)]
        assert con.execute("SELECT id FROM d WHERE s = '🙂'").fetchall() == [(101,)]
    finally:
        con.close()


def test_mixing_with_another_collation_is_an_error(con):
    with pytest.raises(ProgrammingError, match="Illegal mix of collations"):
        con.execute("SELECT COUNT(*) FROM w x JOIN w y ON x.s = y.g")
    assert con.execute(f"SELECT COUNT(*) FROM w WHERE s = g COLLATE {AS_CS}").fetchall() == [(len(con.words),)]


@pytest.mark.parametrize("name", [AS_CS, "utf8mb4_0900_ai_ci"])
def test_an_index_on_a_uca_column_finds_every_equal_row(tmp_path, name):
    """UCA-equal strings may key apart under utf8mb4_general_ci ('e' + U+0301 and 'é', '١' and '1'):
    such a column is looked up in its UCA index, which hashes 0900_ai_ci keys."""
    con = engine.connect(data_dir=str(tmp_path), leaves=1, partitions_per_leaf=1, segment_rows=1024,
                         flush_rows=1024)
    try:
        con.execute(f"CREATE TABLE t (id INT, s VARCHAR(10) COLLATE {name}, KEY (s))")
        words = [f"w{i}" for i in range(3000)] + ["e\u0301", "\u0661"]
        con.load_table("t", pa.table({"id": pa.array(range(len(words)), pa.int32()), "s": words}))
        assert con.execute("SELECT id FROM t WHERE s = 'é'").fetchall() == [(3000,)]
        assert con.execute("SELECT id FROM t WHERE s IN ('1', 'x')").fetchall() == [(3001,)]
    finally:
        con.close()
