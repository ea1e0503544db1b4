"""The physical rule that places exchanges: wherever an operator requires of an input a distribution the
input does not have (``PhysicalOperator.required_distributions`` / ``output_distribution``, see
:mod:`engine.exec.distribution`), an exchange moves the rows there — gathered to the aggregator, broadcast
to every partition, or repartitioned by the hash of the required keys. The planner chooses strategies
(which side of a join moves, whether an aggregate finishes on the aggregator) by setting requirements;
no operator and no planner method builds a gather, broadcast or repartition itself. (A kept CTE's
``keep`` exchange is not a move but a materialization point: the planner places it.)

:class:`ExchangePlacer` also tells, before any exchange is placed, the distribution an operator's rows
will have once they are (:meth:`ExchangePlacer.distribution`): the planner's choices read it.
"""
from __future__ import annotations

from typing import Callable, Optional

from engine.exec.distribution import SINGLE, Distribution, Required, delivered
from engine.exec.operators.base import PhysicalOperator
from engine.exec.operators.exchange import ExchangeExec
from engine.exec.stages import reads_table


class ExchangePlacer:
    """``on_replaced(old, new)``: an operator was rebuilt over inputs with exchanges placed below;
    ``on_added(exchange, consumer)``: an exchange was placed below ``consumer`` (None: the root)."""

    def __init__(self, on_replaced: Callable[[PhysicalOperator, PhysicalOperator], None] = lambda old, new: None,
                 on_added: Callable[[ExchangeExec, Optional[PhysicalOperator]], None] = lambda ex, consumer: None):
        self.on_replaced = on_replaced
        self.on_added = on_added
        # id(operator) -> (operator, result): both kept alive so ids stay unique; an operator reached
        # twice (a kept CTE read by several references) is placed once and stays one object
        self._placed: dict[int, tuple[PhysicalOperator, PhysicalOperator]] = {}
        self._distributions: dict[int, tuple[PhysicalOperator, Distribution]] = {}

    def distribution(self, op: PhysicalOperator) -> Distribution:
        """The distribution of ``op``'s output once exchanges are placed below it."""
        known = self._distributions.get(id(op))
        if known is not None:
            return known[1]
        inputs = tuple(delivered(self.distribution(child), required)
                       for child, required in zip(op.children, op.required_distributions()))
        dist = op.output_distribution(inputs)
        self._distributions[id(op)] = (op, dist)
        return dist

    def place(self, root: PhysicalOperator, required: Optional[Required] = None) -> PhysicalOperator:
        """``root`` with exchanges wherever an input does not satisfy its consumer's requirement (and
        ``required`` of the root itself)."""
        placed = self._place(root)
        if required is not None and not required.satisfied_by(self.distribution(root)):
            placed = self._move(placed, self.distribution(root), required, None)
        return placed

    def _place(self, op: PhysicalOperator) -> PhysicalOperator:
        done = self._placed.get(id(op))
        if done is not None:
            return done[1]
        children = []
        for child, required in zip(op.children, op.required_distributions()):
            placed = self._place(child)
            dist = self.distribution(child)
            if required is not None and not required.satisfied_by(dist):
                placed = self._move(placed, dist, required, op)
            children.append(placed)
        new = op
        if any(new_child is not old for new_child, old in zip(children, op.children)):
            new = op.with_children(children)
            self.on_replaced(op, new)
        self._placed[id(op)] = (op, new)
        return new

    def _move(self, op: PhysicalOperator, dist: Distribution, required: Required,
              consumer: Optional[PhysicalOperator]) -> PhysicalOperator:
        """``op`` (distributed as ``dist``) moved to satisfy ``required``. A stage that is not spread
        over the partitions runs once (``parallel_input``). A replicated input is first gathered to
        one copy, then repartitioned (each row must go to one partition only). Replicated rows that
        read no table (VALUES, SELECT 1: every task makes them alike) are not gathered but made once
        where they are read (a stage and an exchange less per query)."""
        made_here = dist.kind == "replicated" and not reads_table(op)
        if required.kind == "single":
            if made_here:
                return op
            moved = ExchangeExec(op, "gather", (), parallel_input=dist.partitioned)
        elif required.kind == "broadcast":
            moved = ExchangeExec(op, "broadcast", (), parallel_input=dist.partitioned)
        else:
            if dist.kind == "replicated":
                if not made_here:
                    op = ExchangeExec(op, "gather", (), parallel_input=False)
                    self.on_added(op, consumer)
                dist = SINGLE
            moved = ExchangeExec(op, "repartition", required.keys, parallel_input=dist.partitioned)
        self.on_added(moved, consumer)
        return moved
