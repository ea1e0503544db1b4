"""Vectorized evaluation of typed expressions over Arrow record batches.

``evaluate(expr, batch, params)`` returns a ``pa.Array`` of ``len(batch)`` (or a ``pa.Scalar`` for a
constant). The binder has already inserted the casts that make operand types agree, so each function
here only maps one SQL operation onto pyarrow.compute (or NumPy) with MySQL semantics: three-valued
logic, NULL on division by zero, exact DECIMAL arithmetic with MySQL's result scales.

This file is the evaluator's core (dispatch, arithmetic, comparison and logic, conditionals, casts,
collations); the function library registers itself from ``string_functions``, ``math_functions`` and
``date_functions``, ``text_functions`` and ``json_functions`` beside it, imported at the end. Why over 600 lines: the core's parts are MySQL's
typing rules for one expression tree (an arithmetic result's type decides its casts, a comparison's
collation its kernel), each calling the others; the named functions, which stand alone, are the
library files.
"""
from __future__ import annotations

import decimal
import threading
from typing import Callable, Optional, Sequence, Union

import pyarrow as pa
import pyarrow.compute as pc

from engine.exec import arrow_errors, cast_range, decimal128, decimal_scaled, statement_warnings, unsigned
from engine.core.collation_keys import collation_keys, list_keys
from engine.errors import BadDataError, CanopyInternalError, UnsupportedError
from engine.core.expressions import Call, ColumnRef, Expr, Literal, ScalarParam
from engine import types as T
from engine.types import MAX_DECIMAL_PRECISION, SqlType

Datum = Union[pa.Array, pa.ChunkedArray, pa.Scalar]

# MySQL rounds exact values half away from zero (ROUND(-2.5) = -3, CAST(2.5 AS SIGNED) = 3, 1/32 = 0.0313);
# pyarrow's default is half to even.
HALF_AWAY = "half_towards_infinity"

_FUNCTIONS: dict[str, Callable[..., Datum]] = {}


def function(*names: str):
    def register(fn):
        for name in names:
            _FUNCTIONS[name] = fn
        return fn
    return register


def literal_scalar(value, sql_type: SqlType) -> pa.Scalar:
    return pa.scalar(value, type=sql_type.to_arrow())


class _BatchKeys(threading.local):
    """The collation keys of columns computed during this thread's outermost ``evaluate`` call, for
    its batch: a predicate such as TPC-H Q19's ``(brand = .. AND container IN ..) OR (brand = .. AND
    ...) OR ...`` keys each column once per batch, not once per mention. Dropped when that call
    returns, so nothing outlives it. Under :func:`evaluate_arrays` the scope is its list of
    expressions, and ``slots`` / ``values`` hold their repeated subexpressions' values too."""
    batch = None
    keys: Optional[dict] = None
    slots: Optional[dict] = None         # id(subexpression) -> slot (shared_subexpressions)
    values: Optional[dict] = None        # slot -> its value over ``batch``


_BATCH_KEYS = _BatchKeys()


def _column_key(expr: Call, batch: pa.RecordBatch) -> Datum:
    memo = _BATCH_KEYS
    if memo.batch is not batch:         # a nested evaluation over other rows (CASE's branches)
        return _collation_key(expr, evaluate(expr.args[0], batch))
    key = memo.keys.get((expr.args[0].id, expr.options))
    if key is None:
        key = memo.keys[(expr.args[0].id, expr.options)] = _collation_key(expr, evaluate(expr.args[0], batch))
    return key


def evaluate(expr: Expr, batch: pa.RecordBatch, params: Sequence = ()) -> Datum:
    memo = _BATCH_KEYS
    if memo.batch is not None or not isinstance(expr, Call):
        return _evaluate(expr, batch, params)
    memo.batch, memo.keys = batch, {}          # the outermost call: its batch's keys are shared below
    try:
        return _evaluate(expr, batch, params)
    finally:
        memo.batch = memo.keys = None


def _evaluate(expr: Expr, batch: pa.RecordBatch, params: Sequence = ()) -> Datum:
    if isinstance(expr, ColumnRef):
        try:
            return batch.column(expr.id)
        except KeyError:
            raise CanopyInternalError(f"column {expr} ({expr.id}) missing from batch {batch.schema.names}") from None
    if isinstance(expr, Literal):
        return literal_scalar(expr.value, expr.type)
    if isinstance(expr, ScalarParam):
        return literal_scalar(params[expr.index], expr.type)
    if isinstance(expr, Call):
        fn = _FUNCTIONS.get(expr.op)
        if fn is None:
            raise UnsupportedError(f"function {expr.op} is not supported")
        if expr.op in _LAZY:
            return fn(expr, batch, params)
        if expr.op == "collation_key" and isinstance(expr.args[0], ColumnRef):
            return _column_key(expr, batch)
        memo = _BATCH_KEYS
        slot = memo.slots.get(id(expr)) if memo.slots is not None and memo.batch is batch else None
        if slot is not None and slot in memo.values:
            return memo.values[slot]
        if expr.op in _SCALED_OPS and expr.type.kind == "decimal" and decimal_scaled.is_tree(expr):
            # the whole + - * tree in int64 when its values fit (one decimal128 array built, at the root)
            if memo.batch is batch and memo.slots is not None:
                value = decimal_scaled.evaluate(expr, batch, memo.values.setdefault("scaled", {}), memo.slots)
            else:
                value = decimal_scaled.evaluate(expr, batch)
            if value is not None:
                if slot is not None:
                    memo.values[slot] = value
                return value
        args = [evaluate(a, batch, params) for a in expr.args]
        try:
            value = fn(expr, *args)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError,
                decimal128.DecimalOverflow) as error:
            raise _data_error(expr, error) from None
        if slot is not None:
            memo.values[slot] = value
        return value
    raise CanopyInternalError(f"cannot evaluate {type(expr).__name__}")


def shared_subexpressions(exprs: Sequence[Expr]) -> dict[int, int]:
    """For :func:`evaluate_arrays`: ``{id(call): slot}`` of the calls (function applications) that
    occur more than once among ``exprs`` (equal calls share a slot), e.g. TPC-H Q1's
    ``l_extendedprice * (1 - l_discount)`` inside two of its sums. Empty when none repeats. Keyed
    by identity so that evaluation looks a call up without hashing it; the caller keeps ``exprs``
    (and so the ids) alive while it uses the answer."""
    occurrences: dict[Expr, list] = {}
    for root in exprs:
        for e in root.walk():
            if isinstance(e, Call) and e.op not in _LAZY and not _may_warn(e):
                occurrences.setdefault(e, []).append(e)
    slots: dict[int, int] = {}
    for slot, same in enumerate(same for same in occurrences.values() if len(same) > 1):
        for e in same:
            slots[id(e)] = slot
    return slots


def _may_warn(e: Expr) -> bool:
    """Whether evaluating ``e`` may record a statement warning per row (a text read as a number, an
    unsigned cast that wraps or clips): MySQL counts one per mention, so such a call is not shared."""
    return any(isinstance(x, Call) and x.op == "cast" and x.args and (
        x.args[0].type.kind == "string" or (x.type.unsigned and not x.args[0].type.unsigned)) for x in e.walk())


def evaluate_arrays(exprs: Sequence[Expr], batch: pa.RecordBatch, params: Sequence = (),
                    slots: Optional[dict] = None) -> list:
    """``[evaluate_array(e, batch, params) for e in exprs]``, each repeated subexpression computed
    once over the batch (``slots``: ``shared_subexpressions(exprs)``, which a caller running the
    same expressions over many batches computes once)."""
    memo = _BATCH_KEYS
    if slots is None:
        slots = shared_subexpressions(exprs)
    if not slots or memo.batch is not None:      # nothing shared, or inside another evaluation
        return [evaluate_array(e, batch, params) for e in exprs]
    memo.batch, memo.keys, memo.slots, memo.values = batch, {}, slots, {}
    try:
        return [evaluate_array(e, batch, params) for e in exprs]
    finally:
        memo.batch = memo.keys = memo.slots = memo.values = None


def evaluate_array(expr: Expr, batch: pa.RecordBatch, params: Sequence = ()) -> pa.Array:
    """Like :func:`evaluate` but always an array of ``batch.num_rows`` values of ``expr.type``."""
    result = evaluate(expr, batch, params)
    if isinstance(result, pa.Scalar):
        result = pa.repeat(result, batch.num_rows) if result.is_valid else pa.nulls(batch.num_rows, result.type)
    elif isinstance(result, pa.ChunkedArray):
        result = result.combine_chunks()
    target = expr.type.to_arrow()
    if result.type != target and not pa.types.is_null(target):
        result = result.cast(target)
    return result


def evaluate_predicate(expr: Expr, batch: pa.RecordBatch, params: Sequence = ()) -> pa.Array:
    """A boolean mask where NULL counts as false (WHERE / HAVING / ON semantics)."""
    mask = evaluate(expr, batch, params)
    if isinstance(mask, pa.Scalar):
        value = mask.as_py() if mask.is_valid else False
        return pa.repeat(pa.scalar(bool(value)), batch.num_rows)
    if isinstance(mask, pa.ChunkedArray):
        mask = mask.combine_chunks()
    if mask.null_count:
        mask = pc.fill_null(mask, False)
    return mask


class ConstantWarns(BadDataError):
    """A constant whose evaluation warns ('abc' + 1): not folded at plan time, so the warning is the
    statement's each time it runs (SHOW WARNINGS), a cached plan's too."""


def fold_constant(expr: Expr, params: Sequence = (), keep_warnings: bool = True) -> Literal:
    """Evaluate an expression without column references to a Literal; raises ConstantWarns where that
    warns, unless ``keep_warnings`` is False (the warning is then lost)."""
    empty = pa.RecordBatch.from_pydict({"_": [0]})
    warned = statement_warnings.Warnings()
    with statement_warnings.collecting(warned):
        value = evaluate_array(expr, empty, params)[0].as_py()
    if keep_warnings and warned.result().total:
        raise ConstantWarns(f"{expr} warns")
    return Literal(value, expr.type)


def _data_error(expr: Call, error: Exception) -> BadDataError:
    """MySQL's words for a value an operation cannot produce: 'BIGINT value is out of range in
    '(a + 1)'', 'Incorrect DATE value: 'x' in CAST('x' AS DATE)' (no Arrow wording)."""
    message = arrow_errors.sql_message(str(error), str(expr.type) if expr.type.kind != "null" else None)
    return BadDataError(f"{message} in '{expr}'")


def _is_scalar(d: Datum) -> bool:
    return isinstance(d, pa.Scalar)


# --- arithmetic -----------------------------------------------------------------------------------
def _as_type(d: Datum, sql_type: SqlType) -> Datum:
    target = sql_type.to_arrow()
    if d.type == target:
        return d
    if pa.types.is_floating(target) and pa.types.is_integer(d.type):
        return pc.cast(d, target, safe=False)       # the nearest DOUBLE past 2**53 (Arrow's safe cast refuses)
    return d.cast(target)


def _decimal_shrink(d: Datum, precision: int) -> Datum:
    """Declare fewer digits for a decimal operand (checked: a value that does not fit raises)."""
    t = d.type
    if t.precision <= precision:
        return d
    return d.cast(pa.decimal128(max(precision, t.scale + 1), t.scale))


def _decimal_operand(d: Datum, scale_hint: int = 0) -> Datum:
    t = d.type
    if pa.types.is_dictionary(t):       # a scan's stored dictionary (decimal_scaled.scaled_columns)
        return _decimal_operand(d.cast(t.value_type), scale_hint)
    if pa.types.is_decimal(t):
        return d
    if pa.types.is_integer(t):
        digits = {8: 3, 16: 5, 32: 10, 64: 19}[t.bit_width]
        return d.cast(pa.decimal128(digits, 0))
    if pa.types.is_boolean(t):
        return d.cast(pa.int8()).cast(pa.decimal128(3, 0))
    if pa.types.is_null(t):
        return d.cast(pa.decimal128(1, 0))
    return d.cast(pa.decimal128(MAX_DECIMAL_PRECISION, scale_hint))


def _arith(expr: Call, a: Datum, b: Datum, name: str) -> Datum:
    rt = expr.type
    if rt.kind == "float":
        return getattr(pc, name)(_as_type(a, rt), _as_type(b, rt))
    if rt.kind == "int":
        return getattr(pc, name + "_checked")(_as_type(a, rt), _as_type(b, rt))
    # Exact, in one pass of the 128-bit kernels (64-bit products when the values fit int64), checked
    # against the result's precision: Arrow's checked decimal kernels rescale each operand through a
    # cast first, several times slower (TPC-H Q1's price * (1 - discount) * (1 + tax)).
    a, b = _whole(_decimal_operand(a)), _whole(_decimal_operand(b))
    if rt.unsigned:
        return _unsigned_arith(expr, a, b, name)
    if name in ("add", "subtract"):
        return decimal128.add(a, b, rt.to_arrow(), subtract=name == "subtract")
    # multiply: exact 128-bit products (256-bit in flight), rounded when MySQL caps the scale at 30
    return decimal128.multiply(a, b, rt.to_arrow())


def _unsigned_arith(expr: Call, a: Datum, b: Datum, name: str) -> Datum:
    """BIGINT UNSIGNED + - *: exact in a wider decimal, then MySQL's range check (error 1690)."""
    if name == "multiply":
        try:
            exact = decimal128.multiply(_whole(a), _whole(b), pa.decimal128(38, 0))
        except decimal128.DecimalOverflow:
            raise BadDataError(f"BIGINT UNSIGNED value is out of range in '{expr}'") from None
    else:
        wide = pa.decimal128(30, 0)
        exact = getattr(pc, name + "_checked")(a.cast(wide), b.cast(wide))
    return unsigned.checked(exact, expr)


def _whole(d: Datum) -> Union[pa.Array, pa.Scalar]:
    return d.combine_chunks() if isinstance(d, pa.ChunkedArray) else d


def _to_integer(whole: Datum, target: pa.DataType) -> Datum:
    """Whole decimals to an integer (or decimal) type; one out of its range is an error, as MySQL's 1690."""
    try:
        return whole.cast(target)
    except pa.ArrowInvalid:
        raise decimal128.DecimalOverflow(f"{T.from_arrow(target)} value is out of range") from None


def _round_to_decimal(values: Datum, rt: SqlType) -> Datum:
    return pc.round(values, ndigits=rt.scale, round_mode=HALF_AWAY).cast(rt.to_arrow())


@function("add")
def _add(expr, a, b):
    return _arith(expr, a, b, "add")


@function("subtract")
def _subtract(expr, a, b):
    return _arith(expr, a, b, "subtract")


@function("multiply")
def _multiply(expr, a, b):
    return _arith(expr, a, b, "multiply")


def _null_if_zero(b: Datum) -> Datum:
    if _is_scalar(b):
        if b.is_valid and b.as_py() == 0:
            return pa.scalar(None, b.type)
        return b
    zero = pc.equal(b, pa.scalar(0, b.type) if not pa.types.is_decimal(b.type) else
                    pa.scalar(decimal.Decimal(0), b.type))
    return pc.if_else(zero, pa.scalar(None, b.type), b)


def _refuse_zero_divisor(expr: Call, a: Datum, b: Datum) -> None:
    """MySQL's error 1365 where the binder marked a division of an INSERT / UPDATE (strict mode with
    ERROR_FOR_DIVISION_BY_ZERO): a non-NULL value divided by 0. Elsewhere x / 0 is NULL."""
    if not expr.options or expr.options[0] != "zero_divisor_is_error":
        return
    zero = pc.and_(pc.equal(b, pa.scalar(0).cast(b.type) if not pa.types.is_null(b.type) else b), pc.is_valid(a))
    found = zero.as_py() if isinstance(zero, pa.Scalar) else pc.any(zero).as_py()
    if found:
        raise BadDataError("Division by 0")


@function("divide")
def _divide(expr, a, b):
    _refuse_zero_divisor(expr, a, b)
    rt = expr.type
    if rt.kind == "float":
        return pc.divide(_as_type(a, rt), _as_type(_null_if_zero(b), rt))
    # exact quotient rounded half away to the result's scale (s1 + div_precision_increment); the
    # kernel makes x / 0 NULL
    return decimal128.divide(_whole(_decimal_operand(a)), _whole(_decimal_operand(b)), rt.to_arrow())


@function("int_divide")
def _int_divide(expr, a, b):
    _refuse_zero_divisor(expr, a, b)
    if _is_inexact(a) or _is_inexact(b):
        q = pc.divide(a.cast(pa.float64()), _null_if_zero(b).cast(pa.float64()))
        return pc.trunc(q).cast(pa.int64())
    return decimal128.int_divide(_whole(_decimal_operand(a)), _whole(_decimal_operand(b)))


@function("mod")
def _mod(expr, a, b):
    _refuse_zero_divisor(expr, a, b)
    rt = expr.type
    if rt.kind == "float":
        af, bf = a.cast(pa.float64()), _null_if_zero(b).cast(pa.float64())
        return pc.subtract(af, pc.multiply(pc.trunc(pc.divide(af, bf)), bf))
    # exact: integers as DECIMAL(19, 0), the remainder at the larger scale, the sign of a
    a, b = _whole(_decimal_operand(a)), _whole(_decimal_operand(b))
    exact = rt if rt.kind == "decimal" else T.as_decimal(rt)
    remainder = decimal128.mod(a, b, exact.to_arrow())
    return remainder if rt.kind == "decimal" else remainder.cast(rt.to_arrow())


def _is_inexact(d: Datum) -> bool:
    return pa.types.is_floating(d.type) or pa.types.is_string(d.type)


@function("negate")
def _negate(expr, a):
    return pc.negate_checked(_as_type(a, expr.type)) if expr.type.kind != "null" else a


# --- comparison and logic -------------------------------------------------------------------------
def _compare(name):
    def compare(expr, a, b):
        if a.type != b.type:
            # binder casts both sides to a common type; string-vs-string with different width is fine
            if pa.types.is_decimal(a.type) and pa.types.is_decimal(b.type):
                common = pa.decimal128(max(a.type.precision - a.type.scale, b.type.precision - b.type.scale)
                                       + max(a.type.scale, b.type.scale), max(a.type.scale, b.type.scale))
                a, b = a.cast(common), b.cast(common)
        return getattr(pc, name)(a, b)
    return compare


for _op, _name in (("eq", "equal"), ("ne", "not_equal"), ("lt", "less"), ("le", "less_equal"),
                   ("gt", "greater"), ("ge", "greater_equal")):
    function(_op)(_compare(_name))


@function("null_safe_eq")
def _null_safe_eq(expr, a, b):
    both_null = pc.and_(pc.is_null(a), pc.is_null(b))
    eq = pc.fill_null(pc.equal(a, b), False)
    return pc.or_(both_null, eq)


@function("and")
def _and(expr, *args):
    result = args[0]
    for arg in args[1:]:
        result = pc.and_kleene(result, arg)
    return result


@function("or")
def _or(expr, *args):
    result = args[0]
    for arg in args[1:]:
        result = pc.or_kleene(result, arg)
    return result


@function("not")
def _not(expr, a):
    return pc.invert(a)


@function("is_null")
def _is_null(expr, a):
    return pc.is_null(a)


@function("is_not_null")
def _is_not_null(expr, a):
    return pc.is_valid(a)


@function("is_true")
def _is_true(expr, a):
    return pc.fill_null(a, False)


@function("single_row")
def _single_row(expr, count, value):
    """A correlated scalar subquery's value per outer row (``count`` rows found for it, ``value`` one of
    them): more than one row is MySQL's error 1242."""
    if (pc.max(count).as_py() or 0) > 1:
        raise BadDataError("Subquery returns more than 1 row")
    return value


@function("in_list")
def _in_list(expr, a):
    # Imported here so that this change stays inside the function; kernel_filters imports nothing
    # of the evaluator at module level, so there is no cycle either way.
    import kernels
    from engine.exec.kernel_filters import in_list_contains

    values, negated = expr.options
    keyed = expr.args[0]
    if isinstance(keyed, Call) and keyed.op == "collation_key":     # the list's values keyed alike
        values = list_keys(tuple(values), *keyed.options)
    if not _is_scalar(a) and kernels.supports_in_list(a.type):
        # Bloom filter + hash set built once per list (cached), probed per batch; same NULL rules.
        found = in_list_contains(values, a)
        return kernels.not_kleene(found) if negated else found
    value_set = pa.array(values, type=a.type)
    found = pc.is_in(a, value_set=value_set, skip_nulls=True)
    if any(v is None for v in values):
        found = pc.if_else(found, True, pa.scalar(None, pa.bool_()))  # x IN (.., NULL) is NULL when not found
    found = pc.if_else(pc.is_null(a), pa.scalar(None, pa.bool_()), found)
    return pc.invert(found) if negated else found


@function("in_list_warning")
def _in_list_warning(expr, a):
    """``x IN (...)`` whose list holds text that warns when read as x's type (``id IN (1, 'x2', 3)``):
    MariaDB compares a row with the list's values in order and, where the text is read as a DECIMAL
    (beside integers), warns each time it reaches such a value: once per row that no earlier value
    matched (not for NULL x), a row's warnings in list order; text read as a DOUBLE is converted once
    and warns once. ``options``: the in_list's (values, NOT) and (position, per row, level, code,
    message) of each value that warns."""
    values, negated, warned = expr.options
    found = _in_list(Call("in_list", expr.args, expr.type, (values, negated)), a)
    if statement_warnings.recording():
        rows = [w for w in warned if w[1]]
        for _, _, level, code, message in (w for w in warned if not w[1]):
            statement_warnings.repeated(level, code, [message], 1, once=True)
        if rows:
            scalar = isinstance(a, pa.Scalar)
            column = pa.array([a.as_py()], a.type) if scalar else _whole(a)
            depth = pa.repeat(pa.scalar(0, pa.int64()), len(column))      # per row: warning values reached
            for position, *_ in rows:
                before = [v for v in values[:position] if v is not None]
                reached = pc.is_valid(column)
                if before:
                    reached = pc.and_(reached, pc.invert(pc.is_in(column, value_set=pa.array(before, column.type))))
                depth = pc.add(depth, reached.cast(pa.int64()))
            total = pc.sum(depth).as_py() or 0
            # only the first rows' messages are kept (SHOW WARNINGS lists MAX_WARNINGS), each row's in order
            first = pc.filter(depth, pc.greater(depth, 0)).slice(0, statement_warnings.MAX_WARNINGS).to_pylist()
            messages = [(rows[k][2], rows[k][3], rows[k][4]) for d in first for k in range(d)]
            statement_warnings.repeated(None, None, messages, total)
    return found


def constant_warnings(expr: Expr) -> list[tuple[str, int, str]]:
    """The (level, code, message) warnings that evaluating the constant ``expr`` records."""
    warned = statement_warnings.Warnings()
    with statement_warnings.collecting(warned):
        evaluate_array(expr, pa.RecordBatch.from_pydict({"_": [0]}))
    return [tuple(w) for w in warned.result()]


@function("like", "not_like")
def _like(expr, a, pattern):
    if not _is_scalar(pattern):
        raise UnsupportedError("LIKE with a non-constant pattern")
    if not pattern.is_valid:
        return pa.scalar(None, pa.bool_())
    text = pattern.as_py()
    escape = expr.options[0] if expr.options else "\\"
    if escape != "\\":
        text = text.replace("\\", "\\\\").replace(escape, "\\")
    result = pc.match_like(a, text)
    return pc.invert(result) if expr.op == "not_like" else result


# --- conditionals ---------------------------------------------------------------------------------
def _broadcast(d: Datum, n: int, t: pa.DataType) -> pa.Array:
    if isinstance(d, pa.Scalar):
        d = d.cast(t) if d.type != t else d
        return pa.repeat(d, n) if d.is_valid else pa.nulls(n, t)
    if isinstance(d, pa.ChunkedArray):
        d = d.combine_chunks()
    return d.cast(t) if d.type != t else d


_LAZY = {"case", "char_length", "octet_length"}
_SCALED_OPS = frozenset(("add", "subtract", "multiply"))


@function("case")
def _case(expr, batch, params):
    """CASE WHEN c1 THEN v1 ... ELSE e END; args = (c1, v1, c2, v2, ..., else)."""
    n = batch.num_rows
    t = expr.type.to_arrow()
    args = expr.args
    pairs = [(args[i], args[i + 1]) for i in range(0, len(args) - 1, 2)]
    conditions = [_broadcast(pc.fill_null(evaluate(c, batch, params), False), n, pa.bool_()) for c, _ in pairs]
    values = [_broadcast(evaluate(v, batch, params), n, t) for _, v in pairs]
    if len(pairs) == 1 and isinstance(args[-1], Literal) and args[-1].value is None:
        masked = _masked(conditions[0], values[0])
        if masked is not None:
            return masked
    otherwise = _broadcast(evaluate(args[-1], batch, params), n, t)
    if not conditions:
        return otherwise
    struct = pa.StructArray.from_arrays(conditions, names=[f"c{i}" for i in range(len(conditions))])
    return pc.case_when(struct, *values, otherwise)


def _masked(condition: pa.Array, value: pa.Array) -> Optional[pa.Array]:
    """``CASE WHEN condition THEN value END`` (no ELSE) as ``value`` itself with a validity bitmap of
    ``condition AND value IS NOT NULL``: the data buffers are shared, not copied (``pc.case_when``
    copies every row: 19 ms against 0.2 ms for 2.9M decimals). Aggregates skip NULLs, so an
    aggregate over it reads only the condition's rows: this is how ``agg(x) FILTER (WHERE c)`` and
    the per-aggregate filters of engine.optimizer.rules.merge_scalar_aggregates reach the aggregate
    kernels, whose masked rows are a bitmap test. None for a type whose buffers are not a validity
    bitmap and flat data (dictionaries, nested types), or unaligned offsets: the caller computes it."""
    t = value.type
    if not (pa.types.is_primitive(t) or pa.types.is_decimal(t) or pa.types.is_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_string(t) or pa.types.is_large_binary(t)):
        return None
    mask = condition if value.null_count == 0 else pc.and_(condition, pc.is_valid(value))
    if mask.offset != value.offset or mask.null_count:
        return None
    return pa.Array.from_buffers(t, len(value), [mask.buffers()[1]] + value.buffers()[1:], offset=value.offset)


@function("if")
def _if(expr, cond, a, b):
    t = expr.type.to_arrow()
    cond = pc.fill_null(cond, False)
    a = a.cast(t) if a.type != t else a
    b = b.cast(t) if b.type != t else b
    return pc.if_else(cond, a, b)


@function("coalesce")
def _coalesce(expr, *args):
    t = expr.type.to_arrow()
    return pc.coalesce(*[a.cast(t) if a.type != t else a for a in args])


@function("nullif")
def _nullif(expr, a, b):
    equal = pc.equal(collation_keys(a, *expr.options), collation_keys(b, *expr.options)) if expr.options \
        else pc.equal(a, b)
    return pc.if_else(pc.fill_null(equal, False), pa.scalar(None, a.type), a)


@function("greatest")
def _greatest(expr, *args):
    t = expr.type.to_arrow()
    if expr.options:
        return _collated_extreme(pc.greater, expr.options[0], [a.cast(t) for a in args])
    return pc.max_element_wise(*[a.cast(t) for a in args], skip_nulls=False)


@function("least")
def _least(expr, *args):
    t = expr.type.to_arrow()
    if expr.options:
        return _collated_extreme(pc.less, expr.options[0], [a.cast(t) for a in args])
    return pc.min_element_wise(*[a.cast(t) for a in args], skip_nulls=False)


def _collated_extreme(beats, name: str, args: list):
    """GREATEST / LEAST of strings under collation ``name``: the first argument whose collation key
    no later one beats; NULL if any argument is NULL (a NULL comparison makes the pick NULL)."""
    best, best_key = args[0], collation_keys(args[0], name)
    for a in args[1:]:
        key = collation_keys(a, name)
        take = beats(key, best_key)
        best, best_key = pc.if_else(take, a, best), pc.if_else(take, key, best_key)
    return best


# --- casts ----------------------------------------------------------------------------------------
# A cast's option: text compared with integers, which MariaDB's warnings name a DECIMAL value (the
# binder's coerce_compared); it is read as any text read as a number is
TEXT_AS_DECIMAL = "text_as_decimal"
# A cast's option: a second reading of a value the user wrote once (BETWEEN's upper bound), which
# converts alike but records no warning (MariaDB warns once for x BETWEEN a AND b)
QUIET = "quiet"


@function("cast")
def _cast(expr, a):
    """CAST, and the binder's implicit conversions. Text to a number reads MySQL's way outside writes:
    its leading number, 0 without one (``'abc' = 0`` is true, ``'12abc' + 1`` is 13); a cast marked
    ``strict`` (a value entering a column, a DEFAULT) leaves a bad value an error."""
    if QUIET in expr.options:
        with statement_warnings.collecting(None):
            return _cast(Call(expr.op, expr.args, expr.type, tuple(o for o in expr.options if o != QUIET)), a)
    clip = cast_range.CLIP in expr.options       # an explicit CAST: MariaDB clips (cast_range)
    if "strict" in expr.options or not pa.types.is_string(a.type) or not _is_number(expr.type):
        return _cast_value(expr, a, clip)
    # MySQL warns 1292 'Truncated incorrect INTEGER value: '12x'' for each text it reads only in part
    # (engine.exec.statement_warnings): checked where a value failed Arrow's cast, and for UNSIGNED
    # (which reads the leading integer itself); where Arrow's cast took every text whole, only a
    # trailing space can be left to note (one pass over the strings)
    integer = expr.type.kind == "int" or expr.type.unsigned
    name = "INTEGER" if integer else "DOUBLE" if expr.type.kind == "float" and TEXT_AS_DECIMAL not in expr.options \
        else "DECIMAL"
    number = statement_warnings.FULL_INTEGER if integer else statement_warnings.FULL_NUMBER
    # an explicit CAST in a write (strict mode): text that is not a number in full fails, as MariaDB
    strict = cast_range.STRICT in expr.options
    if expr.type.unsigned:
        statement_warnings.truncated(a, number, name, strict)
        return _cast_value(expr, a)
    try:
        value = _cast_value(expr, a, clip)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        statement_warnings.truncated(a, number, name, strict)
        if clip and expr.type.to_arrow() == pa.int64():
            # past BIGINT's range too: MariaDB's reading
            return cast_range.text_to_bigint(a, cast_range.STRICT in expr.options)
        return _cast_value(expr, _leading_number(a, integer), clip)
    if statement_warnings.recording() and statement_warnings.trailing_space(a):
        statement_warnings.truncated(a, number, name)       # ' 7 ': a Note
    return value


def _item_name(expr) -> str:
    """What a CAST's 1264 warning names: its select list item's alias, '(null)' inside an expression
    (the binder's NAMED option), else the CAST itself."""
    named = next((o for o in expr.options if o.startswith(cast_range.NAMED)), None)
    return named[len(cast_range.NAMED):] if named is not None else str(expr)


def _is_number(t: SqlType) -> bool:
    return t.kind in ("int", "decimal", "float")


_LEADING_INTEGER = r"^\s*(?P<n>[+-]?[0-9]+)"
_LEADING_NUMBER = r"^\s*(?P<n>[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)"


def _leading_number(s: Datum, integer: bool) -> Datum:
    """The leading number of each string ('12abc' -> '12', ' 1.5e2x' -> '1.5e2'), '0' where there is
    none: MySQL's reading of text as a number (it warns 'Truncated incorrect ... value')."""
    if isinstance(s, pa.ChunkedArray):
        s = s.combine_chunks()
    found = pc.struct_field(pc.extract_regex(s, _LEADING_INTEGER if integer else _LEADING_NUMBER), [0])
    found = pc.utf8_ltrim(found, characters="+")       # its one sign: Arrow's integer cast refuses '+4'
    return pc.if_else(pc.and_(pc.is_null(found), pc.is_valid(s)), "0", found)


def _cast_value(expr, a, clip: bool = False):
    """``a`` as ``expr``'s type; with ``clip`` a number past SIGNED's or DECIMAL(p, s)'s range becomes its
    bound with a warning (engine.exec.cast_range) where the checked cast would fail."""
    target = expr.type.to_arrow()
    if expr.type.unsigned and expr.type.kind == "decimal" and not expr.args[0].type.unsigned:
        return unsigned.to_unsigned(a)          # CAST(x AS UNSIGNED): wraps and clips as MySQL
    if a.type == target:
        return a
    if pa.types.is_boolean(a.type) and not pa.types.is_boolean(target):
        a = a.cast(pa.int64())          # TRUE is 1 wherever a number or text is wanted ('1', not 'true')
    source = a.type
    if expr.args[0].type.unsigned and expr.args[0].type.kind == "decimal" and pa.types.is_integer(target):
        a = unsigned.to_signed(a)               # CAST(x AS SIGNED) of a BIGINT UNSIGNED wraps
        source = a.type
        if a.type == target:
            return a
    if clip and pa.types.is_decimal(target) and not expr.type.unsigned and \
            (pa.types.is_decimal(source) or pa.types.is_floating(source) or pa.types.is_integer(source)):
        return cast_range.to_decimal(a, target, lambda v: _cast_value(expr, v), _item_name(expr),
                                     cast_range.STRICT in expr.options)
    if clip and target == pa.int64() and pa.types.is_decimal(source):
        return cast_range.decimal_to_bigint(a, cast_range.STRICT in expr.options)
    if clip and target == pa.int64() and pa.types.is_floating(source):
        return cast_range.double_to_bigint(a)
    if pa.types.is_decimal(target) and pa.types.is_decimal(source):
        return decimal128.rescale(_whole(a), target)        # rounded half away, checked
    if pa.types.is_decimal(target) and pa.types.is_floating(source):
        return pc.round(a, ndigits=target.scale, round_mode=HALF_AWAY).cast(target)
    spare_scale = min(18, MAX_DECIMAL_PRECISION - (target.precision - target.scale)) \
        if pa.types.is_decimal(target) else 0
    if pa.types.is_decimal(target) and pa.types.is_string(source) and target.scale < spare_scale:
        # parse with spare digits, then round: CAST('1.239' AS DECIMAL(5,2)) is 1.24 in MySQL
        wide = pa.decimal128(MAX_DECIMAL_PRECISION, spare_scale)
        parsed = _whole(pc.utf8_trim_whitespace(a).cast(wide))
        if clip:
            return cast_range.to_decimal(parsed, target, lambda v: decimal128.rescale(_whole(v), target),
                                         _item_name(expr), cast_range.STRICT in expr.options)
        return decimal128.rescale(parsed, target)
    if pa.types.is_string(source) and (pa.types.is_integer(target) or pa.types.is_floating(target)):
        return pc.utf8_trim_whitespace(a).cast(target)      # MySQL reads ' 42 ' as 42
    if pa.types.is_decimal(target) and pa.types.is_integer(source):
        # via the widest decimal: Arrow refuses int64 -> decimal(15,2) by type, even when values fit
        wide = pa.decimal128(MAX_DECIMAL_PRECISION, target.scale)
        return a.cast(wide).cast(target)
    if pa.types.is_integer(target) and pa.types.is_decimal(source):
        return _to_integer(decimal128.rescale(_whole(a), pa.decimal128(38, 0)), target)
    if pa.types.is_integer(target) and pa.types.is_floating(source):
        # a DOUBLE becomes an integer by rint(), half to even (MySQL: CAST(2.5e0 AS SIGNED) is 2, and
        # 2.5e0 stored into an INT column is 2); exact values round half away (CAST(2.5 AS SIGNED) is 3)
        return pc.round(a, round_mode="half_to_even").cast(target)
    if pa.types.is_string(target) and pa.types.is_decimal(source):
        return a.cast(target)
    if pa.types.is_floating(target) and pa.types.is_integer(source):
        # to the nearest DOUBLE (MySQL); Arrow's safe cast refuses integers past 2**53 it cannot hold
        # exactly (a BIGINT compared with text, or CAST(x AS DOUBLE), failed as out of range)
        return pc.cast(a, target, safe=False)
    if pa.types.is_date(target) and pa.types.is_string(source):
        # Arrow's string -> date32 cast rejects impossible dates ('2024-02-30'); strptime rolls them over.
        trimmed = pc.utf8_trim_whitespace(a)
        try:
            return trimmed.cast(target)
        except pa.ArrowInvalid:      # a datetime string: MySQL's CAST(... AS DATE) keeps the date part
            return pc.cast(trimmed.cast(pa.timestamp("us")), target, safe=False)
    if pa.types.is_timestamp(target) and pa.types.is_string(source):
        trimmed = pc.utf8_trim_whitespace(a)
        return trimmed.cast(target)
    return a.cast(target)


# --- collations ----------------------------------------------------------------------------------
@function("collation_key")
def _collation_key(expr, s):
    name, pad = expr.options
    return collation_keys(s, name, pad)


@function("collate")
def _collate(expr, s):
    return s            # changes how the binder compares the value, not the value


# The function library lives in its own modules (strings, math, dates); importing them registers it.
from engine.exec import math_functions  # noqa: E402,F401
from engine.exec import string_functions  # noqa: E402,F401
from engine.exec import date_functions  # noqa: E402,F401
from engine.exec import text_functions  # noqa: E402,F401
from engine.exec import json_functions  # noqa: E402,F401
