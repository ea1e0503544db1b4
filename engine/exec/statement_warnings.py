"""The warnings a statement's evaluation raises (MySQL's diagnostics area: SHOW WARNINGS,
@@warning_count, the OK / EOF packet's warning count), collected where the rows are evaluated.

A :class:`Warnings` is the sink of one statement's, or one task's, warnings: how many there were
(``total``), and the first ``MAX_WARNINGS`` of them as SHOW WARNINGS' (level, code, message) rows
(MySQL's max_error_count is 64). The evaluator records into the sink of the thread it runs on
(:func:`collecting`, set by the leaf around each step of a task's operators), vectorised: one call per
batch with the rows that did not convert cleanly counted by Arrow and only the first few values turned
into messages. Where no sink is set (binding, a constant folded at plan time) nothing is recorded.

How they reach the session: ``engine.sql.query.run_query`` sets the statement's sink in
``statement_sink``, which the scheduler puts on its Query (``warnings``). Every task records into a
sink of its own (a Ray leaf ships its ``state()`` with the task's metadata), and the tasks' sinks are
merged into the statement's in (stage, task) order once they have ended, so SHOW WARNINGS lists them
in the same order every time (MySQL lists them as the rows come; Canopy's tasks run at once). A
retried query's attempt rolls the statement's sink back to where the query started (``mark``), so a
task that ran in both attempts counts once. A constant (a Scalar, evaluated once per batch) counts
once per statement, as MySQL evaluates it once.

>>> sink = Warnings()
>>> with collecting(sink):
...     truncated(pa.array(["12x", "7", None, "abc"]), FULL_INTEGER, "INTEGER")
>>> rows = sink.result()
>>> rows.total, rows[0]
(2, ('Warning', 1292, "Truncated incorrect INTEGER value: '12x'"))
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator, Optional, Union

import pyarrow as pa
import pyarrow.compute as pc

MAX_WARNINGS = 64          # MySQL's max_error_count: SHOW WARNINGS lists at most this many
TRUNCATED = 1292           # ER_TRUNCATED_WRONG_VALUE: "Truncated incorrect %s value: '%s'"
UNKNOWN = 1105             # ER_UNKNOWN_ERROR: MariaDB's note on CAST(-1 AS UNSIGNED)
OVERFLOW = 1916            # ER_DATA_OVERFLOW: "Got overflow when converting '%s' to %s. Value truncated"

# Text that reads as a number in full (MySQL reads the leading number of any other text, and warns);
# leading whitespace is skipped, trailing whitespace gets a Note (level Note, the same 1292, as MariaDB).
FULL_INTEGER = r"^\s*[+-]?[0-9]+"
FULL_NUMBER = r"^\s*[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"


class Warnings:
    """One statement's (or one task's) warnings; thread-safe (a stage's tasks record at once)."""

    def __init__(self) -> None:
        self.total = 0                                   # the rows' warnings (constants apart)
        self.rows: list[tuple[str, int, str]] = []       # the first MAX_WARNINGS of them
        self.constants: dict[tuple[int, str], str] = {}  # (code, message) -> level, once each
        self._lock = threading.Lock()

    def add(self, level: str, code: int, messages: list[str], count: int, constant: bool = False) -> None:
        """``count`` warnings of ``code``, the first of whose messages are ``messages``; a ``constant``'s
        (the same message whatever the rows) counts once per statement."""
        with self._lock:
            if constant:
                self.constants.setdefault((code, messages[0]), level)
                return
            self.total += count
            self.rows.extend((level, code, m) for m in messages[:max(MAX_WARNINGS - len(self.rows), 0)])

    def state(self) -> tuple:
        """What a Ray leaf ships back (plain data), for :meth:`merge`."""
        with self._lock:
            return self.total, list(self.rows), list(self.constants.items())

    def merge(self, state: tuple) -> None:
        total, rows, constants = state
        with self._lock:
            self.total += total
            self.rows.extend(tuple(r) for r in rows[:max(MAX_WARNINGS - len(self.rows), 0)])
            for key, level in constants:
                self.constants.setdefault(tuple(key), level)

    def mark(self) -> tuple:
        """Where the sink stands now, for :meth:`rollback` (a retried query's attempt starts there)."""
        with self._lock:
            return self.total, len(self.rows), dict(self.constants)

    def rollback(self, mark: tuple) -> None:
        """Forget what was recorded since ``mark`` (a failed attempt's warnings: its retry records them
        again)."""
        total, rows, constants = mark
        with self._lock:
            self.total = total
            del self.rows[rows:]
            self.constants = dict(constants)

    def result(self) -> "WarningRows":
        with self._lock:
            rows = [(level, code, message) for (code, message), level in self.constants.items()] + self.rows
            return WarningRows(rows[:MAX_WARNINGS], self.total + len(self.constants))


class WarningRows(list):
    """SHOW WARNINGS' rows (at most MAX_WARNINGS) with, in ``total``, how many warnings there were."""

    def __init__(self, rows=(), total: Optional[int] = None):
        super().__init__(rows)
        self.total = len(self) if total is None else total


def count(warnings: list) -> int:
    """@@warning_count of a statement's warnings (a plain list: its length)."""
    return getattr(warnings, "total", len(warnings))


# -- the sink evaluation records into ----------------------------------------------------------------
class _Current(threading.local):
    sink: Optional[Warnings] = None


_CURRENT = _Current()

# the statement's sink while its plans run (engine.sql.query.run_query sets it, the scheduler reads it)
statement_sink: ContextVar[Optional[Warnings]] = ContextVar("statement_warnings", default=None)


@contextmanager
def collecting(sink: Optional[Warnings]):
    """Evaluation on this thread records into ``sink`` inside the block."""
    previous, _CURRENT.sink = _CURRENT.sink, sink
    try:
        yield
    finally:
        _CURRENT.sink = previous


def collected(batches: Iterator, sink: Optional[Warnings]) -> Iterator:
    """``batches`` with each step (the work of producing a batch) run under :func:`collecting`: a
    generator's code runs in whoever pulls it, so the sink is set around every pull, not once."""
    iterator = iter(batches)
    while True:
        with collecting(sink):
            batch = next(iterator, _END)
        if batch is _END:
            return
        yield batch


_END = object()


def recording() -> bool:
    """Whether evaluation on this thread has a sink (else checks can be skipped)."""
    return _CURRENT.sink is not None


def truncated(values: Union[pa.Array, pa.ChunkedArray, pa.Scalar], number: str, type_name: str,
              strict: bool = False) -> None:
    """1292 "Truncated incorrect <type_name> value: '<text>'" for each of the strings ``values`` that is
    not a number (the regex ``number``, anchored at the start) in full: a Warning, or a Note where only
    trailing whitespace follows the number. NULLs never warn. ``strict`` (an explicit CAST in a write:
    MariaDB's strict mode): the first Warning fails the statement instead (BadDataError, code 1292)."""
    sink = _CURRENT.sink
    if sink is None and not strict:
        return
    constant = isinstance(values, pa.Scalar)
    if constant:
        if not values.is_valid:
            return
        values = pa.array([values.as_py()], values.type)
    clean = pc.fill_null(pc.match_substring_regex(values, number + "$"), True)
    if pc.all(clean).as_py():
        return
    padded = pc.fill_null(pc.match_substring_regex(values, number + r"\s+$"), False)
    if strict:
        bad = values.filter(pc.invert(pc.or_(clean, padded)))
        if len(bad):
            from engine.errors import BadDataError
            raise BadDataError(f"Truncated incorrect {type_name} value: '{bad[0].as_py()}'", code=TRUNCATED)
        if sink is None:
            return
    for level, rows in (("Warning", pc.invert(pc.or_(clean, padded))), ("Note", padded)):
        found = pc.sum(rows).as_py() or 0
        if found:   # only the first few values become messages (SHOW WARNINGS lists MAX_WARNINGS)
            first = values.filter(rows).slice(0, MAX_WARNINGS).to_pylist()
            sink.add(level, TRUNCATED, [f"Truncated incorrect {type_name} value: '{v}'" for v in first], found,
                     constant)


def flagged(values: Union[pa.Array, pa.ChunkedArray, pa.Scalar], rows, level: str, code: int, message) -> None:
    """A ``level`` warning ``code`` for each of ``values`` where ``rows`` (booleans alike, NULL: no) is
    true, its message ``message(value)`` (a Python value; only the first few are formatted); a
    constant's counts once per statement."""
    sink = _CURRENT.sink
    if sink is None:
        return
    constant = isinstance(values, pa.Scalar)
    if constant:
        if not (rows.is_valid and rows.as_py()):
            return
        sink.add(level, code, [message(values.as_py())], 1, constant=True)
        return
    found = pc.sum(rows).as_py() or 0
    if found:
        first = values.filter(rows).slice(0, MAX_WARNINGS).to_pylist()
        sink.add(level, code, [message(v) for v in first], found)


def repeated(level: Optional[str], code: Optional[int], messages: list, count: int, once: bool = False) -> None:
    """``count`` warnings whose first are ``messages`` (strings of ``level`` and ``code``, or (level, code,
    message) tuples where those are None); ``once``: a constant's, counted once per statement."""
    sink = _CURRENT.sink
    if sink is None or not count:
        return
    if level is not None:
        sink.add(level, code, messages, count, constant=once)
        return
    with sink._lock:
        sink.total += count
        sink.rows.extend(messages[:max(MAX_WARNINGS - len(sink.rows), 0)])


def trailing_space(values: Union[pa.Array, pa.ChunkedArray, pa.Scalar]) -> bool:
    """Whether some string of ``values`` ends with whitespace (a Note where it is read as a number)."""
    if isinstance(values, pa.Scalar):
        return values.is_valid and values.as_py()[-1:].isspace()
    return bool(pc.any(pc.match_substring_regex(values, r"\s$")).as_py())
