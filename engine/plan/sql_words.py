"""What the binder refuses, named in the user's SQL words: nothing parsed is ignored.

sqlglot parses far more than Canopy runs. Each construct is either bound (has its real effect) or
refused with ``UnsupportedError`` (a ``NotSupportedError``) that quotes the construct as SQL, never
as a sqlglot class name (``STDDEV_SAMP(x) is not supported``, not ``StddevSamp expression``).

:func:`refuse_unread` guards the clauses of a node: the binder lists the parts of a ``SELECT`` (or a
table reference, an ``ORDER BY`` item) it reads, and any other part sqlglot filled in, such as
``SELECT ... INTO @v``, an optimizer hint ``/*+ ... */``, ``PARTITION (p0)`` or ``TABLESAMPLE``, is
refused by its text instead of being dropped::

    >>> import sqlglot
    >>> select = sqlglot.parse_one("SELECT a INTO @v FROM t", read="mysql")
    >>> refuse_unread(select, SELECT_PARTS, "SELECT")
    Traceback (most recent call last):
    ...
    engine.errors.UnsupportedError: INTO @v is not supported in SELECT
"""
from __future__ import annotations

import re
from typing import Optional

from sqlglot import ErrorLevel, exp

from engine.errors import UnsupportedError

#: The parts of a SELECT the binder reads (``windows``: the named windows of a ``WINDOW`` clause), and
#: those ``engine/sql/refusals.py`` vets before binding: the modifiers that only steer how MySQL runs a
#: query (``SQL_NO_CACHE``, ``STRAIGHT_JOIN``, ...) and ``FOR UPDATE`` / ``LOCK IN SHARE MODE``, which
#: the session honours with the tables' write locks.
SELECT_PARTS = frozenset({"with_", "expressions", "distinct", "from_", "joins", "where", "group", "having",
                          "windows", "order", "limit", "offset", "operation_modifiers", "locks"})
#: The parts of a table reference in FROM the binder reads (``joins``: a parenthesised join;
#: ``hints``: index hints, accepted on purpose as MySQL's planner hints that change no result).
TABLE_PARTS = frozenset({"this", "alias", "db", "joins", "hints"})
#: The parts of an ORDER BY item.
ORDERED_PARTS = frozenset({"this", "desc", "nulls_first"})


def sql_words(node: exp.Expression, limit: int = 80) -> str:
    """``node`` as the user wrote it where the text is known (a function call), else as sqlglot
    writes it in MySQL's dialect; cut to ``limit`` characters."""
    text = _typed_call(node) if isinstance(node, exp.Func) else None
    text = " ".join((text or generated(node)).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def generated(node: exp.Expression) -> str:
    """``node`` as sqlglot writes it in MySQL's dialect. sqlglot parses some texts it cannot write
    back (``MATCH_AGAINST(a, b)`` builds MATCH ... AGAINST without a column list): those are named
    by their kind instead of failing."""
    try:
        return node.sql(dialect="mysql", unsupported_level=ErrorLevel.IGNORE)
    except Exception:  # noqa: BLE001 - any failure of the generator; the name is what matters here
        return f"{node.key.upper()}(...)"


def not_supported(node: exp.Expression) -> UnsupportedError:
    """The error for a construct the binder has no meaning for."""
    return UnsupportedError(f"{sql_words(node)} is not supported")


def _source(node: exp.Expression) -> Optional[str]:
    """The statement's text: the parser keeps it in the root's ``meta["sql"]``."""
    while node is not None and "sql" not in node.meta:
        node = node.parent
    return None if node is None else node.meta["sql"]


def _typed_call(node: exp.Expression) -> Optional[str]:
    """A function call's text as typed (sqlglot may write another: ``IFNULL`` as ``COALESCE``): sqlglot
    keeps the name token's offsets in ``meta``; the call runs to the parenthesis that closes it."""
    start, end = node.meta.get("start"), node.meta.get("end")
    text = _source(node) if start is not None and end is not None else None
    if text is None or not re.fullmatch(r"\w+", text[start:end + 1]):
        return None
    i = end + 1
    while i < len(text) and text[i].isspace():
        i += 1
    if i >= len(text) or text[i] != "(":
        return text[start:end + 1]
    depth, quote = 0, None
    for j in range(i, len(text)):
        c = text[j]
        if quote:
            quote = None if c == quote else quote
        elif c in "'\"`":
            quote = c
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return text[start:j + 1]
    return None


def _part_words(name: str, value) -> str:
    if isinstance(value, list):
        return " ".join(_part_words(name, item) for item in value)
    if isinstance(value, exp.TableSample):        # MySQL's generator has no text for it
        return "TABLESAMPLE"
    if isinstance(value, exp.Expression):
        return sql_words(value) or name.rstrip("_").upper()
    return name.rstrip("_").replace("_", " ").upper()


def refuse_unread(node: exp.Expression, parts: frozenset, where: str) -> None:
    """Raise ``UnsupportedError`` naming the first part of ``node`` set outside ``parts``."""
    for name, value in node.args.items():
        if name in parts or value is None or value is False or (isinstance(value, list) and not value):
            continue
        raise UnsupportedError(f"{_part_words(name, value)} is not supported in {where}")
