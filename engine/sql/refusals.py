"""Clauses and options sqlglot parses that Canopy would otherwise drop without a word: each is refused
here with NotSupportedError in the user's SQL words, before the statement runs.

Accepted on purpose (they do not change a result): index hints (``USE INDEX``), scheduling words
(``LOW_PRIORITY``, ``QUICK``, ``HIGH_PRIORITY``, ``SQL_NO_CACHE``, ``STRAIGHT_JOIN``), ``ENGINE=``,
``COMMENT=``, a UTF-8 ``CHARSET`` / ``COLLATE``, ``DROP ... CASCADE | RESTRICT`` (MySQL ignores them too).
"""
from __future__ import annotations

from sqlglot import exp

from engine.errors import UnsupportedError

# SELECT modifiers that only steer how MySQL runs a query, never what it returns
_HARMLESS_MODIFIERS = {"SQL_NO_CACHE", "SQL_CACHE", "HIGH_PRIORITY", "STRAIGHT_JOIN", "SQL_SMALL_RESULT",
                       "SQL_BIG_RESULT", "SQL_BUFFER_RESULT"}
_UTF8 = ("utf8", "utf8mb4", "utf8mb3")


def refuse_ignored(node: exp.Expression) -> None:
    """Raise NotSupportedError naming the first clause of ``node`` Canopy would not honour."""
    for table in node.find_all(exp.Table):
        if table.args.get("partition") is not None:
            raise UnsupportedError(f"PARTITION (...) selection of table {table.name}")
        if table.args.get("sample") is not None:
            raise UnsupportedError("TABLESAMPLE")
    for select in node.find_all(exp.Select):
        for modifier in select.args.get("operation_modifiers") or []:
            word = modifier.name.upper() if isinstance(modifier, exp.Var) else modifier.sql().upper()
            if word not in _HARMLESS_MODIFIERS:
                raise UnsupportedError(f"SELECT {word}")
        for lock in select.args.get("locks") or []:
            if lock.args.get("wait") is not None or lock.expressions:
                raise UnsupportedError("FOR UPDATE OF / NOWAIT / SKIP LOCKED")
    for properties in node.find_all(exp.Properties):
        for prop in properties.expressions:
            _check_property(prop)
    if isinstance(node, exp.Drop) and node.args.get("temporary"):
        raise UnsupportedError("DROP TEMPORARY TABLE (Canopy has no temporary tables)")


def _check_property(prop: exp.Expression) -> None:
    if isinstance(prop, (exp.EngineProperty, exp.SchemaCommentProperty)):
        return
    if isinstance(prop, exp.LikeProperty) and not prop.expressions:     # CREATE TABLE t2 LIKE t
        return
    if isinstance(prop, (exp.CharacterSetProperty, exp.CollateProperty)):
        value = prop.this.name.lower() if prop.this is not None else ""
        if value.split("_")[0] in _UTF8:
            return
        raise UnsupportedError(f"{prop.sql(dialect='mysql')}: Canopy stores text as UTF-8 only (utf8mb4)")
    if isinstance(prop, exp.TemporaryProperty):
        raise UnsupportedError("CREATE TEMPORARY TABLE (Canopy has no temporary tables)")
    if isinstance(prop, exp.AutoIncrementProperty):
        raise UnsupportedError("the AUTO_INCREMENT = n table option (the counter starts above the largest value)")
    raise UnsupportedError(f"table option {prop.sql(dialect='mysql')}")
