"""The catalog persisted in ``data_dir/catalog.json`` (databases, tables, columns, shard and sort keys),
and the optimizer's column statistics in ``data_dir/statistics.json`` (:class:`PersistentStatistics`).

The file carries a format version and (from version 2) a CRC32 (``files.write_checked_json``): a
damaged catalog raises :class:`StorageCorruptionError` naming it, never a raw KeyError; version 1
(plain JSON) is still read, newer versions are refused. Every catalog change rewrites the file atomically before the change returns, so a crash leaves
the old catalog or the new one. Table data directories whose table the catalog does not name (a crash
between CREATE's storage and its catalog entry, or between DROP's two steps) are removed on open.
"""
from __future__ import annotations

import dataclasses
import datetime
import decimal
import itertools
import logging
import threading
from pathlib import Path
from typing import Optional

import pyarrow as pa

import engine.catalog as catalog_module
from engine.catalog import Catalog, ColumnDef, IndexDef, TableDef, UniqueKey, ViewDef
from engine.errors import ExecutionError, StorageCorruptionError
from engine.storage.columnstore.files import read_checked_json, write_checked_json
from engine.types import SqlType

FORMAT = "canopy-catalog"
VERSION = 2                     # 2: under a CRC32
STATISTICS_FORMAT = "canopy-statistics"
STATISTICS_VERSION = 2          # 2: under a CRC32

log = logging.getLogger(__name__)


class PersistentCatalog(Catalog):
    def __init__(self, path: Path):
        super().__init__()
        self.path = Path(path)
        self._save_lock = threading.Lock()
        if self.path.exists():
            for name, tables, views in _load(self.path):
                Catalog.create_database(self, name)
                for table in tables:
                    Catalog.add_table(self, table)
                for view in views:
                    Catalog.add_view(self, view)
            _reserve_table_ids(max((t.table_id for t in self.all_tables()), default=0))

    def all_tables(self) -> list[TableDef]:
        return [t for db in self.databases() for t in self.tables(db)]

    def create_database(self, name: str, if_not_exists: bool = False) -> bool:
        with self._lock:
            created = super().create_database(name, if_not_exists)
            if created:
                self.save()
            return created

    def drop_database(self, name: str, if_exists: bool = False) -> list[TableDef]:
        with self._lock:
            dropped = super().drop_database(name, if_exists)
            self.save()
            return dropped

    def add_table(self, table: TableDef) -> None:
        with self._lock:
            super().add_table(table)
            self.save()

    def drop_table(self, database: str, name: str) -> TableDef:
        with self._lock:
            table = super().drop_table(database, name)
            self.save()
            return table

    def replace_tables(self, changes: list[tuple[TableDef, TableDef]]) -> None:
        with self._lock:
            super().replace_tables(changes)
            self.save()              # one atomic write: every change or none survives a crash

    def add_view(self, view: ViewDef, replace: bool = False) -> None:
        with self._lock:
            super().add_view(view, replace)
            self.save()

    def drop_view(self, database: str, name: str) -> ViewDef:
        with self._lock:
            view = super().drop_view(database, name)
            self.save()
            return view

    def save(self) -> None:
        with self._lock:
            document = {"format": FORMAT, "version": VERSION, "databases": [
                {"name": db, "tables": [_table_to_json(t) for t in self.tables(db)],
                 "views": [{"name": v.name, "sql": v.sql, "columns": list(v.columns)} for v in self.views(db)]}
                for db in self.databases()]}
        with self._save_lock:
            write_checked_json(self.path, document)


def _load(path: Path) -> list[tuple[str, list[TableDef], list[ViewDef]]]:
    document, checked = read_checked_json(path, "catalog")
    if document.get("format") != FORMAT:
        raise StorageCorruptionError(f"catalog {path} is corrupt: not a Canopy catalog", path)
    version = document.get("version")
    if not isinstance(version, int) or version > VERSION:
        raise ExecutionError(f"catalog {path} has format version {version}; this Canopy reads up to {VERSION}")
    if not checked and version > 1:
        raise StorageCorruptionError(f"catalog {path} is corrupt: version {version} without its checksum", path)
    try:
        return [(db["name"], [_table_from_json(t, db["name"]) for t in db["tables"]],
                 [ViewDef(db["name"], v["name"], v["sql"], tuple(v["columns"])) for v in db.get("views", ())])
                for db in document["databases"]]
    except (KeyError, TypeError, ValueError, decimal.InvalidOperation) as error:
        raise StorageCorruptionError(f"catalog {path} is corrupt: a table entry cannot be read ({error!r})",
                                     path) from None


def check_statistics_file(path: Path) -> Optional[dict]:
    """The statistics document (None: no file), checked: StorageCorruptionError when it is damaged."""
    try:
        document, checked = read_checked_json(path, "statistics file")
    except FileNotFoundError:
        return None
    version = document.get("version")
    if document.get("format") != STATISTICS_FORMAT or not isinstance(version, int) or version > STATISTICS_VERSION \
            or (not checked and version > 1) or not isinstance(document.get("columns"), list):
        raise StorageCorruptionError(f"statistics file {path} is corrupt: unknown format or version {version!r}",
                                     path)
    return document


def _table_to_json(table: TableDef) -> dict:
    return {"id": table.table_id, "name": table.name, "shard_key": list(table.shard_key),
            "sort_key": list(table.sort_key), "reference": table.reference,
            "unique_keys": [[k.name, list(k.columns)] for k in table.unique_keys],
            "auto_increment": table.auto_increment,
            "indexes": [[i.name, list(i.columns)] for i in table.indexes],
            "collated_placement": table.collated_placement,
            "columns": [{"name": c.name, "type": dataclasses.asdict(c.type), "nullable": c.nullable,
                         "has_default": c.has_default, "default": _value_to_json(c.default)}
                        for c in table.columns]}


def _table_from_json(data: dict, database: str) -> TableDef:
    columns = []
    for c in data["columns"]:
        sql_type = SqlType(**c["type"])
        columns.append(ColumnDef(c["name"], sql_type, c["nullable"], _value_from_json(c["default"], sql_type),
                                 c["has_default"]))
    return TableDef(database, data["name"], tuple(columns), tuple(data["shard_key"]), tuple(data["sort_key"]),
                    data["reference"], table_id=data["id"],
                    unique_keys=tuple(UniqueKey(name, tuple(cols)) for name, cols in data.get("unique_keys", ())),
                    auto_increment=data.get("auto_increment"),
                    indexes=tuple(IndexDef(name, tuple(cols)) for name, cols in data.get("indexes", ())),
                    # absent: the table's rows were placed by their raw shard key values
                    collated_placement=data.get("collated_placement", False))


def _value_to_json(value):
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, datetime.date):
        return value.isoformat()
    return value


def _value_from_json(value, sql_type: SqlType):
    if value is None:
        return None
    if sql_type.kind == "decimal":
        return decimal.Decimal(value)
    if sql_type.kind == "datetime":
        return datetime.datetime.fromisoformat(value)
    if sql_type.kind == "date":
        return datetime.date.fromisoformat(value)
    return value


def _reserve_table_ids(highest: int) -> None:
    """New tables of this process get ids above every persisted one (ids name data directories)."""
    current = next(catalog_module._table_ids)
    catalog_module._table_ids = itertools.count(max(current, highest + 1))


class PersistentStatistics:
    """Column statistics (``engine.stats.ColumnStats``: nulls, min, max, NDV, frequent values,
    histogram, text sample, runs) kept across restarts, so the first query after reopening a data
    directory plans from them instead of collecting them again (two passes over every partition of
    each column its estimates ask about: ~150 ms for 10M rows).

    ``engine.statistics.RunnerStatistics`` loads them when it starts and saves them whenever it
    collects or forgets some; they carry the row count they were collected at, and the 20% staleness
    rule applies after a reopen as before. A damaged file (its CRC32 fails) raises
    :class:`StorageCorruptionError` like any other damaged file of the data directory; an entry of
    a dropped table or column is skipped."""

    def __init__(self, path: Path, catalog: Catalog):
        self.path = Path(path)
        self.catalog = catalog
        self._lock = threading.Lock()

    def _columns(self) -> dict[tuple[int, str], ColumnDef]:
        return {(t.table_id, c.name.lower()): c for t in self.catalog.all_tables() for c in t.columns}

    def load(self) -> dict:
        from engine.stats import ColumnStats
        from engine.stats.histogram import Bucket

        document = check_statistics_file(self.path)
        if document is None:
            return {}
        try:
            columns = self._columns()
            out = {}
            for entry in document["columns"]:
                key = (entry["table"], entry["column"])
                column = columns.get(key)
                if column is None:
                    continue
                value = lambda v, t=column.type: _value_from_json(v, t)  # noqa: E731
                sample = entry.get("sample")
                out[key] = ColumnStats(
                    entry["rows"], entry["nulls"], entry["ndv"], value(entry["min"]), value(entry["max"]),
                    {value(v): n for v, n in entry["frequent"]},
                    tuple(Bucket(value(upper), rows, distinct) for upper, rows, distinct in entry["buckets"]),
                    None if sample is None else pa.array(sample, pa.string()),
                    runs=entry.get("runs"), descents=entry.get("descents"), partitions=entry.get("partitions", 1))
            return out
        except (ValueError, KeyError, TypeError, decimal.InvalidOperation) as error:
            log.warning("statistics %s ignored (collected again when needed): %s", self.path, error)
            return {}

    def save(self, stats: dict) -> None:
        columns = self._columns()
        entries = []
        for (table_id, name), st in stats.items():
            if (table_id, name) not in columns:
                continue
            entries.append({"table": table_id, "column": name, "rows": st.rows, "nulls": st.nulls, "ndv": st.ndv,
                            "min": _value_to_json(st.min), "max": _value_to_json(st.max),
                            "frequent": [[_value_to_json(v), n] for v, n in st.frequent.items()],
                            "buckets": [[_value_to_json(b.upper), b.rows, b.distinct] for b in st.buckets],
                            "sample": None if st.sample is None else st.sample.to_pylist(),
                            "runs": st.runs, "descents": st.descents, "partitions": st.partitions})
        document = {"format": STATISTICS_FORMAT, "version": STATISTICS_VERSION, "columns": entries}
        with self._lock:
            write_checked_json(self.path, document)
