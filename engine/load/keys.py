"""PRIMARY KEY and UNIQUE KEY enforcement, and the duplicate handling of INSERT IGNORE, REPLACE and
INSERT ... ON DUPLICATE KEY UPDATE.

A unique key contains the table's shard key (engine.sql.ddl refuses one that does not), so rows with
equal keys live on one partition. A check ships the new rows' distinct keys to every partition, which
semi-joins its stored key columns with them (Arrow's hash join, no per-row Python) and returns the keys
it already holds; the statement runs under the table's write lock (engine.transactions), so no other
writer adds a key between the check and the write. NULL never equals NULL: a key with a NULL column
never conflicts (MySQL). String columns compare under their collation, as MySQL's unique indexes do
('a' and 'A ' are one key under utf8mb4_general_ci): the joins run on their collation keys.

Deliberate differences from MySQL (docs/sql-semantics.md): a statement's rows are checked as a set,
not one after another: ``INSERT IGNORE`` keeps the first row of each key, ``REPLACE`` the last;
``ON DUPLICATE KEY UPDATE`` refuses two new rows with one key, and an update of a key column.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine import collation
from engine.catalog import TableDef, UniqueKey
from engine.core.collation_keys import collation_keys
from engine.errors import ConstraintError
from engine.storage.hash_index import index_name

MAX_WARNINGS = 64          # MySQL's max_error_count: SHOW WARNINGS lists at most this many
DUPLICATE_CODE = 1062      # MySQL's ER_DUP_ENTRY
INDEX_CHECK_KEYS = 1 << 16  # a check of at most this many keys looks them up in the hash index


def duplicate_message(key: UniqueKey, rows: pa.Table, index: int) -> str:
    """MySQL's wording: ``Duplicate entry '7-x' for key 'PRIMARY'`` (multi-column values joined by -)."""
    values = [rows.column(c)[index].as_py() for c in key.columns]
    return f"Duplicate entry '{'-'.join(str(v) for v in values)}' for key '{key.name}'"


def duplicate_error(key: UniqueKey, rows: pa.Table, mask: np.ndarray) -> ConstraintError:
    return ConstraintError(duplicate_message(key, rows, int(np.flatnonzero(mask)[0])))


def _valid(rows: pa.Table, key: UniqueKey) -> np.ndarray:
    """Rows whose key has no NULL (only those can conflict)."""
    valid = np.ones(rows.num_rows, dtype=bool)
    for column in key.columns:
        if rows.column(column).null_count:
            valid &= pc.is_valid(rows.column(column)).to_numpy(zero_copy_only=False)
    return valid


def _with_row_numbers(rows: pa.Table, key: UniqueKey, valid: np.ndarray) -> pa.Table:
    keys = rows.select(list(key.columns)).append_column("__row", pa.array(np.arange(rows.num_rows)))
    return keys.filter(pa.array(valid)) if not valid.all() else keys


def collations_of(table: TableDef) -> tuple[tuple[str, str], ...]:
    """(column, collation) of each string column of ``table``."""
    return tuple((c.name, c.type.collation or collation.DEFAULT) for c in table.columns if c.type.kind == "string")


def _keyed(data, collations: Sequence[tuple[str, str]]):
    """``data`` (a Table or RecordBatch) with each of its columns named in ``collations`` replaced by
    the column's collation keys: equal keys are equal values under the collation."""
    for name, collation_name in collations:
        index = data.schema.get_field_index(name)
        if index >= 0:
            data = data.set_column(index, name, collation_keys(data.column(index), collation_name))
    return data


def repeated(rows: pa.Table, key: UniqueKey, keep: str = "first", collations: Sequence = ()) -> np.ndarray:
    """True for a row whose key an earlier (``keep="first"``) or later (``"last"``) row of ``rows``
    has too (string columns named in ``collations`` compared under them)."""
    valid = _valid(rows, key)
    numbered = _keyed(_with_row_numbers(rows, key, valid), collations)
    if numbered.num_rows == 0:
        return np.zeros(rows.num_rows, dtype=bool)
    kept = numbered.group_by(list(key.columns), use_threads=False).aggregate(
        [("__row", "min" if keep == "first" else "max")]).column(-1).to_numpy()
    out = valid.copy()
    out[kept] = False
    return out


def existing(runner, table: TableDef, key: UniqueKey, rows: pa.Table) -> np.ndarray:
    """True for a row of ``rows`` whose key ``table`` already holds."""
    valid = _valid(rows, key)
    collations = collations_of(table)
    numbered = _keyed(_with_row_numbers(rows, key, valid), collations)
    if numbered.num_rows == 0 or runner.row_count(table) == 0:
        return np.zeros(rows.num_rows, dtype=bool)
    candidates = numbered.select(list(key.columns)).group_by(list(key.columns), use_threads=False).aggregate([])
    held = [t for t in runner.map_partitions(table, functools.partial(_held_keys, key.columns, candidates,
                                                                       collations))
            if t.num_rows]
    out = np.zeros(rows.num_rows, dtype=bool)
    if held:
        stored = pa.concat_tables(held)
        hits = numbered.join(stored, keys=list(key.columns), join_type="left semi", use_threads=False)
        out[hits.column("__row").to_numpy()] = True
    return out


def _held_keys(columns: Sequence[str], candidates: pa.Table, collations: Sequence, store) -> pa.Table:
    """On a partition: the ``candidates`` keys (collation keys of string columns) it stores (run on
    the leaf by map_partitions)."""
    # the first key column's values looked up in its hash index (engine.storage.hash_index): only
    # the segments holding one of them are read, not the partition
    bounds = [index_bound(columns[0], candidates.column(0), dict(collations).get(columns[0]))] \
        if candidates.num_rows <= INDEX_CHECK_KEYS else None
    batches = [b for b in store.scan(list(columns), bounds=bounds) if b.num_rows]
    if not batches:
        return candidates.schema.empty_table()
    stored = _keyed(pa.Table.from_batches(batches).cast(candidates.schema), collations)
    return stored.join(candidates, keys=list(columns), join_type="left semi", use_threads=False)


def index_bound(column: str, keys, collation_name: Optional[str]) -> tuple:
    """The scan bound that looks ``keys`` (values of ``column``; of a string column, its collation keys
    under ``collation_name``) up in the column's hash index. The plain index hashes utf8mb4_general_ci
    keys, which the keys of a general_ci, _bin or 0900_bin value hash alike to (a general_ci key is its
    own key; a _bin key is the value, trailing spaces dropped); a UCA column's index hashes 0900_ai_ci
    keys, which an _ai_ci key is and an _as_cs key begins with (engine.storage.hash_index). The index
    returns candidates; the semi-join on the keys decides."""
    if collation_name is None or collation.weighing(collation_name) not in ("uca", "uca_cs"):
        return column, "index", keys
    if collation.weighing(collation_name) == "uca_cs":       # its 0900_ai_ci part: up to the first NUL
        keys = pc.list_element(pc.split_pattern(keys, "\x00", max_splits=1), 0)
    return index_name(column, collation_name), "index", keys


def check_unique(runner, table: TableDef, rows: pa.Table) -> None:
    """Raise IntegrityError for the first row of ``rows`` whose key repeats in ``rows`` or exists."""
    for key in table.unique_keys:
        again = repeated(rows, key, collations=collations_of(table))
        if again.any():
            raise duplicate_error(key, rows, again)
        held = existing(runner, table, key, rows)
        if held.any():
            raise duplicate_error(key, rows, held)


def drop_duplicates(runner, table: TableDef, rows: pa.Table) -> tuple[pa.Table, list]:
    """INSERT IGNORE: the rows without those whose key exists or an earlier row has; a warning per
    dropped row (at most MAX_WARNINGS)."""
    warnings: list = []
    for key in table.unique_keys:
        drop = repeated(rows, key, collations=collations_of(table)) | existing(runner, table, key, rows)
        if drop.any():
            for index in np.flatnonzero(drop)[:MAX_WARNINGS - len(warnings)]:
                warnings.append(("Warning", DUPLICATE_CODE, duplicate_message(key, rows, int(index))))
            rows = rows.filter(pa.array(~drop))
    return rows, warnings


@dataclass(frozen=True)
class KeyMatcher:
    """Selects stored rows whose value of some key is among ``keys`` ((columns, their values) per
    key): a DELETE matcher for storage (see ``ColumnstorePartitionStore.prepare_delete``), pickled to
    Ray leaves."""

    keys: tuple[tuple[tuple[str, ...], pa.Table], ...]      # the values: collation keys of strings

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(c for columns, _ in self.keys for c in columns))

    bounds: tuple = ()
    collations: tuple = ()        # (column, collation) of the string columns

    def __call__(self, batch: pa.RecordBatch) -> np.ndarray:
        mask = np.zeros(batch.num_rows, dtype=bool)
        for columns, values in self.keys:
            stored = _keyed(pa.Table.from_batches([batch.select(list(columns))]).cast(values.schema), self.collations)
            stored = stored.append_column("__row", pa.array(np.arange(batch.num_rows)))
            hits = stored.join(values, keys=list(columns), join_type="left semi", use_threads=False)
            mask[hits.column("__row").to_numpy()] = True
        return mask


def matcher_for(table: TableDef, rows: pa.Table) -> KeyMatcher:
    """The stored rows that conflict with ``rows`` on any unique key."""
    collations = collations_of(table)
    return KeyMatcher(tuple((key.columns, _keyed(rows.select(list(key.columns)), collations))
                            for key in table.unique_keys), collations=collations)


def conflicts(runner, table: TableDef, rows: pa.Table) -> np.ndarray:
    """True for a row of ``rows`` whose value of some unique key exists."""
    out = np.zeros(rows.num_rows, dtype=bool)
    for key in table.unique_keys:
        out |= existing(runner, table, key, rows)
    return out


def replace_rows(runner, table: TableDef, rows: pa.Table) -> int:
    """REPLACE: delete the stored rows that conflict with ``rows`` and insert ``rows`` (the last of
    new rows with one key wins), in one statement. MySQL's count: rows inserted + rows deleted."""
    for key in table.unique_keys:
        later = repeated(rows, key, keep="last", collations=collations_of(table))
        if later.any():
            rows = rows.filter(pa.array(~later))
    if not conflicts(runner, table, rows).any():
        return runner.insert(table, rows)
    deleted = runner.delete_rows(table, matcher_for(table, rows), lambda _deleted: rows)
    return deleted + rows.num_rows


def upsert_rows(runner, table: TableDef, rows: pa.Table, update: Callable[[pa.Table, pa.Table], pa.Table]) -> int:
    """ON DUPLICATE KEY UPDATE: insert the rows without a conflict; replace each stored row a new row
    conflicts with by ``update(old rows, new rows)`` (aligned tables of the table's schema), in one
    statement. New rows sharing a key apply in order, as MySQL's do: the first inserts (or updates the
    stored row), the next updates what the first left. MySQL's count: 1 per row inserted, 2 per row
    changed, 0 per row left as it was."""
    waves = _waves(table, rows)
    hit = conflicts(runner, table, rows)
    counted = [0]

    def resolve(stored: pa.Table) -> pa.Table:
        """The rows that replace ``stored`` (the stored rows some new row conflicts with) and the new
        rows that insert, after applying every wave of new rows in order."""
        current, count = stored, 0
        for wave in waves:
            new = rows.take(pa.array(wave))
            old_index, new_index = _pairs(table, current, new) if current.num_rows else (np.zeros(0, int),) * 2
            before = current.take(pa.array(old_index))
            after = update(before, new.take(pa.array(new_index)))
            count += 2 * int(_differs(before, after).sum())
            inserted = np.ones(new.num_rows, dtype=bool)
            inserted[new_index] = False
            kept = np.ones(current.num_rows, dtype=bool)
            kept[old_index] = False
            count += int(inserted.sum())
            current = pa.concat_tables([current.filter(pa.array(kept)), after, new.filter(pa.array(inserted))])
        counted[0] = count
        return current

    if not hit.any():
        runner.insert(table, resolve(table.arrow_schema.empty_table()))
        return counted[0]

    def rewrite(deleted: list) -> pa.Table:
        return resolve(pa.Table.from_batches(deleted, schema=table.arrow_schema) if deleted
                       else table.arrow_schema.empty_table())

    runner.delete_rows(table, matcher_for(table, rows.filter(pa.array(hit))), rewrite)
    return counted[0]


def _waves(table: TableDef, rows: pa.Table) -> list[np.ndarray]:
    """``rows``' indexes in the order MySQL applies them, grouped: each group holds no two rows of one
    unique key, and a row comes after every earlier row it shares a key with. One group when the
    keys of ``rows`` are all distinct (the common case: one vectorised pass)."""
    collations = collations_of(table)
    remaining, waves = np.arange(rows.num_rows), []
    while len(remaining):
        part = rows.take(pa.array(remaining))
        later = np.zeros(len(remaining), dtype=bool)
        for key in table.unique_keys:
            later |= repeated(part, key, collations=collations)
        waves.append(remaining[~later])
        remaining = remaining[later]
    return waves


def _pairs(table: TableDef, old: pa.Table, new: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """(old row, new row) index pairs: each stored row with the new row it conflicts with, by the
    first unique key on which it does."""
    old_index, new_index = [], []
    paired = np.zeros(old.num_rows, dtype=bool)
    collations = collations_of(table)
    for key in table.unique_keys:
        left = _keyed(old.select(list(key.columns)), collations).append_column("__old", pa.array(np.arange(old.num_rows)))
        left = left.filter(pa.array(~paired))
        right = _keyed(new.select(list(key.columns)), collations).append_column("__new", pa.array(np.arange(new.num_rows)))
        joined = left.join(right, keys=list(key.columns), join_type="inner", use_threads=False)
        o, n = joined.column("__old").to_numpy(), joined.column("__new").to_numpy()
        o, first = np.unique(o, return_index=True)
        old_index.append(o)
        new_index.append(n[first])
        paired[o] = True
    return np.concatenate(old_index), np.concatenate(new_index)


def _differs(before: pa.Table, after: pa.Table) -> np.ndarray:
    """True for a row whose values changed (NULL equals NULL here)."""
    out = np.zeros(before.num_rows, dtype=bool)
    for a, b in zip(before.columns, after.columns):
        same = pc.or_kleene(pc.equal(a, b), pc.and_(pc.is_null(a), pc.is_null(b))).fill_null(False)
        out |= ~same.to_numpy(zero_copy_only=False)
    return out


class KeyCheckedLoad:
    """A runner's LoadWriter for a table with unique keys: the loaded rows' key columns are kept as
    they go by, and checked (within the load and against the table) before the commit."""

    def __init__(self, writer, runner, table: TableDef):
        self._writer = writer
        self._runner = runner
        self._table = table
        self._columns = list(dict.fromkeys(c for key in table.unique_keys for c in key.columns))
        self._keys: list[pa.Table] = []

    def add(self, data) -> None:
        table = data if isinstance(data, pa.Table) else pa.Table.from_batches([data])
        self._keys.append(table.select(self._columns))
        self._writer.add(data)

    def savepoint(self):
        return self._writer.savepoint(), len(self._keys)

    def rollback_to(self, savepoint) -> None:
        inner, count = savepoint
        self._writer.rollback_to(inner)
        del self._keys[count:]

    def commit(self, on_commit=None) -> int:
        if self._keys:
            check_unique(self._runner, self._table, pa.concat_tables(self._keys))
        self._keys = []
        return self._writer.commit(on_commit)

    def abort(self) -> None:
        self._keys = []
        self._writer.abort()

    def __getattr__(self, name):
        return getattr(self._writer, name)


def begin_load(runner, table: TableDef):
    """``runner.begin_load(table)``, its rows' keys checked at commit when ``table`` has unique keys."""
    writer = runner.begin_load(table)
    return KeyCheckedLoad(writer, runner, table) if table.unique_keys else writer


def updates_key(table: TableDef, columns: Optional[Sequence[str]]) -> bool:
    """Whether assigning ``columns`` can change a unique key's value."""
    names = {c.lower() for c in columns or ()}
    return any(c.lower() in names for key in table.unique_keys for c in key.columns)
