"""Hash joins on DOUBLE keys: a DOUBLE column, and MySQL's comparison of a number with a string (both
sides cast to DOUBLE: ``c_custkey = CAST(o_custkey AS CHAR)`` raised 'cannot join on a column of type
double' once the tables were large enough for a hash join). -0.0 equals 0.0; NULL matches nothing.
Results against DuckDB."""
from collections import Counter

import duckdb
import pyarrow as pa
import pytest

import engine
from engine.exec.operators.hash_join import _float_words

ROWS = 3000


def _rows(offset: int) -> list[tuple]:
    rows = [(i, (i + offset) % 700 / 4, str((i * 7 + offset) % 900)) for i in range(ROWS)]
    return rows + [(ROWS, -0.0, "0"), (ROWS + 1, 0.0, "-0"), (ROWS + 2, None, None), (ROWS + 3, 1e300, "1e300")]


@pytest.fixture(scope="module")
def both():
    con, duck = engine.connect(), duckdb.connect()
    for name, offset in (("fa", 0), ("fb", 3)):
        values = ", ".join(f"({k}, {'NULL' if d is None else repr(d)}, {'NULL' if s is None else repr(s)})"
                           for k, d, s in _rows(offset))
        con.execute(f"CREATE TABLE {name} (k BIGINT, d DOUBLE, s VARCHAR(10), SHARD KEY (k))")
        con.execute(f"INSERT INTO {name} VALUES {values}")
        duck.execute(f"CREATE TABLE {name} (k BIGINT, d DOUBLE, s VARCHAR(10))")
        duck.execute(f"INSERT INTO {name} VALUES {values}")
    yield con, duck
    con.close()


@pytest.mark.parametrize("canopy_sql, duckdb_sql", [
    ("SELECT fa.k, fb.k FROM fa JOIN fb ON fa.d = fb.d", None),
    ("SELECT fa.k FROM fa WHERE fa.d IN (SELECT d FROM fb)", None),
    ("SELECT fa.k, fb.k FROM fa LEFT JOIN fb ON fa.d = fb.d AND fb.k < 100", None),
    # a number against a string: MySQL compares both as DOUBLE ('-0' equals 0, '1e300' equals 1e300)
    ("SELECT fa.k, fb.k FROM fa JOIN fb ON fa.k = fb.s",
     "SELECT fa.k, fb.k FROM fa JOIN fb ON CAST(fa.k AS DOUBLE) = CAST(fb.s AS DOUBLE)"),
    ("SELECT fa.k, fb.k FROM fa JOIN fb ON fa.d = fb.s",
     "SELECT fa.k, fb.k FROM fa JOIN fb ON fa.d = CAST(fb.s AS DOUBLE)"),
    ("SELECT fa.k, fb.k FROM fa JOIN fb ON fa.k = CAST(fb.k AS CHAR)",
     "SELECT fa.k, fb.k FROM fa JOIN fb ON fa.k = fb.k"),
])
def test_matches_duckdb(both, canopy_sql, duckdb_sql):
    con, duck = both
    assert "HashJoin" in "\n".join(r[0] for r in con.execute("EXPLAIN " + canopy_sql).fetchall())
    got = Counter(con.execute(canopy_sql).fetchall())
    want = Counter(duck.execute(duckdb_sql or canopy_sql).fetchall())
    assert got == want


def test_float_words_make_equal_values_equal():
    column = pa.chunked_array([[0.0, -0.0, float("nan"), None], [float("-nan"), 1.5, 1.5000000000000002]])
    words = _float_words(column).to_pylist()
    assert words[0] == words[1]                         # -0.0 = 0.0
    assert words[2] == words[4]                         # one NaN
    assert words[3] is None                             # NULL stays NULL
    assert len({words[0], words[2], words[5], words[6]}) == 4
