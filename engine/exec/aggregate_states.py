"""The partial states of the built-in aggregates (COUNT, SUM, AVG, MIN, MAX, ANY_VALUE): which states
each keeps, how each is computed and merged (Arrow's names, also the kernels'), their Arrow types, and
the Arrow group_by helpers every aggregate path shares (sums widened to notice an overflow, results cast
exactly)."""
from __future__ import annotations


import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.core.expressions import AggCall
from engine.core.fields import Field
from engine.exec import decimal64, decimal128
from engine.exec.extended_aggregates import FUNCTIONS, is_extended


# Partial state of each aggregate, as (suffix, Arrow aggregation computing it, Arrow aggregation merging it)
_STATES = {
    "count_star": (("count", "count_all", "sum"),),
    "count": (("count", "count", "sum"),),
    "sum": (("sum", "sum", "sum"),),
    "avg": (("sum", "sum", "sum"), ("count", "count", "sum")),
    "min": (("min", "min", "min"),),
    "max": (("max", "max", "max"),),
    "any_value": (("min", "min", "min"),),       # any value of the group: the smallest is one
}


def state_fields(aggregates: tuple[tuple[Field, AggCall], ...]) -> list[pa.Field]:
    """Arrow fields of the partial states a partial aggregate emits, after its group keys."""
    out = []
    for f, call in aggregates:
        if is_extended(call):
            out.extend(pa.field(f"{f.id}|{suffix}", t) for suffix, t in FUNCTIONS[call.func].states(call))
            continue
        for suffix, _, _ in _STATES[call.func]:
            if suffix == "count":
                t = pa.int64()
            elif suffix == "sum":
                t = _sum_type(call)
            else:
                t = call.type.to_arrow()
            out.append(pa.field(f"{f.id}|{suffix}", t))
    return out


def _sum_type(call: AggCall) -> pa.DataType:
    # Integer sums are kept as DECIMAL(38, 0), as MySQL types SUM(int): Arrow's int64 sum would wrap
    # silently past 2**63.
    arg_type = call.arg.type
    if arg_type.kind == "decimal":
        return pa.decimal128(38, arg_type.scale)
    if arg_type.kind == "float":
        return pa.float64()
    return pa.decimal128(38, 0)


def _sum_decimals_as_int64(table: pa.Table, specs: list) -> tuple[pa.Table, dict[int, int]]:
    """Feed DECIMAL columns that are only summed to Arrow as their scaled int64 integers.

    Arrow's decimal128 hash sum is several times slower than its int64 one. When no value is null and
    rows x largest magnitude cannot overflow int64, the int64 sum of the scaled integers is the exact
    decimal sum. Returns the table and {spec index: scale} of the sums to turn back into decimals.
    """
    summed = {spec[0] for spec in specs if spec[1] == "sum" and isinstance(spec[0], str)}
    other_uses = {spec[0] for spec in specs if spec[1] != "sum" and isinstance(spec[0], str)}
    scaled_columns: dict[str, int] = {}
    for name in summed - other_uses:
        column = table.column(name)
        if not pa.types.is_decimal128(column.type) or column.null_count:
            continue
        chunks = [decimal64.scaled_int64(chunk) for chunk in column.chunks if len(chunk)]
        if any(chunk is None for chunk in chunks):
            continue
        largest = max((int(np.abs(chunk).max()) for chunk in chunks if len(chunk)), default=0)
        if largest * max(table.num_rows, 1) >= (1 << 62):
            continue
        as_int = pa.chunked_array([pa.array(chunk) for chunk in chunks], type=pa.int64())
        table = table.set_column(table.schema.get_field_index(name), name, as_int)
        scaled_columns[name] = column.type.scale
    scaled = {k: scaled_columns[spec[0]] for k, spec in enumerate(specs)
              if isinstance(spec[0], str) and spec[0] in scaled_columns}
    return table, scaled


def _widen_sums(table: pa.Table, specs: list) -> pa.Table:
    """Decimal columns only summed (and counted) as Arrow must sum them to notice an overflow:
    more than 18 digits in 256 bits (``decimal128.widen_for_sum``); ``_narrow_sums`` undoes it."""
    uses: dict[str, set] = {}
    for column, func in specs:
        if isinstance(column, str):
            uses.setdefault(column, set()).add(func)
    for name, funcs in uses.items():
        if "sum" in funcs and funcs <= {"sum", "count"}:
            column = table.column(name)
            wide = decimal128.widen_for_sum(column)
            if wide.type != column.type:
                table = table.set_column(table.schema.get_field_index(name), name, wide)
    return table


def _narrow_sums(columns: list) -> list:
    """Sums that ``_widen_sums`` made decimal256 back to DECIMAL(38, s), checked."""
    return [decimal128.narrow_sum(c, c.type.scale) if pa.types.is_decimal256(c.type) else c for c in columns]


def _state_input(call: AggCall, values: pa.Array) -> pa.Array:
    """The argument column as the aggregate's state accumulates it (integers summed as decimals)."""
    if call.func in ("sum", "avg") and call.arg.type.kind in ("int", "bool"):
        return values.cast(pa.int64()).cast(pa.decimal128(38, 0))
    return values


def _as_schema(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` cast to ``schema`` (itself when it has it already: a cast copies)."""
    return table if table.schema.equals(schema) else table.cast(schema)


def _cast_result(column, target: pa.DataType):
    """A merged state to its SQL type; a sum that does not fit its DECIMAL(p, s) is an overflow."""
    try:
        return column.cast(target)
    except pa.ArrowInvalid:
        if not pa.types.is_decimal(target):
            raise
        raise decimal128.DecimalOverflow(f"DECIMAL value is out of range: the result does not fit "
                                         f"DECIMAL({target.precision},{target.scale})") from None


# Aggregations of a whole table without group keys, straight from the compute functions: Acero's
# group_by with no keys gives the same values and types (checked in tests/exec/test_keyless_aggregate.py)
# but costs ~40 us of plan set-up per call, which a point query pays on every leaf (workload j).
_KEYLESS = {"count": pc.count, "sum": pc.sum, "min": pc.min, "max": pc.max, "count_distinct": pc.count_distinct}
# _merge_keyless merges at most this many rows of integer states (one a task) in Python
_FEW_STATES = 64
_PYTHON_MERGE = {"sum": sum, "min": min, "max": max}


def _group_by(table: pa.Table, key_names: list[str], specs: list) -> pa.Table:
    """``table.group_by(key_names).aggregate(specs)``; keyless specs of the common functions directly."""
    if key_names or not all(func == "count_all" or func in _KEYLESS for _, func in specs):
        return table.group_by(key_names, use_threads=False).aggregate(specs)
    columns = []
    for column, func in specs:
        if func == "count_all":
            columns.append(pa.array([table.num_rows], pa.int64()))
        else:
            value = _KEYLESS[func](table.column(column))
            columns.append(pa.array([value.as_py()], value.type))
    return pa.table(columns, names=[f"{column}_{func}" for column, func in specs])


def _split_grouped(grouped: pa.Table, key_names: list[str]) -> tuple[list, list]:
    """Arrow names aggregation results '<column>_<function>' (order as requested) beside the keys."""
    keys = [grouped.column(n) for n in key_names]
    key_set = set(key_names)
    aggs = [grouped.column(i) for i, n in enumerate(grouped.column_names) if n not in key_set]
    return keys, aggs


def _sum_lists(lists: pa.Array) -> tuple[pa.Array, pa.Array]:
    """SUM and COUNT of each list of a list array (NULL sum for an empty list): SUM(DISTINCT x) over the
    per-group distinct values Arrow's ``distinct`` aggregation collects."""
    groups = len(lists)
    values = decimal128.widen_for_sum(pc.list_flatten(lists))
    parents = pc.list_parent_indices(lists)
    per_group = pa.table({"g": parents, "v": values}).group_by("g", use_threads=False).aggregate(
        [("v", "sum"), ("v", "count")])
    where = np.full(groups, -1, dtype=np.int64)
    where[per_group.column("g").to_numpy()] = np.arange(per_group.num_rows)
    index = pa.array(where, mask=where < 0)
    total = per_group.column("v_sum").combine_chunks().take(index) if per_group.num_rows else \
        pa.nulls(groups, values.type)
    count = per_group.column("v_count").combine_chunks().take(index).fill_null(0) if per_group.num_rows else \
        pa.array(np.zeros(groups, dtype=np.int64))
    return _narrow_sums([total])[0], count


def raise_unsupported(call: AggCall):
    from engine.errors import UnsupportedError
    raise UnsupportedError(f"{call.func.upper()}(DISTINCT ...) is not supported yet; COUNT(DISTINCT ...) is")
