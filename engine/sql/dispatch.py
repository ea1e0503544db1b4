"""The one statement dispatch table: every statement a session runs, by the parser's class for it, and
the handler that runs it (``handler(session, node, statement) -> Result``), each a method of a mixin of
:class:`engine.session.Session` under :mod:`engine.sql.handlers` (one file per family). The session's
statement loop looks a statement up here; a statement with no entry is refused, naming it.
"""
from __future__ import annotations

import functools
from typing import Callable

from sqlglot import exp

from engine.sql.accounts import AlterUser, CreateUser, DropUser, Grant, ShowGrants
from engine.sql.handlers.accounts import AccountStatements
from engine.sql.handlers.alter import AlterStatements
from engine.sql.handlers.catalog import CatalogStatements
from engine.sql.handlers.changes import ChangeStatements
from engine.sql.handlers.pipelines import PipelineStatements
from engine.sql.handlers.queries import QueryStatements
from engine.sql.handlers.session_state import SessionStatements
from engine.sql.handlers.writes import WriteStatements
from engine.sql.parser import OptimizeTable, RenameTables, SavepointStatement


@functools.cache
def statement_handlers() -> dict[type, Callable]:
    """Every statement a session runs, by the parser's class for it, and the handler that runs it
    (``handler(session, node, statement) -> Result``). LOAD DATA goes to ``Session._load_data``;
    pipeline statements are in :func:`pipeline_handlers`."""
    queries = {kind: QueryStatements._query for kind in (exp.Select, exp.Union, exp.Intersect, exp.Except, exp.Subquery,
                                                 exp.Values)}
    return {
        **queries,
        exp.Describe: QueryStatements._stmt_Describe,                  # DESCRIBE, EXPLAIN [ANALYZE]
        # catalog (engine.sql.handlers.catalog, .alter)
        exp.Create: CatalogStatements._stmt_Create, exp.Drop: CatalogStatements._stmt_Drop,
        exp.Use: CatalogStatements._stmt_Use, exp.Show: CatalogStatements._stmt_Show,
        exp.Analyze: CatalogStatements._stmt_Analyze, OptimizeTable: CatalogStatements._stmt_OptimizeTable,
        exp.Alter: AlterStatements._stmt_Alter, RenameTables: AlterStatements._stmt_RenameTables,
        # writes (engine.sql.handlers.writes)
        exp.Insert: WriteStatements._stmt_Insert, exp.Update: ChangeStatements._stmt_Update,
        exp.Delete: ChangeStatements._stmt_Delete, exp.TruncateTable: WriteStatements._stmt_TruncateTable,
        # transactions and session state (engine.sql.handlers.session_state)
        exp.Transaction: SessionStatements._stmt_Transaction, exp.Commit: SessionStatements._stmt_Commit,
        exp.Rollback: SessionStatements._stmt_Rollback, SavepointStatement: SessionStatements._stmt_SavepointStatement,
        exp.Set: SessionStatements._stmt_Set, exp.Kill: SessionStatements._stmt_Kill,
        # accounts (engine.sql.handlers.accounts)
        CreateUser: AccountStatements._stmt_CreateUser, AlterUser: AccountStatements._stmt_AlterUser,
        DropUser: AccountStatements._stmt_DropUser, Grant: AccountStatements._stmt_Grant,
        ShowGrants: AccountStatements._stmt_ShowGrants,
    }


@functools.cache
def pipeline_handlers() -> dict[type, Callable]:
    """The pipeline statements' handlers (engine.sql.handlers.pipelines). Apart, because their
    classes come from engine.pipelines, which the parser imports only when it meets their SQL: a
    program that never names a pipeline never loads it."""
    from engine.pipelines import statements as pipeline
    return {
        pipeline.CreatePipeline: PipelineStatements._stmt_CreatePipeline,
        pipeline.StartPipeline: PipelineStatements._stmt_StartPipeline,
        pipeline.StopPipeline: PipelineStatements._stmt_StopPipeline,
        pipeline.AlterPipeline: PipelineStatements._stmt_AlterPipeline,
        pipeline.DropPipeline: PipelineStatements._stmt_DropPipeline,
        pipeline.ShowPipelines: PipelineStatements._stmt_ShowPipelines,
        pipeline.ShowCreatePipeline: PipelineStatements._stmt_ShowCreatePipeline,
    }
