"""Binding window functions (``f(...) OVER (PARTITION BY ... ORDER BY ... ROWS|RANGE ...)``).

The binder's SELECT handling calls in here at two points:

* while the select list and ORDER BY are bound, :func:`bind_window_call` turns each ``OVER`` into a
  reference to a new column and records the call (its arguments, PARTITION BY and ORDER BY bound in
  the SELECT's scope, aggregates allowed: ``SUM(SUM(x)) OVER (...)``) in the SELECT's
  :class:`WindowContext`;
* after GROUP BY / HAVING, :meth:`WindowContext.plan` lifts those expressions over the aggregate's
  output and stacks one :class:`~engine.plan.logical.Window` node per distinct (PARTITION BY,
  ORDER BY): windows are computed after grouping and before the projection, DISTINCT, ORDER BY and
  LIMIT, as the standard orders the clauses.

Named windows (``WINDOW w AS (...)``, ``OVER w``, ``OVER (w ORDER BY ...)``) are resolved here, and
the standard's default frames are filled in: with ORDER BY, ``RANGE BETWEEN UNBOUNDED PRECEDING AND
CURRENT ROW`` (the row's peers included); without, the whole partition.
"""
from __future__ import annotations

import dataclasses
import decimal
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Optional

from sqlglot import exp

from engine import types as T
from engine.errors import BindError, UnsupportedError
from engine.plan.bind_collation import is_string, keyed
from engine.core.expressions import ColumnRef, Expr, Literal, replace_columns
from engine.core.fields import WINDOW_AGGREGATES, Field, FrameBound, SortKey, WindowCall, WindowFrame
from engine.plan.logical import LogicalPlan, Project, Window

if TYPE_CHECKING:
    from engine.plan.binder import Binder, ExprContext

_RANKING = {exp.RowNumber: "row_number", exp.Rank: "rank", exp.DenseRank: "dense_rank",
            exp.PercentRank: "percent_rank", exp.CumeDist: "cume_dist", exp.Ntile: "ntile"}
_OFFSET = {exp.Lag: "lag", exp.Lead: "lead"}
_VALUE = {exp.FirstValue: "first_value", exp.LastValue: "last_value", exp.NthValue: "nth_value"}
_AGGREGATE_NODES = (exp.Count, exp.Sum, exp.Avg, exp.Min, exp.Max, exp.StddevSamp, exp.StddevPop, exp.Stddev,
                    exp.Variance, exp.VariancePop)

WHOLE_PARTITION = WindowFrame("rows", FrameBound("unbounded_preceding"), FrameBound("unbounded_following"))
RUNNING = WindowFrame("range", FrameBound("unbounded_preceding"), FrameBound("current_row"))


@dataclass
class _Pending:
    field: Field
    partition_by: tuple[Expr, ...]
    order_by: tuple[SortKey, ...]
    call: WindowCall


@dataclass
class WindowContext:
    """The window calls of one SELECT, collected while its select list and ORDER BY are bound."""

    named: dict[str, exp.Window]
    calls: list[_Pending] = field(default_factory=list)

    @classmethod
    def for_select(cls, sel: exp.Select) -> "WindowContext":
        named: dict[str, exp.Window] = {}
        for definition in sel.args.get("windows") or []:
            name = definition.this.name.lower()
            if name in named:
                raise BindError(f"window {definition.this.name!r} is defined twice")
            named[name] = definition
        return cls(named)

    def add(self, partition_by, order_by, call: WindowCall, name: str, ids) -> ColumnRef:
        for pending in self.calls:
            if (pending.partition_by, pending.order_by, pending.call) == (partition_by, order_by, call):
                return pending.field.ref()
        f = Field(ids.new(name), name, call.type, True)
        self.calls.append(_Pending(f, partition_by, order_by, call))
        return f.ref()

    def plan(self, plan: LogicalPlan, lift: Callable[[Expr], Expr], ids) -> LogicalPlan:
        """Stack the Window nodes over ``plan`` (the FROM/WHERE/GROUP BY/HAVING result); ``lift``
        rewrites an expression bound in the SELECT's scope over ``plan``'s columns."""
        groups: dict[tuple, list[tuple[Field, WindowCall]]] = {}
        for pending in self.calls:
            partition = tuple(lift(e) for e in pending.partition_by)
            order = tuple(SortKey(lift(k.expr), k.ascending, k.nulls_first) for k in pending.order_by)
            call = pending.call
            lifted = WindowCall(call.func, tuple(lift(a) for a in call.args), call.type, call.frame, call.options)
            groups.setdefault((partition, order), []).append((pending.field, lifted))
        for (partition, order), calls in groups.items():
            # PARTITION BY expressions become columns: the planner repartitions by column ids
            computed = [(Field(ids.new("partition"), "partition", e.type), e) for e in partition
                        if not isinstance(e, ColumnRef)]
            if computed:
                plan = Project(plan, tuple((f, f.ref()) for f in plan.fields) + tuple(computed))
                by_expr = dict((e, f.ref()) for f, e in computed)
                partition = tuple(by_expr.get(e, e) for e in partition)
            # a partition key repeated, or one the ORDER BY repeats, changes nothing
            partition = tuple(dict.fromkeys(partition))
            order = tuple(k for k in order if k.expr not in partition)
            plan = Window(plan, partition, order, tuple(calls))
        return plan


def bind_window_call(binder: "Binder", node: exp.Window, ctx: "ExprContext") -> Expr:
    """``f(...) OVER ...`` -> a reference to the column the Window node will compute."""
    windows: Optional[WindowContext] = ctx.windows
    if windows is None:
        raise BindError(f"window function {node.sql(dialect='mysql')[:60]} is not allowed in {ctx.clause}")
    partition_nodes, order_node, spec = _resolve(node, windows.named)
    if spec is not None and spec.args.get("exclude"):
        raise UnsupportedError("EXCLUDE in a window frame")
    # nested window functions are not allowed; select aliases are not visible (as in MySQL)
    inner = dataclasses.replace(ctx, aliases=None, windows=None, clause="a window specification")
    # strings partition by their collation keys ('a' and 'A' in one partition under a _ci collation)
    partition_by = tuple(keyed(e, e.type.collation) if is_string(e) else e
                         for e in (binder.bind_expr(p, inner) for p in partition_nodes))
    order_by = tuple(binder._sort_key(o, binder.bind_expr(o.this, inner))
                     for o in (order_node.expressions if order_node is not None else []))
    function = node.this
    if isinstance(function, (exp.IgnoreNulls, exp.RespectNulls)):
        raise UnsupportedError(f"{'IGNORE' if isinstance(function, exp.IgnoreNulls) else 'RESPECT'} NULLS "
                               "in a window function")
    args_ctx = dataclasses.replace(inner, clause="the argument of a window function")
    name = _function_name(function)
    if type(function) in _RANKING:
        func = _RANKING[type(function)]
        if spec is not None and func in ("row_number", "rank", "dense_rank", "percent_rank", "cume_dist"):
            pass          # the standard ignores a frame given to a ranking function; so does MySQL
        call = _ranking_call(binder, func, function, args_ctx)
    elif type(function) in _OFFSET:
        call = _offset_call(binder, _OFFSET[type(function)], function, args_ctx)
    elif type(function) in _VALUE:
        call = _value_call(binder, _VALUE[type(function)], function, args_ctx,
                           _frame(binder, spec, order_by))
    elif isinstance(function, _AGGREGATE_NODES):
        call = _aggregate_call(binder, function, args_ctx, _frame(binder, spec, order_by))
    else:
        raise UnsupportedError(f"{name} as a window function")
    return windows.add(partition_by, order_by, call, name.lower(), binder.ids)


# sqlglot's names of these are not the user's (BITWISE_AND_AGG)
_SQL_NAMES = {exp.BitwiseAndAgg: "BIT_AND", exp.BitwiseOrAgg: "BIT_OR", exp.BitwiseXorAgg: "BIT_XOR"}


def _function_name(function: exp.Expression) -> str:
    if isinstance(function, exp.Anonymous):
        return function.name.upper()
    if type(function) in _SQL_NAMES:
        return _SQL_NAMES[type(function)]
    return function.sql_name() if hasattr(function, "sql_name") else type(function).__name__.upper()


def _resolve(node: exp.Window, named: dict[str, exp.Window], seen: tuple = ()):
    """(PARTITION BY nodes, ORDER BY node, frame spec) of ``node``, merged with the named window
    it refers to (``OVER w``, ``OVER (w ORDER BY ...)``, ``WINDOW w2 AS (w1 ...)``)."""
    partition = list(node.args.get("partition_by") or [])
    order = node.args.get("order")
    spec = node.args.get("spec")
    base_name = node.args.get("alias")
    if base_name is not None:
        key = base_name.name.lower()
        if key not in named:
            raise BindError(f"window {base_name.name!r} is not defined")
        if key in seen:
            raise BindError(f"window {base_name.name!r} refers to itself")
        base_partition, base_order, base_spec = _resolve_definition(named[key], named, seen + (key,))
        if partition:
            raise BindError(f"a window that refers to window {base_name.name!r} cannot have its own PARTITION BY")
        if order is not None and base_order is not None:
            raise BindError(f"window {base_name.name!r} has an ORDER BY already")
        if base_spec is not None:
            raise BindError(f"window {base_name.name!r} has a frame: it cannot be referred to by another window")
        partition, order = base_partition, order if order is not None else base_order
        spec = spec if spec is not None else base_spec
    return partition, order, spec


def _resolve_definition(definition: exp.Window, named, seen):
    """A ``WINDOW name AS (...)`` definition; its own reference to another window, if any, is its
    ``alias`` in sqlglot's tree for ``(w1 ORDER BY ...)``."""
    return _resolve(definition, named, seen)


def _constant_int(binder: "Binder", node, ctx, what: str, minimum: int) -> int:
    value = binder.bind_expr(node, ctx)
    if not isinstance(value, Literal) or value.type.kind != "int" or value.value is None or value.value < minimum:
        raise BindError(f"{what} must be an integer constant of at least {minimum}, got {node.sql(dialect='mysql')}")
    return int(value.value)


def _ranking_call(binder, func: str, function, ctx) -> WindowCall:
    if func == "ntile":
        buckets = _constant_int(binder, function.this, ctx, "the argument of NTILE", 1)
        return WindowCall("ntile", (), T.BIGINT, None, (buckets,))
    kind = T.DOUBLE if func in ("percent_rank", "cume_dist") else T.BIGINT
    return WindowCall(func, (), kind)


def _offset_call(binder, func: str, function, ctx) -> WindowCall:
    value = binder.bind_expr(function.this, ctx)
    offset = 1
    if function.args.get("offset") is not None:
        offset = _constant_int(binder, function.args["offset"], ctx, f"the offset of {func.upper()}", 0)
    default = function.args.get("default")
    result = value.type if value.type.kind != "null" else T.BIGINT
    default_expr: Expr = Literal(None, T.NULL)
    if default is not None:
        default_expr = binder.bind_expr(default, ctx)
        result = T.result_type(value.type, default_expr.type, func.upper()) if value.type.kind != "null" \
            else default_expr.type
    if result.kind == "null":
        result = T.BIGINT
    return WindowCall(func, (binder.coerce(value, result), binder.coerce(default_expr, result)), result,
                      None, (offset,))


def _value_call(binder, func: str, function, ctx, frame: WindowFrame) -> WindowCall:
    value = binder.bind_expr(function.this, ctx)
    result = value.type if value.type.kind != "null" else T.BIGINT
    options: tuple = ()
    if func == "nth_value":
        options = (_constant_int(binder, function.args.get("offset"), ctx, "the n of NTH_VALUE", 1),)
    if function.args.get("from_first") is False:
        raise UnsupportedError("NTH_VALUE ... FROM LAST")
    return WindowCall(func, (binder.coerce(value, result),), result, frame, options)


def _aggregate_call(binder, function, ctx, frame: WindowFrame) -> WindowCall:
    """The aggregate's argument coercions and result type are the GROUP BY aggregate's: it is bound
    by the binder's aggregate code over a placeholder column, which is then replaced by the argument."""
    target = function.this
    if isinstance(target, exp.Distinct):
        raise UnsupportedError(f"{function.sql_name()}(DISTINCT ...) as a window function")
    if isinstance(function, exp.Count) and (target is None or isinstance(target, exp.Star)):
        return WindowCall("count_star", (), T.BIGINT, frame)
    argument = binder.bind_expr(target, ctx)
    placeholder = Field(binder.ids.new("window_arg"), "window_arg", argument.type)
    probe = function.copy()
    column = exp.Column(this=exp.to_identifier(placeholder.name))
    column.meta["canopy_field"] = placeholder          # binds straight back to the placeholder
    probe.set("this", column)
    agg = binder.aggregate_call(probe, dataclasses.replace(ctx, clause="a window function"))
    options = ()
    if agg.func in ("collated_min", "collated_max"):
        # MIN / MAX of strings under a _ci collation: the value whose collation key is smallest /
        # largest in the frame (the window operator ranks the keys; options name the collation)
        agg, options = dataclasses.replace(agg, func=agg.func[len("collated_"):], options=()), agg.options
    if agg.func not in WINDOW_AGGREGATES:
        raise UnsupportedError(f"{agg.func.upper()}() as a window function")
    arg = replace_columns(agg.arg, {placeholder.id: argument})
    return WindowCall(agg.func, (arg,), agg.type, frame, options)


def _frame(binder, spec: Optional[exp.WindowSpec], order_by: tuple[SortKey, ...]) -> WindowFrame:
    if spec is None:
        return RUNNING if order_by else WHOLE_PARTITION
    units = (spec.args.get("kind") or "").lower()
    if units not in ("rows", "range"):
        raise UnsupportedError(f"{units.upper() or 'this'} window frame (only ROWS and RANGE)")
    start = _bound(spec.args.get("start"), spec.args.get("start_side"), units, order_by)
    end_node = spec.args.get("end")
    end = _bound(end_node, spec.args.get("end_side"), units, order_by) if end_node is not None \
        else FrameBound("current_row")
    order = {k: i for i, k in enumerate(("unbounded_preceding", "preceding", "current_row", "following",
                                          "unbounded_following"))}
    if start.kind == "unbounded_following":
        raise BindError("a window frame cannot start at UNBOUNDED FOLLOWING")
    if end.kind == "unbounded_preceding":
        raise BindError("a window frame cannot end at UNBOUNDED PRECEDING")
    if order[start.kind] > order[end.kind]:
        raise BindError(f"window frame {start} to {end} is empty for every row")
    if units == "range" and "preceding" in (start.kind, end.kind) or \
            units == "range" and "following" in (start.kind, end.kind):
        if len(order_by) != 1:
            raise BindError("a RANGE frame with an offset needs exactly one ORDER BY expression")
        key_type = order_by[0].expr.type
        start, end = _interval_offset(start, key_type), _interval_offset(end, key_type)
        if key_type.kind not in ("int", "decimal", "float", "date", "datetime"):
            raise UnsupportedError(f"a RANGE frame with an offset over a {key_type} ORDER BY key "
                                   "(numbers, dates and datetimes only)")
    if units == "range" and not order_by:
        return WHOLE_PARTITION       # every row is a peer of every other
    return WindowFrame(units, start, end)


def _bound(node, side, units: str, order_by) -> FrameBound:
    side = (side or "").lower()
    if isinstance(node, str):
        text = node.upper()
        if text == "UNBOUNDED":
            return FrameBound("unbounded_" + (side or "preceding"))
        if text == "CURRENT ROW":
            return FrameBound("current_row")
        raise UnsupportedError(f"window frame bound {node}")
    if isinstance(node, exp.Interval):
        if units != "range":
            raise BindError("an INTERVAL offset is for RANGE frames (a ROWS offset counts rows)")
        amount, unit = node.this, (node.unit.name if node.unit is not None else "").upper()
        if not (isinstance(amount, exp.Literal) and (amount.is_int or (amount.is_string and amount.this.isdigit()))):
            raise UnsupportedError(f"window frame offset {node.sql(dialect='mysql')} (a whole number of units)")
        if side not in ("preceding", "following"):
            raise BindError(f"window frame offset {node.sql(dialect='mysql')} needs PRECEDING or FOLLOWING")
        return FrameBound(side, _Interval(int(amount.this), unit))
    if isinstance(node, exp.Literal) and not node.is_string:
        text = node.this
        value = decimal.Decimal(text) if any(c in text for c in ".eE") else int(text)
        if value < 0:
            raise BindError(f"window frame offset {text} is negative")
        if units == "rows" and not isinstance(value, int):
            raise BindError(f"a ROWS frame offset must be an integer, got {text}")
        if side not in ("preceding", "following"):
            raise BindError(f"window frame offset {text} needs PRECEDING or FOLLOWING")
        return FrameBound(side, value)
    raise UnsupportedError(f"window frame offset {node.sql(dialect='mysql') if hasattr(node, 'sql') else node} "
                           "(a non-negative number constant is supported)")


@dataclasses.dataclass(frozen=True)
class _Interval:
    """An INTERVAL frame offset until the ORDER BY key's type turns it into a number of the key's units."""
    amount: int
    unit: str


# a frame over a DATE key counts days, over a DATETIME key microseconds (engine.exec.operators.window's
# _range_key reads the key so); months and years have no fixed length in either
_DAYS_PER = {"DAY": 1, "WEEK": 7}
_MICROSECONDS_PER = {"MICROSECOND": 1, "SECOND": 10**6, "MINUTE": 60 * 10**6, "HOUR": 3600 * 10**6,
                     "DAY": 86400 * 10**6, "WEEK": 7 * 86400 * 10**6}


def _interval_offset(bound: FrameBound, key_type) -> FrameBound:
    """A bound's offset in the ORDER BY key's units: an INTERVAL for a DATE / DATETIME key (MySQL allows
    nothing else there), a number for a numeric key."""
    temporal = key_type.kind in ("date", "datetime")
    if not isinstance(bound.offset, _Interval):
        if temporal and bound.offset is not None:
            raise BindError(f"a RANGE frame over a {key_type} ORDER BY key takes INTERVAL offsets "
                            f"(not {bound.offset})")
        return bound
    if not temporal:
        raise BindError(f"an INTERVAL offset needs a DATE or DATETIME ORDER BY key, not {key_type}")
    per = (_DAYS_PER if key_type.kind == "date" else _MICROSECONDS_PER).get(bound.offset.unit)
    if per is None:
        raise UnsupportedError(f"a RANGE frame offset INTERVAL {bound.offset.amount} {bound.offset.unit} over a "
                               f"{key_type} key (months, quarters and years have no fixed length"
                               + ("; a DATE key takes DAY and WEEK" if key_type.kind == "date" else "") + ")")
    return FrameBound(bound.kind, bound.offset.amount * per)
