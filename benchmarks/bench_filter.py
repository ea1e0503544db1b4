"""Benchmarks of the filter and IN-list kernels against pyarrow.compute (asv-style classes).

asv times every ``time_*`` method after ``setup``; ``implementation`` is ``compiled`` (the Cython
kernels), ``reference`` (kernels/reference, i.e. pyarrow.compute with the SQL null rules) or
``pyarrow`` (the bare ``pyarrow.compute`` call one would write without Canopy). ``compiled`` is
skipped when it is not built. ``python benchmarks/bench_filter.py`` prints the same table directly.
"""
import importlib
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

ROWS = 8_000_000
IMPLEMENTATIONS = ["compiled", "reference", "pyarrow"]
MODULES = {"compiled": ("kernels.filter", "kernels.inlist"),
           "reference": ("kernels.reference.filter", "kernels.reference.inlist")}


def _load(implementation):
    if implementation == "pyarrow":
        return None, None
    try:
        return tuple(importlib.import_module(m) for m in MODULES[implementation])
    except ImportError as exc:
        raise NotImplementedError(f"{implementation} kernels unavailable: {exc}") from exc  # asv: skip


def int32_column(rows=ROWS, seed=0, null_fraction=0.0):
    """Workload c's column: the unique integers 0..rows-1, shuffled."""
    rng = np.random.default_rng(seed)
    values = rng.permutation(rows).astype(np.int32)
    mask = rng.random(rows) < null_fraction if null_fraction else None
    return pa.array(values, mask=mask)


def string_column(rows=1_000_000, seed=0):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(4, 21, rows)
    offsets = np.zeros(rows + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    data = rng.integers(ord("a"), ord("z") + 1, int(offsets[-1]), dtype=np.uint8)
    return pa.Array.from_buffers(pa.string(), rows, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


LIST_904 = [int(v) for v in np.random.default_rng(904).choice(ROWS, 904, replace=False)]


class Compare:
    """``i < c``, ``i BETWEEN a AND b`` and ``d = c`` on 8M int32 / 8M float64 (10% nulls)."""

    params = IMPLEMENTATIONS
    param_names = ["implementation"]

    def setup(self, implementation):
        self.filter, _ = _load(implementation)
        self.ints = int32_column(null_fraction=0.1)
        self.floats = pc.cast(self.ints, pa.float64())

    def time_less_int32(self, implementation):
        if self.filter is None:
            pc.less(self.ints, pa.scalar(ROWS // 2, pa.int32()))
        else:
            self.filter.compare(self.ints, "lt", ROWS // 2)

    def time_between_int32(self, implementation):
        if self.filter is None:
            pc.and_kleene(pc.greater_equal(self.ints, pa.scalar(100, pa.int32())),
                          pc.less_equal(self.ints, pa.scalar(200_000, pa.int32())))
        else:
            self.filter.compare(self.ints, "between", 100, 200_000)

    def time_equal_float64(self, implementation):
        if self.filter is None:
            pc.equal(self.floats, 12345.0)
        else:
            self.filter.compare(self.floats, "eq", 12345.0)


class StringMatch:
    """``s LIKE 'ab%'`` and ``s LIKE '%abc%'`` on 1M strings of 4-20 letters."""

    params = IMPLEMENTATIONS
    param_names = ["implementation"]

    def setup(self, implementation):
        self.filter, _ = _load(implementation)
        self.strings = string_column()

    def time_prefix(self, implementation):
        if self.filter is None:
            pc.starts_with(self.strings, "ab")
        else:
            self.filter.match_string(self.strings, "prefix", "ab")

    def time_contains(self, implementation):
        if self.filter is None:
            pc.match_substring(self.strings, "abc")
        else:
            self.filter.match_string(self.strings, "contains", "abc")


class InList:
    """Workload c at the kernel level: 8M unique shuffled int32, IN (1, 100, 200) and 904 values."""

    params = (IMPLEMENTATIONS, ["3", "904"])
    param_names = ["implementation", "values"]

    def setup(self, implementation, values):
        _, self.inlist = _load(implementation)
        self.ints = int32_column()
        self.values = [1, 100, 200] if values == "3" else LIST_904
        self.built = self.inlist.InList(self.values, pa.int32()) if self.inlist else None
        self.value_set = pa.array(self.values, pa.int32())

    def time_in_list(self, implementation, values):
        if self.built is None:
            pc.is_in(self.ints, value_set=self.value_set)
        else:
            self.built.contains(self.ints)


class CountRunEndEncoded:
    """Workload d at the kernel level: COUNT(*) WHERE i = 2 over 10M sorted rows, 1000 runs."""

    params = IMPLEMENTATIONS
    param_names = ["implementation"]

    def setup(self, implementation):
        self.filter, _ = _load(implementation)
        plain = pa.array(np.repeat(np.arange(1000, dtype=np.int32), 10_000))
        self.runs = pc.run_end_encode(plain)

    def time_count(self, implementation):
        if self.filter is None:
            pc.sum(pc.equal(pc.run_end_decode(self.runs), 2))
        else:
            self.filter.count_matches(self.runs, "eq", 2)


def _best_of(fn, repeat=7):
    fn()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main():
    suites = [(Compare, ["time_less_int32", "time_between_int32", "time_equal_float64"], [()]),
              (StringMatch, ["time_prefix", "time_contains"], [()]),
              (InList, ["time_in_list"], [("3",), ("904",)]),
              (CountRunEndEncoded, ["time_count"], [()])]
    for cls, methods, extra_params in suites:
        for extra in extra_params:
            for method in methods:
                print(f"{cls.__name__}.{method}{'[' + ','.join(extra) + ']' if extra else ''}")
                for impl in IMPLEMENTATIONS:
                    bench = cls()
                    try:
                        bench.setup(impl, *extra)
                    except NotImplementedError as exc:
                        print(f"  {impl:10s} skipped: {exc}")
                        continue
                    seconds = _best_of(lambda: getattr(bench, method)(impl, *extra))
                    print(f"  {impl:10s} {seconds * 1e3:9.3f} ms")


if __name__ == "__main__":
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1]))
    main()
