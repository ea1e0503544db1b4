"""MariaDB as the oracle of utf8mb4_general_ci and utf8mb4_bin (marker ``mariadb``: ``make test-mariadb``):
the weight table behind Canopy's collation keys against the server's WEIGHT_STRING for every BMP
character, and the same comparisons, filters, groups, joins and orders run on both engines over the same
rows. Results are compared where MySQL defines them exactly: which rows match, how many per group, the
order of ``ORDER BY name, id``. Deliberate differences are in docs/sql-semantics.md."""
from __future__ import annotations

import pyarrow as pa
import pytest

import engine
from kernels.general_ci_weights import weight_table
from tests.sql.test_collations import WORDS, _rows
from tests.sql.test_mariadb_oracle import mariadb  # noqa: F401 - the server fixture

pytestmark = pytest.mark.mariadb


def test_weight_table_is_the_servers(mariadb):  # noqa: F811
    connection = mariadb("mysql")
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT seq, HEX(WEIGHT_STRING(CONVERT(CHAR(seq USING utf32) USING utf8mb4) "
                           "COLLATE utf8mb4_general_ci)) FROM seq_0_to_65535")
            server = {code: int(weight, 16) for code, weight in cursor.fetchall()}
            cursor.execute("SELECT HEX(WEIGHT_STRING(_utf8mb4 0xF09F9880 COLLATE utf8mb4_general_ci))")
            assert cursor.fetchall()[0][0] == "FFFD"      # every character above U+FFFF
    finally:
        connection.close()
    table = weight_table()
    assert [code for code in range(0x10000) if table[code] != server[code]] == []


EXPRESSIONS = [
    "'a' = 'A'", "'a' = 'a   '", "'a ' = 'a'", "'a' < 'a '", "'ß' = 's'", "'ß' = 'ss'", "'Æ' = 'AE'", "'ø' = 'o'",
    "'É' = 'e'", "'ı' = 'i'", "'Ǆ' = 'ǆ'", "'😀' = '🙂'", "'a' < 'B'", "'Z' > 'a'", "'_' < 'a'", "'é' < 'f'",
    "'a ' LIKE 'a'", "'a' LIKE 'a '", "'ÄÖü' LIKE '%o%'", "'Straße' LIKE 'STRASE'", "'x' IN ('X', 'y')",
    "BINARY 'a' = 'A'", "'a' COLLATE utf8mb4_bin = 'A'", "'a' COLLATE utf8mb4_bin = 'a  '",
    "'A' COLLATE utf8mb4_bin LIKE 'a'", "'ab' COLLATE utf8mb4_bin < 'aB'", "'a' = 'A' COLLATE utf8mb4_bin",
    "NULLIF('a', 'A ')", "CASE 'é' WHEN 'E' THEN 1 ELSE 0 END", "'b' BETWEEN 'A' AND 'C'",
    "LOCATE('a', 'A')", "INSTR('STRAßE', 'ße')", "LOCATE('É', 'xéa')", "LOCATE('a', 'éa')", "LOCATE('a', 'banana', 3)",
    "LOCATE('A' COLLATE utf8mb4_bin, 'a')", "GREATEST('a', 'B', 'ä')", "LEAST('b', 'A')",
]


@pytest.fixture(scope="module")
def both(mariadb):  # noqa: F811
    ids, names = _rows(400, 7)
    setup = mariadb(None)
    with setup.cursor() as cursor:
        cursor.execute("DROP DATABASE IF EXISTS collations")
        cursor.execute("CREATE DATABASE collations CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci")
    setup.close()
    maria = mariadb("collations")
    maria.autocommit(True)
    ddl = ("CREATE TABLE people (id BIGINT, name VARCHAR(40) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci, "
           "exact VARCHAR(40) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin)")
    words = "CREATE TABLE words (w VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci, n INT)"
    with maria.cursor() as cursor:
        cursor.execute("SET NAMES utf8mb4 COLLATE utf8mb4_general_ci")
        cursor.execute(ddl)
        cursor.executemany("INSERT INTO people VALUES (%s, %s, %s)", list(zip(ids, names, names)))
        cursor.execute(words)
        cursor.executemany("INSERT INTO words VALUES (%s, %s)", [(w, i) for i, w in enumerate(WORDS)])
    con = engine.connect()
    con.execute(ddl)
    con.load_table("people", pa.table({"id": pa.array(ids, pa.int64()), "name": names, "exact": names}))
    con.execute(words)
    for i, w in enumerate(WORDS):
        con.execute("INSERT INTO words VALUES (%s, %s)", (w, i))
    yield maria, con
    maria.close()
    con.close()


def _same(both, sql):
    maria, con = both
    with maria.cursor() as cursor:
        cursor.execute(sql)
        want = [tuple(int(v) if isinstance(v, int) else v for v in row) for row in cursor.fetchall()]
    got = [tuple(int(v) if isinstance(v, (bool, int)) else v for v in row) for row in con.execute(sql).fetchall()]
    assert got == want, sql


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_expressions_agree(both, expression):
    _same(both, f"SELECT {expression}")


QUERIES = [
    "SELECT id FROM people WHERE name = 'ALICE' ORDER BY id",
    "SELECT id FROM people WHERE name = 'zoe' ORDER BY id",
    "SELECT id FROM people WHERE exact = 'alice' ORDER BY id",
    "SELECT id FROM people WHERE name IN ('bob', 'STRASSE', 'Strase') ORDER BY id",
    "SELECT id FROM people WHERE name LIKE '%SE' ORDER BY id",
    "SELECT id FROM people WHERE name LIKE 'a_b%' ORDER BY id",
    "SELECT id FROM people WHERE exact LIKE 'A%' ORDER BY id",
    "SELECT id FROM people WHERE name > 'emile' ORDER BY id",
    "SELECT MIN(id), COUNT(*) FROM people GROUP BY name ORDER BY 1",
    "SELECT MIN(id), COUNT(*) FROM people GROUP BY exact ORDER BY 1",
    "SELECT COUNT(DISTINCT name), COUNT(DISTINCT exact), COUNT(*) FROM people",
    "SELECT COUNT(*) FROM (SELECT DISTINCT name FROM people) d",
    "SELECT id FROM people ORDER BY name, id",
    "SELECT id FROM people ORDER BY name DESC, id",
    "SELECT id FROM people ORDER BY exact, id",
    "SELECT p.id, w.n FROM people p JOIN words w ON p.name = w.w ORDER BY 1, 2",
    "SELECT p.id, w.n FROM people p JOIN words w ON p.exact = w.w ORDER BY 1, 2",
    "SELECT id FROM people WHERE name IN (SELECT w FROM words WHERE n < 3) ORDER BY id",
    "SELECT COUNT(*) FROM (SELECT name FROM people UNION SELECT w FROM words) u",
    "SELECT COUNT(*) FROM people WHERE name = exact",
    # grouping sets, windows, GREATEST / LEAST, GROUP_CONCAT under the collation
    "SELECT * FROM (SELECT MIN(id) m, COUNT(*) c FROM people GROUP BY name WITH ROLLUP) r ORDER BY m, c",
    "SELECT * FROM (SELECT MIN(id) m, COUNT(*) c FROM people GROUP BY id % 3, name WITH ROLLUP) r ORDER BY m, c",
    "SELECT id, DENSE_RANK() OVER (ORDER BY name) FROM people ORDER BY id",
    "SELECT id, COUNT(*) OVER (PARTITION BY name) FROM people ORDER BY id",
    "SELECT id FROM (SELECT id, name, MAX(name) OVER (PARTITION BY id % 5) mx, MIN(name) OVER (PARTITION BY id % 5) mn "
    "FROM people) t WHERE name = mx OR name = mn ORDER BY id",
    "SELECT id, GREATEST(name, 'm') = 'M', LEAST(name, 'emile') = 'EMILE' FROM people ORDER BY id",
    "SELECT GROUP_CONCAT(id ORDER BY name, id) FROM people WHERE id < 60",
    "SELECT id, LOCATE('L', name), INSTR(name, 'B'), LOCATE('a', exact) FROM people ORDER BY id",
    "SELECT k, LENGTH(g) - LENGTH(REPLACE(g, '|', '')) FROM (SELECT id % 4 k, GROUP_CONCAT(DISTINCT name SEPARATOR '|') g "
    "FROM people GROUP BY id % 4) t ORDER BY k",
]


@pytest.mark.parametrize("sql", QUERIES)
def test_queries_agree(both, sql):
    _same(both, sql)


CONNECTION_EXPRESSIONS = ["'a' = 'A'", "'a' = 'a   '", "'ß' = 's'", "'a' < 'B'", "'x' IN ('X', 'y')", "'a' LIKE 'A'",
                          "GREATEST('a', 'B')", "'a' = 'A' COLLATE utf8mb4_general_ci"]


def test_literals_follow_the_connection_collation(both):
    maria, con = both
    for names in ("utf8mb4 COLLATE utf8mb4_bin", "utf8mb4 COLLATE utf8mb4_general_ci"):
        with maria.cursor() as cursor:
            cursor.execute(f"SET NAMES {names}")
        con.execute(f"SET NAMES {names}")
        for expression in CONNECTION_EXPRESSIONS:
            _same(both, f"SELECT {expression}")
        _same(both, "SELECT id FROM people WHERE name = 'ALICE' ORDER BY id")     # the column's collation wins


# utf8mb4_0900_ai_ci: MariaDB 10.11 has no 0900 collations; its UCA 14.0 collation without padding,
# utf8mb4_uca1400_nopad_ai_ci, weighs the same at the primary level (kernels/uca_ai_ci_weights.py)
UCA = "utf8mb4_uca1400_nopad_ai_ci"


def test_uca_tables_are_the_servers(mariadb):  # noqa: F811
    from kernels import uca_ai_ci_weights
    connection = mariadb("mysql")
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT seq, HEX(WEIGHT_STRING(CONVERT(CHAR(seq USING utf32) USING utf8mb4) "
                           f"COLLATE {UCA})) FROM seq_0_to_65535 WHERE seq < 55296 OR seq > 57343")
            server = {code: tuple(int(h[i:i + 4], 16) for i in range(0, len(h), 4)) for code, h in cursor.fetchall()}
    finally:
        connection.close()
    singles, ignorable, expansions = uca_ai_ci_weights.derive(server)
    starts, weights = uca_ai_ci_weights.tables()
    key = {code: "".join(chr(w) for w in weights[starts[code]:starts[code + 1]]) for code in server}
    want = {code: "" if code in ignorable else expansions.get(code, chr(singles.get(code, code))) for code in server}
    assert [code for code in server if key[code] != want[code]] == []


UCA_EXPRESSIONS = [
    "'a' = 'Á'", "'a ' = 'a'", "'a' = 'a '", "'Straße' = 'STRASSE'", "'ß' = 's'", "'ø' = 'o'", "'Æ' = 'ae'",
    "'ﬁ' = 'FI'", "'ı' = 'i'", "'e\u0301' = 'é'", "'Ａ' = 'a'", "'й' = 'и'", "'œ' = 'OE'", "'x\u00ADy' = 'xy'",
    "'😀' = '😀'", "'ÄÖü' LIKE '%o%'", "'Straße' LIKE 'strasze'", "'x' IN ('X', 'y')", "LOCATE('É', 'xéa')",
    "'😀' = '🙂'", "'😀' < '🙂'", "'𝐀' = 'a'", "'𐐀' = '𐐨'", "'x󠁁y' = 'xy'",
    "'😀' LIKE '🙂'", "'😀x' LIKE '😀_'", "'x­y' LIKE 'xy'", "'x­y' LIKE 'x_y'", "'é' LIKE 'é'",
    "'é' LIKE '__'", "'x­y' LIKE 'x​y'",
]       # (LIKE with an expansion on one side differs: docs/sql-semantics.md)


@pytest.mark.parametrize("expression", UCA_EXPRESSIONS)
def test_0900_ai_ci_expressions_agree_with_uca(both, expression):
    maria, con = both
    with maria.cursor() as cursor:
        cursor.execute(f"SET NAMES utf8mb4 COLLATE {UCA}")
        cursor.execute(f"SELECT {expression}")
        want = [tuple(int(v) for v in row) for row in cursor.fetchall()]
        cursor.execute("SET NAMES utf8mb4 COLLATE utf8mb4_general_ci")
    con.execute("SET NAMES utf8mb4 COLLATE utf8mb4_0900_ai_ci")
    try:
        got = [tuple(int(v) for v in row) for row in con.execute(f"SELECT {expression}").fetchall()]
    finally:
        con.execute("SET NAMES utf8mb4 COLLATE utf8mb4_general_ci")
    assert got == want, expression


# utf8mb4_0900_as_cs: MariaDB's UCA 14.0 accent- and case-sensitive collation without padding
UCA_AS_CS = "utf8mb4_uca1400_nopad_as_cs"


def test_as_cs_tables_are_the_servers(mariadb):  # noqa: F811
    """Each BMP character keys as the smallest code point of the same full weight string, nothing
    for one that weighs nothing (kernels/uca_as_cs_weights.py)."""
    from kernels import uca_ai_ci_weights, uca_as_cs_weights
    connection = mariadb("mysql")
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT seq, HEX(WEIGHT_STRING(CONVERT(CHAR(seq USING utf32) USING utf8mb4) "
                           f"COLLATE {UCA_AS_CS})) FROM seq_0_to_65535 WHERE seq < 55296 OR seq > 57343")
            server = {code: (weight,) if weight else () for code, weight in cursor.fetchall()}
    finally:
        connection.close()
    singles, ignorable, _ = uca_ai_ci_weights.derive(server)
    starts, weights = uca_as_cs_weights.tables()
    key = {code: "".join(chr(w) for w in weights[starts[code]:starts[code + 1]]) for code in server}
    want = {code: "" if code in ignorable else chr(singles.get(code, code)) for code in server}
    assert [code for code in server if key[code] != want[code]] == []


AS_CS_EXPRESSIONS = [
    "'a' = 'A'", "'a' = 'á'", "'a ' = 'a'", "'é' = 'e\u0301'", "'ﬁ' = 'fi'", "'Ａ' = 'A'", "'ß' = 'ss'",
    "'x\u00ADy' = 'xy'", "'\u0661' = '1'", "'Å' = '\u212B'", "'b' > 'A'", "'a' < 'B'", "'é' < 'f'", "'ﬁ' > 'fi'",
    "'É' LIKE 'é'", "'é' LIKE '_'", "'Straße' LIKE 'stra_e'", "'x' IN ('X', 'x')", "LOCATE('é', 'xÉé')",
    "'a' < 'A'", "'A' < 'á'", "'Ae' < 'aé'", "'ab' < 'aB'", "'aB' < 'Ab'", "'ａ' > 'a'", "'ａ' < 'A'", "'😀' = '🙂'",
    "'😀' LIKE '🙂'", "'😀x' LIKE '😀_'", "'𝐀' = 'A'", "'𐐀' = '𐐨'", "'x󠁁y' = 'xy'",
    "'x­y' LIKE 'xy'", "'x­y' LIKE 'x_y'", "'é' LIKE 'é'", "'é' LIKE '__'", "'a' < '𝐚'",
]


@pytest.mark.parametrize("expression", AS_CS_EXPRESSIONS)
def test_0900_as_cs_expressions_agree_with_uca(both, expression):
    maria, con = both
    with maria.cursor() as cursor:
        cursor.execute(f"SET NAMES utf8mb4 COLLATE {UCA_AS_CS}")
        cursor.execute(f"SELECT {expression}")
        want = [tuple(int(v) for v in row) for row in cursor.fetchall()]
        cursor.execute("SET NAMES utf8mb4 COLLATE utf8mb4_general_ci")
    con.execute("SET NAMES utf8mb4 COLLATE utf8mb4_0900_as_cs")
    try:
        got = [tuple(int(v) for v in row) for row in con.execute(f"SELECT {expression}").fetchall()]
    finally:
        con.execute("SET NAMES utf8mb4 COLLATE utf8mb4_general_ci")
    assert got == want, expression


def test_as_cs_levels_are_the_servers(mariadb):  # noqa: F811
    """The secondary and tertiary weights of every BMP character (kernels/uca_as_cs_weights.py)."""
    from kernels import uca_as_cs_weights
    connection = mariadb("mysql")
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT seq, HEX(WEIGHT_STRING(CONVERT(CHAR(seq USING utf32) USING utf8mb4) "
                           f"COLLATE {UCA_AS_CS})) FROM seq_0_to_65535 WHERE seq < 55296 OR seq > 57343")
            server = {code: uca_as_cs_weights.levels_of(weight) for code, weight in cursor.fetchall()}
    finally:
        connection.close()
    (starts2, weights2), (starts3, weights3) = uca_as_cs_weights.level_tables()
    ours = {code: (tuple(int(w) for w in weights2[starts2[code]:starts2[code + 1]]),
                   tuple(int(w) for w in weights3[starts3[code]:starts3[code + 1]])) for code in server}
    assert [code for code in server if ours[code] != server[code]] == []


def test_0900_as_cs_order_agrees_with_uca(mariadb):  # noqa: F811
    """ORDER BY over mixed case, accents, widths, canonically equivalent spellings and ignorables: the
    server's order (characters above U+FFFF left out: MySQL weighs them as DUCET does, Canopy after
    the BMP, docs/sql-semantics.md)."""
    import random

    import pymysql
    rng = random.Random(5)
    letters = list("aAbBeEéÉèÈëcCçÇoOöÖøØsSßzZ") + ["e\u0301", "ﬁ", "ａ", "Å", "\u212b", " ", "x\u00ady", "ǅ", "Ǆ", "ǆ"]
    words = sorted({"".join(rng.choice(letters) for _ in range(rng.randint(1, 4))) for _ in range(1500)})
    maria = mariadb("mysql")
    try:
        with maria.cursor() as cursor:
            cursor.execute("SET NAMES utf8mb4")
            cursor.execute(f"CREATE TEMPORARY TABLE w (id INT, s VARCHAR(20) CHARACTER SET utf8mb4 COLLATE {UCA_AS_CS})")
            cursor.executemany("INSERT INTO w VALUES (%s, %s)", list(enumerate(words)))
            cursor.execute("SELECT id FROM w ORDER BY s, id")
            want = [r[0] for r in cursor.fetchall()]
    except pymysql.MySQLError:
        maria.close()
        raise
    maria.close()
    con = engine.connect()
    try:
        con.execute("CREATE TABLE w (id INT, s VARCHAR(20) COLLATE utf8mb4_0900_as_cs)")
        con.load_table("w", pa.table({"id": pa.array(range(len(words)), pa.int32()), "s": words}))
        assert [r[0] for r in con.execute("SELECT id FROM w ORDER BY s, id").fetchall()] == want
    finally:
        con.close()
