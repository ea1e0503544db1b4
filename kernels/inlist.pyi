"""Type stubs for the compiled kernels/inlist.pyx (see its module docstring for the semantics)."""
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

Bits = npt.NDArray[np.uint8]

# Public API (re-exported by kernels/__init__.py).
def supports_in_list(t: pa.DataType) -> bool: ...

class InList:
    value_type: pa.DataType
    has_null: bool
    size: int
    def __init__(self, values: Sequence[Any], value_type: pa.DataType) -> None: ...
    def contains(self, arr: pa.Array) -> pa.BooleanArray: ...

# Low-level kernels: `out` (a packed bitmap) is modified in place.
def any_equal(values: npt.NDArray[np.signedinteger], lst: npt.NDArray[np.signedinteger], out: Bits) -> None: ...
def probe_integer_set(
    values: npt.NDArray[np.signedinteger], bloom: npt.NDArray[np.uint64], log2_words: int,
    table: npt.NDArray[np.int64], used: Bits, out: Bits,
) -> None: ...
def probe_string_set(
    offsets: npt.NDArray[np.int32 | np.int64], data: Bits, bloom: npt.NDArray[np.uint64],
    log2_words: int, table: npt.NDArray[np.int64], key_offsets: npt.NDArray[np.int64],
    key_data: Bits, key_hashes: npt.NDArray[np.uint64], out: Bits,
) -> None: ...
