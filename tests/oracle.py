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


def assert_same_rows(got: list, want: list, rel: float = 1e-9) -> None:
    """The same rows in any order; floats equal to ``rel`` (aggregates over doubles are summed in
    another order by each engine), Decimal and int compared by value."""
    import math

    def key(row):
        return tuple((v is None, str(type(v).__name__ in ("float",)), round(float(v), 6)
                      if isinstance(v, float) else v if not hasattr(v, "as_tuple") else float(v)) for v in row)

    def norm(row):
        return tuple(float(v) if hasattr(v, "as_tuple") else v for v in row)

    assert len(got) == len(want), f"{len(got)} rows, DuckDB {len(want)}"
    got_sorted = sorted((norm(r) for r in got), key=lambda r: repr(key(r)))
    want_sorted = sorted((norm(r) for r in want), key=lambda r: repr(key(r)))
    for g, w in zip(got_sorted, want_sorted):
        assert len(g) == len(w), (g, w)
        for a, b in zip(g, w):
            if isinstance(a, float) or isinstance(b, float):
                assert a is not None and b is not None and math.isclose(a, b, rel_tol=rel, abs_tol=1e-9), (g, w)
            else:
                assert a == b, (g, w)
