"""Pipeline statements of a session: CREATE / ALTER / START / STOP / DROP PIPELINE, SHOW PIPELINES,
SHOW CREATE PIPELINE (its CREDENTIALS values redacted).

A mixin of :class:`engine.session.Session`; the pipelines themselves live in :mod:`engine.pipelines`.
"""
from __future__ import annotations

from sqlglot import exp

from engine.errors import BindError
from engine.result import Result
from engine.sql import ddl
from engine.sql.handlers.catalog import _like_filter


class PipelineStatements:
    def _pipeline_database(self) -> str:
        if self.database is None:
            raise BindError("no database selected; run USE <database> first")
        return self.database

    def _stmt_CreatePipeline(self, node, statement) -> Result:
        from engine.pipelines import pipelines_of
        pipelines_of(self.runner).create(self._pipeline_database(), node)
        return Result(None, rowcount=0)

    def _stmt_StartPipeline(self, node, statement) -> Result:
        from engine.pipelines import pipelines_of
        pipelines_of(self.runner).start(self._pipeline_database(), node.name)
        return Result(None, rowcount=0)

    def _stmt_StopPipeline(self, node, statement) -> Result:
        from engine.pipelines import pipelines_of
        pipelines_of(self.runner).stop(self._pipeline_database(), node.name)
        return Result(None, rowcount=0)

    def _stmt_AlterPipeline(self, node, statement) -> Result:
        from engine.pipelines import pipelines_of
        pipelines_of(self.runner).alter(self._pipeline_database(), node)
        return Result(None, rowcount=0)

    def _stmt_DropPipeline(self, node, statement) -> Result:
        from engine.pipelines import pipelines_of
        pipelines_of(self.runner).drop(self._pipeline_database(), node.name, node.if_exists)
        return Result(None, rowcount=0)

    def _stmt_ShowPipelines(self, node, statement) -> Result:
        from engine.pipelines import pipelines_of
        database = self._pipeline_database()
        like = _like_filter(exp.Literal.string(node.like) if node.like is not None else None)
        rows = []
        for pipeline in pipelines_of(self.runner).of_database(database):
            if not like(pipeline.name):
                continue
            _, summary = pipeline.snapshot()
            rows.append((pipeline.name, summary["state"], str(summary["files_loaded"]),
                         str(summary["files_failed"]), str(summary["rows_loaded"]), summary["error"]))
        return ddl.text_result([f"Pipelines_in_{database}", "State", "Files_loaded", "Files_failed",
                                "Rows_loaded", "Error"], rows)

    def _stmt_ShowCreatePipeline(self, node, statement) -> Result:
        from engine.pipelines import pipelines_of
        pipeline = pipelines_of(self.runner).get(self._pipeline_database(), node.name)
        return ddl.text_result(["Pipeline", "Create Pipeline"], [(pipeline.name, pipeline.definition.sql)])
