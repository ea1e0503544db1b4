"""The rows of ``information_schema.PIPELINES`` and ``information_schema.PIPELINES_FILES``.

:mod:`engine.system_schema` registers the two tables; a statement reading them gets every pipeline's
state as of that statement (one snapshot per pipeline, taken under its lock).
"""
from __future__ import annotations

import datetime

from engine.types import BIGINT, DATETIME, TEXT

PIPELINES_COLUMNS = (("DATABASE_NAME", TEXT), ("PIPELINE_NAME", TEXT), ("STATE", TEXT), ("SOURCE_TYPE", TEXT),
                     ("SOURCE", TEXT), ("TABLE_NAME", TEXT), ("FILES_LOADED", BIGINT), ("FILES_FAILED", BIGINT),
                     ("FILES_UNLOADED", BIGINT), ("ROWS_LOADED", BIGINT), ("BATCHES", BIGINT), ("ERROR", TEXT))
FILES_COLUMNS = (("DATABASE_NAME", TEXT), ("PIPELINE_NAME", TEXT), ("SOURCE_TYPE", TEXT), ("FILE_NAME", TEXT),
                 ("FILE_SIZE", BIGINT), ("FILE_STATE", TEXT), ("ROWS_LOADED", BIGINT), ("ROWS_SKIPPED", BIGINT),
                 ("LOADED_AT", DATETIME), ("ERROR", TEXT))


def _pipelines(runner) -> list:
    registry = getattr(runner, "pipelines", None)      # created by the first pipeline statement
    return [] if registry is None else list(registry.of_database(None))


def pipeline_rows(runner) -> list[tuple]:
    rows = []
    for pipeline in _pipelines(runner):
        _files, summary = pipeline.snapshot()
        d = pipeline.definition
        rows.append((pipeline.database, pipeline.name, summary["state"], "S3", f"{d.bucket}/{d.prefix}",
                     d.load.table, summary["files_loaded"], summary["files_failed"], summary["files_unloaded"],
                     summary["rows_loaded"], summary["batches"], summary["error"]))
    return rows


def file_rows(runner) -> list[tuple]:
    rows = []
    for pipeline in _pipelines(runner):
        files, _summary = pipeline.snapshot()
        for f in files:
            loaded_at = datetime.datetime.fromtimestamp(f.loaded_at) if f.loaded_at else None
            rows.append((pipeline.database, pipeline.name, "S3", f.key, f.size, f.state, f.rows,
                         f.skipped_rows, loaded_at, f.error))
    return rows
