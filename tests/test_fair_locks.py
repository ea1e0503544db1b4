"""engine.fair_locks: requests are granted first come, first served, compatible modes together."""
from __future__ import annotations

import threading
import time

import pytest

from engine.fair_locks import FairLocks, FairMutex, LockTimeout
from engine.transactions import _CONFLICTS, _STRENGTH, APPEND, EXCLUSIVE, MODIFY


def _locks() -> FairLocks:
    return FairLocks(_CONFLICTS, _STRENGTH)


def _waiting(locks, owner, mode, granted: list, hold: float = 0.0) -> threading.Thread:
    def run():
        locks.acquire("t", owner, mode, timeout=10)
        granted.append(owner)
        time.sleep(hold)
        locks.release("t", owner)
    thread = threading.Thread(target=run)
    thread.start()
    time.sleep(0.05)       # queued before the next one
    return thread


def test_compatible_modes_are_held_together():
    locks = _locks()
    assert locks.acquire("t", "update", MODIFY, timeout=0)
    assert locks.acquire("t", "insert 1", APPEND, timeout=0)
    assert locks.acquire("t", "insert 2", APPEND, timeout=0)
    with pytest.raises(LockTimeout):
        locks.acquire("t", "update 2", MODIFY, timeout=0.05)
    with pytest.raises(LockTimeout):
        locks.acquire("t", "ddl", EXCLUSIVE, timeout=0.05)
    assert not locks.acquire("t", "update", APPEND, timeout=0)      # held already, in a stronger mode
    assert locks.acquire("u", "ddl", EXCLUSIVE, timeout=0)           # another table


def test_conflicting_requests_are_granted_in_arrival_order():
    locks = _locks()
    locks.acquire("t", "first", EXCLUSIVE)
    granted: list = []
    threads = [_waiting(locks, f"writer {i}", MODIFY if i % 2 else EXCLUSIVE, granted, hold=0.01) for i in range(6)]
    locks.release("t", "first")
    for thread in threads:
        thread.join(10)
    assert granted == [f"writer {i}" for i in range(6)]


def test_a_later_request_does_not_overtake_a_waiting_conflicting_one():
    locks = _locks()
    locks.acquire("t", "insert 1", APPEND)
    granted: list = []
    ddl = _waiting(locks, "ddl", EXCLUSIVE, granted)
    with pytest.raises(LockTimeout):     # compatible with the holder, but the DDL asked first
        locks.acquire("t", "insert 2", APPEND, timeout=0.1)
    locks.release("t", "insert 1")
    ddl.join(10)
    assert granted == ["ddl"]
    assert locks.acquire("t", "insert 2", APPEND, timeout=0)


def test_an_upgrade_waits_only_for_the_other_holders():
    locks = _locks()
    locks.acquire("t", "update", MODIFY)
    locks.acquire("t", "insert", APPEND)
    granted: list = []
    later = _waiting(locks, "update 2", MODIFY, granted)
    upgraded = threading.Thread(target=lambda: granted.append(locks.acquire("t", "update", EXCLUSIVE, timeout=10)))
    upgraded.start()
    time.sleep(0.05)
    assert granted == []                 # the insert still holds its lock
    locks.release("t", "insert")
    upgraded.join(10)
    assert granted == [False]            # upgraded (not newly taken), ahead of "update 2"
    assert locks.holders("t") == {"update": EXCLUSIVE}
    locks.release("t", "update")
    later.join(10)
    assert granted == [False, "update 2"]


def test_a_timed_out_request_leaves_the_line():
    locks = _locks()
    locks.acquire("t", "update", MODIFY)
    with pytest.raises(LockTimeout):
        locks.acquire("t", "ddl", EXCLUSIVE, timeout=0.05)
    assert locks.acquire("t", "insert", APPEND, timeout=0)       # not queued behind the DDL that gave up


def test_fair_mutex_goes_round_the_waiting_threads():
    """A thread that releases the mutex and asks again waits behind the others (a threading.Lock
    lets it take it straight back)."""
    mutex = FairMutex()
    order: list = []
    started = threading.Barrier(3)

    def worker(name):
        started.wait()
        for _ in range(5):
            with mutex:
                order.append(name)
                time.sleep(0.01)

    threads = [threading.Thread(target=worker, args=(n,)) for n in "ab"]
    with mutex:
        for thread in threads:
            thread.start()
        started.wait()
        time.sleep(0.1)                 # both queued
    for thread in threads:
        thread.join(10)
    assert order in (list("ababababab"), list("bababababa"))
