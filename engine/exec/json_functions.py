"""JSON values and functions: MySQL's JSON_EXTRACT (``->``), ``->>`` / JSON_UNQUOTE, JSON_VALID,
JSON_TYPE, JSON_LENGTH, JSON_KEYS, JSON_QUOTE, JSON_OBJECT, JSON_ARRAY, and SingleStore's
JSON_EXTRACT_STRING / _BIGINT / _DOUBLE / _JSON. :mod:`engine.exec.evaluate` registers them by importing
this module.

A JSON value is held as its text (Canopy's JSON type is a string type whose writes are checked:
:func:`check_documents`). A function over documents parses each DISTINCT document once, in Python's
``json`` (``per_distinct``: never once per row where documents repeat), and spreads the answers back to
the rows; building JSON (JSON_OBJECT, JSON_ARRAY, JSON_QUOTE) is whole-column string work in Arrow.

JSON text is written as MySQL writes it: ``{"a": 1, "b": [1, 2]}`` (a space after ``:`` and ``,``),
object members in the document's order, numbers as they were written (``1.50`` stays ``1.50``).
Paths are ``$``, ``.key``, ``."quoted key"`` and ``[n]``; wildcards and ranges are refused by name.
"""
from __future__ import annotations

import decimal
import json
import re
from typing import Any, Callable, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.errors import BadDataError, UnsupportedError
from engine.exec.evaluate import Datum, function
from engine.exec.string_functions import decoded as _plain, per_distinct

_MISSING = object()          # a path that leads nowhere


# --- parsing and writing ----------------------------------------------------------------------------------
def _reject_constant(name: str):
    raise ValueError(f"{name} is not JSON")


class JsonNumber(decimal.Decimal):
    """A JSON number with a fraction or exponent: its exact value, and its text as the document wrote it
    (written back as it was: 2.50 stays 2.50, -0.5e3 stays -0.5e3)."""

    def __new__(cls, text: str):
        number = super().__new__(cls, text)
        number.text = text
        return number


def parse(text: str) -> Any:
    """A JSON document as Python values (numbers with a fraction or exponent as JsonNumber);
    ValueError when it is not JSON."""
    return json.loads(text, parse_float=JsonNumber, parse_constant=_reject_constant)


def double_text(value: float) -> str:
    """A DOUBLE as MySQL writes it in JSON: the shortest digits that read back to it, an exponent
    without '+' or leading zeros (1e15, 1.5e-7)."""
    for digits in range(1, 18):
        text = f"{value:.{digits}g}"
        if float(text) == value:
            break
    mantissa, _, exponent = text.partition("e")
    return mantissa if not exponent else f"{mantissa}e{int(exponent)}"


def write(value: Any) -> str:
    """JSON text of a parsed value, as MySQL prints it."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, JsonNumber):
        return value.text
    if isinstance(value, (int, decimal.Decimal)):
        return str(value)
    if isinstance(value, float):
        return double_text(value)
    if isinstance(value, list):
        return "[" + ", ".join(write(v) for v in value) + "]"
    return "{" + ", ".join(json.dumps(k, ensure_ascii=False) + ": " + write(v) for k, v in value.items()) + "}"


def invalid_reason(text: str) -> Optional[str]:
    """Why ``text`` is not JSON (with the position), or None when it is."""
    try:
        parse(text)
        return None
    except json.JSONDecodeError as error:
        return f"{error.msg} at position {error.pos}"
    except (ValueError, RecursionError) as error:
        return str(error)


def check_documents(array: pa.Array, where: Callable[[int], str]) -> None:
    """Raise MySQL's 'Invalid JSON text' for the first value of ``array`` that is not JSON; ``where(i)``
    names the column and row of value ``i``. Each distinct value is parsed once."""
    if array.null_count == len(array):
        return
    encoded = pc.dictionary_encode(array) if not pa.types.is_dictionary(array.type) else array
    for code, text in enumerate(encoded.dictionary.to_pylist()):
        reason = invalid_reason(text)
        if reason is not None:
            row = int(np.flatnonzero(np.asarray(pc.fill_null(pc.equal(encoded.indices, code), False)))[0])
            raise BadDataError(f'Invalid JSON text: "{reason}" in value for {where(row)}')


def invalid_mask(values: Datum) -> Optional[pa.Array]:
    """Where ``values`` are not JSON (NULL: not checked), each distinct value parsed once; None when
    all are."""
    if len(values) == values.null_count:
        return None
    mask = per_distinct(values, lambda text: invalid_reason(text) is not None, pa.bool_())
    return mask if pc.any(mask).as_py() else None


# --- paths ------------------------------------------------------------------------------------------------
_STEP = re.compile(r'\s*(?:\.\s*([A-Za-z_$][\w$]*)|\.\s*"((?:[^"\\]|\\.)*)"|\[\s*(\d+)\s*\])')


def parse_path(text: str) -> tuple:
    """A MySQL JSON path as steps (str: a member, int: an array position)."""
    stripped = text.strip()
    if not stripped.startswith("$"):
        raise BadDataError(f"Invalid JSON path expression {text!r}: it must start with '$'")
    steps, position = [], 1
    while position < len(stripped):
        match = _STEP.match(stripped, position)
        if match is None:
            rest = stripped[position:].lstrip()
            if rest.startswith(("*", ".*", "[*", "**")) or " to " in rest or "last" in rest:
                raise UnsupportedError(f"JSON path {text!r}: wildcards, ranges and 'last' are not supported")
            raise BadDataError(f"Invalid JSON path expression {text!r} at position {position}")
        member, quoted, index = match.groups()
        steps.append(int(index) if index is not None else member if member is not None else json.loads(f'"{quoted}"'))
        position = match.end()
    return tuple(steps)


def follow(value: Any, steps: tuple) -> Any:
    """The value ``steps`` lead to, or _MISSING. MySQL: [0] of a non-array is the value itself."""
    for step in steps:
        if isinstance(step, int):
            if isinstance(value, list):
                if step >= len(value):
                    return _MISSING
                value = value[step]
            elif step != 0:
                return _MISSING
        elif isinstance(value, dict) and step in value:
            value = value[step]
        else:
            return _MISSING
    return value


def _on_documents(doc: Datum, fn: Callable[[Any], Any], out_type: pa.DataType) -> Datum:
    """``fn(parsed document)`` per distinct document (NULL stays NULL; a stored JSON value is valid,
    a string argument that is not JSON is MySQL's error)."""
    def apply(text: str):
        try:
            parsed = parse(text)
        except (ValueError, RecursionError) as error:
            raise BadDataError(f"Invalid JSON text in argument 1 to a JSON function: {error}") from None
        return fn(parsed)
    return per_distinct(_plain(doc), apply, out_type)


def _constant_text(d: Datum, what: str) -> Optional[str]:
    if not isinstance(d, pa.Scalar):
        raise UnsupportedError(f"{what} with a non-constant argument")
    return d.as_py()


# --- MySQL's functions ------------------------------------------------------------------------------------
@function("json_extract")
def _json_extract(expr, doc, *paths):
    """JSON_EXTRACT(doc, path [, path ...]): the value at the path as JSON, NULL where there is none;
    with several paths, the values found as one JSON array."""
    texts = [_constant_text(p, "JSON_EXTRACT path") for p in paths]
    if any(t is None for t in texts):
        return pa.scalar(None, pa.string())
    parsed = [parse_path(t) for t in texts]

    def extract(value):
        found = [follow(value, steps) for steps in parsed]
        if len(found) == 1:
            return None if found[0] is _MISSING else write(found[0])
        kept = [v for v in found if v is not _MISSING]
        return write(kept) if kept else None
    return _on_documents(doc, extract, pa.string())


@function("json_unquote_extract")
def _json_unquote_extract(expr, doc, path):
    """doc ->> path: the value at the path, a string without its quotes (JSON_UNQUOTE(JSON_EXTRACT))."""
    text = _constant_text(path, "->> path")
    if text is None:
        return pa.scalar(None, pa.string())
    steps = parse_path(text)

    def extract(value):
        found = follow(value, steps)
        if found is _MISSING:
            return None
        return found if isinstance(found, str) else write(found)
    return _on_documents(doc, extract, pa.string())


@function("json_unquote")
def _json_unquote(expr, s):
    """JSON_UNQUOTE(s): a JSON string literal's text; anything else as it is."""
    def unquote(text: str) -> str:
        if len(text) >= 2 and text[0] == text[-1] == '"':
            try:
                return json.loads(text)
            except ValueError:
                raise BadDataError(f"Invalid JSON text in argument 1 to function json_unquote: {text!r}") from None
        return text
    return per_distinct(_plain(s), unquote, pa.string())


@function("json_valid")
def _json_valid(expr, s):
    return per_distinct(_plain(s), lambda text: invalid_reason(text) is None, pa.bool_())


_TYPES = {dict: "OBJECT", list: "ARRAY", str: "STRING", bool: "BOOLEAN", int: "INTEGER",
          JsonNumber: "DOUBLE", type(None): "NULL"}


@function("json_type")
def _json_type(expr, doc):
    return _on_documents(doc, lambda value: _TYPES[type(value)], pa.string())


@function("json_length")
def _json_length(expr, doc, path=None):
    """JSON_LENGTH(doc [, path]): members of an object, elements of an array, 1 for a scalar; NULL where
    the path leads nowhere."""
    steps = () if path is None else _path_argument(path, "JSON_LENGTH")
    if steps is None:
        return pa.scalar(None, pa.int64())

    def length(value):
        found = follow(value, steps)
        if found is _MISSING:
            return None
        return len(found) if isinstance(found, (dict, list)) else 1
    return _on_documents(doc, length, pa.int64())


@function("json_keys")
def _json_keys(expr, doc, path=None):
    """JSON_KEYS(doc [, path]): an object's member names as a JSON array; NULL for anything else."""
    steps = () if path is None else _path_argument(path, "JSON_KEYS")
    if steps is None:
        return pa.scalar(None, pa.string())

    def keys(value):
        found = follow(value, steps)
        return write(list(found)) if isinstance(found, dict) else None
    return _on_documents(doc, keys, pa.string())


def _path_argument(path: Datum, what: str) -> Optional[tuple]:
    text = _constant_text(path, f"{what} path")
    return None if text is None else parse_path(text)


@function("json_quote")
def _json_quote(expr, s):
    return per_distinct(_plain(s), lambda text: json.dumps(text, ensure_ascii=False), pa.string())


# --- building JSON from SQL values (whole columns) -----------------------------------------------------------
def json_text_of(value: Datum, kind: str) -> Datum:
    """An SQL value as JSON text, per the binder's ``kind`` of it: 'json' (already JSON text), 'string'
    (quoted), 'bool' (true / false), 'number' (its digits); NULL becomes null."""
    value = _plain(value)
    if kind == "json":
        text = value
    elif kind == "string":
        text = per_distinct(value, lambda v: json.dumps(v, ensure_ascii=False), pa.string())
    elif kind == "bool":
        text = pc.if_else(value, "true", "false")
    elif pa.types.is_floating(value.type):
        text = per_distinct(value, double_text, pa.string())
    else:
        text = value.cast(pa.string())
    return pc.fill_null(text, "null")


@function("json_scalar")
def _json_scalar(expr, value):
    """CAST(x AS JSON) of a number, boolean or text value: that value as a JSON scalar."""
    return json_text_of(value, expr.options[0])


@function("json_checked")
def _json_checked(expr, text):
    """CAST(text AS JSON): the text, when it is JSON (MySQL's error otherwise)."""
    text = _plain(text)
    if isinstance(text, pa.Scalar):
        reason = None if not text.is_valid else invalid_reason(text.as_py())
        if reason is not None:
            raise BadDataError(f'Invalid JSON text in argument 1 to function cast_as_json: "{reason}"')
        return text
    check_documents(text, lambda row: "argument 1 to function cast_as_json")
    return text


@function("json_object")
def _json_object(expr, *args):
    """JSON_OBJECT(k1, v1, ...): the binder put each value's kind in the options; a NULL key is an error."""
    kinds = expr.options
    pieces: list = ["{"]
    for i in range(0, len(args), 2):
        key, value = _plain(args[i]), args[i + 1]
        if pc.any(pc.is_null(key)).as_py() if not isinstance(key, pa.Scalar) else not key.is_valid:
            raise BadDataError("JSON documents may not contain NULL member names (JSON_OBJECT)")
        if i:
            pieces.append(", ")
        pieces += [json_text_of(key, "string"), ": ", json_text_of(value, kinds[i // 2])]
    pieces.append("}")
    return _joined(pieces)


@function("json_array")
def _json_array(expr, *args):
    pieces: list = ["["]
    for i, value in enumerate(args):
        if i:
            pieces.append(", ")
        pieces.append(json_text_of(value, expr.options[i]))
    pieces.append("]")
    return _joined(pieces)


def _joined(pieces: list) -> Datum:
    parts = [pa.scalar(p) if isinstance(p, str) else p for p in pieces]
    if all(isinstance(p, pa.Scalar) for p in parts):
        return pa.scalar("".join(p.as_py() for p in parts))
    return pc.binary_join_element_wise(*parts, "")


# --- SingleStore's JSON_EXTRACT_<type>(doc, key_or_index, ...) ------------------------------------------------------
def _keyed_steps(keys: tuple) -> Optional[tuple]:
    steps = []
    for k in keys:
        if not isinstance(k, pa.Scalar):
            raise UnsupportedError("JSON_EXTRACT_<type> with a non-constant key")
        value = k.as_py()
        if value is None:
            return None
        steps.append(value if isinstance(value, int) and not isinstance(value, bool) else str(value))
    return tuple(steps)


def _number(found, integral: bool):
    """SingleStore's reading of a JSON value as a number: numbers as they are (an integer result
    rounds), true 1, false 0, anything else NULL... strings that are numbers read as such."""
    if isinstance(found, bool):
        return int(found)
    if isinstance(found, (int, decimal.Decimal)):
        return int(decimal.Decimal(found).to_integral_value(decimal.ROUND_HALF_UP)) if integral else float(found)
    if isinstance(found, str):
        try:
            number = decimal.Decimal(found.strip())
        except decimal.InvalidOperation:
            return 0 if integral else 0.0
        return int(number.to_integral_value(decimal.ROUND_HALF_UP)) if integral else float(number)
    return None


@function("json_extract_typed")
def _json_extract_typed(expr, doc, *keys):
    kind = expr.options[0]
    steps = _keyed_steps(keys)
    out = {"string": pa.string(), "json": pa.string(), "bigint": pa.int64(), "double": pa.float64()}[kind]
    if steps is None:
        return pa.scalar(None, out)

    def extract(value):
        found = follow(value, steps)
        if found is _MISSING:
            return None
        if kind == "json":
            return write(found)
        if kind == "string":
            return found if isinstance(found, str) else None if found is None else write(found)
        number = _number(found, kind == "bigint")
        if kind == "bigint" and number is not None and not -2**63 <= number < 2**63:
            raise BadDataError(f"JSON_EXTRACT_BIGINT: {found} is out of the range of BIGINT")
        return number
    return _on_documents(doc, extract, out)
