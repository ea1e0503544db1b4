"""The catalog: databases, tables, columns, shard and sort keys.

The catalog lives on the aggregator. Leaves know only table ids and partitions; they never see a
TableDef's SQL-level details beyond the Arrow schema they store.
"""
from __future__ import annotations

import itertools
import threading
from dataclasses import dataclass, field
from typing import Optional

import pyarrow as pa

from engine.errors import BindError, unknown_name_error
from engine.types import SqlType

_table_ids = itertools.count(1)


@dataclass(frozen=True)
class ColumnDef:
    name: str
    type: SqlType
    nullable: bool = True
    default: object = None          # a Python value, already of the column's type
    has_default: bool = False


def new_table_id() -> int:
    return next(_table_ids)


@dataclass(frozen=True)
class UniqueKey:
    """A PRIMARY KEY (``name`` "PRIMARY") or UNIQUE KEY, enforced on every write (engine.load.keys)."""

    name: str
    columns: tuple[str, ...]


@dataclass(frozen=True)
class IndexDef:
    """A secondary index (``KEY`` / ``INDEX`` / ``CREATE INDEX``): a hash index on its first column,
    built per stored segment (engine.storage.hash_index) and used by equality lookups."""

    name: str
    columns: tuple[str, ...]


@dataclass(frozen=True)
class TableDef:
    """A table. ``shard_key`` empty + not reference = keyless (rows spread evenly over partitions).
    ``unique_keys``: the PRIMARY KEY first, then UNIQUE keys; each contains the shard key (as in
    SingleStore), so a partition checks a key on its own rows. ``auto_increment``: that column's name."""

    database: str
    name: str
    columns: tuple[ColumnDef, ...]
    shard_key: tuple[str, ...] = ()
    sort_key: tuple[str, ...] = ()
    reference: bool = False
    table_id: int = field(default_factory=lambda: next(_table_ids))
    unique_keys: tuple[UniqueKey, ...] = ()
    auto_increment: Optional[str] = None
    indexes: tuple[IndexDef, ...] = ()
    # A row's partition is the hash of its shard key with string columns' collation keys in place of
    # their values (cluster/placement.py), so a join on a string shard key is colocated as the binder
    # keys it. False for tables whose rows were placed by the raw values (catalogs written before).
    collated_placement: bool = True

    def shard_key_collations(self) -> tuple[Optional[str], ...]:
        """Per shard key column, the collation whose keys place its rows (a string column's own, when
        ``collated_placement``), or None where the value itself is hashed."""
        from engine import collation        # engine.collation imports nothing of the catalog's
        return tuple((self.column(c).type.collation or collation.DEFAULT)
                     if self.collated_placement and self.column(c).type.kind == "string" else None
                     for c in self.shard_key)

    @property
    def indexed_columns(self) -> tuple[str, ...]:
        """The columns a hash index answers equality lookups on: the first column of each unique key
        and secondary index (an index on (a, b) finds rows by a)."""
        firsts = [k.columns[0] for k in self.unique_keys] + [i.columns[0] for i in self.indexes]
        return tuple(dict.fromkeys(firsts))

    @property
    def index_names(self) -> tuple[str, ...]:
        """The hash indexes a stored segment gets when written, one per indexed column: a string
        column under a UCA collation (utf8mb4_0900_*) gets its UCA index, which hashes 0900_ai_ci keys
        (strings equal under UCA may key apart under general_ci: 'e' + U+0301 and 'é');
        engine.storage.hash_index.index_name."""
        from engine.storage.hash_index import index_name
        return tuple(index_name(c, self.column(c).type.collation if self.column(c).type.kind == "string" else None)
                     for c in self.indexed_columns)

    @property
    def primary_key(self) -> tuple[str, ...]:
        return self.unique_keys[0].columns if self.unique_keys and self.unique_keys[0].name == "PRIMARY" else ()

    @property
    def qualified_name(self) -> str:
        return f"{self.database}.{self.name}"

    def column(self, name: str) -> ColumnDef:
        lowered = name.lower()
        for column in self.columns:
            if column.name.lower() == lowered:
                return column
        raise unknown_name_error("column", name, [c.name for c in self.columns], f"table {self.name}")

    def column_index(self, name: str) -> int:
        lowered = name.lower()
        for i, column in enumerate(self.columns):
            if column.name.lower() == lowered:
                return i
        raise unknown_name_error("column", name, [c.name for c in self.columns], f"table {self.name}")

    @property
    def arrow_schema(self) -> pa.Schema:
        return pa.schema([pa.field(c.name, c.type.to_arrow(), nullable=c.nullable) for c in self.columns])

    @property
    def distribution(self) -> str:
        if self.reference:
            return "reference"
        return "sharded" if self.shard_key else "keyless"


@dataclass(frozen=True)
class ViewDef:
    """A view: its query as MySQL text with every table name qualified by its database (so it means
    the same from any current database), expanded by the binder wherever the view is read."""

    database: str
    name: str
    sql: str
    columns: tuple[str, ...] = ()     # CREATE VIEW v (a, b): the names of its columns; () the query's

    @property
    def qualified_name(self) -> str:
        return f"{self.database}.{self.name}"


class Catalog:
    """Databases and their tables and views (one namespace). Names are case-insensitive, stored as given."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._databases: dict[str, dict[str, TableDef]] = {}
        self._database_names: dict[str, str] = {}
        self._views: dict[str, dict[str, ViewDef]] = {}      # database (lower) -> name (lower) -> view
        # information_schema's system tables by lower-case name (engine.system_schema.SystemTable): the
        # binder plans them as the rows their function returns at bind time; they have no storage
        self.system_tables: dict = {}

    def system_table(self, database: str, name: str):
        """The system table ``database.name`` (a SystemTable), or None when it is not one."""
        if database.lower() != "information_schema":
            return None
        return self.system_tables.get(name.lower())

    # databases ---------------------------------------------------------------------------------
    def create_database(self, name: str, if_not_exists: bool = False) -> bool:
        with self._lock:
            if name.lower() in self._databases:
                if if_not_exists:
                    return False
                raise BindError(f"database {name!r} already exists")
            self._databases[name.lower()] = {}
            self._database_names[name.lower()] = name
            return True

    def drop_database(self, name: str, if_exists: bool = False) -> list[TableDef]:
        with self._lock:
            if name.lower() not in self._databases:
                if if_exists:
                    return []
                raise unknown_name_error("database", name, self.databases())
            tables = list(self._databases.pop(name.lower()).values())
            del self._database_names[name.lower()]
            self._views.pop(name.lower(), None)
            return tables

    def databases(self) -> list[str]:
        return sorted(self._database_names.values())

    def has_database(self, name: str) -> bool:
        return name.lower() in self._databases

    def _db(self, database: str) -> dict[str, TableDef]:
        try:
            return self._databases[database.lower()]
        except KeyError:
            raise unknown_name_error("database", database, self.databases()) from None

    # tables ------------------------------------------------------------------------------------
    def add_table(self, table: TableDef) -> None:
        with self._lock:
            tables = self._db(table.database)
            if table.name.lower() in tables:
                raise BindError(f"table {table.name!r} already exists in database {table.database!r}")
            if self.find_view(table.database, table.name) is not None:
                raise BindError(f"{table.name!r} is a view in database {table.database!r}")
            tables[table.name.lower()] = table

    def replace_tables(self, changes: list[tuple[TableDef, TableDef]]) -> None:
        """ALTER TABLE / RENAME TABLE: each (old, new) definition swapped, all at once (a new name
        must be free, apart from names the same call frees)."""
        with self._lock:
            for old, _ in changes:
                self.table(old.database, old.name)         # raises for an unknown table
            freed = {(o.database.lower(), o.name.lower()) for o, _ in changes}
            for _, new in changes:
                key = (new.database.lower(), new.name.lower())
                if key not in freed and (self.find_table(new.database, new.name) is not None
                                         or self.find_view(new.database, new.name) is not None):
                    raise BindError(f"table {new.name!r} already exists in database {new.database!r}")
            for old, _ in changes:
                self._db(old.database).pop(old.name.lower())
            for _, new in changes:
                self._db(new.database)[new.name.lower()] = new

    def drop_table(self, database: str, name: str) -> TableDef:
        with self._lock:
            tables = self._db(database)
            if name.lower() not in tables:
                raise unknown_name_error("table", name, [t.name for t in tables.values()])
            return tables.pop(name.lower())

    def find_table(self, database: str, name: str) -> Optional[TableDef]:
        return self._db(database).get(name.lower())

    def table(self, database: str, name: str) -> TableDef:
        found = self.find_table(database, name)
        if found is None:
            raise unknown_name_error("table", name, [t.name for t in self._db(database).values()])
        return found

    def tables(self, database: str) -> list[TableDef]:
        return sorted(self._db(database).values(), key=lambda t: t.name.lower())

    # views ---------------------------------------------------------------------------------------
    def add_view(self, view: ViewDef, replace: bool = False) -> None:
        with self._lock:
            if view.name.lower() in self._db(view.database):
                raise BindError(f"{view.name!r} is a table in database {view.database!r}")
            views = self._views.setdefault(view.database.lower(), {})
            if view.name.lower() in views and not replace:
                raise BindError(f"view {view.name!r} already exists in database {view.database!r}")
            views[view.name.lower()] = view

    def drop_view(self, database: str, name: str) -> ViewDef:
        with self._lock:
            views = self._views.get(database.lower(), {})
            if name.lower() not in views:
                self._db(database)             # an unknown database is named as such
                raise unknown_name_error("view", name, [v.name for v in views.values()])
            return views.pop(name.lower())

    def find_view(self, database: str, name: str) -> Optional[ViewDef]:
        """The view ``database.name``, None when there is none (or no such database)."""
        return getattr(self, "_views", {}).get(database.lower(), {}).get(name.lower())

    def views(self, database: str) -> list[ViewDef]:
        self._db(database)
        return sorted(getattr(self, "_views", {}).get(database.lower(), {}).values(), key=lambda v: v.name.lower())
