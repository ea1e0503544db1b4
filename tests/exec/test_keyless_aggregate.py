"""The keyless aggregation shortcut of HashAggregateExec gives exactly what Acero's group_by with no
keys gives: same values, same types, for nulls, empty inputs and several chunks."""
from decimal import Decimal

import pyarrow as pa
import pytest

from engine.exec.aggregate_states import _group_by

COLUMNS = [
    pa.array([1, None, 3]),
    pa.array([1, 2], pa.int32()),
    pa.array([1.5, None, -0.0]),
    pa.array([Decimal("1.25"), None, Decimal("-7.10")], pa.decimal128(15, 2)),
    pa.array([1, 2], pa.date32()),
    pa.array(["b", "a", None]),
    pa.array([], pa.int64()),
    pa.array([None, None], pa.int32()),
    pa.array([True, False, None]),
]


@pytest.mark.parametrize("column", COLUMNS, ids=lambda c: str(c.type))
@pytest.mark.parametrize("func", ["count", "sum", "min", "max", "count_distinct"])
def test_keyless_matches_acero(column, func):
    table = pa.Table.from_batches([pa.record_batch([column], names=["a"])] * 2)   # two chunks
    specs = [("a", func), ([], "count_all")]
    try:
        expected = table.group_by([], use_threads=False).aggregate(specs)
    except pa.ArrowNotImplementedError:
        with pytest.raises(pa.ArrowNotImplementedError):
            _group_by(table, [], specs)
        return
    got = _group_by(table, [], specs)
    assert [c.type for c in got.columns] == [c.type for c in expected.columns]
    assert got.to_pylist() == [dict(zip(got.column_names, row.values())) for row in expected.to_pylist()]
