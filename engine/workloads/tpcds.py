"""TPC-DS for Canopy: data generation, schema, loading, the 99 queries and DuckDB's answers, from
``../shared/tpcds``.

One module serves the test suite (results checked against the answers DuckDB computed on the same
data) and the benchmark (``python -m benchmarks.tpcds``), so both run exactly the same files::

    from engine.workloads import tpcds
    data_dir = tpcds.generate(0.1, tpcds.default_cache_dir())   # CSV + DuckDB's answers, cached
    tpcds.create_schema(con)                                    # schema.sql with Canopy's shard keys
    rows = tpcds.load(con, data_dir)                            # LOAD DATA, then COUNT(*) per table
    for name, sql in tpcds.queries():                           # ("q01", "select ...") ... ("q99", ...)
        con.execute(sql).fetchall()
    expected = tpcds.answer(data_dir, "q01")                    # a pyarrow Table

The data comes from DuckDB's ``tpcds`` extension (dsdgen), which pins DuckDB 1.5.5 and so runs in
an interpreter of its own (``.venv-tpcds``, made by ``make tpcds-venv`` from
``../shared/tpcds/setup.sh``); nothing here imports DuckDB.
"""
from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Optional

from engine.workloads import tpch

_REPO_ROOT = Path(__file__).resolve().parents[2]
_COMPLETE_MARKER = ".complete"

#: Canopy's layout, the choices a SingleStore user would make (``schema.sql`` declares none): the
#: fact tables sharded by item, so a sale and its return (joined on item and ticket / order number)
#: meet on the same partition, and an inventory row with the sales of its item; the two big
#: customer dimensions by their own key; every other dimension (at SF 1 at most ~100k rows) a
#: REFERENCE table, copied to every leaf, so joining it needs no exchange.
SHARD_KEYS = {
    "store_sales": "ss_item_sk",
    "store_returns": "sr_item_sk",
    "catalog_sales": "cs_item_sk",
    "catalog_returns": "cr_item_sk",
    "web_sales": "ws_item_sk",
    "web_returns": "wr_item_sk",
    "inventory": "inv_item_sk",
    "customer": "c_customer_sk",
    "customer_demographics": "cd_demo_sk",
}

LOAD_DATA_SQL = (
    "LOAD DATA INFILE '{path}' INTO TABLE {table} "
    "FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"' ESCAPED BY '\\\\' "
    "LINES TERMINATED BY '\\n' IGNORE 1 LINES"
)


def tpcds_dir() -> Path:
    """``tpcds/`` of the project's shared directory (found as for TPC-H: ``$CANOPY_SHARED`` or
    ``../shared`` beside the repository)."""
    path = tpch.shared_dir() / "tpcds"
    if not (path / "schema.sql").is_file():
        raise FileNotFoundError(f"TPC-DS files not found under {path}")
    return path


def default_cache_dir() -> Path:
    """Where generated data is kept: ``$CANOPY_DATA/tpcds``, else ``.data/tpcds`` in the repository."""
    override = os.environ.get("CANOPY_DATA")
    return (Path(override) if override else _REPO_ROOT / ".data") / "tpcds"


def generator_python() -> Path:
    """The interpreter with DuckDB 1.5.5 and its tpcds extension: ``$CANOPY_TPCDS_PYTHON``, else
    ``.venv-tpcds/bin/python`` in the repository (``make tpcds-venv`` creates it)."""
    override = os.environ.get("CANOPY_TPCDS_PYTHON")
    path = Path(override) if override else _REPO_ROOT / ".venv-tpcds" / "bin" / "python"
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise FileNotFoundError(
            f"the TPC-DS generator's interpreter {path} is missing; run `make tpcds-venv` "
            "(or ../shared/tpcds/setup.sh .venv-tpcds), or set CANOPY_TPCDS_PYTHON"
        )
    return path


def _is_complete(data_dir: Path) -> bool:
    # Our marker, or (data gen.py wrote itself, e.g. `gen.py --out DIR`) the last file it writes.
    finished = (data_dir / _COMPLETE_MARKER).is_file() or (data_dir / "answers" / "q99.parquet").is_file()
    return finished and all((data_dir / "csv" / f"{table}.csv").is_file() for table in tables())


def generate(sf: float, cache_dir: Path, *, quiet: bool = True) -> Path:
    """Generate TPC-DS at scale factor ``sf`` into ``cache_dir/sf<sf>/`` (``csv/``, ``parquet/`` and
    DuckDB's ``answers/``) with ``shared/tpcds/gen.py``, and return that directory.

    Cached and safe as :func:`engine.workloads.tpch.generate`: a complete directory is returned as
    is, the files are written beside the target and renamed into place only when the generator
    succeeded, and a lock serialises concurrent callers.
    """
    cache_dir = Path(cache_dir)
    label = tpch.sf_label(sf)
    target = cache_dir / label
    if _is_complete(target):
        return target
    python = generator_python()
    cache_dir.mkdir(parents=True, exist_ok=True)
    with open(cache_dir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _is_complete(target):  # another process generated it while we waited
            return target
        tmp = Path(tempfile.mkdtemp(prefix=f".{label}.", dir=cache_dir))
        try:
            cmd = [str(python), str(tpcds_dir() / "gen.py"), "--sf", f"{sf:g}", "--out", str(tmp)]
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL if quiet else None)
            written = tmp / label
            missing = [t for t in tables() if not (written / "csv" / f"{t}.csv").is_file()]
            if missing:
                raise RuntimeError(f"gen.py did not write {', '.join(missing)} into {written}")
            (written / _COMPLETE_MARKER).write_text(" ".join(cmd[1:]) + "\n")
            if target.exists():  # an incomplete leftover from something other than this function
                shutil.rmtree(target)
            os.rename(written, target)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp)
    return target


def _strip_comments(sql: str) -> str:
    # schema.sql has no string literal holding "--", so a line-wise cut is exact.
    return "\n".join(line.split("--", 1)[0] for line in sql.splitlines())


def schema_statements(*, layout: str = "canopy") -> list[str]:
    """The 24 ``CREATE TABLE`` statements of ``schema.sql`` without trailing ``;``.

    ``layout="plain"``: the file as it is (no shard keys: every table sharded by its first column's
    default, which is what a user gets who loads the file unchanged); ``"canopy"``: with
    :data:`SHARD_KEYS` and the other tables as ``REFERENCE`` tables.
    """
    if layout not in ("plain", "canopy"):
        raise ValueError(f"layout must be 'plain' or 'canopy', not {layout!r}")
    text = _strip_comments((tpcds_dir() / "schema.sql").read_text())
    statements = [stmt.strip() for stmt in text.split(";") if stmt.strip()]
    if layout == "plain":
        return statements
    result = []
    for stmt in statements:
        table = _table_name(stmt)
        if table in SHARD_KEYS:
            body, close = stmt.rsplit(")", 1)
            stmt = f"{body.rstrip()},\n    SHARD KEY ({SHARD_KEYS[table]})\n){close}"
        else:
            stmt = re.sub(r"^CREATE\s+TABLE", "CREATE REFERENCE TABLE", stmt, flags=re.IGNORECASE)
        result.append(stmt)
    return result


def _table_name(create_statement: str) -> str:
    match = re.match(r"CREATE\s+TABLE\s+(\w+)", create_statement, flags=re.IGNORECASE)
    if match is None:
        raise ValueError(f"not a CREATE TABLE statement: {create_statement[:60]!r}")
    return match.group(1)


def tables() -> list[str]:
    """The 24 table names in ``schema.sql`` order."""
    return [_table_name(stmt) for stmt in schema_statements(layout="plain")]


def create_schema(con: Any, *, layout: str = "canopy") -> None:
    """Create the 24 TPC-DS tables on a Canopy connection (see :func:`schema_statements`)."""
    for stmt in schema_statements(layout=layout):
        con.execute(stmt)


def load_table(con: Any, data_dir: Path, table: str) -> int:
    """``LOAD DATA`` one table's CSV (``\\N`` is NULL); return ``COUNT(*)``."""
    path = str((Path(data_dir) / "csv" / f"{table}.csv").resolve())
    mysql_literal = path.replace("\\", "\\\\").replace("'", "''")  # MySQL string-literal escaping
    con.execute(LOAD_DATA_SQL.format(path=mysql_literal, table=table))
    return con.execute(f"SELECT COUNT(*) FROM {table}").fetchall()[0][0]


def load(
    con: Any,
    data_dir: Path,
    *,
    on_table: Optional[Callable[[str, int, float], None]] = None,
) -> dict[str, int]:
    """Load all 24 tables; return ``{table: rows}``. ``on_table(table, rows, seconds)`` reports progress."""
    counts = {}
    for table in tables():
        start = time.perf_counter()
        counts[table] = load_table(con, data_dir, table)
        if on_table is not None:
            on_table(table, counts[table], time.perf_counter() - start)
    return counts


def queries() -> list[tuple[str, str]]:
    """``[("q01", sql), ..., ("q99", sql)]``: the query texts without their trailing ``;``."""
    return tpch.numbered_queries(tpcds_dir() / "queries", 99)


def query(name: str) -> str:
    """One query's text by name (``"q06"``)."""
    found = dict(queries()).get(name)
    if found is None:
        raise KeyError(f"no TPC-DS query {name!r}; expected q01 .. q99")
    return found


def answer(data_dir: Path, name: str):
    """DuckDB 1.5.5's result of query ``name`` on the data in ``data_dir``, as a pyarrow Table."""
    import pyarrow.parquet as pq

    return pq.read_table(Path(data_dir) / "answers" / f"{name}.parquet")


# --- DuckDB, the peer of the benchmark ------------------------------------------------------------

def load_duckdb(duck: Any, data_dir: Path) -> dict[str, int]:
    """Create and fill the TPC-DS tables on a DuckDB connection from the same CSV files; ``{table: rows}``."""
    counts = {}
    for stmt in schema_statements(layout="plain"):
        duck.execute(stmt)
    for table in tables():
        path = str((Path(data_dir) / "csv" / f"{table}.csv").resolve()).replace("'", "''")
        duck.execute(f"COPY {table} FROM '{path}' "
                     "(FORMAT csv, HEADER true, DELIMITER ',', QUOTE '\"', NULLSTR '\\N')")
        counts[table] = duck.execute(f"SELECT COUNT(*) FROM {table}").fetchall()[0][0]
    return counts
