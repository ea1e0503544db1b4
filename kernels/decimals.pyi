"""Type stubs for the compiled kernels/decimals.pyx (see its module docstring)."""
import numpy as np
import numpy.typing as npt

Words = npt.NDArray[np.int64]
Bytes = npt.NDArray[np.uint8]

# Two int64 words per row in and out; returns -1 or the first row whose result does not fit.
DIVIDE: int
INT_DIVIDE: int
MOD: int
FLOOR_DIVIDE: int
CEILING_DIVIDE: int

def decimal_divide(a: Words, a_step: int, b: Words, b_step: int, shift_a: int, shift_b: int, op: int,
                   precision: int, out: Words, valid: Bytes) -> int: ...
def decimal_multiply(a: Words, a_step: int, b: Words, b_step: int, down: int, precision: int,
                     out: Words, valid: Bytes) -> int: ...
def decimal_add(a: Words, a_step: int, b: Words, b_step: int, shift_a: int, shift_b: int, subtract: bool,
                precision: int, out: Words, valid: Bytes) -> int: ...
