"""utf8mb4_0900_ai_ci (MySQL 8's default collation: accent- and case-insensitive by UCA's primary
weights, NO PAD) and utf8mb4_0900_bin, against a Python model of the primary level for the Latin text
drawn here: NFKD, combining marks dropped, case folded, 'ø' 'æ' 'œ' as UCA weighs them. Comparisons,
GROUP BY, DISTINCT, joins, IN and LIKE, on both runners (``CANOPY_RUNNER=ray``);
tests/sql/test_collation_mariadb.py checks the weights against MariaDB's UCA collation."""
import random
import unicodedata

import pyarrow as pa
import pytest

import engine
from engine.errors import NotSupportedError, ProgrammingError

LETTERS = list("aAeEoOsSnNcC ") + ["é", "É", "è", "ê", "ë", "à", "á", "Ä", "å", "ß", "æ", "Æ", "œ", "ø", "Ø",
                                  "ñ", "ç", "ﬁ", "Ａ", "e\u0301", "\u00AD"]


def model(s):
    """The primary-level key of Latin text (the characters above): what UCA compares under _ai_ci."""
    folded = "".join(ch for ch in unicodedata.normalize("NFKD", s) if not unicodedata.combining(ch))
    folded = folded.replace("\u00AD", "")           # a soft hyphen weighs nothing
    for letter, base in (("ø", "o"), ("Ø", "o"), ("æ", "ae"), ("Æ", "ae"), ("œ", "oe"), ("ß", "ss")):
        folded = folded.replace(letter, base)
    return folded.casefold()


@pytest.fixture(scope="module")
def con():
    rng = random.Random(7)
    words = ["".join(rng.choice(LETTERS) for _ in range(rng.randint(0, 4))) for _ in range(400)]
    words += ["a", "a ", "A", "á", "ss", "ß", "SS", "ae", "Æ", "fi", "ﬁ", "o", "ø"]
    connection = engine.connect()
    connection.execute("CREATE TABLE w (id BIGINT, s VARCHAR(20) COLLATE utf8mb4_0900_ai_ci, "
                       "g VARCHAR(20), SHARD KEY (id))")
    connection.load_table("w", pa.table({"id": pa.array(range(len(words)), pa.int64()), "s": words, "g": words}))
    connection.words = words
    yield connection
    connection.close()


def test_group_by_and_distinct_follow_the_primary_level(con):
    groups = {}
    for word in con.words:
        groups.setdefault(model(word), []).append(word)
    got = con.execute("SELECT COUNT(*) FROM w GROUP BY s").fetchall()
    assert sorted(n for (n,) in got) == sorted(len(v) for v in groups.values())
    assert con.execute("SELECT COUNT(DISTINCT s) FROM w").fetchall() == [(len(groups),)]


def test_join_and_equality(con):
    pairs = sum(1 for a in con.words for b in con.words if model(a) == model(b))
    got = con.execute("SELECT COUNT(*) FROM w x JOIN w y ON x.s = y.s").fetchall()
    assert got == [(pairs,)]
    for probe in ("A", "ss", "AE", "e", "fi", "o "):
        want = sorted(i for i, w in enumerate(con.words) if model(w) == model(probe))
        got = sorted(i for (i,) in con.execute(f"SELECT id FROM w WHERE s = '{probe}'").fetchall())
        assert got == want, probe


def like_model(s):
    """What LIKE matches: character by character as written (MySQL's), each keyed as ``model``, one
    that weighs nothing (a soft hyphen, a combining accent) still a character of its own."""
    return "".join(model(ch) or "\x00" for ch in s)


def test_like_and_in(con):
    want = sorted(i for i, w in enumerate(con.words) if like_model(w).startswith("a"))
    assert sorted(i for (i,) in con.execute("SELECT id FROM w WHERE s LIKE 'á%'").fetchall()) == want
    want = sorted(i for i, w in enumerate(con.words) if model(w) in ("ss", "e"))
    assert sorted(i for (i,) in con.execute("SELECT id FROM w WHERE s IN ('SS', 'É')").fetchall()) == want


@pytest.mark.parametrize("expression, value", [
    ("'a' = 'Á' COLLATE utf8mb4_0900_ai_ci", True),
    ("'a ' = 'a' COLLATE utf8mb4_0900_ai_ci", False),          # NO PAD
    ("'Straße' = 'STRASSE' COLLATE utf8mb4_0900_ai_ci", True),
    ("'ø' = 'o' COLLATE utf8mb4_0900_ai_ci", True),
    ("'ı' = 'i' COLLATE utf8mb4_0900_ai_ci", False),            # dotless i is a letter of its own
    ("'a' = 'A' COLLATE utf8mb4_0900_bin", False),
    ("'a ' = 'a' COLLATE utf8mb4_0900_bin", False),
    ("'a ' = 'a' COLLATE utf8mb4_bin", True),                    # PAD SPACE
    # above U+FFFF: UCA's weights (checked on MariaDB's utf8mb4_uca1400_nopad_ai_ci)
    ("'😀' = '🙂' COLLATE utf8mb4_0900_ai_ci", False),
    ("'𝐀' = 'a' COLLATE utf8mb4_0900_ai_ci", True),     # MATHEMATICAL BOLD CAPITAL A
    ("'𐐀' = '𐐨' COLLATE utf8mb4_0900_ai_ci", True),   # Deseret capital and small
    ("'𠀀' < '𠀁' COLLATE utf8mb4_0900_ai_ci", True),   # implicit weights
    ("'x󠁁y' = 'xy' COLLATE utf8mb4_0900_ai_ci", True),  # a tag character weighs nothing
    ("'😀' LIKE '🙂' COLLATE utf8mb4_0900_ai_ci", False),
    ("'😀x' LIKE '😀_' COLLATE utf8mb4_0900_ai_ci", True),
    ("'x­y' LIKE 'xy' COLLATE utf8mb4_0900_ai_ci", False),    # LIKE: one character each
    ("'x󠁁y' LIKE 'x_y' COLLATE utf8mb4_0900_ai_ci", True),
    ("'😀' = '🙂'", True),                                         # general_ci: all U+FFFD, as MySQL
])
def test_expressions(con, expression, value):
    assert con.execute(f"SELECT {expression}").fetchall() == [(value,)]


def test_mixing_collations_is_mysqls_error(con):
    """A general_ci column beside a 0900_ai_ci one compares under neither: MySQL's error 1267."""
    with pytest.raises(ProgrammingError, match="Illegal mix of collations"):
        con.execute("SELECT COUNT(*) FROM w x JOIN w y ON x.s = y.g")
    assert con.execute("SELECT COUNT(*) FROM w WHERE s = g COLLATE utf8mb4_0900_ai_ci").fetchall()[0][0] == \
        len(con.words)


def test_connection_collation(con):
    con.execute("SET NAMES utf8mb4 COLLATE utf8mb4_0900_ai_ci")
    try:
        assert con.execute("SELECT 'a ' = 'a', 'É' = 'e', @@collation_connection").fetchall() == \
            [(False, True, "utf8mb4_0900_ai_ci")]
    finally:
        con.execute("SET NAMES utf8mb4")
    with pytest.raises(NotSupportedError, match="utf8mb4_unicode_ci"):
        con.execute("SELECT 'a' = 'b' COLLATE utf8mb4_unicode_ci")
