"""Collations (engine/collation.py): string columns compare, group, join, DISTINCT, IN, LIKE, ORDER BY,
MIN / MAX, set operations and window partitions under utf8mb4_general_ci by default, exactly under
utf8mb4_bin / BINARY. The oracle is Python: each value's key is its characters' general_ci weights
(kernels/general_ci_weights.py, itself checked against MariaDB in test_collation_mariadb.py) with
trailing spaces dropped; a _bin value's key is the value without trailing spaces. The data is loaded
(stored dictionary-encoded) and inserted (in memory), so both the stored-dictionary paths of the scan
and the plain paths run. Both runners (CANOPY_RUNNER=ray)."""
from __future__ import annotations

import random
import re
from collections import Counter

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import engine
from engine.errors import NotSupportedError, ProgrammingError
from kernels.general_ci_weights import REPLACEMENT, weight_table

_TABLE = weight_table()
WORDS = ["alice", "bob", "zoë", "straße", "émile", "åsa", "a_b", "x%y", "ǆemal", "ıi", "😀", "中文"]


def ci(s):
    """utf8mb4_general_ci's key of a Python string (None for NULL)."""
    if s is None:
        return None
    return "".join(chr(REPLACEMENT) if ord(c) > 0xFFFF else chr(_TABLE[ord(c)]) for c in s).rstrip(" ")


def bin_key(s):
    return None if s is None else s.rstrip(" ")


def _variant(rng: random.Random, word: str) -> str:
    word = "".join(c.upper() if rng.random() < 0.4 else c for c in word)
    word = word.replace("e", rng.choice(["e", "é", "è", "E"])).replace("a", rng.choice(["a", "á", "A", "ä"]))
    return word + " " * rng.choice([0, 0, 0, 1, 2])


def _rows(n: int, seed: int):
    rng = random.Random(seed)
    names = [None if rng.random() < 0.05 else _variant(rng, rng.choice(WORDS)) for _ in range(n)]
    return list(range(n)), names


@pytest.fixture(scope="module")
def con():
    con = engine.connect()
    ids, names = _rows(600, 1)
    con.execute("CREATE TABLE people (id BIGINT, name VARCHAR(40), exact VARCHAR(40) COLLATE utf8mb4_bin, "
                "SHARD KEY (id))")
    con.load_table("people", pa.table({"id": pa.array(ids, pa.int64()), "name": names, "exact": names}))
    con.execute("CREATE TABLE words (w VARCHAR(20), n INT)")      # inserted: plain strings in memory
    values = ", ".join(f"('{w.replace(chr(39), chr(39) * 2)}', {i})" for i, w in enumerate(WORDS))
    con.execute(f"INSERT INTO words VALUES {values}, ('ALICE', 100), ('Bob  ', 101)")
    yield con, dict(zip(ids, names))
    con.close()


def rows(con, sql, params=None):
    return con.execute(sql, params).fetchall() if params else con.execute(sql).fetchall()


def ids_where(people, test):
    return sorted(i for i, v in people.items() if v is not None and test(v))


@pytest.mark.parametrize("literal", ["ALICE", "alice   ", "Zoe", "STRASSE", "strase", "emile", "asa", "Ǆemal",
                                     "II", "🙂", "nobody"])
def test_equality_under_general_ci_and_bin(con, literal):
    con, people = con
    got = [r[0] for r in rows(con, "SELECT id FROM people WHERE name = %s ORDER BY id", (literal,))]
    assert got == ids_where(people, lambda v: ci(v) == ci(literal))
    got = [r[0] for r in rows(con, f"SELECT id FROM people WHERE exact = '{literal}' ORDER BY id")]
    assert got == ids_where(people, lambda v: bin_key(v) == bin_key(literal))
    got = [r[0] for r in rows(con, f"SELECT id FROM people WHERE name <> '{literal}' ORDER BY id")]
    assert got == ids_where(people, lambda v: ci(v) != ci(literal))


def test_in_list_and_ranges(con):
    con, people = con
    wanted = ["BOB", "Straße", "x%Y"]
    got = [r[0] for r in rows(con, "SELECT id FROM people WHERE name IN ('BOB', 'Straße', 'x%Y') ORDER BY id")]
    assert got == ids_where(people, lambda v: ci(v) in {ci(w) for w in wanted})
    got = [r[0] for r in rows(con, "SELECT id FROM people WHERE name NOT IN ('bob', 'alice') ORDER BY id")]
    assert got == ids_where(people, lambda v: ci(v) not in {"BOB", "ALICE"})
    got = [r[0] for r in rows(con, "SELECT id FROM people WHERE name BETWEEN 'b' AND 'STR' ORDER BY id")]
    assert got == ids_where(people, lambda v: "B" <= ci(v) <= "STR")
    got = [r[0] for r in rows(con, "SELECT id FROM people WHERE exact < 'b' ORDER BY id")]
    assert got == ids_where(people, lambda v: bin_key(v) < "b")


def weights(s):
    """The general_ci weights of every character, trailing spaces kept (LIKE does not pad)."""
    return "".join(chr(REPLACEMENT) if ord(c) > 0xFFFF else chr(_TABLE[ord(c)]) for c in s)


def like(pattern: str):
    """A regular expression for a LIKE pattern (``\\`` escapes the next character)."""
    out, chars = [], iter(pattern)
    for c in chars:
        out.append(re.escape(next(chars, "")) if c == "\\" else ".*" if c == "%" else "." if c == "_"
                   else re.escape(c))
    return re.compile("".join(out), re.S)


@pytest.mark.parametrize("pattern", ["al%", "%SE", "_lice", "%ö%", "ALICE", "alice %", "%e_", "a\\_b%"])
def test_like_compares_keys_without_padding(con, pattern):
    con, people = con
    sql_pattern = pattern.replace("\\", "\\\\")
    got = [r[0] for r in rows(con, f"SELECT id FROM people WHERE name LIKE '{sql_pattern}' ORDER BY id")]
    regex = like(weights(pattern))
    assert got == ids_where(people, lambda v: regex.fullmatch(weights(v)) is not None)
    got = [r[0] for r in rows(con, f"SELECT id FROM people WHERE exact NOT LIKE '{sql_pattern}' ORDER BY id")]
    assert got == ids_where(people, lambda v: like(pattern).fullmatch(v) is None)


def test_group_by_distinct_and_count_distinct(con):
    con, people = con
    got = rows(con, "SELECT name, COUNT(*) FROM people GROUP BY name")
    want = Counter(ci(v) for v in people.values())
    assert Counter({ci(v): n for v, n in got}) == want and len(got) == len(want)
    assert all(v is None or v in people.values() for v, _ in got)      # a stored value, not a key
    got = rows(con, "SELECT exact, COUNT(*) FROM people GROUP BY exact")
    assert Counter({bin_key(v): n for v, n in got}) == Counter(bin_key(v) for v in people.values())
    got = [r[0] for r in rows(con, "SELECT DISTINCT name FROM people")]
    assert sorted(map(str, map(ci, got))) == sorted(map(str, {ci(v) for v in people.values()}))
    assert rows(con, "SELECT COUNT(DISTINCT name), COUNT(DISTINCT exact) FROM people") == [
        (len({ci(v) for v in people.values() if v is not None}),
         len({bin_key(v) for v in people.values() if v is not None}))]
    # HAVING and the select list see the group's value; GROUP BY an expression of a string too
    got = rows(con, "SELECT UPPER(name), COUNT(*) FROM people GROUP BY name HAVING name = 'alice'")
    assert len(got) == 1 and got[0][1] == want["ALICE"]


def test_order_by_min_max_and_windows(con):
    con, people = con
    got = [r[0] for r in rows(con, "SELECT name FROM people WHERE name IS NOT NULL ORDER BY name")]
    keys = [ci(v) for v in got]
    assert keys == sorted(keys) and len(got) == sum(v is not None for v in people.values())
    got = [r[0] for r in rows(con, "SELECT name FROM people WHERE name IS NOT NULL ORDER BY name DESC LIMIT 7")]
    assert [ci(v) for v in got] == sorted((ci(v) for v in people.values() if v is not None), reverse=True)[:7]
    got = [r[0] for r in rows(con, "SELECT exact FROM people WHERE exact IS NOT NULL ORDER BY exact")]
    keys = [bin_key(v) for v in got]    # utf8mb4_bin: code point order, trailing spaces aside
    assert keys == sorted(keys)
    (low, high, blow, bhigh), = rows(con, "SELECT MIN(name), MAX(name), MIN(exact), MAX(exact) FROM people")
    present = [v for v in people.values() if v is not None]
    assert ci(low) == min(map(ci, present)) and ci(high) == max(map(ci, present)) and low in present
    assert (blow, bhigh) == (min(present), max(present))
    got = rows(con, "SELECT id % 3, MIN(name), MAX(name) FROM people GROUP BY id % 3")
    for g, lo, hi in got:
        group = [v for i, v in people.items() if i % 3 == g and v is not None]
        assert ci(lo) == min(map(ci, group)) and ci(hi) == max(map(ci, group))
    got = rows(con, "SELECT id, COUNT(*) OVER (PARTITION BY name) FROM people WHERE name IS NOT NULL")
    sizes = Counter(ci(v) for v in people.values() if v is not None)
    assert all(n == sizes[ci(people[i])] for i, n in got)


def test_joins_subqueries_and_set_operations(con):
    con, people = con
    words = {w: i for i, w in enumerate(WORDS)} | {"ALICE": 100, "Bob  ": 101}
    got = rows(con, "SELECT p.id, w.n FROM people p JOIN words w ON p.name = w.w")
    want = sorted((i, n) for i, v in people.items() for w, n in words.items() if v is not None and ci(v) == ci(w))
    assert sorted(got) == want
    got = rows(con, "SELECT p.id, w.n FROM people p JOIN words w ON p.exact = w.w")
    assert sorted(got) == sorted((i, n) for i, v in people.items() for w, n in words.items()
                                 if v is not None and bin_key(v) == bin_key(w))
    got = [r[0] for r in rows(con, "SELECT id FROM people WHERE name IN (SELECT w FROM words WHERE n >= 100)")]
    assert sorted(got) == ids_where(people, lambda v: ci(v) in ("ALICE", "BOB"))
    got = [r[0] for r in rows(con, "SELECT name FROM people UNION SELECT w FROM words")]
    assert sorted(map(str, map(ci, got))) == sorted(map(str, {ci(v) for v in list(people.values()) + list(words)}))
    got = [r[0] for r in rows(con, "SELECT w FROM words INTERSECT SELECT name FROM people")]
    assert sorted(map(ci, got)) == sorted({ci(w) for w in words} & {ci(v) for v in people.values()})
    got = [r[0] for r in rows(con, "SELECT w FROM words EXCEPT SELECT name FROM people")]
    assert sorted(map(ci, got)) == sorted({ci(w) for w in words} - {ci(v) for v in people.values()})


def test_explicit_collations_and_coercibility(con):
    con, people = con
    got = [r[0] for r in rows(con, "SELECT id FROM people WHERE name COLLATE utf8mb4_bin = 'alice' ORDER BY id")]
    assert got == ids_where(people, lambda v: bin_key(v) == "alice")
    got = [r[0] for r in rows(con, "SELECT id FROM people WHERE BINARY name = 'alice' ORDER BY id")]
    assert got == ids_where(people, lambda v: bin_key(v) == "alice")
    got = [r[0] for r in rows(con, "SELECT id FROM people WHERE exact = 'ALICE' COLLATE utf8mb4_general_ci "
                                   "ORDER BY id")]
    assert got == ids_where(people, lambda v: ci(v) == "ALICE")
    # column against column: between a _bin and a _ci collation, _bin (MySQL)
    got = [r[0] for r in rows(con, "SELECT id FROM people WHERE name = exact ORDER BY id")]
    assert got == ids_where(people, lambda v: True)
    assert rows(con, "SELECT 'a' = 'A', 'a' = 'a  ', 'a ' LIKE 'a', 'ß' = 's', BINARY 'a' = 'A', "
                     "'a' COLLATE utf8mb4_bin = 'A', 'Ä' LIKE 'a', NULLIF('a', 'A '), "
                     "CASE 'é' WHEN 'E' THEN 1 ELSE 0 END") == [(1, 1, 0, 1, 0, 0, 1, None, 1)]
    with pytest.raises(ProgrammingError, match="Illegal mix of collations"):
        con.execute("SELECT name COLLATE utf8mb4_bin = exact COLLATE utf8mb4_general_ci FROM people")
    with pytest.raises(NotSupportedError, match="collation 'utf8mb4_unicode_ci'"):
        con.execute("SELECT name COLLATE utf8mb4_unicode_ci FROM people")
    with pytest.raises(ProgrammingError, match="COLLATE"):
        con.execute("SELECT id COLLATE utf8mb4_bin FROM people")


def test_declared_collations_show_in_the_catalog(tmp_path):
    con = engine.connect(data_dir=str(tmp_path))
    con.execute("CREATE TABLE t (a VARCHAR(10), b VARCHAR(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, n INT)")
    con.execute("CREATE TABLE u (c TEXT) DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin")
    con.execute("INSERT INTO t VALUES ('x', 'x', 1), ('X', 'X', 2)")
    with pytest.raises(NotSupportedError, match="latin1_swedish_ci"):
        con.execute("CREATE TABLE v (a TEXT COLLATE latin1_swedish_ci)")
    with pytest.raises(NotSupportedError):
        con.execute("CREATE TABLE v (a TEXT) COLLATE = utf8mb4_unicode_ci")
    con.close()
    con = engine.connect(data_dir=str(tmp_path))         # the collations are kept in the catalog
    assert rows(con, "SELECT COUNT(*) FROM t WHERE a = 'x'") == [(2,)]
    assert rows(con, "SELECT COUNT(*) FROM t WHERE b = 'x'") == [(1,)]
    # the stored dictionaries' codes counted per collation key (HashAggregateExec._count_stored_keys)
    (value, count), = rows(con, "SELECT a, COUNT(*) FROM t GROUP BY a")
    assert value in ("x", "X") and count == 2
    assert sorted(rows(con, "SELECT b, COUNT(*) FROM t GROUP BY b")) == [("X", 1), ("x", 1)]
    assert [r[:3] for r in rows(con, "SHOW FULL COLUMNS FROM t")] == [
        ("a", "varchar(10)", "utf8mb4_general_ci"), ("b", "varchar(10)", "utf8mb4_bin"), ("n", "int", None)]
    assert rows(con, "SELECT COLUMN_NAME, CHARACTER_SET_NAME, COLLATION_NAME FROM information_schema.COLUMNS "
                     "WHERE TABLE_NAME IN ('t', 'u') ORDER BY TABLE_NAME, ORDINAL_POSITION") == [
        ("a", "utf8mb4", "utf8mb4_general_ci"), ("b", "utf8mb4", "utf8mb4_bin"), ("n", None, None),
        ("c", "utf8mb4", "utf8mb4_bin")]
    create = rows(con, "SHOW CREATE TABLE t")[0][1]
    assert "`b` varchar(10) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin" in create and "`a` varchar(10)," in create
    assert rows(con, "SHOW COLLATION LIKE 'utf8mb4%'") == [
        ("utf8mb4_general_ci", "utf8mb4", "45", "Yes", "Yes", "1", "PAD SPACE"),
        ("utf8mb4_bin", "utf8mb4", "46", "", "Yes", "1", "PAD SPACE"),
        ("utf8mb4_0900_ai_ci", "utf8mb4", "255", "", "Yes", "1", "NO PAD"),
        ("utf8mb4_0900_bin", "utf8mb4", "309", "", "Yes", "1", "NO PAD"),
        ("utf8mb4_0900_as_cs", "utf8mb4", "278", "", "Yes", "1", "NO PAD")]
    assert rows(con, "SELECT @@collation_server, @@collation_database, @@collation_connection") == [
        ("utf8mb4_general_ci",) * 3]
    con.close()


def test_unique_keys_compare_under_the_collation():
    con = engine.connect()
    con.execute("CREATE TABLE k (name VARCHAR(10) PRIMARY KEY, n INT)")
    con.execute("CREATE TABLE kb (name VARCHAR(10) COLLATE utf8mb4_bin PRIMARY KEY, n INT)")
    con.execute("INSERT INTO k VALUES ('alice', 1)")
    with pytest.raises(engine.IntegrityError, match="Duplicate entry 'ALICE ' for key 'PRIMARY'"):
        con.execute("INSERT INTO k VALUES ('ALICE ', 2)")
    with pytest.raises(engine.IntegrityError, match="Duplicate entry 'BOB'"):
        con.execute("INSERT INTO k VALUES ('bob', 2), ('BOB', 3)")
    assert con.execute("INSERT IGNORE INTO k VALUES ('Álice', 4), ('carl', 5)").rowcount == 1
    assert con.execute("REPLACE INTO k VALUES ('ALICE', 6)").rowcount == 2
    assert con.execute("INSERT INTO k VALUES ('Carl', 7) ON DUPLICATE KEY UPDATE n = n + 100").rowcount == 2
    assert rows(con, "SELECT name, n FROM k ORDER BY name") == [("ALICE", 6), ("carl", 105)]
    with pytest.raises(engine.IntegrityError):
        con.execute("UPDATE k SET name = 'CARL' WHERE n = 6")
    con.execute("INSERT INTO kb VALUES ('alice', 1), ('ALICE', 2)")       # _bin: two keys
    with pytest.raises(engine.IntegrityError):
        con.execute("INSERT INTO kb VALUES ('alice  ', 3)")              # PAD SPACE all the same
    con.close()


@pytest.mark.parametrize("seed", range(4))
def test_keys_of_ascii_columns_take_the_short_path_to_the_same_keys(seed):
    """engine.core.collation_keys skips the kernel for ASCII data without trailing spaces (and keys
    sliced, chunked, dictionary and scalar data alike): the same keys as the model either way."""
    from engine.core.collation_keys import collation_keys
    rng = random.Random(seed)
    alphabet = "aZ_%09 " if seed % 2 else "aZ_%09"          # with and without trailing spaces
    values = [None if rng.random() < 0.1 else "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6)))
              for _ in range(300)]
    arr = pa.array(values).slice(3)
    assert collation_keys(arr, "utf8mb4_general_ci").to_pylist() == [ci(v) for v in values[3:]]
    assert collation_keys(arr, "utf8mb4_bin").to_pylist() == [bin_key(v) for v in values[3:]]
    encoded = pa.chunked_array([arr.dictionary_encode()])
    assert collation_keys(encoded, "utf8mb4_general_ci").to_pylist() == [ci(v) for v in values[3:]]
    assert collation_keys(pa.scalar("ab "), "utf8mb4_general_ci").as_py() == "AB"
    # a slice of a run-end array keeps its parent's run ends: the keys cover the slice alone
    runs = pc.run_end_encode(pa.array(values)).slice(5, 200)
    assert collation_keys(runs, "utf8mb4_general_ci").to_pylist() == [ci(v) for v in values[5:205]]
