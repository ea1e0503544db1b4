"""The columns of its own table a write statement reads, for MySQL's privilege rule: a DELETE / UPDATE
needs SELECT on the columns its WHERE, its join conditions and its new values read (``UPDATE t SET a =
1`` needs only UPDATE; ``UPDATE t SET a = 1 WHERE k = 2`` needs SELECT on ``k`` too), and ``INSERT ...
ON DUPLICATE KEY UPDATE`` needs SELECT on the columns of its assignments (MariaDB asks it even for
``a = 1``). Without it MySQL answers error 1143, naming the first such column.

Which table an unqualified name means (``k`` inside a correlated subquery may be the subquery's own)
is the binder's business, so the statement's row-finding query is bound and the target table's
columns that the bound plan reads are collected. Only asked when the user lacks SELECT, so a
statement of a user with it pays nothing.
"""
from __future__ import annotations

from typing import Optional

from sqlglot import exp

from engine.catalog import TableDef
from engine.errors import Error


def first_read_column(catalog, database: Optional[str], node: exp.Expression, table: TableDef) -> Optional[str]:
    """The first column of ``table`` (the one ``node`` changes) that ``node`` reads, in the user's
    spelling order (join conditions, WHERE, new values), or None when it reads none."""
    if isinstance(node, exp.Insert):
        return _on_duplicate_column(node, table)
    read = _read_names(catalog, database, node, table)
    if not read:
        return None
    for clause in _clauses(node):
        for column in clause.find_all(exp.Column):
            if column.name.lower() in read:
                return table.column(column.name).name
    return table.column(sorted(read)[0]).name


def _read_names(catalog, database: Optional[str], node: exp.Expression, table: TableDef) -> set[str]:
    """Lower-case names of ``table``'s columns the bound row-finding query of ``node`` reads."""
    from engine.plan.binder import Binder
    from engine.plan.logical import Scan
    from engine.plan.plan_walk import node_exprs
    from engine.sql import dml_sources
    try:
        parts = dml_sources.delete_parts(node) if isinstance(node, exp.Delete) else dml_sources.update_parts(node)
    except Error:
        return set()                     # the statement's handler reports it
    where = node.args.get("where")
    values = [item.expression.copy() for item in node.expressions] if isinstance(node, exp.Update) else []
    select = parts.select(values or [exp.Literal.number(1)], where.this if where is not None else None)
    try:
        query = Binder(catalog, database).bind_statement(select)
        plans = [query.root, *(q.root for q in query.subqueries)]
        used: set[str] = set()
        names: dict[str, str] = {}
        stack = list(plans)
        while stack:
            plan = stack.pop()
            stack.extend(plan.inputs)
            for e in node_exprs(plan):
                used |= e.column_ids()
            if isinstance(plan, Scan) and plan.table.table_id == table.table_id:
                names.update({f.id: name.lower() for f, name in zip(plan.fields, plan.column_names)})
    except Error:
        # a statement the binder cannot take here fails in its handler; until then, any mention of
        # one of the table's column names counts as a read (never less than MySQL asks)
        return {c.name.lower() for clause in _clauses(node) for c in clause.find_all(exp.Column)
                if _has(table, c.name)}
    return {names[i] for i in used if i in names}


def _clauses(node: exp.Expression) -> list[exp.Expression]:
    """The parts of a DELETE / UPDATE that read, in the order MariaDB checks them."""
    clauses = [j.args["on"] for t in node.find_all(exp.Table) for j in (t.args.get("joins") or [])
               if j.args.get("on") is not None]
    for using in node.args.get("using") or []:
        clauses += [j.args["on"] for j in (using.args.get("joins") or []) if j.args.get("on") is not None]
    where = node.args.get("where")
    if where is not None:
        clauses.append(where.this)
    if isinstance(node, exp.Update):
        clauses += [item.expression for item in node.expressions]
    return clauses


def _on_duplicate_column(node: exp.Insert, table: TableDef) -> Optional[str]:
    conflict = node.args.get("conflict")
    if conflict is None or not conflict.args.get("duplicate"):
        return None
    assignments = [item for item in conflict.expressions if isinstance(item, exp.EQ)]
    for item in assignments:                 # a column its new value names (stored, VALUES(c) or new.c)
        for found in item.expression.find_all(exp.Column, exp.Anonymous):
            names = [found.name] if isinstance(found, exp.Column) else \
                [a.name for a in found.expressions] if found.name.upper() == "VALUES" else []
            for name in names:
                if _has(table, name):
                    return table.column(name).name
    for item in assignments:                 # else the assigned column itself
        if _has(table, item.this.name):
            return table.column(item.this.name).name
    return None


def _has(table: TableDef, name: str) -> bool:
    return any(c.name.lower() == name.lower() for c in table.columns)
