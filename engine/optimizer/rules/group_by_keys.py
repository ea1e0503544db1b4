"""GROUP BY a table's unique key and columns of the same row: group on the key alone.

``GROUP BY c_custkey, c_name, c_address, ...`` where ``c_custkey`` is customer's PRIMARY KEY: every row
of a group has the same customer row, so its other columns have one value per group (they depend
functionally on the key). Grouping on them too hashes and compares every one per input row (a string
by its collation key, computed per row). Here they leave the keys and become ``ANY_VALUE`` aggregates
of the group: same groups, same values, a narrower key.

Only a real dependency counts: a PRIMARY KEY or a UNIQUE key of the table (enforced on every write,
``engine.load.keys``) whose every column is a group key of the same scan of it (a self-join's two
scans are two rows) and NOT NULL in the table (a UNIQUE key lets several rows be NULL; an outer join's
padded row is NULL in every column of the scan, the key too, so it stays one group of NULLs). Key
columns are compared as stored: a string key column, grouped by its collation key, never counts (two
values one collation finds equal are two rows). A dependent key is a column of that scan, or its
collation key, read through projections, filters and joins. Grouping sets are left alone (a rolled-up
key is NULL in some rows, not its ANY_VALUE).

>>> from engine import types as T
>>> from engine.catalog import ColumnDef, TableDef, UniqueKey
>>> from engine.plan.logical import Field
>>> t = TableDef("db", "t", (ColumnDef("k", T.BIGINT, False), ColumnDef("v", T.BIGINT)),
...              unique_keys=(UniqueKey("PRIMARY", ("k",)),))
>>> k, v = Field("k#0", "k", T.BIGINT), Field("v#1", "v", T.BIGINT)
>>> grouped = Aggregate(Scan(t, (k, v), ("k", "v")), ((Field("gk#2", "k", T.BIGINT), k.ref()),
...                                                   (Field("gv#3", "v", T.BIGINT), v.ref())), ())
>>> print(group_by_keys(grouped, None).pretty())     # reads no estimates: no context needed
Project k, v
  Aggregate keys=[k] aggs=[any_value(v)]
    Scan t [k, v]
"""
from __future__ import annotations

from typing import Optional

from engine.core.expressions import AggCall, Call, ColumnRef, Expr
from engine.optimizer.context import OptimizerContext
from engine.plan.logical import (Aggregate, Filter, Join, LogicalPlan, MultiJoin, Project, Scan, Sort,
                                 Window, map_inputs)


def group_by_keys(plan: LogicalPlan, ctx: Optional[OptimizerContext]) -> LogicalPlan:
    plan = map_inputs(plan, lambda child: group_by_keys(child, ctx))
    if isinstance(plan, Aggregate) and not plan.grouping_sets and len(plan.keys) > 1:
        return _on_unique_key(plan)
    return plan


def _on_unique_key(agg: Aggregate) -> LogicalPlan:
    origins: dict[str, tuple[int, str]] = {}         # field id -> (id of its scan, its table column)
    scans: dict[int, Scan] = {}
    _trace(agg.input, origins, scans)
    # each key's (scan, column) where it is a column of a scan or that column's collation key
    sources = [_source(e, origins) for _, e in agg.keys]
    plain = {}              # scan -> the columns grouped as stored (not by a collation key)
    for (_, e), source in zip(agg.keys, sources):
        if source is not None and isinstance(e, ColumnRef):
            plain.setdefault(source[0], set()).add(source[1].lower())
    determined = {scan for scan, columns in plain.items() if _holds_unique_key(scans[scan], columns)}
    if not determined:
        return agg
    keys, moved, kept_key = [], [], set()
    for (f, e), source in zip(agg.keys, sources):
        scan = source[0] if source is not None else None
        # the key columns themselves stay keys, once each
        if scan in determined and (not isinstance(e, ColumnRef) or source[1].lower() not in _key_of(
                scans[scan], plain[scan]) or (scan, source[1].lower()) in kept_key):
            moved.append((f, AggCall("any_value", e, e.type)))
            continue
        if scan in determined:
            kept_key.add((scan, source[1].lower()))
        keys.append((f, e))
    if not moved:
        return agg
    reduced = Aggregate(agg.input, tuple(keys), tuple(moved) + agg.aggregates)
    # the columns in the order the Aggregate had them: whatever reads it by position still does
    return Project(reduced, tuple((f, f.ref()) for f in agg.fields))


def _trace(plan: LogicalPlan, origins: dict, scans: dict) -> None:
    """Fill ``origins`` with the scan column each field of ``plan`` is (through renaming projections,
    filters, joins and windows)."""
    if isinstance(plan, Scan):
        scans[id(plan)] = plan
        for f, column in plan.read_columns():
            origins[f.id] = (id(plan), column)
        return
    if isinstance(plan, (Join, MultiJoin, Filter, Sort, Window)):
        for child in plan.inputs:
            _trace(child, origins, scans)
        return
    if isinstance(plan, Project):
        _trace(plan.input, origins, scans)
        for f, e in plan.exprs:
            if isinstance(e, ColumnRef) and e.id in origins:
                origins[f.id] = origins[e.id]


def _source(e: Expr, origins: dict) -> Optional[tuple[int, str]]:
    if isinstance(e, Call) and e.op == "collation_key" and len(e.args) == 1:
        e = e.args[0]
    return origins.get(e.id) if isinstance(e, ColumnRef) else None


def _unique_keys(scan: Scan) -> list[set[str]]:
    """The scan's table's unique keys usable here: every column NOT NULL and not a string."""
    columns = {c.name.lower(): c for c in scan.table.columns}
    usable = []
    for key in scan.table.unique_keys:
        defs = [columns.get(c.lower()) for c in key.columns]
        if defs and all(d is not None and not d.nullable and d.type.kind != "string" for d in defs):
            usable.append({c.lower() for c in key.columns})
    return usable


def _holds_unique_key(scan: Scan, grouped: set[str]) -> bool:
    return any(key <= grouped for key in _unique_keys(scan))


def _key_of(scan: Scan, grouped: set[str]) -> set[str]:
    """The columns of the first unique key the group keys hold: they stay keys."""
    return next(key for key in _unique_keys(scan) if key <= grouped)
