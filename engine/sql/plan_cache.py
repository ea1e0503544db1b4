"""The plan cache: a query run again with other parameter values reuses its optimized plan.

Key: the statement text with its ``%s`` markers numbered (``mark_placeholders``), the Python types of
the values, the current database and the runner's size. The whole cache is dropped by any statement
that is not a query (DDL, ANALYZE, INSERT, LOAD, ...), since it may change a table, its statistics or
the choices made from them.

Literal values feed the binder's folding and the optimizer's estimates and rewrites, so a cached plan
cannot simply have new values poked in wherever the old ones sit. On a miss the query is planned twice,
with the real values and with other values of the same types, and the two plans are compared field by
field: if they differ only where one holds value ``i`` of the first set and the other value ``i`` of
the second (each parameter appearing at least once), those places are the parameter's slots, and a
later run substitutes its values there. Any other difference (a folded ``%s + 1``, a LIKE prefix turned
into a range, a literal typed by its magnitude) marks the statement uncacheable and it is planned every
time. Plans chosen from the first values' estimates are reused for other values: that is the trade
every plan cache makes; the plan stays correct, it may be less suited.
"""
from __future__ import annotations

import copy
import dataclasses
from typing import Any, Optional

import pyarrow as pa

UNCACHEABLE = object()
CACHEABLE_TYPES = (int, float, str)
MAX_ENTRIES = 1024


class PlanCache:
    """Shared by every session of a runner (like its statistics); ``version`` counts invalidations."""

    def __init__(self):
        self.entries: dict[tuple, Any] = {}
        self.version = 0
        self.hits = 0
        self.misses = 0
        self.enabled = True

    @staticmethod
    def key(marked_sql: str, values: list, database: Optional[str], num_partitions: int) -> Optional[tuple]:
        if not values or any(type(v) not in CACHEABLE_TYPES for v in values):
            return None      # bool, None, dates, decimals, bytes: not worth the risk of a wrong slot
        return (marked_sql, tuple(type(v) for v in values), database, num_partitions)

    def invalidate(self) -> None:
        self.entries.clear()
        self.version += 1

    def put(self, key: tuple, entry) -> None:
        if len(self.entries) >= MAX_ENTRIES:
            self.entries.pop(next(iter(self.entries)))
        self.entries[key] = entry


def other_values(values: list) -> list:
    """Values of the same types that differ from ``values`` and from each other's replacements."""
    out = []
    for i, v in enumerate(values):
        if isinstance(v, str):
            out.append(v + f"\x01{i}")
        else:
            out.append(v + 7919 * (i + 1))
    return out


@dataclasses.dataclass(frozen=True)
class PlanTemplate:
    planned: Any                                   # the PlannedQuery of the first values
    slots: tuple[tuple[tuple, int], ...]           # (path into (init_plans, stages), parameter index)

    def bind(self, values: list):
        runnable = (self.planned.init_plans, self.planned.stages)
        for path, index in self.slots:
            runnable = _set(runnable, path, values[index])
        init_plans, stages = runnable
        return dataclasses.replace(self.planned, init_plans=init_plans, stages=stages)


def make_template(first, second, values: list, others: list) -> Optional[PlanTemplate]:
    """The template of two plans of one statement, planned with ``values`` and ``others``; None when
    they differ anywhere but in those values."""
    differences: list[tuple[tuple, Any, Any]] = []
    if not _diff((first.init_plans, first.stages), (second.init_plans, second.stages), (), differences):
        return None
    slots = []
    for path, a, b in differences:
        matches = [i for i, (v, w) in enumerate(zip(values, others))
                   if type(a) is type(v) and a == v and type(b) is type(w) and b == w]
        if len(matches) != 1:
            return None
        slots.append((path, matches[0]))
    if {i for _, i in slots} != set(range(len(values))):
        return None      # a value that left no trace may have been used up (folded, estimated away)
    return PlanTemplate(first, tuple(slots))


def _diff(a, b, path: tuple, out: list) -> bool:
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        return all(_diff(getattr(a, f.name), getattr(b, f.name), path + (f.name,), out)
                   for f in dataclasses.fields(a))
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_diff(x, y, path + (i,), out) for i, (x, y) in enumerate(zip(a, b)))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_diff(a[k], b[k], path + (k,), out) for k in a)
    if isinstance(a, (pa.Array, pa.ChunkedArray, pa.Table, pa.RecordBatch, pa.Schema, pa.DataType, pa.Scalar)):
        return a.equals(b)
    if isinstance(a, (int, float, str, bytes, type(None))):
        if a != b:
            out.append((path, a, b))
        return True
    try:
        return bool(a == b)       # anything else (sets, dates, Decimals, enums) must be equal outright
    except Exception:             # noqa: BLE001 - an object without a truthful ==: not comparable, not cacheable
        return False


def _set(obj, path: tuple, value):
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(obj, tuple):
        return obj[:head] + (_set(obj[head], rest, value),) + obj[head + 1:]
    if isinstance(obj, list):
        return obj[:head] + [_set(obj[head], rest, value)] + obj[head + 1:]
    if isinstance(obj, dict):
        return {**obj, head: _set(obj[head], rest, value)}
    new = copy.copy(obj)             # frozen dataclasses: a shallow copy with one field replaced
    object.__setattr__(new, head, _set(getattr(obj, head), rest, value))
    return new
