"""Cardinality estimates for logical plans, and where each came from.

Base numbers come from a :class:`StatisticsProvider`: exact table row counts, and per column the
statistics of :mod:`engine.stats` (NDV from a HyperLogLog sketch, a histogram whose most frequent
values are exact). A predicate comparing a column (under any CASTs) with a literal is answered by the
column's histogram; range conjuncts on one column are combined into one interval first (``BETWEEN``
binds as two conjuncts, whose product would be far off). Without a histogram, the System R defaults
apply: ``col = const`` 1/NDV, a range 1/3, LIKE 0.1 (a prefix) or 0.25, IN k/NDV. Join output is
|L|·|R| / max(NDV(l), NDV(r)) per equality, corrected by the histograms of both keys where they show
skew; GROUP BY the product of the keys' NDVs, capped by the input's rows.

:meth:`Estimator.source` says what each node's estimate rests on, for EXPLAIN: ``rows`` (exact row
counts), ``histogram``, ``segment metadata`` or ``sample`` (a column's first statistics, while its
histogram is collected: :mod:`engine.statistics`), ``ndv`` or ``default``; a node that estimates
nothing itself (a projection, a sort) inherits its input's, and a node that combines several is as
good as its weakest.

Why one file of over 600 lines: ``Estimator`` is one recursive estimate whose parts call each other
(a join's rows need its keys' NDV within each side, which needs the filters' selectivities below it,
which need the histograms and the pinned values of the same columns) over one memo of rows, sources
and pinned values; the statistics themselves live in :mod:`engine.stats`.
"""
from __future__ import annotations

import dataclasses

from typing import Optional, Protocol

from engine.catalog import TableDef
from engine.core.expressions import Call, ColumnRef, Expr, Literal, conjuncts
from engine.plan.logical import (Aggregate, CteScan, Filter, Join, Limit, LogicalPlan, MultiJoin, Project,
                                 Repeat, Scan, Sort, Union, Values, Window)
from engine.stats.histogram import ColumnStats, join_rows

# "sample" and "segment metadata": a column's quick statistics (engine.stats.quick), used until its
# histogram is collected in the background
_RANK = {"default": 0, "ndv": 1, "sample": 2, "segment metadata": 2, "histogram": 3, "rows": 4}
_RANGE_OPS = ("lt", "le", "gt", "ge")
_FLIPPED = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}


class StatisticsProvider(Protocol):
    def table_rows(self, table: TableDef) -> int: ...

    def column_ndv(self, table: TableDef, column: str) -> int: ...

    # optional: providers without histograms leave it out and get the defaults
    def column_stats(self, table: TableDef, column: str) -> Optional[ColumnStats]: ...


# A Values node of at most this many rows has its columns' distinct values counted.
_VALUES_COUNTED = 10_000


class Estimator:
    def __init__(self, stats: StatisticsProvider):
        self.stats = stats
        self._rows: dict[int, tuple[LogicalPlan, float]] = {}   # keeps the node alive: ids stay unique
        self._sources: dict[int, str] = {}
        self._origins: dict[str, tuple[TableDef, str]] = {}
        # column id -> the rows its values come from, for GROUP BY: (identity, at most how many distinct
        # rows): the scan that read it (its estimated rows), through projections, group keys and unions
        self._rowsets: dict[str, tuple[tuple, float]] = {}
        self._computed: dict[str, Expr] = {}      # a projection's computed column -> its expression
        self._noted: list[list[str]] = []     # sources used by the nodes being estimated (innermost last)
        self._skews: dict[tuple[int, int], tuple] = {}   # (id(stats), id(stats)) -> (stats, stats, skew)
        self._literal_ndv: dict[str, int] = {}    # a small Values' column -> its distinct values
        self._bare_scans: dict[int, tuple[Scan, Scan]] = {}   # id(scan) -> (scan, the scan without filters)
        self._ids: dict[int, tuple[LogicalPlan, frozenset]] = {}     # id(plan) -> (plan, its field ids)
        self._pins: dict[tuple[str, int], tuple] = {}     # (column id, id(plan)) -> (plan, _pinned's answer)
        self._rows_memo: dict = {}        # table id -> rows; (table id, column) -> NDV / statistics
        self._ndv_memo: dict = {}
        self._scanned: dict = {}          # id(plan) -> (plan, ids of the tables it scans)
        self._stats_memo: dict = {}

    # where a column id comes from (for its NDV and histogram)
    def _register(self, plan: LogicalPlan) -> None:
        if isinstance(plan, CteScan):
            # a materialized CTE's columns are its definition's (by position): their origins (for
            # histograms and NDVs), rows and expressions; without them a filter on a CTE's column took
            # the defaults (``year = 2001`` kept 1 row in 280,000)
            self.rows(plan.definition)
            for f, d in zip(plan.fields, plan.definition.fields):
                for known in (self._origins, self._rowsets, self._computed, self._literal_ndv):
                    if d.id in known:
                        known[f.id] = known[d.id]
        elif isinstance(plan, Scan):
            for f, name in plan.read_columns():
                self._origins[f.id] = (plan.table, name)
        elif isinstance(plan, Project):
            for f, e in plan.exprs:
                if isinstance(e, ColumnRef) and e.id in self._rowsets:
                    self._rowsets[f.id] = self._rowsets[e.id]
                if isinstance(e, ColumnRef) and e.id in self._origins:
                    self._origins[f.id] = self._origins[e.id]
                elif isinstance(e, ColumnRef) and e.id in self._computed:
                    self._computed[f.id] = self._computed[e.id]
                elif not isinstance(e, ColumnRef):
                    self._computed[f.id] = e
        elif isinstance(plan, Values) and len(plan.rows) <= _VALUES_COUNTED:
            for i, f in enumerate(plan.fields):       # a literal table's distinct values, counted
                self._literal_ndv[f.id] = len({row[i] for row in plan.rows if row[i] is not None})
        elif isinstance(plan, Aggregate):
            for f, e in plan.keys:
                if isinstance(e, ColumnRef) and e.id in self._rowsets:
                    self._rowsets[f.id] = self._rowsets[e.id]
                if isinstance(e, ColumnRef) and e.id in self._origins:
                    self._origins[f.id] = self._origins[e.id]
        elif isinstance(plan, Union):
            for i, f in enumerate(plan.fields):     # a constant per input (a tag: 's', 'c', 'w')
                values = [self._computed.get(child.fields[i].id) for child in plan.inputs]
                if all(isinstance(v, Literal) for v in values):
                    self._literal_ndv[f.id] = len({v.value for v in values if v.value is not None})
            # a union's row is one row of one input: its columns come from the inputs' rows together
            for i, f in enumerate(plan.fields):
                sets = [self._rowsets.get(child.fields[i].id) for child in plan.inputs]
                if all(sets):
                    self._rowsets[f.id] = (tuple(r[0] for r in sets), sum(r[1] for r in sets))
            # A union's column has the distinct values of the inputs' columns at its position: counted
            # as those of the input column with the most (the inputs of INTERSECT share theirs; TPC-DS
            # q14 intersects item's brand/class/category read three times). Without it a set
            # operation's groups were estimated at its input rows, and 2.5M rows were shuffled
            # to find 3.8k groups instead of aggregated where they were.
            for i, f in enumerate(plan.fields):
                origins = [self._origins.get(child.fields[i].id) for child in plan.inputs]
                if all(origins):
                    self._origins[f.id] = max(origins, key=lambda o: self._column_ndv(*o))

    def ndv(self, column_id: str, within: LogicalPlan) -> float:
        rows = self.rows(within)
        origin = self._origins.get(column_id)
        if origin is None and column_id in self._literal_ndv:
            self._note("rows")
            return max(1.0, min(float(self._literal_ndv[column_id]), rows))
        if origin is None and column_id in self._computed:
            return max(1.0, min(self._expression_ndv(self._computed[column_id], within), rows))
        if origin is None:
            self._note("default")
            return max(rows, 1.0)
        self._note("ndv")
        ndv = float(self._column_ndv(*origin))
        pinned = self._pinned(column_id, within)
        pinned = None if pinned is None else float(len(pinned))
        return max(1.0, min(ndv if pinned is None else min(pinned, ndv), rows))

    def _expression_ndv(self, expr: Expr, within: LogicalPlan) -> float:
        """Distinct values of a computed column: at most the product of its inputs' (EXTRACT(YEAR) of a
        date: the years between the column's min and max, TPC-H Q7-Q9's o_year)."""
        expr = _strip_cast(expr)
        if isinstance(expr, ColumnRef):
            return self.ndv(expr.id, within)
        if isinstance(expr, Call) and expr.op == "extract" and str(expr.options[0]).upper() == "YEAR":
            stats = self._column_stats(_strip_cast(expr.args[0]))
            if stats is not None and hasattr(stats.min, "year"):
                self._note(stats.source)
                return float(stats.max.year - stats.min.year + 1)
        ndv = 1.0
        for column_id in sorted(expr.column_ids()):
            ndv *= self.ndv(column_id, within)
        return ndv

    def _pinned(self, column_id: str, plan: LogicalPlan) -> Optional[list]:
        """The values a filter below ``plan`` leaves the column: one under ``col = const``, k under
        ``col IN (k constants)`` (``WHERE k = 3 GROUP BY k`` is one group); None when unrestricted."""
        key = (column_id, id(plan))
        cached = self._pins.get(key)
        if cached is None or cached[0] is not plan:     # join ordering asks again per candidate
            cached = self._pins[key] = (plan, self._find_pinned(column_id, plan))
        return cached[1]

    def _find_pinned(self, column_id: str, plan: LogicalPlan) -> Optional[list]:
        while True:
            predicates = plan.filters if isinstance(plan, Scan) else \
                conjuncts(plan.predicate) if isinstance(plan, Filter) else ()
            for p in predicates:
                compared = _comparison(p)
                if compared is not None and compared[1] == "eq" and compared[0].id == column_id:
                    return [compared[2]]
                if isinstance(p, Call) and p.op == "in_list" and not p.options[1] and \
                        getattr(_strip_cast(p.args[0]), "id", None) == column_id:
                    return list(set(p.options[0]))
            if isinstance(plan, Project):
                expr = next((e for f, e in plan.exprs if f.id == column_id), None)
                if isinstance(expr, Literal) and expr.value is not None:
                    return [expr.value]
                column_id = expr.id if isinstance(expr, ColumnRef) else None
            elif isinstance(plan, Aggregate) and not plan.grouping_sets:
                expr = next((e for f, e in plan.keys if f.id == column_id), None)
                column_id = expr.id if isinstance(expr, ColumnRef) else None
            elif isinstance(plan, CteScan):
                at = next((i for i, f in enumerate(plan.fields) if f.id == column_id), None)
                return None if at is None else self._pinned(plan.definition.fields[at].id, plan.definition)
            elif isinstance(plan, Union):
                at = next((i for i, f in enumerate(plan.fields) if f.id == column_id), None)
                pins = [self._pinned(c.fields[at].id, c) for c in plan.inputs] if at is not None else [None]
                return None if any(p is None for p in pins) else list({v for p in pins for v in p})
            if isinstance(plan, (Filter, Sort, Limit, Project, Window, Aggregate)) and column_id is not None:
                plan = plan.input
            elif isinstance(plan, Join) and column_id in self._field_ids(plan.left):
                return self._pinned(column_id, plan.left)       # kept per subtree: join trees are deep
            elif isinstance(plan, Join) and column_id in self._field_ids(plan.right):
                return self._pinned(column_id, plan.right)
            else:
                return None

    def _field_ids(self, plan: LogicalPlan) -> frozenset:
        """``plan.field_ids()``, kept: a join's fields are its inputs' (recomputed per call), and join
        ordering asks about the same subtrees for every candidate built on them."""
        cached = self._ids.get(id(plan))
        if cached is None or cached[0] is not plan:
            cached = self._ids[id(plan)] = (plan, frozenset(plan.field_ids()))
        return cached[1]

    def rows(self, plan: LogicalPlan) -> float:
        cached = self._rows.get(id(plan))
        if cached is None or cached[0] is not plan:
            for child in plan.inputs:
                self.rows(child)
            self._register(plan)
            # Selectivities ask for NDVs capped by this node's rows: answer with its input's rows meanwhile
            self._rows[id(plan)] = (plan, self._provisional(plan))
            self._noted.append([])
            try:
                cached = (plan, max(1.0, self._estimate(plan)))
            finally:
                used = self._noted.pop()
            self._rows[id(plan)] = cached
            if isinstance(plan, Scan):
                for f, _ in plan.read_columns():
                    self._rowsets[f.id] = ((id(plan),), cached[1])
            self._sources[id(plan)] = min(used, key=_RANK.__getitem__) if used else self._inherited(plan)
        return cached[1]

    def source(self, plan: LogicalPlan) -> str:
        """What the estimate of ``plan`` rests on: rows, histogram, segment metadata, sample, ndv or default."""
        self.rows(plan)
        return self._sources[id(plan)]

    def _note(self, source: str) -> None:
        if self._noted:
            self._noted[-1].append(source)

    def _inherited(self, plan: LogicalPlan) -> str:
        if not plan.inputs:
            return "rows"          # an unfiltered scan, VALUES
        return min((self._sources[id(i)] for i in plan.inputs), key=_RANK.__getitem__)

    def _provisional(self, plan: LogicalPlan) -> float:
        if isinstance(plan, Scan):
            return max(1.0, float(self._table_rows(plan.table)))
        if plan.inputs:
            return max(self.rows(i) for i in plan.inputs)
        return 1000.0

    def _estimate(self, plan: LogicalPlan) -> float:
        if isinstance(plan, Scan):
            rows = float(self._table_rows(plan.table))
            if not plan.filters:
                return rows
            # The filters are estimated against the scan without them: against the scan itself, an
            # equality would first pin its own column to one value and then select all of it (p_brand =
            # 'Brand#23' estimated at every row of part instead of 1 in 25).
            bare = self._bare_scans.setdefault(id(plan), (plan, _bare(plan)))[1]
            return rows * self.conjunction(plan.filters, bare, rows)
        if isinstance(plan, Values):
            return float(len(plan.rows))
        if isinstance(plan, CteScan):           # the estimate of the plan it was computed by, on its grounds
            rows = self.rows(plan.definition)
            self._note(self.source(plan.definition))
            return rows
        if isinstance(plan, Filter):
            rows = self.rows(plan.input)
            return rows * self.conjunction(conjuncts(plan.predicate), plan.input, rows)
        if isinstance(plan, (Project, Sort, Repeat, Window)):     # Repeat: a row's copies count as one
            rows = self.rows(plan.input)
            return min(rows, plan.limit) if isinstance(plan, Sort) and plan.limit is not None else rows
        if isinstance(plan, Limit):
            rows = self.rows(plan.input)
            return min(rows, plan.count) if plan.count is not None else rows
        if isinstance(plan, Aggregate):
            rows = self.rows(plan.input)
            if not plan.keys:
                self._note("rows")         # one row, whatever the input
                return 1.0
            keys = [e for _, e in plan.keys]
            ndv = [self._expression_ndv(e, plan.input) for e in keys]
            if plan.grouping_sets:      # ROLLUP / CUBE / GROUPING SETS: one grouping per set
                return sum(min(rows, self._groups([keys[i] for i in s], [ndv[i] for i in s])) if s else 1.0
                           for s in plan.grouping_sets)
            return min(rows, self._groups(keys, ndv))
        if isinstance(plan, Union):
            return sum(self.rows(i) for i in plan.inputs)
        if isinstance(plan, Join):
            left, right = self.rows(plan.left), self.rows(plan.right)
            if plan.kind in ("semi", "anti", "anti_null_aware"):
                if not plan.left_keys:
                    self._note("default")
                    return left * 0.5
                found = self._semi_fraction(plan)
                # A residual (TPC-H Q21's l_suppkey <> l_suppkey) rarely rejects every match: count it as 0.9.
                if plan.residual is not None:
                    found *= 0.9
                return left * (found if plan.kind == "semi" else max(0.05, 1.0 - found))
            rows = self.join_rows(plan.left, plan.right, plan.left_keys, plan.right_keys, plan.residual is not None)
            if plan.kind == "full":
                return max(rows, left, right)
            return max(rows, left) if plan.kind == "left" else rows
        if isinstance(plan, MultiJoin):
            self._note("default")
            rows = 1.0
            for i in plan.inputs:
                rows *= self.rows(i)
            return rows * 0.1 ** len(plan.conditions)
        self._note("default")
        return 1000.0

    def _groups(self, keys: list[Expr], ndv: list[float]) -> float:
        """Distinct combinations of ``keys`` (each with its NDV): the product of the NDVs, but the keys
        read from the rows of one scan have no more combinations than it has rows. Columns of one table
        are rarely independent: (i_product_name, i_brand, i_class, i_category) has the item table's
        rows, not the product of four NDVs (TPC-DS q22 was estimated at 42M groups for 9,000)."""
        groups = 1.0
        together: dict[tuple, list[float]] = {}         # rows identity -> [cap, product of its keys' NDVs]
        for e, n in zip(keys, ndv):
            column = _strip_cast(e)
            rowset = self._rowsets.get(column.id) if isinstance(column, ColumnRef) else None
            if rowset is None:
                groups *= n
            else:
                together.setdefault(rowset[0], [rowset[1], 1.0])[1] *= n
        for cap, product in together.values():
            groups *= max(1.0, min(cap, product))
        return groups

    # -- joins ----------------------------------------------------------------------------------------
    def _key_ndv(self, keys, plan: LogicalPlan) -> float:
        ndv = 1.0
        for k in map(_strip_collation, keys):
            ndv *= self.ndv(k.id, plan) if isinstance(k, ColumnRef) else self.rows(plan)
        return min(ndv, self.rows(plan))

    def _semi_fraction(self, plan: Join) -> float:
        """Share of the left rows of a semi join that have a match on the right. Containment: of the two
        key columns' domains (the distinct values of their unfiltered tables) the smaller is drawn from
        the larger, and the right side's filters keep NDV(right keys) of its values, a random part of
        that larger domain; a left row matches if its value is among them. So the share is NDV(right,
        filtered) / max(domain(left), domain(right)): catalog_returns' order numbers over catalog_sales'
        (TPC-DS q16), or a filtered date_dim's keys over all of date_dim's for a fact's foreign key.
        The left side's filters pick rows, not which keys the right holds. The old share,
        NDV(right) / max(filtered NDV(left), NDV(right)) with each capped by the other's domain, took
        every key of a filtered left side as found: a filtered catalog_sales anti-joined to
        catalog_returns kept 5% of its rows for about 40%. A key of unknown origin (an expression)
        counts its side's filtered NDV as its domain."""
        left_keys = [_strip_collation(k) for k in plan.left_keys]
        right_keys = [_strip_collation(k) for k in plan.right_keys]
        origins = [self._origins.get(k.id) for k in left_keys if isinstance(k, ColumnRef)]
        if {o[0].table_id for o in origins if o is not None} & self._tables(plan.right):
            # The right side reads the left key's table: its keys may be picked by the same filters as
            # the left's (a magic-sets restriction, TPC-H Q20's partsupp under the lineitem aggregate;
            # a self-join): count the left's filtered keys as found, up to the right's distinct keys.
            return min(1.0, self.join_selectivity(plan.left_keys, plan.right_keys, plan.left, plan.right)
                       * self._key_ndv(plan.right_keys, plan.right))
        domain_l, domain_r = self._domain(left_keys), self._domain(right_keys)
        if domain_l == float("inf"):
            domain_l = self._key_ndv(plan.left_keys, plan.left)
        if domain_r == float("inf"):
            domain_r = self._key_ndv(plan.right_keys, plan.right)
        if len(left_keys) > 1:
            # A composite key's domain is only bounded by the product of its columns' NDVs and its
            # table's rows (lineitem's 600k (l_partkey, l_suppkey) pairs for partsupp's 80k): capped by
            # the other side's as in join_selectivity, unless unique in its table.
            if not self._unique(left_keys):
                domain_l = min(domain_l, domain_r)
            if not self._unique(right_keys):
                domain_r = min(domain_r, domain_l)
        return min(1.0, self._key_ndv(plan.right_keys, plan.right) / max(domain_l, domain_r, 1.0))

    def _tables(self, plan: LogicalPlan) -> frozenset:
        """Ids of the tables ``plan`` scans (kept, as ``_field_ids``)."""
        cached = self._scanned.get(id(plan))
        if cached is None or cached[0] is not plan:
            tables = {plan.table.table_id} if isinstance(plan, Scan) else set()
            for child in plan.inputs:
                tables |= self._tables(child)
            cached = self._scanned[id(plan)] = (plan, frozenset(tables))
        return cached[1]

    def join_rows(self, left: LogicalPlan, right: LogicalPlan, left_keys, right_keys, residual: bool) -> float:
        """Rows of the inner join of ``left`` and ``right`` on the keys (and a residual condition, if any),
        before the floor of one row: what a Join node of them is estimated at, without making one (join
        ordering weighs thousands of candidates and builds only the joins it picks)."""
        rows = self.rows(left) * self.rows(right) * self.join_selectivity(left_keys, right_keys, left, right)
        if residual:
            self._note("default")
            rows *= 0.5
        return rows

    def join_selectivity(self, left_keys, right_keys, left: LogicalPlan, right: LogicalPlan) -> float:
        if not left_keys:
            return 1.0
        # Distinct key combinations of each side: the product of the columns' NDVs, but never more than
        # the side's rows. Multiplying per-column selectivities instead treats (ps_partkey, ps_suppkey)
        # as independent and estimates lineitem x partsupp at 2,400 rows instead of 6M (TPC-H Q9).
        ndv_l, ndv_r = 1.0, 1.0
        for lk, rk in zip(left_keys, right_keys):
            lk, rk = _strip_collation(lk), _strip_collation(rk)
            ndv_l *= self.ndv(lk.id, left) if isinstance(lk, ColumnRef) else self.rows(left)
            ndv_r *= self.ndv(rk.id, right) if isinstance(rk, ColumnRef) else self.rows(right)
        ndv_l = min(ndv_l, self.rows(left))
        ndv_r = min(ndv_r, self.rows(right))
        # Containment: the keys of one side are drawn from the other side's domain, the key values of
        # its *unfiltered* table. lineitem's (l_suppkey, l_partkey) pairs are at most partsupp's 800k
        # pairs, not 6M; so lineitem x partsupp keeps lineitem's rows, and a filtered part is preferred.
        # A side whose key is unique in its table (a primary key: date_dim's d_date_sk) is the side the
        # other's values are drawn from, not one drawn from the other's: its distinct keys are its rows.
        # Capping them by the other side's domain (customer's 3,650 c_first_sales_date_sk values) made
        # every foreign-key join to an unfiltered dimension multiply its input by 20 (TPC-DS q64, q72).
        if not self._unique(left_keys):
            ndv_l = min(ndv_l, self._domain(right_keys))
        if not self._unique(right_keys):
            ndv_r = min(ndv_r, self._domain(left_keys))
        selectivity = 1.0 / max(ndv_l, ndv_r, 1.0)
        if len(left_keys) != 1:
            return selectivity
        pinned = self._both_pinned(left_keys[0], left, right_keys[0], right) or \
            self._pinned_join(left_keys[0], left, right_keys[0]) or \
            self._pinned_join(right_keys[0], right, left_keys[0])
        if pinned is not None:
            return pinned
        skew = self._skew(left_keys[0], right_keys[0])
        return selectivity if skew is None else selectivity * skew

    def _both_pinned(self, left_key: Expr, left: LogicalPlan, right_key: Expr, right: LogicalPlan) -> Optional[float]:
        """Both keys pinned to constants (``a.v = 5`` and, derived by the transitive-predicates rule,
        ``b.v = 5``): each side already holds only its rows of those values, so the selectivity is
        sum of f_a(v) * f_b(v) over shared values / (rows of a's values * rows of b's values) from the
        histograms. The one-sided share would count the filter of the other side a second time."""
        if not (isinstance(left_key, ColumnRef) and isinstance(right_key, ColumnRef)):
            return None
        values_l, values_r = self._pinned(left_key.id, left), self._pinned(right_key.id, right)
        stats_l, stats_r = self._column_stats(left_key), self._column_stats(right_key)
        if not (values_l and values_r and stats_l is not None and stats_r is not None) or \
                not all(stats_l.accepts(v) for v in values_l) or not all(stats_r.accepts(v) for v in values_r):
            return None
        rows_l = sum(stats_l.eq_rows(v) for v in values_l)
        rows_r = sum(stats_r.eq_rows(v) for v in values_r)
        if not rows_l or not rows_r:
            return None
        if self._noted:
            self._noted[-1][:] = [s for s in self._noted[-1] if s != "ndv"]
        self._note(_weakest(stats_l, stats_r))
        shared = set(values_l) & set(values_r)
        # no shared value: the join is empty (a tiny selectivity, since 0.0 would read as 'no estimate')
        return max(1e-12, sum(stats_l.eq_rows(v) * stats_r.eq_rows(v) for v in shared) / (rows_l * rows_r))

    def _pinned_join(self, key: Expr, side: LogicalPlan, other_key: Expr) -> Optional[float]:
        """A key a filter pins to constants (``a.v = 5``) meets the other side's rows of those values:
        the selectivity is the other side's mean share of them, from its histogram. The skew of the
        unfiltered tables would say v = 1's 320,000 rows instead."""
        values = self._pinned(key.id, side) if isinstance(key, ColumnRef) else None
        stats = self._column_stats(other_key) if values else None
        if stats is None or not stats.rows or not all(stats.accepts(v) for v in values):
            return None
        if self._noted:
            self._noted[-1][:] = [s for s in self._noted[-1] if s != "ndv"]
        self._note(stats.source)
        return sum(stats.eq_rows(v) for v in values) / len(values) / stats.rows

    def _skew(self, left_key: Expr, right_key: Expr) -> Optional[float]:
        """How far the join of the two key columns' tables is from the uniform |L|·|R| / max(NDV), by
        their histograms (None without them): a join on a skewed key meets its frequent values exactly.
        The NDV formula above still scales it to filtered inputs."""
        a, b = self._column_stats(left_key), self._column_stats(right_key)
        if a is None or b is None or not a.valid or not b.valid or not a.accepts(b.min):
            return None
        if self._noted:            # the histograms, not the NDVs, are what this join's estimate rests on
            self._noted[-1][:] = [s for s in self._noted[-1] if s != "ndv"]
        self._note(_weakest(a, b))
        # join ordering asks about the same key pair for every candidate tree: compute it once
        key = (id(a), id(b))
        if key not in self._skews:
            uniform = a.valid * b.valid / max(a.ndv, b.ndv, 1.0)
            self._skews[key] = (a, b, join_rows(a, b) / uniform if uniform else 1.0)
        return self._skews[key][2]

    def _unique(self, keys) -> bool:
        """Whether one of ``keys`` is a column whose table holds each of its values about once (its NDV
        at least 90% of the rows: the sketch's NDV is within a few percent)."""
        for k in map(_strip_collation, keys):
            origin = self._origins.get(k.id) if isinstance(k, ColumnRef) else None
            if origin is not None:
                rows = self._table_rows(origin[0])
                if rows and self._column_ndv(*origin) >= 0.9 * rows:
                    return True
        return False

    def _domain(self, keys) -> float:
        """Distinct key combinations of the unfiltered table the key columns come from (inf if unknown)."""
        tables = set()
        product = 1.0
        for k in keys:
            origin = self._origins.get(k.id) if isinstance(k, ColumnRef) else None
            if origin is None:
                return float("inf")
            tables.add(origin[0].table_id)
            product *= max(1.0, float(self._column_ndv(*origin)))
        if len(tables) == 1:
            table = self._origins[keys[0].id][0]
            product = min(product, float(self._table_rows(table)))
        return product

    # -- predicates -----------------------------------------------------------------------------------
    def conjunction(self, predicates, plan: LogicalPlan, rows: float) -> float:
        """Selectivity of predicates ANDed: range conditions on one column with a histogram become one
        interval (``v BETWEEN 2 AND 4`` is ``v >= 2 AND v <= 4``); equalities and IN lists on one
        column with a histogram become one set of values (their intersection, within that column's
        interval if it has one: ``y IN (2001, 2002) AND y = 2002`` is ``y = 2002``, not the product of
        both, which a filter implied by another, as transitive predicates and factored ORs add, would
        make far too small); the others multiply (independence)."""
        selectivity = 1.0
        ranges: dict[str, tuple[ColumnStats, list[tuple[str, object]]]] = {}
        points: dict[str, tuple[ColumnStats, set]] = {}
        for predicate in [c for p in predicates for c in conjuncts(p)]:
            pointed = self._points(predicate, plan)
            if pointed is not None:
                column, stats, values = pointed
                known = points.get(column)
                points[column] = (stats, values if known is None else known[1] & values)
                continue
            compared = _comparison(predicate)
            stats = self._column_stats(compared[0]) if compared and compared[1] in _RANGE_OPS else None
            if stats is not None and stats.accepts(compared[2]):
                ranges.setdefault(compared[0].id, (stats, []))[1].append(compared[1:])
            else:
                selectivity *= self.selectivity(predicate, plan, rows)
        for column, (stats, values) in points.items():
            bounds = ranges.pop(column, (None, ()))[1]
            kept = [v for v in values if _within(v, bounds)]
            pinned = self._pinned(column, plan)
            if pinned is not None:
                # a filter below left the column only these values: the share of its rows among theirs
                # (an aggregate's year keys from ``d_year IN (2001, 2002)``: ``year = 2001`` is half)
                kept = [v for v in kept if v in pinned]
                if stats is None:
                    self._note("rows")
                    selectivity *= len(kept) / max(1, len(pinned))
                    continue
                whole = sum(stats.eq_rows(v) or 0.0 for v in pinned)
            else:
                whole = stats.rows
            self._note(stats.source)
            selectivity *= min(1.0, sum(stats.eq_rows(v) for v in kept) / whole) if whole else 0.0
        for stats, bounds in ranges.values():
            selectivity *= self._interval(stats, bounds)
        return selectivity

    def _points(self, predicate: Expr, plan: LogicalPlan) -> Optional[tuple[str, Optional[ColumnStats], set]]:
        """``(column id, its statistics, the values it may take)`` for ``column = constant`` or
        ``column IN (constants)`` on a column whose histogram answers them all (statistics None: on a
        column without one that a filter below ``plan`` pins to a few values); None otherwise."""
        if isinstance(predicate, Call) and predicate.op == "in_list" and not predicate.options[1]:
            column, values = _strip_cast(predicate.args[0]), set(predicate.options[0])
        else:
            compared = _comparison(predicate)
            if compared is None or compared[1] != "eq" or isinstance(compared[2], _Unknown):
                return None
            column, values = compared[0], {compared[2]}
        if not isinstance(column, ColumnRef) or None in values:
            return None
        stats = self._column_stats(column)
        if stats is None or not stats.rows or not stats.valid or not all(stats.accepts(v) for v in values):
            if self._pinned(column.id, plan) is None:
                return None
            stats = None
        return column.id, stats, values

    def selectivity(self, predicate: Expr, plan: LogicalPlan, rows: float) -> float:
        if isinstance(predicate, Call):
            op = predicate.op
            if op == "and":
                return self.conjunction(predicate.args, plan, rows)
            if op == "or":
                s = 0.0
                for a in predicate.args:
                    s += self.selectivity(a, plan, rows)
                return min(1.0, s)
            if op == "not":
                return 1.0 - self.selectivity(predicate.args[0], plan, rows)
            if op in ("eq", "in_list") and self._points(predicate, plan) is not None:
                return self.conjunction((predicate,), plan, rows)
            if op in ("eq", "ne"):
                return self._equality(predicate, plan, negated=op == "ne")
            if op in _RANGE_OPS:
                compared = _comparison(predicate)
                stats = self._column_stats(compared[0]) if compared else None
                if stats is not None and stats.accepts(compared[2]):
                    return self._interval(stats, [compared[1:]])
                self._note("default")
                return 1.0 / 3.0
            if op == "in_list":
                return self._in_list(predicate, plan)
            if op in ("like", "not_like"):
                s = self._like(predicate)
                return 1.0 - s if op == "not_like" else s
            if op in ("is_null", "is_not_null"):
                stats = self._column_stats(_strip_cast(predicate.args[0]))
                if stats is not None and stats.rows:
                    self._note(stats.source)
                    nulls = stats.nulls / stats.rows
                else:
                    self._note("default")
                    nulls = 0.05
                return nulls if op == "is_null" else 1.0 - nulls
        if isinstance(predicate, ColumnRef) and predicate.type.kind == "bool":     # WHERE flag
            stats = self._column_stats(predicate)
            if stats is not None and stats.rows:
                self._note(stats.source)
                return (stats.eq_rows(True) or 0.0) / stats.rows
        self._note("default")
        return 0.5

    def _equality(self, predicate: Call, plan: LogicalPlan, negated: bool) -> float:
        compared = _comparison(predicate)
        if compared is None:
            self._note("default")
            return 0.9 if negated else 0.1
        column, _, value = compared
        stats = self._column_stats(column)
        if stats is not None and stats.rows and (stats.accepts(value) or not stats.valid):
            self._note(stats.source)      # a column of NULLs only equals nothing
            equal = stats.eq_rows(value) / stats.rows if stats.valid else 0.0
            return max(0.0, stats.valid / stats.rows - equal) if negated else equal
        equal = 1.0 / self.ndv(column.id, plan)
        return 1.0 - equal if negated else equal

    def _in_list(self, predicate: Call, plan: LogicalPlan) -> float:
        column = _strip_cast(predicate.args[0])
        values = set(predicate.options[0])
        negated = bool(predicate.options[1])
        stats = self._column_stats(column)
        if stats is not None and stats.rows and all(stats.accepts(v) for v in values):
            self._note(stats.source)
            equal = min(1.0, sum(stats.eq_rows(v) for v in values) / stats.rows)
            return max(0.0, stats.valid / stats.rows - equal) if negated else equal
        if isinstance(column, ColumnRef):
            s = min(1.0, len(values) / self.ndv(column.id, plan))
        else:
            self._note("default")
            s = min(1.0, 0.1 * len(values))
        return 1.0 - s if negated else s

    def _like(self, predicate: Call) -> float:
        """LIKE 'prefix%' is a range of the column's histogram; other patterns take the defaults."""
        pattern = _strip_cast(predicate.args[1])
        if not (isinstance(pattern, Literal) and isinstance(pattern.value, str)):
            self._note("default")
            return 0.25
        text = pattern.value
        cut = min([i for i in (text.find("%"), text.find("_"), text.find("\\")) if i >= 0], default=len(text))
        prefix = text[:cut]
        stats = self._column_stats(_strip_cast(predicate.args[0])) if prefix else None
        if stats is not None and stats.rows and stats.accepts(prefix) and text[cut:] in ("", "%"):
            self._note(stats.source)
            rows = stats.eq_rows(prefix) if cut == len(text) else stats.prefix_rows(prefix)
            return rows / stats.rows
        stats = stats if stats is not None else self._column_stats(_strip_cast(predicate.args[0]))
        if stats is not None and stats.sample is not None and len(stats.sample) and stats.rows:
            import pyarrow.compute as pc       # any other pattern: the share of the column's sample
            matched = pc.sum(pc.match_like(stats.sample, text)).as_py() or 0
            self._note(stats.source)
            return matched / len(stats.sample) * stats.valid / stats.rows
        self._note("default")
        return 0.1 if prefix else 0.25

    def _interval(self, stats: ColumnStats, bounds) -> float:
        """Selectivity of ``column op value`` for every (op, value) of ``bounds``, ANDed."""
        lo = hi = None
        lo_inclusive = hi_inclusive = True
        for op, value in bounds:
            if op in ("gt", "ge") and (lo is None or value > lo or (value == lo and op == "gt")):
                lo, lo_inclusive = value, op == "ge"
            elif op in ("lt", "le") and (hi is None or value < hi or (value == hi and op == "lt")):
                hi, hi_inclusive = value, op == "le"
        self._note(stats.source)
        if not stats.rows or (lo is not None and hi is not None and (lo > hi or (lo == hi and not (lo_inclusive and hi_inclusive)))):
            return 0.0
        return stats.range_rows(lo, lo_inclusive, hi, hi_inclusive) / stats.rows

    def column_stats(self, column: Expr) -> Optional[ColumnStats]:
        """The statistics of the table column ``column`` reads (through projections), or None."""
        return self._column_stats(column)

    def _column_stats(self, column: Expr) -> Optional[ColumnStats]:
        origin = self._origins.get(column.id) if isinstance(column, ColumnRef) else None
        lookup = getattr(self.stats, "column_stats", None)
        if origin is None or lookup is None:
            return None
        key = (origin[0].table_id, origin[1])
        if key not in self._stats_memo:
            self._stats_memo[key] = lookup(*origin)
        return self._stats_memo[key]

    # One planning asks for the same table's rows and column's statistics once per candidate join (a
    # 60-input join thousands of times): each is asked of the provider once per Estimator (per query).
    def table_rows(self, table: TableDef) -> int:
        """The table's rows as the statistics say (asked of the provider once per Estimator)."""
        return self._table_rows(table)

    def _table_rows(self, table: TableDef) -> int:
        if table.table_id not in self._rows_memo:
            self._rows_memo[table.table_id] = self.stats.table_rows(table)
        return self._rows_memo[table.table_id]

    def _column_ndv(self, table: TableDef, column: str) -> int:
        key = (table.table_id, column)
        if key not in self._ndv_memo:
            self._ndv_memo[key] = self.stats.column_ndv(table, column)
        return self._ndv_memo[key]


def _weakest(*stats: ColumnStats) -> str:
    return min((s.source for s in stats), key=_RANK.__getitem__)


class _Unknown:
    """The value of a constant that is not a literal (a scalar subquery's): no histogram accepts it,
    so ``col = $subquery0`` still gets 1/NDV."""


def _comparison(predicate: Expr):
    """``(column, op, value)`` for ``column op constant`` or ``constant op column`` (op turned around
    so the column is on the left), looking through CASTs; None for anything else."""
    if not (isinstance(predicate, Call) and predicate.op in _FLIPPED and len(predicate.args) == 2):
        return None
    a, b = (_strip_cast(x) for x in predicate.args)
    if isinstance(a, ColumnRef) and not b.column_ids():
        return a, predicate.op, _value(b)
    if isinstance(b, ColumnRef) and not a.column_ids():
        return b, _FLIPPED[predicate.op], _value(a)
    return None


def _within(value, bounds) -> bool:
    """Whether ``value`` meets every ``(op, bound)`` of ``bounds`` (range comparisons)."""
    for op, bound in bounds:
        try:
            if not {"lt": value < bound, "le": value <= bound, "gt": value > bound, "ge": value >= bound}[op]:
                return False
        except TypeError:
            return True         # values that do not compare: keep (as if the bound were unknown)
    return True


def _strip_collation(e: Expr) -> Expr:
    return e.args[0] if isinstance(e, Call) and e.op == "collation_key" else e


def _value(constant: Expr):
    return constant.value if isinstance(constant, Literal) and constant.value is not None else _Unknown()


def _strip_cast(e: Expr) -> Expr:
    """``e`` under its CASTs and collation keys: a string compared by its collation key is estimated
    from its stored values' statistics (a _ci key merges values that differ in case only: rare)."""
    while isinstance(e, Call) and e.op in ("cast", "collation_key", "collate"):
        e = e.args[0]
    return e


def _bare(scan: Scan) -> Scan:
    """``scan`` without its filters, outputting every column it reads (its filter-only ones too)."""
    if not scan.filter_fields:
        return dataclasses.replace(scan, filters=())
    return dataclasses.replace(scan, fields=scan.fields + scan.filter_fields,
                               column_names=scan.column_names + scan.filter_columns,
                               filters=(), filter_fields=(), filter_columns=())
