"""``information_schema``: system tables computed from live state when a statement reads them.

A system table is a name, its columns and a function returning its rows *now* (catalog metadata,
the sessions of this cluster, the pipelines' progress). The binder resolves
``information_schema.<name>`` through :meth:`engine.catalog.Catalog.system_table` and plans it as an
inline ``Values`` relation of those rows, so a query over it filters, joins and aggregates like any
other, on both runners, and nothing is materialized into storage. The rows are metadata (one per
table, column or session), never table data.

What registers here: :func:`install` (once per cluster, from the first session) adds the MySQL tables
clients and tools read on connect — ``SCHEMATA``, ``TABLES``, ``COLUMNS``, ``STATISTICS``, ``VIEWS``,
``KEY_COLUMN_USAGE``, ``PROCESSLIST`` — and the pipelines' ``PIPELINES`` / ``PIPELINES_FILES``.
``SHOW FULL TABLES`` and ``SHOW INDEX`` answer from the same functions.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from engine import collation
from engine.catalog import Catalog, ColumnDef, TableDef
from engine.types import BIGINT, DATETIME, TEXT, SqlType, integer_range

DATABASE = "information_schema"


@dataclass(frozen=True)
class SystemTable:
    name: str
    columns: tuple[ColumnDef, ...]
    rows: Callable[[], list[tuple]]          # the rows as of the call, in column order

    def definition(self) -> TableDef:
        return TableDef(DATABASE, self.name, self.columns, reference=True, table_id=0)


def _columns(*spec: tuple[str, SqlType]) -> tuple[ColumnDef, ...]:
    return tuple(ColumnDef(name, sql_type) for name, sql_type in spec)


def install(catalog: Catalog, runner) -> None:
    """Register the system tables of ``runner``'s cluster (idempotent: the first session does it)."""
    if catalog.system_tables:
        return
    if not catalog.has_database(DATABASE):
        catalog.create_database(DATABASE, if_not_exists=True)
    for table in _tables(catalog, runner):
        catalog.system_tables[table.name.lower()] = table


def _tables(catalog: Catalog, runner) -> list[SystemTable]:
    from engine.pipelines.system_tables import FILES_COLUMNS, PIPELINES_COLUMNS, file_rows, pipeline_rows
    from engine.sessions import processlist_rows, registry_of
    sessions = registry_of(runner)
    return [
        SystemTable("SCHEMATA", _columns(("CATALOG_NAME", TEXT), ("SCHEMA_NAME", TEXT),
                                         ("DEFAULT_CHARACTER_SET_NAME", TEXT), ("DEFAULT_COLLATION_NAME", TEXT),
                                         ("SQL_PATH", TEXT)),
                    lambda: [("def", d, "utf8mb4", "utf8mb4_general_ci", None) for d in catalog.databases()]),
        SystemTable("TABLES", _columns(("TABLE_CATALOG", TEXT), ("TABLE_SCHEMA", TEXT), ("TABLE_NAME", TEXT),
                                       ("TABLE_TYPE", TEXT), ("ENGINE", TEXT), ("VERSION", BIGINT),
                                       ("ROW_FORMAT", TEXT), ("TABLE_ROWS", BIGINT), ("CREATE_TIME", DATETIME),
                                       ("TABLE_COLLATION", TEXT), ("TABLE_COMMENT", TEXT),
                                       ("DISTRIBUTION", TEXT)),
                    lambda: [("def", d, name, kind, engine, 10, "Fixed", None, None, "utf8mb4_general_ci", "",
                              distribution)
                             for d, name, kind, engine, distribution in listed_tables(catalog)]),
        SystemTable("COLUMNS", _columns(("TABLE_CATALOG", TEXT), ("TABLE_SCHEMA", TEXT), ("TABLE_NAME", TEXT),
                                        ("COLUMN_NAME", TEXT), ("ORDINAL_POSITION", BIGINT),
                                        ("COLUMN_DEFAULT", TEXT), ("IS_NULLABLE", TEXT), ("DATA_TYPE", TEXT),
                                        ("CHARACTER_MAXIMUM_LENGTH", BIGINT), ("NUMERIC_PRECISION", BIGINT),
                                        ("NUMERIC_SCALE", BIGINT), ("DATETIME_PRECISION", BIGINT),
                                        ("CHARACTER_SET_NAME", TEXT), ("COLLATION_NAME", TEXT),
                                        ("COLUMN_TYPE", TEXT), ("COLUMN_KEY", TEXT), ("EXTRA", TEXT),
                                        ("COLUMN_COMMENT", TEXT)),
                    lambda: column_rows(catalog)),
        SystemTable("STATISTICS", _columns(("TABLE_CATALOG", TEXT), ("TABLE_SCHEMA", TEXT), ("TABLE_NAME", TEXT),
                                           ("NON_UNIQUE", BIGINT), ("INDEX_SCHEMA", TEXT), ("INDEX_NAME", TEXT),
                                           ("SEQ_IN_INDEX", BIGINT), ("COLUMN_NAME", TEXT), ("COLLATION", TEXT),
                                           ("CARDINALITY", BIGINT), ("SUB_PART", BIGINT), ("PACKED", TEXT),
                                           ("NULLABLE", TEXT), ("INDEX_TYPE", TEXT), ("COMMENT", TEXT),
                                           ("INDEX_COMMENT", TEXT)),
                    lambda: [("def", t.database, t.name, int(not unique), t.database, key, seq, column, "A",
                              None, None, None, "YES" if t.column(column).nullable else "", index_type, "", "")
                             for t in all_tables(catalog)
                             for key, unique, columns, index_type in table_indexes(t)
                             for seq, column in enumerate(columns, start=1)]),
        SystemTable("VIEWS", _columns(("TABLE_CATALOG", TEXT), ("TABLE_SCHEMA", TEXT), ("TABLE_NAME", TEXT),
                                      ("VIEW_DEFINITION", TEXT), ("CHECK_OPTION", TEXT), ("IS_UPDATABLE", TEXT),
                                      ("DEFINER", TEXT), ("SECURITY_TYPE", TEXT), ("CHARACTER_SET_CLIENT", TEXT),
                                      ("COLLATION_CONNECTION", TEXT)),
                    lambda: [("def", d, name, definition, "NONE", "NO", "", "DEFINER", "utf8mb4",
                              "utf8mb4_general_ci") for d, name, definition in view_definitions(catalog)]),
        SystemTable("KEY_COLUMN_USAGE", _columns(("CONSTRAINT_CATALOG", TEXT), ("CONSTRAINT_SCHEMA", TEXT),
                                                 ("CONSTRAINT_NAME", TEXT), ("TABLE_CATALOG", TEXT),
                                                 ("TABLE_SCHEMA", TEXT), ("TABLE_NAME", TEXT), ("COLUMN_NAME", TEXT),
                                                 ("ORDINAL_POSITION", BIGINT),
                                                 ("POSITION_IN_UNIQUE_CONSTRAINT", BIGINT),
                                                 ("REFERENCED_TABLE_SCHEMA", TEXT), ("REFERENCED_TABLE_NAME", TEXT),
                                                 ("REFERENCED_COLUMN_NAME", TEXT)),
                    lambda: [("def", t.database, key, "def", t.database, t.name, column, seq, None, None, None, None)
                             for t in all_tables(catalog)
                             for key, unique, columns, _ in table_indexes(t) if unique
                             for seq, column in enumerate(columns, start=1)]),
        SystemTable("PROCESSLIST", _columns(("ID", BIGINT), ("USER", TEXT), ("HOST", TEXT), ("DB", TEXT),
                                            ("COMMAND", TEXT), ("TIME", BIGINT), ("STATE", TEXT), ("INFO", TEXT)),
                    lambda: processlist_rows(sessions)),
        SystemTable("PIPELINES", _columns(*PIPELINES_COLUMNS), lambda: pipeline_rows(runner)),
        SystemTable("PIPELINES_FILES", _columns(*FILES_COLUMNS), lambda: file_rows(runner)),
    ]


# --- catalog metadata shared by the tables above and the SHOW statements ----------------------------
def all_tables(catalog: Catalog) -> list[TableDef]:
    """The user tables of every database (system tables and the pipelines' internal ones excluded)."""
    return [t for d in catalog.databases() if d.lower() != DATABASE for t in catalog.tables(d)]


def listed_tables(catalog: Catalog) -> list[tuple[str, str, str, str, str]]:
    """(database, name, TABLE_TYPE, ENGINE, distribution) of every table, view and system table."""
    rows = [(t.database, t.name, "BASE TABLE", "Columnstore", t.distribution) for t in all_tables(catalog)]
    rows += [(d, name, "VIEW", None, None) for d, name, _ in view_definitions(catalog)]
    rows += [(DATABASE, t.name, "SYSTEM VIEW", "Memory", "reference") for t in catalog.system_tables.values()]
    return rows


def view_definitions(catalog: Catalog) -> list[tuple[str, str, str]]:
    """(database, name, definition) of each view, where the catalog keeps views."""
    views = getattr(catalog, "views", None)
    if views is None:
        return []
    return [(v.database, v.name, getattr(v, "sql", "")) for d in catalog.databases() for v in views(d)]


def table_indexes(table: TableDef) -> list[tuple[str, bool, tuple[str, ...], str]]:
    """(name, unique, columns, INDEX_TYPE) of each key of ``table``, as SHOW INDEX lists them:
    PRIMARY and UNIQUE keys where the table declares them, the shard key, the sort key."""
    out: list[tuple[str, bool, tuple[str, ...], str]] = []
    primary = tuple(getattr(table, "primary_key", ()) or ())
    if primary:
        out.append(("PRIMARY", True, primary, "HASH"))
    for key in getattr(table, "unique_keys", ()) or ():
        name, columns = (key.name, tuple(key.columns)) if hasattr(key, "columns") else (None, tuple(key))
        if primary and name == "PRIMARY":
            continue                # listed above (unique_keys holds the primary key first)
        out.append((name or columns[0], True, columns, "HASH"))
    for index in getattr(table, "indexes", ()) or ():
        out.append((index.name, False, tuple(index.columns), "HASH"))
    if table.shard_key:
        out.append(("__SHARDKEY", False, tuple(table.shard_key), "METADATA_ONLY"))
    if table.sort_key:
        out.append(("__SORTKEY", False, tuple(table.sort_key), "CLUSTERED COLUMNSTORE"))
    return out


def column_rows(catalog: Catalog) -> list[tuple]:
    rows = []
    for table in all_tables(catalog):
        keys = {c.lower(): kind for name, unique, columns, _ in reversed(table_indexes(table))
                for c in columns for kind in ["PRI" if name == "PRIMARY" else "UNI" if unique else "MUL"]}
        for position, column in enumerate(table.columns, start=1):
            t = column.type
            is_string = t.kind == "string"
            rows.append(("def", table.database, table.name, column.name, position,
                         None if not column.has_default or column.default is None else str(column.default),
                         "YES" if column.nullable else "NO", t.name.split()[0].lower(),
                         (t.length or 65535) if is_string else None,
                         (t.precision if t.kind == "decimal" else _int_digits(t)) if t.is_numeric else None,
                         (t.scale if t.kind == "decimal" else 0 if t.kind == "int" else None) if t.is_numeric
                         else None,
                         0 if t.kind == "datetime" else None,
                         collation.charset_of(t.collation) if is_string else None,
                         (t.collation or collation.DEFAULT) if is_string else None,
                         str(t).lower(), keys.get(column.name.lower(), ""), "", ""))
    return rows


def _int_digits(t: SqlType):
    bounds = integer_range(t)
    if bounds is not None:              # MySQL's NUMERIC_PRECISION: the digits of the declared range
        return len(str(bounds[1]))
    return {32: 12, 64: 22}.get(t.bits)
