"""Write statements of a session: INSERT, LOAD DATA, TRUNCATE (DELETE and UPDATE: changes.py).

A mixin of :class:`engine.session.Session`. Every write builds the complete new data first and hands it
to the runner, which makes all of it visible at once or none of it.
"""
from __future__ import annotations

import contextlib
import os

from typing import Optional

import pyarrow as pa
from sqlglot import exp

from engine.errors import BindError, UnsupportedError
from engine.result import Result
from engine.load import keys
from engine.sql import auto_increment, dml
from engine.exec.answer import SpilledAnswer
from engine.sql.handlers.spilled_insert import insert_spilled
from engine.sql.query import run_query


@contextlib.contextmanager
def data_change(session, strict: bool = True):
    """Around an INSERT or UPDATE: x / 0 is MySQL's 'Division by 0' error when the session's sql_mode
    says so (strict mode with ERROR_FOR_DIVISION_BY_ZERO, the default), NULL otherwise; a CAST past its
    type's range is an error (strict mode), where a SELECT clips it with a warning."""
    from engine.plan.bind_context import strict_writes
    from engine.plan.binder import strict_division
    from engine.sql.sql_modes import divides_strictly
    token = strict_division.set(divides_strictly(str(session.variables["sql_mode"])))
    # strict mode: a CAST past its range fails, not clips (INSERT IGNORE: it clips and warns, as MariaDB)
    writes = strict_writes.set(strict)
    try:
        yield
    finally:
        strict_writes.reset(writes)
        strict_division.reset(token)


class WriteStatements:
    def _stmt_Insert(self, node: exp.Insert, statement) -> Result:
        """INSERT [IGNORE], REPLACE (parsed as INSERT with alternative REPLACE), INSERT ... ON DUPLICATE
        KEY UPDATE; the rows are checked against the table's unique keys (engine.load.keys)."""
        with data_change(self, strict=not node.args.get("ignore")):
            return self._insert(node)

    def _insert(self, node: exp.Insert) -> Result:
        _refuse_unknown_clauses(node, "INSERT", {"this", "expression", "ignore", "conflict", "alternative"})
        conflict = node.args.get("conflict")
        mode = "replace" if node.args.get("alternative") == "REPLACE" else \
            "update" if conflict is not None else "ignore" if node.args.get("ignore") else "error"
        if node.args.get("ignore") and mode != "ignore":
            raise UnsupportedError("INSERT IGNORE with ON DUPLICATE KEY UPDATE")
        if conflict is not None and (not conflict.args.get("duplicate") or conflict.args.get("constraint")
                                     or str(conflict.args.get("action") or "").upper() != "UPDATE"):
            raise UnsupportedError(f"{conflict.sql(dialect='mysql')[:40]} (only ON DUPLICATE KEY UPDATE)")
        target = node.this
        names = None
        if isinstance(target, exp.Schema):
            names = [e.name for e in target.expressions]
            target = target.this
        table = self._table(target)
        columns = dml.target_columns(table, names)
        source = node.expression
        alias = source.args.get("alias") if isinstance(source, exp.Values) else None
        if alias is not None and alias.columns:
            raise UnsupportedError("INSERT ... AS alias(columns): name the row alone (AS new) and use new.column")
        if isinstance(source, exp.Values):
            from engine.plan.binder import Binder
            values, _ = Binder(self.catalog, self.database).bind_values(source)
            for row_number, row in enumerate(values.rows, start=1):
                if len(row) != len(columns):
                    raise BindError(f"column count ({len(columns)}) doesn't match value count "
                                    f"({len(row)}) at row {row_number}")
            types = [f.type for f in values.fields]
            data = dml.rows_to_table(values.rows, types)
        else:
            planned = self._plan(source)
            # a plain INSERT's SELECT may stay on disk past memory_limit and go in a batch at a time
            # (IGNORE / REPLACE / ON DUPLICATE KEY UPDATE and AUTO_INCREMENT work on the rows whole)
            streams = mode == "error" and table.auto_increment is None
            selected = run_query(planned, self.runner, spill_answer=streams and "INSERT ... SELECT")
            data, selected_warnings = selected.table, list(selected.warnings or [])
            types = [f.type for f in planned.fields]
            if isinstance(data, SpilledAnswer):
                count = insert_spilled(self.runner, table, data, lambda rows, first: dml.conform_to_table(
                    rows, types, table, columns, first_row=first))
                return Result(None, rowcount=count, warnings=selected_warnings)
        update = self._on_duplicate(table, conflict, alias.name if alias is not None else None) \
            if mode == "update" else None
        generated = None
        if table.auto_increment is not None:
            data, types, columns, generated = auto_increment.fill(self.runner, table, data, types, columns)
        rows = dml.conform_to_table(data, types, table, columns)
        warnings: list = [] if isinstance(source, exp.Values) else selected_warnings   # (IGNORE's CASTs)
        if not table.unique_keys:         # no key, no duplicate: IGNORE, REPLACE and the UPDATE are moot
            count = self.runner.insert(table, rows)
        elif mode == "error":
            keys.check_unique(self.runner, table, rows)
            count = self.runner.insert(table, rows)
        elif mode == "ignore":
            rows, dropped = keys.drop_duplicates(self.runner, table, rows)
            warnings = warnings + dropped
            count = self.runner.insert(table, rows)
        elif mode == "replace":
            count = keys.replace_rows(self.runner, table, rows)
        else:
            count = keys.upsert_rows(self.runner, table, rows, update)
        if generated is not None:
            self.last_insert_id = generated
        return Result(None, rowcount=count, warnings=warnings, last_insert_id=generated)

    def _on_duplicate(self, table, conflict: exp.OnConflict, alias: Optional[str]):
        """ON DUPLICATE KEY UPDATE's assignments as ``update(old rows, new rows) -> rows``: a column
        names the stored row's value, ``VALUES(column)`` or ``alias.column`` the new row's."""
        from engine.exec.evaluate import evaluate_array
        from engine.plan.binder import Binder, ExprContext
        from engine.plan.logical import Field
        from engine.plan.scope import Relation, Scope

        new_name = alias or "__new_row"
        old_fields = [Field(f"old{i}", c.name, c.type, c.nullable) for i, c in enumerate(table.columns)]
        new_fields = [Field(f"new{i}", c.name, c.type, c.nullable) for i, c in enumerate(table.columns)]
        # the new row in the enclosing scope: an unqualified name is the stored row's column
        scope = Scope([Relation(table.name, old_fields)], parent=Scope([Relation(new_name, new_fields)]))
        binder = Binder(self.catalog, self.database)

        def new_value(n: exp.Expression) -> exp.Expression:
            if isinstance(n, exp.Anonymous) and n.name.upper() == "VALUES":
                if len(n.expressions) != 1:
                    raise BindError("VALUES() in ON DUPLICATE KEY UPDATE takes one column name")
                return exp.column(n.expressions[0].name, table=new_name)
            return n

        assigned = {}
        for item in conflict.expressions:
            if not isinstance(item, exp.EQ) or not isinstance(item.this, exp.Column):
                raise UnsupportedError(f"ON DUPLICATE KEY UPDATE {item.sql(dialect='mysql')[:40]}")
            column = table.column(item.this.name)
            if keys.updates_key(table, [column.name]):
                raise UnsupportedError(f"ON DUPLICATE KEY UPDATE of key column {column.name!r}")
            assigned[column.name] = binder.bind_expr(item.expression.transform(new_value),
                                                     ExprContext(scope, clause="ON DUPLICATE KEY UPDATE"))

        def update(old: pa.Table, new: pa.Table) -> pa.Table:
            both = pa.Table.from_arrays([*old.columns, *new.columns],
                                        names=[f.id for f in old_fields + new_fields]).combine_chunks()
            batch = both.to_batches()[0] if both.num_rows else pa.RecordBatch.from_pylist([], schema=both.schema)
            arrays = [evaluate_array(assigned[c.name], batch) if c.name in assigned else batch.column(i)
                      for i, c in enumerate(table.columns)]
            types = [assigned[c.name].type if c.name in assigned else c.type for c in table.columns]
            values = pa.Table.from_arrays(arrays, names=[f"c{i}" for i in range(len(arrays))])
            return dml.conform_to_table(values, types, table, list(table.columns))

        return update

    def _load_data(self, statement, confined: bool = True) -> Result:
        """``confined``: the file is the user's path, read only inside ``load_dir``; False for the copy
        of a client's file that the MySQL wire server received (LOAD DATA LOCAL INFILE)."""
        from engine.load.loader import run_load
        database = statement.database or self.database
        if database is None:
            raise BindError("no database selected; run USE <database> first")
        table = self.catalog.table(database, statement.table)
        if statement.duplicates and table.unique_keys:
            raise UnsupportedError(f"LOAD DATA ... {statement.duplicates} into a table with a unique key "
                                   f"(use INSERT {'IGNORE' if statement.duplicates == 'IGNORE' else 'REPLACE'} "
                                   f"... SELECT from a staging table)")
        if table.auto_increment is not None:
            raise UnsupportedError(f"LOAD DATA into a table with an AUTO_INCREMENT column ({table.auto_increment})")
        # the received copy lies alone in a private directory: that directory is its load directory
        load_dir = self.load_dir if confined else os.path.dirname(statement.path)
        outcome = run_load(statement, table, self.runner, load_dir=load_dir, progress=self.progress)
        return Result(None, rowcount=outcome.rows, message=outcome.message, warnings=outcome.warnings.rows)

    def _stmt_TruncateTable(self, node: exp.TruncateTable, statement) -> Result:
        for target in node.expressions:
            self.runner.replace_table(self._table(target), None)
        return Result(None, rowcount=0)

# The words of clauses sqlglot records in a statement's args, for the refusal of one Canopy ignores.
_CLAUSE_WORDS = {"ignore": "INSERT IGNORE", "conflict": "ON DUPLICATE KEY UPDATE", "overwrite": "INSERT OVERWRITE",
                 "alternative": "INSERT OR ...", "partition": "PARTITION", "returning": "RETURNING",
                 "hint": "optimizer hints", "where": "WHERE", "by_name": "BY NAME", "exists": "IF EXISTS",
                 "stored": "STORED", "settings": "SETTINGS", "default": "DEFAULT VALUES", "is_function": "FUNCTION"}


def _refuse_unknown_clauses(node: exp.Expression, statement: str, handled: set) -> None:
    """NotSupportedError for any clause of ``node`` outside ``handled`` that is present: nothing a
    user wrote is dropped silently."""
    for name, value in node.args.items():
        if name not in handled and value not in (None, False, [], ""):
            word = _CLAUSE_WORDS.get(name, name.upper())
            raise UnsupportedError(word if word.startswith(statement) else f"{statement} with {word}")
