"""First come, first served locks with modes: the table write locks (engine.transactions) and the
columnstore commit lock (engine.storage.columnstore.commit) are both one of these.

A request is granted as soon as its mode is compatible with every holder's and with every request that
came before it and still waits. So compatible requests run together (many INSERTs appending to a table
while one UPDATE rewrites rows of it), and no request is overtaken by a later one it conflicts with: a
writer waits for the holders and the waiters ahead of it, never for a stream of newcomers (Python's
``threading.Lock`` and a ``Condition``'s ``notify_all`` let whichever thread runs first take a lock
again, and one busy writer class could starve another for many seconds).

A holder asking for a stronger mode (an upgrade: an UPDATE whose WHERE turns out to need the whole
table) goes to the front of the line: it waits only for the other holders to finish.
"""
from __future__ import annotations

import threading
import time
from typing import Hashable, Optional


class LockTimeout(Exception):
    """Raised by :meth:`FairLocks.acquire` after ``timeout`` seconds; callers turn it into their own
    error (the table locks into ``LockWaitTimeoutError``)."""


class _Request:
    __slots__ = ("owner", "mode")

    def __init__(self, owner: object, mode: str):
        self.owner = owner
        self.mode = mode


class FairLocks:
    """Locks by key, each held by owners in modes. ``conflicts[m]``: the modes that cannot be held
    together with ``m`` (symmetric); ``strength[m]``: modes of higher strength cover weaker ones
    (asking for a mode one holds, or a weaker one, takes nothing new)."""

    def __init__(self, conflicts: dict[str, set[str]], strength: dict[str, int]):
        self._conflicts = conflicts
        self._strength = strength
        self._cond = threading.Condition()
        self._held: dict[Hashable, dict[object, str]] = {}
        self._waiting: dict[Hashable, list[_Request]] = {}

    def acquire(self, key: Hashable, owner: object, mode: str, timeout: Optional[float] = None) -> bool:
        """Take ``key`` in ``mode`` for ``owner``: True if newly taken, False if ``owner`` held it
        already (in this mode or a stronger one, or now upgraded). Raises :class:`LockTimeout` after
        ``timeout`` seconds of waiting (None: wait as long as it takes)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            current = self._held.get(key, {}).get(owner)
            if current is not None and self._strength[current] >= self._strength[mode]:
                return False
            request = _Request(owner, mode)
            line = self._waiting.setdefault(key, [])
            if current is not None:
                line.insert(0, request)          # an upgrade waits only for the other holders
            else:
                line.append(request)
            try:
                while not self._grantable(key, request):
                    left = None if deadline is None else deadline - time.monotonic()
                    if left is not None and left <= 0:
                        raise LockTimeout(key)
                    self._cond.wait(left)
                self._held.setdefault(key, {})[owner] = mode
                return current is None
            finally:
                line.remove(request)
                if not line:
                    del self._waiting[key]
                self._cond.notify_all()     # a request behind this one may be grantable now

    def _grantable(self, key: Hashable, request: _Request) -> bool:
        conflicting = self._conflicts[request.mode]
        for owner, mode in self._held.get(key, {}).items():
            if owner is not request.owner and mode in conflicting:
                return False
        for earlier in self._waiting[key]:
            if earlier is request:
                return True
            if earlier.owner is not request.owner and earlier.mode in conflicting:
                return False
        return True

    def release(self, key: Hashable, owner: object) -> None:
        with self._cond:
            held = self._held.get(key)
            if held is not None and held.pop(owner, None) is not None:
                if not held:
                    del self._held[key]
                self._cond.notify_all()

    def holders(self, key: Hashable) -> dict[object, str]:
        with self._cond:
            return dict(self._held.get(key, {}))


class FairMutex:
    """A mutex granted first come, first served (``with mutex:``), for a lock every writer of a runner
    takes in turn: a thread that releases it and asks again goes behind the threads already waiting.
    Not reentrant."""

    def __init__(self) -> None:
        self._locks = FairLocks({"x": {"x"}}, {"x": 0})
        self._held = threading.local()

    def __enter__(self) -> "FairMutex":
        token = object()
        self._locks.acquire(None, token, "x")
        self._held.__dict__.setdefault("tokens", []).append(token)
        return self

    def __exit__(self, *exc) -> None:
        self._locks.release(None, self._held.tokens.pop())
