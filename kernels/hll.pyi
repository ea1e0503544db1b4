"""Type stubs for the compiled kernels/hll.pyx (see its module docstring for the sketch)."""
from typing import Final

import numpy as np
import numpy.typing as npt

MIN_PRECISION: Final[int]
MAX_PRECISION: Final[int]

# Buffers in; `registers` (uint8, 2**p of them) is modified in place.
def hll_add(hashes: npt.NDArray[np.uint64], registers: npt.NDArray[np.uint8]) -> None: ...
def hll_merge(registers: npt.NDArray[np.uint8], other: npt.NDArray[np.uint8]) -> None: ...
def hll_estimate(registers: npt.NDArray[np.uint8]) -> float: ...
