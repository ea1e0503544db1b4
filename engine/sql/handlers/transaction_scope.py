"""A session's transaction and write locks: BEGIN / COMMIT / ROLLBACK as the connection's methods
(``begin``, ``commit``, ``rollback``, ``set_autocommit``: the DB-API driver calls them too), and around
each statement the write locks of the tables it writes (``_writing``): held for the statement under
autocommit, or until the transaction ends, with the tables replaced by their shadows
(:mod:`engine.transactions` holds the model: shadow tables, lock modes, timeouts).

A mixin of :class:`engine.session.Session`, whose statement loop wraps every statement in ``_writing``;
the SQL statements BEGIN / COMMIT / SAVEPOINT are handlers in :mod:`engine.sql.handlers.session_state`.
"""
from __future__ import annotations

import contextlib

import pyarrow as pa
from sqlglot import exp

from engine.errors import Error
from engine.load import keys
from engine.sql.handlers.alter import index_statement_table
from engine.sql.parser import Statement
from engine.sql.query import plan_query, run_query
from engine.transactions import APPEND, EXCLUSIVE, MODIFY, Transaction, TransactionCatalog, table_locks_of


class TransactionScope:
    """The transaction and write-lock half of :class:`engine.session.Session`: ``_txn`` (the open
    transaction or None), ``_statement_locks`` (the table ids an autocommit statement locked),
    ``autocommit`` and ``lock_wait_timeout`` are the session's."""

    @property
    def in_transaction(self) -> bool:
        return self._txn is not None

    def begin(self) -> None:
        """Open a transaction (committing an open one first, as MySQL's BEGIN does)."""
        self._check_open()
        self.commit()
        self._txn = Transaction(self.runner, self, lambda: self.lock_wait_timeout)

    def commit(self) -> None:
        """Make the open transaction's writes visible, all at once; nothing to do without one."""
        txn, self._txn = self._txn, None
        if txn is None:
            return
        changed = self._guarded(lambda: txn.commit(self._read_all))
        self.plan_cache.invalidate()
        for table in changed:
            self.statistics.forget(table)

    def rollback(self) -> None:
        """Drop the open transaction's writes; nothing to do without one."""
        txn, self._txn = self._txn, None
        if txn is not None:
            txn.end()

    def set_autocommit(self, on: bool) -> None:
        """``SET autocommit``: turning it on commits an open transaction (MySQL)."""
        if on:
            self.commit()
        self.autocommit = bool(on)

    def _read_all(self, table) -> pa.Table:
        """Every row of ``table`` (a TableDef, committed or a transaction's shadow), in its schema."""
        catalog = TransactionCatalog(self.runner.catalog, {(table.database.lower(), table.name.lower()): table})
        select = exp.select(*[exp.column(c.name, quoted=True) for c in table.columns]).from_(
            exp.table_(table.name, db=table.database, quoted=True))
        planned = plan_query(select, catalog, self.database, self.statistics, self.runner.num_partitions)
        data = run_query(planned, self.runner).table
        return pa.Table.from_arrays(data.columns, schema=table.arrow_schema)

    @contextlib.contextmanager
    def _writing(self, node, statement: Statement):
        """Around a statement: the write locks of the tables it writes, for the statement (autocommit)
        or, inside a transaction, until it ends, with the tables replaced by their shadows."""
        tables = self._write_targets(node)
        # DML joins the transaction (opening one with autocommit off); DDL (which committed an open
        # transaction already, see _run) holds its locks for the statement only
        transactional = isinstance(node, (exp.Insert, exp.Update, exp.Delete, exp.Select)) or is_load_data(node)
        if tables and transactional and self._txn is None and not self.autocommit:
            self._txn = Transaction(self.runner, self, lambda: self.lock_wait_timeout)
        if self._txn is not None and transactional:
            for table in tables:
                if isinstance(node, exp.Select):
                    self._txn.lock(table)      # SELECT ... FOR UPDATE: held until the transaction ends
                else:
                    self._txn.shadow_of(table, self._read_all)
            yield
            return
        locks = table_locks_of(self.runner)
        taken = self._statement_locks = []
        try:
            for table in tables:
                if locks.acquire(table, self, self.lock_wait_timeout, _lock_mode(node, table)):
                    taken.append(table.table_id)
            yield
        finally:
            self._statement_locks = None
            locks.release(taken, self)

    def _whole_table(self, table) -> None:
        """Called by a write before it rewrites ``table`` from rows it read (a WHERE with a subquery):
        its statement's lock becomes exclusive, so no INSERT commits between the read and the rewrite.
        A no-op for a transaction's shadow (its table is locked exclusively) and an exclusive lock."""
        if self._txn is None and self._statement_locks is not None:
            if table_locks_of(self.runner).acquire(table, self, self.lock_wait_timeout, EXCLUSIVE):
                self._statement_locks.append(table.table_id)

    def _write_targets(self, node) -> list:
        """The committed tables a statement writes (its write locks); unknown names are left to the
        statement's handler to report."""
        if is_load_data(node):
            names = [(node.database, node.table)]
        elif isinstance(node, exp.Insert):
            target = node.this.this if isinstance(node.this, exp.Schema) else node.this
            names = [(target.text("db"), target.name)]
        elif isinstance(node, (exp.Update, exp.Delete)):
            names = _changed_table(node)
        elif isinstance(node, exp.TruncateTable):
            names = [(t.text("db"), t.name) for t in node.expressions]
        elif isinstance(node, exp.Select) and node.args.get("locks"):
            # SELECT ... FOR UPDATE / LOCK IN SHARE MODE: the write lock of every table it reads (a
            # table lock, stronger than MySQL's row locks; both kinds take it)
            names = [(t.text("db"), t.name) for t in node.find_all(exp.Table)]
        elif isinstance(node, exp.Alter) and isinstance(node.this, exp.Table):
            names = [(node.this.text("db"), node.this.name)]
        elif isinstance(node, (exp.Create, exp.Drop)) and (node.args.get("kind") or "").upper() == "INDEX":
            target = index_statement_table(node)        # CREATE / DROP INDEX name ON t
            names = [(target.text("db"), target.name)] if target is not None else []
        elif type(node).__name__ == "RenameTables":
            names = [old for old, _ in node.pairs]
        elif isinstance(node, exp.Drop) and (node.args.get("kind") or "").upper() == "TABLE":
            names = [(t.text("db"), t.name) for t in (node.args.get("tables") or [node.this])]
        else:
            return []
        tables = []
        for database, name in names:
            database = database or self.database
            if database is None or not self.runner.catalog.has_database(database):
                continue
            table = self.runner.catalog.find_table(database, name)
            if table is not None and all(t.table_id != table.table_id for t in tables):
                tables.append(table)
        return tables


def _lock_mode(node, table) -> str:
    """The mode of ``table``'s write lock an autocommit statement takes (engine.transactions)."""
    if isinstance(node, exp.Insert) and not table.unique_keys:
        return APPEND           # no key to check: its rows only add to the table
    if isinstance(node, exp.Update):
        assigned = [item.this.name for item in node.expressions if isinstance(item.this, exp.Column)]
        return EXCLUSIVE if keys.updates_key(table, assigned) else MODIFY
    if isinstance(node, exp.Delete) and node.args.get("where") is not None:
        return MODIFY
    return EXCLUSIVE


def _changed_table(node) -> list:
    """[(database, name)] of the table a DELETE / UPDATE changes (a multi-table one's FROM clause
    may name it after others); [] when its handler will refuse the statement."""
    from engine.sql import dml_sources
    try:
        parts = dml_sources.delete_parts(node) if isinstance(node, exp.Delete) else dml_sources.update_parts(node)
    except Error:
        return []
    return [(parts.target.text("db"), parts.target.name)]


def is_load_data(node) -> bool:
    return type(node).__name__ == "LoadDataStatement"
