"""A client session: the entry point from SQL text to a :class:`~engine.result.Result`.

Contract used by every front end (DB-API driver, MySQL wire server, notebooks)::

    session = Session(runner, database="canopy")
    result = session.execute("SELECT ... WHERE a = %s", (5,))     # -> engine.result.Result
    result = session.execute_many("INSERT INTO t VALUES (%s, %s)", [(1, 'a'), (2, 'b')])
    session.close()

Parameters follow PEP 249's ``pyformat`` style (``%s`` positional, ``%(name)s`` named); values are
substituted into the parsed AST as literals, never spliced into SQL text. Several statements separated
by ``;`` run in order and the last one's result is returned.

Transactions (engine.transactions): every statement commits on its own (``autocommit``, the default)
unless a transaction is open: ``BEGIN`` / ``START TRANSACTION`` or ``session.begin()`` opens one, and
with ``SET autocommit = 0`` (``session.set_autocommit(False)``) the first write opens one.
``COMMIT`` / ``session.commit()`` makes all of its writes visible at once, ``ROLLBACK`` /
``session.rollback()`` drops them. A DDL statement commits an open transaction first (as MySQL does);
closing the session rolls it back.

Errors: bad input raises the typed errors of :mod:`engine.errors`; anything else escaping the engine is
wrapped as :class:`~engine.errors.CanopyInternalError`, so no raw traceback of engine internals reaches a
client, and the session stays usable.

This file is the statement loop (text -> plan cache or parse -> dispatch -> guard -> result, with the
deadline and kill state that loop carries) and the connection's state. The statements are the mixins
of :mod:`engine.sql.handlers` (one file per family: queries, catalog, writes, changes, session state,
accounts, pipelines), looked up in the one dispatch table, :mod:`engine.sql.dispatch`; the transaction
and the write locks around each statement are :mod:`engine.sql.handlers.transaction_scope`.
"""
from __future__ import annotations

import contextlib
import copy
import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import Optional

import pyarrow as pa
from sqlglot import exp

import engine.lazy_pandas  # noqa: F401 - first: pyarrow must not import pandas for nothing (see there)
from engine import collation
from engine.errors import (AccessDeniedError, BadDataError, BindError, CanopyInternalError, Error, MemoryLimitError,
                           ParseError, UnsupportedError)
from engine.exec.memory import default_memory_limit, format_bytes, parse_memory_limit, statement_memory_limit
from engine.core.deadline import Deadline, check_statement_deadline, statement_deadline
from engine.exec import statement_warnings
from engine.exec.inline import InlineRunner, inline_stage
from engine.exec.progress import TqdmQueryProgress, progress_wanted, query_progress
from engine.result import Result
from engine.sessions import Activity, registry_of
from engine.sql.dispatch import pipeline_handlers, statement_handlers
from engine.sql.handlers.accounts import AccountStatements
from engine.sql.handlers.alter import AlterStatements
from engine.sql.handlers.catalog import CatalogStatements
from engine.sql.handlers.changes import ChangeStatements
from engine.sql.handlers.pipelines import PipelineStatements
from engine.sql.handlers.queries import QueryStatements
from engine.sql.handlers.session_state import SessionStatements, timeout_ms
from engine.sql.handlers.transaction_scope import TransactionScope, is_load_data
from engine.sql.query import recursion_depth_limit
from engine.sql.handlers.writes import WriteStatements
from engine.sql.parameters import bind_placeholders, mark_placeholders, parameterize_literals
from engine.sql.parser import Statement, parse
from engine.sql.plan_cache import UNCACHEABLE, PlanCache, make_template, other_values, plans_equal
from engine.sql.query import run_query
from engine.sql.refusals import refuse_ignored
from engine.sql.variables import Variables, reads_session_state, substitute
from engine.statistics import RunnerStatistics
from engine.system_schema import install as install_system_schema
from engine.transactions import DEFAULT_LOCK_WAIT_TIMEOUT, Transaction


class Session(QueryStatements, CatalogStatements, AlterStatements, WriteStatements, ChangeStatements,
              PipelineStatements, SessionStatements, AccountStatements, TransactionScope):
    def __init__(self, runner, database: Optional[str] = "canopy", *, load_dir: Optional[str] = None,
                 progress: Optional[bool] = None, statement_timeout: Optional[int] = None,
                 multi_statements: bool = False, user: Optional[str] = None, host: str = "localhost",
                 create_database: bool = True, connection_id: Optional[int] = None,
                 memory_limit=None):
        """``load_dir``: LOAD DATA reads only files inside it (MySQL's secure_file_priv); ``progress``:
        a progress bar for long loads (None: when stderr is a terminal or in a notebook);
        ``statement_timeout``: milliseconds a call of ``execute`` may run its queries (0/None: no limit);
        ``multi_statements``: ``execute`` runs several ``;``-separated statements (else it refuses them).
        ``user``: the MySQL account of a wire client (None: the embedding program, which may do
        anything); ``host``: where the client connects from (SHOW PROCESSLIST, ``USER()``).
        ``create_database``: create ``database`` when missing (the embedded default) or leave it.
        ``connection_id``: one reserved from the cluster's registry (default: the next).
        ``memory_limit``: bytes (or a size such as ``'4GB'``) one query may hold in each process
        before its operators spill to disk (default: half the machine's memory; docs/memory.md)."""
        self.runner = runner
        self.autocommit = True
        self.lock_wait_timeout = DEFAULT_LOCK_WAIT_TIMEOUT     # seconds (SET lock_wait_timeout)
        self._txn: Optional[Transaction] = None
        self._statement_locks: Optional[list] = None    # table ids an autocommit statement locked
        self.last_insert_id = 0        # LAST_INSERT_ID(): the first AUTO_INCREMENT value last generated
        self.row_count = -1            # ROW_COUNT(): rows the last statement changed (-1 after a query)
        self.found_rows = 0            # FOUND_ROWS(): rows the last query returned
        if database is not None and not self.catalog.has_database(database):
            if not create_database:
                from engine.errors import unknown_name_error
                raise unknown_name_error("database", database, self.catalog.databases())
            self.catalog.create_database(database)
        self.database = database
        self.statistics = _statistics_of(runner)
        self.plan_cache = _plan_cache_of(runner)
        install_system_schema(self.runner.catalog, runner)
        # system variables (engine.sql.variables); those with an effect read the session's own state
        self.variables = Variables(live={
            "autocommit": lambda: int(self.autocommit),
            "statement_timeout": lambda: self.statement_timeout or 0,
            "max_execution_time": lambda: self.statement_timeout or 0,
            "lock_wait_timeout": lambda: self.lock_wait_timeout,
            "innodb_lock_wait_timeout": lambda: self.lock_wait_timeout,
            "last_insert_id": lambda: self.last_insert_id,
            "memory_limit": lambda: self.memory_limit,
            # the last statement's diagnostics (SHOW WARNINGS lists at most 64 of them)
            "warning_count": lambda: statement_warnings.count(self.warnings),
            "error_count": lambda: sum(1 for level, _, _ in self.warnings if level == "Error"),
        })
        if load_dir is not None:
            self.variables.set("secure_file_priv", str(load_dir), force=True)
        self.load_dir = load_dir
        self.progress = progress
        self.warnings: list[tuple[str, int, str]] = []    # SHOW WARNINGS: the last statement's
        self.closed = False
        self.statement_timeout = timeout_ms(statement_timeout)
        self.memory_limit = default_memory_limit() if memory_limit is None else parse_memory_limit(memory_limit)
        self.multi_statements = multi_statements
        self.user, self.host = user, host
        self.activity = Activity()
        self.questions = 0                       # statements run (SHOW STATUS' Questions)
        self._cancel_requested = False           # KILL QUERY: read by the running statement's Deadline
        self._killed = False                     # KILL CONNECTION: closed once its statement ends
        self.on_kill: list = []                  # callables run by KILL CONNECTION (the wire server's)
        self._authorized: set = set()            # (plan cache key, accounts version) already checked
        self.sessions = registry_of(runner)
        self.connection_id = self.sessions.add(self, connection_id)

    @property
    def catalog(self):
        """The catalog as this session sees it: inside a transaction, the tables it has written
        resolve to their uncommitted versions."""
        return self._txn.catalog if self._txn is not None else self.runner.catalog

    # -- entry points -----------------------------------------------------------------------------
    def execute(self, sql: str, params: Optional[Sequence | Mapping] = None) -> Result:
        self._check_open()
        with self._deadline(sql):
            return self._counted(self._guarded(lambda: self._execute(sql, params)))

    def prepare(self, sql: str, count: int) -> "Prepared":
        """A statement with ``count`` pyformat ``%s`` markers made ready to run many times
        (COM_STMT_PREPARE): its markers are numbered once here, and each :meth:`execute_prepared`
        goes straight to the plan cache with its values (a plan is reused for values of the same
        shapes) instead of scanning the text again."""
        self._check_open()
        marked, _ = self._guarded(lambda: mark_placeholders(sql, [None] * count))
        return Prepared(sql, marked, count)

    def execute_prepared(self, prepared: "Prepared", values: Sequence) -> Result:
        """Run a statement made by :meth:`prepare` with ``values`` (one per marker, in order)."""
        self._check_open()
        values = list(values)
        if len(values) != prepared.count:
            from engine.sql.parameters import ParameterError
            raise ParameterError(f"the statement has {prepared.count} parameters but {len(values)} were given")
        with self._deadline(prepared.sql):
            return self._counted(self._guarded(lambda: self._execute(prepared.sql, values, prepared.marked)))

    def execute_many(self, sql: str, seq_of_params) -> Result:
        """Run ``sql`` once per parameter set. INSERT ... VALUES becomes one columnar append."""
        self._check_open()
        with self._deadline(sql):
            return self._counted(self._guarded(lambda: self._execute_many(sql, list(seq_of_params))))

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
            node = exp.Insert(this=exp.table_(table, db=database))
            with self._writing(node, None):
                target = self.catalog.table(database, table)
                self.plan_cache.invalidate()
                return Result(None, rowcount=load_arrow(data, target, self.runner, progress=self.progress))

        return self._guarded(load).rowcount

    def execute_local(self, sql: str, received: str) -> Result:
        """``LOAD DATA LOCAL INFILE`` from a MySQL wire client: ``sql`` names the client's file, whose
        contents the server received into ``received`` (outside any load_dir: the client sent it)."""
        self._check_open()
        statements = parse(sql)
        if len(statements) != 1 or not is_load_data(statements[0].node) or not statements[0].node.local:
            raise BindError("execute_local runs one LOAD DATA LOCAL INFILE statement")
        node = dataclasses.replace(statements[0].node, path=received)
        with self._deadline(sql):
            def load() -> Result:
                self.authorize(node)
                self.plan_cache.invalidate()
                with self._writing(node, statements[0]):
                    result = self._load_data(node, confined=False)
                self.warnings = result.warnings
                return result
            return self._guarded(load)

    def close(self) -> None:
        """Close the session; an open transaction is rolled back."""
        if not self.closed:
            try:
                self.rollback()
            finally:
                self.closed = True
                self.sessions.remove(self)

    def kill(self, query_only: bool = False) -> None:
        """KILL QUERY (``query_only``): stop the running statement, if any, at its next batch; KILL
        CONNECTION: that too, then close the session and run the ``on_kill`` callbacks. Safe to call
        from any thread (the statement's own thread rolls its transaction back as it fails)."""
        if self.activity.command == "Query":
            self._cancel_requested = True
        if query_only:
            return
        self._killed = True
        if self.activity.command != "Query":
            self.close()              # idle; otherwise the statement's thread closes it as it ends
        for callback in list(self.on_kill):
            callback()

    def user_at_host(self) -> str:
        return f"{self.user or 'canopy'}@{self.host}"

    def check_kill(self, target: "Session") -> None:
        """MySQL's rule: a user may kill their own connections; killing another's takes an account
        that administers users (the embedding program may kill any)."""
        if self.user is None or target.user == self.user or self.is_administrator():
            return
        raise AccessDeniedError(f"you are not the owner of thread {target.connection_id}", scope="thread")

    # -- internals --------------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self.closed or self._killed:
            from engine.errors import InterfaceError
            raise InterfaceError("the session is closed")

    @contextlib.contextmanager
    def _deadline(self, sql: str):
        """statement_timeout and KILL QUERY over this call's queries: the runners stop their tasks at
        the next batch past the deadline or after the kill, and raise; a write's rows are applied only
        after its query ended, so none is partial. The call shows in SHOW PROCESSLIST meanwhile."""
        self._cancel_requested = False
        self.activity = Activity("Query", sql if isinstance(sql, str) else None)
        self.questions += 1
        token = statement_deadline.set(Deadline.after(self.statement_timeout,
                                                      cancelled=lambda: self._cancel_requested))
        memory_token = statement_memory_limit.set(self.memory_limit)
        depth_token = recursion_depth_limit.set(int(self.variables["cte_max_recursion_depth"]))
        collation_token = collation.connection_lookup.set(lambda: self.variables["collation_connection"])
        # a progress bar for the plans this call runs, once they have run a second (engine.exec.progress)
        progress = TqdmQueryProgress() if self._progress_wanted() else None
        progress_token = query_progress.set(progress)
        try:
            yield
        finally:
            query_progress.reset(progress_token)
            if progress is not None:
                progress.close()
            statement_deadline.reset(token)
            statement_memory_limit.reset(memory_token)
            recursion_depth_limit.reset(depth_token)
            collation.connection_lookup.reset(collation_token)
            self.activity = Activity()
            self._cancel_requested = False
            if self._killed:
                self.close()

    def _progress_wanted(self) -> bool:
        """progress_wanted(self.progress), the terminal-or-notebook question of ``progress=None``
        asked once per session (a system call per statement otherwise)."""
        if self.progress is not None:
            return bool(self.progress)
        auto = self.__dict__.get("_progress_auto")
        if auto is None:
            auto = self.__dict__["_progress_auto"] = progress_wanted(None)
        return auto

    @staticmethod
    def _guarded(action) -> Result:
        try:
            return action()
        except Error:
            raise
        except MemoryError as error:        # pa.ArrowMemoryError too: an allocation outside the operators
            raise MemoryLimitError(f"out of memory (memory_limit = {format_bytes(statement_memory_limit.get() or 0)}): "
                                   f"{error}") from None
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OverflowError) as error:
            from engine.exec.arrow_errors import sql_message
            raise BadDataError(sql_message(str(error))) from error
        except RecursionError:
            raise UnsupportedError("statement nested too deeply") from None
        except Exception as error:   # an engine bug: typed, with its cause attached for the report
            raise CanopyInternalError(f"internal error ({type(error).__name__}): {error}") from error

    def _counted(self, result: Optional[Result]) -> Optional[Result]:
        """Keep what ROW_COUNT() and FOUND_ROWS() report about the statement that made ``result``."""
        if isinstance(result, Result):
            if result.table is not None:
                self.row_count, self.found_rows = -1, result.rowcount
            else:
                self.row_count = result.rowcount
        return result

    def _execute(self, sql: str, params, marked: Optional[str] = None) -> Result:
        """``marked``: ``sql`` with its markers already numbered (a prepared statement; ``params``
        then the list of its values)."""
        if not isinstance(sql, str):
            raise BindError(f"the statement must be a string, not {type(sql).__name__}")
        cacheable = self._cacheable(sql)
        text_key = None          # set when this text's own cache entry is to be made on this run
        if cacheable and params is None:
            # The statement's own text first: a hit runs its bound plan without parsing or planning.
            # An entry is made once a text is seen again (a text run once costs nothing more): from
            # its literal template when one serves it, else by _plan_text.
            cache = self.plan_cache
            text_key = (sql, self.database, self.runner.num_partitions, "text")
            entry = cache.entries.get(text_key)
            if entry is not None and entry is not UNCACHEABLE:
                cache.hits += 1
                if self.user is not None:      # a plan another session cached: this user's rights first
                    self._authorize_cached(text_key, sql)
                return self._run_planned(entry)
            if entry is UNCACHEABLE or cache.first_sighting(text_key):
                text_key = None
        marked, values = mark_placeholders(sql, params) if marked is None else (marked, params)
        if cacheable:
            # A query with literals and no parameters is cached by its shape too: its literals become
            # the parameters (verified in _cached_query); otherwise it runs as written.
            lifted = parameterize_literals(sql) if params is None else None
            cache_key = self.plan_cache.key(*(lifted or (marked, values)), self.database,
                                            self.runner.num_partitions)
            if cache_key is not None and lifted:
                cache_key += ("lifted literals",)
            if cache_key is not None:
                cached = self._cached_query(cache_key, *(lifted or (marked, values)),
                                            original=sql if lifted else None, text_key=text_key)
                if cached is not None:
                    return cached
            if text_key is not None and text_key not in self.plan_cache.entries:
                planned = self._plan_text(sql)
                self.plan_cache.put(text_key, UNCACHEABLE if planned is None else planned)
                if planned is not None:
                    self.plan_cache.misses += 1
                    return self._run_planned(planned)
        result = Result(None, rowcount=0)
        statements = parse(marked)
        if len(statements) > 1 and not self.multi_statements:
            raise ParseError(f"{len(statements)} statements in one execute() call; run one statement per call, "
                             f"or connect(multi_statements=True) to run several")
        for statement in statements:
            if not _is_load(statement.node):
                statement.node = bind_placeholders(statement.node, values)
            result = self._run(statement)
        return result

    def _cached_query(self, key: tuple, marked: str, values: list, original: Optional[str] = None,
                      text_key: Optional[tuple] = None) -> Optional[Result]:
        """Run a one-query statement from the plan cache, filling it on a miss; None when the
        statement is not a cacheable query (the caller runs it the ordinary way). ``original``: the
        text ``marked`` was lifted from (its literals are ``values``); ``text_key``: where to keep
        the bound plan for that exact text, seen before (its later runs skip lifting and binding)."""
        cache = self.plan_cache
        entry = cache.entries.get(key)
        if entry is UNCACHEABLE:
            return None
        if entry is None and original is not None and cache.first_sighting(key):
            return None     # lifted literals: worth a template (two plannings) once the shape recurs
        if entry is None:
            cache.misses += 1
            try:
                statements = parse(marked)
            except Error:
                if original is None:
                    raise
                statements = []       # a literal the grammar needs as text: run as written
            node = statements[0].node if statements else None
            if len(statements) != 1 or not isinstance(node, (exp.Select, exp.SetOperation)) \
                    or "information_schema" in marked.lower() or reads_session_state(node) \
                    or node.args.get("locks") \
                    or (original is not None and not _same_tree(node, values, original)):
                cache.put(key, UNCACHEABLE)
                return None
            # The checks _run makes of a statement: this run plans and runs it without going there.
            refuse_ignored(node)
            self.authorize(node)
            planned = self._plan(bind_placeholders(node.copy(), values))
            others = other_values(values)
            try:
                second = self._plan(bind_placeholders(node.copy(), others))
            except Error:           # the other values do not bind (e.g. out of a column's range)
                second = None
            entry = make_template(planned, second, values, others) if second is not None else None
            cache.put(key, entry if entry is not None else UNCACHEABLE)
            if entry is None and text_key is not None:
                # No template for its shape (a literal folded, or typed by its value): the text seen
                # again keeps its own plan now, as _plan_text would keep it on the next run (after a
                # planning more that must come out the same), so its third run is a hit.
                again = self._plan(bind_placeholders(node.copy(), values))
                cache.put(text_key, planned if plans_equal(planned, again) else UNCACHEABLE)
                return self._run_planned(planned)
        else:
            cache.hits += 1
            if self.user is not None:      # a plan another session cached: this user's rights first
                self._authorize_cached(key, marked)
            planned = entry.bind(values)
        if text_key is not None and cache.entries.get(key) is not UNCACHEABLE:
            cache.put(text_key, planned)
        return self._run_planned(planned)

    def _cacheable(self, sql: str) -> bool:
        # the cache is shared by sessions with the default collation_connection: a literal's
        # collation (engine.collation.connection) is bound into the plan
        return self.plan_cache.enabled and not (self._txn is not None and self._txn.written) \
            and not _READS_LAST_STATEMENT.search(sql) \
            and collation.resolve(self.variables["collation_connection"]) == collation.DEFAULT

    def execute_if_instant(self, sql: str) -> Optional[Result]:
        """``execute(sql)`` when it runs from a cached plan of one stage that reads no table
        (``SELECT 1``, a client's ping query): done in microseconds, in this thread and without the
        runner's scheduler (engine.exec.inline), so the wire server runs it on its event loop instead
        of handing it to a worker thread; None (nothing run) otherwise."""
        self._check_open()
        if not isinstance(sql, str) or not self._cacheable(sql):
            return None
        key = (sql, self.database, self.runner.num_partitions, "text")
        entry = self.plan_cache.entries.get(key)
        if entry is None or entry is UNCACHEABLE or entry.init_plans or inline_stage(entry.stages) is None:
            return None
        with self._deadline(sql):
            return self._counted(self._guarded(lambda: self._run_inline(key, entry, sql)))

    def _run_inline(self, key: tuple, entry, sql: str) -> Result:
        """What ``_execute`` does with a hit of the text's own plan, the plan run inline."""
        self.plan_cache.hits += 1
        if self.user is not None:      # a plan another session cached: this user's rights first
            self._authorize_cached(key, sql)
        result = run_query(entry, InlineRunner(self.runner.num_partitions))
        self.warnings = result.warnings
        return result

    def _run_planned(self, planned) -> Result:
        result = run_query(planned, self.runner, spill_answer=True)
        self.warnings = result.warnings
        return result

    def _plan_text(self, sql: str):
        """The plan of a text seen again, kept under the text itself when no literal template
        serves it (``SELECT 1``: its literal is its column's name too; a query without literals), or
        None when it must be planned on every run: not one query, a read of session state or of
        information_schema, a locking read, or a plan that differs from a second planning of the same
        tree (something in it depends on the moment of planning). The statement is checked as
        ``_run`` checks it."""
        try:
            statements = parse(sql)
        except Error:
            return None          # the ordinary path reports it
        node = statements[0].node if len(statements) == 1 else None
        if not isinstance(node, (exp.Select, exp.SetOperation)) or "information_schema" in sql.lower() \
                or reads_session_state(node) or node.args.get("locks"):
            return None
        try:
            refuse_ignored(node)
            self.authorize(node)
            planned = self._plan(node.copy())
            again = self._plan(node)
        except Error:
            return None          # the ordinary path raises it (and keeps it for SHOW WARNINGS)
        return planned if plans_equal(planned, again) else None

    def _authorize_cached(self, key: tuple, marked: str) -> None:
        """Privileges for a cached plan, checked on the statement once per cache key and accounts
        version (a GRANT or REVOKE since makes the next use check again)."""
        stamp = (key, self.accounts.version)
        if stamp not in self._authorized:
            for statement in parse(marked):
                self.authorize(statement.node)
            self._authorized.add(stamp)

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
        if isinstance(statement.node, exp.Expression) and "last_insert_id" in statement.text.lower():
            statement.node = self._session_functions(statement.node)
        node = statement.node
        if isinstance(node, exp.Expression):
            # an INSERT's VALUES rows hold no clause to refuse: not walked (a bulk INSERT has many)
            refuse_ignored(node.this if isinstance(node, exp.Insert) and isinstance(node.expression, exp.Values)
                           else node)
        if isinstance(node, _QUERIES):
            check_statement_deadline()      # statement_timeout: each step before the plan runs
        if isinstance(node, exp.Show) and str(node.this).upper() == "WARNINGS":
            return self._stmt_Show(node, statement)      # reads the warnings; must not reset them
        if isinstance(node, exp.Expression) and not isinstance(node, exp.Set):
            node = statement.node = substitute(node, self)    # @@variables, DATABASE(), USER() ...
        if isinstance(node, _QUERIES):
            check_statement_deadline()
        self.authorize(node)
        if not isinstance(node, (exp.Select, exp.SetOperation, exp.Subquery, exp.Values, exp.Describe, exp.Show, exp.Set)):
            self.plan_cache.invalidate()       # DDL, ANALYZE, writes: plans and estimates may be stale
        try:
            if self._txn is not None and not isinstance(node, _KEEPS_TRANSACTION) and not is_load_data(node) \
                    and type(node).__name__ != "SavepointStatement":
                self.commit()        # DDL, ANALYZE, OPTIMIZE, pipelines: an implicit COMMIT first (MySQL)
            with self._writing(node, statement):
                if is_load_data(node):
                    result = self._load_data(node)
                else:
                    handler = statement_handlers().get(type(node)) or pipeline_handlers().get(type(node))
                    if handler is None:
                        words = " ".join(statement.text.split()[:2]).upper()
                        raise UnsupportedError(f"statement {words} ... is not supported")
                    result = handler(self, node, statement)
        except Error as error:
            self.warnings = [("Error", getattr(error, "code", None) or 0, str(error))]
            raise
        self.warnings = result.warnings
        return result

    def _session_functions(self, node: exp.Expression) -> exp.Expression:
        """LAST_INSERT_ID() becomes this session's value (queries using it skip the plan cache)."""
        def substitute(n: exp.Expression) -> exp.Expression:
            if isinstance(n, exp.Anonymous) and n.name.upper() == "LAST_INSERT_ID":
                if n.expressions:
                    raise UnsupportedError("LAST_INSERT_ID(expr) (setting the value)")
                return exp.Literal.number(self.last_insert_id)
            return n
        return node.transform(substitute)

# LAST_INSERT_ID(), ROW_COUNT(), FOUND_ROWS(): values of the session's last statement, never cached
_READS_LAST_STATEMENT = re.compile(r"last_insert_id|row_count|found_rows", re.IGNORECASE)


@dataclasses.dataclass(frozen=True)
class Prepared:
    """A statement made ready by :meth:`Session.prepare`: its text and the text with its ``count``
    markers numbered (what the plan cache keys on)."""
    sql: str
    marked: str
    count: int


# Statements statement_timeout stops before their plan runs too (a SET, SHOW or DDL is never cut short:
# SET statement_timeout = 0 must work under any timeout)
_QUERIES = (exp.Select, exp.SetOperation, exp.Subquery, exp.Values, exp.Describe, exp.Insert, exp.Update,
            exp.Delete)


def _same_tree(node: exp.Expression, values: list, original: str) -> bool:
    """Whether ``node`` with ``values`` bound is the tree ``original`` parses to (lifted literals)."""
    try:
        statements = parse(original)
    except Error:
        return False
    return len(statements) == 1 and bind_placeholders(node.copy(), values) == statements[0].node


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


# Statements that run inside an open transaction; any other commits it first.
_KEEPS_TRANSACTION = (exp.Select, exp.Union, exp.Subquery, exp.Values, exp.Describe, exp.Show, exp.Set, exp.Use,
                      exp.Insert, exp.Update, exp.Delete, exp.Transaction, exp.Commit, exp.Rollback,
                      exp.Intersect, exp.Except)


def _is_load(node) -> bool:
    return not isinstance(node, exp.Expression)     # a LoadDataStatement (engine.load), not a sqlglot tree
