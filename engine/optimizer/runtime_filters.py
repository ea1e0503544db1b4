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
        self._assign(root, set())
        return self._rewriter.rewrite(root)

    def _assign(self, op: PhysicalOperator, seen: set) -> None:
        if id(op) in seen or id(op) in self._rewriter.done:
            return
        seen.add(id(op))
        if isinstance(op, HashJoinExec):
            for scan, column, key in _targets(op):
                if id(scan) in self._rewriter.done:
                    continue        # a scan already given its filters (in an earlier plan) takes no more
                spec = RuntimeFilter(self._next_id, key, scan.table_name, column)
                self._next_id += 1
                self._placed.setdefault(id(op), []).append(spec)
                self._placed.setdefault(id(scan), []).append(spec)
        for child in op.children:
            self._assign(child, seen)

    def _with_filters(self, original: PhysicalOperator, op: PhysicalOperator) -> PhysicalOperator:
        """``op`` (``original`` maybe rebuilt over new inputs) with the filters ``original`` was given."""
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
