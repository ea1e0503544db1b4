"""Benchmarks of the hash-join kernel against pyarrow Acero's hash join (asv-style classes).

1M probe rows against 100k build rows (every build key distinct, every probe key found: the shape
of lineitem against orders), int64 keys and 12-20-byte string keys. Each implementation produces the
same thing, the (probe row, build row) index pairs of the inner join (Acero joins two tables that
carry their row numbers) or the probe rows of the semi join. ``implementation`` is ``compiled``
(kernels/join.pyx), ``reference`` (kernels/reference/join.py) or ``acero`` (``pa.Table.join``,
what HashJoinExec used before the kernel). ``python benchmarks/bench_join.py`` prints one line per
case with the compiled / Acero ratio (best of 5, CPU time).
"""
import importlib
import sys
import time

import numpy as np
import pyarrow as pa

PROBE_ROWS = 1_000_000
BUILD_ROWS = 100_000
IMPLEMENTATIONS = ["compiled", "reference", "acero"]
MODULES = {"compiled": "kernels.join", "reference": "kernels.reference.join"}


def _load(implementation):
    if implementation == "acero":
        return None
    try:
        return importlib.import_module(MODULES[implementation])
    except ImportError as exc:
        raise NotImplementedError(f"{implementation} kernels unavailable: {exc}") from exc  # asv: skip


def _strings(values):
    """Distinct strings of 12-20 bytes for distinct integers."""
    prefix = np.array(["customer#", "supplier#00", "part#0000"])[values % 3]
    return pa.array(np.char.add(prefix, values.astype(str)))


def keys(kind, seed=0):
    """(build keys, probe keys): distinct build keys, probe keys drawn from them."""
    rng = np.random.default_rng(seed)
    build = rng.permutation(BUILD_ROWS).astype(np.int64) * 7919
    probe = build[rng.integers(0, BUILD_ROWS, PROBE_ROWS)]
    if kind == "string":
        return _strings(build), _strings(probe)
    return pa.array(build), pa.array(probe)


class HashJoin:
    """Inner-join index pairs and semi-join selection, 1M x 100k keys."""

    params = (IMPLEMENTATIONS, ["int64", "string"])
    param_names = ["implementation", "key"]

    def setup(self, implementation, key):
        self.join = _load(implementation)
        self.build, self.probe = keys(key)
        self.left = pa.table({"k": self.probe, "pi": np.arange(PROBE_ROWS, dtype=np.int64)})
        self.right = pa.table({"k": self.build, "bi": np.arange(BUILD_ROWS, dtype=np.int64)})

    def time_inner_pairs(self, implementation, key):
        if self.join is None:
            self.left.join(self.right, keys="k", join_type="inner", use_threads=False)
            return
        table = self.join.JoinTable([self.build])
        for _ in table.pairs(table.lookup([self.probe])):
            pass

    def time_semi(self, implementation, key):
        if self.join is None:
            self.left.join(self.right.select(["k"]), keys="k", join_type="left semi", use_threads=False)
            return
        table = self.join.JoinTable([self.build])
        table.semi(table.lookup([self.probe]))


def _best_of(fn, repeat=5):
    """Best CPU time of ``repeat`` calls (both sides run on one thread; CPU time is steadier than
    wall time on a shared machine)."""
    fn()
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def main():
    for key in ("int64", "string"):
        for method in ("time_inner_pairs", "time_semi"):
            seconds = {}
            for impl in IMPLEMENTATIONS:
                bench = HashJoin()
                try:
                    bench.setup(impl, key)
                except NotImplementedError as exc:
                    print(f"  {impl} skipped: {exc}")
                    continue
                seconds[impl] = _best_of(lambda: getattr(bench, method)(impl, key))
            ratio = seconds["compiled"] / seconds["acero"] if "compiled" in seconds else float("nan")
            print(f"{method[5:]:12s} {key:7s} {PROBE_ROWS:,} x {BUILD_ROWS:,}: "
                  + ", ".join(f"{impl} {s * 1e3:8.2f} ms" for impl, s in seconds.items())
                  + f"  (compiled / acero {ratio:.2f})")


if __name__ == "__main__":
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1]))
    main()
