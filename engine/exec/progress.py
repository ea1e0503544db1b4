"""Progress of a running query, for the person waiting on it.

The session sets :data:`query_progress` around a statement when progress is on (a terminal or a
notebook, or ``connect(progress=True)``); a runner that finds one there reports to it: ``start`` with
the tasks the plan will run (one per leaf for a stage on the leaves, one for a stage that runs once),
``task_done`` as each ends with the rows it produced, ``close`` at the end. Both runners report the
same way, so the bar reads the same embedded and on Ray: tasks done across leaves, the stage reached
and the rows produced so far.

:class:`TqdmQueryProgress` draws it with ``tqdm.auto`` (a widget in Jupyter when ipywidgets is
installed, text on a terminal), only for queries still running after ``PROGRESS_DELAY_S`` seconds
(tqdm's ``delay``), and leaves nothing behind when the query ends.
"""
from __future__ import annotations

import sys
import threading
import time
from contextvars import ContextVar
from typing import Optional

PROGRESS_DELAY_S = 1.0


class QueryProgress:
    """What a runner reports to; the base reports nowhere (subclasses draw)."""

    def __init__(self):
        self.total_tasks = 0
        self.tasks_done = 0
        self.rows = 0
        self.stages = 0
        self.stages_seen: set[int] = set()
        self._lock = threading.Lock()      # tasks end on the leaf pool's threads

    def start(self, total_tasks: int, stages: int) -> None:
        with self._lock:
            self.total_tasks += total_tasks
            self.stages += stages
        self._changed()

    def task_done(self, stage_id: int, rows: int) -> None:
        with self._lock:
            self.tasks_done += 1
            self.rows += rows
            self.stages_seen.add(stage_id)
        self._changed()

    def tick(self) -> None:
        """Called by a runner that is waiting anyway (about 4 times a second): a bar due to appear does."""
        self._changed()

    def close(self) -> None:
        pass

    def _changed(self) -> None:
        pass


class TqdmQueryProgress(QueryProgress):
    """A tqdm.auto bar, made only once the query has run PROGRESS_DELAY_S (a notebook's widget costs
    milliseconds to build: short queries make none)."""

    def __init__(self, description: str = "query"):
        super().__init__()
        self._description = description
        self._started = time.monotonic()
        self._bar = None

    def _changed(self) -> None:
        if self._bar is None:
            if time.monotonic() - self._started < PROGRESS_DELAY_S:
                return
            from tqdm.auto import tqdm

            self._bar = tqdm(total=0, desc=self._description, unit="task", leave=False, file=sys.stderr,
                             dynamic_ncols=True)
        with self._lock:
            total, done, rows = self.total_tasks, self.tasks_done, self.rows
            stage = len(self.stages_seen)
            stages = self.stages
        bar = self._bar
        bar.total = total
        bar.n = done
        bar.set_postfix_str(f"stage {min(stage + 1, stages)}/{stages}, {rows:,} rows", refresh=False)
        bar.refresh()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def progress_wanted(mode: Optional[bool]) -> bool:
    """``mode``: True always, False never, None when stderr is a terminal or the code runs in a
    notebook kernel (where a person is watching)."""
    if mode is not None:
        return mode
    return _in_notebook() or _is_tty(sys.stderr)


def _is_tty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _in_notebook() -> bool:
    shell = sys.modules.get("IPython")
    if shell is None:
        return False
    ip = shell.get_ipython() if hasattr(shell, "get_ipython") else None
    return ip is not None and type(ip).__name__ == "ZMQInteractiveShell"


# The running statement's progress (None: nobody is watching); set by the session, read by runners.
query_progress: ContextVar[Optional[QueryProgress]] = ContextVar("query_progress", default=None)
