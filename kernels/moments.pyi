"""Type stubs for the compiled kernels/moments.pyx (see its module docstring)."""
import numpy as np
import numpy.typing as npt

Ids = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]

# Buffers in; the state arrays (one slot per group) are modified in place.
def moments_update(ids: Ids, values: F64, validity: npt.NDArray[np.uint8], offset: int,
                   count: Ids, mean: F64, m2: F64) -> None: ...
def moments_merge(ids: Ids, in_count: Ids, in_mean: F64, in_m2: F64, count: Ids, mean: F64, m2: F64) -> None: ...
def comoments_update(ids: Ids, x: F64, y: F64, valid: npt.NDArray[np.uint8], count: Ids, mean_x: F64,
                     mean_y: F64, m2_x: F64, m2_y: F64, c: F64) -> None: ...
def comoments_merge(ids: Ids, in_count: Ids, in_mean_x: F64, in_mean_y: F64, in_m2_x: F64, in_m2_y: F64,
                    in_c: F64, count: Ids, mean_x: F64, mean_y: F64, m2_x: F64, m2_y: F64, c: F64) -> None: ...
