"""GROUP BY k with only COUNT(*) over a durable table counts the stored dictionary codes
(Factorizer.count_keys): results against DuckDB, the codes path taken, other shapes unchanged."""
import os

import numpy as np
import pyarrow as pa
import pytest

import engine
import kernels

duckdb = pytest.importorskip("duckdb")
# Ray's leaves are processes of their own: a spy set in this process does not see their kernel calls
RAY = os.environ.get("CANOPY_RUNNER") == "ray"


@pytest.fixture
def trade(tmp_path):
    rng = np.random.default_rng(7)
    rows = 60_000
    symbols = np.array([f"S{i:03d}" for i in range(300)], dtype=object)
    picked = symbols[np.minimum(rng.zipf(1.3, rows) - 1, 299)]
    picked[rng.random(rows) < 0.01] = None
    data = pa.table({"id": np.arange(rows), "sym": pa.array(picked, pa.string()), "v": rng.integers(0, 9, rows)})
    con = engine.connect(data_dir=str(tmp_path / "db"), progress=False)
    con.execute("CREATE TABLE trade (id BIGINT, sym VARCHAR(8), v INT, SHARD KEY (id))")
    con.load_table("trade", data.slice(0, rows // 2))
    con.execute("OPTIMIZE TABLE trade")
    con.load_table("trade", data.slice(rows // 2))        # a second segment set + write buffer
    duck = duckdb.connect()
    duck.register("trade", data)
    yield con, duck
    con.close()


def _rows(result):
    return sorted(map(tuple, result), key=repr)


@pytest.mark.parametrize("sql", [
    "SELECT sym, COUNT(*) FROM trade GROUP BY sym",
    "SELECT sym, COUNT(*) c FROM trade GROUP BY sym ORDER BY c DESC, sym LIMIT 10",
    "SELECT sym, COUNT(*), COUNT(*) + 1 FROM trade GROUP BY sym",
    "SELECT sym, COUNT(*), SUM(v) FROM trade GROUP BY sym",              # not a count-only shape
    "SELECT sym, COUNT(*) FROM trade WHERE v > 3 GROUP BY sym",          # filtered: the general path
])
def test_counts_match_duckdb(trade, sql):
    con, duck = trade
    assert _rows(con.execute(sql).fetchall()) == _rows(duck.execute(sql).fetchall())


def test_the_plan_counts_the_stored_codes(trade):
    con, _ = trade
    plan = "\n".join(r[0] for r in con.execute("EXPLAIN SELECT sym, COUNT(*) FROM trade GROUP BY sym").fetchall())
    assert "stored=key counts" in plan, plan
    plan = "\n".join(r[0] for r in con.execute("EXPLAIN SELECT sym, COUNT(*), SUM(v) FROM trade GROUP BY sym")
                     .fetchall())
    assert "stored=" not in plan, plan


@pytest.mark.skipif(RAY, reason="the kernels run in the Ray leaves' processes, out of this spy's reach "
                                "(test_the_plan_counts_the_stored_codes checks the plan on both runners)")
def test_dictionary_codes_are_counted_not_decoded(trade, monkeypatch):
    """sym is under the default (case-insensitive) collation: its stored codes are counted
    (kernels.count_codes), and only dictionary entries are factorized, never a row each."""
    con, _ = trade
    counted, factorized = [], []
    count_codes, factorize = kernels.count_codes, kernels.Factorizer.factorize

    def recording_counts(codes, *rest):
        counted.append(len(codes))
        return count_codes(codes, *rest)

    def recording_factorize(self, columns):
        factorized.append(len(columns[0]))
        return factorize(self, columns)

    monkeypatch.setattr(kernels, "count_codes", recording_counts)
    monkeypatch.setattr(kernels.Factorizer, "factorize", recording_factorize)
    con.execute("SELECT sym, COUNT(*) FROM trade GROUP BY sym").fetchall()
    assert counted and max(counted) > 300
    # the stored segments' dictionaries (300 symbols and a NULL); the write buffer's rows are plain
    assert factorized and sorted(factorized)[len(factorized) // 2] <= 301
