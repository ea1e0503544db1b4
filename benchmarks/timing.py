"""The one timing rule every benchmark runner here uses: one warm-up call, then the median of N."""
from __future__ import annotations

import statistics
import time
from typing import Callable


def median_seconds(fn: Callable[[], object], repeat: int = 5) -> float:
    """Call ``fn`` once to warm up, then ``repeat`` times; the median wall time of those, in seconds."""
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)
