"""Benchmarks of the hashing kernels (asv-style classes), and a plain comparison when run directly.

asv times every ``time_*`` method after ``setup``; each class is parametrised by implementation
(the compiled kernels or the NumPy reference), and skips ``compiled`` when it is not built.

``python benchmarks/bench_kernels.py`` prints rows/s for the compiled kernels, the reference, and
what one would use without them. pyarrow has no row-hash kernel, so the stand-ins are pandas'
``hash_array`` (a NumPy mix for integers, SipHash over Python objects for strings) and, for the
split, pandas hashing + a stable NumPy argsort + one ``take``.
"""
import importlib
import sys
import time

import numpy as np
import pyarrow as pa

IMPLEMENTATIONS = ["compiled", "reference"]
MODULES = {"compiled": "kernels.hashing", "reference": "kernels.reference.hashing"}


def _load(implementation):
    try:
        return importlib.import_module(MODULES[implementation])
    except ImportError as exc:
        # asv's convention for "skip this parameter combination"
        raise NotImplementedError(f"{implementation} kernels unavailable: {exc}") from exc


def int64_column(rows, seed=0):
    return pa.array(np.random.default_rng(seed).integers(-(2**62), 2**62, rows, dtype=np.int64))


def string_column(rows, seed=0):
    """Strings of 4 to 40 ASCII letters: typical SQL keys (codes, names, e-mails)."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(4, 41, rows)
    offsets = np.zeros(rows + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    data = rng.integers(ord("a"), ord("z") + 1, int(offsets[-1]), dtype=np.uint8)
    return pa.Array.from_buffers(pa.string(), rows, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def two_column_batch(rows, seed=0):
    rng = np.random.default_rng(seed)
    return pa.record_batch({
        "k": pa.array(rng.integers(0, rows // 4, rows, dtype=np.int64)),
        "v": pa.array(rng.standard_normal(rows)),
    })


class HashInt64:
    params = IMPLEMENTATIONS
    param_names = ["implementation"]

    def setup(self, implementation):
        self.impl = _load(implementation)
        self.column = int64_column(10_000_000)

    def time_hash_columns(self, implementation):
        self.impl.hash_columns([self.column])


class HashStrings:
    params = IMPLEMENTATIONS
    param_names = ["implementation"]

    def setup(self, implementation):
        self.impl = _load(implementation)
        self.column = string_column(1_000_000)

    def time_hash_columns(self, implementation):
        self.impl.hash_columns([self.column])


class SplitBatch:
    params = IMPLEMENTATIONS
    param_names = ["implementation"]

    def setup(self, implementation):
        self.impl = _load(implementation)
        self.batch = two_column_batch(1_000_000)

    def time_split_batch_8(self, implementation):
        self.impl.split_batch(self.batch, ["k"], 8)

    def time_split_batch_8_both_keys(self, implementation):
        self.impl.split_batch(self.batch, ["k", "v"], 8)


# ---------------------------------------------------------------------------------------------------
# Direct run: kernel vs reference vs the tools at hand


def _best_of(fn, repeat):
    fn()  # warm-up: page in the inputs, import lazily loaded code
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def _pandas_split(batch, key, n):
    import pandas as pd

    hashes = pd.util.hash_array(batch.column(key).to_numpy())
    ids = (hashes % np.uint64(n)).astype(np.int32)
    order = np.argsort(ids, kind="stable")
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(ids, minlength=n), out=offsets[1:])
    taken = batch.take(order)
    return [taken.slice(offsets[p], offsets[p + 1] - offsets[p]) for p in range(n)]


def main():
    import pandas as pd

    impls = {}
    for name in IMPLEMENTATIONS:
        try:
            impls[name] = _load(name)
        except NotImplementedError as exc:
            print(exc, file=sys.stderr)

    ints = int64_column(10_000_000)
    ints_np = ints.to_numpy()
    strings = string_column(1_000_000)
    strings_obj = strings.to_numpy(zero_copy_only=False)
    batch = two_column_batch(1_000_000)

    cases = [
        ("hash_columns, 10M int64", len(ints), {
            **{name: (lambda m=m: m.hash_columns([ints])) for name, m in impls.items()},
            "pandas hash_array": lambda: pd.util.hash_array(ints_np),
        }),
        ("hash_columns, 1M strings (4-40 B)", len(strings), {
            **{name: (lambda m=m: m.hash_columns([strings])) for name, m in impls.items()},
            "pandas hash_array (object array ready)": lambda: pd.util.hash_array(strings_obj),
        }),
        ("split_batch, 1M rows x 2 cols -> 8 (key k)", batch.num_rows, {
            **{name: (lambda m=m: m.split_batch(batch, ["k"], 8)) for name, m in impls.items()},
            "pandas hash + argsort + take": lambda: _pandas_split(batch, "k", 8),
        }),
        ("split_batch, 1M rows x 2 cols -> 8 (keys k, v)", batch.num_rows, {
            name: (lambda m=m: m.split_batch(batch, ["k", "v"], 8)) for name, m in impls.items()
        }),
    ]
    if "compiled" in impls:
        compiled = impls["compiled"]
        hashes = compiled.hash_columns([ints])
        ids = compiled.partition_ids(hashes, 8)
        cases += [
            ("partition_ids, 10M hashes -> 8", len(hashes),
             {"compiled": lambda: compiled.partition_ids(hashes, 8)}),
            ("scatter_indices, 10M ids -> 8", len(ids),
             {"compiled": lambda: compiled.scatter_indices(ids, 8),
              "numpy argsort(stable)": lambda: np.argsort(ids, kind="stable")}),
        ]

    for title, rows, contenders in cases:
        print(title)
        for name, fn in contenders.items():
            seconds = _best_of(fn, repeat=1 if name == "reference" else 5)
            print(f"  {name:40s} {seconds * 1e3:9.1f} ms  {rows / seconds / 1e6:9.1f} M rows/s")


if __name__ == "__main__":
    # Run from a checkout without `pip install -e .`: import kernels from the repository root.
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1]))
    main()
