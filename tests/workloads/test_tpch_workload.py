"""engine.workloads.tpch: cached, atomic generation; the schema split; the DuckDB dialect rewrite."""
import subprocess

import pytest

from engine.workloads import tpch


def test_generate_is_cached(tmp_path, monkeypatch):
    first = tpch.generate(0.001, tmp_path)
    assert first == tmp_path / "sf0.001"
    assert sorted(p.name for p in first.glob("*.csv")) == sorted(f"{t}.csv" for t in tpch.TABLES)
    assert (first / "lineitem.csv").read_text().startswith("l_orderkey,l_partkey,")

    def must_not_run():
        raise AssertionError("a complete cache must not run tpchgen-cli again")

    monkeypatch.setattr(tpch, "tpchgen_cli", must_not_run)
    assert tpch.generate(0.001, tmp_path) == first


def test_failed_generation_leaves_nothing_behind(tmp_path, monkeypatch):
    monkeypatch.setattr(tpch, "tpchgen_cli", lambda: "false")  # exits 1 without writing a file
    with pytest.raises(subprocess.CalledProcessError):
        tpch.generate(0.001, tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == [".lock"]


def test_schema_statements():
    statements = tpch.schema_statements()
    assert len(statements) == len(tpch.TABLES)
    assert all("--" not in s and not s.endswith(";") for s in statements)
    assert sum(s.startswith("CREATE REFERENCE TABLE") for s in statements) == 2


def test_duckdb_schema_drops_singlestore_options_only():
    for statement in tpch.duckdb_schema_statements():
        assert statement.startswith("CREATE TABLE ")
        assert "SHARD KEY" not in statement and "SORT KEY" not in statement
        assert statement.rstrip().endswith(")") and ",\n)" not in statement
    lineitem = tpch.duckdb_schema_statements()[-1]
    assert "l_quantity      DECIMAL(15,2)   NOT NULL" in lineitem


def test_queries():
    names = [name for name, _ in tpch.queries()]
    assert names == [f"q{n:02d}" for n in range(1, 23)]
    assert all(not sql.rstrip().endswith(";") for _, sql in tpch.queries())
    assert tpch.query("q06").lower().startswith("select")
    with pytest.raises(KeyError):
        tpch.query("q23")
