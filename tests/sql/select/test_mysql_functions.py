"""MySQL's everyday string functions (CONCAT_WS, LPAD / RPAD, REPEAT, MD5 / SHA1 / SHA2, HEX, REGEXP,
REGEXP_REPLACE, REGEXP_SUBSTR) over a few hundred rows of a real table (so the vectorised path runs
over several batches and partitions), checked against Python's own hashlib / re / str, NULLs included."""
import datetime
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


# --- dates: checked against Python's datetime --------------------------------------------------------
@pytest.fixture(scope="module")
def dates():
    rng = np.random.default_rng(17)
    base = datetime.datetime(1990, 1, 1)
    a = [base + datetime.timedelta(seconds=int(s), microseconds=int(u))
         for s, u in zip(rng.integers(0, 40 * 365 * 86400, N), rng.integers(0, 10**6, N) * (rng.random(N) < 0.3))]
    b = [x + datetime.timedelta(days=int(k), seconds=int(s))
         for x, k, s in zip(a, rng.integers(-800, 800, N), rng.integers(-86400, 86400, N))]
    a = [None if m else v for v, m in zip(a, rng.random(N) < 0.08)]
    return {"id": list(range(N)), "a": a, "b": b,
            "day": [None if v is None else v.date() for v in a]}


@pytest.fixture(scope="module")
def dcon(dates):
    c = engine.connect()
    c.execute("CREATE TABLE f (id BIGINT, a DATETIME(6), b DATETIME(6), day DATE, SHARD KEY (id))")
    c.load_table("f", pa.table({"id": pa.array(dates["id"], pa.int64()), "a": pa.array(dates["a"], pa.timestamp("us")),
                                "b": pa.array(dates["b"], pa.timestamp("us")), "day": pa.array(dates["day"], pa.date32())}))
    yield c
    c.close()


def on_a(dates, fn):
    return [None if v is None else fn(v) for v in dates["a"]]


MYSQL_FORMAT = "%Y-%m-%d %H:%i:%s.%f | %y %c %e %k %l %h %p %T | %M %b %W %a %j %U %%"
PYTHON_FORMAT = "%Y-%m-%d %H:%M:%S.%f | %y {c} {e} {k} {l} %I %p %H:%M:%S | %B %b %A %a %j %U %%"


def python_format(v):
    return v.strftime(PYTHON_FORMAT).format(c=v.month, e=v.day, k=v.hour, l=(v.hour + 11) % 12 + 1)


def test_date_format(dcon, dates):
    assert column(dcon, f"SELECT DATE_FORMAT(a, '{MYSQL_FORMAT}')") == on_a(dates, python_format)
    assert column(dcon, "SELECT DATE_FORMAT(day, '%d.%m.%Y')") == on_a(dates, lambda v: v.strftime("%d.%m.%Y"))


def test_names_week_last_day(dcon, dates):
    assert column(dcon, "SELECT MONTHNAME(a)") == on_a(dates, lambda v: v.strftime("%B"))
    assert column(dcon, "SELECT DAYNAME(day)") == on_a(dates, lambda v: v.strftime("%A"))
    assert column(dcon, "SELECT WEEK(a)") == on_a(dates, lambda v: int(v.strftime("%U")))
    assert column(dcon, "SELECT DAYOFWEEK(a)") == on_a(dates, lambda v: v.isoweekday() % 7 + 1)

    def last_day(v):
        following = (v.replace(day=28) + datetime.timedelta(days=4)).replace(day=1)
        return (following - datetime.timedelta(days=1)).date()
    assert column(dcon, "SELECT LAST_DAY(a)") == on_a(dates, last_day)


def months_between(x, y):
    """MySQL's whole months from x to y."""
    months = (y.year - x.year) * 12 + y.month - x.month
    rest = lambda v: (v.day, v.hour, v.minute, v.second, v.microsecond)   # noqa: E731
    if months > 0 and rest(y) < rest(x):
        months -= 1
    if months < 0 and rest(y) > rest(x):
        months += 1
    return months


def trunc_div(a, b):
    return -(-a // b) if a < 0 else a // b


@pytest.mark.parametrize("unit", ["MICROSECOND", "SECOND", "MINUTE", "HOUR", "DAY", "WEEK", "MONTH", "QUARTER", "YEAR"])
def test_timestampdiff(dcon, dates, unit):
    us = {"MICROSECOND": 1, "SECOND": 10**6, "MINUTE": 60 * 10**6, "HOUR": 3600 * 10**6, "DAY": 86400 * 10**6,
          "WEEK": 7 * 86400 * 10**6}

    def diff(x, y):
        if unit in us:
            d = y - x
            return trunc_div((d.days * 86400 + d.seconds) * 10**6 + d.microseconds, us[unit])
        return trunc_div(months_between(x, y), {"MONTH": 1, "QUARTER": 3, "YEAR": 12}[unit])
    want = [None if x is None else diff(x, y) for x, y in zip(dates["a"], dates["b"])]
    assert column(dcon, f"SELECT TIMESTAMPDIFF({unit}, a, b)") == want


def test_unix_timestamp_round_trip(dcon, dates):
    epoch = datetime.datetime(1970, 1, 1)
    seconds = on_a(dates, lambda v: int((v - epoch).total_seconds() // 1))
    assert column(dcon, "SELECT UNIX_TIMESTAMP(a)") == seconds
    assert column(dcon, "SELECT FROM_UNIXTIME(UNIX_TIMESTAMP(a))") == on_a(dates, lambda v: v.replace(microsecond=0))
    assert dcon.execute("SELECT FROM_UNIXTIME(-1), UNIX_TIMESTAMP(NULL)").fetchall() == [(None, None)]


def test_str_to_date(dcon, dates):
    text = column(dcon, "SELECT DATE_FORMAT(a, '%d/%m/%Y %H:%i:%s')")
    assert text == on_a(dates, lambda v: v.strftime("%d/%m/%Y %H:%M:%S"))
    got = column(dcon, "SELECT STR_TO_DATE(DATE_FORMAT(a, '%d/%m/%Y %H:%i:%s'), '%d/%m/%Y %H:%i:%s')")
    assert got == on_a(dates, lambda v: v.replace(microsecond=0))
    assert column(dcon, "SELECT STR_TO_DATE(DATE_FORMAT(a, '%M %e, %Y'), '%M %d, %Y')") == on_a(dates, lambda v: v.date())
    assert dcon.execute("SELECT STR_TO_DATE('31/02/x', '%d/%m/%Y'), STR_TO_DATE(NULL, '%Y')").fetchall() == [(None, None)]
    # a day the month does not have is NULL (MySQL), not rolled over into the next month (Arrow's strptime)
    got = dcon.execute("SELECT STR_TO_DATE('2024-02-30', '%Y-%m-%d'), STR_TO_DATE('29/2/2023', '%d/%m/%Y'), "
                       "STR_TO_DATE('2024-02-29', '%Y-%m-%d'), STR_TO_DATE('31/1/2024', '%d/%m/%Y')").fetchall()
    assert got == [(None, None, datetime.date(2024, 2, 29), datetime.date(2024, 1, 31))]


def test_upper_keeps_sharp_s(dcon):
    """MySQL's UPPER('ß') is 'ß' (Arrow's: U+1E9E); a capital sharp s written as such stays one."""
    dcon.execute("CREATE TABLE sharp (id INT, s TEXT)")
    dcon.execute("INSERT INTO sharp VALUES (1, 'straße'), (2, NULL), (3, 'aẞbß'), (4, 'abc'), (5, 'ßß')")
    assert dcon.execute("SELECT UPPER(s) FROM sharp ORDER BY id").fetchall() == \
        [("STRAßE",), (None,), ("AẞBß",), ("ABC",), ("ßß",)]
    assert dcon.execute("SELECT UPPER('Fuß')").fetchall() == [("FUß",)]


@pytest.mark.parametrize("unit", ["year", "quarter", "month", "week", "day", "hour", "minute", "second"])
def test_date_trunc(dcon, dates, unit):
    def trunc(v):
        if unit == "week":
            return (v - datetime.timedelta(days=v.weekday())).replace(hour=0, minute=0, second=0, microsecond=0)
        if unit == "quarter":
            return v.replace(month=(v.month - 1) // 3 * 3 + 1, day=1, hour=0, minute=0, second=0, microsecond=0)
        keep = ["year", "month", "day", "hour", "minute", "second"].index(unit)
        fields = {"month": 1, "day": 1, "hour": 0, "minute": 0, "second": 0}
        return v.replace(microsecond=0, **{k: fields[k] for k in list(fields)[keep:]})
    assert column(dcon, f"SELECT DATE_TRUNC('{unit}', a)") == on_a(dates, trunc)


def test_timestampadd(dcon, dates):
    assert column(dcon, "SELECT TIMESTAMPADD(DAY, 3, day)") == on_a(dates, lambda v: v.date() + datetime.timedelta(days=3))
    for unit, delta in (("HOUR", datetime.timedelta(hours=-30)), ("MINUTE", datetime.timedelta(minutes=-30)),
                        ("SECOND", datetime.timedelta(seconds=-30)), ("MICROSECOND", datetime.timedelta(microseconds=-30))):
        assert column(dcon, f"SELECT TIMESTAMPADD({unit}, -30, a)") == on_a(dates, lambda v: v + delta)
        assert column(dcon, f"SELECT a - INTERVAL 30 {unit}") == on_a(dates, lambda v: v + delta)
        want = on_a(dates, lambda v: datetime.datetime.combine(v.date(), datetime.time()) + delta)
        assert column(dcon, f"SELECT DATE_ADD(day, INTERVAL -30 {unit})") == want


@pytest.mark.parametrize("sql, name", [
    ("SELECT WEEK(a, id) FROM f", "WEEK with a non-constant mode"),
    ("SELECT FROM_UNIXTIME(0, '%Y') FROM f", "FROM_UNIXTIME"),
    ("SELECT DATE_FORMAT(a, b) FROM f", "DATE_FORMAT"),
])
def test_dates_refused_by_name(dcon, sql, name):
    with pytest.raises(NotSupportedError, match=name):
        dcon.execute(sql).fetchall()
