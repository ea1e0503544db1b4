"""Bulk loading: ``LOAD DATA [LOCAL] INFILE`` parsed into a :class:`LoadDataStatement` and the file read
into an Arrow table of the target table's schema by :func:`read_delimited`.

The names below are imported on first use (PEP 562): every session imports ``engine.load.keys``,
and the delimited reader's imports (pyarrow's CSV module among them) are not worth a start-up that
never loads a file."""
import importlib

_EXPORTS = {"LoadDataStatement": "load_data", "is_load_data": "load_data", "parse_load_data": "load_data",
            "read_delimited": "delimited"}

__all__ = ["LoadDataStatement", "is_load_data", "parse_load_data", "read_delimited"]


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
