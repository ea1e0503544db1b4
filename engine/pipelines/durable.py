"""What a pipeline keeps across a restart: its definition and its files' marks, as rows of two internal
tables of ``information_schema``, written through the runner like any table (durable with
``connect(data_dir=...)``, in memory otherwise).

``_PIPELINE_DEFINITIONS``: one row per pipeline (its id, the CREATE PIPELINE text, the ALTERed
settings, whether it was started). Small; rewritten whole (one atomic replace) by CREATE / ALTER /
START / STOP / DROP PIPELINE.

``_PIPELINE_MARKS``: append-only, one row per file outcome (Loaded, Failed, Skipped by SET OFFSETS
LATEST, Dropped by DROP FILE) or per reset (SET OFFSETS EARLIEST: FILE_NAME NULL), numbered by a
per-pipeline sequence; a file's state is its row with the highest SEQ after the last reset. A batch's
marks are added to the batch's own LoadWriter (:meth:`engine.runner.LoadWriter.add_related`), so on the
embedded runner the rows and their marks are one transaction: after a crash a file is either loaded
and marked, or neither, and the restarted pipeline loads exactly the unmarked ones.

Credentials at rest: the definitions table stores the CREATE PIPELINE text with its CREDENTIALS values
redacted; the values live in ``pipeline_credentials.json`` in the data_dir (pipeline id -> credentials),
created with mode 0600 and replaced atomically (write, fsync, rename), so only the database's own user
can read them. Without a data_dir they are kept in memory only.

Rows of pipelines that no longer exist (DROP, or CREATE OR REPLACE, which gives the pipeline a new id)
and superseded rows are compacted away when the pipelines are restored on open.
"""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Optional

import pyarrow as pa

from engine.catalog import ColumnDef, TableDef
from engine.types import BIGINT, DOUBLE, TEXT

if TYPE_CHECKING:
    from engine.pipelines.pipeline import Pipeline

DATABASE = "information_schema"
DEFINITIONS = "_PIPELINE_DEFINITIONS"
MARKS = "_PIPELINE_MARKS"
_DEFINITION_COLUMNS = (("PIPELINE_ID", TEXT), ("DATABASE_NAME", TEXT), ("PIPELINE_NAME", TEXT),
                       ("DEFINITION", TEXT), ("BATCH_INTERVAL_MS", BIGINT), ("MAX_FILES_PER_BATCH", BIGINT),
                       ("RUNNING", BIGINT))
_MARK_COLUMNS = (("PIPELINE_ID", TEXT), ("SEQ", BIGINT), ("FILE_NAME", TEXT), ("FILE_SIZE", BIGINT),
                 ("FILE_STATE", TEXT), ("ROWS_LOADED", BIGINT), ("ROWS_SKIPPED", BIGINT),
                 ("LOADED_AT", DOUBLE), ("ERROR", TEXT))
_CREATE = threading.Lock()
CREDENTIALS_FILE = "pipeline_credentials.json"


def tables(runner) -> tuple[TableDef, TableDef]:
    """The two tables, created the first time (reference tables: every leaf holds them whole)."""
    catalog = runner.catalog
    with _CREATE:
        if not catalog.has_database(DATABASE):
            catalog.create_database(DATABASE, if_not_exists=True)
        found = []
        for name, columns in ((DEFINITIONS, _DEFINITION_COLUMNS), (MARKS, _MARK_COLUMNS)):
            table = catalog.find_table(DATABASE, name)
            if table is None:
                table = TableDef(DATABASE, name, tuple(ColumnDef(n, t) for n, t in columns), reference=True)
                runner.create_table(table)
                catalog.add_table(table)
            found.append(table)
    return found[0], found[1]


def existing_tables(runner) -> Optional[tuple[TableDef, TableDef]]:
    catalog = runner.catalog
    if not catalog.has_database(DATABASE):
        return None
    definitions, marks = catalog.find_table(DATABASE, DEFINITIONS), catalog.find_table(DATABASE, MARKS)
    return (definitions, marks) if definitions is not None and marks is not None else None


def save_definitions(runner, pipelines: Iterable["Pipeline"]) -> None:
    """Replace the definitions table by the rows of ``pipelines`` (the registry's lock is held)."""
    definitions, _ = tables(runner)
    pipelines = list(pipelines)
    current = {p.id: p.definition.credentials for p in pipelines}
    # The file first holds both the stored pipelines' credentials and the new ones, then exactly the
    # new ones: a crash between the steps leaves every stored definition its credentials.
    save_credentials(runner, {**read_credentials(runner), **current})
    rows = [(p.id, p.database, p.name, p.definition.sql, int(p.interval * 1000), p.max_files_per_batch,
             int(p.wanted_running)) for p in pipelines]
    runner.replace_table(definitions, _table(definitions, rows))
    save_credentials(runner, current)


def credentials_path(runner) -> Optional[Path]:
    """The credentials file of a durable runner's data_dir; None in memory."""
    data = getattr(runner, "_data", None)
    return None if data is None else Path(data.path) / CREDENTIALS_FILE


def read_credentials(runner) -> dict[str, dict]:
    """Pipeline id -> its stored credentials ({} without a data_dir or before any was stored)."""
    path = credentials_path(runner)
    if path is None or not path.exists():
        return {}
    return json.loads(path.read_text())


def save_credentials(runner, credentials: dict[str, dict]) -> None:
    """Replace the credentials file by ``credentials`` (pipelines without any left out): a 0600 file
    written beside it, fsynced and renamed over it, so a crash leaves the old file or the new one."""
    path = credentials_path(runner)
    if path is None:
        return
    kept = {pipeline_id: c for pipeline_id, c in credentials.items() if c}
    if not kept and not path.exists():
        return
    staging = path.with_name(path.name + ".tmp")
    fd = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)              # also when a staging file was left behind with other bits
    with os.fdopen(fd, "wb") as handle:
        handle.write(json.dumps(kept, sort_keys=True).encode())
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(staging, path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)           # the rename itself survives a crash
    finally:
        os.close(directory)


def mark_rows(runner, rows: list[tuple]) -> tuple[TableDef, pa.Table]:
    """(the marks table, ``rows`` as its Arrow table) for a LoadWriter's ``add_related`` or an insert.
    A row: (pipeline id, seq, file, size, state, rows, skipped, loaded_at, error)."""
    _, marks = tables(runner)
    return marks, _table(marks, rows)


def read(runner) -> Optional[tuple[pa.Table, pa.Table]]:
    """(definitions, marks) as stored, or None when no pipeline was ever created here."""
    found = existing_tables(runner)
    if found is None:
        return None
    return tuple(_rows(runner, table) for table in found)


def _rows(runner, table: TableDef) -> pa.Table:
    """Every row of one of the two tables, read from the storage of the leaf that holds it (both are
    reference tables) rather than through SQL: pipelines sit below sessions."""
    parts = runner.map_partitions(table, _stored_rows)
    return pa.concat_tables(parts) if parts else table.arrow_schema.empty_table()


def _stored_rows(store) -> pa.Table:
    """A partition store's rows as one table (a module function: a Ray leaf runs it and ships the
    result back; these tables stay small, as compact() keeps them)."""
    return pa.Table.from_batches(list(store.scan()), schema=store.schema)


def compact(runner, live: dict[str, pa.Table]) -> None:
    """Rewrite the marks table with only ``live`` (pipeline id -> its current marks) when it holds more
    (superseded rows, pipelines dropped): called on open, before any pipeline runs."""
    _, marks = tables(runner)
    kept = [t for t in live.values() if t.num_rows]
    runner.replace_table(marks, pa.concat_tables(kept) if kept else None)


def current_marks(marks: pa.Table) -> dict[str, pa.Table]:
    """Per pipeline id, its files' current rows: the highest SEQ per file after the last reset, Dropped
    files left out. Arrow groups and joins; no per-row Python."""
    import pyarrow.compute as pc
    out: dict[str, pa.Table] = {}
    if marks.num_rows == 0:
        return out
    for pipeline_id in pc.unique(marks["PIPELINE_ID"]).to_pylist():
        rows = marks.filter(pc.equal(marks["PIPELINE_ID"], pipeline_id))
        resets = rows.filter(pc.is_null(rows["FILE_NAME"]))
        if resets.num_rows:
            rows = rows.filter(pc.greater(rows["SEQ"], pc.max(resets["SEQ"])))
        # the last row of each file: its highest SEQ, joined back
        last = rows.group_by("FILE_NAME").aggregate([("SEQ", "max")]).rename_columns(["FILE_NAME", "SEQ"])
        rows = rows.join(last, ["FILE_NAME", "SEQ"], join_type="inner").select(marks.column_names)
        out[pipeline_id] = rows.filter(pc.not_equal(rows["FILE_STATE"], "Dropped"))
    return out


def _table(table: TableDef, rows: list[tuple]) -> pa.Table:
    schema = table.arrow_schema
    return pa.Table.from_arrays([pa.array([r[i] for r in rows], schema.field(i).type)
                                 for i in range(len(schema))], schema=schema)
