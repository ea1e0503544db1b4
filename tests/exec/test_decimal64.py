"""Decimals as int64 scaled integers (the aggregates' sums) turn back into the same decimals."""
import decimal

import pyarrow as pa

from engine.exec import decimal64


def test_sums_with_empty_groups_stay_null():
    values = pa.array([150, None, -25], pa.int64())
    assert decimal64.from_int64_array(values, pa.decimal128(38, 2)).to_pylist() == \
        [decimal.Decimal("1.50"), None, decimal.Decimal("-0.25")]
