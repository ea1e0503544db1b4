"""Read a delimited text file (``LOAD DATA INFILE``) into an Arrow table of a target table's schema.

The whole file is parsed by ``pyarrow.csv`` (multi-threaded, typed conversion in C++); Python only
prepares options and, on the error path, finds the offending line. The contract:

* the result has exactly ``table.arrow_schema``: file fields map to the statement's column list (or to
  all table columns in order), ``@var`` fields are read and dropped, other columns get their DEFAULT or
  NULL;
* ``\\N`` (the escape character then ``N``, as a whole field) is NULL; an empty field is an empty string
  for text columns and an error for other types; ``\\t``, ``\\n``, ``\\r``, ``\\0``, ``\\b``, ``\\Z`` are
  MySQL's control characters and ``\\x`` is ``x`` otherwise;
* bad data raises :class:`~engine.errors.BadDataError` naming the file, the 1-based line (header lines
  counted; embedded newlines in quoted values and skipped blank lines are not) and the column; NULL in a
  NOT NULL column raises :class:`~engine.errors.ConstraintError`; an unreadable file raises
  :class:`~engine.errors.ExecutionError`;
* ``SET col = expr`` is bound by the engine's binder over the file's fields (``@var`` fields are text)
  and evaluated batch-wise by its evaluator; the value is cast to the column's type and checked as a
  file value would be;
* with SingleStore's ``SKIP PARSER ERRORS`` (wrong field count, a value that does not convert, a DECIMAL
  out of range, invalid UTF-8), ``SKIP CONSTRAINT ERRORS`` (NULL into NOT NULL, text too long) or
  ``SKIP ALL ERRORS`` the offending rows are dropped and each becomes a warning naming its line. An
  unterminated quote still fails the load: where the broken row ends is unknowable.

MySQL escapes versus pyarrow. pyarrow un-escapes a field *before* it compares it with ``null_values``
(``\\N`` would become ``N``) and knows no control-character escapes. So when the escape character occurs
in the data at all, the bytes are rewritten first with a few C-speed ``bytes.replace`` passes, using two
bytes that never occur in UTF-8 as placeholders: an escaped escape character becomes ``0xFE``, ``\\N``
becomes ``0xFF`` (a whole-field ``0xFF`` is the NULL marker), and ``\\n`` becomes the escape character
followed by a real LF, which pyarrow's own escape handling turns into a literal LF. Text columns are then
read as binary and the placeholders put back before the UTF-8 cast. Files without the escape character
(TPC-H's) skip all of this.

The file's bytes (opening, decompression, runs of whole lines, character sets) are
:mod:`engine.load.input_files`; ``SET col = expr`` is :mod:`engine.load.set_clauses`; the search for the
rows a conversion rejects is :mod:`engine.load.failing_rows`; the statement's FIELDS / LINES options
and column list as the parse takes them are :mod:`engine.load.dialect`.
"""
from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Iterator, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from engine.catalog import TableDef
from engine.errors import BadDataError, ConstraintError
from engine.exec.integer_range import out_of_range
from engine.exec.json_functions import invalid_mask, invalid_reason
from engine.load.dialect import FileField, file_dialect, file_fields
from engine.load.failing_rows import failing_rows, first_failing
from engine.load.input_files import (_UTF8_CHARSETS, Chunks, WholeFileNeeded, decode_text, escaped_bytes, open_input,
                                     read_file, skip_lines)
from engine.load.load_data import LoadDataStatement
from engine.load.set_clauses import SetClauses
from engine.types import JSON, TEXT, SqlType

BLOCK_SIZE = 16 << 20
# The streamed read (stream_delimited) parses the file this many bytes at a time, in STREAM_BLOCK_SIZE
# blocks on pyarrow's threads; one chunk is parsed while the one before is routed.
STREAM_CHUNK_BYTES = 32 << 20
STREAM_BLOCK_SIZE = 4 << 20
_ESCAPED_ESCAPE = b"\xfe"   # placeholder for an escaped escape character (never in UTF-8)
_NULL_MARK = b"\xff"        # placeholder for \N (never in UTF-8); a whole field of it is NULL
_CONTROL_ESCAPES = ((b"n", b"\n"), (b"t", b"\t"), (b"r", b"\r"), (b"0", b"\x00"), (b"b", b"\x08"),
                    (b"Z", b"\x1a"))
# Warnings kept per statement (MySQL's max_error_count is 64 by default); every skipped row is counted.
MAX_WARNINGS = 1000
# MySQL's codes for what a skipped row hit.
_TOO_MANY_FIELDS, _TOO_FEW_FIELDS, _BAD_VALUE, _NULL_NOT_NULL, _TOO_LONG = 1262, 1261, 1366, 1048, 1406
_COLUMN_COUNT = re.compile(r"Expected (\d+) columns, got (\d+)")
_CONVERSION = re.compile(r"In CSV column #(\d+): (.*)", re.S)


@dataclass
class LoadWarnings:
    """What ``SKIP ... ERRORS`` dropped: every skipped row counted, the first MAX_WARNINGS described as
    ``(level, code, message)`` rows of SHOW WARNINGS."""

    skipped: int = 0
    rows: list = None

    def __post_init__(self):
        self.rows = [] if self.rows is None else self.rows

    def add(self, code: int, message: str) -> None:
        self.skipped += 1
        if len(self.rows) < MAX_WARNINGS:
            self.rows.append(("Warning", code, message))


def read_delimited(statement: LoadDataStatement, table: TableDef, *, data: Optional[bytes] = None,
                   warnings: Optional[LoadWarnings] = None) -> pa.Table:
    """Read ``statement.path`` (or ``data``, the file's bytes already in memory: a pipeline's object)
    into a table of ``table.arrow_schema`` (see the module docstring). Rows skipped under ``SKIP ...
    ERRORS`` are recorded in ``warnings``."""
    reader = _Reader(statement, table, data, warnings if warnings is not None else LoadWarnings())
    return reader.read()


def stream_delimited(statement: LoadDataStatement, table: TableDef, *, warnings: Optional[LoadWarnings] = None,
                     chunk_bytes: Optional[int] = None) -> Iterator[tuple[pa.Table, int]]:
    """``statement.path`` as blocks of ``table.arrow_schema`` of about ``chunk_bytes`` of the file
    each (default STREAM_CHUNK_BYTES), as ``(block, file bytes it came from)``, parsed ahead on a
    thread while the caller routes.

    The blocks, concatenated, are exactly what :func:`read_delimited` returns, or the generator raises
    :class:`WholeFileNeeded` (possibly after some blocks): the caller drops what it got and calls
    :func:`read_delimited`, which raises the precise error for bad data. The fast path takes files of
    whole-line rows without escape characters and without SKIP ... ERRORS (workload h, TPC-H).
    """
    reader = _Reader(statement, table, None, warnings if warnings is not None else LoadWarnings())
    return reader.stream(chunk_bytes or STREAM_CHUNK_BYTES)


def skip_kinds(statement: LoadDataStatement) -> frozenset[str]:
    """The error kinds a statement's SKIP clause drops rows for ('parser', 'constraint')."""
    return {None: frozenset(), "PARSER": frozenset({"parser"}), "CONSTRAINT": frozenset({"constraint"}),
            "ALL": frozenset({"parser", "constraint"}),
            # tables have no unique keys, so there are no duplicate-key errors to skip
            "DUPLICATE KEY": frozenset()}[statement.skip_errors]


class _Reader:
    def __init__(self, statement: LoadDataStatement, table: TableDef, data: Optional[bytes],
                 warnings: LoadWarnings):
        self.statement = statement
        self.table = table
        self.path = statement.path
        self.data = data
        self.warnings = warnings
        self.skip = skip_kinds(statement)
        self.delimiter, self.quote, self.escape = file_dialect(statement)
        self.fields = file_fields(statement, table)
        self.assignments = SetClauses(statement, table, self.fields) if statement.set_clauses else None
        # @var fields are parsed (as text) only when a SET expression reads them
        used = self.assignments.variables if self.assignments else set()
        self.parsed_fields = [f for f in self.fields if f.column is not None or f.label.lower() in used]
        self.row_numbers: Optional[np.ndarray] = None   # output row -> file row, once rows were skipped
        self.first_row = 0       # rows of the file before the block being checked (streamed blocks)
        self.dropped: Optional[np.ndarray] = None       # rows a check under SKIP ... ERRORS rejected

    # -- the success path ---------------------------------------------------------------------
    def read(self) -> pa.Table:
        raw = self.data if self.data is not None else read_file(self.path)
        self.data = None
        data = decode_text(raw, self.statement.character_set, self.path)
        del raw
        offset = skip_lines(data, self.statement.ignore_lines)
        self.escaped = bool(self.escape) and data.find(self.escape.encode(), offset) >= 0
        if self.escaped:
            data = self._rewrite_escapes(data, offset)
            offset = skip_lines(data, self.statement.ignore_lines)
        self.buffer = pa.py_buffer(data).slice(offset)
        self.newlines_in_values = bool(self.quote) and data.find(self.quote.encode(), offset) >= 0
        if self.quote:
            self._check_quotes(data, offset)

        if self.buffer.size == 0:
            parsed = {f.name: pa.chunked_array([], self._read_type(f)) for f in self.parsed_fields}
            num_rows = 0
        else:
            result = self._parse_one_row_a_line(data, offset) if self.newlines_in_values else None
            if result is None:
                try:
                    result = self._parse(self.buffer)
                except pa.ArrowInvalid as e:
                    if "parser" not in self.skip:
                        raise self._explain(e) from None
                    result = self._parse_skipping()
            self.buffer = None
            parsed = {name: result.column(name) for name in result.column_names}
            num_rows = result.num_rows
            del result

        for field in self.parsed_fields:
            if self.escaped and self._sql_type(field).kind == "string":
                parsed[field.name] = self._restore_text(parsed[field.name], field)
        return self._assemble(parsed, num_rows)

    # -- the streamed fast path ----------------------------------------------------------------
    def stream(self, chunk_bytes: int) -> Iterator[tuple[pa.Table, int]]:
        """The file as blocks of about ``chunk_bytes``, each with the bytes of the file it came from,
        the next block read and parsed on a background thread while the caller routes this one.

        A block is a run of whole lines parsed one row a line (``newlines_in_values`` off), which is
        exactly what :meth:`read` returns when every line of the file is one row: so the blocks are
        kept only while each has as many rows as line ends (and, with a quote character, the file
        ends with an even number of quotes). Anything else raises :class:`WholeFileNeeded` — bad
        data, a quoted line end, blank lines, an escape character in the data, SKIP ... ERRORS, a
        character set to convert — and the caller drops the blocks it got and reads the file whole
        with :meth:`read`, which parses carefully and names the offending line. The value checks of
        :meth:`read` (NOT NULL, VARCHAR(n), DECIMAL range) run per block with the file's line
        numbers, so a load with several bad values reports the first in file order.
        """
        if self.data is not None or self.skip or len(self.fields) < 2 or (
                self.statement.character_set is not None
                and self.statement.character_set.lower() not in _UTF8_CHARSETS):
            raise WholeFileNeeded("this load is read whole")
        self.escaped = self.newlines_in_values = False
        handle, source = open_input(self.path)
        pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="canopy-load-parse")
        try:
            chunks = Chunks(source, handle, chunk_bytes)
            pending = pool.submit(self._parse_chunk, chunks, True)
            quotes = 0
            while True:
                parsed = pending.result()
                if parsed is None:
                    break
                table, lines, chunk_quotes, consumed = parsed
                pending = pool.submit(self._parse_chunk, chunks, False)   # the next one, meanwhile
                quotes += chunk_quotes
                num_rows = table.num_rows
                block = self._assemble({name: table.column(name) for name in table.column_names}, num_rows)
                del table
                self.first_row += num_rows
                yield block, consumed
            if self.quote and quotes % 2:
                raise WholeFileNeeded("an odd number of quotes")
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            handle.close()

    def _parse_chunk(self, chunks: "Chunks", first: bool) -> Optional[tuple[pa.Table, int, int, int]]:
        """(rows parsed, line ends, quote characters, file bytes consumed) of the next run of lines,
        or None at the end of the file (runs on the parse thread: pyarrow parses without the GIL)."""
        data, end, consumed = chunks.next()
        offset = 0
        if first:                                   # IGNORE n LINES, which may span runs
            ignore = self.statement.ignore_lines
            while data is not None and ignore:
                offset = data.find(b"\n", offset, end) + 1
                if offset == 0 or offset == end:    # the run ends: the next one continues the count
                    chunks.release()
                    data, end, more = chunks.next()
                    consumed, offset = consumed + more, 0
                ignore -= 1
            if data is None:
                raise WholeFileNeeded("an empty file")   # the whole read returns the empty table
        if data is None:
            return None
        if self.escape and data.find(self.escape.encode(), offset, end) >= 0:
            raise WholeFileNeeded("the data has escape characters")
        run = np.frombuffer(data, np.uint8, end - offset, offset)
        lines = chunks.count(run, 10) + (0 if data[end - 1] == 10 else 1)
        quotes = chunks.count(run, ord(self.quote)) if self.quote else 0
        del run                                     # (a view pins the buffer's size)
        try:
            table = self._parse(pa.py_buffer(data).slice(offset, end - offset), newlines_in_values=False,
                                block_size=STREAM_BLOCK_SIZE)
        except pa.ArrowInvalid:
            raise WholeFileNeeded("the fast parse failed") from None
        chunks.release()                            # the table holds copies: the buffer is free again
        if self.quote and table.num_rows != lines:
            raise WholeFileNeeded("a line is not one row")
        return table, lines, quotes, consumed

    def _assemble(self, parsed: dict, num_rows: int) -> pa.Table:
        """The parsed fields (by pyarrow name) as a table of the target schema: SET evaluated, values
        checked, defaults filled in, rows a SKIP dropped removed."""
        assigned = self.assignments.evaluate(parsed, num_rows) if self.assignments else {}
        by_column = {f.column: f for f in self.fields if f.column is not None}
        arrays = []
        for index, column in enumerate(self.table.columns):
            arrow_type = column.type.to_arrow()
            field = by_column.get(index)
            if index in assigned:
                values, field = assigned[index], FileField(column.name, column.name, index)
            elif field is None:
                arrays.append(self._default(index, num_rows))
                continue
            else:
                values = parsed.pop(field.name)
            self._check_values(values, column.type, field)
            arrays.append(values if values.type == arrow_type else values.cast(arrow_type))
        result = pa.Table.from_arrays(arrays, schema=self.table.arrow_schema)
        if self.dropped is not None:
            result = result.filter(pa.array(~self.dropped))
        return result

    def _sql_type(self, field: FileField) -> SqlType:
        return TEXT if field.column is None else self.table.columns[field.column].type

    def _read_type(self, field: FileField) -> pa.DataType:
        sql_type = self._sql_type(field)
        if sql_type.kind == "string" and self.escaped:
            return pa.binary()  # placeholders are not UTF-8; restored by _restore_text
        return sql_type.to_arrow()

    def _parse_skipping(self) -> pa.Table:
        """The SKIP PARSER ERRORS path, taken only once the fast parse failed: rows with the wrong field
        count are skipped by pyarrow (single-threaded, so it numbers them), every field is read as bytes
        and converted column by column; values that do not convert drop their row."""
        skipped: list = []

        def record(row) -> str:
            skipped.append(row)
            return "skip"

        buffer, null_values, restore = self._buffer_for_row_handler()
        raw = self._parse(buffer, use_threads=False, on_invalid_row=record, null_values=null_values,
                          types={f.name: pa.binary() for f in self.parsed_fields})
        raw = restore(raw)
        numbers = sorted(row.number for row in skipped)
        self.row_numbers = np.setdiff1d(np.arange(1, raw.num_rows + len(skipped) + 1), numbers)
        for row in sorted(skipped, key=lambda r: r.number):
            code = _TOO_MANY_FIELDS if row.actual_columns > row.expected_columns else _TOO_FEW_FIELDS
            self.warnings.add(code, f"LOAD DATA {self.path}: line {row.number + self.statement.ignore_lines}: "
                                    f"expected {row.expected_columns} fields, got {row.actual_columns}")
        bad = np.zeros(raw.num_rows, dtype=bool)
        problems: list[tuple[int, FileField, str]] = []
        columns = []
        for field in self.parsed_fields:
            values = raw.column(field.name).combine_chunks()
            target = self._read_type(field)

            def convert(chunk: pa.Array, target=target) -> pa.Array:
                return chunk if target == pa.binary() else chunk.cast(pa.string()).cast(target)

            failing = failing_rows(values, convert)
            for row in failing:          # the message names the place, never the file's bytes
                what = "invalid UTF-8 text" if self._sql_type(field).kind == "string" else \
                    f"invalid value for {self._sql_type(field)}"
                problems.append((row, field, what))
            if failing:
                mask = np.zeros(len(values), dtype=bool)
                mask[failing] = True
                bad |= mask
                values = pc.if_else(pa.array(mask), pa.scalar(None, values.type), values)
            columns.append(convert(values))
        for row, field, what in sorted(problems, key=lambda p: p[0]):
            self.warnings.add(_BAD_VALUE, self._bad(row, field, what).args[0])
        self._drop(bad)
        return pa.Table.from_arrays(columns, names=[f.name for f in self.parsed_fields])

    def _buffer_for_row_handler(self) -> tuple[pa.Buffer, Optional[list], Callable[[pa.Table], pa.Table]]:
        """pyarrow decodes a skipped row's text as UTF-8 before the invalid-row handler sees it, so the
        escape placeholders (bytes never in UTF-8) would fail that decode. For this parse they are
        swapped for private-use characters the file does not contain, and swapped back in the columns
        parsed: (buffer, null_values for the parse, restore)."""
        if not self.escaped:
            return self.buffer, None, lambda table: table
        data = self.buffer.to_pybytes()
        free = (chr(c).encode() for c in range(0xE000, 0xF900) if chr(c).encode() not in data)
        swaps = [(mark, next(free)) for mark in (_NULL_MARK, _ESCAPED_ESCAPE) if mark in data]
        for mark, token in swaps:
            data = data.replace(mark, token)

        def restore(table: pa.Table) -> pa.Table:
            columns = table.columns
            for mark, token in swaps:
                columns = [pc.replace_substring(column, token, mark) for column in columns]
            return pa.Table.from_arrays(columns, names=table.column_names)

        nulls = [token for mark, token in swaps if mark == _NULL_MARK] or [_NULL_MARK]
        return pa.py_buffer(data), nulls, restore

    def _drop(self, mask: np.ndarray) -> None:
        if mask.any():
            self.dropped = mask if self.dropped is None else (self.dropped | mask)

    def _parse_one_row_a_line(self, data: bytes, offset: int) -> Optional[pa.Table]:
        """The fast parse of a file with quotes: pyarrow's reader with ``newlines_in_values`` off, which
        splits the file into parallel blocks at any line end (about twice as fast as finding the line
        ends outside quotes first). Its result is kept only when every line is one row (as many rows as
        line ends): then no value holds a line end, so no block split a value and the result is what
        the careful parse returns. Otherwise (a quoted line end, blank lines, bad data) None, and the
        careful parse runs. With one field a value split at a block boundary could read as two rows
        of one field each, which the count would not catch, so one-field files always parse carefully.
        """
        if len(self.fields) < 2:
            return None
        try:
            result = self._parse(self.buffer, newlines_in_values=False)
        except pa.ArrowInvalid:
            return None
        lines = data.count(b"\n", offset) + (0 if data.endswith(b"\n") else 1)
        return result if result.num_rows == lines else None

    def _parse(self, buffer: pa.Buffer, use_threads: bool = True,
               types: Optional[dict[str, pa.DataType]] = None,
               on_invalid_row: Optional[Callable] = None,
               newlines_in_values: Optional[bool] = None, block_size: int = BLOCK_SIZE,
               null_values: Optional[list] = None) -> pa.Table:
        if types is None:
            types = {f.name: self._read_type(f) for f in self.parsed_fields}
        return pacsv.read_csv(
            pa.BufferReader(buffer),
            read_options=pacsv.ReadOptions(column_names=[f.name for f in self.fields],
                                           use_threads=use_threads, block_size=block_size),
            parse_options=pacsv.ParseOptions(
                delimiter=self.delimiter, quote_char=self.quote or False, double_quote=True,
                escape_char=self.escape if self.escaped else False,
                newlines_in_values=self.newlines_in_values if newlines_in_values is None else newlines_in_values,
                ignore_empty_lines=True,
                invalid_row_handler=on_invalid_row),
            convert_options=pacsv.ConvertOptions(
                column_types=types, include_columns=list(types),
                null_values=null_values or ([_NULL_MARK] if self.escaped else []), strings_can_be_null=True,
                quoted_strings_can_be_null=False, check_utf8=True))

    def _default(self, index: int, num_rows: int) -> pa.Array:
        column = self.table.columns[index]
        arrow_type = column.type.to_arrow()
        if column.has_default and column.default is not None:
            return pa.repeat(pa.scalar(column.default, arrow_type), num_rows)
        if not column.nullable and num_rows:
            raise ConstraintError(
                f"LOAD DATA {self.path}: column {column.name!r} is NOT NULL, is not in the column list "
                f"and has no non-NULL DEFAULT")
        return pa.nulls(num_rows, arrow_type)

    # -- escapes ------------------------------------------------------------------------------
    def _rewrite_escapes(self, data: bytes, offset: int) -> bytes:
        if data.find(_ESCAPED_ESCAPE, offset) >= 0 or data.find(_NULL_MARK, offset) >= 0:
            bad = min(i for i in (data.find(_ESCAPED_ESCAPE, offset), data.find(_NULL_MARK, offset))
                      if i >= 0)
            line = data.count(b"\n", 0, bad) + 1
            raise BadDataError(f"LOAD DATA {self.path}: line {line}: the file is not valid UTF-8 "
                               f"(byte 0x{data[bad]:02X}); name its CHARACTER SET")
        escape = self.escape.encode()
        followers = escaped_bytes(data, escape, offset)
        # A replace copies the whole file: do only those whose sequence occurs.
        self.has_escaped_escape = followers is None or escape in followers
        if self.has_escaped_escape:
            data = data.replace(escape + escape, _ESCAPED_ESCAPE)
            followers = escaped_bytes(data, escape, offset)
        # Every escape character left starts a pair with the next byte, so pair-wise rewrites are exact.
        for letter, control in _CONTROL_ESCAPES:
            if followers is None or letter in followers:
                data = data.replace(escape + letter, escape + control)
        self.has_null_mark = followers is None or b"N" in followers
        return data.replace(escape + b"N", _NULL_MARK) if self.has_null_mark else data

    def _restore_text(self, values: pa.ChunkedArray, field: FileField) -> pa.ChunkedArray:
        if self.has_null_mark:
            values = pc.replace_substring(values, _NULL_MARK, b"N")  # \N inside a longer field is 'N'
        if self.has_escaped_escape:
            values = pc.replace_substring(values, _ESCAPED_ESCAPE, self.escape.encode())
        try:
            return values.cast(pa.string())
        except pa.ArrowInvalid:
            row = first_failing(values, lambda chunk: chunk.cast(pa.string()))
            raise self._bad(row, field, "invalid UTF-8 text") from None

    # -- checks after parsing -----------------------------------------------------------------
    def _check_values(self, values: pa.ChunkedArray, sql_type: SqlType, field: FileField) -> None:
        """Raise for the first bad value; under SKIP ... ERRORS of its kind, warn and drop every bad row."""
        column = self.table.columns[field.column]
        if not column.nullable and values.null_count:
            mask = pc.is_null(values)
            self._reject(mask, "constraint", _NULL_NOT_NULL, lambda row: ConstraintError(
                f"LOAD DATA {self.path}: line {self._line(row)}: NULL (\\N) in NOT NULL column "
                f"{column.name!r}"))
        # A UTF-8 character is at least one byte: when no value has more bytes than the limit allows
        # characters (the common case), the costlier character count is skipped.
        if sql_type.kind == "string" and sql_type.length is not None and len(values) and \
                (pc.max(pc.binary_length(values)).as_py() or 0) > sql_type.length:
            lengths = pc.utf8_length(values)
            longest = pc.max(lengths).as_py()
            if longest is not None and longest > sql_type.length:
                self._reject(pc.greater(lengths, sql_type.length), "constraint", _TOO_LONG, lambda row: self._bad(
                    row, field, f"value of {lengths[row].as_py()} characters is too long for {sql_type}"))
        if sql_type == JSON:
            invalid = invalid_mask(values)
            if invalid is not None:
                self._reject(invalid, "parser", _BAD_VALUE, lambda row: self._bad(
                    row, field, f"Invalid JSON text: \"{invalid_reason(values[row].as_py())}\""))
        # INT UNSIGNED is read as int64, MEDIUMINT as int32: the declared range is checked here
        outside = out_of_range(values, sql_type)
        if outside is not None:
            self._reject(outside, "parser", _BAD_VALUE, lambda row: self._bad(
                row, field, f"Out of range value {values[row].as_py()} for {sql_type}"))
        if sql_type.kind == "decimal" and len(values) > values.null_count:
            # pyarrow's CSV reader checks the scale but not the precision of a decimal.
            limit = 10 ** (sql_type.precision - sql_type.scale)
            low, high = pc.min_max(values).values()
            if high.as_py() >= limit or low.as_py() <= -limit:
                wide = pa.decimal256(76, sql_type.scale)  # holds the limit, which values.type cannot
                too_big = pc.greater_equal(pc.abs(values.cast(wide)), pa.scalar(limit).cast(wide))
                self._reject(too_big, "parser", _BAD_VALUE, lambda row: self._bad(
                    row, field, f"value {values[row].as_py()} is out of range for {sql_type}"))

    def _reject(self, mask, kind: str, code: int, error: Callable[[int], Exception]) -> None:
        """Rows where ``mask`` is true broke a rule of ``kind``: raise for the first, or skip them all."""
        mask = pc.fill_null(mask, False)
        if self.dropped is None and kind not in self.skip:
            row = pc.index(mask, True).as_py()
            if row >= 0:
                raise error(row)
            return
        flags = mask.to_numpy(zero_copy_only=False) if isinstance(mask, pa.Array) else \
            np.concatenate([c.to_numpy(zero_copy_only=False) for c in mask.chunks] or [np.zeros(0, bool)])
        if self.dropped is not None:            # rows already skipped are not checked again
            flags = flags & ~self.dropped
        rows = np.flatnonzero(flags)
        if len(rows) and kind not in self.skip:
            raise error(int(rows[0]))
        for row in rows:
            self.warnings.add(code, error(int(row)).args[0])
        self._drop(flags)

    def _check_quotes(self, data: bytes, offset: int) -> None:
        """Raise for an opening quote that is never closed (pyarrow silently ends it at the line end
        or swallows the rest of the file). Counting quotes is the cheap test; only an odd count pays
        for the regex walk, which tells a real unterminated field from a stray quote mid-field."""
        quote = self.quote.encode()
        count = data.count(quote, offset)
        if self.escaped:
            count -= data.count(self.escape.encode() + quote, offset)
        if count % 2 == 0:
            return
        q, d = re.escape(quote), re.escape(self.delimiter.encode())
        if self.escaped:
            e = re.escape(self.escape.encode())
            body = rb"(?:[^" + q + e + rb"]|" + e + rb".|" + q + q + rb")*"
        else:
            body = rb"(?:[^" + q + rb"]|" + q + q + rb")*"
        if not self.newlines_in_values:
            body = body.replace(rb"[^", rb"[^\n", 1)
        pattern = re.compile(rb"(?:^|(?<=" + d + rb"))" + q + body + rb"(" + q + rb")?", re.M | re.S)
        for match in pattern.finditer(data, offset):
            if match.group(1) is None:
                line = data.count(b"\n", 0, match.start()) + 1
                raise BadDataError(f"LOAD DATA {self.path}: line {line}: unterminated quoted field")

    # -- the error path -----------------------------------------------------------------------
    def _explain(self, error: pa.ArrowInvalid) -> Exception:
        message = str(error)
        if _COLUMN_COUNT.search(message):
            return self._explain_column_count()
        conversion = _CONVERSION.search(message)
        if conversion:
            return self._explain_conversion(int(conversion.group(1)), conversion.group(2))
        # pyarrow's text may quote the row: keep its first clause only (never echo the file's bytes)
        return BadDataError(f"LOAD DATA {self.path}: the file cannot be parsed ({message.split(':')[0]})")

    def _explain_column_count(self) -> BadDataError:
        first: list = []

        def record(row) -> str:
            first.append(row)
            return "error"

        buffer = self.buffer
        if self.escaped:
            # pyarrow decodes a bad row's text as UTF-8 before calling the handler, and the
            # placeholders are not UTF-8: put the escapes they stand for back (rows and fields do not
            # change; pyarrow's own escape handling reads them), or the row would go unnamed
            escape = self.escape.encode()
            buffer = pa.py_buffer(buffer.to_pybytes().replace(_ESCAPED_ESCAPE, escape + escape)
                                  .replace(_NULL_MARK, escape + b"N"))
        try:  # single-threaded: only then does pyarrow number the rows
            self._parse(buffer, use_threads=False, on_invalid_row=record)
        except pa.ArrowInvalid:
            pass
        if not first:
            return BadDataError(f"LOAD DATA {self.path}: a row has the wrong number of fields")
        row = first[0]
        line = f"line {row.number + self.statement.ignore_lines}" if row.number is not None else "a line"
        return BadDataError(
            f"LOAD DATA {self.path}: {line}: expected {row.expected_columns} fields, got {row.actual_columns}")

    def _explain_conversion(self, position: int, detail: str) -> BadDataError:
        field = self.fields[position]
        sql_type = self._sql_type(field)
        try:
            raw = self._parse(self.buffer, types={field.name: pa.binary()}).column(field.name)
        except pa.ArrowInvalid:
            raw = None
        target = self._read_type(field)

        def convert(chunk: pa.Array) -> pa.Array:
            return chunk if target == pa.binary() else chunk.cast(pa.string()).cast(target)

        row = first_failing(raw, convert) if raw is not None else None
        if row is None:
            return BadDataError(f"LOAD DATA {self.path}: column {field.label!r}: {detail}")
        what = "invalid UTF-8 text" if sql_type.kind == "string" else f"invalid value for {sql_type}"
        text = raw[row].as_py()
        if sql_type.kind == "int" and re.fullmatch(rb"\s*[+-]?[0-9]+\s*", text or b""):
            what = f"Out of range value {text.decode().strip()} for {sql_type}"    # a number beyond the type
        return self._bad(row, field, what)

    def _bad(self, row: int, field: FileField, what: str) -> BadDataError:
        return BadDataError(f"LOAD DATA {self.path}: line {self._line(row)}, column {field.label!r}: {what}")

    def _line(self, row: int) -> int:
        if self.row_numbers is not None:
            return self.statement.ignore_lines + int(self.row_numbers[row])
        return self.statement.ignore_lines + self.first_row + row + 1
