"""Result comparison for TPC-DS, the rules of ``shared/tpcds/README.md`` ("Checking answers").

Values are compared as for TPC-H (``tpch/compare.py``: numbers within 1e-6 relative or one unit in
the last place of a DECIMAL, text without trailing spaces, NULL = NULL). Order:

- without an outermost ``ORDER BY`` both sides are sorted, so row order does not count;
- with one, the expected rows are cut into runs of equal sort keys: the runs must come in the same
  order with the same keys, and within a run the rows are compared as a multiset (rows tied on the
  sort keys may come in any order);
- with ``ORDER BY ... LIMIT n`` and n rows returned, the last run may have been cut by the limit:
  which of its tied rows made the cut is arbitrary, so there only the sort keys are compared.

A sort key is found in the output by its position (``ORDER BY 2``), its alias or its expression.
A key that is not in the output (``ORDER BY`` an expression not selected) cannot be seen in the
result, so runs are cut on the keys that are: coarser runs, the same check within each.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import sqlglot
from sqlglot import exp

from tpch.compare import ResultMismatch, _sort_key, diff_results, values_match

Row = Sequence


@dataclass(frozen=True)
class Ordering:
    """What the outermost query promises about row order."""
    key_columns: tuple[int, ...]     # output positions of the sort keys found in the output
    keys: int                        # sort keys in the ORDER BY, found or not
    limit: Optional[int]


def outer_ordering(sql: str) -> Optional[Ordering]:
    """The outermost ``ORDER BY`` of ``sql`` (DuckDB's dialect, as the queries are written) mapped to
    output columns; None without one."""
    tree = sqlglot.parse_one(sql, read="duckdb")
    order = tree.args.get("order")
    if order is None:
        return None
    items = _output_items(tree)
    names = [item.alias_or_name for item in items]
    texts = [_unparen(item.unalias()).sql(dialect="duckdb") for item in items]
    positions = []
    for ordered in order.expressions:
        key = ordered.this
        if isinstance(key, exp.Literal) and key.is_int:
            positions.append(int(key.this) - 1)
        elif isinstance(key, exp.Column) and not key.table and key.name in names:
            positions.append(names.index(key.name))
        elif key.sql(dialect="duckdb") in texts:
            positions.append(texts.index(key.sql(dialect="duckdb")))
        elif isinstance(key, exp.Column) and key.name in names:
            positions.append(names.index(key.name))
    limit = tree.args.get("limit")
    count = None
    if limit is not None:
        value = limit.expression
        count = int(value.this) if isinstance(value, exp.Literal) and value.is_int else None
    return Ordering(tuple(positions), len(order.expressions), count)


def _unparen(node: exp.Expression) -> exp.Expression:
    while isinstance(node, exp.Paren):               # SELECT DISTINCT(x): the item is (x)
        node = node.this
    return node


def _output_items(query: exp.Expression) -> list[exp.Expression]:
    """The select-list items naming the output columns: a set operation's first SELECT's, and for
    ``SELECT * FROM (subquery)`` the subquery's."""
    while not isinstance(query, exp.Select):         # a set operation or a parenthesised query
        query = query.this
    items = query.expressions
    source = query.args.get("from_") or query.args.get("from")     # sqlglot renamed it "from_"
    if len(items) == 1 and isinstance(items[0], exp.Star) and source is not None \
            and isinstance(source.this, exp.Subquery) and not query.args.get("joins"):
        return _output_items(source.this.this)
    return items


def _runs(rows: list[tuple], columns: tuple[int, ...]) -> list[tuple[int, int]]:
    """[start, end) of each run of consecutive rows with equal values in ``columns``."""
    runs, start = [], 0
    for index in range(1, len(rows) + 1):
        if index == len(rows) or not all(values_match(rows[index][c], rows[start][c]) for c in columns):
            runs.append((start, index))
            start = index
    return runs


def diff_tpcds(actual: Sequence[Row], expected: Sequence[Row], ordering: Optional[Ordering],
               max_report: int = 10) -> list[str]:
    """The differences between two results as readable lines; empty when they match."""
    actual = [tuple(row) for row in actual]
    expected = [tuple(row) for row in expected]
    if ordering is None or not ordering.key_columns or len(actual) != len(expected) or not expected:
        return diff_results(actual, expected, ordered=False if ordering is None or not ordering.key_columns
                            else True, max_report=max_report)
    if any(len(a) != len(e) for a, e in zip(actual, expected)):
        return diff_results(actual, expected, ordered=True, max_report=max_report)
    problems = []
    runs = _runs(expected, ordering.key_columns)
    cut = ordering.limit is not None and len(expected) == ordering.limit
    for number, (start, end) in enumerate(runs):
        a_rows, e_rows = actual[start:end], expected[start:end]
        if cut and number == len(runs) - 1:          # tied rows cut by LIMIT: only the keys are determined
            a_rows = [tuple(row[c] for c in ordering.key_columns) for row in a_rows]
            e_rows = [tuple(row[c] for c in ordering.key_columns) for row in e_rows]
        a_rows = sorted(a_rows, key=_sort_key)
        e_rows = sorted(e_rows, key=_sort_key)
        for offset, (a_row, e_row) in enumerate(zip(a_rows, e_rows)):
            bad = [c for c, (a, e) in enumerate(zip(a_row, e_row)) if not values_match(a, e)]
            if bad:
                cells = ", ".join(f"col {c}: {a_row[c]!r} != expected {e_row[c]!r}" for c in bad)
                problems.append(f"rows {start}..{end - 1} (tied on the sort keys, sorted), #{offset}: {cells}")
                break
        if len(problems) >= max_report:
            problems.append("... (further differences not shown)")
            break
    return problems


def assert_same_tpcds_result(actual: Sequence[Row], expected: Sequence[Row], sql: str, *,
                             label: str = "result") -> None:
    """Raise :class:`ResultMismatch` listing the differences when ``actual`` does not match ``expected``."""
    problems = diff_tpcds(actual, expected, outer_ordering(sql))
    if problems:
        raise ResultMismatch(f"{label} differs from DuckDB's answer:\n  " + "\n  ".join(problems))


# DuckDB's ORDER BY puts NULLs last in both directions; MySQL's (and Canopy's) first when ascending.
_ORDER_ENDS = {"LIMIT", "OFFSET", "ROWS", "RANGE", "GROUPS", "UNION", "INTERSECT", "EXCEPT"}


def with_duckdb_null_order(sql: str) -> str:
    """``sql`` with ``NULLS LAST`` written after every ORDER BY key that has no NULLS FIRST / LAST:
    the order DuckDB's answers were computed in, said explicitly for an engine with MySQL's default.
    Only text is added; everything else is sent as written."""
    from sqlglot.tokens import TokenType

    tokens = sqlglot.Dialect.get_or_raise("duckdb").tokenize(sql)
    ends = []                                 # character offsets after each key lacking NULLS ...
    for start, token in enumerate(tokens):
        if token.token_type != TokenType.ORDER_BY:
            continue
        depth, last, has_nulls = 0, None, False
        for t in tokens[start + 1:]:
            if t.token_type == TokenType.L_PAREN:
                depth += 1
            elif t.token_type == TokenType.R_PAREN and depth > 0:
                depth -= 1
            elif depth == 0 and (t.token_type in (TokenType.R_PAREN, TokenType.SEMICOLON)
                                 or t.text.upper() in _ORDER_ENDS):
                break
            elif depth == 0 and t.token_type == TokenType.COMMA:
                if last is not None and not has_nulls:
                    ends.append(last.end + 1)
                last, has_nulls = None, False
                continue
            if depth == 0 and t.text.upper() == "NULLS":
                has_nulls = True
            last = t
        if last is not None and not has_nulls:
            ends.append(last.end + 1)
    for end in sorted(ends, reverse=True):
        sql = sql[:end] + " NULLS LAST" + sql[end:]
    return sql
