"""Account statements and privilege checks of a session (CREATE / ALTER / DROP USER, GRANT, REVOKE,
SHOW GRANTS). A mixin of :class:`engine.session.Session`: it uses ``runner``, ``user``, ``host`` and
``database``. Accounts live in :mod:`engine.accounts`; a session without a user (the embedding
program) is not checked.
"""
from __future__ import annotations

from typing import Optional

from sqlglot import exp

from engine.accounts import accounts_of, denied
from engine.errors import AccessDeniedError
from engine.result import Result
from engine.sql import ddl
from engine.sql.accounts import AlterUser, CreateUser, DropUser, Grant, ShowGrants
from engine.sql.column_reads import first_read_column

INFORMATION_SCHEMA = "information_schema"
# the privilege each statement needs on the databases it names (reads need SELECT on theirs)
WRITE_PRIVILEGE = {exp.Insert: "INSERT", exp.Update: "UPDATE", exp.Delete: "DELETE",
                   exp.TruncateTable: "DROP", exp.Create: "CREATE", exp.Drop: "DROP",
                   exp.Alter: "ALTER", exp.Analyze: "SELECT"}
ACCOUNT_STATEMENTS = (CreateUser, AlterUser, DropUser, Grant)


class AccountStatements:
    @property
    def accounts(self):
        return accounts_of(self.runner)

    def is_administrator(self) -> bool:
        if self.user is None:
            return True
        account = self.accounts.get(self.user)
        return account is not None and account.administrator

    # -- privilege checks ------------------------------------------------------------------------------
    def authorize(self, node) -> None:
        """Raise AccessDeniedError unless this session's user may run ``node`` (MySQL's codes follow
        the error's scope: 1044 for a database, 1142 for a table, 1227 for administration)."""
        if self.user is None:
            return
        account = self.accounts.get(self.user)
        if account is None:               # dropped while connected: MySQL keeps the session, not its rights
            raise AccessDeniedError(f"user '{self.user}' no longer exists", scope="global")
        if isinstance(node, ACCOUNT_STATEMENTS):
            if not account.administrator:
                raise AccessDeniedError("access denied; you need (at least one of) the CREATE USER "
                                        "privilege(s) for this operation", scope="global")
            return
        if type(node).__name__ == "LoadDataStatement":
            self._require(account, "INSERT", node.database or self.database, node.table)
            return
        if not isinstance(node, exp.Expression) or isinstance(node, (exp.Set, exp.Kill, exp.Show,
                                                                     exp.Transaction, exp.Commit, exp.Rollback)):
            if type(node).__name__ in ("CreatePipeline", "AlterPipeline", "DropPipeline", "StartPipeline",
                                       "StopPipeline", "OptimizeTable", "RenameTables"):
                self._require(account, "ALTER", getattr(node, "database", None) or self.database, None)
            return
        if isinstance(node, exp.Use):
            if node.this.name.lower() != INFORMATION_SCHEMA and not account.any_on(node.this.name):
                raise denied(self.user, "%", "", node.this.name)
            return
        write = next((p for cls, p in WRITE_PRIVILEGE.items() if isinstance(node, cls)), None)
        targets = _target_tables(node) if write else []
        target = targets[0] if targets else None
        if isinstance(node, (exp.Create, exp.Drop)) and (node.args.get("kind") or "").upper() in ("DATABASE", "SCHEMA"):
            self._require(account, write, node.this.name if node.this is not None else None, None)
            return
        written = _written_name(node, target, self.database)
        for table in node.find_all(exp.Table):
            if not table.name:
                continue
            database = table.text("db") or self.database
            # a mention of the changed table inside a subquery only reads it: SELECT, as MySQL asks
            changed = any(table is t for t in targets) if written is None else \
                written == _name_of(table, self.database) and table.find_ancestor(exp.Select) is None
            privilege = write if changed else "SELECT"
            self._require(account, privilege, database, table.name)
        if isinstance(node, (exp.Update, exp.Delete, exp.Insert)) and target is not None:
            self._require_column_reads(account, node, target, written)

    def _require_column_reads(self, account, node, target: exp.Table, written: Optional[tuple]) -> None:
        """MySQL's SELECT on the columns a DELETE / UPDATE reads of the table it changes (its WHERE,
        join conditions, new values) and on those of an ON DUPLICATE KEY UPDATE: error 1143."""
        database, name = written or _name_of(target, self.database)
        if not database or account.allows("SELECT", database) or database == INFORMATION_SCHEMA:
            return
        table = self.catalog.find_table(database, name) if self.catalog.has_database(database) else None
        if table is None:
            return                          # the statement's handler reports the unknown table
        column = first_read_column(self.catalog, self.database, node, table)
        if column is not None:
            raise AccessDeniedError(f"SELECT command denied to user '{self.user}'@'%' for column "
                                    f"'{column}' in table '{table.name}'", scope="column")

    def _require(self, account, privilege: str, database: Optional[str], table: Optional[str]) -> None:
        if database is not None and database.lower() == INFORMATION_SCHEMA and privilege == "SELECT":
            return
        if not account.allows(privilege, database):
            if table is None:
                raise denied(self.user, "%", privilege, database)
            raise denied(self.user, "%", privilege, database, table)

    # -- statements --------------------------------------------------------------------------------------
    def _stmt_CreateUser(self, node: CreateUser, statement) -> Result:
        created = self.accounts.create(node.name, node.password, node.plugin, node.if_not_exists)
        return Result(None, rowcount=int(created))

    def _stmt_AlterUser(self, node: AlterUser, statement) -> Result:
        self.accounts.set_password(node.name, node.password)
        return Result(None, rowcount=0)

    def _stmt_DropUser(self, node: DropUser, statement) -> Result:
        store = self.accounts
        if not node.if_exists:
            for name in node.names:          # all checked first: DROP USER a, missing drops nothing
                if store.get(name) is None:
                    store.drop(name)         # raises, naming it
        dropped = sum(store.drop(name, if_exists=True) for name in node.names)
        return Result(None, rowcount=dropped)

    def _stmt_Grant(self, node: Grant, statement) -> Result:
        store = self.accounts
        for name in node.names:
            if store.get(name) is None:
                store.set_password(name, "")     # raises: unknown user
        for name in node.names:
            (store.revoke if node.revoke else store.grant)(name, list(node.privileges), node.database)
        return Result(None, rowcount=0)

    def _stmt_ShowGrants(self, node: ShowGrants, statement) -> Result:
        name = node.name or self.user
        if name is None:
            rows = [("GRANT ALL PRIVILEGES ON *.* TO the embedding program",)]
        else:
            if name != self.user and not self.is_administrator():
                raise AccessDeniedError("access denied; you need the CREATE USER privilege to see others' "
                                        "grants", scope="global")
            account = self.accounts.get(name)
            if account is None:
                from engine.errors import BindError
                raise BindError(f"there is no such grant defined for user '{name}'")
            rows = [(f"GRANT {', '.join(p if p != 'ALL' else 'ALL PRIVILEGES' for p in privileges)} ON "
                     f"{'*' if scope == '*' else '`' + scope + '`'}.* TO `{name}`@`%`",)
                    for scope, privileges in sorted(account.grants.items())] or \
                [(f"GRANT USAGE ON *.* TO `{name}`@`%`",)]
        return ddl.text_result([f"Grants for {name or 'canopy'}@%"], rows)


def _name_of(table: exp.Table, database: Optional[str]) -> tuple:
    return ((table.text("db") or database or "").lower(), table.name.lower())


def _written_name(node: exp.Expression, target: Optional[exp.Table], database: Optional[str]) -> Optional[tuple]:
    """(database, name) of the table a DELETE / UPDATE changes: every mention of it needs the write
    privilege, the other tables SELECT (a multi-table statement's target need not be its first table)."""
    if not isinstance(node, (exp.Update, exp.Delete)) or target is None:
        return None
    from engine.errors import Error
    from engine.sql import dml_sources
    try:
        parts = dml_sources.delete_parts(node) if isinstance(node, exp.Delete) else dml_sources.update_parts(node)
    except Error:
        return None                     # the statement's handler reports it
    return _name_of(parts.target, database)


def _target_tables(node: exp.Expression) -> list:
    """The tables a write statement changes (its other tables are read): DROP TABLE a, b and
    TRUNCATE list theirs (sqlglot keeps them in ``tables`` / ``expressions``, not ``this``)."""
    if isinstance(node, exp.TruncateTable):
        return [t for t in node.expressions if isinstance(t, exp.Table)]
    if isinstance(node, exp.Drop) and node.args.get("tables"):
        return [t for t in node.args["tables"] if isinstance(t, exp.Table)]
    target = node.this
    if isinstance(target, exp.Schema):
        target = target.this
    return [target] if isinstance(target, exp.Table) else []
