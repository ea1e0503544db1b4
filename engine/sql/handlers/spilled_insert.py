"""The rows of an answer on disk (``engine.exec.answer.SpilledAnswer``: an INSERT ... SELECT's or a
CREATE TABLE ... AS's SELECT past ``memory_limit``) appended to a table a batch at a time.

They go in as one load (``runner.begin_load``, as LOAD DATA's rows do): each batch is conformed to the
table and routed to its partitions as it is read, nothing is visible before the commit, and a failure
drops them all; a table with unique keys has them checked at the commit (``engine.load.keys``), with
the error of a plain INSERT's duplicate.
"""
from __future__ import annotations

from typing import Callable

import pyarrow as pa

from engine.catalog import TableDef
from engine.exec.answer import SpilledAnswer
from engine.load.keys import begin_load


def insert_spilled(runner, table: TableDef, answer: SpilledAnswer,
                   conform: Callable[[pa.Table, int], pa.Table]) -> int:
    """Append ``answer``'s rows to ``table``; ``conform(rows, first_row)`` casts a batch to the table
    (``first_row``: the number of its first row, for messages). Returns the rows added; the answer's
    file is removed either way."""
    writer = begin_load(runner, table)
    try:
        first_row = 1
        for batch in answer.to_batches():
            if batch.num_rows:
                writer.add(conform(pa.Table.from_batches([batch]), first_row))
                first_row += batch.num_rows
        return writer.commit()
    except BaseException:
        writer.abort()
        raise
    finally:
        answer.close()
