"""Type stubs for the compiled kernels/collation.pyx (see its module docstring)."""
import numpy as np
import numpy.typing as npt
import pyarrow as pa

Offsets = npt.NDArray[np.int32] | npt.NDArray[np.int64]

# Public API (re-exported by kernels/__init__.py): a string Array in, its collation keys out, nulls kept.
def collation_key(arr: pa.Array, table: npt.NDArray[np.uint16], replacement: int = 0xFFFD,
                  pad: bool = True) -> pa.Array: ...

# Low-level kernel: buffers in, caller-allocated outputs modified in place; returns the bytes written.
def collation_keys(offsets: Offsets, data: npt.NDArray[np.uint8], table: npt.NDArray[np.uint16],
                   replacement: int, pad: bool, out_offsets: Offsets, out_data: npt.NDArray[np.uint8]) -> int: ...

# The same for tables where a character weighs zero or several weights (its weights:
# weights[starts[cp]:starts[cp + 1]]; starts of 65537 (BMP, the rest weigh replacement) or 1114113 entries).
SUPPLEMENTARY: bool   # expanding_key takes tables of every code point and weights above U+FFFF
def expanding_key(arr: pa.Array, starts: npt.NDArray[np.uint32], weights: npt.NDArray[np.uint32],
                  replacement: int = 0xFFFD, pad: bool = False) -> pa.Array: ...
def expanding_keys(offsets: Offsets, data: npt.NDArray[np.uint8], starts: npt.NDArray[np.uint32],
                   weights: npt.NDArray[np.uint32], replacement: int, pad: bool, out_offsets: Offsets,
                   out_data: npt.NDArray[np.uint8], write: bool) -> int: ...
