"""Cut a physical plan into stages at its exchanges.

A :class:`StageSpec` is what a leaf or the aggregator runs: an operator tree without exchanges, whether
it runs on every partition or once, and where its output goes. Specs are plain frozen dataclasses
encoded with :func:`encode_stage` (versioned pickle), never live objects or SQL text.
"""
from __future__ import annotations

import dataclasses
import pickle
from dataclasses import dataclass
from typing import Callable, Optional

from engine.exec.operators.base import PhysicalOperator
from engine.exec.operators.exchange import ExchangeExec, ExchangeSourceExec

# 2: operators carry the distributions they require (requires), scans and hash joins their runtime
# filter ids, aggregates an AggregateMode and their stored access (issue 15); 3: the vocabulary operators
# carry (Field, Expr, SortKey, ...) is pickled from engine.core (it was engine.plan); 4: hash aggregates
# carry the path the planner chose (path, coded, presize)
STAGE_CODEC_VERSION = 4


@dataclass(frozen=True)
class StageSpec:
    stage_id: int
    root: PhysicalOperator
    parallel: bool                     # run on every partition (True) or once (False)
    output_kind: Optional[str]         # gather | broadcast | repartition | keep | None for the final stage
    output_keys: tuple[str, ...] = ()
    scans_tables: bool = False         # a once-only stage that reads reference tables runs on a leaf
    # Derived from ``root`` when the spec is made (a plan cache reruns one spec many times; the
    # scheduler would otherwise walk the operators for them on every run): the exchange ids the stage
    # reads, in order, and (table id, replicated) of each table scan.
    consumed: tuple[int, ...] = dataclasses.field(init=False, compare=False, repr=False)
    scanned: tuple[tuple[int, bool], ...] = dataclasses.field(init=False, compare=False, repr=False)

    def __post_init__(self):
        object.__setattr__(self, "consumed", consumed_exchanges(self.root))
        object.__setattr__(self, "scanned", tuple(scanned_tables(self.root)))

    @property
    def output_label(self) -> str:
        """How memory errors name the stage's output (its root's kind: the same in every binding)."""
        label = self.__dict__.get("_output_label")
        if label is None:
            label = f"the output of stage {self.stage_id} ({self.root.describe().split(' ')[0]})"
            self.__dict__["_output_label"] = label
        return label


def split_stages(root: PhysicalOperator) -> list[StageSpec]:
    """Stages in execution order (producers before consumers); the last is the final stage. An exchange
    that appears at several places of the tree (the same object: a kept CTE read by several references)
    is one stage, whose output every reader reads."""
    return _split(root, [])


def operator_names(root: PhysicalOperator) -> dict[int, tuple[int, tuple[int, ...]]]:
    """id(operator of ``root``'s tree) -> (stage_id, path in that stage), the names under which
    :mod:`engine.exec.profile` counts operators; an exchange is named by the stage it sends out
    (path ``()``: that stage's root output)."""
    origins: list[tuple[int, PhysicalOperator]] = []
    _split(root, origins)
    names: dict[int, tuple[int, tuple[int, ...]]] = {}

    def walk(op: PhysicalOperator, stage_id: int, path: tuple[int, ...]) -> None:
        if isinstance(op, ExchangeExec):
            return
        names.setdefault(id(op), (stage_id, path))
        for i, child in enumerate(op.children):
            walk(child, stage_id, path + (i,))

    for stage_id, origin in origins:
        if isinstance(origin, ExchangeExec):
            names[id(origin)] = (stage_id, ())
            origin = origin.input
        walk(origin, stage_id, ())
    return names


def _split(root: PhysicalOperator, origins: list) -> list[StageSpec]:
    """``origins`` receives (stage_id, the planner's operator the stage was cut from)."""
    stages: list[StageSpec] = []
    cut_already: dict[int, tuple[int, PhysicalOperator]] = {}      # id(exchange) -> (its stage, the stage's root)

    def cut(op: PhysicalOperator) -> PhysicalOperator:
        if isinstance(op, ExchangeExec):
            if id(op) in cut_already:
                stage_id, child = cut_already[id(op)]
            else:
                child = cut(op.input)
                stage_id = len(stages)
                origins.append((stage_id, op))
                stages.append(StageSpec(stage_id, child, op.parallel_input, op.kind, op.keys, reads_table(child)))
                cut_already[id(op)] = (stage_id, child)
            try:
                fields = child.fields
            except AttributeError:
                fields = ()
            return ExchangeSourceExec(stage_id, op.kind, child.schema, fields, op.runtime_filters)
        replaced = {}
        for f in dataclasses.fields(op):
            value = getattr(op, f.name)
            if isinstance(value, PhysicalOperator):
                replaced[f.name] = cut(value)
            elif isinstance(value, tuple) and value and all(isinstance(v, PhysicalOperator) for v in value):
                replaced[f.name] = tuple(cut(v) for v in value)
        return dataclasses.replace(op, **replaced) if replaced else op

    final = cut(root)
    origins.append((len(stages), root))
    stages.append(StageSpec(len(stages), final, False, None, (), reads_table(final)))
    return stages


def consumed_exchanges(op: PhysicalOperator) -> tuple[int, ...]:
    """The exchange ids a stage reads (its ExchangeSourceExec leaves), found the way ``split_stages``
    walks operators: through every operator-valued dataclass field."""
    found: set[int] = set()

    def walk(node) -> None:
        if isinstance(node, ExchangeSourceExec):
            found.add(node.exchange_id)
            return
        for f in dataclasses.fields(node):
            value = getattr(node, f.name)
            if isinstance(value, PhysicalOperator):
                walk(value)
            elif isinstance(value, tuple):
                for v in value:
                    if isinstance(v, PhysicalOperator):
                        walk(v)

    walk(op)
    return tuple(sorted(found))


def scanned_tables(op: PhysicalOperator) -> list[tuple[int, bool]]:
    """(table id, replicated) of every scan in an operator tree."""
    from engine.exec.operators.scan import ScanExec
    if isinstance(op, ScanExec):
        return [(op.table_id, op.replicated)]
    return [t for child in op.children for t in scanned_tables(child)]


def scans_of(stage: StageSpec) -> tuple:
    """The table scans (``ScanExec``) of a stage's operators, found once per spec."""
    scans = stage.__dict__.get("_scans")
    if scans is None:
        from engine.exec.operators.scan import ScanExec
        found: list = []

        def walk(op: PhysicalOperator) -> None:
            if isinstance(op, ScanExec):
                found.append(op)
            for child in op.children:
                walk(child)

        walk(stage.root)
        scans = stage.__dict__["_scans"] = tuple(found)
    return scans


def reads_table(op: PhysicalOperator) -> bool:
    from engine.exec.operators.scan import ScanExec
    if isinstance(op, ScanExec):
        return True
    return any(reads_table(c) for c in op.children)


def encode_stage(stage: StageSpec) -> bytes:
    return pickle.dumps((STAGE_CODEC_VERSION, stage), protocol=5)


def decode_stage(data: bytes) -> StageSpec:
    version, stage = pickle.loads(data)
    if version != STAGE_CODEC_VERSION:
        raise ValueError(f"stage codec version {version} is not {STAGE_CODEC_VERSION}")
    return stage


def explain_physical(root: PhysicalOperator, annotate: Optional[Callable[[PhysicalOperator], str]] = None) -> str:
    """EXPLAIN text: the operator tree, with the first operator of each stage tagged by where it runs.

    ``[aggregator]`` runs once on the aggregator; ``[leaves]`` runs on every partition, on the leaf that
    hosts it; ``[leaf, once]`` runs once on a leaf (it reads a reference table). An ``Exchange`` line
    says where the rows of the stage below it go. ``annotate(op)``, when given, ends each operator's
    line (an exchange is passed itself).
    """
    lines: list[str] = []
    shown: set[int] = set()         # exchanges read at several places (kept CTEs) are shown once

    def note(op: PhysicalOperator) -> str:
        text = annotate(op) if annotate is not None else ""
        return f"  {text}" if text else ""

    def walk(op: PhysicalOperator, depth: int, tag: str) -> None:
        if isinstance(op, ExchangeExec):
            target = {"gather": "to the aggregator", "broadcast": "to every partition",
                      "repartition": "to the partitions of their hash",
                      "keep": "stays where it was computed"}[op.kind]
            if id(op) in shown:
                lines.append("  " * depth + f"{op.describe()}  ({target}; computed once, shown above)")
                return
            shown.add(id(op))
            lines.append("  " * depth + f"{op.describe()}  ({target})" + note(op))
            source = "[leaves]" if op.parallel_input else ("[leaf, once]" if reads_table(op.input) else "[aggregator]")
            walk(op.input, depth + 1, source)
            return
        lines.append("  " * depth + op.describe() + (f"  {tag}" if tag else "") + note(op))
        for child in op.children:
            walk(child, depth + 1, "")

    walk(root, 0, "[aggregator]")
    return "\n".join(lines)
