"""DELETE and UPDATE of a session, and their EXPLAIN.

A mixin of :class:`engine.session.Session`. :meth:`ChangeStatements._plan_change` decides how a
statement finds its rows, once, for running it and for EXPLAIN:

- ``truncate``: a DELETE without WHERE empties the table (one replace, the rows counted first);
- ``storage``: a WHERE on the table's own columns (and new values computed from them) goes to storage
  as a predicate (:func:`engine.sql.dml.row_change`): every partition evaluates it on its rows, zone
  maps skipping segments, under the commit lock, and marks the matches deleted (delete bitmaps);
  uncorrelated scalar subqueries (``WHERE x > (SELECT AVG(x) FROM t)``, ``SET x = (SELECT ...)``) are
  planned and run first, as a query's init plans are, and their values put in;
- ``query``: anything else (subqueries, joins, multi-table forms) is a query planned and run like any
  SELECT, whose rows storage then removes by content (:mod:`engine.sql.matched_rows`).

The runner's ``delete_rows`` then removes the rows and inserts an UPDATE's new versions as one atomic
statement: a failing predicate or new value changes nothing. The rowcount is the rows matched (as now
for UPDATE too: Canopy reports matched rows, as MySQL does with CLIENT_FOUND_ROWS).
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Optional

import pyarrow as pa
from sqlglot import exp

from engine.catalog import TableDef
from engine.errors import UnsupportedError
from engine.load import keys
from engine.result import Result
from engine.sql import ddl, dml, dml_sources, matched_rows
from engine.sql.dml_sources import ChangeParts
from engine.sql.handlers.writes import data_change
from engine.sql.query import explain_text, run_query, scalar_values


@dataclass
class ChangePlan:
    """How one DELETE / UPDATE finds and changes its rows (see the module docstring)."""

    table: TableDef
    parts: ChangeParts
    where: Optional[exp.Expression]
    assignments: Optional[dict]         # UPDATE: column name (lower case) -> new value; DELETE: None
    strategy: str                       # "truncate", "storage" or "query"
    change: Optional[dml.RowChange] = None     # storage: the predicate and new values

    def query(self) -> exp.Select:
        """``SELECT <the table's columns>[, <each column's new value>] FROM ... WHERE ...``."""
        columns = [exp.column(c.name, table=self.parts.qualifier, quoted=True) for c in self.table.columns]
        new = [] if self.assignments is None else \
            [self.assignments.get(c.name.lower(), column).copy() for c, column in zip(self.table.columns, columns)]
        return self.parts.select(columns + new, self.where)


class ChangeStatements:
    def _stmt_Delete(self, node: exp.Delete, statement) -> Result:
        plan = self._plan_change(node)
        if plan.strategy == "truncate":
            before = self.runner.row_count(plan.table)
            self.runner.replace_table(plan.table, None)
            return Result(None, rowcount=before)
        return Result(None, rowcount=self._apply_change(plan))

    def _stmt_Update(self, node: exp.Update, statement) -> Result:
        with _update_semantics(self):
            plan = self._plan_change(node)
            table, assignments = plan.table, plan.assignments
            if keys.updates_key(table, list(assignments)):
                if not plan.parts.single_table:
                    raise UnsupportedError("a multi-table UPDATE assigning a unique key column")
                matched = _is_true(plan.where) if plan.where is not None else exp.true()
                self._check_updated_keys(table, plan.parts.source, assignments, matched)
            count = self._apply_change(plan)
        if count:
            self.statistics.forget(table)     # same row count, other values: the 20% rule would not see it
        return Result(None, rowcount=count)

    def _plan_change(self, node) -> ChangePlan:
        delete = isinstance(node, exp.Delete)
        parts = dml_sources.delete_parts(node) if delete else dml_sources.update_parts(node)
        table = self._table(parts.target)
        where = node.args.get("where")
        where = where.this if where is not None else None
        assignments = None
        if not delete:
            assignments = {}
            for item in node.expressions:
                column = table.column(item.this.name)          # raises for an unknown column
                assignments[column.name.lower()] = item.expression
        plan = ChangePlan(table, parts, where, assignments, "query")
        if not parts.single_table:
            return plan
        if delete and where is None:
            plan.strategy = "truncate"
            return plan
        if delete:
            select = parts.select([exp.Star()], where)
        else:
            select = parts.select([assignments[c.name.lower()].copy() if c.name.lower() in assignments
                                   else exp.column(c.name) for c in table.columns], where)
        plan.change = dml.row_change(self.catalog, self.database, table, select)
        if plan.change is not None:
            plan.strategy = "storage"
        return plan

    def _apply_change(self, plan: ChangePlan) -> int:
        if plan.strategy == "storage":
            if plan.change.subqueries:      # read, then changed: no INSERT may commit in between
                self._whole_table(plan.table)
            values = scalar_values(plan.change.subqueries, self.statistics, self.runner)
            return self._delete_rows(plan.table, *plan.change.bound(values))
        table = plan.table
        self._whole_table(table)        # read, then changed: no INSERT may commit in between
        planned = self._plan(plan.query())
        data = run_query(planned, self.runner).table
        if not data.num_rows:
            return 0
        schema, width = table.arrow_schema, len(table.columns)
        identity = matched_rows.identity_columns(table)     # what tells the matched rows apart
        old = pa.Table.from_arrays([data.column(schema.get_field_index(c)).cast(schema.field(c).type)
                                    for c in identity], names=list(identity))
        if plan.assignments is None:
            rows, _ = matched_rows.distinct_rows(old)
            return self._delete_rows(table, matched_rows.matcher_of(identity, rows))
        values = pa.Table.from_arrays(data.columns[width:], names=[f"c{i}" for i in range(width)])
        new_rows = dml.conform_to_table(values, [f.type for f in planned.fields[width:]], table,
                                        list(table.columns))
        rows, first = matched_rows.distinct_rows(old, new_rows)
        matcher = matched_rows.matcher_of(identity, rows)
        return self._delete_rows(table, matcher, matched_rows.MatchedRewrite(matcher, first))

    def _delete_rows(self, table, matcher, rewrite=None) -> int:
        count = self.runner.delete_rows(table, matcher, rewrite)
        if count is None:
            raise UnsupportedError(f"DELETE and UPDATE on a {type(self.runner).__name__} runner")
        return count

    def _explain_change(self, node) -> Result:
        """EXPLAIN DELETE / UPDATE: the strategy, and for ``query`` the plan of the query that finds
        the rows (with estimates, as EXPLAIN SELECT shows them)."""
        with _update_semantics(self):
            plan = self._plan_change(node)
        verb = "Delete" if plan.assignments is None else "Update"
        name = plan.table.name
        if plan.assignments:
            name += " SET " + ", ".join(f"{c} = {v.sql(dialect='mysql')}" for c, v in plan.assignments.items())
        if plan.strategy == "truncate":
            lines = [f"{verb} every row of {name}: the table is emptied"]
        elif plan.strategy == "storage":
            change = plan.change
            lines = [f"{verb} {name} in storage: every partition marks the rows where {change.predicate} "
                     f"(delete bitmaps)"]
            if not change.subqueries:       # with subqueries, the zone maps' bounds are known once they ran
                bounds = change.bound()[0].bounds
                if bounds:
                    lines[0] += "; zone maps skip segments by " + ", ".join(f"{c} {op} {v!r}" for c, op, v in bounds)
            for i, sub in enumerate(change.subqueries):
                lines += [f"$subquery{i} (run first):", *("  " + line for line in sub.pretty().splitlines())]
        else:
            lines = [f"{verb} {name}: the rows equal to a row of this query, removed by content in every "
                     f"partition (delete bitmaps)" + ("" if plan.assignments is None else
                                                      ", their new versions inserted in the same statement"),
                     *explain_text(self._plan(plan.query())).splitlines()]
        return ddl.text_result(["EXPLAIN"], [(line,) for line in lines])

    def _check_updated_keys(self, table, table_node: exp.Table, assignments: dict, matched) -> None:
        """An UPDATE that assigns a unique key's column: every row's key after the update, checked for
        a repeat (the statement holds the table's write lock, so the rows cannot change meanwhile)."""
        columns = list(dict.fromkeys(c for key in table.unique_keys for c in key.columns))
        projection = [exp.If(this=matched.copy(), true=assignments[c.lower()].copy(), false=exp.column(c))
                      if c.lower() in assignments else exp.column(c) for c in columns]
        after = self._select_rows(table, table_node, projection, None)
        after = pa.Table.from_arrays(after.columns, names=columns)
        for key in table.unique_keys:
            again = keys.repeated(after, key, collations=keys.collations_of(table))
            if again.any():
                raise keys.duplicate_error(key, after, again)

    def _select_rows(self, table, table_node: exp.Table, projection, where) -> pa.Table:
        """Run ``SELECT projection FROM table [WHERE where]`` and cast the result to the table's types."""
        select = exp.Select(expressions=projection).from_(table_node.copy())
        if where is not None:
            select = select.where(where)
        planned = self._plan(select)
        data = run_query(planned, self.runner).table
        if len(projection) != len(table.columns):
            return data
        return dml.conform_to_table(data, [f.type for f in planned.fields], table, list(table.columns))


def _is_true(predicate: exp.Expression) -> exp.Expression:
    """``(predicate) IS TRUE``: NULL counts as not matched, as in a WHERE clause."""
    return exp.Is(this=exp.Paren(this=predicate.copy()), expression=exp.true())


@contextlib.contextmanager
def _update_semantics(session):
    """UPDATE binds as MariaDB's strict UPDATE ('abc' = 0 is an error there) and divides as the
    session's sql_mode says (engine.sql.handlers.writes.data_change)."""
    from engine.plan.binder import strict_text_numbers
    token = strict_text_numbers.set(True)
    try:
        with data_change(session):
            yield
    finally:
        strict_text_numbers.reset(token)
