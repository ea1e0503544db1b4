"""DATE_FORMAT's format strings: which directives exist and how a format splits into them.

Shared vocabulary at the bottom of the package: the binder refuses an unimplemented directive when a
statement is read (engine.plan.bind_functions), the executor turns each directive into a vectorised
column (engine.exec.date_functions, whose table must name exactly these directives).
"""
from __future__ import annotations

import re

from engine.errors import UnsupportedError

# The strftime directives (sqlglot's translation of MySQL's) that DATE_FORMAT implements.
DIRECTIVES = frozenset({
    "%Y", "%y", "%m", "%-m", "%d", "%-d", "%H", "%-H", "%I", "%-I", "%M", "%S", "%f",
    "%B", "%b", "%A", "%a", "%j", "%p", "%U",
    # sqlglot's names for MySQL's %D (day with suffix), %u %V %v (WEEK modes 1, 2, 3), %X %x (their
    # years) and %w (day of the week, Sunday 0)
    "%D", "%W", "%V", "%v", "%X", "%G", "%w",
})
# A directive (with the "-" of an unpadded number), literal text, or a lone "%".
TOKEN = re.compile(r"%-?[A-Za-z%]|[^%]+|%")


def format_pieces(fmt: str) -> list:
    """The format split into directives and literal text; a directive not implemented is refused
    under its MySQL spelling."""
    from sqlglot.dialects.mysql import MySQL
    pieces = []
    for token in TOKEN.findall(fmt):
        if token == "%%":
            pieces.append("%")
        elif token.startswith("%") and token not in DIRECTIVES:
            raise UnsupportedError(f"DATE_FORMAT directive {MySQL.INVERSE_TIME_MAPPING.get(token, token)}")
        else:
            pieces.append(token)
    return pieces
