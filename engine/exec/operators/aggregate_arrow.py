"""The Arrow path of :class:`~engine.exec.operators.hash_aggregate.HashAggregateExec`
(``AggregatePath.ARROW``): the input held whole (past memory_limit, in hash partitions of the keys on
disk, each aggregated alone) and grouped by Arrow's ``group_by`` (Acero), for DISTINCT aggregates and
the types the hash kernels do not hold; and the merge of partial states, on the kernels where their
types allow, else by ``group_by``. A mixin of HashAggregateExec."""
from __future__ import annotations

from typing import Iterator, Optional

import pyarrow as pa
import pyarrow.compute as pc

from engine.exec import decimal64, decimal128
from engine.exec.aggregate_mode import AggregateMode
from engine.exec.evaluate import evaluate_array
from engine.exec.operators.base import TaskContext, accounted, table_to_batches
from engine.exec.operators.spill_partitions import SpillPartitions
from engine.exec.aggregate_states import (_FEW_STATES, _KEYLESS, _PYTHON_MERGE, _STATES, _group_by, _narrow_sums,
                                          _split_grouped, _state_input, _sum_decimals_as_int64, _sum_lists,
                                          _widen_sums)
from engine.exec.operators.aggregate_spill import _ArgumentPartitions, spills_by_argument
from engine.exec.operators.spill_partitions import hold_or_spill
from engine.exec.operators.aggregate_kernels import kernel_states


class ArrowAggregation:
    def _arrow_first_phase(self, partition: int, ctx: TaskContext, memory) -> Iterator[pa.RecordBatch]:
        """Keys and states of the rows by Arrow's group_by (DISTINCT aggregates, and types the hash
        kernels do not hold)."""
        # Arrow's group_by (DISTINCT aggregates, states the kernels lack) over the input held whole;
        # past memory_limit with keys, the input goes to hash partitions of the keys on disk and
        # each is aggregated alone (a group's rows are all in one partition)
        def spill():
            if self.keys:
                return SpillPartitions.over(ctx.memory, self.input.schema, [e for _, e in self.keys], ctx.params,
                                            "HashAggregate")
            if spills_by_argument([call for _, call in self.aggregates]):
                return _ArgumentPartitions(ctx, [call for _, call in self.aggregates])
            return None                 # one group of other aggregates: held whole or fails

        held, spilled = hold_or_spill(self.input.execute(partition, ctx), memory, spill)
        if spilled is None:
            yield from self._aggregate_held(held, ctx)
        elif isinstance(spilled, _ArgumentPartitions):
            yield from table_to_batches(self._finish(self._distinct_states(spilled, memory)))
        else:
            for table in spilled.each(memory):
                yield from self._aggregate_held(table.to_batches(), ctx)

    def _distinct_states(self, spilled: "_ArgumentPartitions", memory) -> pa.Table:
        """Keyless COUNT / SUM / AVG (DISTINCT x) states from each argument's spilled partitions: a
        value is in one partition only, so the distinct values' count and sum add up over them; the
        other aggregates' states were kept as the batches came (``spilled.running``)."""
        columns, names = [], []
        for (f, call), parts, running in zip(self.aggregates, spilled.parts, spilled.running):
            if parts is None:
                value_type = running["type"] or _state_input(call, pa.array([], call.arg.type.to_arrow())).type \
                    if call.arg is not None else pa.int64()
                count, total = running["count"], running["sum"]
                if call.func in ("min", "max"):
                    columns.append(pa.array([running[call.func]], value_type).cast(call.type.to_arrow()))
                    names.append(f"{f.id}|{call.func}")
                    continue
                if call.func in ("count", "count_star"):
                    columns.append(pa.array([count], pa.int64()))
                    names.append(f"{f.id}|count")
                    continue
            else:
                value_type = parts.schema.field(0).type
                count, total = 0, None
                for table in parts.each(memory):
                    distinct = pc.unique(pc.drop_null(table.column(0).combine_chunks()))
                    count += len(distinct)
                    if call.func != "count" and len(distinct):
                        part = pc.sum(decimal128.widen_for_sum(distinct)).as_py()
                        total = part if total is None else total + part
            if call.func != "count":
                wide_type = pc.sum(decimal128.widen_for_sum(pa.array([], value_type))).type
                column = _narrow_sums([pa.array([total], wide_type)])[0]
                columns.append(column.cast(value_type if not pa.types.is_decimal(value_type)
                                           else pa.decimal128(38, value_type.scale)))
                names.append(f"{f.id}|sum")
            if call.func != "sum":
                columns.append(pa.array([count], pa.int64()))
                names.append(f"{f.id}|count")
        return pa.table(columns, names=names)

    def _aggregate_held(self, batches, ctx: TaskContext) -> Iterator[pa.RecordBatch]:
        """The aggregates of ``batches`` (all the rows of their groups) on Arrow's group_by."""
        key_names = [f.id for f, _ in self.keys]
        columns: dict[str, list[pa.Array]] = {}
        arg_names: dict[int, str] = {}
        for i, (_, call) in enumerate(self.aggregates):
            if call.arg is not None:
                arg_names[i] = f"a{i}"
        pieces = []
        for batch in batches:
            cols = [evaluate_array(e, batch, ctx.params) for _, e in self.keys]
            cols += [_state_input(call, evaluate_array(call.arg, batch, ctx.params))
                     for i, (_, call) in enumerate(self.aggregates) if i in arg_names]
            pieces.append(pa.RecordBatch.from_arrays(cols, names=key_names + list(arg_names.values()))
                          if cols else pa.RecordBatch.from_arrays([pa.nulls(batch.num_rows)], names=["__rows"]))
        del columns
        if pieces:
            table = pa.Table.from_batches(pieces)
        else:
            table = self._empty_input(key_names, arg_names)
        if not self.keys and table.num_columns == 0:
            table = pa.table({"__rows": pa.nulls(0)})
        specs, outputs = [], []
        for i, (f, call) in enumerate(self.aggregates):
            if self.mode == AggregateMode.SINGLE:
                if call.distinct and call.func == "count":
                    specs.append((arg_names[i], "count_distinct"))
                    outputs.append([(f"{f.id}|count", "count")])
                    continue
                if call.distinct and call.func in ("sum", "avg") and not self.keys:
                    # one group: the column's distinct values, summed after the (keyless) aggregation
                    outputs.append([(f"{f.id}|distinct:{arg_names[i]}", call.func)])
                    continue
                if call.distinct and call.func in ("sum", "avg"):
                    # each group's distinct values as a list, summed (and counted) after the group_by
                    specs.append((arg_names[i], "distinct"))
                    outputs.append([(f"{f.id}|distinct", call.func)])
                    continue
                states = _STATES[call.func]
            else:
                states = _STATES[call.func]
            names = []
            for suffix, compute, _ in states:
                specs.append(([], "count_all") if compute == "count_all" else (arg_names[i], compute))
                names.append((f"{f.id}|{suffix}", suffix))
            outputs.append(names)
        table, scaled = _sum_decimals_as_int64(table, specs)
        grouped = _group_by(_widen_sums(table, specs), key_names, specs)
        key_columns, agg_columns = _split_grouped(grouped, key_names)
        agg_columns = _narrow_sums(agg_columns)
        for k, scale in scaled.items():      # int64 sums back to DECIMAL(38, scale): same digits, reread
            agg_columns[k] = decimal64.from_int64_array(agg_columns[k].combine_chunks(), pa.decimal128(38, scale))
        state_columns, state_names, k = [], [], 0
        for names in outputs:
            for name, suffix in names:
                if "|distinct:" in name:            # keyless: no group_by output to read (k stays)
                    field_id, column = name.split("|distinct:")
                    distinct = pc.unique(pc.drop_null(table.column(column).combine_chunks()))
                    wide = decimal128.widen_for_sum(distinct)
                    total = pc.sum(wide) if len(distinct) else pa.scalar(None, wide.type)
                    state_columns.append(_narrow_sums([pa.array([total.as_py()], wide.type)])[0]
                                         .cast(distinct.type if not pa.types.is_decimal(distinct.type)
                                               else pa.decimal128(38, distinct.type.scale)))
                    state_names.append(f"{field_id}|sum")
                    if suffix == "avg":
                        state_columns.append(pa.array([len(distinct)], pa.int64()))
                        state_names.append(f"{field_id}|count")
                    continue
                if name.endswith("|distinct"):
                    field_id = name[: -len("|distinct")]
                    total, count = _sum_lists(agg_columns[k].combine_chunks())
                    state_columns.append(total)
                    state_names.append(f"{field_id}|sum")
                    if suffix == "avg":
                        state_columns.append(count)
                        state_names.append(f"{field_id}|count")
                else:
                    state_columns.append(agg_columns[k])
                    state_names.append(name)
                k += 1
        result = pa.table(list(key_columns) + state_columns, names=key_names + state_names)
        if self.mode == AggregateMode.PARTIAL:
            yield from table_to_batches(result.cast(self.schema))
        else:
            yield from table_to_batches(self._finish(result))

    def _arrow_final(self, partition: int, ctx: TaskContext, memory) -> Iterator[pa.RecordBatch]:
        """Partial states merged by Arrow's group_by over the whole input."""
        batches = [b for b in accounted(self.input.execute(partition, ctx), memory) if b.num_rows]
        if not self.keys and not batches and ctx.task != 0:
            return       # a scalar aggregate produces its one row in task 0 only
        yield from table_to_batches(self._finish_or_states(self._merge_states(batches, memory)))

    def _merge_states(self, batches, memory) -> pa.Table:
        """Partial states (the states' schema) merged by key on the kernels or Arrow's group_by,
        typed as the states' schema (without spilling: this is what runs on a spilled partition)."""
        key_names = [f.id for f, _ in self.keys]
        states = kernel_states(self.keys, self.aggregates, final=True)
        if states is not None:
            result = self._aggregate_with_kernels(
                batches, lambda batch: [batch.column(name) for name in key_names],
                lambda batch: [batch.column(name) for *_, name in states], states, memory)
            for k, (_, _, _, name) in enumerate(states):     # SUM of counts: back to BIGINT
                if name.endswith("|count"):
                    result = result.set_column(len(key_names) + k, name, result.column(name).cast(pa.int64()))
            return result
        state_schema = self._state_schema()
        batches = [b for b in batches if b.num_rows]
        if not key_names:
            merged = self._merge_keyless(batches, state_schema)
            if merged is not None:
                return merged
        table = pa.Table.from_batches(batches, schema=state_schema) if batches else state_schema.empty_table()
        specs, names = [], []
        for f, call in self.aggregates:
            for suffix, _, merge in _STATES[call.func]:
                specs.append((f"{f.id}|{suffix}", merge))
                names.append(f"{f.id}|{suffix}")
        grouped = _group_by(_widen_sums(table, specs), key_names, specs)
        key_columns, agg_columns = _split_grouped(grouped, key_names)
        return pa.table(key_columns + _narrow_sums(agg_columns), names=key_names + names)

    def _merge_keyless(self, batches: list, state_schema: pa.Schema) -> Optional[pa.Table]:
        """A scalar aggregate's partial states (a row per task) merged column by column, when every
        state merges by MIN, MAX or an integer SUM (counts); None otherwise (a decimal or float sum
        is widened to notice an overflow: the general path)."""
        columns, names = [], []
        table = pa.Table.from_batches(batches, schema=state_schema)
        for f, call in self.aggregates:
            for suffix, _, merge in _STATES[call.func]:
                name = f"{f.id}|{suffix}"
                arrow_type = state_schema.field(name).type
                if merge not in ("sum", "min", "max") or (merge == "sum" and not pa.types.is_integer(arrow_type)):
                    return None
                column = table.column(name)
                if table.num_rows <= _FEW_STATES and pa.types.is_integer(arrow_type):
                    # a state a task, a few of them: Python's ints skip a compute call's ~5 us (a
                    # tiny query pays it per state); the integer sums here are counts (sums of
                    # integer values are DECIMAL states), which never overflow
                    values = [v for v in column.to_pylist() if v is not None]
                    value = _PYTHON_MERGE[merge](values) if values else None
                else:
                    value = _KEYLESS[merge](column).as_py()
                columns.append(pa.array([value], arrow_type))
                names.append(name)
        return pa.Table.from_arrays(columns, names=names)

    def _empty_input(self, key_names, arg_names) -> pa.Table:
        arrays, names = [], []
        for f, _ in self.keys:
            arrays.append(pa.array([], f.type.to_arrow()))
            names.append(f.id)
        for i, (_, call) in enumerate(self.aggregates):
            if i in arg_names:
                arrays.append(pa.array([], call.arg.type.to_arrow()))
                names.append(arg_names[i])
        if not arrays:
            return pa.table({"__rows": pa.nulls(0)})
        return pa.table(arrays, names=names)
