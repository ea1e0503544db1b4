"""Bottom-up rewriting of a physical plan, for the physical rules that annotate operators after the
exchanges are placed (engine.optimizer.runtime_filters, engine.optimizer.aggregate_paths)."""
from __future__ import annotations

from typing import Callable

from engine.exec.operators.base import PhysicalOperator


class Rewriter:
    """``rewrite(root)``: each operator, over its rewritten inputs, passed through
    ``change(original, rebuilt)`` (which returns ``rebuilt`` or a replacement). An operator met again (a kept CTE read by several references, or in
    a later plan) is rewritten once and stays one object. ``on_replaced(old, new)`` for each change."""

    def __init__(self, change: Callable[[PhysicalOperator, PhysicalOperator], PhysicalOperator],
                 on_replaced: Callable[[PhysicalOperator, PhysicalOperator], None] = lambda old, new: None):
        self.change = change
        self.on_replaced = on_replaced
        self.done: dict[int, tuple[PhysicalOperator, PhysicalOperator]] = {}   # both kept: ids stay unique

    def rewrite(self, op: PhysicalOperator) -> PhysicalOperator:
        done = self.done.get(id(op))
        if done is not None:
            return done[1]
        children = [self.rewrite(child) for child in op.children]
        new = op
        if any(c is not o for c, o in zip(children, op.children)):
            new = new.with_children(children)
        new = self.change(op, new)
        if new is not op:
            self.on_replaced(op, new)
        self.done[id(op)] = (op, new)
        return new
