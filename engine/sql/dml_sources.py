"""The parts of a DELETE or UPDATE: the table it changes and the FROM clause its rows are found in.

MySQL's forms: ``DELETE FROM t WHERE ...``; multi-table ``DELETE t FROM t JOIN u ON ... WHERE ...`` and
``DELETE FROM t USING t JOIN u ...``; ``UPDATE t SET ...`` and ``UPDATE t JOIN u ON ... SET t.x = u.y``
(or ``UPDATE t, u SET ... WHERE ...``). Canopy changes one table per statement: a statement naming
several targets is refused, in the user's words.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from sqlglot import exp

from engine.errors import BindError, UnsupportedError


@dataclass(frozen=True)
class ChangeParts:
    target: exp.Table               # the changed table as the FROM clause names it
    qualifier: str                  # the name its columns are qualified with (its alias or name)
    source: exp.Table               # the first item of the FROM clause, without its joins
    joins: tuple[exp.Join, ...]     # the rest of the FROM clause

    @property
    def single_table(self) -> bool:
        return not self.joins

    def select(self, expressions: list, where: Optional[exp.Expression]) -> exp.Select:
        """``SELECT expressions FROM <the FROM clause> [WHERE where]``."""
        select = exp.Select(expressions=expressions).from_(self.source.copy())
        if self.joins:
            select.set("joins", [j.copy() for j in self.joins])
        return select.where(where.copy()) if where is not None else select


def delete_parts(node: exp.Delete) -> ChangeParts:
    if node.args.get("limit") or node.args.get("order"):
        raise UnsupportedError("DELETE with ORDER BY or LIMIT")
    targets = node.args.get("tables") or []
    using = node.args.get("using") or []
    for target in targets:              # sqlglot reads DELETE QUICK / LOW_PRIORITY FROM t as targets
        for word in (target.name, target.alias):
            if word.upper() in _DELETE_MODIFIERS and not target.this.args.get("quoted"):
                raise UnsupportedError(f"DELETE {word.upper()} (a modifier Canopy lacks)")
    if len(targets) > 1:
        names = ", ".join(t.sql(dialect="mysql") for t in targets)
        raise UnsupportedError(f"DELETE {names} FROM ... (a DELETE of several tables; delete from each in turn)")
    if using:                           # DELETE FROM t USING <from clause>
        source, joins = _from_items(using)
        return _parts(node.this, source, joins, "DELETE")
    source, joins = _from_items([node.this])
    return _parts(targets[0] if targets else source, source, joins, "DELETE")


def update_parts(node: exp.Update) -> ChangeParts:
    if node.args.get("from") or node.args.get("from_") or node.args.get("limit") or node.args.get("order"):
        raise UnsupportedError("UPDATE with FROM, ORDER BY or LIMIT")
    source, joins = _from_items([node.this])
    if not joins:
        return _parts(source, source, joins, "UPDATE")
    named = {item.this.table.lower() for item in node.expressions
             if isinstance(item, exp.EQ) and isinstance(item.this, exp.Column) and item.this.table}
    if len(named) > 1:
        raise UnsupportedError("a multi-table UPDATE assigning columns of several tables (update each in turn)")
    if not named:
        raise UnsupportedError("a multi-table UPDATE with unqualified SET columns (write SET t.column = ...)")
    return _parts(exp.to_table(named.pop()), source, joins, "UPDATE")


def _from_items(items: list) -> tuple[exp.Table, tuple[exp.Join, ...]]:
    """A FROM clause as sqlglot gives it for DML (tables carrying their joins) as (first, joins)."""
    first = items[0].copy()
    joins = list(first.args.get("joins") or [])
    first.set("joins", None)
    for item in items[1:]:              # comma-separated: cross joins, then the item's own joins
        item = item.copy()
        more = list(item.args.get("joins") or [])
        item.set("joins", None)
        joins += [exp.Join(this=item), *more]
    for join in joins:
        if not isinstance(join.this, exp.Table):
            raise UnsupportedError(f"a derived table in a multi-table {join.this.key.upper()} statement")
    if not isinstance(first, exp.Table):
        raise UnsupportedError("a derived table as the first table of a DELETE / UPDATE")
    return first, tuple(joins)


_DELETE_MODIFIERS = {"QUICK", "LOW_PRIORITY", "IGNORE"}


def _parts(target: exp.Table, source: exp.Table, joins: tuple, statement: str) -> ChangeParts:
    """The FROM item ``target`` names (by alias, or by name when it has none)."""
    if not joins and target is source:
        return ChangeParts(source, source.alias_or_name, source, joins)
    wanted = target.name.lower()
    items = [source, *(j.this for j in joins)]
    found = [t for t in items if t.alias_or_name.lower() == wanted
             and (not target.text("db") or t.text("db").lower() == target.text("db").lower())]
    if len(found) != 1:
        raise BindError(f"Unknown table '{target.name}' in MULTI {statement}" if not found else
                        f"Not unique table/alias: '{target.name}'")
    table = found[0]
    return ChangeParts(table, table.alias_or_name, source, joins)
