"""Measure the per-row costs of Canopy's own operators: the constants of ``engine/optimizer/cost.py``.

``python -m benchmarks.bench_costs`` runs each physical operator directly (one task, no exchange)
over synthetic int64 columns streamed in 64 Ki-row batches, subtracts the time of draining the
source alone, and prints every constant in nanoseconds per row (or per pair, or per call) as the
line to paste into ``cost.py``. Each constant is named after the measurement that produced it here
(``cost.py`` cites these names). Timings are medians of ``--repeat`` runs after a warm-up
(``benchmarks/timing.py``) of the CPU time the process spent (``--clock cpu``, the default: the
costs are CPU seconds, and on a shared machine another process's load lengthens the wall time, not
the CPU time, of a run; ``--clock wall`` for the elapsed time).

Solved in pairs where one operator has two costs: the hash aggregate's per-row and per-group cost
from a 1,000-group and an all-but-unique run; the hash join's per-build-row and per-probe-row cost
from two build/probe shapes. ``--shape tpcds`` takes those two from TPC-DS's joins instead: a fact
table probing a dimension 1/40 of its size (store_sales and date_dim at SF 1) and a returns table
1/10 of a sales table's size probed by half of it (store_returns against the sales of one year).
"""
from __future__ import annotations

import argparse
import datetime
import time
from dataclasses import dataclass
from typing import Iterator

import numpy as np
import pyarrow as pa

import kernels
from benchmarks.timing import median_seconds as _median_seconds
from engine import types as T
from engine.exec.operators.base import PhysicalOperator, TaskContext
from engine.exec.operators.batched_key_join import BatchedKeyJoinExec
from engine.exec.operators.hash_aggregate import HashAggregateExec
from engine.exec.operators.hash_join import HashJoinExec
from engine.exec.operators.nested_loop_join import NestedLoopJoinExec
from engine.exec.operators.sort import SortExec
from engine.exec.operators.streaming_aggregate import StreamingAggregateExec
from engine.core.expressions import AggCall, Call
from engine.plan.logical import Field, SortKey

BATCH = 1 << 16
CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}
_clock = CLOCKS["cpu"]


def median_seconds(fn, repeat: int) -> float:
    return _median_seconds(fn, repeat, _clock)


@dataclass(frozen=True, eq=False)
class TableSource(PhysicalOperator):
    """A pa.Table streamed in batches (stands for a scan whose own cost is left out)."""

    table: pa.Table
    fields: tuple[Field, ...]

    def execute(self, partition: int, ctx: TaskContext) -> Iterator[pa.RecordBatch]:
        yield from self.table.to_batches(max_chunksize=BATCH)


def _source(prefix: str, **columns: np.ndarray) -> TableSource:
    fields = tuple(Field(f"{prefix}{name}", name, T.BIGINT) for name in columns)
    return TableSource(pa.table({f.id: values for f, values in zip(fields, columns.values())}), fields)


def _drain(op: PhysicalOperator) -> int:
    ctx = TaskContext(0, 1, ())
    return sum(b.num_rows for b in op.execute(0, ctx))


def _seconds(op: PhysicalOperator, repeat: int, source: PhysicalOperator = None) -> float:
    spent = median_seconds(lambda: _drain(op), repeat)
    for child in (source,) if source is not None else op.children:
        spent -= median_seconds(lambda: _drain(child), repeat)
    return max(spent, 0.0)


def _aggregate(rows: int, groups: int, sorted_keys: bool, seed: int = 1):
    rng = np.random.default_rng(seed)
    keys = rng.integers(0, groups, rows)
    if sorted_keys:
        keys = np.sort(keys)
    source = _source("a.", k=keys, v=rng.integers(0, 1000, rows))
    k, v = source.fields
    keys_spec = ((Field("g", "g", T.BIGINT), k.ref()),)
    aggs = ((Field("s", "s", T.decimal_type(38, 0)), AggCall("sum", v.ref(), T.decimal_type(38, 0))),
            (Field("c", "c", T.BIGINT), AggCall("count_star", None, T.BIGINT)))
    return source, keys_spec, aggs


# (build, probe) of the two hash-join shapes, as fractions of --rows
# ``split``: the two costs apart, a well-conditioned pair: equal sides (a build row and a probe row
# each), then a build side of 1/2000 (its rows' cost vanishes beside the probe's)
JOIN_SHAPES = {"uniform": ((1 / 20, 1.0), (1 / 2, 1 / 2)), "tpcds": ((1 / 40, 1.0), (1 / 10, 1 / 2)),
               "split": ((1 / 20, 1 / 20), (1 / 2000, 1.0))}


def measure(rows: int, repeat: int, shape: str = "uniform") -> dict[str, float]:
    """name -> nanoseconds (per row, per pair or per call, as the name says)."""
    ns = {}
    source, keys, aggs = _aggregate(rows, 1000, sorted_keys=False)
    few = _seconds(HashAggregateExec(source, "partial", keys, aggs), repeat)
    source_many, keys, aggs = _aggregate(rows, rows // 2, sorted_keys=False)
    many = _seconds(HashAggregateExec(source_many, "partial", keys, aggs), repeat)
    per_group = max(many - few, 0.0) / (rows // 2 - 1000)
    ns["hash_aggregate_row"] = (few - 1000 * per_group) / rows * 1e9
    ns["hash_aggregate_group"] = per_group * 1e9

    sorted_source, keys, aggs = _aggregate(rows, 1000, sorted_keys=True)
    ns["streaming_aggregate_row"] = _seconds(StreamingAggregateExec(sorted_source, "partial", keys, aggs),
                                             repeat) / rows * 1e9
    # a final aggregate's input: partial states (keys, sum, count) of 1,000 groups
    partial = HashAggregateExec(source, "partial", keys, aggs)
    states = pa.Table.from_batches(list(partial.execute(0, TaskContext(0, 1, ()))))
    states = pa.concat_tables([states] * max(1, rows // max(states.num_rows, 1)))
    state_source = TableSource(states, ())
    final = HashAggregateExec(state_source, "final", keys, aggs)
    ns["final_aggregate_row"] = _seconds(final, repeat, state_source) / states.num_rows * 1e9

    def join_seconds(build_rows: int, probe_rows: int) -> float:
        rng = np.random.default_rng(build_rows)
        probe = _source("p.", k=rng.integers(0, build_rows, probe_rows), x=np.arange(probe_rows))
        build = _source("b.", k=rng.permutation(build_rows), y=np.arange(build_rows))
        join = HashJoinExec(probe, build, "inner", (probe.fields[0].ref(),), (build.fields[0].ref(),), None,
                            probe.fields + build.fields)
        return _seconds(join, repeat)

    # two shapes: t = build * b + probe * p
    (fb1, fp1), (fb2, fp2) = JOIN_SHAPES[shape]
    b1, p1, b2, p2 = int(rows * fb1), int(rows * fp1), int(rows * fb2), int(rows * fp2)
    t1, t2 = join_seconds(b1, p1), join_seconds(b2, p2)
    solved = np.linalg.solve(np.array([[b1, p1], [b2, p2]], dtype=float), np.array([t1, t2]))
    ns["hash_join_build_row"], ns["hash_join_probe_row"] = (max(x, 0.0) * 1e9 for x in solved)

    tiny_probe, tiny_build = _source("p.", k=np.arange(8)), _source("b.", k=np.arange(8))
    tiny = HashJoinExec(tiny_probe, tiny_build, "inner", (tiny_probe.fields[0].ref(),),
                        (tiny_build.fields[0].ref(),), None, tiny_probe.fields + tiny_build.fields)
    ns["hash_join_call"] = median_seconds(lambda: _drain(tiny), repeat * 20) * 1e9
    tiny_nl = NestedLoopJoinExec(tiny_probe, tiny_build, "inner",
                                 Call("eq", (tiny_probe.fields[0].ref(), tiny_build.fields[0].ref()), T.BOOLEAN),
                                 tiny_probe.fields + tiny_build.fields)
    ns["nested_loop_call"] = median_seconds(lambda: _drain(tiny_nl), repeat * 20) * 1e9
    tiny_bka = BatchedKeyJoinExec(tiny_probe, tiny_build, "inner", tiny_probe.fields[0].ref(),
                                  tiny_build.fields[0].ref(), tiny_probe.fields + tiny_build.fields)
    ns["batched_key_call"] = median_seconds(lambda: _drain(tiny_bka), repeat * 20) * 1e9

    left_rows, right_rows = 2000, 500
    rng = np.random.default_rng(5)
    left = _source("l.", a=rng.integers(0, 1000, left_rows))
    right = _source("r.", b=rng.integers(0, 1000, right_rows))
    nl = NestedLoopJoinExec(left, right, "inner", Call("lt", (left.fields[0].ref(), right.fields[0].ref()), T.BOOLEAN),
                            left.fields + right.fields)
    ns["nested_loop_pair"] = max(_seconds(nl, repeat) * 1e9 - ns["nested_loop_call"], 0.0) / (left_rows * right_rows)

    # batched key access: an ordered build side (checked, not sorted) probed by a batch of keys
    probe = _source("p.", k=rng.integers(0, rows, rows // 20), x=np.arange(rows // 20))
    ordered = _source("b.", k=np.arange(rows), y=np.arange(rows))
    bka = BatchedKeyJoinExec(probe, ordered, "inner", probe.fields[0].ref(), ordered.fields[0].ref(),
                             probe.fields + ordered.fields)
    bka_seconds = _seconds(bka, repeat)
    shuffled = _source("b.", k=rng.permutation(rows), y=np.arange(rows))
    bka_sorting = BatchedKeyJoinExec(probe, shuffled, "inner", probe.fields[0].ref(), shuffled.fields[0].ref(),
                                     probe.fields + shuffled.fields)
    ns["batched_key_sort_row"] = max(_seconds(bka_sorting, repeat) - bka_seconds, 0.0) / rows * 1e9
    # the ordered build's collect + check per row, and the probe's sort + two binary searches per key
    small = _source("p.", k=rng.integers(0, rows, 1000), x=np.arange(1000))
    bka_small = BatchedKeyJoinExec(small, ordered, "inner", small.fields[0].ref(), ordered.fields[0].ref(),
                                   small.fields + ordered.fields)
    small_seconds = _seconds(bka_small, repeat)
    probe_rows = rows // 20
    per_probe = max(bka_seconds - small_seconds, 0.0) / (probe_rows - 1000)
    ns["batched_key_probe_row"] = per_probe * 1e9
    ns["batched_key_build_row"] = max(small_seconds - 1000 * per_probe, 0.0) / rows * 1e9

    sort_source = _source("s.", k=rng.integers(0, rows, rows), v=np.arange(rows))
    ns["sort_row"] = _seconds(SortExec(sort_source, (SortKey(sort_source.fields[0].ref(), True, False),)),
                              repeat) / rows * 1e9

    batch = sort_source.table.combine_chunks().to_batches()[0]
    key = [sort_source.fields[0].id]
    ns["repartition_row"] = median_seconds(lambda: kernels.split_batch(batch, key, 8), repeat) / rows * 1e9
    return ns


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--shape", choices=sorted(JOIN_SHAPES), default="uniform",
                        help="the hash join's two build/probe shapes")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="cpu",
                        help="cpu: the process's CPU time (default); wall: elapsed time")
    args = parser.parse_args(argv)
    global _clock
    _clock = CLOCKS[args.clock]
    ns = measure(args.rows, args.repeat, args.shape)
    print(f"# benchmarks/bench_costs.py --rows {args.rows:,} --repeat {args.repeat} --shape {args.shape} "
          f"--clock {args.clock}, {datetime.date.today().isoformat()}")
    for name, value in ns.items():
        print(f"{name.upper()}_NS = {value:.2f}")


if __name__ == "__main__":
    main()
