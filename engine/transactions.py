"""Multi-statement transactions of a session: BEGIN / COMMIT / ROLLBACK and ``autocommit = 0``.

Model (SingleStore's): READ COMMITTED with table-level write locks.

* **Writes are staged in shadow tables.** The first write of a transaction to table ``t`` takes ``t``'s
  write lock and copies ``t``'s committed rows into a *shadow*: a table with a fresh id, created on the
  runner like any other (so it is partitioned, scanned and written by the same code on both runners)
  but never entered in the catalog. Every later statement of the transaction that names ``t`` reads
  and writes the shadow (:class:`TransactionCatalog` resolves the name), so the transaction reads its
  own writes, and each of its statements stays atomic on its own (a failed statement leaves the
  shadow as it was, and the transaction goes on, as in MySQL).
* **COMMIT is one runner transaction.** Every shadow's rows replace their table's rows in one
  :meth:`engine.runner.Runner.replace_tables` call: one commit record in a ``data_dir``'s commit log,
  one snapshot epoch on Ray. Readers see all of the transaction or none of it, and a kill -9 before the
  commit record leaves none of it: a shadow is not in the catalog, so recovery removes its files.
* **Readers** of other sessions never see a shadow; each statement reads the latest committed
  snapshot (READ COMMITTED; tables the transaction has not written are read the same way).
* **Concurrent writers** of one table serialize on its write lock, held by a transaction from its
  first write of the table to COMMIT / ROLLBACK and by an autocommit statement for the statement
  (autocommit INSERTs and an in-place UPDATE / DELETE share it: see the modes below; the lock is
  granted first come, first served, :mod:`engine.fair_locks`). A
  writer that waits longer than ``lock_wait_timeout`` seconds (SingleStore's variable, default 60)
  gets :class:`engine.errors.LockWaitTimeoutError` and its statement does nothing; its transaction
  stays open (MySQL's default). Two transactions that wait for each other's tables both time out.

This is the session's job (which statements a transaction groups, what it reads, whom it waits for),
not a second write path: each statement and the COMMIT reach storage through the runner's one commit
protocol (:mod:`cluster.writes` driving the leaves' :mod:`cluster.leaf_writes`, both runners).

Cost: a transaction's first write to a table copies the table, and its COMMIT rewrites it — meant for
the everyday transactions of an application, not for bulk loads (those are atomic on their own).
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Optional

import pyarrow as pa

from engine.catalog import Catalog, TableDef, new_table_id
from engine.errors import BindError, LockWaitTimeoutError
from engine.fair_locks import FairLocks, LockTimeout

DEFAULT_LOCK_WAIT_TIMEOUT = 60.0      # seconds, SingleStore's lock_wait_timeout default


# Modes of a table's write lock. An autocommit INSERT into a table without a unique key only appends
# (APPEND: many at once); an UPDATE or DELETE that storage applies in place marks rows deleted and
# appends their new versions in one commit, evaluated under the commit lock, so it runs beside the
# appenders but not beside another one (MODIFY); everything else -- a transaction's first write, which
# copies the table, a rewrite of the whole table, a unique-key check, DDL -- holds it alone (EXCLUSIVE).
APPEND, MODIFY, EXCLUSIVE = "append", "modify", "exclusive"
_CONFLICTS = {APPEND: {EXCLUSIVE}, MODIFY: {MODIFY, EXCLUSIVE}, EXCLUSIVE: {APPEND, MODIFY, EXCLUSIVE}}
_STRENGTH = {APPEND: 0, MODIFY: 1, EXCLUSIVE: 2}


class TableLocks:
    """Write locks on tables, by table id, shared by every session of one runner, granted first come,
    first served (:class:`engine.fair_locks.FairLocks`): a writer waits for the holders and the
    conflicting writers that asked before it, never for later ones. An owner (a session) may take a
    lock it holds again; asking for a stronger mode than it holds upgrades it."""

    def __init__(self) -> None:
        self._locks = FairLocks(_CONFLICTS, _STRENGTH)

    def acquire(self, table: TableDef, owner: object, timeout: float, mode: str = EXCLUSIVE) -> bool:
        """Take ``table``'s write lock for ``owner``; True if newly taken, False if ``owner`` held it.
        Raises LockWaitTimeoutError after ``timeout`` seconds of waiting."""
        try:
            return self._locks.acquire(table.table_id, owner, mode, timeout)
        except LockTimeout:
            raise LockWaitTimeoutError(
                f"Lock wait timeout exceeded; try restarting transaction (table {table.qualified_name} "
                f"is being written by another transaction)") from None

    def release(self, table_ids, owner: object) -> None:
        for table_id in table_ids:
            self._locks.release(table_id, owner)


def table_locks_of(runner) -> TableLocks:
    locks = getattr(runner, "table_locks", None)
    if locks is None:
        locks = runner.table_locks = TableLocks()      # shared by every session of this cluster
    return locks


class TransactionCatalog:
    """The catalog as a transaction sees it: a table it has written resolves to its shadow. Everything
    else (databases, DDL) goes to the shared catalog; DDL commits the transaction first anyway."""

    def __init__(self, base: Catalog, shadows: dict[tuple[str, str], TableDef]):
        self._base = base
        self._shadows = shadows

    def find_table(self, database: str, name: str) -> Optional[TableDef]:
        shadow = self._shadows.get((database.lower(), name.lower()))
        return shadow if shadow is not None else self._base.find_table(database, name)

    def table(self, database: str, name: str) -> TableDef:
        shadow = self._shadows.get((database.lower(), name.lower()))
        return shadow if shadow is not None else self._base.table(database, name)

    def tables(self, database: str) -> list[TableDef]:
        return [self._shadows.get((t.database.lower(), t.name.lower()), t) for t in self._base.tables(database)]

    def __getattr__(self, name):
        return getattr(self._base, name)


class Transaction:
    """One open transaction of a session: its shadows and the write locks it holds."""

    def __init__(self, runner, owner: object, lock_timeout: Callable[[], float]):
        self.runner = runner
        self.owner = owner
        self._lock_timeout = lock_timeout
        self._locks = table_locks_of(runner)
        self._held: list[int] = []
        self.written: dict[tuple[str, str], tuple[TableDef, TableDef]] = {}   # key -> (table, shadow)
        self.savepoints: list[tuple[str, dict]] = []      # (name, {key: the shadow's rows then})
        self.catalog = TransactionCatalog(runner.catalog, {k: s for k, (_, s) in self.written.items()})

    def _refresh_catalog(self) -> None:
        self.catalog = TransactionCatalog(self.runner.catalog, {k: s for k, (_, s) in self.written.items()})

    def lock(self, table: TableDef) -> None:
        """Hold ``table``'s write lock until the transaction ends."""
        if self._locks.acquire(table, self.owner, self._lock_timeout()):
            self._held.append(table.table_id)

    def shadow_of(self, table: TableDef, read_all: Callable[[TableDef], pa.Table]) -> TableDef:
        """The shadow that stands for ``table`` in this transaction, made (``table``'s committed rows,
        read by ``read_all``) at the first write. ``table`` is the committed table's definition."""
        key = (table.database.lower(), table.name.lower())
        if key in self.written:
            return self.written[key][1]
        self.lock(table)
        shadow = dataclasses.replace(table, table_id=new_table_id())
        rows = read_all(table)                  # under the lock: no other writer changes them now
        self.runner.create_table(shadow)
        try:
            if rows.num_rows:
                self.runner.insert(shadow, rows)
        except BaseException:
            self.runner.drop_table(shadow)
            raise
        self.written[key] = (table, shadow)
        self._refresh_catalog()
        return shadow

    def savepoint(self, name: str, read_all: Callable[[TableDef], pa.Table]) -> None:
        """SAVEPOINT name: a copy of every shadow's rows (a savepoint of the same name is replaced)."""
        self.release(name, missing_ok=True)
        self.savepoints.append((name, {key: read_all(shadow) for key, (_, shadow) in self.written.items()}))

    def rollback_to(self, name: str) -> None:
        """ROLLBACK TO SAVEPOINT name: every shadow back to its rows then; tables first written since
        are the committed ones again (their locks stay held, as MySQL keeps row locks); later
        savepoints are forgotten, this one kept."""
        index = self._find(name)
        rows = self.savepoints[index][1]
        del self.savepoints[index + 1:]
        for key, (_, shadow) in list(self.written.items()):
            if key in rows:
                self.runner.replace_table(shadow, rows[key])
            else:
                del self.written[key]
                self.runner.drop_table(shadow)
        self._refresh_catalog()

    def release(self, name: str, missing_ok: bool = False) -> None:
        """RELEASE SAVEPOINT name: forget it and every later one."""
        try:
            del self.savepoints[self._find(name):]
        except BindError:
            if not missing_ok:
                raise

    def _find(self, name: str) -> int:
        for i in range(len(self.savepoints) - 1, -1, -1):
            if self.savepoints[i][0].lower() == name.lower():
                return i
        raise BindError(f"SAVEPOINT {name} does not exist")

    def commit(self, read_all: Callable[[TableDef], pa.Table]) -> list[TableDef]:
        """Make every staged write visible in one runner transaction; the tables changed."""
        try:
            changes = [(table, read_all(shadow)) for table, shadow in self.written.values()]
            if changes:
                self.runner.replace_tables(changes)
            return [table for table, _ in changes]
        finally:
            self.end()

    def end(self) -> None:
        """Drop the shadows and release the locks (ROLLBACK, or after COMMIT)."""
        written, self.written = self.written, {}
        self._refresh_catalog()
        try:
            for _, shadow in written.values():
                self.runner.drop_table(shadow)
        finally:
            held, self._held = self._held, []
            self._locks.release(held, self.owner)
