"""When a statement must stop (``statement_timeout``, a cancel), checked by every step of it: reading,
binding and optimizing it (check_statement_deadline) and each operator at batch boundaries (through
engine.exec.operators.base.TaskContext.deadline)."""
from __future__ import annotations

import time
from contextvars import ContextVar
from typing import Callable, Iterator, Optional

import pyarrow as pa

from engine.errors import ExecutionError, QueryCancelledError, QueryTimeoutError


class Deadline:
    """When a statement must stop: ``statement_timeout`` (MySQL's ``max_execution_time``) and, on a
    Ray leaf, the driver's cancel. Operators check it at batch boundaries (see ``_profiled``), so a
    task stops within one batch of any operator, not only at its stage's output.

    ``at`` is a ``time.monotonic()`` instant of this process: a runner that ships a deadline to
    another process sends ``remaining()`` and rebuilds it there (:meth:`after`). ``cancelled``: a
    callable that is true once the query was cancelled from outside (checked at the same points)."""

    def __init__(self, timeout_ms: Optional[int], at: float = float("inf"),
                 cancelled: Optional[Callable[[], bool]] = None, where: str = ""):
        self.timeout_ms = timeout_ms
        self.at = at
        self.cancelled = cancelled
        self.where = where

    @classmethod
    def after(cls, timeout_ms: Optional[int], remaining_s: Optional[float] = None, **kwargs) -> "Deadline":
        """A deadline ``remaining_s`` from now (default: the whole timeout; None timeout: never)."""
        if timeout_ms is None:
            return cls(None, **kwargs)
        remaining_s = timeout_ms / 1000 if remaining_s is None else remaining_s
        return cls(timeout_ms, time.monotonic() + remaining_s, **kwargs)

    def remaining(self) -> Optional[float]:
        """Seconds left (0 when passed); None without a timeout."""
        if self.timeout_ms is None:
            return None
        return max(0.0, self.at - time.monotonic())

    def expired(self) -> bool:
        return time.monotonic() >= self.at

    def check(self) -> None:
        if self.cancelled is not None and self.cancelled():
            raise QueryCancelledError(f"query cancelled{self.where}")
        if time.monotonic() >= self.at:
            raise self.error()

    def error(self) -> ExecutionError:
        return QueryTimeoutError(f"query exceeded statement_timeout of {self.timeout_ms} ms{self.where}")

    def guard(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        self.check()
        for batch in batches:
            self.check()
            yield batch


# The running statement's deadline: set by the session around a statement, read by the runner that runs
# its plans (in the calling thread; runners hand it to their tasks through TaskContext.deadline).
statement_deadline: ContextVar[Optional[Deadline]] = ContextVar("statement_deadline", default=None)


def check_statement_deadline() -> None:
    """Raise QueryTimeoutError / QueryCancelledError when the running statement must stop: for the
    steps before a plan runs (reading, binding, optimizing a statement), which check it themselves."""
    deadline = statement_deadline.get()
    if deadline is not None:
        deadline.check()
