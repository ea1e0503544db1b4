"""INTERSECT and EXCEPT, DISTINCT and ALL, lowered to a grouped count over a UNION ALL.

Both inputs are unioned with a marker column per side (1 on that side's rows, NULL on the other's) and
grouped by every column, counting the markers: each group is one distinct row with its multiplicity on
the left (``l``) and on the right (``r``). Grouping puts NULLs in one group, which is exactly the set
operations' "NULLs compare equal". Then

* ``INTERSECT`` keeps the groups with ``l > 0 AND r > 0``; ``INTERSECT ALL`` repeats them ``LEAST(l, r)``
  times;
* ``EXCEPT`` keeps ``l > 0 AND NOT r > 0``; ``EXCEPT ALL`` repeats each ``l - r`` times (none when ``<= 0``).

Reusing the aggregate means the distributed plan is the aggregate's: partial counts on every partition,
repartitioned by all the columns, final counts; no new exchange logic.

>>> from engine import types as T
>>> from engine.plan.logical import Field, Values
>>> from engine.plan.scope import IdGenerator
>>> ids = IdGenerator()
>>> a, b = Field("a#1", "a", T.BIGINT), Field("b#2", "b", T.BIGINT)
>>> left, right = Values((a,), ((1,), (1,), (2,))), Values((b,), ((1,),))
>>> print(lower_set_operation("intersect", True, left, right, (a,), ids).pretty())
Project a AS a
  Repeat least(l, r) times
    Filter ((l > 0) AND (r > 0))
      Aggregate keys=[a] aggs=[count(l), count(r)]
        UnionAll
          Project a AS a, 1 AS l, NULL AS r
            Values (3 rows)
          Project b AS a, NULL AS l, 1 AS r
            Values (1 rows)
"""
from __future__ import annotations

from engine import types as T
from engine.plan.bind_collation import is_string, keyed
from engine.core.expressions import AggCall, Call, Expr, Literal
from engine.plan.logical import Aggregate, Field, Filter, LogicalPlan, Project, Repeat, Union
from engine.plan.scope import IdGenerator

_ONE, _NONE = Literal(1, T.BIGINT), Literal(None, T.BIGINT)
_ZERO = Literal(0, T.BIGINT)


def lower_set_operation(kind: str, keep_all: bool, left: LogicalPlan, right: LogicalPlan,
                        out_fields: tuple[Field, ...], ids: IdGenerator,
                        left_exprs: tuple[Expr, ...] = (), right_exprs: tuple[Expr, ...] = ()) -> LogicalPlan:
    """``left kind right`` (kind: intersect | except) with output columns ``out_fields``. ``left_exprs``
    / ``right_exprs`` are each side's values for those columns, already cast to their types (default:
    the sides' own columns)."""
    left_exprs = left_exprs or tuple(f.ref() for f in left.fields)
    right_exprs = right_exprs or tuple(f.ref() for f in right.fields)
    marks = (Field(ids.new("l"), "l", T.BIGINT), Field(ids.new("r"), "r", T.BIGINT))
    union_fields = tuple(Field(ids.new(f.name), f.name, f.type) for f in out_fields) + marks
    sides = []
    for plan, exprs, values in ((left, left_exprs, (_ONE, _NONE)), (right, right_exprs, (_NONE, _ONE))):
        projected = tuple(zip((Field(ids.new(f.name), f.name, f.type) for f in union_fields),
                              exprs + values))
        sides.append(Project(plan, projected))
    union = Union(tuple(sides), union_fields)
    # strings group by their collation keys; the row kept holds one of the group's values (ANY_VALUE)
    keys = tuple((Field(ids.new(o.name), o.name, o.type), keyed(u.ref(), u.type.collation) if is_string(u) else u.ref())
                 for o, u in zip(out_fields, union_fields[:len(out_fields)]))
    counts = tuple((Field(ids.new(m.name), m.name, T.BIGINT), AggCall("count", m.ref(), T.BIGINT)) for m in marks)
    values = {o.id: (Field(ids.new(o.name), o.name, o.type), AggCall("any_value", u.ref(), u.type))
              for o, u in zip(out_fields, union_fields) if is_string(u)}
    plan: LogicalPlan = Aggregate(union, keys, counts + tuple(values.values()))
    l, r = (f.ref() for f, _ in counts)
    if kind == "intersect":
        plan = Filter(plan, Call("and", (_gt_zero(l), _gt_zero(r)), T.BOOLEAN))
        if keep_all:
            plan = Repeat(plan, Call("least", (l, r), T.BIGINT))
    elif keep_all:
        plan = Repeat(Filter(plan, Call("gt", (l, r), T.BOOLEAN)), Call("subtract", (l, r), T.BIGINT))
    else:
        # NOT (r > 0) rather than r = 0: the same for a count, and estimated as a range (an equality
        # with a column of unknown distinct values was estimated at one row)
        plan = Filter(plan, Call("and", (_gt_zero(l), Call("not", (_gt_zero(r),), T.BOOLEAN)), T.BOOLEAN))
    return Project(plan, tuple((o, values[o.id][0].ref() if o.id in values else k.ref())
                               for o, (k, _) in zip(out_fields, keys)))


def _gt_zero(e: Expr) -> Expr:
    return Call("gt", (e, _ZERO), T.BOOLEAN)
