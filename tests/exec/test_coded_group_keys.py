"""GROUP BY on string columns stored dictionary-encoded (in memory, the default, and in a data_dir)
groups their codes: the scan hands the key columns to the partial aggregate as dictionary arrays,
and a key under a collation is a dictionary of collation keys over the same codes (utf8mb4_general_ci
groups 'k01', 'K01' and 'k01 ' together). Results against DuckDB and Python."""
import collections

import numpy as np
import pyarrow as pa
import pytest

import kernels
from cluster.local import LocalRunner
from tests.oracle import assert_same_rows, canopy_and_duckdb

ROWS = 300_000          # past flush_rows: encoded segments, plus a tail from the INSERTs below
TAIL = [("zz", "k01", "K01", 5, 0.5), (None, "k02", "k02 ", 7, 0.25), ("K03", "K03", "k03", 1, 1.0)]


def _data() -> pa.Table:
    rng = np.random.default_rng(11)
    keys = np.array([f"k{i:02d}" for i in range(40)], dtype=object)
    # c1 / c2: the same keys in several spellings that general_ci equates
    spellings = np.array([f"{s}{i:02d}{pad}" for i in range(6) for s in "kK" for pad in ("", " ")], dtype=object)
    k1, k2 = keys[rng.integers(0, 40, ROWS)], keys[rng.integers(0, 7, ROWS)]
    c1, c2 = spellings[rng.integers(0, len(spellings), ROWS)], spellings[rng.integers(0, 8, ROWS)]
    k1[rng.random(ROWS) < 0.02] = None
    c1[rng.random(ROWS) < 0.01] = None
    return pa.table({"k1": pa.array(k1, pa.string()), "k2": pa.array(k2, pa.string()),
                     "c1": pa.array(c1, pa.string()), "c2": pa.array(c2, pa.string()),
                     "v": rng.integers(-50, 50, ROWS), "w": rng.random(ROWS)})


DDL = ("CREATE TABLE t (k1 VARCHAR(8) COLLATE utf8mb4_bin, k2 VARCHAR(8) COLLATE utf8mb4_bin, "
       "c1 VARCHAR(8), c2 VARCHAR(8), v BIGINT, w DOUBLE)")


def _open(**options):
    data = _data()
    con, duck = canopy_and_duckdb(DDL, "t", data, progress=False, **options)
    values = ", ".join("(" + ", ".join("NULL" if v is None else repr(v) for v in row) + ")" for row in TAIL)
    con.execute(f"INSERT INTO t (k1, k2, c1, v, w) VALUES {values}")
    if options.get("data_dir"):
        con.execute("OPTIMIZE TABLE t")
    duck.execute(f"CREATE TABLE t2 AS SELECT * FROM t UNION ALL SELECT k1, k2, c1, NULL, v, w FROM (VALUES {values}) "
                 "v(k1, k2, c1, v, w)")
    return con, duck


@pytest.fixture(scope="module", params=["memory", "data_dir"])
def tables(request, tmp_path_factory):
    options = {"data_dir": str(tmp_path_factory.mktemp("coded"))} if request.param == "data_dir" else {}
    con, duck = _open(**options)
    yield con, duck
    con.close()
    duck.close()


@pytest.mark.parametrize("sql", [
    "SELECT k1, SUM(v), COUNT(*) FROM t GROUP BY k1",
    "SELECT k1, k2, SUM(v), MIN(w), MAX(v) FROM t GROUP BY k1, k2",
    "SELECT k1, SUM(v) FROM t WHERE v > 10 GROUP BY k1",                   # kernel conjunct
    "SELECT k2, COUNT(k1), SUM(w) FROM t WHERE k1 IN ('k03', 'zz') GROUP BY k2",
    "SELECT k1, SUM(v) FROM t WHERE v + 1 > 10 GROUP BY k1",               # residual: keys decoded
    "SELECT k1, COUNT(k1), MAX(k1) FROM t GROUP BY k1",                    # key read by an aggregate too
    "SELECT k1, v % 3, COUNT(*) FROM t GROUP BY k1, v % 3",                # a computed key beside
])
def test_binary_keys_match_duckdb(tables, sql):
    con, duck = tables
    assert_same_rows(con.execute(sql).fetchall(), duck.execute(sql.replace(" t ", " t2 ")).fetchall(), rel=1e-9)


def _key(value, ci: bool):
    """A stored value's collation key, in Python: both collations PAD SPACE; general_ci equates an
    ASCII letter with its capital (the data are ASCII)."""
    if value is None:
        return None
    return value.rstrip(" ").upper() if ci else value.rstrip(" ")


@pytest.mark.parametrize("keys, where", [
    (["c1"], ""),
    (["c1", "c2"], ""),
    (["c2", "k2"], "WHERE v > 0"),
    (["c1", "k1"], ""),
])
def test_collated_keys_group_as_python(tables, keys, where):
    con, duck = tables
    ci = [k.startswith("c") for k in keys]          # k1 / k2 are utf8mb4_bin
    want = collections.defaultdict(lambda: [0, 0, set()])      # key: SUM(v), COUNT(*), spellings
    for row in duck.execute(f"SELECT {', '.join(keys)}, v FROM t2 {where}").fetchall():
        group = want[tuple(_key(v, c) for v, c in zip(row[:-1], ci))]
        group[0] += row[-1]
        group[1] += 1
        group[2].add(row[:-1])
    got = con.execute(f"SELECT {', '.join(keys)}, SUM(v), COUNT(*) FROM t {where} GROUP BY {', '.join(keys)}").fetchall()
    assert len(got) == len(want)
    for row in got:
        stored = row[:len(keys)]
        total, count, spellings = want[tuple(_key(v, c) for v, c in zip(stored, ci))]
        assert (row[-2], row[-1]) == (total, count), row
        assert stored in spellings, row         # ANY_VALUE: one of the group's stored spellings


def test_the_factorizer_gets_dictionary_keys(tables, monkeypatch):
    con, _ = tables
    if not isinstance(con.session.runner, LocalRunner):
        pytest.skip("spies on the embedded runner's kernels (Ray leaves run in other processes)")
    seen = []

    class Spy(kernels.Factorizer):
        def factorize(self, columns):
            seen.extend(pa.types.is_dictionary(c.type) for c in columns)
            return super().factorize(columns)

    monkeypatch.setattr(kernels, "Factorizer", Spy)
    for sql in ("SELECT k1, SUM(v) FROM t GROUP BY k1", "SELECT c1, c2, SUM(v) FROM t GROUP BY c1, c2"):
        seen.clear()
        con.execute(sql).fetchall()
        assert any(seen), sql                           # the segments' codes (collation keys' codes)
