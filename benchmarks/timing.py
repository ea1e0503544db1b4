"""The one timing rule every benchmark runner here uses: one warm-up call, then the median of N."""
from __future__ import annotations

import statistics
import time
from typing import Callable


def median_seconds(fn: Callable[[], object], repeat: int = 5,
                   clock: Callable[[], float] = time.perf_counter) -> float:
    """Call ``fn`` once to warm up, then ``repeat`` times; the median time of those by ``clock``
    (wall time; ``time.process_time``: the CPU the process spent, every thread's), in seconds."""
    fn()
    times = []
    for _ in range(repeat):
        start = clock()
        fn()
        times.append(clock() - start)
    return statistics.median(times)
