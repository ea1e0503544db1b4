"""MySQL's numeric functions over Arrow: ABS, ROUND, FLOOR, CEIL (exact on DECIMAL), the float
functions, SQRT / LN / LOG (NULL outside their domain), SIGN. Moved out of :mod:`engine.exec.evaluate`,
which registers them by importing this module.
"""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from engine.exec import decimal128
from engine.exec.evaluate import HALF_AWAY, _to_integer, _whole, function


# --- math -----------------------------------------------------------------------------------------
@function("abs")
def _abs(expr, a):
    return pc.abs_checked(a)


@function("round")
def _round(expr, a, digits=None):
    nd = digits.as_py() if digits is not None else 0
    if pa.types.is_decimal(a.type):
        return decimal128.round_digits(_whole(a), nd, expr.type.to_arrow())
    # MySQL: exact values round half away from zero, doubles to nearest even (the C library's rint)
    result = pc.round(a, ndigits=nd, round_mode="half_to_even" if pa.types.is_floating(a.type) else HALF_AWAY)
    return result.cast(expr.type.to_arrow())


@function("floor")
def _floor(expr, a):
    if pa.types.is_decimal(a.type):
        return _to_integer(decimal128.floor_or_ceiling(_whole(a), ceiling=False), expr.type.to_arrow())
    return pc.floor(a).cast(expr.type.to_arrow())


@function("ceil")
def _ceil(expr, a):
    if pa.types.is_decimal(a.type):
        return _to_integer(decimal128.floor_or_ceiling(_whole(a), ceiling=True), expr.type.to_arrow())
    return pc.ceil(a).cast(expr.type.to_arrow())


def _float_fn(name):
    def fn(expr, *args):
        return getattr(pc, name)(*[a.cast(pa.float64()) for a in args])
    return fn


for _sql, _pc in (("exp", "exp"), ("power", "power"), ("sin", "sin"), ("cos", "cos"), ("tan", "tan")):
    function(_sql)(_float_fn(_pc))


def _null_outside_domain(name):
    """MySQL returns NULL (not NaN or -inf) for SQRT of a negative number and LN / LOG of x <= 0."""
    def fn(expr, a):
        a = a.cast(pa.float64())
        outside = pc.less(a, 0) if name == "sqrt" else pc.less_equal(a, 0)
        return pc.if_else(outside, pa.scalar(None, pa.float64()), getattr(pc, name)(a))
    return fn


for _sql in ("sqrt", "ln", "log10", "log2"):
    function(_sql)(_null_outside_domain(_sql))


@function("sign")
def _sign(expr, a):
    return pc.sign(a).cast(pa.int64())
