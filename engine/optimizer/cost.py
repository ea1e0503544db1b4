"""What Canopy's own operators cost, per row, on this machine: the physical planner's choices.

Every constant is seconds of one core per unit of work, measured by ``benchmarks/bench_costs.py``
(``python -m benchmarks.bench_costs``; each constant's comment names the measurement it prints) on
the 2-core development machine on 2026-11-23, with 2,000,000 rows, median of 5. Re-run it after an
operator changes and paste its output here.

A plan's cost is the sum of its operators' work over all tasks (the total CPU it takes, not its
elapsed time): moving a row, hashing it, merging a partial state. Scans, filters and projections
cost the same in every alternative the planner weighs, so they are left out. Costs are
comparable only with each other; EXPLAIN shows each operator's with its inputs', in milliseconds.
"""
from __future__ import annotations

import math

MEASURED = "2026-11-23, benchmarks/bench_costs.py --rows 2000000 --repeat 5"

_NS = 1e-9
HASH_AGGREGATE_ROW = 15.06 * _NS        # hash_aggregate_row: partial GROUP BY, 1,000 groups, per input row
HASH_AGGREGATE_GROUP = 216.28 * _NS     # hash_aggregate_group: each extra group (1,000 vs 1M groups)
STREAMING_AGGREGATE_ROW = 9.48 * _NS    # streaming_aggregate_row: the same over sorted keys, per row
FINAL_AGGREGATE_ROW = 39.77 * _NS       # final_aggregate_row: merging partial states, per state row
# hash_join_build_row / hash_join_probe_row are solved from 2 build/probe shapes, an ill-conditioned pair
# on a loaded machine: these are from the steadier --rows 1000000 --repeat 3 run (the 2M run gave
# 206 / 78 ns, and a 2M-row probe JOIN of a 500-row side then took 17.7 ms, i.e. ~9 ns a probe row)
HASH_JOIN_BUILD_ROW = 159.45 * _NS      # hash_join_build_row
HASH_JOIN_PROBE_ROW = 12.11 * _NS       # hash_join_probe_row
HASH_JOIN_CALL = 88_997.5 * _NS         # hash_join_call: an 8 x 8 join, fixed cost of building Acero's plan
NESTED_LOOP_CALL = 52_067.5 * _NS       # nested_loop_call: the same 8 x 8 join as a nested loop
NESTED_LOOP_PAIR = 12.35 * _NS          # nested_loop_pair: 2,000 x 500 pairs, l.a < r.b, per pair
BATCHED_KEY_CALL = 43_024.5 * _NS       # batched_key_call: the same 8 x 8 join (measured apart, --repeat 5)
# batched_key_build_row: the bench's 2.28 ns (an in-memory table source) misses the collect of a real
# scan's batches; end to end, a 2M-row ordered reference table probed by 500 keys took 190.6 ms over
# 2 tasks with the hash join taking 23.5 ms in the same run: 47.7 ns per build row per task, used here
BATCHED_KEY_BUILD_ROW = 47.7 * _NS
BATCHED_KEY_SORT_ROW = 315.10 * _NS     # batched_key_sort_row: stable sort of an unordered build side
BATCHED_KEY_PROBE_ROW = 1110.58 * _NS   # batched_key_probe_row: sort + 2 binary searches + gather, per probe row
SORT_ROW = 408.79 * _NS                 # sort_row: SortExec on one int64 key, per row
REPARTITION_ROW = 19.38 * _NS           # repartition_row: kernels.split_batch into 8 partitions, per row


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.2f} ms"


def hash_aggregate(rows: float, groups: float) -> float:
    return rows * HASH_AGGREGATE_ROW + groups * HASH_AGGREGATE_GROUP


def streaming_aggregate(rows: float) -> float:
    return rows * STREAMING_AGGREGATE_ROW


def final_aggregate(state_rows: float, groups: float) -> float:
    return state_rows * FINAL_AGGREGATE_ROW + groups * HASH_AGGREGATE_GROUP


def exchange(rows: float, kind: str, copies: int = 1) -> float:
    """Rows leaving a stage: a repartition hashes and splits each; a gather or a broadcast hands the
    batches on, and a broadcast's receivers each get all of them (charged where they are built)."""
    return rows * REPARTITION_ROW if kind == "repartition" else 0.0


def hash_join(build: float, probe: float, tasks: int = 1) -> float:
    """Rows per task; ``tasks`` each build a table. The executor builds on the smaller input it
    collects (:class:`HashJoinExec`), so the sides are ordered here too."""
    small, large = min(build, probe), max(build, probe)
    return tasks * (HASH_JOIN_CALL + small * HASH_JOIN_BUILD_ROW + large * HASH_JOIN_PROBE_ROW)


def nested_loop(left: float, right: float, tasks: int = 1) -> float:
    """Rows per task: every pair is built and the condition evaluated on it."""
    return tasks * (NESTED_LOOP_CALL + left * right * NESTED_LOOP_PAIR)


def batched_key(probe: float, build: float, runs: float, tasks: int = 1) -> float:
    """Rows per task. ``runs``: ascending runs the build side arrives in per task (1: already in key
    order, only checked; more: the stable merge sort pays ``log2(runs)`` of a full sort's
    ``log2(rows)``)."""
    sort = 0.0
    if runs > 1 and build > 1:
        sort = build * BATCHED_KEY_SORT_ROW * min(1.0, math.log2(runs) / math.log2(build))
    return tasks * (BATCHED_KEY_CALL + build * BATCHED_KEY_BUILD_ROW + sort + probe * BATCHED_KEY_PROBE_ROW)


def sort(rows: float) -> float:
    return rows * SORT_ROW
