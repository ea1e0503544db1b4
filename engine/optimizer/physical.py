"""Physical planning: choose operators and what each needs of its inputs' distribution.

Every physical subtree has a *distribution* (:mod:`engine.exec.distribution`: hashed on keys, spread on
no key, replicated, or in a single task), which its operators declare. The planner chooses strategies by
setting the distribution an operator requires of each input (``requires``); it places no exchange
itself: the rule :mod:`engine.optimizer.exchanges` inserts them where an input's distribution does not
satisfy its consumer's, once the tree is built (:meth:`PhysicalPlanner.plan`). While building, the
distribution a subtree will have once exchanges are placed is what the choices above it read.

Joins are colocated when both sides are hashed on the join keys, local when one side is replicated,
otherwise one side is broadcast or both are repartitioned by the join keys, whichever
:mod:`engine.optimizer.cost` says is cheaper (a side above ``broadcast_row_limit`` estimated rows is
never copied to every leaf). Within a task the join is a hash join, a nested loop (tiny inputs) or a
batched key access join (an ordered build side probed by sorted batches of keys), by cost. Aggregates
are partial on every partition, shuffled by the group keys (by the one a join above reads, where it has
values enough to spread) and finished in parallel (or gathered when
the groups are few), or shuffled once without a partial, by cost; a partial is streaming (no hash
table) where the statistics show the input clustered on the group keys, and an aggregate over a sort
on its keys streams in one step. The root is gathered to the aggregator; then hash joins get their
runtime join filters (:mod:`engine.optimizer.runtime_filters`) and aggregates their path (the store,
hash kernels, Arrow, ...: :mod:`engine.optimizer.aggregate_paths`). Each operator's estimated
cost (its own and its inputs') is kept in ``costs`` for EXPLAIN.

Why one file of over 600 lines: ``PhysicalPlanner`` is one method per logical node (``_Scan``,
``_Join``, ``_Aggregate``, ...) over one state (the distributions and costs of the subtrees built so
far); the joins' and aggregates' choices are long because each compares priced alternatives, and
splitting them into mixins would spread that one state over several files. The choices that stand
alone are already their own modules (exchanges, runtime_filters, aggregate_paths, cost).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import replace
from typing import Optional

from engine.errors import UnsupportedError
from engine.exec.operators import streaming_aggregate
from engine.exec.operators.base import PhysicalOperator
from engine.exec.operators.batched_key_join import KINDS as BATCHED_KEY_KINDS
from engine.exec.operators.batched_key_join import BatchedKeyJoinExec, key_supported
from engine.exec.aggregate_mode import AggregateMode
from engine.exec.distribution import (NEEDS_BROADCAST, NEEDS_SINGLE, SINGLE, Distribution,
                                      Required, delivered, hash_compatible, join_output, key_id)
from engine.exec.operators.exchange import ExchangeExec
from engine.exec.operators.filter import FilterExec
from engine.exec.extended_aggregates import mergeable
from engine.exec.operators.grouping_sets import GroupingSetsExec
from engine.exec.operators.hash_aggregate import HashAggregateExec
from engine.exec.operators.hash_join import BLOOM_MAX_KEYS, HashJoinExec
from engine.exec.operators.limit import LimitExec
from engine.exec.operators.nested_loop_join import NestedLoopJoinExec
from engine.exec.operators.project import ProjectExec
from engine.exec.operators.repeat import RepeatExec
from engine.exec.operators.scan import ScanExec
from engine.exec.operators.sort import SortExec
from engine.exec.operators.streaming_aggregate import StreamingAggregateExec
from engine.exec.operators.union import UnionExec
from engine.exec.operators.cte_scan import CteScanExec
from engine.exec.operators.values import ValuesExec
from engine.exec.operators.window import WindowExec
from engine import types as T
from engine.optimizer import cost
from engine.optimizer.context import OptimizerContext
from engine.optimizer.exchanges import ExchangePlacer
from engine.optimizer.rewrite import Rewriter
from engine.optimizer.runtime_filters import RuntimeFilterPlacer
from engine.optimizer.aggregate_paths import choose_aggregate_path
from engine.core.expressions import AggCall, Call, ColumnRef, and_all
from engine.plan.logical import (Aggregate, CteScan, Field, Filter, Join, Limit, LogicalPlan, Project, Repeat,
                                 Scan, Sort, Union, Values, Window)


# An aggregate is hashed on one of its group keys that a join above reads only where that key has at
# least this many distinct values per task (fewer would leave tasks idle and others overloaded).
_PLACEMENT_MIN_NDV_PER_TASK = 64

_MIN_LIMIT_BATCH = 1024          # a LIMIT's scan batches: never tinier (per-batch overhead) ...
_MAX_LIMIT_BATCH = 1 << 16       # ... nor larger than a segment chunk
# ids of the key columns a join computes (lkey0#k1): fresh per planning, renamed by the plan cache
_key_ids = itertools.count(1)

class PhysicalPlanner:
    def __init__(self, ctx: OptimizerContext):
        self.ctx = ctx
        self.est = ctx.estimator
        self.logical_of: dict[int, LogicalPlan] = {}    # id(operator) -> the node it computes (EXPLAIN estimates)
        self.costs: dict[int, float] = {}         # id(operator) -> its estimated cost and its inputs', seconds
        self._own: dict[int, float] = {}          # id(operator) -> its own cost, where the planner priced it
        self._out_rows: dict[int, float] = {}     # id(operator) -> rows out, where not its node's estimate
        self._keep: list[PhysicalOperator] = []   # operators priced but replaced: their ids stay unique
        self._upper: dict[int, tuple] = {}         # id(node) -> (node, its most rows): _upper_rows
        # id(operator) -> the choices made for it by cost: (what was chosen, {alternative: seconds}),
        # each alternative priced the same way (for EXPLAIN: "hash 3 ms vs nested loop 40 ms")
        self.choices: dict[int, list[tuple[str, dict[str, float]]]] = {}
        # kept CTEs (engine.optimizer.ctes) by number: the one exchange all their references read
        self._kept: dict[int, ExchangeExec] = {}
        self._priced_once: set[int] = set()      # kept CTEs' exchanges already counted in a plan's cost
        self.exchanges = ExchangePlacer(self._replaced, self._exchange_added)
        self.runtime_filters = RuntimeFilterPlacer(self._replaced)
        self.aggregate_paths = Rewriter(choose_aggregate_path, self._replaced)
        self._joined_on: set[str] = set()       # ids of columns a join above reads as a key (_joined_on)

    def plan(self, root: LogicalPlan) -> PhysicalOperator:
        self._joined_on = _joined_on(root)
        op, _ = self.build(root)
        op = self.exchanges.place(op, NEEDS_SINGLE)      # the root's rows go to the aggregator
        op = self.runtime_filters.place(op)              # join filters within each stage
        op = self.aggregate_paths.rewrite(op)            # how each aggregate computes
        self._price(op)
        return op

    def _replaced(self, old: PhysicalOperator, new: PhysicalOperator) -> None:
        """An operator rebuilt over its inputs with exchanges keeps what was noted for it."""
        for notes in (self.logical_of, self._own, self._out_rows, self.choices):
            if id(old) in notes:
                notes[id(new)] = notes[id(old)]
        self._keep.append(new)

    def _exchange_added(self, exchange: ExchangeExec, consumer: Optional[PhysicalOperator]) -> None:
        """An exchange placed below ``consumer`` shares its estimate (the root's gather: none)."""
        if consumer is not None and id(consumer) in self.logical_of:
            self.logical_of[id(exchange)] = self.logical_of[id(consumer)]
        self._keep.append(exchange)

    def plan_cost(self, root: LogicalPlan) -> float:
        """The estimated cost of ``root`` planned (a kept CTE counted once however often it is read)."""
        op = self.plan(root)
        return self.costs[id(op)]

    # -- costs -------------------------------------------------------------------------------------
    def _rows_out(self, op: PhysicalOperator) -> float:
        if id(op) in self._out_rows:
            return self._out_rows[id(op)]
        node = self.logical_of.get(id(op))
        return self.est.rows(node) if node is not None else 0.0

    def _price(self, op: PhysicalOperator) -> float:
        """Fill ``costs`` for ``op``'s subtree: priced operators as planned, exchanges and sorts by
        their input rows, everything else free (the same in every alternative)."""
        if isinstance(op, ExchangeExec) and op.kind == "keep":
            if id(op) in self._priced_once:         # computed once, read by several references
                return 0.0
            self._priced_once.add(id(op))
        total = sum(self._price(child) for child in op.children)
        own = self._own.get(id(op))
        if own is None:
            if isinstance(op, ExchangeExec):
                own = cost.exchange(self._rows_out(op.input), op.kind)
            elif isinstance(op, (SortExec, WindowExec)):
                own = cost.sort(self._rows_out(op.input))
            else:
                own = 0.0
        self.costs[id(op)] = total + own
        return total + own

    def _priced(self, op: PhysicalOperator, own: float, rows: Optional[float] = None) -> PhysicalOperator:
        self._own[id(op)] = own
        if rows is not None:
            self._out_rows[id(op)] = rows
        self._keep.append(op)
        return op

    def _chose(self, op: PhysicalOperator, chosen: str, options: dict[str, float]) -> None:
        if len(options) > 1:
            self.choices.setdefault(id(op), []).append((chosen, dict(options)))

    def cost_text(self, op_id: int) -> Optional[str]:
        """EXPLAIN's cost note: the operator's cost with its inputs', then for each choice made by cost
        the chosen alternative's cost beside the rejected ones' (``cost 12.40 ms; hash join 3.10 ms vs
        nested loop 40.00 ms, batched key 12.00 ms``)."""
        total = self.costs.get(op_id)
        if total is None:
            return None
        notes = [f"{chosen} {cost.ms(options[chosen])} vs "
                 + ", ".join(f"{name} {cost.ms(seconds)}" for name, seconds in
                             sorted(options.items(), key=lambda kv: kv[1]) if name != chosen)
                 for chosen, options in self.choices.get(op_id, ())]
        return "; ".join([f"cost {cost.ms(total)}"] + notes)

    @property
    def tasks(self) -> int:
        return max(1, self.ctx.num_tasks or self.ctx.num_partitions)

    # -- dispatch ----------------------------------------------------------------------------------
    def build(self, node: LogicalPlan) -> tuple[PhysicalOperator, Distribution]:
        """The operator computing ``node``, and the distribution of its rows once exchanges are placed."""
        method = getattr(self, "_" + type(node).__name__, None)
        if method is None:
            raise UnsupportedError(f"no physical operator for {type(node).__name__}")
        op = method(node)
        self._tag(op, node)
        return op, self.exchanges.distribution(op)

    def _tag(self, op: PhysicalOperator, node: LogicalPlan) -> None:
        """Operators added for ``node`` (partial aggregates, per-partition top-N, key projections) down
        to its inputs' operators share its estimate; EXPLAIN shows an exchange with its input's."""
        if id(op) in self.logical_of:
            return
        self.logical_of[id(op)] = node
        for child in op.children:
            self._tag(child, node)

    def _Scan(self, node: Scan):
        table = node.table
        stored = {c.lower() for c in node.column_names + node.filter_columns}
        indexed = tuple(c for c in table.indexed_columns if c.lower() in stored)
        return ScanExec(table.table_id, table.name, node.fields, node.column_names, node.filters, table.reference,
                        indexed=indexed, shard_key=tuple(table.shard_key or ()),
                        shard_key_collations=table.shard_key_collations() if table.shard_key else (),
                        filter_fields=node.filter_fields, filter_columns=node.filter_columns)

    def _Values(self, node: Values):
        return ValuesExec(node.fields, node.rows)

    def _CteScan(self, node: CteScan):
        if not node.kept:
            # gathered and handed to every reader (at most broadcast_row_limit rows: engine.optimizer.ctes)
            return CteScanExec(node.fields, node.name, node.index)
        # Kept on the leaves: the definition is planned once, into this plan; every reference reads the
        # same exchange (one stage) where its rows were computed, renamed to the reference's columns.
        if node.index not in self._kept:
            op, dist = self.build(node.definition)
            self._kept[node.index] = ExchangeExec(op, "keep", (), parallel_input=dist.partitioned, label=node.name)
        exprs = tuple((r, ColumnRef(f.id, f.type, f.name)) for f, r in zip(node.definition.fields, node.fields))
        return ProjectExec(self._kept[node.index], exprs)

    def _Filter(self, node: Filter):
        op, _ = self.build(node.input)
        return FilterExec(op, node.predicate)

    def _Project(self, node: Project):
        op, _ = self.build(node.input)
        return ProjectExec(op, node.exprs)

    def _Limit(self, node: Limit):
        op, dist = self.build(node.input)
        if node.count is not None:
            op = self._scan_batch_for(op, node.input, node.count + node.offset)
        if dist.partitioned and node.count is not None:
            op = LimitExec(op, node.count + node.offset, 0)
        return LimitExec(op, node.count, node.offset, requires=(NEEDS_SINGLE,))

    def _scan_batch_for(self, op: PhysicalOperator, node: LogicalPlan, wanted: int) -> PhysicalOperator:
        """``op`` with the scan under its streaming Project/Filter chain reading batches of about the
        rows needed to pass ``wanted`` rows (from the estimated selectivity), so a LIMIT decodes a
        small first batch instead of a whole segment chunk. Other shapes are returned as they are."""
        if isinstance(op, (ProjectExec, FilterExec)):
            inner = self._scan_batch_for(op.input, node, wanted)
            return op if inner is op.input else self._retag(op, replace(op, input=inner))
        if not isinstance(op, ScanExec) or op.batch_rows is not None:
            return op
        table_rows = self.est.table_rows(self.logical_of[id(op)].table)
        selectivity = min(1.0, self.est.rows(node) / table_rows) if table_rows else 1.0
        rows = wanted / selectivity if selectivity > 0 else _MAX_LIMIT_BATCH
        return self._retag(op, replace(op, batch_rows=int(min(_MAX_LIMIT_BATCH, max(_MIN_LIMIT_BATCH, 2 * rows)))))

    def _retag(self, old: PhysicalOperator, new: PhysicalOperator) -> PhysicalOperator:
        self.logical_of[id(new)] = self.logical_of.pop(id(old))
        return new

    def _Sort(self, node: Sort):
        op, dist = self.build(node.input)
        if dist.partitioned and node.limit is not None:
            op = SortExec(op, node.keys, node.limit)      # top-N per partition, merged above
        return SortExec(op, node.keys, node.limit, requires=(NEEDS_SINGLE,))

    def _Repeat(self, node: Repeat):
        op, _ = self.build(node.input)
        return RepeatExec(op, node.count)

    def _Window(self, node: Window):
        """Every row of a window partition must meet in one task: rows are hash-repartitioned by the
        PARTITION BY columns unless already distributed on (a subset of) them (a table sharded on
        them, a GROUP BY finished by those keys); without PARTITION BY they are gathered."""
        op, dist = self.build(node.input)
        key_ids = tuple(k.id for k in node.partition_by)
        required = NEEDS_SINGLE if not key_ids or dist.kind == "replicated" else Required.colocated(key_ids)
        return WindowExec(op, node.partition_by, node.order_by, node.calls, requires=(required,), keep=node.keep)

    def _Union(self, node: Union):
        """Inputs that are all spread over the partitions stay there (each task unions its share, and
        an aggregate above, as INTERSECT / EXCEPT have, runs distributed; UnionExec says when its
        output stays hashed); otherwise all are gathered."""
        built = [self.build(child) for child in node.inputs]
        ops = tuple(op for op, _ in built)
        if all(dist.partitioned for _, dist in built):
            return UnionExec(ops, node.fields)
        return UnionExec(ops, node.fields, requires=(NEEDS_SINGLE,) * len(ops))

    def _Aggregate(self, node: Aggregate):
        op, dist = self.build(node.input)
        if node.grouping_sets:
            return self._grouping_sets(node, op, dist)
        key_ids = tuple(e.id for _, e in node.keys if isinstance(e, ColumnRef))
        has_distinct = not all(mergeable(a) for _, a in node.aggregates)
        out_keys = tuple(f.id for f, _ in node.keys)
        if dist.kind in ("single", "replicated"):
            return self._one_step(node, op, key_ids, has_distinct, NEEDS_SINGLE)
        # keys a distribution can name: columns, and a string column's collation key (GROUP BY s)
        named = Required.colocated(tuple(k for k in (key_id(e) for _, e in node.keys) if k is not None))
        if node.keys and named.satisfied_by(dist):
            return self._one_step(node, op, key_ids, has_distinct, named)
        if has_distinct:
            # DISTINCT states do not merge: move rows by the group keys (or gather) and aggregate once
            if node.keys and len(key_ids) == len(node.keys):
                return HashAggregateExec(op, AggregateMode.SINGLE, node.keys, node.aggregates,
                                         requires=(self._placement(node, key_ids),))
            shuffled = self._count_distinct_by_shuffle(node, op, dist)
            if shuffled is not None:
                return shuffled
            return HashAggregateExec(op, AggregateMode.SINGLE, node.keys, node.aggregates, requires=(NEEDS_SINGLE,))
        if node.keys:
            return self._grouped(node, op, dist, key_ids, out_keys)
        partial = HashAggregateExec(op, AggregateMode.PARTIAL, node.keys, node.aggregates)
        return HashAggregateExec(partial, AggregateMode.FINAL, node.keys, node.aggregates, requires=(NEEDS_SINGLE,))

    def _grouping_sets(self, node: Aggregate, op, dist: Distribution) -> PhysicalOperator:
        """ROLLUP / CUBE / GROUPING SETS: a partial aggregate by the finest grouping on every leaf, its
        states gathered, merged once and rolled up to each set on the aggregator. Aggregates whose
        states do not merge (DISTINCT) gather the rows and aggregate each set from them."""
        if not all(mergeable(a) for _, a in node.aggregates):
            return GroupingSetsExec(op, AggregateMode.SINGLE, node.keys, node.aggregates, node.grouping_sets,
                                    node.grouping_id, requires=(NEEDS_SINGLE,))
        # a replicated input is aggregated from one copy
        before = (NEEDS_SINGLE,) if dist.kind == "replicated" else ()
        rows = self.est.rows(node.input)
        finest = min(rows, self.est.rows(replace(node, grouping_sets=(), grouping_id=None)))
        tasks = self.tasks if dist.partitioned else 1
        states = min(rows, tasks * finest)
        partial = self._priced(HashAggregateExec(op, AggregateMode.PARTIAL, node.keys, node.aggregates, requires=before),
                               cost.hash_aggregate(rows, states), states)
        rolled_up = GroupingSetsExec(partial, AggregateMode.FINAL, node.keys, node.aggregates,
                                     node.grouping_sets, node.grouping_id, requires=(NEEDS_SINGLE,))
        # the states merged once by the finest grouping, then once more per set
        return self._priced(rolled_up, cost.final_aggregate(states, finest)
                            + len(node.grouping_sets) * cost.final_aggregate(finest, finest))

    def _grouped(self, node: Aggregate, op, dist, key_ids, out_keys):
        """GROUP BY over partitioned input, the cheapest of: rows shuffled by the keys and aggregated
        once (MemSQL 6.5's high-cardinality GROUP BY: a partial would not shrink anything); a hash
        partial per task, states moved, a final merge; a streaming partial where the input arrives
        clustered on the keys (one state row per run). Few groups finish on the aggregator."""
        groups, rows = self.est.rows(node), self.est.rows(node.input)
        tasks = self.tasks
        per_task = rows / tasks
        # distinct keys among a task's rows (uniform placement): each group is missed with (1 - 1/g)^n
        seen = groups * -math.expm1(per_task * math.log1p(-1.0 / groups)) if groups > 1 else 1.0
        partial_rows = min(rows, tasks * seen)
        gather = groups <= self.ctx.gather_groups_limit

        def move(state_rows: float) -> float:
            return 0.0 if gather else cost.exchange(state_rows, "repartition")

        options = {"hash partial": cost.hash_aggregate(rows, partial_rows) + move(partial_rows)
                   + cost.final_aggregate(partial_rows, groups)}
        if len(key_ids) == len(node.keys):
            options["shuffle rows"] = cost.exchange(rows, "repartition") + cost.hash_aggregate(rows, groups)
        runs = self._runs(node, key_ids, groups, rows)
        if runs is not None and streaming_aggregate.supports(node.keys, node.aggregates):
            options["streaming partial"] = cost.streaming_aggregate(rows) + move(runs) \
                + cost.final_aggregate(runs, groups)
        choice = min(options, key=options.__getitem__)
        if choice == "shuffle rows":
            final = self._priced(HashAggregateExec(op, AggregateMode.SINGLE, node.keys, node.aggregates,
                                                   requires=(self._placement(node, key_ids),)),
                                 cost.hash_aggregate(rows, groups))
            self._chose(final, choice, options)
            return final
        if choice == "streaming partial":
            partial = self._priced(StreamingAggregateExec(op, AggregateMode.PARTIAL, node.keys, node.aggregates),
                                   cost.streaming_aggregate(rows), runs)
            state_rows = runs
        else:
            partial = self._priced(HashAggregateExec(op, AggregateMode.PARTIAL, node.keys, node.aggregates),
                                   cost.hash_aggregate(rows, partial_rows), partial_rows)
            state_rows = partial_rows
        # the states meet by their keys: on the aggregator when few, else repartitioned by them
        required = NEEDS_SINGLE if gather else self._placement(node, out_keys)
        final = self._priced(HashAggregateExec(partial, AggregateMode.FINAL, node.keys, node.aggregates, requires=(required,)),
                             cost.final_aggregate(state_rows, groups))
        self._chose(final, choice, options)
        return final

    def _placement(self, node: Aggregate, ids: tuple[str, ...]) -> Required:
        """Where the rows (or states) of ``node`` meet by its group keys (``ids``: what the input names
        them, one per key): hashed on all of them, unless a join above reads one of its output keys,
        which has values enough to spread: then hashed on that key alone (equal groups still meet),
        so the join finds that side in place and moves only the other (an eager aggregate by
        (year, customer) joined to customer on customer: one shuffle of the groups less)."""
        tasks = self.tasks
        for (f, e), placed in zip(node.keys, ids):
            if f.id in self._joined_on and isinstance(e, ColumnRef) and \
                    self.est.ndv(e.id, node.input) >= _PLACEMENT_MIN_NDV_PER_TASK * tasks:
                return Required.hash((placed,))
        return Required.colocated(ids)

    def _one_step(self, node: Aggregate, op, key_ids, has_distinct, required: Required) -> PhysicalOperator:
        """The whole aggregate in one operator (input together, or hashed on the keys: ``required``):
        streaming when the input is a sort on the group keys, else hashing."""
        groups, rows = self.est.rows(node), self.est.rows(node.input)
        options = {"hash": cost.hash_aggregate(rows, groups)}
        if not has_distinct and node.keys and len(key_ids) == len(node.keys) and _sorted_on(op, key_ids) \
                and streaming_aggregate.supports(node.keys, node.aggregates):
            options["streaming"] = cost.streaming_aggregate(rows)
        choice = min(options, key=options.__getitem__)
        if choice == "streaming":
            aggregate = StreamingAggregateExec(op, AggregateMode.SINGLE, node.keys, node.aggregates, requires=(required,))
        else:
            aggregate = HashAggregateExec(op, AggregateMode.SINGLE, node.keys, node.aggregates, requires=(required,))
        self._chose(aggregate, choice, options)
        return self._priced(aggregate, options[choice])

    def _runs(self, node: Aggregate, key_ids, groups: float, rows: float) -> Optional[float]:
        """State rows a streaming partial would emit: runs of equal keys in scan order, from ANALYZE's
        order statistics of the key columns (a multi-column key has at least the runs of each column,
        at least one per group), in proportion to the rows a filter keeps. None where the input is not
        a scan (through filters and projections) of the key columns, or the order was not measured."""
        below = node.input
        while isinstance(below, (Filter, Project)):
            below = below.input
        if not isinstance(below, Scan) or len(key_ids) != len(node.keys) or below.table.reference:
            return None
        runs = 0.0
        for _, key in node.keys:
            stats = self.est.column_stats(key)
            if stats is None or stats.runs is None or not stats.rows:
                return None
            runs = max(runs, stats.runs * min(1.0, rows / stats.rows))
        return min(rows, max(runs, groups))

    def _count_distinct_by_shuffle(self, node: Aggregate, op: PhysicalOperator, dist: Distribution):
        """``SELECT COUNT(DISTINCT b) FROM t``: repartition by b, count distinct values on every leaf (the
        partitions hold disjoint sets of b), and add the counts on the aggregator — the seeds' shuffle
        example, instead of gathering every row to one task. None when the aggregate is not of that form."""
        calls = [call for _, call in node.aggregates]
        if node.keys or not calls or not all(
                call.func == "count" and call.distinct and isinstance(call.arg, ColumnRef) for call in calls):
            return None
        column = calls[0].arg.id
        if any(call.arg.id != column for call in calls) or not dist.partitioned:
            return None
        per_leaf = HashAggregateExec(op, AggregateMode.SINGLE, (), node.aggregates, requires=(Required.colocated((column,)),))
        totals = tuple((f, AggCall("sum", f.ref(), f.type)) for f, _ in node.aggregates)
        return HashAggregateExec(per_leaf, AggregateMode.SINGLE, (), totals, requires=(NEEDS_SINGLE,))

    def _Join(self, node: Join):
        left, ldist = self.build(node.left)
        right, rdist = self.build(node.right)
        kind = node.kind
        if not node.left_keys:
            return self._nested_loop(node, left, ldist, right, rdist)
        # join keys must be columns to hash-partition on them; compute expressions first
        left, left_keys = self._key_columns(left, node.left_keys, "lkey")
        right, right_keys = self._key_columns(right, node.right_keys, "rkey")
        # a side placed by a string key's collation keys is hashed on the computed key column
        ldist, rdist = self.exchanges.distribution(left), self.exchanges.distribution(right)
        lkey_ids = tuple(k.id for k in left_keys)
        rkey_ids = tuple(k.id for k in right_keys)
        preserve_left = kind != "inner"
        # A full join keeps the unmatched rows of both sides: neither may be copied to several tasks
        # (each copy would come out unmatched once per task), so its sides meet only where a key lives.
        full = kind == "full"
        strategy = ""
        need_left: Optional[Required] = None       # what each side must be (None: used where it is)
        need_right: Optional[Required] = None
        distribution = None        # (chosen, {alternative: seconds}) where broadcast vs repartition was costed
        if rdist.kind == "replicated" and ldist.kind != "single" and not full:
            strategy = "local (replicated build)"
        elif ldist.kind == "single" and rdist.kind == "single":
            strategy = "aggregator"
        elif ldist.kind == "replicated" and rdist.kind == "replicated":
            strategy = "local (both replicated)"
        elif ldist.kind == "replicated" and not preserve_left and rdist.partitioned:
            strategy = "local (replicated probe)"
        elif self._colocated(ldist, rdist, lkey_ids, rkey_ids, left_keys, right_keys):
            strategy = "colocated"
        else:
            left_rows, right_rows = self.est.rows(node.left), self.est.rows(node.right)
            limit = self.ctx.broadcast_row_limit
            tasks = self.tasks
            broadcast_cost = cost.hash_join(right_rows, left_rows / tasks, tasks)
            moved = (0 if self._hashed_on(ldist, lkey_ids) else left_rows) + \
                (0 if self._hashed_on(rdist, rkey_ids) else right_rows)
            repartition_cost = cost.exchange(moved, "repartition") + \
                cost.hash_join(right_rows / tasks, left_rows / tasks, tasks)
            costed = {"broadcast": broadcast_cost, "repartition": repartition_cost}
            if full:
                pass            # repartitioned below
            elif kind == "anti_null_aware" or rdist.kind == "single" or (
                    right_rows <= limit and broadcast_cost <= repartition_cost and ldist.kind != "single"):
                if ldist.kind in ("replicated", "single"):
                    need_left = need_right = NEEDS_SINGLE
                    strategy = "aggregator"
                else:
                    need_right = NEEDS_BROADCAST
                    strategy = "broadcast"
                    if kind != "anti_null_aware" and rdist.kind != "single":
                        distribution = ("broadcast", costed)
            elif ldist.kind == "single" and not preserve_left and left_rows <= limit:
                need_left = NEEDS_BROADCAST
                strategy = "broadcast probe"
            if full or strategy == "":
                # a replicated side is repartitioned from one copy of it
                lfrom = SINGLE if ldist.kind == "replicated" else ldist
                rfrom = SINGLE if rdist.kind == "replicated" else rdist
                # Move only what is not already in place: a side hashed on (some of) its join keys, as a
                # table sharded on them is, stays; the other side is repartitioned on the matching keys.
                if self._hashed_on(lfrom, lkey_ids):
                    need_left = Required.hash(lfrom.keys)
                    need_right = Required.hash(tuple(rkey_ids[lkey_ids.index(k)] for k in lfrom.keys))
                elif self._hashed_on(rfrom, rkey_ids):
                    need_left = Required.hash(tuple(lkey_ids[rkey_ids.index(k)] for k in rfrom.keys))
                    need_right = Required.hash(rfrom.keys)
                else:
                    need_left, need_right = Required.hash(lkey_ids), Required.hash(rkey_ids)
                strategy = "repartition"
                if not full and right_rows <= limit and lfrom.kind != "single":     # broadcast was possible: costed
                    distribution = ("repartition", costed)
        out_dist = join_output(kind, delivered(ldist, need_left), delivered(rdist, need_right))
        return self._join_algorithm(node, left, right, left_keys, right_keys, strategy, out_dist,
                                    (need_left, need_right), distribution)

    def _join_algorithm(self, node: Join, left, right, left_keys, right_keys, strategy: str,
                        out_dist: Distribution, requires=(None, None), distribution=None) -> PhysicalOperator:
        """Within each task, the cheapest of a hash join, a nested loop over the key equalities (tiny
        inputs: no hash table to set up) and a batched key access join (an ordered build side, probed
        by sorted batches of keys: nothing hashed). ``ctx.join_algorithm`` forces one where it applies.
        ``requires``: what the left and right inputs must be (see _Join); ``distribution``: (chosen,
        {alternative: seconds}) of the broadcast / repartition choice, for EXPLAIN."""
        kind = node.kind
        left_rows, right_rows = self.est.rows(node.left), self.est.rows(node.right)
        tasks = 1 if out_dist.kind in ("single", "replicated") else self.tasks
        per_left = left_rows if strategy == "local (replicated probe)" or tasks == 1 else left_rows / tasks
        per_right = right_rows if strategy in ("local (replicated build)", "broadcast") or tasks == 1 \
            else right_rows / tasks
        options = {"hash": cost.hash_join(per_right, per_left, tasks)}
        # A nested loop saves ~40 us of hash-table set-up per task when the inputs are as tiny as
        # estimated, and costs the product of their sizes when they are not: TPC-H Q20 at SF1 estimated
        # 5 x 4 rows, met 5,843 x 8,508 and spent 2.6 s in a NestedLoopJoin a hash join does in ~10 ms.
        # So it competes only where even its worst case (the inputs' upper bounds) is no dearer than
        # hashing the estimated rows.
        if kind in ("inner", "left", "full", "semi", "anti") and max(per_left, per_right) <= _NESTED_LOOP_MAX_ROWS:
            share_left = per_left / max(left_rows, 1e-9)
            share_right = per_right / max(right_rows, 1e-9)
            worst = cost.nested_loop(_upper_rows(node.left, self.est, self._upper) * share_left,
                                     _upper_rows(node.right, self.est, self._upper) * share_right, tasks)
            if worst <= options["hash"]:
                options["nested loop"] = cost.nested_loop(per_left, per_right, tasks)
        bka = None
        if kind in BATCHED_KEY_KINDS and node.residual is None and len(left_keys) == 1 \
                and key_supported(left_keys[0].type) and key_supported(right_keys[0].type):
            options["batched key"] = cost.batched_key(per_left, per_right, self._ordered_runs(
                node.right, right_keys[0], per_right, tasks), tasks)
            bka = (left, right, left_keys[0], right_keys[0], False)
            if kind == "inner":
                swapped = cost.batched_key(per_right, per_left, self._ordered_runs(
                    node.left, left_keys[0], per_left, tasks), tasks)
                if swapped < options["batched key"]:
                    options["batched key"] = swapped
                    bka = (right, left, right_keys[0], left_keys[0], True)
        forced = self.ctx.join_algorithm
        choice = forced if forced in options else min(options, key=options.__getitem__)
        if choice == "nested loop":
            equal = [Call("eq", (l, r), _BOOLEAN) for l, r in zip(left_keys, right_keys)]
            condition = and_all(equal + ([node.residual] if node.residual is not None else []))
            join = NestedLoopJoinExec(left, right, kind, condition, node.fields, strategy, tuple(requires))
        elif choice == "batched key":
            probe, build, probe_key, build_key, swapped = bka
            join = BatchedKeyJoinExec(probe, build, kind, probe_key, build_key, node.fields, strategy,
                                      tuple(reversed(requires)) if swapped else tuple(requires), swapped)
        else:
            # a semi / anti join over a much smaller probe side may run it first and filter the build
            # side by its keys (engine.optimizer.runtime_filters decides whether there is where to)
            probe_first = kind in ("semi", "anti") and per_left <= BLOOM_MAX_KEYS and \
                left_rows * _PROBE_FIRST_RATIO <= right_rows
            join = HashJoinExec(left, right, kind, left_keys, right_keys, node.residual, node.fields, strategy,
                                tuple(requires), probe_first=probe_first)
        if distribution is not None:
            self._chose(join, *distribution)
        self._chose(join, choice, options)
        return self._priced(join, options[choice])

    def _ordered_runs(self, side: LogicalPlan, key, rows_per_task: float, tasks: int) -> float:
        """Ascending runs a join side's key arrives in per task, from ANALYZE's order statistics (a
        scan, through filters and projections, of a column measured in order); unknown: unordered."""
        below = side
        while isinstance(below, (Filter, Project)):
            below = below.input
        stats = self.est.column_stats(key) if isinstance(below, Scan) and isinstance(key, ColumnRef) else None
        if stats is None or stats.descents is None:
            return max(rows_per_task, 1.0)
        return max(1.0, (stats.descents + stats.partitions) / (1 if below.table.reference else tasks))

    def _nested_loop(self, node: Join, left, ldist, right, rdist):
        kind = "inner" if node.kind == "cross" else node.kind
        if kind == "anti_null_aware":
            raise UnsupportedError("NOT IN without a comparable key")
        if kind == "full":        # no key to meet on: both sides in one task (see _Join)
            if ldist.kind == rdist.kind == "replicated":
                return NestedLoopJoinExec(left, right, kind, node.residual, node.fields)
            return NestedLoopJoinExec(left, right, kind, node.residual, node.fields, "aggregator",
                                      (NEEDS_SINGLE, NEEDS_SINGLE))
        if rdist.kind == "replicated" and ldist.kind != "single":
            requires = (None, None)                          # each task joins its rows to the copy
        elif ldist.kind == "single" or (ldist.kind == "replicated" and rdist.kind != "replicated"):
            requires = (NEEDS_SINGLE, NEEDS_SINGLE)          # both on the aggregator
        else:
            requires = (None, NEEDS_BROADCAST)                # each task joins its rows to a copy
        return NestedLoopJoinExec(left, right, kind, node.residual, node.fields, "", requires)

    def _key_columns(self, op: PhysicalOperator, keys, hint: str):
        if all(isinstance(k, ColumnRef) for k in keys):
            return op, tuple(keys)
        exprs = [(f, f.ref()) for f in op.fields]
        new_keys = []
        for i, k in enumerate(keys):
            if isinstance(k, ColumnRef):
                new_keys.append(k)
                continue
            # a fresh id of the form the plan cache renames (``#k12``): two plannings of one statement
            # name it apart, and the text cache still takes the plan (an id from ``id(k)`` did not)
            f = Field(f"{hint}{i}#k{next(_key_ids)}", f"{hint}{i}", k.type)
            exprs.append((f, k))
            new_keys.append(f.ref())
        return ProjectExec(op, tuple(exprs)), tuple(new_keys)

    @staticmethod
    def _hashed_on(dist: Distribution, key_ids: tuple[str, ...]) -> bool:
        return dist.kind == "hashed" and set(dist.keys) <= set(key_ids) and len(dist.keys) > 0

    def _colocated(self, ldist, rdist, lkey_ids, rkey_ids, left_keys, right_keys) -> bool:
        if ldist.kind != "hashed" or rdist.kind != "hashed" or len(ldist.keys) != len(rdist.keys):
            return False
        if not _same_order(ldist.keys, lkey_ids, rdist.keys, rkey_ids):
            return False
        for lk, rk in zip(left_keys, right_keys):
            if lk.id in ldist.keys and not hash_compatible(lk.type, rk.type):
                return False
        return True


_BOOLEAN = T.BOOLEAN
# An equi-join is a nested loop only between tiny inputs: its cost grows with the product of the sides,
# so an estimate off by 10x on both is off by 100x, where a hash join's is off by 10x.
_NESTED_LOOP_MAX_ROWS = 1000
# a semi / anti join runs its probe side first when that side is estimated this many times smaller
_PROBE_FIRST_RATIO = 4


def _joined_on(root: LogicalPlan) -> set[str]:
    """Ids of the columns some equi-join of ``root`` reads as a key, followed down through the
    projections that rename them, unions (by position) and kept CTEs' definitions."""
    found: set[str] = set()
    stack, seen = [root], set()
    while stack:
        plan = stack.pop()
        if id(plan) in seen:
            continue
        seen.add(id(plan))
        if isinstance(plan, Join):
            found.update(k.id for k in plan.left_keys + plan.right_keys if isinstance(k, ColumnRef))
        elif isinstance(plan, Project):
            found.update(e.id for f, e in plan.exprs if f.id in found and isinstance(e, ColumnRef))
        elif isinstance(plan, Union):
            for i, f in enumerate(plan.fields):
                if f.id in found:
                    found.update(child.fields[i].id for child in plan.inputs)
        elif isinstance(plan, CteScan) and plan.kept:
            found.update(d.id for f, d in zip(plan.fields, plan.definition.fields) if f.id in found)
            stack.append(plan.definition)
        stack.extend(plan.inputs)
    return found


def _upper_rows(plan: LogicalPlan, est, cache: dict | None = None) -> float:
    """Rows ``plan`` can produce at most, whatever the estimates say: a scan its table's rows, a filter,
    projection, sort or aggregate its input's, a limit its count, an inner or outer join the product
    of its inputs', a semi or anti join its left input's; infinite where unknown. ``cache``
    (id(plan) -> (plan, rows)) keeps a subtree's: every join of a deep tree asks about its inputs."""
    hit = cache.get(id(plan)) if cache is not None else None
    if hit is not None and hit[0] is plan:
        return hit[1]
    rows = _upper(plan, est, cache)
    if cache is not None:
        cache[id(plan)] = (plan, rows)
    return rows


def _upper(plan: LogicalPlan, est, cache) -> float:
    if isinstance(plan, Scan):
        return float(est.table_rows(plan.table))
    if isinstance(plan, Values):
        return float(len(plan.rows))
    if isinstance(plan, CteScan):
        return _upper_rows(plan.definition, est, cache)
    if isinstance(plan, (Filter, Project, Sort, Window)):
        return _upper_rows(plan.input, est, cache)
    if isinstance(plan, Aggregate):
        return _upper_rows(plan.input, est, cache) if plan.keys else 1.0
    if isinstance(plan, Limit):
        below = _upper_rows(plan.input, est, cache)
        return below if plan.count is None else min(below, float(plan.count))
    if isinstance(plan, Join):
        left = _upper_rows(plan.left, est, cache)
        if plan.kind in ("semi", "anti", "anti_null_aware"):
            return left
        right = _upper_rows(plan.right, est, cache)
        return max(left * right, left if plan.kind == "left" else left + right if plan.kind == "full" else 0.0)
    if isinstance(plan, Union):
        return sum(_upper_rows(i, est, cache) for i in plan.inputs)
    return math.inf


def _sorted_on(op: PhysicalOperator, key_ids) -> bool:
    """Whether ``op``'s rows come out of a sort whose leading keys are exactly the columns ``key_ids``
    (in any order: equal groups are then adjacent)."""
    key_ids = set(key_ids)
    while isinstance(op, (FilterExec, LimitExec, ProjectExec)):
        if isinstance(op, ProjectExec):
            renames = {f.id: e.id for f, e in op.exprs if isinstance(e, ColumnRef)}
            if not key_ids <= renames.keys():
                return False
            key_ids = {renames[k] for k in key_ids}
        op = op.input
    if not isinstance(op, SortExec) or len(op.keys) < len(key_ids):
        return False
    leading = op.keys[:len(key_ids)]
    return all(isinstance(k.expr, ColumnRef) for k in leading) and {k.expr.id for k in leading} == key_ids


def _same_order(lkeys, lkey_ids, rkeys, rkey_ids) -> bool:
    """Both sides hashed on the same positions of the join key list (so equal keys meet)."""
    try:
        lpos = [lkey_ids.index(k) for k in lkeys]
        rpos = [rkey_ids.index(k) for k in rkeys]
    except ValueError:
        return False
    return lpos == rpos

