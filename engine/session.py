"""A client session: the entry point from SQL text to a :class:`~engine.result.Result`.

Contract used by every front end (DB-API driver, MySQL wire server, notebooks)::

    session = Session(runner, database="canopy")
    result = session.execute("SELECT ... WHERE a = %s", (5,))     # -> engine.result.Result
    result = session.execute_many("INSERT INTO t VALUES (%s, %s)", [(1, 'a'), (2, 'b')])
    session.close()

Parameters follow PEP 249's ``pyformat`` style (``%s`` positional, ``%(name)s`` named); values are
substituted into the parsed AST as literals, never spliced into SQL text. Several statements separated
by ``;`` run in order and the last one's result is returned. Every statement commits on its own.

Errors: bad input raises the typed errors of :mod:`engine.errors`; anything else escaping the engine is
wrapped as :class:`~engine.errors.CanopyInternalError`, so no raw traceback of engine internals reaches a
client, and the session stays usable.
"""
from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Optional

import pyarrow as pa
from sqlglot import exp

from engine.errors import (BadDataError, BindError, CanopyError, CanopyInternalError, Error,
                           UnsupportedError, unknown_name_error)
from engine.result import Result
from engine.sql import ddl, dml
from engine.sql.parameters import bind_placeholders, mark_placeholders
from engine.sql.parser import Statement, parse
from engine.sql.plan_cache import UNCACHEABLE, PlanCache, make_template, other_values
from engine.sql.query import explain_text, plan_query, run_query
from engine.statistics import RunnerStatistics


class Session:
    def __init__(self, runner, database: Optional[str] = "canopy", *, load_dir: Optional[str] = None,
                 progress: Optional[bool] = None):
        """``load_dir``: LOAD DATA reads only files inside it (MySQL's secure_file_priv); ``progress``:
        a progress bar for long loads (None: when stderr is a terminal or in a notebook)."""
        self.runner = runner
        self.catalog = runner.catalog
        if database is not None and not self.catalog.has_database(database):
            self.catalog.create_database(database)
        self.database = database
        self.statistics = _statistics_of(runner)
        self.plan_cache = _plan_cache_of(runner)
        self.variables: dict[str, object] = {}
        self.load_dir = load_dir
        self.progress = progress
        self.warnings: list[tuple[str, int, str]] = []    # SHOW WARNINGS: the last statement's
        self.closed = False

    # -- entry points -----------------------------------------------------------------------------
    def execute(self, sql: str, params: Optional[Sequence | Mapping] = None) -> Result:
        self._check_open()
        return self._guarded(lambda: self._execute(sql, params))

    def execute_many(self, sql: str, seq_of_params) -> Result:
        """Run ``sql`` once per parameter set. INSERT ... VALUES becomes one columnar append."""
        self._check_open()
        return self._guarded(lambda: self._execute_many(sql, list(seq_of_params)))

    def load_table(self, name: str, data) -> int:
        """Append an Arrow table / record batch or a pandas / Polars DataFrame to table ``name``
        (``db.t`` or a table of the current database) in one atomic step; returns the rows added."""
        self._check_open()

        def load() -> Result:
            from engine.load.loader import check_table_name, load_arrow
            database, table = check_table_name(name)
            database = database or self.database
            if database is None:
                raise BindError("no database selected; run USE <database> first")
            target = self.catalog.table(database, table)
            self.plan_cache.invalidate()
            return Result(None, rowcount=load_arrow(data, target, self.runner, progress=self.progress))

        return self._guarded(load).rowcount

    def close(self) -> None:
        self.closed = True

    # -- internals --------------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self.closed:
            from engine.errors import InterfaceError
            raise InterfaceError("the session is closed")

    @staticmethod
    def _guarded(action) -> Result:
        try:
            return action()
        except Error:
            raise
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError) as error:
            raise BadDataError(str(error).split("\n")[0]) from error
        except RecursionError:
            raise UnsupportedError("statement nested too deeply") from None
        except Exception as error:   # an engine bug: typed, with its cause attached for the report
            raise CanopyInternalError(f"internal error ({type(error).__name__}): {error}") from error

    def _execute(self, sql: str, params) -> Result:
        if not isinstance(sql, str):
            raise BindError(f"the statement must be a string, not {type(sql).__name__}")
        marked, values = mark_placeholders(sql, params)
        cache_key = self.plan_cache.key(marked, values, self.database, self.runner.num_partitions) \
            if self.plan_cache.enabled else None
        if cache_key is not None:
            cached = self._cached_query(cache_key, marked, values)
            if cached is not None:
                return cached
        result = Result(None, rowcount=0)
        for statement in parse(marked):
            if not _is_load(statement.node):
                statement.node = bind_placeholders(statement.node, values)
            result = self._run(statement)
        return result

    def _cached_query(self, key: tuple, marked: str, values: list) -> Optional[Result]:
        """Run a one-query statement from the plan cache, filling it on a miss; None when the
        statement is not a cacheable query (the caller runs it the ordinary way)."""
        cache = self.plan_cache
        entry = cache.entries.get(key)
        if entry is UNCACHEABLE:
            return None
        if entry is None:
            cache.misses += 1
            statements = parse(marked)
            node = statements[0].node
            if len(statements) != 1 or not isinstance(node, (exp.Select, exp.Union)) \
                    or "information_schema" in marked.lower():
                cache.put(key, UNCACHEABLE)
                return None
            planned = self._plan(bind_placeholders(node.copy(), values))
            others = other_values(values)
            try:
                second = self._plan(bind_placeholders(node.copy(), others))
            except Error:           # the other values do not bind (e.g. out of a column's range)
                second = None
            entry = make_template(planned, second, values, others) if second is not None else None
            cache.put(key, entry if entry is not None else UNCACHEABLE)
        else:
            cache.hits += 1
            planned = entry.bind(values)
        result = run_query(planned, self.runner)
        self.warnings = result.warnings
        return result

    def _execute_many(self, sql: str, param_sets: list) -> Result:
        if not param_sets:
            return Result(None, rowcount=0)
        first_marked, _ = mark_placeholders(sql, param_sets[0])
        statements = parse(first_marked)
        node = statements[0].node
        if len(statements) == 1 and isinstance(node, exp.Insert) and isinstance(node.expression, exp.Values) \
                and len(node.expression.expressions) == 1:
            rows = []
            template = node.expression.expressions[0]
            for params in param_sets:
                marked, values = mark_placeholders(sql, params)
                if marked != first_marked:
                    break      # parameter markers differ in shape: fall back to one statement per set
                rows.append(bind_placeholders(copy.deepcopy(template), values))
            else:
                node.expression.set("expressions", rows)
                return self._run(statements[0])
        total = 0
        for params in param_sets:
            result = self._execute(sql, params)
            total += max(result.rowcount, 0)
        return Result(None, rowcount=total)

    def _run(self, statement: Statement) -> Result:
        node = statement.node
        if isinstance(node, exp.Show) and str(node.this).upper() == "WARNINGS":
            return self._stmt_Show(node, statement)      # reads the warnings; must not reset them
        if getattr(self.runner, "pipelines", None) is not None and "information_schema" in statement.text.lower():
            from engine.pipelines.system_tables import refresh
            refresh(self.runner, self.runner.pipelines)   # the pipelines' state as of this statement
        if not isinstance(node, (exp.Select, exp.Union, exp.Subquery, exp.Values, exp.Describe, exp.Show, exp.Set)):
            self.plan_cache.invalidate()       # DDL, ANALYZE, writes: plans and estimates may be stale
        try:
            if type(node).__name__ == "LoadDataStatement":
                result = self._load_data(node)
            else:
                handler = getattr(self, "_stmt_" + type(node).__name__, None)
                if handler is None:
                    raise UnsupportedError(f"{type(node).__name__.upper()} statements are not supported")
                result = handler(node, statement)
        except Error as error:
            self.warnings = [("Error", 0, str(error))]
            raise
        self.warnings = result.warnings
        return result

    # -- queries ------------------------------------------------------------------------------------
    def _plan(self, node: exp.Expression):
        return plan_query(node, self.catalog, self.database, self.statistics, self.runner.num_partitions)

    def _query(self, node, statement) -> Result:
        return run_query(self._plan(node), self.runner)

    _stmt_Select = _stmt_Union = _stmt_Subquery = _stmt_Values = _query

    def _stmt_Intersect(self, node, statement):
        raise UnsupportedError(f"{type(node).__name__.upper()} is not supported yet")

    _stmt_Except = _stmt_Intersect

    def _stmt_Describe(self, node: exp.Describe, statement) -> Result:
        target = node.this
        if isinstance(target, exp.Table):
            return ddl.describe_table(self._table(target))
        style = str(node.args.get("style") or "").upper()
        if style not in ("", "ANALYZE") or node.args.get("kind"):
            raise UnsupportedError(f"EXPLAIN {node.args.get('style') or node.args.get('kind')}")
        planned = self._plan(target)
        if style == "ANALYZE":          # runs the query; its rows are dropped, its counters shown
            profiles: list = []
            run_query(planned, self.runner, profiles)
            text = explain_text(planned, profiles)
        else:
            text = explain_text(planned)
        return ddl.text_result(["EXPLAIN"], [(line,) for line in text.splitlines()])

    # -- catalog statements -------------------------------------------------------------------------
    def _table(self, node: exp.Table):
        return self.catalog.table(ddl.database_of(node, self.database), node.name)

    def _stmt_Create(self, node: exp.Create, statement: Statement) -> Result:
        kind = (node.args.get("kind") or "").upper()
        if_not_exists = bool(node.args.get("exists"))
        if kind in ("DATABASE", "SCHEMA"):
            created = self.catalog.create_database(node.this.name, if_not_exists)
            return Result(None, rowcount=1 if created else 0)
        if kind != "TABLE":
            raise UnsupportedError(f"CREATE {kind}")
        target = node.this.this if isinstance(node.this, exp.Schema) else node.this
        database = ddl.database_of(target, self.database)
        if not self.catalog.has_database(database):
            raise unknown_name_error("database", database, self.catalog.databases())
        if self.catalog.find_table(database, target.name) is not None:
            if if_not_exists:
                return Result(None, rowcount=0)
            raise BindError(f"table {target.name!r} already exists in database {database!r}")
        if node.expression is not None:
            return self._create_table_as(node, statement, database)
        table = ddl.table_def_from_create(node, statement.table_options, database, self.catalog)
        self.runner.create_table(table)
        try:
            self.catalog.add_table(table)
        except Error:
            self.runner.drop_table(table)
            raise
        return Result(None, rowcount=0)

    def _create_table_as(self, node: exp.Create, statement: Statement, database: str) -> Result:
        from engine.catalog import ColumnDef, TableDef
        planned = self._plan(node.expression)
        from engine.types import TEXT
        columns = tuple(ColumnDef(name, f.type if f.type.kind != "null" else TEXT, f.nullable)
                        for name, f in zip(planned.names, planned.fields))
        options = statement.table_options
        shard = options.shard_key or ()
        table = TableDef(database, node.this.name, columns, tuple(shard), options.sort_key, options.reference)
        result = run_query(planned, self.runner)
        data = pa.Table.from_arrays(result.table.columns, schema=table.arrow_schema)
        self.runner.create_table(table)
        self.catalog.add_table(table)
        self.runner.insert(table, data)
        return Result(None, rowcount=data.num_rows)

    def _stmt_Drop(self, node: exp.Drop, statement) -> Result:
        kind = (node.args.get("kind") or "").upper()
        if_exists = bool(node.args.get("exists"))
        # sqlglot >= 27 lists the dropped objects in "tables"; older versions used this/expressions
        targets = list(node.args.get("tables") or []) or [node.this] + list(node.expressions or [])
        if kind in ("DATABASE", "SCHEMA"):
            dropped = 0
            for target in targets:
                tables = self.catalog.drop_database(target.name, if_exists)
                for table in tables:
                    self.runner.drop_table(table)
                    self.statistics.forget(table)
                if self.database and self.database.lower() == target.name.lower():
                    self.database = None
                dropped += len(tables)
            return Result(None, rowcount=dropped)
        if kind != "TABLE":
            raise UnsupportedError(f"DROP {kind}")
        for target in targets:
            database = ddl.database_of(target, self.database)
            if self.catalog.find_table(database, target.name) is None:
                if if_exists:
                    continue
                self.catalog.table(database, target.name)      # raises, naming the closest table
        for target in targets:       # all names checked first: DROP TABLE a, missing drops nothing
            database = ddl.database_of(target, self.database)
            if self.catalog.find_table(database, target.name) is None:
                continue
            table = self.catalog.drop_table(database, target.name)
            self.runner.drop_table(table)
            self.statistics.forget(table)
        return Result(None, rowcount=0)

    def _stmt_Use(self, node: exp.Use, statement) -> Result:
        name = node.this.name
        if not self.catalog.has_database(name):
            raise unknown_name_error("database", name, self.catalog.databases())
        self.database = next(d for d in self.catalog.databases() if d.lower() == name.lower())
        return Result(None, rowcount=0)

    def _stmt_Show(self, node: exp.Show, statement) -> Result:
        what = str(node.this).upper()
        like = _like_filter(node.args.get("like"))
        if what == "DATABASES":
            return ddl.text_result(["Database"], [(d,) for d in self.catalog.databases() if like(d)])
        if what == "TABLES":
            database = node.args.get("db").name if node.args.get("db") is not None else self.database
            if database is None:
                raise BindError("no database selected; run USE <database> first")
            tables = self.catalog.tables(database)
            return ddl.text_result([f"Tables_in_{database}"], [(t.name,) for t in tables if like(t.name)])
        if what == "COLUMNS":
            return ddl.describe_table(self._table(node.args["target"]))
        if what == "CREATE TABLE":
            table = self._table(node.args["target"])
            return ddl.text_result(["Table", "Create Table"], [(table.name, ddl.show_create_table(table))])
        if what == "WARNINGS":
            return ddl.text_result(["Level", "Code", "Message"], [(lvl, str(code), msg) for lvl, code, msg in self.warnings])
        raise UnsupportedError(f"SHOW {what}")

    def _stmt_Analyze(self, node: exp.Analyze, statement) -> Result:
        """ANALYZE TABLE t[, t2]: collect every column's statistics now (MySQL's four result columns)."""
        if (node.args.get("kind") or "").upper() != "TABLE":
            raise UnsupportedError(f"ANALYZE {node.args.get('kind') or ''}".strip())
        tables = [self._table(target) for target in node.args.get("tables") or []]   # all names checked first
        for table in tables:
            self.statistics.analyze(table)
        return ddl.text_result(["Table", "Op", "Msg_type", "Msg_text"],
                               [(t.qualified_name, "analyze", "status", "OK") for t in tables])

    def _stmt_OptimizeTable(self, node, statement) -> Result:
        """OPTIMIZE TABLE t[, t2]: flush write buffers into segments and merge small segments."""
        tables = []
        for database, name in node.tables:       # all names checked first
            database = database or self.database
            if database is None:
                raise BindError("no database selected; run USE <database> first")
            tables.append(self.catalog.table(database, name))
        for table in tables:
            self.runner.optimize_table(table)
        return ddl.text_result(["Table", "Op", "Msg_type", "Msg_text"],
                               [(t.qualified_name, "optimize", "status", "OK") for t in tables])

    # -- writes -------------------------------------------------------------------------------------
    def _stmt_Insert(self, node: exp.Insert, statement) -> Result:
        if node.args.get("conflict") or node.args.get("overwrite") or node.args.get("alternative"):
            raise UnsupportedError("INSERT IGNORE / REPLACE / ON DUPLICATE KEY UPDATE (tables have no unique keys)")
        target = node.this
        names = None
        if isinstance(target, exp.Schema):
            names = [e.name for e in target.expressions]
            target = target.this
        table = self._table(target)
        columns = dml.target_columns(table, names)
        source = node.expression
        if isinstance(source, exp.Values):
            from engine.plan.binder import Binder
            values, _ = Binder(self.catalog, self.database).bind_values(source)
            for row_number, row in enumerate(values.rows, start=1):
                if len(row) != len(columns):
                    raise BindError(f"column count ({len(columns)}) doesn't match value count "
                                    f"({len(row)}) at row {row_number}")
            types = [f.type for f in values.fields]
            data = dml.rows_to_table(values.rows, types)
        else:
            planned = self._plan(source)
            data = run_query(planned, self.runner).table
            types = [f.type for f in planned.fields]
        rows = dml.conform_to_table(data, types, table, columns)
        return Result(None, rowcount=self.runner.insert(table, rows))

    def _load_data(self, statement) -> Result:
        from engine.load.loader import run_load
        database = statement.database or self.database
        if database is None:
            raise BindError("no database selected; run USE <database> first")
        table = self.catalog.table(database, statement.table)
        outcome = run_load(statement, table, self.runner, load_dir=self.load_dir, progress=self.progress)
        return Result(None, rowcount=outcome.rows, message=outcome.message, warnings=outcome.warnings.rows)

    # -- pipelines ----------------------------------------------------------------------------------
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
        pipelines_of(self.runner).get(self._pipeline_database(), node.name).start()
        return Result(None, rowcount=0)

    def _stmt_StopPipeline(self, node, statement) -> Result:
        from engine.pipelines import pipelines_of
        pipelines_of(self.runner).get(self._pipeline_database(), node.name).stop()
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

    def _stmt_TruncateTable(self, node: exp.TruncateTable, statement) -> Result:
        for target in node.expressions:
            self.runner.replace_table(self._table(target), None)
        return Result(None, rowcount=0)

    def _stmt_Delete(self, node: exp.Delete, statement) -> Result:
        """DELETE rewrites the table without the matching rows (the columnstore's delete bitmaps replace
        this with issue 4). The kept rows are computed first, so a failing predicate deletes nothing."""
        if node.args.get("using") or node.args.get("limit") or node.args.get("order"):
            raise UnsupportedError("DELETE with USING, ORDER BY or LIMIT")
        table = self._table(node.this)
        where = node.args.get("where")
        if where is None:
            before = self.runner.row_count(table)
            self.runner.replace_table(table, None)
            return Result(None, rowcount=before)
        matched = _is_true(where.this)
        kept = self._select_rows(table, node.this, [exp.column(c.name) for c in table.columns], exp.not_(matched))
        before = self.runner.row_count(table)
        self.runner.replace_table(table, kept)
        return Result(None, rowcount=before - kept.num_rows)

    def _stmt_Update(self, node: exp.Update, statement) -> Result:
        """UPDATE rewrites the table with each matching row's new values; rowcount counts matched rows."""
        if node.args.get("from") or node.args.get("from_") or node.args.get("limit") or node.args.get("order"):
            raise UnsupportedError("UPDATE with FROM, ORDER BY or LIMIT")
        table = self._table(node.this)
        assignments = {}
        for item in node.expressions:
            column = table.column(item.this.name)          # raises for an unknown column
            assignments[column.name.lower()] = item.expression
        where = node.args.get("where")
        matched = _is_true(where.this) if where is not None else exp.true()
        projection = [exp.If(this=matched.copy(), true=assignments[c.name.lower()].copy(), false=exp.column(c.name))
                      if c.name.lower() in assignments else exp.column(c.name) for c in table.columns]
        count = self._select_rows(table, node.this, [exp.Count(this=exp.Star())], matched).column(0)[0].as_py()
        rows = self._select_rows(table, node.this, projection, None)
        self.runner.replace_table(table, rows)
        if count:
            self.statistics.forget(table)     # same row count, other values: the 20% rule would not see it
        return Result(None, rowcount=count)

    def _select_rows(self, table, table_node: exp.Table, projection, where) -> pa.Table:
        """Run ``SELECT projection FROM table [WHERE where]`` and cast the result to the table's types."""
        select = exp.Select(expressions=projection).from_(table_node.copy())
        if where is not None:
            select = select.where(where)
        planned = self._plan(select)
        data = run_query(planned, self.runner).table
        if len(projection) != len(table.columns):
            return data
        return dml.conform_to_table(data, [f.type for f in planned.fields], table, list(table.columns))

    # -- session state ------------------------------------------------------------------------------
    def _stmt_Set(self, node: exp.Set, statement) -> Result:
        # Clients send SET NAMES / SET autocommit=1 / SET sql_mode=... on connect: record, do not fail.
        for item in node.expressions:
            self.variables[item.sql(dialect="mysql")] = True
        return Result(None, rowcount=0)

    def _stmt_Transaction(self, node, statement) -> Result:
        return Result(None, rowcount=0)    # every statement autocommits; BEGIN is accepted for clients

    _stmt_Commit = _stmt_Rollback = _stmt_Transaction


def _statistics_of(runner) -> RunnerStatistics:
    stats = getattr(runner, "statistics", None)
    if stats is None:
        stats = RunnerStatistics(runner)
        runner.statistics = stats          # shared by every session of this cluster
    return stats


def _plan_cache_of(runner) -> PlanCache:
    cache = getattr(runner, "plan_cache", None)
    if cache is None:
        cache = PlanCache()
        runner.plan_cache = cache          # shared by every session of this cluster
    return cache


def _is_load(node) -> bool:
    return not isinstance(node, exp.Expression)     # a LoadDataStatement (engine.load), not a sqlglot tree


def _is_true(predicate: exp.Expression) -> exp.Expression:
    """``(predicate) IS TRUE``: NULL counts as not matched, as in a WHERE clause."""
    return exp.Is(this=exp.Paren(this=predicate.copy()), expression=exp.true())


def _like_filter(pattern: Optional[exp.Expression]):
    """A predicate on names for SHOW ... LIKE 'pattern' (MySQL: case-insensitive, % and _)."""
    if pattern is None:
        return lambda name: True
    import re
    text = pattern.name if isinstance(pattern, exp.Literal) else pattern.sql()
    regex = re.compile("".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in text),
                       re.IGNORECASE | re.DOTALL)
    return lambda name: regex.fullmatch(name) is not None
