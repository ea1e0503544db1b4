"""WITH RECURSIVE: a query that reads its own rows, bound into an anchor and a recursive step.

``WITH RECURSIVE c (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 5)``: the branches of the
UNION that do not name ``c`` are the anchor, the others the step. The statement runs the anchor once,
then the step over the rows the last round produced (the *working table*) until a round produces none
(engine.sql.query); with UNION DISTINCT a round keeps only rows not seen before. Every reference to
``c`` outside its definition reads all the rows.

Both parts are ordinary bound plans; the working table and the result are read through
:class:`~engine.plan.logical.CteScan` nodes whose numbers the statement fills in as it runs, as it does
for the WITH queries engine.optimizer.ctes materializes (the recursive ones take the first numbers).
The column types are the anchor's, as in MySQL; a step's values are cast to them.

A mixin of :class:`engine.plan.binder.Binder`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from sqlglot import exp

from engine import types as T
from engine.errors import BindError, UnsupportedError
from engine.plan.logical import CteScan, Field, LogicalPlan, Project, Union
from engine.plan.scope import Scope


@dataclass(frozen=True)
class RecursiveCte:
    """A bound recursive WITH query: its readers read CteScan ``result_index``; ``step`` reads the last
    round's rows through CteScan ``work_index``."""

    name: str
    result_index: int
    work_index: int
    fields: tuple[Field, ...]
    anchor: LogicalPlan
    step: LogicalPlan
    distinct: bool


@dataclass
class RecursiveName:
    """What a recursive CTE's name means while its statement is bound: ``definition`` its WITH item;
    ``bound`` once bound; ``working``: the step is being bound (the name reads the working table)."""

    definition: exp.CTE
    bound: Optional[RecursiveCte] = None
    working: bool = False
    # while the step is bound: the working table's columns, its CteScan number and the anchor's plan
    working_fields: tuple = ()
    work_index: int = -1
    anchor: Optional[LogicalPlan] = None


class RecursiveCteBinding:
    # shared by the binders of one statement (set by plan_query; sub-binders copy it)
    recursive_ctes: Optional[list] = None

    def recursive_name(self, cte: exp.CTE) -> Optional[RecursiveName]:
        """A WITH RECURSIVE item that reads itself, as the name its references resolve through; None for
        one that does not (an ordinary CTE)."""
        name = cte.alias_or_name.lower()
        if not any(not t.db and t.name.lower() == name for t in cte.this.find_all(exp.Table)):
            return None
        if self.recursive_ctes is None:
            raise UnsupportedError("WITH RECURSIVE in this statement (only in a query, INSERT ... SELECT or "
                                   "CREATE TABLE ... AS)")
        return RecursiveName(cte)

    def bind_recursive_reference(self, meaning: RecursiveName, alias: str, scope: Scope, ctes: dict) -> LogicalPlan:
        """A reference to a recursive CTE: the working table inside its step, all its rows elsewhere."""
        if meaning.bound is None and not meaning.working:
            meaning.bound = self._bind_recursive(meaning, ctes)
        if meaning.working:
            fields, index, definition = meaning.working_fields, meaning.work_index, meaning.anchor
        else:
            cte = meaning.bound
            fields, index, definition = cte.fields, cte.result_index, cte.anchor
        scan = CteScan(tuple(Field(self.ids.new(f.name), f.name, f.type, True) for f in fields),
                       meaning.definition.alias_or_name, index, definition)
        return self._derived(scan, [f.name for f in fields], alias, scope)

    def _bind_recursive(self, meaning: RecursiveName, ctes: dict) -> RecursiveCte:
        cte = meaning.definition
        name = cte.alias_or_name
        branches, distinct = _union_branches(cte.this, name)
        reads_itself = [any(not t.db and t.name.lower() == name.lower() for t in b.find_all(exp.Table))
                        for b in branches]
        if not any(reads_itself) or reads_itself[0] or reads_itself != sorted(reads_itself):
            raise BindError(f"Recursive Common Table Expression '{name}' should have one or more non-recursive "
                            f"query blocks followed by one or more recursive ones")
        for branch in (b for b, reads in zip(branches, reads_itself) if reads):
            _check_step(branch, name)
        subqueries = len(self.subqueries)
        others = {k: v for k, v in ctes.items() if k != name.lower()}
        anchors = [self.bind_query(b, None, others) for b, reads in zip(branches, reads_itself) if not reads]
        names = [c.name for c in cte.args["alias"].columns] if cte.args.get("alias") and \
            cte.args["alias"].columns else anchors[0][1]
        width = len(anchors[0][0].fields)
        if len(names) != width or any(len(plan.fields) != width for plan, _ in anchors):
            raise BindError(f"the WITH query {name} has {len(names)} column names for {width} columns")
        types = [f.type if f.type.kind != "null" else T.TEXT for f in anchors[0][0].fields]
        for plan, _ in anchors[1:]:
            types = [T.result_type(t, f.type, "WITH RECURSIVE") for t, f in zip(types, plan.fields)]
        fields = tuple(Field(self.ids.new(n), n, t, True) for n, t in zip(names, types))
        anchor = self._conformed([plan for plan, _ in anchors], fields)

        index = len(self.recursive_ctes) * 2
        meaning.working, meaning.working_fields, meaning.work_index, meaning.anchor = True, fields, index + 1, anchor
        try:
            steps = [self.bind_query(b, None, ctes) for b, reads in zip(branches, reads_itself) if reads]
        finally:
            meaning.working = False
        if any(len(plan.fields) != width for plan, _ in steps):
            raise BindError(f"the SELECTs of the WITH query {name} have different numbers of columns")
        if len(self.subqueries) != subqueries:
            raise UnsupportedError(f"a scalar subquery inside the recursive WITH query {name}")
        step = self._conformed([plan for plan, _ in steps], fields)
        bound = RecursiveCte(name, index, index + 1, fields, anchor, step, distinct)
        self.recursive_ctes.append(bound)
        return bound

    def _conformed(self, plans: list[LogicalPlan], fields: tuple[Field, ...]) -> LogicalPlan:
        """``plans`` (UNION ALL-ed when several) with their columns cast to ``fields``' types."""
        projected = []
        for plan in plans:
            exprs = tuple((Field(self.ids.new(o.name), o.name, o.type, True), self.coerce(f.ref(), o.type))
                          for o, f in zip(fields, plan.fields))
            projected.append(Project(plan, exprs))
        if len(projected) == 1:
            return projected[0]
        out = tuple(Field(self.ids.new(f.name), f.name, f.type, True) for f in fields)
        return Union(tuple(projected), out)


def _union_branches(node: exp.Expression, name: str) -> tuple[list[exp.Expression], bool]:
    """The SELECTs of a UNION chain in order, and whether it is UNION DISTINCT."""
    while isinstance(node, exp.Subquery) and not node.alias:
        node = node.this
    if not isinstance(node, exp.Union):
        raise BindError(f"Recursive Common Table Expression '{name}' should contain a UNION")
    kinds = set()
    branches: list[exp.Expression] = []

    def walk(n):
        if isinstance(n, exp.Union) and not n.args.get("order") and not n.args.get("limit"):
            kinds.add(bool(n.args.get("distinct")))
            walk(n.this)
            walk(n.expression)
        else:
            branches.append(n)
    walk(node)
    if len(kinds) > 1:
        raise UnsupportedError(f"WITH RECURSIVE {name} mixing UNION ALL and UNION DISTINCT")
    return branches, kinds.pop()


def _check_step(branch: exp.Expression, name: str) -> None:
    """MySQL's rules for a recursive SELECT (error 3575 and its kin): no aggregate, window function,
    GROUP BY, ORDER BY, LIMIT or DISTINCT, and the CTE read once, in its FROM, not in a subquery."""
    select = branch
    while isinstance(select, exp.Subquery):
        select = select.this
    if not isinstance(select, exp.Select):
        raise BindError(f"Recursive Common Table Expression '{name}': a recursive part must be a SELECT")
    for what, present in (("an aggregate function", any(True for _ in select.find_all(exp.AggFunc))),
                          ("a window function", any(True for _ in select.find_all(exp.Window))),
                          ("GROUP BY", select.args.get("group") is not None),
                          ("ORDER BY", select.args.get("order") is not None),
                          ("LIMIT", select.args.get("limit") is not None),
                          ("DISTINCT", select.args.get("distinct") is not None)):
        if present:
            raise BindError(f"Recursive Common Table Expression '{name}' can contain neither aggregation nor "
                            f"window functions, GROUP BY, ORDER BY, LIMIT or DISTINCT in its recursive part "
                            f"(it has {what})")
    references = [t for t in select.find_all(exp.Table) if not t.db and t.name.lower() == name.lower()]
    nested = [t for t in references if t.find_ancestor(exp.Select) is not select]
    if len(references) > 1 or nested:
        raise BindError(f"In recursive query block of Recursive Common Table Expression '{name}', the recursive "
                        f"table must be referenced only once, and not in any subquery")
