"""A LOAD DATA statement's FIELDS / LINES options as pyarrow's CSV reader takes them (or
UnsupportedError naming the option), and its column list as the file's fields."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from engine.catalog import TableDef
from engine.errors import BindError, UnsupportedError
from engine.load.load_data import LoadDataStatement


@dataclass(frozen=True)
class FileField:
    """One field of a file row: where it goes (``column`` index into the table, None for @var)."""

    name: str                 # pyarrow's name for it: unique, never shown
    label: str                # what error messages call it: the column name or '@var'
    column: Optional[int]


def file_dialect(statement: LoadDataStatement) -> tuple[str, str, str]:
    """(delimiter, quote, escape) as pyarrow takes them, or UnsupportedError naming the option."""
    delimiter = statement.fields_terminated_by
    if len(delimiter) != 1 or delimiter in "\r\n" or not delimiter.isascii():
        raise UnsupportedError(f"FIELDS TERMINATED BY {delimiter!r}: Canopy reads one ASCII character "
                               f"other than a line break")
    if statement.lines_terminated_by not in ("\n", "\r\n"):
        raise UnsupportedError(f"LINES TERMINATED BY {statement.lines_terminated_by!r}: Canopy reads "
                               f"'\\n' and '\\r\\n' line ends")
    if statement.lines_starting_by:
        raise UnsupportedError(f"LINES STARTING BY {statement.lines_starting_by!r} is not supported")
    quote, escape = statement.fields_enclosed_by, statement.fields_escaped_by
    for option, value in (("ENCLOSED BY", quote), ("ESCAPED BY", escape)):
        if len(value) > 1 or not value.isascii() or value in ("\r", "\n"):
            raise UnsupportedError(f"FIELDS {option} {value!r}: Canopy reads one ASCII character or ''")
        if value and value == delimiter:
            raise UnsupportedError(f"FIELDS {option} {value!r} equal to FIELDS TERMINATED BY")
    if quote and escape == quote:
        raise UnsupportedError(f"FIELDS ESCAPED BY {escape!r} equal to ENCLOSED BY")
    return delimiter, quote, escape


def file_fields(statement: LoadDataStatement, table: TableDef) -> list[FileField]:
    if not statement.columns:
        return [FileField(f"f{i}", c.name, i) for i, c in enumerate(table.columns)]
    fields, seen = [], set()
    for i, name in enumerate(statement.columns):
        if name.startswith("@"):
            fields.append(FileField(f"f{i}", name, None))
            continue
        index = table.column_index(name)  # BindError with a did-you-mean for an unknown name
        if index in seen:
            raise BindError(f"column {table.columns[index].name!r} appears twice in the LOAD DATA "
                            f"column list")
        seen.add(index)
        fields.append(FileField(f"f{i}", table.columns[index].name, index))
    return fields
