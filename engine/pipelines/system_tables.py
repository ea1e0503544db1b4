"""``information_schema.PIPELINES`` and ``information_schema.PIPELINES_FILES`` as real (reference) tables.

The binder sees only catalog tables, so the pipelines' state is materialized into two tables of an
``information_schema`` database. The session refreshes them (one atomic replace each) right before
running a statement that names ``information_schema``, so a query sees the state as of its start.
"""
from __future__ import annotations

import datetime
import threading

import pyarrow as pa

from engine.catalog import ColumnDef, TableDef
from engine.types import BIGINT, DATETIME, TEXT

DATABASE = "information_schema"
_REFRESH = threading.Lock()           # sessions refreshing at once: one creates the tables, writes in turn
_PIPELINES = (("DATABASE_NAME", TEXT), ("PIPELINE_NAME", TEXT), ("STATE", TEXT), ("SOURCE_TYPE", TEXT),
              ("SOURCE", TEXT), ("TABLE_NAME", TEXT), ("FILES_LOADED", BIGINT), ("FILES_FAILED", BIGINT),
              ("FILES_UNLOADED", BIGINT), ("ROWS_LOADED", BIGINT), ("BATCHES", BIGINT), ("ERROR", TEXT))
_FILES = (("DATABASE_NAME", TEXT), ("PIPELINE_NAME", TEXT), ("SOURCE_TYPE", TEXT), ("FILE_NAME", TEXT),
          ("FILE_SIZE", BIGINT), ("FILE_STATE", TEXT), ("ROWS_LOADED", BIGINT), ("ROWS_SKIPPED", BIGINT),
          ("LOADED_AT", DATETIME), ("ERROR", TEXT))


def refresh(runner, registry) -> None:
    """Write every pipeline's current state into the two tables (creating them the first time)."""
    with _REFRESH:
        _refresh(runner, registry)


def _refresh(runner, registry) -> None:
    pipelines_table, files_table = _ensure_tables(runner)
    pipeline_rows, file_rows = [], []
    for pipeline in registry.of_database(None):
        files, summary = pipeline.snapshot()
        d = pipeline.definition
        pipeline_rows.append((pipeline.database, pipeline.name, summary["state"], "S3",
                              f"{d.bucket}/{d.prefix}", d.load.table, summary["files_loaded"],
                              summary["files_failed"], summary["files_unloaded"], summary["rows_loaded"],
                              summary["batches"], summary["error"]))
        for f in files:
            loaded_at = datetime.datetime.fromtimestamp(f.loaded_at) if f.loaded_at else None
            file_rows.append((pipeline.database, pipeline.name, "S3", f.key, f.size, f.state, f.rows,
                              f.skipped_rows, loaded_at, f.error))
    runner.replace_table(pipelines_table, _table(pipelines_table, pipeline_rows))
    runner.replace_table(files_table, _table(files_table, file_rows))


def _table(table: TableDef, rows: list[tuple]) -> pa.Table:
    schema = table.arrow_schema
    return pa.Table.from_arrays([pa.array([r[i] for r in rows], schema.field(i).type)
                                 for i in range(len(schema))], schema=schema)


def _ensure_tables(runner) -> tuple[TableDef, TableDef]:
    catalog = runner.catalog
    if not catalog.has_database(DATABASE):
        catalog.create_database(DATABASE, if_not_exists=True)
    tables = []
    for name, columns in (("PIPELINES", _PIPELINES), ("PIPELINES_FILES", _FILES)):
        table = catalog.find_table(DATABASE, name)
        if table is None:
            table = TableDef(DATABASE, name, tuple(ColumnDef(n, t) for n, t in columns), reference=True)
            runner.create_table(table)
            catalog.add_table(table)
        tables.append(table)
    return tables[0], tables[1]
