"""Arrow's error messages in SQL words: users see ``Incorrect DATE value: '2020-13-45'`` and ``BIGINT
value is out of range``, never ``Failed to parse string ... as a scalar of type timestamp[us]``,
``ArrowInvalid`` or Arrow type names (``int64``, ``large_string``).

>>> sql_message("Failed to parse string: 'x' as a scalar of type int64")
"Incorrect BIGINT value: 'x'"
>>> sql_message("overflow", "BIGINT")
'BIGINT value is out of range'
>>> sql_message("Invalid: cannot cast large_string to decimal128(5, 2)")
'cannot cast TEXT to DECIMAL(5,2)'
"""
from __future__ import annotations

import re
from typing import Optional

# Arrow type spellings -> the SQL type Canopy shows for them
_TYPE_WORDS = [
    (r"large_string|large_utf8|string|utf8", "TEXT"), (r"int8", "TINYINT"), (r"int16", "SMALLINT"),
    (r"int32", "INT"), (r"int64", "BIGINT"), (r"uint8", "TINYINT UNSIGNED"), (r"uint16", "SMALLINT UNSIGNED"),
    (r"uint32", "INT UNSIGNED"), (r"uint64", "BIGINT UNSIGNED"), (r"double|float64", "DOUBLE"),
    (r"float|float32|halffloat", "FLOAT"), (r"bool", "BOOLEAN"), (r"date32(\[day\])?", "DATE"),
    (r"timestamp\[\w+\]", "DATETIME"), (r"null", "NULL"), (r"(large_)?binary", "BLOB"),
]
_TYPE = re.compile(r"\b(?:" + "|".join(f"(?:{p})" for p, _ in _TYPE_WORDS) + r")(?![\w(\[])")
_DECIMAL = re.compile(r"\b[Dd]ecimal(?:128|256)\(\s*(?:precision\s*=\s*)?(\d+),\s*(?:scale\s*=\s*)?(\d+)\s*\)")
_PREFIX = re.compile(r"^(?:pyarrow\.lib\.)?(?:Arrow\w*Error:\s*|Invalid:\s*|NotImplemented:\s*|Type error:\s*)+")

_PARSE = re.compile(r"Failed to parse string: '(.*)' as a scalar of type (\S+)")
_INT_RANGE = re.compile(r"Integer value (-?\d+) not in range")
_FLOAT_TRUNCATED = re.compile(r"Float value (\S+) was truncated converting to")
_DECIMAL_OVERFLOW = re.compile(r"Cannot convert (\S+) to Decimal\w*\(.*\): overflow")


def sql_type_word(arrow_name: str) -> str:
    """An Arrow type's name as the SQL type Canopy shows (``int64`` -> ``BIGINT``)."""
    decimal = _DECIMAL.fullmatch(arrow_name)
    if decimal:
        return f"DECIMAL({decimal.group(1)},{decimal.group(2)})"
    for pattern, word in _TYPE_WORDS:
        if re.fullmatch(pattern, arrow_name):
            return word
    return arrow_name


def sql_message(message: str, sql_type: Optional[str] = None) -> str:
    """``message`` (an Arrow error's first line) in SQL words; ``sql_type`` is the SQL type of the value
    being computed, when the caller knows it (the target of a CAST, an operator's result)."""
    message = _PREFIX.sub("", message.split("\n")[0]).strip()
    parse = _PARSE.search(message)
    if parse:
        return f"Incorrect {sql_type or sql_type_word(parse.group(2))} value: '{parse.group(1)}'"
    for pattern in (_INT_RANGE, _FLOAT_TRUNCATED, _DECIMAL_OVERFLOW):
        found = pattern.search(message)
        if found:
            return f"value {_number(found.group(1))} is out of range for {sql_type or 'its type'}"
    if message.lower() in ("overflow", "integer overflow"):
        return f"{sql_type or 'BIGINT'} value is out of range"
    if "Rescaling Decimal" in message and "data loss" in message:
        return f"value has more digits than {sql_type or 'its DECIMAL type'} holds"
    message = _DECIMAL.sub(lambda m: f"DECIMAL({m.group(1)},{m.group(2)})", message)
    return _TYPE.sub(lambda m: sql_type_word(m.group(0)), message)


def _number(text: str) -> str:
    """Arrow prints floats with six decimals (1e30 as 1000000000000000019884624838656.000000)."""
    try:
        value = float(text)
    except ValueError:
        return text
    if value != value or abs(value) == float("inf"):
        return text
    return str(int(value)) if value.is_integer() and abs(value) < 1e16 else repr(value)
