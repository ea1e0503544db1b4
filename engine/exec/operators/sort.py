from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.exec.evaluate import evaluate_array
from engine.exec.memory import Reservation, SpillFile
from engine.exec.operators.base import PhysicalOperator, TaskContext, conform, table_to_batches
from engine.core.fields import SortKey

# Rows per batch of a spilled run, at most (and about _RUN_BATCH_BYTES): the merge holds one such
# batch of every run it merges at once.
_RUN_BATCH_ROWS = 1 << 10
_RUN_BATCH_BYTES = 64 << 10
_LAST = "__last_of_run"          # the merge's marker column: the last loaded row of a run
_RUN = "__run"                   # and which run a loaded row came from


@dataclass(frozen=True)
class SortExec(PhysicalOperator):
    """Sort a partition; with ``limit`` keep only the first rows (top-N).

    Within ``memory_limit`` the input is held and sorted at once. Past it, an external merge sort:
    what is held is sorted into a *run* spilled to disk (Arrow IPC, LZ4) with its sort keys as extra
    columns, and once the input has ended the runs are merged (:meth:`merge_runs`), holding one batch of
    each run at a time. With ``limit`` each run keeps only its first ``limit`` rows."""

    input: PhysicalOperator
    keys: tuple[SortKey, ...]
    limit: Optional[int] = None
    requires: tuple = ()          # Required per input (None: as it is), chosen by the planner

    @property
    def fields(self):
        return self.input.fields

    @property
    def children(self):
        return (self.input,)

    def describe(self) -> str:
        top = f"TopN {self.limit} " if self.limit is not None else "Sort "
        return top + ", ".join(str(k) for k in self.keys)

    def execute(self, partition: int, ctx: TaskContext) -> Iterator[pa.RecordBatch]:
        with ctx.memory.reservation("Sort", spillable=True) as memory:
            yield from self._execute(partition, ctx, memory)

    def _execute(self, partition: int, ctx: TaskContext, memory: Reservation) -> Iterator[pa.RecordBatch]:
        schema = self.schema
        held: list[pa.RecordBatch] = []
        runs: list[SpillFile] = []
        for batch in self.input.execute(partition, ctx):
            if not batch.num_rows:
                continue
            # a held batch costs itself and, while sorting, its share of the sorted copy
            if not memory.try_grow(2 * batch.nbytes):
                if held:
                    runs.append(self.spill_run(pa.Table.from_batches(held, schema=schema), ctx))
                    held = []
                    memory.free()
                memory.grow(2 * batch.nbytes, spilled=True)
            held.append(conform(batch, schema))
        table = pa.Table.from_batches(held, schema=schema) if held else schema.empty_table()
        if ctx.profile is not None and table.num_rows and not runs:
            ctx.profile.held(self.input, table)         # EXPLAIN ANALYZE: what the sort collected
        if not runs:
            if table.num_rows:
                result = self._sorted(table, ctx)
                del table, held
                memory.resize(result.nbytes)        # the input is gone; what is left is its sorted copy
                yield from table_to_batches(result)
            return
        if table.num_rows:
            runs.append(self.spill_run(table, ctx))
        del table, held
        memory.free()
        yield from self.merge_runs(runs, memory)

    def _sort_keys(self) -> list[tuple[str, str, str]]:
        return [(f"__sk{i}", "ascending" if key.ascending else "descending",
                 "at_start" if key.nulls_first else "at_end") for i, key in enumerate(self.keys)]

    def _key_table(self, table: pa.Table, ctx: TaskContext) -> pa.Table:
        batch = table.combine_chunks().to_batches()[0]
        columns = [evaluate_array(key.expr, batch, ctx.params) for key in self.keys]
        return pa.table(columns, names=[name for name, _, _ in self._sort_keys()])

    def _order(self, keys_table: pa.Table, rows: int) -> pa.Array:
        sort_keys = self._sort_keys()
        if self.limit is not None and self.limit < rows // 8 and not any(
                c.null_count for c in keys_table.columns):
            indices = pc.select_k_unstable(keys_table, k=self.limit, sort_keys=[k[:2] for k in sort_keys])
            return pc.take(indices, pc.sort_indices(pc.take(keys_table, indices), sort_keys=sort_keys))
        indices = pc.sort_indices(keys_table, sort_keys=sort_keys)
        return indices.slice(0, self.limit) if self.limit is not None else indices

    def _sorted(self, table: pa.Table, ctx: TaskContext) -> pa.Table:
        return table.take(self._order(self._key_table(table, ctx), table.num_rows))

    def spill_run(self, table: pa.Table, ctx: TaskContext, operator: str = "Sort") -> SpillFile:
        """``table`` sorted, with its key columns, written to a run file (counted as ``operator``'s)."""
        keys = self._key_table(table, ctx)
        order = self._order(keys, table.num_rows)
        for name, column in zip(keys.column_names, keys.columns):
            table = table.append_column(name, column)
        run = ctx.memory.spill_file(table.schema, operator)
        _write_run(run, table.take(order))
        return run.finish()

    def merge_runs(self, runs: list[SpillFile], memory: Reservation, operator: str = "Sort") -> Iterator[pa.RecordBatch]:
        """The runs' rows in order. When one batch of every run does not fit the reservation's share of
        the limit, groups of as many runs as fit are first merged into longer runs on disk (a
        multi-pass merge: the fan-in is bounded by memory, not by the number of runs)."""
        runs = list(runs)
        while len(runs) > 2:
            share = memory.pool.share()
            widest = max(max(run.batch_bytes for run in runs), 1)
            fan_in = len(runs) if share is None else max(2, share // (4 * widest))
            if len(runs) <= fan_in:
                break
            group, runs = runs[:fan_in], runs[fan_in:]
            merged = memory.pool.spill_file(group[0].schema, operator)
            for batch in self._merge(group, memory, keep_keys=True):
                _write_run(merged, pa.Table.from_batches([batch]))
            runs.append(merged.finish())
        yield from self._merge(runs, memory)

    def _merge(self, runs: list[SpillFile], memory: Reservation, keep_keys: bool = False) -> Iterator[pa.RecordBatch]:
        """Merge sorted runs, vectorised: the loaded rows (``pool``) are sorted together; every row up
        to the first one marked as the last loaded row of its run is ≤ everything not yet loaded
        (a run's unloaded rows are ≥ its last loaded one), so that prefix is emitted, and the run
        whose marked row it ended on loads its next batch. Each step emits at least that run's whole
        batch (the sort is stable and a run's rows enter the pool in order), so the merge ends after
        as many steps as the runs have batches. Ties between runs come out in any order, as SQL allows."""
        sort_keys = self._sort_keys()
        out_names = self.schema.names + ([k[0] for k in sort_keys] if keep_keys else [])
        readers = [iter(run.read()) for run in runs]
        pool: Optional[pa.Table] = None
        pending = list(range(len(runs)))           # runs to load a batch from
        emitted = 0
        while True:
            loaded = [] if pool is None else [pool]
            for r in pending:
                batch = next(readers[r], None)
                if batch is None:
                    runs[r].delete()
                    continue
                last = np.zeros(batch.num_rows, dtype=bool)
                last[-1] = True
                loaded.append(pa.Table.from_batches([batch]).append_column(_LAST, pa.array(last))
                              .append_column(_RUN, pa.array(np.full(batch.num_rows, r, np.int32))))
            if not loaded:
                return
            pool = pa.concat_tables(loaded) if len(loaded) > 1 else loaded[0]
            memory.free()
            memory.grow(2 * pool.nbytes, spilled=True)
            pool = pool.take(pc.sort_indices(pool.select([k[0] for k in sort_keys]), sort_keys=sort_keys))
            marks = pc.indices_nonzero(pool.column(_LAST)) if pool.num_rows else pa.array([], pa.uint64())
            if len(marks) == 0:                    # every run is exhausted: the rest is in order
                head, pool = pool, None
            else:
                end = marks[0].as_py() + 1
                head, pool = pool.slice(0, end), pool.slice(end)
                pending = [head.column(_RUN)[head.num_rows - 1].as_py()]
            if self.limit is not None and emitted + head.num_rows >= self.limit:
                head = head.slice(0, self.limit - emitted)
                yield from table_to_batches(head.select(out_names))
                return
            emitted += head.num_rows
            yield from table_to_batches(head.select(out_names))
            if pool is None:
                return
            if pool.num_rows == 0:
                pool = None


def _write_run(run: SpillFile, table: pa.Table) -> None:
    """``table`` (in order) into a run, in batches of about _RUN_BATCH_BYTES (16 to _RUN_BATCH_ROWS rows)."""
    rows = max(16, min(_RUN_BATCH_ROWS, _RUN_BATCH_BYTES * table.num_rows // max(table.nbytes, 1)))
    for batch in table.to_batches(max_chunksize=rows):
        run.write(batch)
