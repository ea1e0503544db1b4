"""MySQL's everyday string functions (CONCAT_WS, LPAD / RPAD, REPEAT, MD5 / SHA1 / SHA2, HEX, REGEXP,
REGEXP_REPLACE, REGEXP_SUBSTR) over a few hundred rows of a real table (so the vectorised path runs
over several batches and partitions), checked against Python's own hashlib / re / str, NULLs included."""
import hashlib
import re

import numpy as np
import pyarrow as pa
import pytest

import engine
from engine.errors import NotSupportedError

N = 600


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(16)
    words = ["apple", "Banana", "cherry42", "dátil", "", "x7y8", "ZEBRA", "héllo wörld", "a1b22c333"]
    s = [words[i] + str(j) if j % 3 else words[i] for i, j in zip(rng.integers(0, len(words), N), range(N))]
    null_s = rng.random(N) < 0.1
    t = [words[i] for i in rng.integers(0, len(words), N)]
    null_t = rng.random(N) < 0.1
    n = rng.integers(-3, 8, N)
    null_n = rng.random(N) < 0.05
    return {
        "id": list(range(N)),
        "s": [None if m else v for v, m in zip(s, null_s)],
        "t": [None if m else v for v, m in zip(t, null_t)],
        "n": [None if m else int(v) for v, m in zip(n, null_n)],
        "big": [int(v) for v in rng.integers(-2**40, 2**40, N)],
    }


@pytest.fixture(scope="module")
def con(data):
    c = engine.connect()
    c.execute("CREATE TABLE f (id BIGINT, s VARCHAR(40), t VARCHAR(40), n BIGINT, big BIGINT, SHARD KEY (id))")
    c.load_table("f", pa.table({"id": pa.array(data["id"], pa.int64()), "s": pa.array(data["s"], pa.string()),
                                "t": pa.array(data["t"], pa.string()), "n": pa.array(data["n"], pa.int64()),
                                "big": pa.array(data["big"], pa.int64())}))
    yield c
    c.close()


def column(con, sql):
    rows = con.execute(sql + " FROM f ORDER BY id").fetchall()
    assert len(rows) == N
    return [r[0] if len(r) == 1 else r for r in rows]


def rows(data):
    return [dict(zip(data, values)) for values in zip(*data.values())]


def test_concat_ws(con, data):
    want = [",".join(v for v in (r["s"], r["t"]) if v is not None) for r in rows(data)]
    assert column(con, "SELECT CONCAT_WS(',', s, t)") == want
    assert column(con, "SELECT CONCAT_WS(NULL, s, t)") == [None] * N
    assert con.execute("SELECT CONCAT_WS('-', 'a', NULL, 'b', NULL)").fetchall() == [("a-b",)]


def mysql_pad(s, n, fill, left):
    if s is None or n is None or n < 0:
        return None
    if len(s) >= n:
        return s[:n]
    if fill == "":
        return None
    prefix = (fill * n)[:n - len(s)]
    return prefix + s if left else s + prefix


@pytest.mark.parametrize("fill", ["*", "xyz", ""])
def test_lpad_rpad(con, data, fill):
    for k in (0, 4, 9):
        assert column(con, f"SELECT LPAD(s, {k}, '{fill}')") == [mysql_pad(r["s"], k, fill, True) for r in rows(data)]
        assert column(con, f"SELECT RPAD(s, {k}, '{fill}')") == [mysql_pad(r["s"], k, fill, False) for r in rows(data)]
    assert con.execute("SELECT LPAD('ab', -1, 'x'), RPAD(NULL, 3, 'x'), LPAD('ab', 3, NULL)").fetchall() == \
        [(None, None, None)]


def test_repeat(con, data):
    want = [None if r["s"] is None or r["n"] is None else r["s"] * max(r["n"], 0) for r in rows(data)]
    assert column(con, "SELECT REPEAT(s, n)") == want


@pytest.mark.parametrize("sql, fn", [
    ("MD5(s)", lambda v: hashlib.md5(v.encode()).hexdigest()),
    ("SHA1(s)", lambda v: hashlib.sha1(v.encode()).hexdigest()),
    ("SHA(s)", lambda v: hashlib.sha1(v.encode()).hexdigest()),
    ("SHA2(s, 256)", lambda v: hashlib.sha256(v.encode()).hexdigest()),
    ("SHA2(s, 0)", lambda v: hashlib.sha256(v.encode()).hexdigest()),
    ("SHA2(s, 512)", lambda v: hashlib.sha512(v.encode()).hexdigest()),
    ("SHA2(s, 224)", lambda v: hashlib.sha224(v.encode()).hexdigest()),
    ("SHA2(s, 7)", lambda v: None),
    ("HEX(s)", lambda v: v.encode().hex().upper()),
])
def test_digests_and_hex(con, data, sql, fn):
    assert column(con, "SELECT " + sql) == [None if r["s"] is None else fn(r["s"]) for r in rows(data)]


def test_hex_of_integers(con, data):
    assert column(con, "SELECT HEX(big)") == [format(r["big"] & (2**64 - 1), "X") for r in rows(data)]
    assert con.execute("SELECT HEX(255), HEX(-1), HEX(0)").fetchall() == [("FF", "F" * 16, "0")]


@pytest.mark.parametrize("pattern", ["^a", "[0-9]+$", "l+o", "^$", "b.n"])
def test_regexp(con, data, pattern):
    want = [None if r["s"] is None else bool(re.search(pattern, r["s"], re.I)) for r in rows(data)]
    assert column(con, f"SELECT s REGEXP '{pattern}'") == want
    assert column(con, f"SELECT s RLIKE '{pattern}'") == want
    assert column(con, f"SELECT REGEXP_LIKE(s, '{pattern}')") == want
    ids = [r["id"] for r in rows(data) if r["s"] is not None and not re.search(pattern, r["s"], re.I)]
    assert [r[0] for r in con.execute(f"SELECT id FROM f WHERE s NOT REGEXP '{pattern}' ORDER BY id")] == ids


@pytest.mark.parametrize("pattern, replacement, python_replacement", [
    ("[0-9]", "#", "#"), ("a", "", ""), ("([a-z])([0-9])", "$2$1", r"\2\1"), ("L", "\\", "\\\\"),
])
def test_regexp_replace(con, data, pattern, replacement, python_replacement):
    want = [None if r["s"] is None else re.sub(pattern, python_replacement, r["s"], flags=re.I) for r in rows(data)]
    escaped = replacement.replace("\\", "\\\\")
    assert column(con, f"SELECT REGEXP_REPLACE(s, '{pattern}', '{escaped}')") == want


@pytest.mark.parametrize("pattern", ["[0-9]+", "an+", "^z.", "q"])
def test_regexp_substr(con, data, pattern):
    def first(v):
        m = re.search(pattern, v, re.I)
        return m.group(0) if m else None
    assert column(con, f"SELECT REGEXP_SUBSTR(s, '{pattern}')") == [None if r["s"] is None else first(r["s"])
                                                                   for r in rows(data)]


def test_null_patterns_and_constants(con):
    assert con.execute("SELECT 'abc' REGEXP NULL, REGEXP_SUBSTR('abc', NULL), MD5(NULL), "
                       "REGEXP_REPLACE('abc', 'B', 'x')").fetchall() == [(None, None, None, "axc")]


@pytest.mark.parametrize("sql, name", [
    ("SELECT REGEXP_SUBSTR(s, 'a', 2) FROM f", "REGEXP_SUBSTR"),
    ("SELECT REGEXP_LIKE(s, 'a', 'c') FROM f", "REGEXP_LIKE"),
    ("SELECT s REGEXP t FROM f", "REGEXP"),
    ("SELECT LPAD(s, n, 'x') FROM f", "LPAD"),
])
def test_refused_by_name(con, sql, name):
    with pytest.raises(NotSupportedError, match=name):
        con.execute(sql).fetchall()
