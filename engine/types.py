"""Canopy's SQL type model and its mapping to Arrow.

Every column and expression carries a :class:`SqlType`. The Arrow type is what batches hold; the SQL
name is what clients see (DESCRIBE, cursor.description, the wire protocol). DECIMAL(p, s) is exact
(decimal128, p <= 38); arithmetic result types follow MySQL's rules, capped at 38 digits.
"""
from __future__ import annotations

import datetime
import decimal
from dataclasses import dataclass, field, replace
from typing import Optional

import pyarrow as pa

from engine.errors import TypeMismatchError, UnsupportedError

MAX_DECIMAL_PRECISION = 38
DIV_PRECISION_INCREMENT = 4  # MySQL's div_precision_increment: a / b has scale s(a) + 4
SUM_PRECISION_INCREMENT = 22  # MySQL's DECIMAL_LONGLONG_DIGITS: SUM(DECIMAL(p, s)) is DECIMAL(p + 22, s)
MAX_DECIMAL_SCALE = 30       # MySQL's DECIMAL_MAX_SCALE: computed scales stop here


@dataclass(frozen=True)
class SqlType:
    """A SQL type. ``kind`` is one of: null, bool, int, decimal, float, string, date, datetime."""

    kind: str
    name: str                      # MySQL spelling shown to clients: BIGINT, DECIMAL, VARCHAR, ...
    bits: int = 0                  # integers: 8/16/32/64; floats: 32/64
    precision: int = 0             # decimals
    scale: int = 0                 # decimals
    length: Optional[int] = None   # CHAR(n) / VARCHAR(n)
    # integers declared UNSIGNED. Arrow holds them in the next wider signed type (TINYINT UNSIGNED in
    # int16, INT UNSIGNED in int64: ``bits`` is that storage width) and BIGINT UNSIGNED as
    # DECIMAL(20, 0) (kind "decimal"): every operator already handles those types. The declared range
    # (:func:`integer_range`) is checked where values enter a column and after unsigned arithmetic.
    unsigned: bool = False
    # strings: the collation declared (a column's COLLATE, an expression's COLLATE / BINARY), None for
    # the server's default (engine/collation.py). Not part of type equality: a collation changes how
    # values compare, not what they are or how they are stored.
    collation: Optional[str] = field(default=None, compare=False)

    # -- classification ------------------------------------------------------------------------
    @property
    def is_numeric(self) -> bool:
        return self.kind in ("int", "decimal", "float", "bool")

    @property
    def is_temporal(self) -> bool:
        return self.kind in ("date", "datetime")

    def to_arrow(self) -> pa.DataType:
        if self.kind == "int":
            return {8: pa.int8(), 16: pa.int16(), 32: pa.int32(), 64: pa.int64()}[self.bits]
        if self.kind == "decimal":
            return pa.decimal128(self.precision, self.scale)
        if self.kind == "float":
            return pa.float32() if self.bits == 32 else pa.float64()
        if self.kind == "string":
            return pa.string()
        if self.kind == "date":
            return pa.date32()
        if self.kind == "datetime":
            return pa.timestamp("us")
        if self.kind == "bool":
            return pa.bool_()
        return pa.null()

    def with_collation(self, collation: Optional[str]) -> "SqlType":
        return replace(self, collation=collation)

    def __str__(self) -> str:
        if self.unsigned:
            return self.name
        if self.kind == "decimal":
            return f"DECIMAL({self.precision},{self.scale})"
        if self.length is not None:
            return f"{self.name}({self.length})"
        return self.name


# -- constructors -------------------------------------------------------------------------------
NULL = SqlType("null", "NULL")
BOOLEAN = SqlType("bool", "BOOLEAN")
TINYINT = SqlType("int", "TINYINT", bits=8)
SMALLINT = SqlType("int", "SMALLINT", bits=16)
MEDIUMINT = SqlType("int", "MEDIUMINT", bits=32)   # 24 bits in MySQL; stored in 32, named as declared
INT = SqlType("int", "INT", bits=32)
BIGINT = SqlType("int", "BIGINT", bits=64)
FLOAT = SqlType("float", "FLOAT", bits=32)
DOUBLE = SqlType("float", "DOUBLE", bits=64)
UTINYINT = SqlType("int", "TINYINT UNSIGNED", bits=16, unsigned=True)
USMALLINT = SqlType("int", "SMALLINT UNSIGNED", bits=32, unsigned=True)
UMEDIUMINT = SqlType("int", "MEDIUMINT UNSIGNED", bits=32, unsigned=True)
UINT = SqlType("int", "INT UNSIGNED", bits=64, unsigned=True)
UBIGINT = SqlType("decimal", "BIGINT UNSIGNED", precision=20, scale=0, unsigned=True)
TEXT = SqlType("string", "TEXT")
JSON = SqlType("string", "JSON")                  # text that is JSON (writes are checked: engine.sql.dml)
DATE = SqlType("date", "DATE")
DATETIME = SqlType("datetime", "DATETIME")
TIMESTAMP = SqlType("datetime", "TIMESTAMP")      # stored like DATETIME; DESCRIBE shows what was declared


def decimal_type(precision: int, scale: int) -> SqlType:
    precision = max(1, min(precision, MAX_DECIMAL_PRECISION))
    scale = max(0, min(scale, precision))
    return SqlType("decimal", "DECIMAL", precision=precision, scale=scale)


def varchar(length: Optional[int] = None, name: str = "VARCHAR") -> SqlType:
    return SqlType("string", name, length=length)


def from_arrow(t: pa.DataType) -> SqlType:
    """The SQL type for an Arrow type (results of pyarrow kernels, loaded Arrow tables)."""
    if pa.types.is_dictionary(t):
        return from_arrow(t.value_type)
    if pa.types.is_run_end_encoded(t):
        return from_arrow(t.value_type)
    if pa.types.is_boolean(t):
        return BOOLEAN
    if pa.types.is_integer(t):
        return {8: TINYINT, 16: SMALLINT, 32: INT, 64: BIGINT}[t.bit_width]
    if pa.types.is_decimal(t):
        return decimal_type(t.precision, t.scale)
    if pa.types.is_floating(t):
        return FLOAT if t.bit_width == 32 else DOUBLE
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return TEXT
    if pa.types.is_date(t):
        return DATE
    if pa.types.is_timestamp(t):
        return DATETIME
    if pa.types.is_null(t):
        return NULL
    raise UnsupportedError(f"Arrow type {t} has no SQL equivalent in Canopy")


# sqlglot DataType names -> constructor (the binder passes sqlglot's DType name and parameters)
_SIMPLE_TYPES = {
    "TINYINT": TINYINT, "UTINYINT": UTINYINT, "SMALLINT": SMALLINT, "USMALLINT": USMALLINT,
    "MEDIUMINT": MEDIUMINT, "UMEDIUMINT": UMEDIUMINT, "INT": INT, "UINT": UINT, "BIGINT": BIGINT,
    "UBIGINT": UBIGINT, "BOOLEAN": BOOLEAN, "BIT": BOOLEAN,
    "FLOAT": FLOAT, "DOUBLE": DOUBLE, "DATE": DATE, "DATETIME": DATETIME, "TIMESTAMP": TIMESTAMP,
    "DATETIME64": DATETIME, "TIMESTAMPTZ": TIMESTAMP,  # sqlglot reads MySQL TIMESTAMP as TIMESTAMPTZ
    "TIMESTAMPLTZ": DATETIME,
    "TEXT": TEXT, "MEDIUMTEXT": TEXT, "LONGTEXT": TEXT, "TINYTEXT": TEXT, "JSON": JSON,
}


def from_sql_name(name: str, params: tuple[int, ...] = ()) -> SqlType:
    """The SQL type for a type name with optional parameters, e.g. ``("DECIMAL", (15, 2))``."""
    name = name.upper()
    if name in ("DECIMAL", "NUMERIC", "DEC", "BIGDECIMAL"):
        precision = params[0] if params else 10
        scale = params[1] if len(params) > 1 else 0
        if precision > MAX_DECIMAL_PRECISION:
            raise UnsupportedError(
                f"DECIMAL({precision},{scale}): Canopy supports at most {MAX_DECIMAL_PRECISION} digits")
        if scale > precision:
            raise TypeMismatchError(f"DECIMAL({precision},{scale}): scale is larger than precision")
        return decimal_type(precision, scale)
    if name in ("CHAR", "NCHAR"):
        return varchar(params[0] if params else 1, "CHAR")
    if name in ("VARCHAR", "NVARCHAR", "STRING"):
        return varchar(params[0] if params else None, "VARCHAR")
    if name == "INT" and params == (1,):
        return INT
    if name in _SIMPLE_TYPES:
        return _SIMPLE_TYPES[name]
    if name in ("REAL", "DOUBLE PRECISION"):
        return DOUBLE
    raise UnsupportedError(f"column type {name} is not supported")


# -- type rules ---------------------------------------------------------------------------------
# the values each integer type holds as MySQL declares them (MEDIUMINT is 24 bits, stored in 32)
_RANGES = {
    "TINYINT": (-2**7, 2**7 - 1), "SMALLINT": (-2**15, 2**15 - 1), "MEDIUMINT": (-2**23, 2**23 - 1),
    "INT": (-2**31, 2**31 - 1), "BIGINT": (-2**63, 2**63 - 1),
    "TINYINT UNSIGNED": (0, 2**8 - 1), "SMALLINT UNSIGNED": (0, 2**16 - 1),
    "MEDIUMINT UNSIGNED": (0, 2**24 - 1), "INT UNSIGNED": (0, 2**32 - 1), "BIGINT UNSIGNED": (0, 2**64 - 1),
}


def integer_range(t: SqlType) -> Optional[tuple[int, int]]:
    """The smallest and largest value of an integer type as declared (None for other types)."""
    if t.kind == "int" or t.unsigned:
        return _RANGES.get(t.name) or _RANGES[{8: "TINYINT", 16: "SMALLINT", 32: "INT", 64: "BIGINT"}[t.bits]]
    return None


def signed(t: SqlType) -> SqlType:
    """The signed type that holds the values of ``t`` and their negations (-x of an unsigned x)."""
    if not t.unsigned:
        return t
    return decimal_type(20, 0) if t.kind == "decimal" else from_arrow(t.to_arrow())


def _integer_digits(t: SqlType) -> int:
    return {8: 3, 16: 5, 32: 10, 64: 19}[t.bits]


def as_decimal(t: SqlType) -> SqlType:
    """The decimal that holds every value of an integer or decimal type exactly."""
    if t.kind == "decimal":
        return t
    if t.kind == "int":
        return decimal_type(_integer_digits(t), 0)
    if t.kind == "bool":
        return decimal_type(1, 0)
    raise TypeMismatchError(f"{t} is not an exact numeric type")


def common_type(a: SqlType, b: SqlType, context: str = "") -> SqlType:
    """The type both operands are cast to for comparison, CASE branches, UNION and IN lists."""
    if a == b:
        return a
    if a.kind == "null":
        return b
    if b.kind == "null":
        return a
    if a.kind == b.kind == "int":
        wider = a if a.bits >= b.bits else b
        # INT UNSIGNED with a signed INT: a signed type holding both (MySQL: BIGINT)
        return wider if a.unsigned == b.unsigned else signed(wider)
    if a.kind == b.kind == "datetime":
        return DATETIME                  # DATETIME and TIMESTAMP: same values, different names
    if a.kind == b.kind == "float":
        return DOUBLE
    if a.kind == b.kind == "string":
        return TEXT if (a.length is None or b.length is None) else varchar(max(a.length, b.length))
    if a.is_numeric and b.is_numeric:
        if "float" in (a.kind, b.kind):
            return DOUBLE
        da, db = as_decimal(a), as_decimal(b)
        scale = max(da.scale, db.scale)
        integer_digits = max(da.precision - da.scale, db.precision - db.scale)
        return decimal_type(min(MAX_DECIMAL_PRECISION, integer_digits + scale), scale)
    if {a.kind, b.kind} == {"date", "datetime"}:
        return DATETIME
    if a.kind == "string" and b.is_temporal:
        return b
    if b.kind == "string" and a.is_temporal:
        return a
    if a.kind == "string" and b.is_numeric or b.kind == "string" and a.is_numeric:
        return DOUBLE  # MySQL compares a string with a number as doubles
    where = f" in {context}" if context else ""
    raise TypeMismatchError(f"cannot combine {a} and {b}{where}")


def result_type(a: SqlType, b: SqlType, context: str = "") -> SqlType:
    """The type of a value that is either ``a``'s or ``b``'s -- CASE / IF / COALESCE / IFNULL branches,
    UNION columns, GREATEST / LEAST, VALUES rows -- by MySQL's type aggregation: unlike a comparison
    (:func:`common_type`, where text beside a number compares as DOUBLE), text beside a number or a date,
    and a number beside a date, make text (``IF(c, 'a', 2)`` is 'a' or '2', never 0)."""
    if a.kind != "null" and b.kind != "null" and a.kind != b.kind:
        kinds = {a.kind, b.kind}
        if "string" in kinds or (kinds & {"date", "datetime"} and kinds & {"int", "decimal", "float", "bool"}):
            strings = [t for t in (a, b) if t.kind == "string"]
            return strings[0] if len(strings) == 1 and strings[0].length is None else TEXT
    return common_type(a, b, context)


def arithmetic_type(op: str, a: SqlType, b: SqlType, context: str = "") -> SqlType:
    """Result type of ``a <op> b`` for op in + - * / % following MySQL (DECIMAL capped at 38 digits)."""
    for t in (a, b):
        if not (t.is_numeric or t.kind in ("null", "string")):
            raise TypeMismatchError(f"operator {op} needs numbers, got {t} in {context or 'expression'}")
    if a.kind == "null" or b.kind == "null":
        other = b if a.kind == "null" else a
        if other.kind == "null":
            return DOUBLE
        return arithmetic_type(op, other, other, context)
    if "float" in (a.kind, b.kind) or "string" in (a.kind, b.kind):
        return DOUBLE
    integral = all(t.kind in ("int", "bool") or t.unsigned for t in (a, b))
    if op in ("+", "-", "*") and integral and (a.unsigned or b.unsigned):
        # MySQL: an unsigned operand makes integer + - * BIGINT UNSIGNED; a result below 0 (or above
        # 2^64 - 1) is an error, checked by the evaluator
        return UBIGINT
    if op in ("+", "-", "*", "%") and a.kind in ("int", "bool") and b.kind in ("int", "bool"):
        return BIGINT
    da, db = as_decimal(a), as_decimal(b)
    if op in ("+", "-"):
        scale = max(da.scale, db.scale)
        digits = max(da.precision - da.scale, db.precision - db.scale) + 1
        return decimal_type(min(MAX_DECIMAL_PRECISION, digits + scale), scale)
    if op == "*":
        scale = min(da.scale + db.scale, MAX_DECIMAL_SCALE)
        return decimal_type(min(MAX_DECIMAL_PRECISION, da.precision + db.precision), scale)
    if op == "/":
        scale = min(da.scale + DIV_PRECISION_INCREMENT, MAX_DECIMAL_SCALE)
        digits = da.precision - da.scale + db.scale
        return decimal_type(min(MAX_DECIMAL_PRECISION, digits + scale), scale)
    if op == "%":
        scale = max(da.scale, db.scale)
        return decimal_type(min(MAX_DECIMAL_PRECISION, max(da.precision, db.precision)), scale)
    raise TypeMismatchError(f"unknown arithmetic operator {op}")


def aggregate_type(func: str, t: SqlType) -> SqlType:
    """Result type of SUM / AVG of an exact type, as MySQL: SUM(DECIMAL(p, s)) is DECIMAL(p + 22, s),
    AVG is DECIMAL(p + 4, s + 4) (div_precision_increment); integers count as DECIMAL(digits, 0).
    Precision is capped at Canopy's 38 digits (MySQL: 65), scale at 30."""
    d = as_decimal(t)
    if func == "sum":
        return decimal_type(min(d.precision + SUM_PRECISION_INCREMENT, MAX_DECIMAL_PRECISION), d.scale)
    return decimal_type(min(d.precision + DIV_PRECISION_INCREMENT, MAX_DECIMAL_PRECISION),
                        min(d.scale + DIV_PRECISION_INCREMENT, MAX_DECIMAL_SCALE))


def python_type_of(value) -> SqlType:
    """The SQL type of a Python literal value (used for bound parameters and folded constants)."""
    if value is None:
        return NULL
    if isinstance(value, bool):
        return BOOLEAN
    if isinstance(value, int):
        if -2**63 <= value < 2**63:
            return BIGINT
        # MySQL types 9223372036854775808 .. 18446744073709551615 BIGINT UNSIGNED, larger ones DECIMAL
        return UBIGINT if 0 < value < 2**64 else decimal_type(min(38, len(str(abs(value)))), 0)
    if isinstance(value, float):
        return DOUBLE
    if isinstance(value, decimal.Decimal):
        sign, digits, exponent = value.as_tuple()
        scale = max(0, -exponent)
        precision = max(len(digits), scale, 1)
        return decimal_type(precision, scale)
    if isinstance(value, str):
        return TEXT
    if isinstance(value, datetime.datetime):
        return DATETIME
    if isinstance(value, datetime.date):
        return DATE
    raise TypeMismatchError(f"unsupported literal of Python type {type(value).__name__}")
