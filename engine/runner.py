"""The runner interface: how the engine reaches the aggregator's cluster of leaves.

``engine`` defines this interface and ``cluster`` implements it (:class:`cluster.local.LocalRunner`, the
embedded default; the Ray runner later). The session talks to a runner only through these methods, and
what crosses the boundary is Arrow data, TableDefs and encoded StageSpecs, never SQL text.
"""
from __future__ import annotations

import importlib
import os
from abc import ABC, abstractmethod
from typing import Callable, Optional, Sequence, TypeVar

import pyarrow as pa

from engine.catalog import TableDef
from engine.errors import UnsupportedError
from engine.exec.stages import StageSpec

T = TypeVar("T")


class Runner(ABC):
    num_leaves: int
    partitions_per_leaf: int

    @property
    def num_partitions(self) -> int:
        return self.num_leaves * self.partitions_per_leaf

    @property
    def data_path(self):
        """The cluster's data_dir (a Path), None when its tables live in memory."""
        data = getattr(self, "_data", None)       # both runners keep their DataDirectory there
        return None if data is None else data.path

    # -- tables -----------------------------------------------------------------------------------
    @abstractmethod
    def create_table(self, table: TableDef) -> None:
        """Create empty storage for every partition of ``table`` (every leaf's copy of a reference table)."""

    @abstractmethod
    def drop_table(self, table: TableDef) -> None:
        """Release the table's storage on every leaf."""

    @abstractmethod
    def insert(self, table: TableDef, data: pa.Table) -> int:
        """Place rows (already of ``table.arrow_schema``) on their partitions atomically; return the count.

        Sharded tables go to the partition of the hash of their shard key, keyless tables are spread
        evenly, reference tables are copied to every leaf. Either every row becomes visible or none.
        """

    def begin_load(self, table: TableDef) -> "LoadWriter":
        """Start a bulk load into ``table``: blocks go in with ``add`` as they are read, and nothing is
        visible until ``commit``. Runners that can route blocks as they arrive override this."""
        return LoadWriter(self, table)

    @abstractmethod
    def replace_table(self, table: TableDef, data: "pa.Table | None") -> None:
        """Atomically replace every row of ``table`` by ``data`` (None: no rows), placed as insert does.

        DELETE, UPDATE and TRUNCATE go through this: readers see the old rows or the new, never a mix.
        """

    def replace_tables(self, changes: Sequence[tuple[TableDef, "pa.Table | None"]]) -> None:
        """``replace_table`` of several tables as one atomic step (a transaction's COMMIT: one commit
        record, one snapshot): readers and recovery see every table's new rows or none of them."""
        raise UnsupportedError("multi-table transactions on this runner")

    def delete_rows(self, table: TableDef, matcher, rewrite=None) -> "int | None":
        """DELETE in place: remove the rows ``matcher`` selects (engine.sql.dml.RowMatcher) in one
        atomic statement, returning how many (a reference table's rows counted once). ``rewrite``
        (engine.sql.dml.RowRewrite): UPDATE, the removed rows' new versions inserted in the same
        statement; ``matcher`` may also be an engine.sql.matched_rows.RowSetMatcher (rows a planned
        query found) and ``rewrite`` a MatchedRewrite. None: this runner cannot (the statement is
        refused)."""
        return None

    @abstractmethod
    def row_count(self, table: TableDef) -> int:
        """Live rows of the table (answered from metadata, without reading column data)."""

    @abstractmethod
    def distinct_count(self, table: TableDef, column: str) -> int:
        """Number of distinct non-null values of ``column`` (for the optimizer's estimates)."""

    @abstractmethod
    def map_column_partitions(self, table: TableDef, column: str, fn: Callable[[pa.ChunkedArray], T]) -> list[T]:
        """``fn(column of one partition)`` for every partition (once for a reference table), run on the
        leaf that hosts it; the results in partition order. ANALYZE summarizes partitions with this and
        merges the summaries, so ``fn`` must be picklable (a module function or a ``functools.partial``
        of one) and its result small: a Ray leaf ships both."""

    # Not abstract: a runner without it has its statistics collected synchronously (engine.statistics).
    map_partitions: Optional[Callable] = None
    """``map_partitions(table, fn)``: ``fn(partition store)`` for every partition (once for a reference
    table), run on the leaf that hosts it, the results in partition order; ``fn`` must be picklable
    and read metadata only (the optimizer's first statistics: engine.stats.quick) or the rows of a
    small table (the pipelines' own: engine.pipelines.durable)."""

    def catalog_changed(self) -> None:
        """The catalog changed without a table being created or dropped (views, renames): a runner
        that keeps a copy of it elsewhere (a Ray deployment's registry) saves it again."""

    def optimize_table(self, table: TableDef) -> None:
        """OPTIMIZE TABLE: flush write buffers into segments and merge small segments (nothing to do
        for tables kept in memory)."""

    # -- queries ----------------------------------------------------------------------------------
    @abstractmethod
    def run(self, stages: Sequence[StageSpec], params: Sequence = (), profile=None) -> pa.Table:
        """Run the stages of one query (producers first, the final stage last); return its result.
        ``profile``: an engine.exec.profile.QueryProfile to fill (EXPLAIN ANALYZE); a runner that
        cannot collect one raises UnsupportedError."""

    def shutdown(self) -> None:
        """Stop the leaves; the runner is unusable afterwards."""


class LoadWriter:
    """The rows of one load on their way into one table (LOAD DATA, pipelines, ``load_table``).

    Contract: ``add`` takes blocks already of ``table.arrow_schema``; ``commit`` makes every added row
    visible at once and then, still inside the same atomic step where the runner has one, calls
    ``on_commit`` (a pipeline marks its files loaded there, so rows and marks commit together);
    ``abort`` drops what was added. This base version buffers the blocks and inserts them at commit.
    """

    def __init__(self, runner: "Runner", table: TableDef):
        self.runner = runner
        self.table = table
        self.rows = 0
        self._blocks: list[pa.RecordBatch] = []
        self._related: list[tuple[TableDef, pa.Table]] = []

    def add(self, data: "pa.Table | pa.RecordBatch") -> None:
        batches = data.to_batches() if isinstance(data, pa.Table) else [data]
        self._blocks.extend(b for b in batches if b.num_rows)
        self.rows += data.num_rows

    def savepoint(self) -> tuple[int, int]:
        """A mark of what was added so far, for :meth:`rollback_to`."""
        return len(self._blocks), self.rows

    def rollback_to(self, savepoint: tuple[int, int]) -> None:
        """Drop what was added since ``savepoint`` (a file whose streamed read is redone whole)."""
        del self._blocks[savepoint[0]:]
        self.rows = savepoint[1]

    def add_related(self, table: TableDef, data: pa.Table) -> None:
        """Rows of another table that commit with this load's rows (a pipeline's durable file marks).
        Runners with multi-table transactions (the embedded one) commit both in one step; this base
        version inserts them right after the load's rows."""
        self._related.append((table, data))

    def commit(self, on_commit=None) -> int:
        blocks, self._blocks = self._blocks, []
        related, self._related = self._related, []
        if blocks:
            self.runner.insert(self.table, pa.Table.from_batches(blocks, schema=self.table.arrow_schema))
        for table, data in related:
            self.runner.insert(table, data)
        if on_commit is not None:
            on_commit()
        return self.rows

    def abort(self) -> None:
        self._blocks = []
        self._related = []
        self.rows = 0


# The runner registry: kind -> where its Runner class lives ("module:Class"), resolved on first use.
# ``engine`` defines the interface and ``cluster`` implements it, so ``engine`` names the
# implementations here instead of importing them (as SQLAlchemy's dialect registry names its dialects);
# ``register_runner`` adds a kind (a test double, another deployment). Each kind's extra's pip name is
# in the error a missing dependency raises.
_RUNNERS: dict[str, str] = {"local": "cluster.local:LocalRunner", "ray": "cluster.ray_runner:RayRunner"}
_EXTRAS = {"ray": "canopy[ray]"}


def register_runner(kind: str, location: "str | Callable[..., Runner]") -> None:
    """Make ``start_runner(kind)`` start the runner at ``location``: ``"module:Class"`` (imported when
    first used) or a callable taking ``leaves=``, ``partitions_per_leaf=`` and the options."""
    _RUNNERS[kind] = location


def _runner_class(kind: str) -> Callable[..., Runner]:
    location = _RUNNERS.get(kind)
    if location is None:
        kinds = " and ".join(repr(k) for k in _RUNNERS)
        raise UnsupportedError(f"cluster={kind!r}: the runners are {kinds}")
    if callable(location):
        return location
    module, _, name = location.partition(":")
    try:
        return getattr(importlib.import_module(module), name)
    except ImportError as exc:
        extra = _EXTRAS.get(kind, "canopy")
        raise UnsupportedError(f"cluster={kind!r} needs {exc.name or 'a missing package'}: "
                               f"pip install '{extra}' ({exc})") from exc


def start_runner(kind: Optional[str] = None, *, leaves: int = 2, partitions_per_leaf: int = 4,
                 **options) -> Runner:
    """Start a cluster of ``leaves`` leaves with ``partitions_per_leaf`` partitions each.

    ``kind``: ``"local"`` (leaves in this process) or ``"ray"`` (leaf actors on a Ray cluster; options
    such as ``address=``, ``name=``, ``leaf_cpus=`` go to :class:`cluster.ray_runner.RayRunner`), or a
    kind added with :func:`register_runner`; None reads ``$CANOPY_RUNNER`` (default ``local``), so one
    test suite runs under either.
    """
    if leaves < 1 or partitions_per_leaf < 1:
        raise ValueError("leaves and partitions_per_leaf must be at least 1")
    kind = kind or os.environ.get("CANOPY_RUNNER") or "local"
    return _runner_class(kind)(leaves=leaves, partitions_per_leaf=partitions_per_leaf, **options)
