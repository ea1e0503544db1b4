"""Catalog statements of a session: CREATE, DROP, USE, SHOW, ANALYZE, OPTIMIZE.

A mixin of :class:`engine.session.Session` (it uses the session's ``catalog``, ``runner``, ``database``,
``statistics`` and ``_plan``); one file per family of statements keeps the session a dispatcher.
"""
from __future__ import annotations

import dataclasses
from typing import Optional

import pyarrow as pa
from sqlglot import exp

from engine import collation
from engine.catalog import TableDef
from engine.errors import BindError, Error, UnsupportedError, unknown_name_error
from engine.result import Result
from engine.sql import ddl
from engine.sql.auto_increment import counters_of
from engine.sql.parser import Statement
from engine.exec.answer import SpilledAnswer
from engine.sql.handlers.spilled_insert import insert_spilled
from engine.sql.query import run_query


class CatalogStatements:
    def _table(self, node: exp.Table, system_ok: bool = False):
        """The table ``node`` names; ``system_ok``: an information_schema table may be the answer (to
        describe it: it has no storage to write or optimize)."""
        database = ddl.database_of(node, self.database)
        if self.catalog.has_database(database) and self.catalog.find_view(database, node.name) is not None:
            raise UnsupportedError(f"{node.name} is a view: views cannot be written to, described as tables "
                                   f"or optimized in Canopy (read them with SELECT)")
        system = self.catalog.system_table(database, node.name)
        if system is not None:
            if not system_ok:
                raise UnsupportedError(f"information_schema.{system.name} is a system view: it can only be "
                                       f"read (SELECT, DESCRIBE)")
            return system.definition()
        return self.catalog.table(database, node.name)

    def _stmt_Create(self, node: exp.Create, statement: Statement) -> Result:
        kind = (node.args.get("kind") or "").upper()
        if_not_exists = bool(node.args.get("exists"))
        if kind in ("DATABASE", "SCHEMA"):
            created = self.catalog.create_database(node.this.name, if_not_exists)
            return Result(None, rowcount=1 if created else 0)
        if kind == "VIEW":
            return self._create_view(node)
        if kind == "INDEX":
            return self._create_index(node)
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
        like = _like_source(node)
        if like is not None:        # CREATE TABLE t2 LIKE t: t's columns, keys, indexes, shard and sort key
            source = self._table(like)
            copied = {f.name: getattr(source, f.name) for f in dataclasses.fields(source)
                      if f.name not in ("database", "name", "table_id")}
            table = TableDef(database=database, name=target.name, **copied)
        else:
            table = ddl.table_def_from_create(node, statement.table_options, database, self.catalog)
        counters_of(self.runner).forget(table)
        self.runner.create_table(table)
        try:
            self.catalog.add_table(table)
        except Error:
            self.runner.drop_table(table)
            raise
        return Result(None, rowcount=0)

    def _create_view(self, node: exp.Create) -> Result:
        """CREATE [OR REPLACE] VIEW [IF NOT EXISTS] v [(columns)] AS query: the query is checked by
        planning it now, and kept as text with its table names qualified (engine.catalog.ViewDef)."""
        from engine.catalog import ViewDef
        for name, value in node.args.items():
            if name not in ("this", "kind", "replace", "exists", "expression") and value not in (None, False, [], ""):
                raise UnsupportedError(f"CREATE VIEW with {name.upper()}")
        target, columns = node.this, ()
        if isinstance(target, exp.Schema):
            target, columns = target.this, tuple(c.name for c in target.expressions)
        database = ddl.database_of(target, self.database)
        if not self.catalog.has_database(database):
            raise unknown_name_error("database", database, self.catalog.databases())
        if self.catalog.find_view(database, target.name) is not None and node.args.get("exists"):
            return Result(None, rowcount=0)
        body = node.expression.copy()
        ctes = {cte.alias.lower() for cte in body.find_all(exp.CTE)}
        for table in body.find_all(exp.Table):
            if not table.args.get("db") and table.name.lower() not in ctes and table.name:
                table.set("db", exp.to_identifier(self.database or database))
        if self._reads_view(body, (database.lower(), target.name.lower()), set()):
            raise BindError(f"view {target.name!r} would refer to itself")
        planned = self._plan(body)
        if columns and len(columns) != len(planned.names):
            raise BindError(f"view {target.name!r} names {len(columns)} columns but its query has "
                            f"{len(planned.names)}")
        names = [n.lower() for n in (columns or planned.names)]
        if len(set(names)) != len(names):
            raise BindError(f"view {target.name!r} has two columns of one name; name them with AS")
        view = ViewDef(database, target.name, body.sql(dialect="mysql"), columns)
        self.catalog.add_view(view, replace=bool(node.args.get("replace")))
        self.runner.catalog_changed()
        return Result(None, rowcount=0)

    def _reads_view(self, query: exp.Expression, view: tuple[str, str], seen: set) -> bool:
        """Whether ``query`` reads the view ``view`` ((database, name), lower case), directly or
        through other views."""
        from engine.sql.parser import parse_one
        for table in query.find_all(exp.Table):
            database = (table.text("db") or self.database or "").lower()
            key = (database, table.name.lower())
            if key == view:
                return True
            found = self.catalog.find_view(*key) if database and self.catalog.has_database(database) else None
            if found is not None and key not in seen:
                seen.add(key)
                if self._reads_view(parse_one(found.sql), view, seen):
                    return True
        return False

    def _create_table_as(self, node: exp.Create, statement: Statement, database: str) -> Result:
        from engine.catalog import ColumnDef, TableDef
        from engine.plan.bind_context import strict_writes
        token = strict_writes.set(True)     # strict mode: a CAST past its range fails, as in an INSERT
        try:
            planned = self._plan(node.expression)
        finally:
            strict_writes.reset(token)
        from engine.types import TEXT
        columns = tuple(ColumnDef(name, f.type if f.type.kind != "null" else TEXT, f.nullable)
                        for name, f in zip(planned.names, planned.fields))
        options = statement.table_options
        shard = options.shard_key or ()
        table = TableDef(database, node.this.name, columns, tuple(shard), options.sort_key, options.reference)
        # the SELECT may stay on disk past memory_limit: the new table is then filled a batch at a time
        result = run_query(planned, self.runner, spill_answer="CREATE TABLE ... AS")
        if isinstance(result.table, SpilledAnswer):
            self.runner.create_table(table)
            self.catalog.add_table(table)
            try:
                count = insert_spilled(self.runner, table, result.table, lambda rows, first: pa.Table.from_arrays(
                    rows.columns, schema=table.arrow_schema))
            except BaseException:           # no half-made table is left behind
                self.catalog.drop_table(table.database, table.name)
                self.runner.drop_table(table)
                raise
            return Result(None, rowcount=count)
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
        if kind == "INDEX":
            from engine.sql.handlers.alter import index_statement_table
            target = index_statement_table(node)
            if target is None:
                raise UnsupportedError("DROP INDEX without ON table")
            return self._drop_index(node, target)
        if kind == "VIEW":
            views = [(ddl.database_of(t, self.database), t.name) for t in targets]
            for database, name in views:        # all names checked first
                if (not self.catalog.has_database(database) or self.catalog.find_view(database, name) is None) \
                        and not if_exists:
                    self.catalog.drop_view(database, name)       # raises, naming the closest view
            for database, name in views:
                if self.catalog.has_database(database) and self.catalog.find_view(database, name) is not None:
                    self.catalog.drop_view(database, name)
            self.runner.catalog_changed()
            return Result(None, rowcount=0)
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
            return self._show_tables(node, like)
        if what == "TABLE STATUS":
            return self._show_table_status(node, like)
        if what == "COLUMNS":
            return self._describe(node.args["target"], bool(node.args.get("full")))
        if what == "COLLATION":
            return ddl.text_result(["Collation", "Charset", "Id", "Default", "Compiled", "Sortlen", "Pad_attribute"],
                                   [(c.name, c.charset, str(c.id), "Yes" if c.is_default else "", "Yes", "1",
                                     "PAD SPACE" if c.pad_space else "NO PAD")
                                    for c in collation.COLLATIONS.values() if like(c.name)])
        if what in ("INDEX", "INDEXES", "KEYS"):
            return self._show_index(node)
        if what == "CREATE TABLE":
            table = self._table(node.args["target"])
            return ddl.text_result(["Table", "Create Table"], [(table.name, ddl.show_create_table(table))])
        if what == "WARNINGS":
            return ddl.text_result(["Level", "Code", "Message"], [(lvl, str(code), msg) for lvl, code, msg in self.warnings])
        if what == "VARIABLES":
            return self._show_variables(node)
        if what == "STATUS":
            return self._show_status(node)
        if what == "PROCESSLIST":
            return self._show_processlist(node)
        raise UnsupportedError(f"SHOW {what}")

    def _describe(self, target: exp.Table, full: bool = False) -> Result:
        """DESCRIBE / SHOW COLUMNS of a table, or of a view (its query's columns)."""
        database = ddl.database_of(target, self.database)
        if self.catalog.has_database(database) and self.catalog.find_view(database, target.name) is not None:
            planned = self._plan(exp.select("*").from_(exp.table_(target.name, db=database)))
            return ddl.text_result(["Field", "Type", "Null", "Key", "Default", "Extra"],
                                   [(n, str(f.type).lower(), "YES" if f.nullable else "NO", "", None, "")
                                    for n, f in zip(planned.names, planned.fields)])
        return ddl.describe_table(self._table(target, system_ok=True), full)

    def _show_tables(self, node: exp.Show, like) -> Result:
        """SHOW [FULL] TABLES [FROM db] [LIKE 'p']: FULL adds Table_type (BASE TABLE, VIEW, SYSTEM VIEW)."""
        from engine.system_schema import listed_tables
        database = node.args.get("db").name if node.args.get("db") is not None else self.database
        if database is None:
            raise BindError("no database selected; run USE <database> first")
        if not self.catalog.has_database(database):
            raise unknown_name_error("database", database, self.catalog.databases())
        database = next(d for d in self.catalog.databases() if d.lower() == database.lower())
        rows = sorted({(name, kind) for d, name, kind, _, _ in listed_tables(self.catalog)
                       if d.lower() == database.lower() and like(name)}, key=lambda r: r[0].lower())
        if node.args.get("full"):
            return ddl.text_result([f"Tables_in_{database}", "Table_type"], rows)
        return ddl.text_result([f"Tables_in_{database}"], [(name,) for name, _ in rows])

    def _show_table_status(self, node: exp.Show, like) -> Result:
        """SHOW TABLE STATUS [FROM db] [LIKE 'p']: MySQL's 18 columns, one row per table and view (what
        Canopy does not report here -- row counts, byte sizes, times, the AUTO_INCREMENT counter -- is
        NULL, as MySQL shows for a view)."""
        from engine.system_schema import listed_tables
        if node.args.get("where") is not None:
            raise UnsupportedError("SHOW TABLE STATUS WHERE; use SHOW TABLE STATUS LIKE 'pattern' or "
                                   "information_schema.TABLES")
        database = node.args.get("db").name if node.args.get("db") is not None else self.database
        if database is None:
            raise BindError("no database selected; run USE <database> first")
        if not self.catalog.has_database(database):
            raise unknown_name_error("database", database, self.catalog.databases())
        rows = []
        for d, name, kind, engine, _ in sorted(listed_tables(self.catalog), key=lambda r: r[1].lower()):
            if d.lower() != database.lower() or not like(name):
                continue
            view = kind == "VIEW"
            rows.append((name, None if view else engine, None if view else "10", None if view else "Fixed",
                         None, None, None, None, None, None, None, None, None, None,
                         None if view else "utf8mb4_general_ci", None, None if view else "",
                         "VIEW" if view else ""))
        return ddl.text_result(["Name", "Engine", "Version", "Row_format", "Rows", "Avg_row_length", "Data_length",
                                "Max_data_length", "Index_length", "Data_free", "Auto_increment", "Create_time",
                                "Update_time", "Check_time", "Collation", "Checksum", "Create_options", "Comment"],
                               rows)

    def _show_index(self, node: exp.Show) -> Result:
        """SHOW INDEX FROM t [FROM db]: one row per key column (MySQL's columns)."""
        from engine.system_schema import table_indexes
        target = node.args["target"]
        database = node.args.get("db").name if node.args.get("db") is not None else None
        table = self.catalog.table(database or ddl.database_of(target, self.database), target.name) \
            if not isinstance(target, exp.Table) else self._table(target)
        rows = [(table.name, str(int(not unique)), key, str(seq), column, "A", None, None, None,
                 "YES" if table.column(column).nullable else "", index_type, "", "", "YES")
                for key, unique, columns, index_type in table_indexes(table)
                for seq, column in enumerate(columns, start=1)]
        return ddl.text_result(["Table", "Non_unique", "Key_name", "Seq_in_index", "Column_name", "Collation",
                                "Cardinality", "Sub_part", "Packed", "Null", "Index_type", "Comment",
                                "Index_comment", "Visible"], rows)

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


def _like_filter(pattern: Optional[exp.Expression]):
    """A predicate on names for SHOW ... LIKE 'pattern' (MySQL: case-insensitive, % and _)."""
    if pattern is None:
        return lambda name: True
    import re
    text = pattern.name if isinstance(pattern, exp.Literal) else pattern.sql()
    regex = re.compile("".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in text),
                       re.IGNORECASE | re.DOTALL)
    return lambda name: regex.fullmatch(name) is not None


def _like_source(node: exp.Create) -> Optional[exp.Table]:
    """The table of CREATE TABLE ... LIKE t, or None."""
    properties = node.args.get("properties")
    for prop in (properties.expressions if properties is not None else ()):
        if isinstance(prop, exp.LikeProperty):
            return prop.this
    return None
