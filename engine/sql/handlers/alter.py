"""ALTER TABLE (ADD / DROP / MODIFY / CHANGE / RENAME COLUMN, RENAME TO, ADD INDEX) and RENAME TABLE.

A mixin of :class:`engine.session.Session`. A column change rewrites the table: the new definition is
a new table (a fresh id) filled by one query over the old rows (a cast for MODIFY, the DEFAULT for
ADD), then the catalog swaps the two definitions in one step (one atomic write of a data_dir's
catalog.json) and the old table's storage is dropped. A crash before the swap leaves the old table
(recovery removes the new one's files, which no catalog entry names); after it, the new one. A rename
changes only the catalog. The statement holds the table's write lock (engine.transactions) and, as
DDL, commits an open transaction first.
"""
from __future__ import annotations

import dataclasses

from sqlglot import exp

from engine.catalog import ColumnDef, IndexDef, TableDef, UniqueKey
from engine.errors import BindError, UnsupportedError
from engine.result import Result
from engine.sql import ddl, dml
from engine.sql.auto_increment import counters_of
from engine.sql.query import run_query


class AlterStatements:
    def _stmt_Alter(self, node: exp.Alter, statement) -> Result:
        if str(node.args.get("kind") or "").upper() != "TABLE":
            raise UnsupportedError(f"ALTER {node.args.get('kind') or ''}".strip())
        for name, value in node.args.items():
            if name not in ("this", "kind", "actions") and value not in (None, False, [], ""):
                raise UnsupportedError(f"ALTER TABLE with {name.upper()}")
        table = self._table(node.this)
        plan = _Rewrite(table)
        binder = None
        for action in node.args.get("actions") or []:
            if isinstance(action, exp.AlterRename):
                plan.name = action.this.name
                if action.this.text("db") and action.this.text("db").lower() != table.database.lower():
                    raise UnsupportedError("ALTER TABLE ... RENAME TO another database")
                continue
            if isinstance(action, exp.AddConstraint) and all(isinstance(e, exp.IndexColumnConstraint)
                                                             for e in action.expressions):
                for item in action.expressions:             # ADD INDEX / KEY name (cols): a hash index
                    plan.add_index(item)
                continue
            if isinstance(action, exp.Drop) and str(action.args.get("kind") or "").upper() == "INDEX":
                for target in action.args.get("tables") or [action.this]:   # DROP INDEX / KEY name
                    plan.drop_index(target.name)
                continue
            if binder is None:
                from engine.plan.binder import Binder
                binder = Binder(self.catalog, self.database)
            plan.apply(action, binder)
        if plan.rewrites:
            self._rewrite_table(table, *plan.table_def())
        elif plan.name != table.name or plan.indexes != table.indexes:
            # a rename or an index change: the catalog only (an index is built from the stored
            # rows on its first lookup, engine.storage.hash_index)
            self._rename_tables([(table, dataclasses.replace(table, name=plan.name, indexes=plan.indexes))])
        return Result(None, rowcount=0)

    def _create_index(self, node: exp.Create) -> Result:
        """CREATE INDEX name ON t (cols): ALTER TABLE t ADD INDEX name (cols)."""
        index = node.this
        for name, value in node.args.items():
            if name not in ("this", "kind", "replace", "refresh", "unique", "exists", "concurrently") \
                    and value not in (None, False, [], ""):
                raise UnsupportedError(f"CREATE INDEX with {name.upper()}")
        if node.args.get("unique"):
            raise UnsupportedError("CREATE UNIQUE INDEX (declare a UNIQUE KEY in CREATE TABLE)")
        if node.args.get("replace") or node.args.get("exists") or node.args.get("concurrently"):
            raise UnsupportedError("CREATE OR REPLACE / IF NOT EXISTS / CONCURRENTLY INDEX")
        params = index.args.get("params")
        columns = list(params.args.get("columns") or []) if params is not None else []
        for name, value in (params.args.items() if params is not None else ()):
            if name not in ("columns", "with_storage") and value not in (None, False, [], ""):
                raise UnsupportedError(f"CREATE INDEX with {name.upper()}")
        if any(isinstance(c, exp.Ordered) and c.args.get("desc") for c in columns):
            raise UnsupportedError("CREATE INDEX with a DESC column (a hash index has no order)")
        table = self._table(index.args["table"])
        item = exp.IndexColumnConstraint(this=index.this.copy() if index.this is not None else None,
                                         expressions=[c.this.copy() if isinstance(c, exp.Ordered) else c.copy()
                                                      for c in columns])
        plan = _Rewrite(table)
        plan.add_index(item)
        self._rename_tables([(table, dataclasses.replace(table, indexes=plan.indexes))])
        return Result(None, rowcount=0)

    def _drop_index(self, node: exp.Drop, target: exp.Table) -> Result:
        """DROP INDEX name ON t."""
        if node.args.get("exists"):
            raise UnsupportedError("DROP INDEX IF EXISTS")
        table = self._table(target)
        plan = _Rewrite(table)
        for name in node.args.get("tables") or [node.this]:
            plan.drop_index(name.name)
        self._rename_tables([(table, dataclasses.replace(table, indexes=plan.indexes))])
        return Result(None, rowcount=0)

    def _stmt_RenameTables(self, node, statement) -> Result:
        """RENAME TABLE a TO b[, c TO d]: all at once (a later pair may reuse a name an earlier one freed)."""
        changes, renamed = [], {}
        for (old_db, old_name), (new_db, new_name) in node.pairs:
            database = old_db or self.database
            if database is None:
                raise BindError("no database selected; run USE <database> first")
            if (new_db or database).lower() != database.lower():
                raise UnsupportedError("RENAME TABLE into another database")
            key = (database.lower(), old_name.lower())
            table = renamed.pop(key, None) or self._table(exp.table_(old_name, db=database))
            new = dataclasses.replace(table, name=new_name)
            renamed[(database.lower(), new_name.lower())] = new
            changes.append((table, new))
        originals = {t.table_id: t for t, _ in reversed(changes)}     # the first definition of each
        finals = {t.table_id: t for t in renamed.values()}
        self._rename_tables([(originals[i], finals[i]) for i in finals])
        return Result(None, rowcount=0)

    def _rename_tables(self, changes: list) -> None:
        self.catalog.replace_tables(changes)
        self.runner.catalog_changed()
        for old, _ in changes:
            counters_of(self.runner).forget(old)
            self.statistics.forget(old)

    def _rewrite_table(self, table: TableDef, new: TableDef, sources: list[exp.Expression]) -> None:
        select = exp.select(*[e.copy() for e in sources]).from_(
            exp.table_(table.name, db=table.database, quoted=True))
        planned = self._plan(select)
        data = run_query(planned, self.runner).table
        rows = dml.conform_to_table(data, [f.type for f in planned.fields], new, list(new.columns))
        self.runner.create_table(new)
        try:
            from engine.load import keys
            keys.check_unique(self.runner, new, rows)        # a MODIFY may make two keys equal
            self.runner.insert(new, rows)
            self.catalog.replace_tables([(table, new)])
        except BaseException:
            self.runner.drop_table(new)
            raise
        self.runner.drop_table(table)
        self.runner.catalog_changed()
        counters_of(self.runner).forget(table)
        self.statistics.forget(table)


@dataclasses.dataclass
class _Rewrite:
    """The table an ALTER TABLE makes: its columns, each with the expression over the old row that
    fills it, and its keys with columns renamed."""

    old: TableDef
    name: str = ""
    rewrites: bool = False

    def __post_init__(self) -> None:
        self.name = self.old.name
        self.columns: list[ColumnDef] = list(self.old.columns)
        self.sources: list[exp.Expression] = [exp.column(c.name, quoted=True) for c in self.old.columns]
        self.renames: dict[str, str] = {}       # old key column name (lower) -> new name
        self.auto_increment = self.old.auto_increment
        self.indexes: tuple[IndexDef, ...] = self.old.indexes

    def add_index(self, item: exp.IndexColumnConstraint) -> None:
        def resolve(names, what):
            return tuple(self.columns[self._index(n)].name for n in names)
        self.indexes += (ddl.index_def(item, self.old.unique_keys + self.indexes, resolve),)

    def drop_index(self, name: str) -> None:
        if any(k.name.lower() == name.lower() for k in self.old.unique_keys):
            raise UnsupportedError(f"DROP INDEX {name}: it is the table's PRIMARY or UNIQUE key")
        if all(i.name.lower() != name.lower() for i in self.indexes):
            raise BindError(f"Can't DROP {name!r}; check that column/key exists")
        self.indexes = tuple(i for i in self.indexes if i.name.lower() != name.lower())

    def _index(self, name: str) -> int:
        for i, column in enumerate(self.columns):
            if column.name.lower() == name.lower():
                return i
        raise BindError(f"unknown column {name!r} in table {self.old.name}")

    def _key_columns(self) -> set[str]:
        names = [*self.old.shard_key, *self.old.sort_key, *(c for k in self.old.unique_keys for c in k.columns)]
        return {self.renames.get(n.lower(), n).lower() for n in names}

    def apply(self, action: exp.Expression, binder) -> None:
        self.rewrites = True
        if isinstance(action, exp.ColumnDef):                                  # ADD [COLUMN]
            column, primary, unique, auto = ddl.column_def(action, binder)
            if primary or unique or auto:
                raise UnsupportedError(f"ADD COLUMN {column.name} with PRIMARY KEY / UNIQUE / AUTO_INCREMENT")
            if any(c.name.lower() == column.name.lower() for c in self.columns):
                raise BindError(f"duplicate column name {column.name!r}")
            position = self._position(action.args.get("position"))
            value = exp.null() if column.default is None else _literal(column)
            self.columns.insert(position, column)
            self.sources.insert(position, value)
        elif isinstance(action, exp.Drop) and str(action.args.get("kind") or "").upper() == "COLUMN":
            for target in action.args.get("tables") or [action.this]:
                i = self._index(target.name)
                if self.columns[i].name.lower() in self._key_columns():
                    raise UnsupportedError(f"DROP COLUMN {target.name}: it is in the table's shard, sort or "
                                           f"unique key")
                if len(self.columns) == 1:
                    raise BindError("a table must keep at least one column (use DROP TABLE)")
                if self.columns[i].name == self.auto_increment:
                    self.auto_increment = None
                del self.columns[i]
                del self.sources[i]
        elif isinstance(action, exp.ModifyColumn):                             # MODIFY / CHANGE
            definition = action.this
            old_name = (action.args.get("rename_from") or definition.this).name
            i = self._index(old_name)
            column, primary, unique, auto = ddl.column_def(definition, binder)
            if primary or unique or (auto and self.columns[i].name != self.auto_increment):
                raise UnsupportedError(f"MODIFY COLUMN {old_name} adding PRIMARY KEY / UNIQUE / AUTO_INCREMENT")
            if self.columns[i].name.lower() in self._key_columns() and not self.columns[i].nullable:
                column = dataclasses.replace(column, nullable=False)     # a primary key column stays NOT NULL
            self._rename(self.columns[i].name, column.name)
            # the old values as they are: the rewrite converts them to the new type as an INSERT would
            # (strict: 'a' into INT, -1 into INT UNSIGNED fail the ALTER)
            self.columns[i] = column
            if action.args.get("position") is not None:
                raise UnsupportedError("MODIFY COLUMN ... FIRST / AFTER")
        elif isinstance(action, exp.RenameColumn):
            i = self._index(action.this.name)
            new_name = action.args["to"].name
            if any(c.name.lower() == new_name.lower() for j, c in enumerate(self.columns) if j != i):
                raise BindError(f"duplicate column name {new_name!r}")
            self._rename(self.columns[i].name, new_name)
            self.columns[i] = dataclasses.replace(self.columns[i], name=new_name)
        else:
            raise UnsupportedError(f"ALTER TABLE {action.sql(dialect='mysql')[:50]}")

    def _rename(self, old: str, new: str) -> None:
        if old.lower() == new.lower() and old == new:
            return
        for key, value in list(self.renames.items()):
            if value.lower() == old.lower():
                self.renames[key] = new
        if all(v.lower() != new.lower() for v in self.renames.values()):
            self.renames[old.lower()] = new
        if self.auto_increment is not None and self.auto_increment.lower() == old.lower():
            self.auto_increment = new

    def _position(self, position) -> int:
        if position is None:
            return len(self.columns)
        where = str(position.args.get("position") or "").upper()
        if where == "FIRST":
            return 0
        return self._index(position.this.name) + 1          # AFTER column

    def table_def(self) -> tuple[TableDef, list[exp.Expression]]:
        """The new table (a fresh id) and, per column, the expression over the old row that fills it."""
        def renamed(names):
            return tuple(self.renames.get(n.lower(), n) for n in names)
        table = TableDef(self.old.database, self.name, tuple(self.columns), renamed(self.old.shard_key),
                         renamed(self.old.sort_key), self.old.reference,
                         unique_keys=tuple(UniqueKey(k.name, renamed(k.columns)) for k in self.old.unique_keys),
                         auto_increment=self.auto_increment, indexes=self._kept_indexes(renamed))
        return table, self.sources

    def _kept_indexes(self, renamed) -> tuple[IndexDef, ...]:
        """The indexes over the new columns: a dropped column leaves its indexes (MySQL), an index
        left without a column goes."""
        names = {c.name.lower() for c in self.columns}
        out = []
        for index in self.indexes:
            columns = tuple(c for c in renamed(index.columns) if c.lower() in names)
            if columns:
                out.append(IndexDef(index.name, columns))
        return tuple(out)


def _literal(column: ColumnDef) -> exp.Expression:
    """A column's DEFAULT as SQL (engine.core.expressions.Literal prints it as a typed literal)."""
    from engine.core.expressions import Literal
    return exp.maybe_parse(str(Literal(column.default, column.type)), dialect="mysql")


def index_statement_table(node):
    """The table of ``CREATE INDEX name ON t (...)`` / ``DROP INDEX name ON t`` (None if absent)."""
    if isinstance(node, exp.Create):
        return node.this.args.get("table") if isinstance(node.this, exp.Index) else None
    on = node.args.get("cluster")
    return on.this if isinstance(on, exp.OnProperty) and isinstance(on.this, exp.Table) else None
