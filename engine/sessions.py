"""The sessions of one cluster: connection ids, ``SHOW PROCESSLIST`` and ``KILL``.

Every :class:`engine.session.Session` registers here on creation (DB-API connections and MySQL wire
clients alike) and gets its ``CONNECTION_ID()``. ``KILL QUERY id`` asks that session's running
statement to stop: the statement's :class:`~engine.core.deadline.Deadline` reads the request at
its next batch boundary on every leaf and the statement fails with ``QueryCancelledError``; a session
between statements is left alone, as MySQL does. ``KILL [CONNECTION] id`` also closes the session and
calls its ``on_kill`` callbacks (the wire server drops the client's socket there).
"""
from __future__ import annotations

import itertools
import threading
import time
import weakref
from typing import Optional

from engine.errors import BindError


class SessionRegistry:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._sessions: "weakref.WeakValueDictionary[int, object]" = weakref.WeakValueDictionary()

    def reserve(self) -> int:
        """A fresh connection id for a session created later (the wire server announces it in the
        handshake, before the client has logged in)."""
        with self._lock:
            return next(self._ids)

    def add(self, session, connection_id: Optional[int] = None) -> int:
        with self._lock:
            connection_id = next(self._ids) if connection_id is None else connection_id
            self._sessions[connection_id] = session
            return connection_id

    def remove(self, session) -> None:
        with self._lock:
            self._sessions.pop(session.connection_id, None)

    def sessions(self) -> list:
        with self._lock:
            return [s for _, s in sorted(self._sessions.items())]

    def get(self, connection_id: int):
        with self._lock:
            session = self._sessions.get(connection_id)
        if session is None:
            raise BindError(f"unknown thread id: {connection_id}")
        return session


def registry_of(runner) -> SessionRegistry:
    registry = getattr(runner, "sessions", None)
    if registry is None:
        registry = SessionRegistry()
        runner.sessions = registry           # shared by every session of this cluster
    return registry


class Activity:
    """What a session is doing, for SHOW PROCESSLIST; replaced whole, so readers need no lock."""

    __slots__ = ("command", "info", "since")

    def __init__(self, command: str = "Sleep", info: Optional[str] = None):
        self.command, self.info, self.since = command, info, time.monotonic()


def processlist_rows(registry: SessionRegistry, full: bool = True) -> list[tuple]:
    """(Id, User, Host, db, Command, Time, State, Info) of every open session."""
    now = time.monotonic()
    rows = []
    for session in registry.sessions():
        activity = session.activity
        info = activity.info if full or activity.info is None else activity.info[:100]
        rows.append((session.connection_id, session.user or "canopy", session.host, session.database,
                     activity.command, int(now - activity.since),
                     "executing" if activity.command == "Query" else "", info))
    return rows
