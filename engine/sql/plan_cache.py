"""The plan cache: a query run again with other parameter values reuses its optimized plan.

Key: the statement text with its ``%s`` markers numbered (``mark_placeholders``) or its literals lifted
(``parameterize_literals``), the shapes of the values (type, integer width, decimal digits and scale),
the current database and the runner's size. The whole cache is dropped by any statement
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
import datetime
import decimal
import re
from typing import Any, Optional

import pyarrow as pa

UNCACHEABLE = object()
# Decimals come from literals lifted out of query text (2.50 stays a DECIMAL(3, 2)); a plan that
# keeps one as a scaled integer shows no slot for it, and the statement is then planned every time.
# Dates and datetimes (a prepared statement's DATE / DATETIME parameters) are held by plans as the
# same Python values, so they make slots like the others.
CACHEABLE_TYPES = (int, float, str, decimal.Decimal, datetime.date, datetime.datetime)
MAX_ENTRIES = 1024


class PlanCache:
    """Shared by every session of a runner (like its statistics); ``version`` counts invalidations."""

    def __init__(self):
        self.entries: dict[tuple, Any] = {}
        self._seen: dict[tuple, None] = {}      # shapes of lifted-literal queries run once (ordered)
        self.version = 0
        self.hits = 0
        self.misses = 0
        self.enabled = True

    @staticmethod
    def key(marked_sql: str, values: list, database: Optional[str], num_partitions: int) -> Optional[tuple]:
        if not values or any(type(v) not in CACHEABLE_TYPES for v in values):
            return None      # bool, None, times, bytes: not worth the risk of a wrong slot
        return (marked_sql, tuple(_shape(v) for v in values), database, num_partitions)

    def first_sighting(self, key: tuple) -> bool:
        """True the first time ``key`` is seen since the last invalidation (then remembered)."""
        if key in self._seen:
            return False
        if len(self._seen) >= MAX_ENTRIES:
            self._seen.pop(next(iter(self._seen)))
        self._seen[key] = None
        return True

    def invalidate(self) -> None:
        self.entries.clear()
        self._seen.clear()
        self.version += 1

    def put(self, key: tuple, entry) -> None:
        if len(self.entries) >= MAX_ENTRIES:
            self.entries.pop(next(iter(self.entries)))
        self.entries[key] = entry


def _shape(value) -> tuple:
    """What of a value the binder's typing depends on: its Python type, an integer's width (a literal
    that fits INT is cast to an INT column's type, a wider one is not), a decimal's digits and scale
    (its DECIMAL(p, s) type). Values of one shape share a plan."""
    if isinstance(value, int):
        return (int, -2**31 <= value < 2**31, -2**63 <= value < 2**63)
    if isinstance(value, decimal.Decimal):
        sign, digits, exponent = value.as_tuple()
        return (decimal.Decimal, len(digits), exponent)
    if isinstance(value, datetime.datetime):    # fractional seconds and a time zone may type it otherwise
        return (datetime.datetime, value.microsecond != 0, value.tzinfo is None)
    return (type(value),)


def other_values(values: list) -> list:
    """Values of the same types that differ from ``values`` and from each other's replacements."""
    out = []
    for i, v in enumerate(values):
        if isinstance(v, str):
            out.append(v + f"\x01{i}")
        elif isinstance(v, decimal.Decimal):
            other = _same_shape_decimal(v, set(values) | set(out))
            out.append(other if other is not None else v + 7919 * (i + 1))
        elif isinstance(v, datetime.date):          # whole days: a datetime keeps its time of day
            step = datetime.timedelta(days=7919 * (i + 1))
            out.append(v + step if v.year < 5000 else v - step)
        else:
            out.append(v + 7919 * (i + 1))
    return out


def _same_shape_decimal(value: decimal.Decimal, taken: set) -> Optional[decimal.Decimal]:
    """Another decimal with the same digits count and scale (a literal of the same DECIMAL(p, s) type:
    0.05 -> 0.06), none of ``taken``; None when its last digit has no free alternative."""
    sign, digits, exponent = value.as_tuple()
    if not isinstance(exponent, int):
        return None
    for step in range(1, 10):
        candidate = decimal.Decimal((sign, digits[:-1] + ((digits[-1] + step) % 10,), exponent))
        if candidate not in taken and (len(digits) == 1 or candidate.as_tuple().digits[0] != 0):
            return candidate
    return None


@dataclasses.dataclass(frozen=True)
class PlanTemplate:
    planned: Any                                   # the PlannedQuery of the first values
    # (path into (init_plans, stages, recursive), parameter index, the exponent of the Decimal the plan holds an
    # integer parameter as, else None)
    slots: tuple[tuple[tuple, int, Optional[int]], ...]

    def bind(self, values: list):
        changes: dict = {}         # a trie of the slots' paths: every copied node is copied once
        for path, index, exponent in self.slots:
            value = values[index]
            node = changes
            for step in path[:-1]:
                node = node.setdefault(step, {})
            node[path[-1]] = _Value(value if exponent is None else _as_decimal(value, exponent))
        init_plans, stages, recursive = _set_all(_parts(self.planned), changes)
        return dataclasses.replace(self.planned, init_plans=init_plans, stages=stages, recursive=recursive)


def _parts(planned) -> tuple:
    """What a plan runs, where a parameter's value can be: init plans, stages, recursive WITH queries."""
    return planned.init_plans, planned.stages, planned.recursive


def make_template(first, second, values: list, others: list) -> Optional[PlanTemplate]:
    """The template of two plans of one statement, planned with ``values`` and ``others``; None when
    they differ anywhere but in those values."""
    differences: list[tuple[tuple, Any, Any]] = []
    if not _diff(_parts(first), _parts(second), (), differences):
        return None
    differences = _renamed(differences)
    if differences is None:
        return None
    by_pair: dict[tuple, list[int]] = {}        # (value, other) -> the parameters they are
    for i, (v, w) in enumerate(zip(values, others)):
        by_pair.setdefault((type(v), v, type(w), w), []).append(i)
    slots = []
    for path, a, b in differences:
        matches = [i for i in by_pair.get((type(a), a, type(b), b), ()) if _holds(a, values[i])]
        if type(a) is type(b) is decimal.Decimal and a == a.to_integral_value() and b == b.to_integral_value():
            matches += by_pair.get((int, int(a), int, int(b)), [])     # an integer held as a Decimal
        if len(matches) != 1:
            return None
        index = matches[0]
        as_decimal = type(a) is decimal.Decimal and type(values[index]) is int
        slots.append((path, index, a.as_tuple().exponent if as_decimal else None))
    if {i for _, i, _ in slots} != set(range(len(values))):
        return None      # a value that left no trace may have been used up (folded, estimated away)
    return PlanTemplate(first, tuple(slots))


def plans_equal(first, second) -> bool:
    """Whether two plannings of one statement gave the same plan (a text cache entry's check)."""
    differences: list = []
    return _diff(_parts(first), _parts(second), (), differences) \
        and _renamed(differences) == [] and first.names == second.names and first.fields == second.fields


# A column id an optimizer rule makes fresh (``p_partkey#m10``: magic sets, ``#e``: eager aggregation)
# from a counter that every planning advances: two plannings of one statement name them apart.
_FRESH_ID = re.compile(r"#[a-z]+\d+")


def _renamed(differences: list) -> Optional[list]:
    """``differences`` (``_diff``'s, which lists the equal strings holding fresh ids too) without
    those that are one renaming of the fresh ids, the same in every place and one to one (TPC-H
    Q02, Q17, Q20's magic sets were planned on every run for want of this); None when the ids are
    not renamed one to one."""
    forward: dict[str, str] = {}
    backward: dict[str, str] = {}
    rest = []
    for difference in differences:
        _, a, b = difference
        if isinstance(a, str) and isinstance(b, str):
            ids_a, ids_b = _FRESH_ID.findall(a), _FRESH_ID.findall(b)
            if ids_a and len(ids_a) == len(ids_b) and _FRESH_ID.sub("#", a) == _FRESH_ID.sub("#", b):
                for x, y in zip(ids_a, ids_b):
                    if forward.setdefault(x, y) != y or backward.setdefault(y, x) != x:
                        return None
                continue
        rest.append(difference)
    return rest


def _as_decimal(value: int, exponent: int) -> decimal.Decimal:
    try:
        return decimal.Decimal(value).quantize(decimal.Decimal((0, (1,), exponent)))
    except decimal.InvalidOperation:      # more digits than the context keeps: the plain integer value
        return decimal.Decimal(value)


def _holds(planned, value) -> bool:
    """Whether a plan's constant is the parameter ``value``: the same value of the same type, or an
    integer the binder turned into the Decimal of a DECIMAL column (``l_quantity < 24``)."""
    if type(planned) is type(value):
        return planned == value
    return type(planned) is decimal.Decimal and type(value) is int and planned == value


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
    if isinstance(a, pa.Schema) and not a.equals(b):
        # a schema named by fresh column ids (an exchange's) differs in those names alone
        if len(a) != len(b) or a.metadata != b.metadata or any(
                x.type != y.type or x.nullable != y.nullable or x.metadata != y.metadata
                or (x.name != y.name and not _FRESH_ID.search(x.name)) for x, y in zip(a, b)):
            return False
        return _diff(tuple(a.names), tuple(b.names), path + ("names",), out)
    if isinstance(a, (pa.Array, pa.ChunkedArray, pa.Table, pa.RecordBatch, pa.Schema, pa.DataType, pa.Scalar)):
        return a.equals(b)
    if isinstance(a, (int, float, str, bytes, decimal.Decimal, type(None), datetime.date)):
        if a != b or (type(a) is str and _FRESH_ID.search(a)):     # see _renamed
            out.append((path, a, b))
        return True
    try:
        return bool(a == b)       # anything else (sets, times, enums) must be equal outright
    except Exception:             # noqa: BLE001 - an object without a truthful ==: not comparable, not cacheable
        return False


@dataclasses.dataclass(frozen=True)
class _Value:
    value: Any


def _set_all(obj, changes: dict):
    """``obj`` with the leaves of the trie ``changes`` (step -> sub-trie or _Value) put in place."""
    if isinstance(obj, (tuple, list)):
        items = list(obj)
        for step, change in changes.items():
            items[step] = change.value if isinstance(change, _Value) else _set_all(items[step], change)
        return tuple(items) if isinstance(obj, tuple) else items
    if isinstance(obj, dict):
        return {**obj, **{step: change.value if isinstance(change, _Value) else _set_all(obj[step], change)
                          for step, change in changes.items()}}
    new = copy.copy(obj)             # frozen dataclasses: a shallow copy with the fields replaced
    for step, change in changes.items():
        object.__setattr__(new, step, change.value if isinstance(change, _Value)
                           else _set_all(getattr(obj, step), change))
    return new
