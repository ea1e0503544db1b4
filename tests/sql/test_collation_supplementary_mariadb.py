"""Characters above U+FFFF (emoji, CJK extensions, mathematical letters, Deseret, tag characters)
under utf8mb4_0900_ai_ci and utf8mb4_0900_as_cs against MariaDB's UCA 14.0 collations without
padding (marker ``mariadb``): the tables of kernels/uca_supplementary_weights.py against the server's
WEIGHT_STRING of every code point U+10000..U+10FFFF, then =, GROUP BY, DISTINCT, joins, LIKE and
ORDER BY over the same rows on both engines."""
from __future__ import annotations

import random

import pyarrow as pa
import pytest

import engine
from tests.sql.test_mariadb_oracle import mariadb  # noqa: F401 - the server fixture

pytestmark = pytest.mark.mariadb

PAIRS = [("utf8mb4_0900_ai_ci", "utf8mb4_uca1400_nopad_ai_ci"), ("utf8mb4_0900_as_cs", "utf8mb4_uca1400_nopad_as_cs")]


def _weights(mariadb, collation, first, last):  # noqa: F811
    connection = mariadb("mysql")
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT seq, HEX(WEIGHT_STRING(CONVERT(CHAR(seq USING utf32) USING utf8mb4) "
                           f"COLLATE {collation})) FROM seq_{first}_to_{last} WHERE seq < 55296 OR seq > 57343")
            return dict(cursor.fetchall())
    finally:
        connection.close()


def _key(starts, weights, code):
    return "".join(chr(w) for w in weights[starts[code]:starts[code + 1]])


def test_ai_ci_tables_above_the_bmp_are_the_servers(mariadb):  # noqa: F811
    """Each code point keys as the representative of its primary weights (the smallest code point
    weighing each alone, BMP ones first), several for an expansion, none when it weighs nothing."""
    from kernels import uca_ai_ci_weights
    server = {code: tuple(int(h[i:i + 4], 16) for i in range(0, len(h), 4))
              for code, h in _weights(mariadb, "utf8mb4_uca1400_nopad_ai_ci", 0, 0x10FFFF).items()}
    singles, ignorable, expansions = uca_ai_ci_weights.derive(server)
    starts, weights = uca_ai_ci_weights.tables()
    assert len(starts) == 0x110001
    wrong = [code for code in server if code >= 0x10000 and _key(starts, weights, code) !=
             ("" if code in ignorable else expansions.get(code, chr(singles.get(code, code))))]
    assert wrong == []
    # implicit weights: each CJK extension ideograph and unassigned code point its own
    assert server[0x20000] != server[0x20001] and _key(starts, weights, 0x20001) == "\U00020001"


def test_as_cs_tables_above_the_bmp_are_the_servers(mariadb):  # noqa: F811
    from kernels import uca_ai_ci_weights, uca_as_cs_weights
    strings = _weights(mariadb, "utf8mb4_uca1400_nopad_as_cs", 0, 0x10FFFF)
    singles, ignorable, _ = uca_ai_ci_weights.derive({code: (w,) if w else () for code, w in strings.items()})
    starts, weights = uca_as_cs_weights.tables()
    wrong = [code for code in strings if code >= 0x10000 and _key(starts, weights, code) !=
             ("" if code in ignorable else chr(singles.get(code, code)))]
    assert wrong == []
    (starts2, weights2), (starts3, weights3) = uca_as_cs_weights.level_tables()
    ours = {code: (tuple(int(w) for w in weights2[starts2[code]:starts2[code + 1]]),
                   tuple(int(w) for w in weights3[starts3[code]:starts3[code + 1]])) for code in strings}
    assert [code for code in strings if code >= 0x10000 and
            ours[code] != uca_as_cs_weights.levels_of(strings[code])] == []


# emoji, mathematical letters (weigh as Latin ones), Deseret (a case pair), tag characters and a
# variation selector (weigh nothing), CJK Extension B and G ideographs and unassigned code points
# (implicit weights), a few BMP letters and ideographs beside them
ALPHABET = ["\U0001F600", "\U0001F642", "\U0001F44D", "\U0001F9FF", "\U0001F1E6", "\U0001D400", "\U0001D41A",
            "\U0001D5BA", "\U00010400", "\U00010428", "\U000E0041", "\U000E0100", "\U00020000", "\U00020001",
            "\U0002A6DF", "\U00030000", "\U00050000", "\U0010FFFD", "a", "A", "b", "\u4e00", "\u9fa5", "x"]
# the rows ORDER BY compares: the characters whose order Canopy's keys give as UCA does (Latin
# letters, ideographs of the BMP's main block, of Extension B and later, unassigned code points: by
# code point); emoji and other symbols above U+FFFF order by code point here, by DUCET in MySQL
# (docs/sql-semantics.md)
ORDERED = set("aAbx\u4e00\u9fa5\U00020000\U00020001\U0002A6DF\U00030000\U00050000\U0010FFFD")


@pytest.fixture(scope="module")
def words():
    rng = random.Random(16)
    drawn = {"".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 3))) for _ in range(700)}
    return sorted(drawn | set(ALPHABET))


def _maria_rows(mariadb, collation, words, queries):  # noqa: F811
    connection = mariadb("mysql")
    try:
        with connection.cursor() as cursor:
            cursor.execute("SET NAMES utf8mb4")
            cursor.execute(f"CREATE TEMPORARY TABLE w (id INT, s VARCHAR(20) CHARACTER SET utf8mb4 COLLATE {collation})")
            cursor.executemany("INSERT INTO w VALUES (%s, %s)", list(enumerate(words)))
            out = []
            for sql, params in queries:
                cursor.execute(sql, params)
                out.append([tuple(int(v) if isinstance(v, int) else v for v in row) for row in cursor.fetchall()])
            return out
    finally:
        connection.close()


def _canopy_rows(collation, words, queries):
    con = engine.connect()
    try:
        con.execute(f"CREATE TABLE w (id INT, s VARCHAR(20) COLLATE {collation})")
        con.load_table("w", pa.table({"id": pa.array(range(len(words)), pa.int32()), "s": words}))
        return [[tuple(int(v) if isinstance(v, (bool, int)) else v for v in row)
                 for row in con.execute(sql, params).fetchall()] for sql, params in queries]
    finally:
        con.close()


def _queries(words):
    ordered = [i for i, w in enumerate(words) if set(w) <= ORDERED]
    subset = ", ".join(map(str, ordered))
    queries = [
        ("SELECT MIN(id), COUNT(*) FROM w GROUP BY s ORDER BY 1", None),
        ("SELECT COUNT(DISTINCT s), COUNT(*) FROM w", None),
        ("SELECT COUNT(*) FROM w x JOIN w y ON x.s = y.s", None),
        (f"SELECT id FROM w WHERE id IN ({subset}) ORDER BY s, id", None),
        (f"SELECT id FROM w WHERE id IN ({subset}) ORDER BY s DESC, id", None),
    ]
    for probe in ("\U0001F600", "a", "\U00010400", "\U00020000", "\U0001D400\U000E0041", "\U00050000"):
        queries.append(("SELECT id FROM w WHERE s = %s ORDER BY id", (probe,)))
        if set(probe) <= ORDERED:
            queries.append(("SELECT id FROM w WHERE s < %s AND id IN (" + subset + ") ORDER BY id", (probe,)))
    for pattern in ("\U0001F600%", "%\U0001F642%", "_", "__", "\U00010428_", "%\U00020001", "a%", "%\U0001D41A%"):
        queries.append(("SELECT id FROM w WHERE s LIKE %s ORDER BY id", (pattern,)))
    return queries


# MariaDB's LIKE under utf8mb4_uca1400_nopad_as_cs compares characters above U+FFFF by code point
# where UCA weighs two of them the same at every level ('𝐚' MATHEMATICAL BOLD SMALL A and '𝖺' SANS-SERIF
# SMALL A: '𝐚' = '𝖺' is 1 there, '𝐚' LIKE '𝖺' 0; 'Å' LIKE U+212B ANGSTROM SIGN is 1): Canopy's LIKE
# follows the weights, as its '=' and MySQL 8's collation do (docs/sql-semantics.md)
LIKE_BY_CODE_POINT = {("utf8mb4_0900_as_cs", "%\U0001D41A%")}


@pytest.mark.parametrize("ours,theirs", PAIRS, ids=[p[0] for p in PAIRS])
def test_queries_over_supplementary_characters_agree(mariadb, words, ours, theirs):  # noqa: F811
    queries = [(sql, params) for sql, params in _queries(words) if (ours, (params or ("",))[0]) not in LIKE_BY_CODE_POINT]
    want = _maria_rows(mariadb, theirs, words, queries)
    got = _canopy_rows(ours, words, queries)
    for (sql, params), g, w in zip(queries, got, want):
        assert g == w, (sql, params)
