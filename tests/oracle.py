"""DuckDB as the oracle: one table loaded alike into Canopy and DuckDB."""
from __future__ import annotations

import pyarrow as pa
import pytest


def canopy_and_duckdb(ddl: str, name: str, data: pa.Table, **connect_options):
    """(Canopy connection, DuckDB connection), each holding ``data`` as table ``name``: Canopy's created
    by ``ddl`` and loaded, DuckDB's the same Arrow table registered. The caller closes both."""
    import engine
    duckdb = pytest.importorskip("duckdb")
    con = engine.connect(**connect_options)
    con.execute(ddl)
    con.load_table(name, data)
    duck = duckdb.connect()
    duck.register(name, data)
    return con, duck
