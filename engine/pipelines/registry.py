"""The pipelines of a cluster (:class:`PipelineRegistry`, one per runner: :func:`pipelines_of`): their
definitions saved and restored, and every statement's change to one (CREATE, ALTER, START, STOP, DROP)."""
from __future__ import annotations

import threading
from typing import Optional

from engine.errors import BindError
from engine.pipelines import durable
from engine.pipelines.pipeline import Pipeline
from engine.pipelines.s3 import check_credentials_destination
from engine.pipelines.statements import AlterPipeline, CreatePipeline, parse_pipeline_statement, with_credentials


class PipelineRegistry:
    """The pipelines of one cluster (shared by its sessions), keyed by (database, name) lower-cased.
    Every change of a definition (CREATE, ALTER, START, STOP, DROP) is saved to the definitions table
    under the registry's lock; pipelines stored there (a reopened data_dir) are restored on creation."""

    def __init__(self, runner):
        self.runner = runner
        self.pipelines: dict[tuple[str, str], Pipeline] = {}
        self._lock = threading.RLock()
        self._restore()

    def _restore(self) -> None:
        stored = durable.read(self.runner)
        if stored is None:
            return
        definitions, marks = stored
        credentials = durable.read_credentials(self.runner)
        current = durable.current_marks(marks)
        last_seq = {}
        if marks.num_rows:
            grouped = marks.group_by("PIPELINE_ID").aggregate([("SEQ", "max")])
            last_seq = dict(zip(grouped["PIPELINE_ID"].to_pylist(), grouped["SEQ_max"].to_pylist()))
        live = {}
        for pipeline_id, database, name, sql, interval_ms, max_files, running in zip(
                *(definitions[c].to_pylist() for c in definitions.column_names)):
            definition = parse_pipeline_statement(sql)     # its CREDENTIALS values read REDACTED
            if pipeline_id in credentials:
                definition = with_credentials(definition, credentials[pipeline_id])
            pipeline = Pipeline(database, definition, self.runner, self.runner.catalog, pipeline_id)
            pipeline.interval = interval_ms / 1000.0
            pipeline.max_files_per_batch = max_files
            pipeline.wanted_running = bool(running)
            rows = current.get(pipeline_id)
            if rows is not None:
                pipeline.restore(rows, last_seq.get(pipeline_id, 0))
                live[pipeline_id] = rows
            self.pipelines[(database.lower(), name.lower())] = pipeline
        if sum(t.num_rows for t in live.values()) < marks.num_rows:
            durable.compact(self.runner, live)     # superseded rows, dropped pipelines

    def _save(self) -> None:
        durable.save_definitions(self.runner, [p for _, p in sorted(self.pipelines.items())])

    def create(self, database: str, definition: CreatePipeline) -> bool:
        key = (database.lower(), definition.name.lower())
        with self._lock:
            existing = self.pipelines.get(key)
            if existing is not None:
                if definition.if_not_exists:
                    return False
                if not definition.or_replace:
                    raise BindError(f"pipeline {definition.name!r} already exists in database {database!r}")
                existing.stop()
            target_db = definition.load.database or database
            self.runner.catalog.table(target_db, definition.load.table)     # the table must exist
            check_credentials_destination(definition)
            self.pipelines[key] = Pipeline(database, definition, self.runner, self.runner.catalog)
            self._save()
            return True

    def get(self, database: str, name: str) -> Pipeline:
        pipeline = self.pipelines.get((database.lower(), name.lower()))
        if pipeline is None:
            raise BindError(f"pipeline {name!r} does not exist in database {database!r}")
        return pipeline

    def start(self, database: str, name: str) -> None:
        with self._lock:
            pipeline = self.get(database, name)
            pipeline.start()
            pipeline.wanted_running = True
            self._save()

    def stop(self, database: str, name: str) -> None:
        with self._lock:
            pipeline = self.get(database, name)
            pipeline.stop()
            pipeline.wanted_running = False
            self._save()

    def alter(self, database: str, statement: AlterPipeline) -> None:
        with self._lock:
            self.get(database, statement.name).alter(statement)
            self._save()

    def drop(self, database: str, name: str, if_exists: bool) -> bool:
        with self._lock:
            pipeline = self.pipelines.get((database.lower(), name.lower()))
            if pipeline is None:
                if if_exists:
                    return False
                raise BindError(f"pipeline {name!r} does not exist in database {database!r}")
            del self.pipelines[(database.lower(), name.lower())]
            pipeline.stop()
            self._save()          # its marks are orphans now, compacted away on the next open
        return True

    def of_database(self, database: Optional[str]) -> list[Pipeline]:
        return [p for (db, _), p in sorted(self.pipelines.items())
                if database is None or db == database.lower()]

    def resume(self) -> None:
        """Start the pipelines that were running when the data_dir was last open."""
        for pipeline in list(self.pipelines.values()):
            if pipeline.wanted_running and not pipeline.running:
                pipeline.start()

    def stop_all(self) -> None:
        """Stop every thread (the connection closes); the definitions keep saying which were running."""
        for pipeline in list(self.pipelines.values()):
            pipeline.stop()


_REGISTRY = threading.Lock()


def pipelines_of(runner) -> PipelineRegistry:
    registry = getattr(runner, "pipelines", None)
    if registry is None:
        with _REGISTRY:
            registry = getattr(runner, "pipelines", None)
            if registry is None:
                registry = PipelineRegistry(runner)
                runner.pipelines = registry           # shared by every session of this cluster
    return registry
