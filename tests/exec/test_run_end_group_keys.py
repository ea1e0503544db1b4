"""GROUP BY a string column stored run-end encoded (long runs, as TPC-H's l_linestatus along the
sort key): the scan hands it to the partial aggregate as a dictionary array over its run values, so
the codes are grouped, not every row's string keyed and hashed. NULL runs, a filter that splits runs
(kernel conjunct) and a collation that equates spellings; results against DuckDB and Python."""
import numpy as np
import pyarrow as pa
import pytest

import kernels
from cluster.local import LocalRunner
from engine.storage.columnstore.encoding import kept_encoded
from tests.oracle import assert_same_rows, canopy_and_duckdb

ROWS = 200_000


def _data() -> pa.Table:
    rng = np.random.default_rng(5)
    spellings = np.array(["F", "O", "f", "o ", None, "P"], dtype=object)
    runs = rng.integers(0, len(spellings), ROWS // 500)
    r = np.repeat(spellings[runs], 500)                     # runs of 500 rows (several per value)
    return pa.table({"r": pa.array(r, pa.string()), "v": rng.integers(-50, 50, ROWS),
                     "w": rng.integers(0, 1000, ROWS)})


@pytest.fixture(scope="module")
def tables():
    data = _data()
    con, duck = canopy_and_duckdb("CREATE TABLE t (r VARCHAR(4), v BIGINT, w BIGINT)", "t", data, progress=False)
    yield con, duck, data
    con.close()
    duck.close()


def test_a_run_end_array_becomes_codes_over_its_distinct_values():
    values = pa.array(["a", "b", "a", None, "b"], pa.string())
    ree = pa.RunEndEncodedArray.from_arrays(pa.array([3, 5, 6, 9, 10], pa.int32()), values)
    for start, length in ((0, 10), (2, 5), (4, 1), (9, 1)):
        sliced = ree.slice(start, length)
        coded = kept_encoded(sliced)
        assert pa.types.is_dictionary(coded.type) and len(coded.dictionary) <= 3
        assert coded.dictionary_decode().to_pylist() == sliced.to_pylist()


@pytest.mark.parametrize("sql", [
    "SELECT r, SUM(v), COUNT(*) FROM t GROUP BY r",
    "SELECT r, SUM(v), COUNT(r) FROM t WHERE w < 300 GROUP BY r",         # the filter splits runs
    "SELECT r, MAX(v) FROM t WHERE v > 45 GROUP BY r",
])
def test_groups_as_duckdb(tables, sql):
    con, duck, _ = tables
    got = con.execute(sql).fetchall()
    # general_ci (the default collation) equates 'F' / 'f' and 'o ' / 'O': group by the key in DuckDB
    key = "CASE WHEN r IS NULL THEN NULL ELSE upper(rtrim(r)) END"
    want = duck.execute(sql.replace("SELECT r,", f"SELECT {key},").replace("GROUP BY r", f"GROUP BY {key}")).fetchall()
    assert_same_rows([(None if g[0] is None else g[0].upper().rstrip(),) + tuple(g[1:]) for g in got], want)


def test_the_factorizer_gets_the_run_end_column_as_codes(tables, monkeypatch):
    con, _, _ = tables
    if not isinstance(con.session.runner, LocalRunner):
        pytest.skip("spies on the embedded runner's kernels (Ray leaves run in other processes)")
    seen = []

    class Spy(kernels.Factorizer):
        def factorize(self, columns):
            seen.extend((pa.types.is_dictionary(c.type), len(c)) for c in columns)
            return super().factorize(columns)

    monkeypatch.setattr(kernels, "Factorizer", Spy)
    for sql in ("SELECT r, SUM(v) FROM t GROUP BY r", "SELECT r, SUM(v) FROM t WHERE w < 300 GROUP BY r"):
        seen.clear()
        con.execute(sql).fetchall()
        # the partial aggregates over the scan get codes; the final one merges a few plain groups
        assert any(coded for coded, _ in seen) and all(coded for coded, rows in seen if rows > 100), (sql, seen)
