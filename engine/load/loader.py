"""One bulk load from start to commit: which files, read block by block, routed as read, made visible at once.

    LOAD DATA INFILE 'a-*.csv' ...   ─ resolve (glob, load directory) ─▶ for each file:
        read (pyarrow's threaded CSV reader, or Parquet row groups) ─▶ blocks of the table's schema
        ─▶ writer.add(block): routed to partitions on the leaf pool, the parsed block dropped
    ─▶ writer.commit(): every routed piece appended under the runner's write lock

Memory: a file's bytes live until it is parsed; parsed blocks live until routed; routed pieces wait for
the commit. So a load holds about one copy of what it has read plus the file being parsed, never the
parsed table and its routed copy in full at once. Atomicity: a failure anywhere (a bad row in the third
file) aborts the writer, and nothing of the statement is visible.
"""
from __future__ import annotations

import dataclasses
import glob
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional

import pyarrow as pa

from engine.catalog import TableDef
from engine.errors import BindError, ExecutionError, UnsupportedError
from engine.exec.progress import progress_wanted
from engine.load.arrow_input import conform_arrow, to_arrow_table
from engine.load.delimited import LoadWarnings, WholeFileNeeded, read_delimited, stream_delimited
from engine.load.load_data import LoadDataStatement
from engine.load.keys import begin_load

# A progress bar appears only for loads still running after this long (tqdm's own delay).
PROGRESS_DELAY_S = 2.0
PARQUET_BATCH_ROWS = 128 * 1024
_GROUP_BATCHES = 8            # blocks routed together: enough to keep the leaf pool busy


@dataclass
class LoadOutcome:
    rows: int
    files: int
    bytes: int
    warnings: LoadWarnings = field(default_factory=LoadWarnings)

    @property
    def message(self) -> str:
        """MySQL's info line for LOAD DATA."""
        return (f"Records: {self.rows + self.warnings.skipped}  Deleted: 0  Skipped: {self.warnings.skipped}  "
                f"Warnings: {self.warnings.skipped}")


def run_load(statement: LoadDataStatement, table: TableDef, runner, *, load_dir: Optional[str] = None,
             progress: Optional[bool] = None) -> LoadOutcome:
    """Load every file ``statement.path`` names into ``table`` as one atomic append."""
    paths = resolve_paths(statement.path, load_dir)
    sizes = [_size(p) for p in paths]
    outcome = LoadOutcome(0, len(paths), sum(sizes))
    writer = begin_load(runner, table)
    bar = progress_bar(outcome.bytes, f"LOAD DATA {table.name}", progress)
    try:
        for path, size in zip(paths, sizes):
            file_statement = dataclasses.replace(statement, path=path)
            if statement.format != "PARQUET" and _load_streamed(writer, file_statement, table, outcome.warnings, bar):
                continue
            rows = _parquet_rows(path) if statement.format == "PARQUET" else None
            for block_bytes, batches in _blocks(read_blocks(file_statement, table, outcome.warnings), size, rows):
                _route(writer, batches, block_bytes, bar)
        outcome.rows = writer.commit()
    except BaseException:
        writer.abort()
        raise
    finally:
        if bar is not None:
            bar.close()
    return outcome


def load_arrow(data: Any, table: TableDef, runner, *, progress: Optional[bool] = None) -> int:
    """Append an Arrow table / record batch, a pandas or Polars DataFrame to ``table`` atomically."""
    arrow = to_arrow_table(data)
    source = f"load_table({table.name})"
    writer = begin_load(runner, table)
    bar = progress_bar(arrow.nbytes, f"load {table.name}", progress)
    try:
        first_row = 0
        for piece in arrow.to_batches(max_chunksize=PARQUET_BATCH_ROWS * 4):
            block = conform_arrow(piece, table, source, first_row=first_row)
            first_row += piece.num_rows
            _route(writer, block.to_batches(), piece.nbytes, bar)
        return writer.commit()
    except BaseException:
        writer.abort()
        raise
    finally:
        if bar is not None:
            bar.close()


def read_blocks(statement: LoadDataStatement, table: TableDef, warnings: LoadWarnings, *,
                data: Optional[bytes] = None) -> Iterator[pa.Table]:
    """The file ``statement.path`` (or ``data``, its bytes) as blocks of ``table.arrow_schema``.

    A text file is one block (pyarrow parses it in parallel and line numbers in errors need the whole
    file); Parquet streams row group by row group. Yields without keeping a reference, so a caller that
    drops a block frees it.
    """
    if statement.format == "PARQUET":
        yield from _parquet_blocks(statement, table, data)
    else:
        yield read_delimited(statement, table, data=data, warnings=warnings)


def _parquet_blocks(statement: LoadDataStatement, table: TableDef, data: Optional[bytes]) -> Iterator[pa.Table]:
    import pyarrow.parquet as pq

    if statement.set_clauses:
        raise UnsupportedError("LOAD DATA ... FORMAT PARQUET with SET")
    source = f"LOAD DATA {statement.path}"
    try:
        handle = pq.ParquetFile(pa.BufferReader(data) if data is not None else _open(statement.path))
    except (pa.ArrowInvalid, OSError) as error:
        if isinstance(error, ExecutionError):
            raise
        from engine.errors import BadDataError
        raise BadDataError(f"{source}: not a Parquet file: {error}") from None
    names = {n.lower(): n for n in handle.schema_arrow.names}
    wanted = [c for c in statement.columns] if statement.columns else \
        [c.name for c in table.columns if c.name.lower() in names]
    columns = [names.get(c.lower(), c) for c in wanted]
    first_row = 0
    for batch in handle.iter_batches(batch_size=PARQUET_BATCH_ROWS, columns=[c for c in columns if c.lower() in names]):
        yield conform_arrow(batch, table, source, columns=wanted, first_row=first_row)
        first_row += batch.num_rows


def _load_streamed(writer, statement: LoadDataStatement, table: TableDef, warnings: LoadWarnings, bar) -> bool:
    """Route a text file block by block as it is parsed (the next block parses while this one is
    routed). False when the file must be read whole instead: what it routed is rolled back first."""
    savepoint = writer.savepoint()
    routed_bytes = 0
    try:
        for block, block_bytes in stream_delimited(statement, table, warnings=warnings):
            batches = block.to_batches()
            del block
            _route(writer, batches, block_bytes, bar)
            routed_bytes += block_bytes
    except WholeFileNeeded:
        writer.rollback_to(savepoint)
        if bar is not None and routed_bytes:
            bar.update(-routed_bytes)
        return False
    return True


def _blocks(blocks: Iterator[pa.Table], file_bytes: int,
            file_rows: Optional[int]) -> Iterator[tuple[float, list[pa.RecordBatch]]]:
    """(bytes of the file each block stands for, its batches); the block's table object is dropped so
    the batches are its only owners. ``file_rows`` (Parquet metadata) apportions a file's bytes over
    its blocks; without it the file is one block."""
    for block in blocks:
        share = file_bytes * block.num_rows / file_rows if file_rows else file_bytes
        batches = block.to_batches()
        del block
        yield share, batches


def _parquet_rows(path: str) -> Optional[int]:
    import pyarrow.parquet as pq
    try:
        return pq.read_metadata(path).num_rows
    except (pa.ArrowInvalid, OSError):
        return None          # the reader raises the precise error


def _route(writer, batches: list[pa.RecordBatch], block_bytes: int, bar) -> None:
    """Route ``batches`` a group at a time, dropping each group once it is routed."""
    total = sum(b.num_rows for b in batches) or 1
    batches.reverse()                                   # pop from the end, first batch first
    while batches:
        group = [batches.pop() for _ in range(min(_GROUP_BATCHES, len(batches)))]
        rows = sum(b.num_rows for b in group)
        writer.add(pa.Table.from_batches(group))
        del group
        if bar is not None:
            bar.update(block_bytes * rows / total)


def resolve_paths(pattern: str, load_dir: Optional[str]) -> list[str]:
    """The files a LOAD DATA path names: itself, or the sorted matches of a glob. Every file must
    resolve inside the load directory (MySQL's ``secure_file_priv``), symlinks and ``..`` followed; a
    connection without one loads no file (the server's files are not the client's to read)."""
    if load_dir is None:
        raise ExecutionError("LOAD DATA INFILE is disabled: this connection has no load directory; "
                             "connect(load_dir='/path/to/dir') allows loading the files inside that directory")
    if not os.path.isabs(pattern):
        pattern = os.path.join(load_dir, pattern)
    _check_inside(pattern, load_dir)
    if os.path.exists(pattern) or not glob.has_magic(pattern):
        paths = [pattern]
    else:
        paths = sorted(p for p in glob.glob(pattern) if os.path.isfile(p))
        if not paths:
            raise ExecutionError(f"LOAD DATA: no file matches {pattern!r}")
    for path in paths:
        _check_inside(path, load_dir)
    return paths


def _check_inside(path: str, load_dir: str) -> None:
    root = os.path.realpath(load_dir)
    real = os.path.realpath(path)
    if os.path.commonpath([root, real]) != root:
        raise ExecutionError(f"LOAD DATA: {path!r} is outside the load directory {load_dir!r} "
                             f"(secure_file_priv); files must lie inside it")


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0            # the reader raises the precise error (missing, no permission)


def _open(path: str):
    try:
        return pa.OSFile(path, "rb")
    except FileNotFoundError:
        raise ExecutionError(f"LOAD DATA: file {path!r} not found") from None
    except (IsADirectoryError, PermissionError, OSError) as error:
        raise ExecutionError(f"LOAD DATA: cannot open {path!r}: {error}") from None


# -- progress ---------------------------------------------------------------------------------
def progress_bar(total_bytes: int, description: str, mode: Optional[bool]):
    """A tqdm bar over bytes, shown once the load has run PROGRESS_DELAY_S. ``mode``: True always,
    False never, None when stderr is a terminal or the code runs in a notebook kernel."""
    if not progress_wanted(mode):
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:        # tqdm is a dependency; a stripped install just loads without a bar
        return None
    return tqdm(total=total_bytes, desc=description, unit="B", unit_scale=True, unit_divisor=1024,
                delay=PROGRESS_DELAY_S, leave=False, file=sys.stderr)


def check_table_name(name: str) -> tuple[Optional[str], str]:
    """``db.t`` or ``t`` as (database, table) for the Python loading API."""
    if not isinstance(name, str) or not name:
        raise BindError("load_table needs a table name")
    database, _, table = name.rpartition(".")
    return (database or None), table
