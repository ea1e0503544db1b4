"""Benchmarks of frame-of-reference bit-packing against the NumPy copies it replaces (asv-style).

Packing a column is the alternative to writing it as is; the baselines are therefore the cheapest
NumPy ways to produce the same values: ``astype`` to the narrowest dtype that holds the range (what a
byte-aligned encoding would do) and a plain ``copy``. ``implementation`` is ``compiled`` (the Cython
kernel), ``reference`` (kernels/reference, NumPy bit arrays; small sizes only) or ``numpy``.
``python benchmarks/bench_bitpack.py`` prints throughput in values/s and GB/s of input.
"""
import importlib
import sys
import time

import numpy as np

ROWS = 8_000_000
WIDTHS = [3, 11, 20, 64]
MODULES = {"compiled": "kernels.bitpack", "reference": "kernels.reference.bitpack"}


def _load(implementation):
    try:
        return importlib.import_module(MODULES[implementation])
    except ImportError as exc:
        raise NotImplementedError(f"{implementation} kernels unavailable: {exc}") from exc  # asv: skip


def column(width, rows=ROWS, dtype=np.int64, seed=0):
    """``rows`` values spread over a range that needs exactly ``width`` bits, offset from zero."""
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    if width >= info.bits:
        values = rng.integers(info.min, info.max, rows, dtype=dtype, endpoint=True)
        values[:2] = info.min, info.max
        return values
    values = rng.integers(0, 2**width, rows, dtype=np.int64) + 1_000_000
    values[:2] = 1_000_000, 1_000_000 + 2**width - 1
    return values.astype(dtype)


def _narrow_dtype(width):
    return next(t for t in (np.uint8, np.uint16, np.uint32, np.uint64) if np.iinfo(t).bits >= width)


class Pack:
    params = (["compiled", "numpy"], WIDTHS)
    param_names = ["implementation", "bit_width"]

    def setup(self, implementation, bit_width):
        self.values = column(bit_width)
        self.narrow = _narrow_dtype(bit_width)
        self.impl = _load(implementation) if implementation != "numpy" else None

    def time_pack(self, implementation, bit_width):
        if self.impl is not None:
            self.impl.pack(self.values)
        else:
            (self.values - self.values.min()).astype(self.narrow)


class Unpack:
    params = (["compiled", "numpy"], WIDTHS)
    param_names = ["implementation", "bit_width"]

    def setup(self, implementation, bit_width):
        values = column(bit_width)
        self.impl = _load(implementation) if implementation != "numpy" else None
        self.base, self.width, self.packed = _load("compiled").pack(values)
        self.narrow = (values - self.base).astype(_narrow_dtype(bit_width))
        self.out = np.empty_like(values)

    def time_unpack(self, implementation, bit_width):
        if self.impl is not None:
            self.impl.unpack(self.base, self.width, self.packed, len(self.out), self.out)
        else:
            np.add(self.narrow, self.out.dtype.type(self.base), out=self.out, casting="unsafe",
                   dtype=self.out.dtype)


def _best(fn, repeat=7):
    fn()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main():
    compiled = _load("compiled")
    print(f"{ROWS:,} values per run; best of 7; throughput in M values/s (GB/s of input)")
    print(f"{'dtype':>6} {'bits':>4} {'pack':>14} {'unpack':>14} {'astype':>14} {'copy':>14} "
          f"{'add+cast':>14} {'size':>6}")
    for dtype in (np.int64, np.int32):
        for width in WIDTHS:
            if width > np.iinfo(dtype).bits:
                continue
            values = column(width, dtype=dtype)
            base, w, packed = compiled.pack(values)
            assert w == width
            out = np.empty_like(values)
            narrow_t = _narrow_dtype(width)
            narrow = (values - base).astype(narrow_t)
            times = {
                "pack": _best(lambda: compiled.pack(values)),
                "unpack": _best(lambda: compiled.unpack(base, w, packed, len(out), out)),
                "astype": _best(lambda: (values - values.min()).astype(narrow_t)),
                "copy": _best(lambda: values.copy()),
                "add+cast": _best(lambda: np.add(narrow, values.dtype.type(base), out=out,
                                                     casting="unsafe", dtype=values.dtype)),
            }
            cells = " ".join(f"{ROWS / t / 1e6:7.0f} ({values.nbytes / t / 1e9:4.1f})"
                             for t in times.values())
            print(f"{np.dtype(dtype).name:>6} {width:>4} {cells} {packed.nbytes / values.nbytes:6.3f}")
    ref = _load("reference")
    small = column(11, rows=100_000)
    t = _best(lambda: ref.pack(small), repeat=3)
    print(f"reference pack, 100k values of 11 bits: {small.shape[0] / t / 1e6:.1f} M values/s")


if __name__ == "__main__":
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1]))
    main()
