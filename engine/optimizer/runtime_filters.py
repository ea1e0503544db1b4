"""The physical rule that places runtime join filters.

An inner or semi hash join whose probe key is a column of a scan in the same stage (through filters,
renaming projections and the probe side of inner joins: wherever dropping a row that cannot match
changes nothing above) gets a filter id; the join builds a Bloom filter over that key's build-side
values under the id, and the scan applies the filter with that id to its column before decoding the
other columns (:class:`engine.exec.operators.scan.RuntimeFilter`). Both show the id in EXPLAIN. With
several keys each gets a filter: a row whose value of any one key is not among the build side's
cannot match, and which key drops rows is for the data to say (TPC-H Q2 probes 800k partsupp rows on
(ps_partkey, ps_supplycost) for a few hundred build rows: filtered on ps_partkey, ~3k reach the join;
Q9 probes lineitem on (l_suppkey, l_partkey) for the 'green' parts' partsupps: l_suppkey keeps 99%
of the rows, l_partkey 5%). The scan stops applying one that keeps most rows.

A semi or anti join whose probe side the planner expects to be much the smaller runs it first
(``HashJoinExec.probe_first``); its filters go the other way: over the probe side's keys, to the
build side's scans (only a build row whose key some probe row has can change a probe row's answer).
They also reach the build side's exchanges (the rows are dropped as the stage reads them: no group
or hash of them), and cross joins on their keys (a row of the other side whose key has no partner
in the filter cannot pair with a row that passes it): TPC-DS q95's 135 orders filter both
``web_sales`` inputs of the self join under ``IN (SELECT ... FROM ws_wh)``. Such a join with nowhere
to send a filter runs as any other (its build side first, filters towards its probe side).

What stays to run time is what only run time knows: a build side above ``BLOOM_MAX_KEYS`` rows makes
no filter (the scan then finds none under its id), and a scan stops applying a filter that keeps
most rows (``ScanExec``).
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Optional

import pyarrow as pa

import kernels
from engine.exec.operators.base import PhysicalOperator
from engine.exec.operators.exchange import ExchangeExec
from engine.exec.operators.filter import FilterExec
from engine.exec.operators.hash_join import HashJoinExec
from engine.exec.operators.project import ProjectExec
from engine.exec.operators.scan import RuntimeFilter, ScanExec
from engine.optimizer.rewrite import Rewriter
from engine.core.expressions import ColumnRef


class RuntimeFilterPlacer:
    """Filter ids are numbered across every plan this placer sees (a plan and its init plans), and a
    subtree met again (a kept CTE's, in a later plan) keeps the filters it was given the first time.
    ``on_replaced(old, new)``: an operator was rebuilt with its filters (or over rebuilt inputs)."""

    def __init__(self, on_replaced: Callable[[PhysicalOperator, PhysicalOperator], None] = lambda old, new: None):
        self._next_id = 1
        self._placed: dict[int, list[RuntimeFilter]] = {}      # id(join or scan) -> its filters
        self._rewriter = Rewriter(self._with_filters, on_replaced)

    def place(self, root: PhysicalOperator) -> PhysicalOperator:
        self._placed = {}
        self._probe: dict[int, list[RuntimeFilter]] = {}       # id(probe-first join) -> its filters
        self._single = _read_once(root)
        self._assign(root, set())
        return self._rewriter.rewrite(root)

    def _assign(self, op: PhysicalOperator, seen: set) -> None:
        if id(op) in seen or id(op) in self._rewriter.done:
            return
        seen.add(id(op))
        if isinstance(op, HashJoinExec) and op.probe_first and self._assign_probe_first(op):
            pass
        elif isinstance(op, HashJoinExec):
            for scan, column, key in _targets(op):
                if id(scan) in self._rewriter.done:
                    continue        # a scan already given its filters (in an earlier plan) takes no more
                spec = RuntimeFilter(self._next_id, key, scan.table_name, column)
                self._next_id += 1
                self._placed.setdefault(id(op), []).append(spec)
                self._placed.setdefault(id(scan), []).append(spec)
        for child in op.children:
            self._assign(child, seen)

    def _assign_probe_first(self, join: HashJoinExec) -> bool:
        """One filter per probe key with somewhere to go, built once, read by each of its targets."""
        specs = []
        for index, (key, build_key) in enumerate(zip(join.left_keys, join.right_keys)):
            if not (isinstance(key, ColumnRef) and isinstance(build_key, ColumnRef)) or \
                    not _bloomable(key.type.to_arrow(), build_key.type.to_arrow()):
                continue
            filter_id = None
            for target, column in _sources(join.right, build_key.id, self._single):
                if id(target) in self._rewriter.done:
                    continue
                if filter_id is None:
                    filter_id = self._next_id
                    self._next_id += 1
                table = target.table_name if isinstance(target, ScanExec) else "Exchange"
                spec = RuntimeFilter(filter_id, index, table, column)
                specs.append(spec)
                self._placed.setdefault(id(target), []).append(spec)
        self._probe[id(join)] = specs
        return bool(specs)

    def _with_filters(self, original: PhysicalOperator, op: PhysicalOperator) -> PhysicalOperator:
        """``op`` (``original`` maybe rebuilt over new inputs) with the filters ``original`` was given."""
        if id(original) in self._probe:
            specs = tuple(self._probe[id(original)])
            op = dataclasses.replace(op, probe_filters=specs, probe_first=bool(specs))
        filters = self._placed.get(id(original))
        return dataclasses.replace(op, runtime_filters=tuple(filters)) if filters else op


def _targets(join: HashJoinExec) -> list[tuple[ScanExec, str, int]]:
    """(scan, its field id, the join key's number) for each probe key a Bloom filter may drop rows on."""
    if join.kind not in ("inner", "semi"):
        return []
    found = []
    for index, (key, build_key) in enumerate(zip(join.left_keys, join.right_keys)):
        arrow_type = build_key.type.to_arrow()
        if not isinstance(key, ColumnRef) or not kernels.supports_join_key(arrow_type) \
                or pa.types.is_decimal(arrow_type):
            continue
        target = _scan_of(join.left, key.id)
        if target is not None:
            found.append(target + (index,))
    return found


def _scan_of(op: PhysicalOperator, column: str) -> Optional[tuple[ScanExec, str]]:
    """(the ScanExec producing ``column`` below ``op`` in the same stage, the id it has there — a
    projection may rename it), where dropping a row whose ``column`` value has no match cannot change
    the join above: through filters, pass-through projections and inner joins (either side) or the
    probe side of semi / anti / left joins; None if there is none (an exchange ends the stage)."""
    if isinstance(op, ScanExec):
        return (op, column) if any(f.id == column for f in op.fields) else None
    if isinstance(op, FilterExec):
        return _scan_of(op.input, column)
    if isinstance(op, ProjectExec):
        for f, e in op.exprs:
            if f.id == column:
                return _scan_of(op.input, e.id) if isinstance(e, ColumnRef) else None
        return None
    if isinstance(op, HashJoinExec):
        sides = (op.left, op.right) if op.kind == "inner" else (op.left,)
        for side in sides:
            if any(f.id == column for f in side.fields):
                return _scan_of(side, column)
    return None


def _bloomable(probe_type: pa.DataType, build_type: pa.DataType) -> bool:
    """Whether a Bloom filter over probe keys of ``probe_type`` answers for build keys of
    ``build_type``: both integers (hashed as the same words), or one string or date type."""
    if pa.types.is_integer(probe_type) and pa.types.is_integer(build_type):
        return True
    return probe_type == build_type and (pa.types.is_string(probe_type) or pa.types.is_large_string(probe_type)
                                         or pa.types.is_date32(probe_type))


def _sources(op: PhysicalOperator, column: str, single: set) -> list[tuple[PhysicalOperator, str]]:
    """Where rows of ``op``'s output whose ``column`` value is not in a probe-first join's filter may
    be dropped: (scan or exchange, its field id) pairs in the same stage. Dropping such a row there
    adds or removes only output rows whose ``column`` has a value not in the filter, which cannot
    change the join's answer: through filters, renaming projections, inner joins (and across them to
    the other side's equal key), the probe side of semi / anti / left joins and, across a semi or anti
    join's key, its build side. An exchange read by one consumer only (``single``: not a kept CTE's)."""
    if isinstance(op, ScanExec):
        return [(op, column)] if any(f.id == column for f in op.fields) else []
    if isinstance(op, ExchangeExec):
        if op.kind not in ("repartition", "broadcast", "gather") or id(op) not in single:
            return []
        try:
            fields = op.fields
        except AttributeError:          # partial aggregates' states
            return []
        return [(op, column)] if any(f.id == column for f in fields) else []
    if isinstance(op, FilterExec):
        return _sources(op.input, column, single)
    if isinstance(op, ProjectExec):
        for f, e in op.exprs:
            if f.id == column:
                return _sources(op.input, e.id, single) if isinstance(e, ColumnRef) else []
        return []
    if not isinstance(op, HashJoinExec) or op.kind not in ("inner", "semi", "anti", "left"):
        return []
    on_left = any(f.id == column for f in op.left.fields)
    if op.kind == "inner" and not on_left:
        found = _sources(op.right, column, single)
        return found + _across(op.right_keys, op.left_keys, op.left, column, single)
    if not on_left:
        return []
    found = _sources(op.left, column, single)
    if op.kind != "left":
        found += _across(op.left_keys, op.right_keys, op.right, column, single)
    return found


def _across(keys, other_keys, other: PhysicalOperator, column: str, single: set) -> list:
    """The targets on a join's other side for ``column`` when it is one of ``keys`` (the same
    type as the other side's key: equal values are equal words)."""
    for key, other_key in zip(keys, other_keys):
        if isinstance(key, ColumnRef) and key.id == column and isinstance(other_key, ColumnRef) \
                and key.type == other_key.type:
            return _sources(other, other_key.id, single)
    return []


def _read_once(root: PhysicalOperator) -> set:
    """Ids of the exchanges met once only in the plan (a kept CTE's is read wherever it is referenced)."""
    counts: dict[int, int] = {}

    def walk(op):
        if isinstance(op, ExchangeExec):
            counts[id(op)] = counts.get(id(op), 0) + 1
            if counts[id(op)] > 1:
                return
        for child in op.children:
            walk(child)
    walk(root)
    return {k for k, n in counts.items() if n == 1}
