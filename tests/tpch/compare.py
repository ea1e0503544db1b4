"""Result comparison for TPC-H, the rules of ``shared/tpch/README.md`` ("How results are judged").

Values are compared by position; column names are not compared.

- numbers (int, float, Decimal) as floats within 1e-6 relative; a ``Decimal`` of scale s may also be
  off by one unit in its last place (10**-s, the finer scale when both sides are decimals);
- dates and datetimes as ISO text (so a date equals the string ``"1995-03-15"``);
- text after trimming trailing spaces (``CHAR(n)`` padding is not a difference);
- NULL equals only NULL;
- row order counts only when the outermost ``SELECT`` has ``ORDER BY``; otherwise both sides are sorted.
"""
from __future__ import annotations

import datetime
import math
from decimal import Decimal
from typing import Any, Sequence

import sqlglot
from sqlglot import exp

REL_TOL = 1e-6

Row = Sequence[Any]


class ResultMismatch(AssertionError):
    """Raised by :func:`assert_same_result`; the message lists the differences found."""


def has_order_by(sql: str) -> bool:
    """Whether the outermost query of ``sql`` has an ORDER BY (then row order is part of the result)."""
    tree = sqlglot.parse_one(sql, read="mysql")
    if not isinstance(tree, exp.Query):
        raise ValueError(f"not a query: {sql[:60]!r}")
    return tree.args.get("order") is not None


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, Decimal)) and not isinstance(value, bool)


def _decimal_scale(value: Any) -> int | None:
    if isinstance(value, Decimal) and value.is_finite():
        exponent = value.as_tuple().exponent
        return max(0, -exponent)
    return None


def _as_text(value: Any) -> str | None:
    """Dates as ISO text and strings without trailing spaces; None for anything else."""
    if isinstance(value, datetime.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, bytes):
        value = value.decode("utf-8")
    if isinstance(value, str):
        return value.rstrip(" ")
    return None


def values_match(actual: Any, expected: Any) -> bool:
    """One value against its reference, by the rules in the module docstring."""
    if actual is None or expected is None:
        return actual is None and expected is None
    if _is_number(actual) and _is_number(expected):
        a, e = float(actual), float(expected)
        if math.isnan(a) or math.isnan(e):
            return math.isnan(a) and math.isnan(e)
        if a == e or math.isclose(a, e, rel_tol=REL_TOL, abs_tol=0.0):
            return True
        scales = [s for s in (_decimal_scale(actual), _decimal_scale(expected)) if s is not None]
        if scales:
            last_place = Decimal(1).scaleb(-max(scales))
            return abs(Decimal(actual) - Decimal(expected)) <= last_place
        return False
    if _is_number(actual) or _is_number(expected):
        return False
    a_text, e_text = _as_text(actual), _as_text(expected)
    if a_text is not None and e_text is not None:
        return a_text == e_text
    return actual == expected


def _sort_key(row: Row) -> tuple:
    # NULLs, then numbers, then text; every value becomes comparable within its rank.
    key = []
    for value in row:
        if value is None:
            key.append((0, 0.0, ""))
        elif _is_number(value):
            key.append((1, float(value), ""))
        else:
            text = _as_text(value)
            key.append((2, 0.0, text if text is not None else repr(value)))
    return tuple(key)


def diff_results(actual: Sequence[Row], expected: Sequence[Row], *, ordered: bool,
                 max_report: int = 10) -> list[str]:
    """The differences between two results as readable lines; empty when they match."""
    problems = []
    actual = [tuple(row) for row in actual]
    expected = [tuple(row) for row in expected]
    if len(actual) != len(expected):
        problems.append(f"row count: actual {len(actual)} != expected {len(expected)}")
    if not ordered:
        actual = sorted(actual, key=_sort_key)
        expected = sorted(expected, key=_sort_key)
    where = "row" if ordered else "row (both sides sorted)"
    reported = 0
    for index, (a_row, e_row) in enumerate(zip(actual, expected)):
        if len(a_row) != len(e_row):
            problems.append(f"{where} {index}: {len(a_row)} columns != expected {len(e_row)}")
        else:
            bad = [c for c, (a, e) in enumerate(zip(a_row, e_row)) if not values_match(a, e)]
            if not bad:
                continue
            cells = ", ".join(f"col {c}: {a_row[c]!r} != expected {e_row[c]!r}" for c in bad)
            problems.append(f"{where} {index}: {cells}")
        reported += 1
        if reported >= max_report:
            problems.append("... (further differences not shown)")
            break
    if len(actual) != len(expected):
        extra, side = (actual, "actual") if len(actual) > len(expected) else (expected, "expected")
        tail = extra[min(len(actual), len(expected)):][:3]
        problems.append(f"first rows only in {side} (by position): {tail!r}")
    return problems


def assert_same_result(actual: Sequence[Row], expected: Sequence[Row], *, ordered: bool,
                       label: str = "result") -> None:
    """Raise :class:`ResultMismatch` listing the differences when ``actual`` does not match ``expected``."""
    problems = diff_results(actual, expected, ordered=ordered)
    if problems:
        raise ResultMismatch(f"{label} differs from the reference:\n  " + "\n  ".join(problems))
