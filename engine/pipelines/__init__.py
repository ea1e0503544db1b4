"""SingleStore-style pipelines: ``CREATE PIPELINE ... AS LOAD DATA S3 ...`` loading new files continuously,
exactly once (see :mod:`engine.pipelines.pipeline`), reported by SHOW PIPELINES and the system tables
``information_schema.PIPELINES`` / ``information_schema.PIPELINES_FILES``."""
import importlib

# Imported on first use (PEP 562): connect() and the system tables touch this package, and loading the
# pipeline machinery (S3 sources, the loader) there would cost every program's start-up.
_LAZY = {"Pipeline": "engine.pipelines.pipeline", "PipelineRegistry": "engine.pipelines.registry",
         "pipelines_of": "engine.pipelines.registry"}
_LAZY.update({name: "engine.pipelines.statements" for name in (
    "AlterPipeline", "CreatePipeline", "DropPipeline", "ShowCreatePipeline", "ShowPipelines", "StartPipeline",
    "StopPipeline", "is_pipeline_statement", "parse_pipeline_statement")})


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def resume_pipelines(runner) -> None:
    """On connect: restore the pipelines a data_dir holds and start those that were running (nothing
    to do, and nothing created, when no pipeline was ever defined there)."""
    from engine.pipelines.durable import existing_tables
    if existing_tables(runner) is not None:
        from engine.pipelines.registry import pipelines_of
        pipelines_of(runner).resume()


def shutdown_pipelines(runner) -> None:
    """Stop every pipeline thread of ``runner`` (before the runner itself shuts down)."""
    registry = getattr(runner, "pipelines", None)
    if registry is not None:
        registry.stop_all()


__all__ = ["AlterPipeline", "CreatePipeline", "DropPipeline", "Pipeline", "PipelineRegistry", "ShowCreatePipeline", "ShowPipelines", "StartPipeline",
           "StopPipeline", "is_pipeline_statement", "parse_pipeline_statement", "pipelines_of",
           "resume_pipelines", "shutdown_pipelines"]
