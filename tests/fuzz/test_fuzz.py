"""Fuzzing with mutated TPC-H and TPC-DS queries (tests/fuzz/mutations.py): every statement answers or
raises a clear engine error (ProgrammingError, NotSupportedError, DataError, a timeout...), never an
InternalError or a raw Python exception. Seeded, so a failure reproduces; bounded in time, with a
statement_timeout and cut-down data so a mutation that makes a cross product stays small.

The default suite runs a short session on TPC-H; ``-m slow`` runs a minute on each benchmark, with a
seed per run (printed) so they explore new statements.
"""
from __future__ import annotations

import random

import pytest

from tests.fuzz import session


@pytest.fixture(scope="module")
def tpch_small(tpch_canopy_sf001):
    fuzzing = session.tpch_session(tpch_canopy_sf001, statement_timeout_ms=1000)
    yield fuzzing
    fuzzing.close()
    tpch_canopy_sf001.execute("DROP DATABASE fuzz_tpch")


def _check(outcome: session.Outcome, minimum: int) -> None:
    print(outcome.summary())
    assert not outcome.failures, "\n".join(str(f) for f in outcome.failures)
    assert outcome.statements >= minimum, outcome.summary()
    assert outcome.answered, outcome.summary()      # mutations that still run: the fuzzer reaches execution


def test_mutated_tpch_queries_answer_or_fail_clearly(tpch_small):
    from engine.workloads import tpch
    _check(session.run(tpch_small, tpch.queries(), seconds=12, seed=14), minimum=10)


@pytest.mark.slow
def test_mutated_tpch_queries_for_a_minute(tpch_small):
    from engine.workloads import tpch
    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    _check(session.run(tpch_small, tpch.queries(), seconds=60, seed=seed), minimum=30)


@pytest.mark.slow
def test_mutated_tpch_queries_under_a_small_memory_limit(tpch_small, monkeypatch):
    """Under memory_limit = 2 MiB (docs/memory.md) every mutated statement answers (spilling) or fails
    clearly (MemoryLimitError among the clear errors), and no query pool of this process (the
    embedded runner's tasks, answers, CTEs, exchange buffers) ever held more than the limit."""
    from engine.exec.memory import MemoryPool
    from engine.workloads import tpch
    pools: list = []
    close = MemoryPool.close
    monkeypatch.setattr(MemoryPool, "close", lambda self: pools.append((self.peak, self.limit)) or close(self))
    seed = random.randrange(1 << 30)
    print(f"seed {seed}")
    tpch_small.execute("SET memory_limit = '2MiB'")
    try:
        outcome = session.run(tpch_small, tpch.queries(), seconds=60, seed=seed)
    finally:
        tpch_small.execute("SET memory_limit = DEFAULT")
    _check(outcome, minimum=30)
    limited = [(peak, limit) for peak, limit in pools if limit == 2 << 20]
    assert limited and all(peak <= limit for peak, limit in limited), max(limited or [(0, 0)])


@pytest.mark.slow
def test_mutated_tpcds_queries_for_a_minute():
    from engine.workloads import tpcds
    data_dir = None
    for sf in (0.01, 0.1):          # SF 0.1 when its data is cached and SF 0.01's cannot be generated
        try:
            data_dir = tpcds.generate(sf, tpcds.default_cache_dir())
            break
        except FileNotFoundError as exc:
            reason = str(exc)
    if data_dir is None:
        pytest.skip(f"no TPC-DS data: {reason}")
    con = session.tpcds_connection(data_dir)
    try:
        seed = random.randrange(1 << 30)
        print(f"seed {seed}")
        _check(session.run(session.timed_session(con), tpcds.queries(), seconds=60, seed=seed), minimum=30)
    finally:
        con.close()
