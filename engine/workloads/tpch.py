"""TPC-H for Canopy: data generation, schema, loading and the 22 queries from ``../shared/tpch``.

One module serves the demo (``python -m engine.demo``), the test suite (results checked against
DuckDB), the notebook and the benchmarks, so all of them run exactly the same files the same way::

    from engine.workloads import tpch
    data_dir = tpch.generate(0.01, tpch.default_cache_dir())    # cached CSV, one file per table
    tpch.create_schema(con)                                     # ../shared/tpch/schema.sql
    rows = tpch.load(con, data_dir)                             # LOAD DATA, then COUNT(*) per table
                                    # (con = engine.connect(load_dir=data_dir): LOAD DATA reads there only)
    for name, sql in tpch.queries():                            # ("q01", "select ...") ... ("q22", ...)
        con.execute(sql).fetchall()

Nothing here imports DuckDB; :func:`load_duckdb` takes a DuckDB connection the caller made (DuckDB is
a test and benchmark dependency, not an engine one).
"""
from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Optional

#: Load order: the reference tables first, then dimensions, then the two big fact tables.
TABLES = ("region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem")

_REPO_ROOT = Path(__file__).resolve().parents[2]
_COMPLETE_MARKER = ".complete"

LOAD_DATA_SQL = (
    "LOAD DATA INFILE '{path}' INTO TABLE {table} "
    "FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"' LINES TERMINATED BY '\\n' IGNORE 1 LINES"
)


def shared_dir() -> Path:
    """The project's shared directory: ``$CANOPY_SHARED``, else ``../shared`` beside the repository."""
    override = os.environ.get("CANOPY_SHARED")
    path = Path(override) if override else _REPO_ROOT / ".." / "shared"
    path = path.resolve()
    if not (path / "tpch" / "schema.sql").is_file():
        raise FileNotFoundError(
            f"TPC-H files not found under {path}; clone the shared directory beside the repository "
            "or set CANOPY_SHARED to it"
        )
    return path


def default_cache_dir() -> Path:
    """Where generated data is kept: ``$CANOPY_DATA/tpch``, else ``.data/tpch`` in the repository."""
    override = os.environ.get("CANOPY_DATA")
    return (Path(override) if override else _REPO_ROOT / ".data") / "tpch"


def sf_label(sf: float) -> str:
    """Directory name for a scale factor: 0.01 -> ``sf0.01``, 1 -> ``sf1``."""
    return f"sf{sf:g}"


def tpchgen_cli() -> str:
    """The ``tpchgen-cli`` of the running interpreter's environment (PATH as a fallback)."""
    # sys.executable is not resolved: in a venv it is .venv/bin/python, whose siblings are the venv's scripts.
    beside = Path(sys.executable).parent / "tpchgen-cli"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("tpchgen-cli")
    if found is None:
        raise FileNotFoundError("tpchgen-cli not found; install it with `pip install tpchgen-cli`")
    return found


def _is_complete(data_dir: Path) -> bool:
    return (data_dir / _COMPLETE_MARKER).is_file() and all(
        (data_dir / f"{table}.csv").is_file() for table in TABLES
    )


def generate(sf: float, cache_dir: Path, *, quiet: bool = True) -> Path:
    """Generate TPC-H CSV at scale factor ``sf`` into ``cache_dir/sf<sf>/`` and return that directory.

    Cached: a complete directory is returned as is. The files are written into a temporary
    directory beside the target and renamed into place only when ``tpchgen-cli`` succeeded, so an
    interrupted run never leaves a partial set behind. A lock file serialises concurrent callers
    (the demo and the tests may share one cache).
    """
    cache_dir = Path(cache_dir)
    target = cache_dir / sf_label(sf)
    if _is_complete(target):
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    with open(cache_dir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _is_complete(target):  # another process generated it while we waited
            return target
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=cache_dir))
        try:
            cmd = [tpchgen_cli(), "csv", "--scale-factor", f"{sf:g}", "--output-dir", str(tmp)]
            if quiet:
                cmd += ["--quiet", "--no-progress"]
            subprocess.run(cmd, check=True)
            missing = [t for t in TABLES if not (tmp / f"{t}.csv").is_file()]
            if missing:
                raise RuntimeError(f"tpchgen-cli did not write {', '.join(missing)} into {tmp}")
            (tmp / _COMPLETE_MARKER).write_text(f"tpchgen-cli csv --scale-factor {sf:g}\n")
            tmp.chmod(0o755)  # mkdtemp makes it private; the cache is shared like any build output
            if target.exists():  # an incomplete leftover from something other than this function
                shutil.rmtree(target)
            os.rename(tmp, target)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp)
    return target


def _strip_comments(sql: str) -> str:
    # TPC-H files have no string literal containing "--", so a line-wise cut is exact here.
    return "\n".join(line.split("--", 1)[0] for line in sql.splitlines())


def schema_statements() -> list[str]:
    """The CREATE TABLE statements of ``schema.sql``, comments stripped, without trailing ``;``."""
    text = _strip_comments((shared_dir() / "tpch" / "schema.sql").read_text())
    return [stmt.strip() for stmt in text.split(";") if stmt.strip()]


def create_schema(con: Any) -> None:
    """Create the 8 TPC-H tables on a Canopy connection, one statement per ``execute``."""
    for stmt in schema_statements():
        con.execute(stmt)


def load_table(con: Any, data_dir: Path, table: str) -> int:
    """``LOAD DATA`` one table's CSV exactly as ``shared/tpch/README.md`` shows; return ``COUNT(*)``."""
    path = str((Path(data_dir) / f"{table}.csv").resolve())
    mysql_literal = path.replace("\\", "\\\\").replace("'", "''")  # MySQL string-literal escaping
    con.execute(LOAD_DATA_SQL.format(path=mysql_literal, table=table))
    return con.execute(f"SELECT COUNT(*) FROM {table}").fetchall()[0][0]


def load(
    con: Any,
    data_dir: Path,
    *,
    on_table: Optional[Callable[[str, int, float], None]] = None,
) -> dict[str, int]:
    """Load all 8 tables; return ``{table: rows}``. ``on_table(table, rows, seconds)`` reports progress."""
    counts = {}
    for table in TABLES:
        start = time.perf_counter()
        counts[table] = load_table(con, data_dir, table)
        if on_table is not None:
            on_table(table, counts[table], time.perf_counter() - start)
    return counts


def numbered_queries(directory: Path, count: int) -> list[tuple[str, str]]:
    """``[("q01", sql), ...]`` from ``directory/qNN.sql`` (TPC-H's and TPC-DS's layout): the texts
    without their trailing ``;``."""
    result = []
    for number in range(1, count + 1):
        name = f"q{number:02d}"
        sql = (directory / f"{name}.sql").read_text().strip()
        result.append((name, sql[:-1].rstrip() if sql.endswith(";") else sql))
    return result


def queries() -> list[tuple[str, str]]:
    """``[("q01", sql), ..., ("q22", sql)]``: the query texts without their trailing ``;``."""
    return numbered_queries(shared_dir() / "tpch" / "queries", 22)


def query(name: str) -> str:
    """One query's text by name (``"q06"``)."""
    found = dict(queries()).get(name)
    if found is None:
        raise KeyError(f"no TPC-H query {name!r}; expected q01 .. q22")
    return found


# --- DuckDB, the reference ------------------------------------------------------------------------

_SINGLESTORE_KEY_LINE = re.compile(r",\s*(SHARD|SORT)\s+KEY\s*\([^)]*\)", re.IGNORECASE)


def duckdb_schema_statements() -> list[str]:
    """``schema.sql`` in DuckDB's dialect: same column types, without SingleStore's table options."""
    statements = []
    for stmt in schema_statements():
        stmt = re.sub(r"CREATE\s+REFERENCE\s+TABLE", "CREATE TABLE", stmt, flags=re.IGNORECASE)
        statements.append(_SINGLESTORE_KEY_LINE.sub("", stmt))
    return statements


def load_duckdb(duck: Any, data_dir: Path) -> dict[str, int]:
    """Create and fill the TPC-H tables on a DuckDB connection from the same CSV files; ``{table: rows}``."""
    counts = {}
    for stmt in duckdb_schema_statements():
        duck.execute(stmt)
    for table in TABLES:
        path = str((Path(data_dir) / f"{table}.csv").resolve()).replace("'", "''")
        duck.execute(f"COPY {table} FROM '{path}' (FORMAT csv, HEADER true, DELIMITER ',', QUOTE '\"')")
        counts[table] = duck.execute(f"SELECT COUNT(*) FROM {table}").fetchall()[0][0]
    return counts
