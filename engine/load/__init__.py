"""Bulk loading: ``LOAD DATA [LOCAL] INFILE`` parsed into a :class:`LoadDataStatement` and the file read
into an Arrow table of the target table's schema by :func:`read_delimited`."""
from engine.load.delimited import read_delimited
from engine.load.load_data import LoadDataStatement, is_load_data, parse_load_data

__all__ = ["LoadDataStatement", "is_load_data", "parse_load_data", "read_delimited"]
