"""``LOAD DATA [LOCAL] INFILE``: the statement as a frozen dataclass, and its parser.

sqlglot does not parse LOAD DATA, so :func:`parse_load_data` walks the tokens of sqlglot's MySQL
tokenizer by hand. The tokenizer already decodes MySQL string escapes (``'\\t'`` is a TAB, ``'\\\\'`` one
backslash, ``''''`` one quote), so the values stored here are the real characters.

Grammar (MySQL, in MySQL's clause order, plus SingleStore's ``SKIP ... ERRORS``)::

    LOAD DATA [LOW_PRIORITY | CONCURRENT] [LOCAL] INFILE 'file'
        [REPLACE | IGNORE | SKIP {ALL | CONSTRAINT | DUPLICATE KEY | PARSER} ERRORS]
        INTO TABLE [db.]tbl
        [CHARACTER SET cs]
        [{FIELDS | COLUMNS} [TERMINATED BY 's'] [[OPTIONALLY] ENCLOSED BY 'c'] [ESCAPED BY 'c']]
        [LINES [STARTING BY 's'] [TERMINATED BY 's']]
        [IGNORE n {LINES | ROWS}]
        [(col_or_@var, ...)]
        [SET col = expr, ...]
        [SKIP {ALL | CONSTRAINT | DUPLICATE KEY | PARSER} ERRORS]
        [FORMAT {CSV | PARQUET}]

``INFILE`` may name several files with a glob (``'/d/part-*.csv'``); they load as one statement.

>>> s = parse_load_data("LOAD DATA INFILE '/d/nation.csv' INTO TABLE nation "
...                     "FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\\"' IGNORE 1 LINES")
>>> (s.table, s.fields_terminated_by, s.fields_enclosed_by, s.fields_optionally_enclosed, s.ignore_lines)
('nation', ',', '"', True, 1)
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

import sqlglot
from sqlglot.dialects.mysql import MySQL
from sqlglot.errors import ParseError as SqlglotParseError
from sqlglot.errors import TokenError
from sqlglot.tokens import Token, TokenType

from engine.errors import ParseError, UnsupportedError


@dataclass(frozen=True)
class LoadDataStatement:
    path: str
    local: bool
    database: Optional[str]          # from `INTO TABLE db.t`
    table: str
    duplicates: Optional[str]        # 'REPLACE' | 'IGNORE' | None
    fields_terminated_by: str = "\t"   # MySQL defaults
    fields_enclosed_by: str = ""
    fields_optionally_enclosed: bool = False
    fields_escaped_by: str = "\\"
    lines_starting_by: str = ""
    lines_terminated_by: str = "\n"
    ignore_lines: int = 0
    # target column list; '@name' entries are user variables (read and dropped)
    columns: tuple[str, ...] = ()
    set_clauses: tuple[tuple[str, str], ...] = ()   # (column, expression SQL text); not executed yet
    character_set: Optional[str] = None
    skip_errors: Optional[str] = None  # SingleStore SKIP {PARSER|CONSTRAINT|DUPLICATE KEY|ALL} ERRORS
    format: str = "CSV"                # SingleStore FORMAT {CSV | PARQUET}


_LEADING = re.compile(r"(?:\s+|--[^\n]*(?:\n|$)|#[^\n]*(?:\n|$)|/\*.*?\*/)*", re.S)
_LOAD_DATA = re.compile(r"LOAD\s+DATA\b", re.I)


def is_load_data(sql: str) -> bool:
    """True when ``sql`` starts with ``LOAD DATA`` after whitespace and comments (a cheap prefix check).

    >>> is_load_data("  /* bulk */ -- x\\n load  data local infile 'f' into table t")
    True
    >>> is_load_data("SELECT 'LOAD DATA'")
    False
    """
    start = _LEADING.match(sql).end()
    return _LOAD_DATA.match(sql, start) is not None


# Words that stop a SET expression when they appear outside parentheses (the clauses that may follow).
_SET_STOP_WORDS = {"SKIP", "WHERE", "MAX_ERRORS", "ERRORS"}
_SKIP_KINDS = ("ALL", "CONSTRAINT", "PARSER")
# SingleStore / MySQL options we recognise but do not implement: the word and what the error names.
_UNSUPPORTED_TRAILING = {
    "TRAILING": "TRAILING NULLCOLS",
    "NULL": "NULL DEFINED BY",
    "WHERE": "LOAD DATA ... WHERE",
    "MAX_ERRORS": "MAX_ERRORS",
    "ERRORS": "ERRORS HANDLE",
    "COMPRESSION": "LOAD DATA ... COMPRESSION",
}
_NAME_TYPES = {TokenType.VAR, TokenType.IDENTIFIER}
_VALUE_TYPES = {TokenType.STRING, TokenType.NATIONAL_STRING, TokenType.HEX_STRING, TokenType.NUMBER,
                TokenType.IDENTIFIER}


class _Parser:
    """A cursor over the statement's tokens. ``_word`` matches keywords by text, never quoted names."""

    def __init__(self, sql: str):
        self.sql = sql
        try:
            tokens = MySQL().tokenize(sql)
        except TokenError as e:
            raise ParseError(f"cannot tokenize LOAD DATA statement: {e}") from None
        while tokens and tokens[-1].token_type == TokenType.SEMICOLON:
            tokens.pop()
        self.tokens: list[Token] = tokens
        self.i = 0

    # -- cursor ---------------------------------------------------------------------------------
    def peek(self, ahead: int = 0) -> Optional[Token]:
        j = self.i + ahead
        return self.tokens[j] if j < len(self.tokens) else None

    def advance(self) -> Token:
        token = self.peek()
        if token is None:
            raise self.error("unexpected end of statement")
        self.i += 1
        return token

    def at_end(self) -> bool:
        return self.i >= len(self.tokens)

    def error(self, message: str, token: Optional[Token] = None) -> ParseError:
        token = token if token is not None else self.peek()
        if token is None:  # the error is at the end of the text
            line = self.sql.count("\n") + 1
            column = len(self.sql) - (self.sql.rfind("\n") + 1) + 1
            return ParseError(message, line, column, None)
        start = token.start
        line = self.sql.count("\n", 0, start) + 1
        column = start - (self.sql.rfind("\n", 0, start) + 1) + 1
        return ParseError(message, line, column, self.sql[start:token.end + 1])

    # -- matching -------------------------------------------------------------------------------
    @staticmethod
    def is_word(token: Optional[Token], *words: str) -> bool:
        if token is None or token.token_type in _VALUE_TYPES:
            return False
        return token.text.upper() in words

    def word(self, *words: str) -> Optional[str]:
        """Consume and return the next token's keyword if it is one of ``words``."""
        token = self.peek()
        if self.is_word(token, *words):
            self.i += 1
            return token.text.upper()
        return None

    def expect_word(self, *words: str) -> str:
        found = self.word(*words)
        if found is None:
            raise self.error(f"expected {' or '.join(words)}")
        return found

    def expect_string(self, what: str) -> str:
        token = self.peek()
        if token is None or token.token_type not in (TokenType.STRING, TokenType.NATIONAL_STRING,
                                                     TokenType.HEX_STRING):
            raise self.error(f"{what} needs a quoted string")
        self.i += 1
        if token.token_type == TokenType.HEX_STRING:  # X'09' spells a TAB
            try:
                return bytes.fromhex(token.text).decode("latin-1")
            except ValueError:
                raise self.error("invalid hexadecimal string", token) from None
        return token.text

    def expect_name(self, what: str) -> str:
        token = self.peek()
        if token is None or token.token_type in (TokenType.STRING, TokenType.NUMBER) or (
                token.token_type not in _NAME_TYPES and not token.text.isidentifier()):
            raise self.error(f"expected {what}")
        self.i += 1
        return token.text

    # -- clauses --------------------------------------------------------------------------------
    def file_format(self) -> str:
        """The format after ``FORMAT`` (already consumed)."""
        token = self.peek()
        found = self.word("CSV", "PARQUET")
        if found is None:
            if self.is_word(token, "JSON", "AVRO", "ORC", "ICEBERG"):
                raise UnsupportedError(f"LOAD DATA ... FORMAT {token.text.upper()} is not supported")
            raise self.error("expected CSV or PARQUET after FORMAT")
        return found

    def skip_errors(self) -> str:
        """The kind after ``SKIP`` (already consumed) up to and including ``ERRORS``."""
        kind = self.word(*_SKIP_KINDS, "DUPLICATE")
        if kind is None:
            raise self.error("expected ALL, CONSTRAINT, DUPLICATE KEY or PARSER after SKIP")
        if kind == "DUPLICATE":
            self.expect_word("KEY")
            kind = "DUPLICATE KEY"
        self.expect_word("ERRORS")
        return kind

    def single_char(self, what: str) -> str:
        token = self.peek()
        value = self.expect_string(what)
        if len(value) > 1:
            raise self.error(f"{what} takes one character or '' (got {len(value)} characters)", token)
        return value

    def set_expression(self) -> str:
        """Raw SQL text of one SET expression: tokens up to a top-level ',' or a following clause."""
        first, start = self.peek(), self.i
        depth, last = 0, first
        while not self.at_end():
            token = self.peek()
            kind = token.token_type
            if depth == 0 and (kind == TokenType.COMMA or self.is_word(token, *_SET_STOP_WORDS)):
                break
            if kind == TokenType.L_PAREN:
                depth += 1
            elif kind == TokenType.R_PAREN:
                depth -= 1
                if depth < 0:
                    raise self.error("unbalanced ')'", token)
            last = self.advance()
        if self.i == start:  # nothing consumed: the end, a ',' or a stop word right after '='
            raise self.error("SET needs an expression after '='")
        if depth:
            raise self.error("unbalanced '(' in SET expression", first)
        text = self.sql[first.start:last.end + 1]
        try:
            sqlglot.parse_one(text, read="mysql")
        except (SqlglotParseError, TokenError) as e:
            raise self.error(f"invalid SET expression {text!r}: {str(e).splitlines()[0]}", first) from None
        return text


def parse_load_data(sql: str) -> LoadDataStatement:
    """Parse one ``LOAD DATA`` statement (a trailing ``;`` is allowed).

    Raises :class:`~engine.errors.ParseError` (line, column and the offending token) for bad syntax and
    :class:`~engine.errors.UnsupportedError` for valid options Canopy does not implement.
    """
    p = _Parser(sql)
    p.expect_word("LOAD")
    if p.is_word(p.peek(), "XML"):
        raise UnsupportedError("LOAD XML is not supported; use LOAD DATA")
    p.expect_word("DATA")
    if p.is_word(p.peek(), "S3", "LINK", "KAFKA", "FS", "AZURE", "GCS", "HDFS"):
        raise UnsupportedError(f"LOAD DATA {p.peek().text.upper()} is not supported; "
                               "LOAD DATA [LOCAL] INFILE reads local files")
    p.word("LOW_PRIORITY", "CONCURRENT")  # scheduling hints: meaningless for Canopy's loader
    local = p.word("LOCAL") is not None
    p.expect_word("INFILE")
    path = p.expect_string("INFILE")
    if not path:
        raise p.error("INFILE needs a non-empty file name", p.tokens[p.i - 1])

    duplicates: Optional[str] = None
    skip_errors: Optional[str] = None
    found = p.word("REPLACE", "IGNORE", "SKIP")
    if found == "SKIP":
        skip_errors = p.skip_errors()
    else:
        duplicates = found

    p.expect_word("INTO")
    p.expect_word("TABLE")
    database: Optional[str] = None
    table = p.expect_name("a table name after INTO TABLE")
    if p.peek() is not None and p.peek().token_type == TokenType.DOT:
        p.advance()
        database, table = table, p.expect_name("a table name after the database name")
    if p.is_word(p.peek(), "PARTITION"):
        raise UnsupportedError("LOAD DATA ... PARTITION (...) is not supported")
    if p.word("FORMAT"):       # SingleStore also takes FORMAT right after the table
        options_format = p.file_format()
    else:
        options_format = None

    character_set: Optional[str] = None
    if p.word("CHARSET") or (p.is_word(p.peek(), "CHARACTER") and p.is_word(p.peek(1), "SET")):
        if p.word("CHARACTER"):
            p.expect_word("SET")
        token = p.peek()
        if token is not None and token.token_type == TokenType.STRING:
            character_set = p.advance().text
        else:
            character_set = p.expect_name("a character set name")

    options: dict[str, object] = {} if options_format is None else {"format": options_format}

    def once(key: str, token: Token) -> None:
        if key in options:
            raise p.error(f"{key.replace('_', ' ').upper()} given twice", token)

    if p.word("FIELDS", "COLUMNS"):
        count = len(options)
        while True:
            token = p.peek()
            if p.word("TERMINATED"):
                once("fields_terminated_by", token)
                p.expect_word("BY")
                options["fields_terminated_by"] = p.expect_string("FIELDS TERMINATED BY")
            elif p.is_word(token, "OPTIONALLY", "ENCLOSED"):
                once("fields_enclosed_by", token)
                options["fields_optionally_enclosed"] = p.word("OPTIONALLY") is not None
                p.expect_word("ENCLOSED")
                p.expect_word("BY")
                options["fields_enclosed_by"] = p.single_char("ENCLOSED BY")
            elif p.word("ESCAPED"):
                once("fields_escaped_by", token)
                p.expect_word("BY")
                options["fields_escaped_by"] = p.single_char("ESCAPED BY")
            else:
                break
        if len(options) == count:
            raise p.error("FIELDS needs TERMINATED BY, [OPTIONALLY] ENCLOSED BY or ESCAPED BY")

    if p.word("LINES"):
        count = len(options)
        while True:
            token = p.peek()
            if p.word("STARTING"):
                once("lines_starting_by", token)
                p.expect_word("BY")
                options["lines_starting_by"] = p.expect_string("LINES STARTING BY")
            elif p.word("TERMINATED"):
                once("lines_terminated_by", token)
                p.expect_word("BY")
                options["lines_terminated_by"] = p.expect_string("LINES TERMINATED BY")
            else:
                break
        if len(options) == count:
            raise p.error("LINES needs STARTING BY or TERMINATED BY")

    if p.is_word(p.peek(), "IGNORE"):
        p.advance()
        token = p.peek()
        if token is None or token.token_type != TokenType.NUMBER or not token.text.isdigit():
            raise p.error("IGNORE needs a whole number of lines")
        options["ignore_lines"] = int(p.advance().text)
        p.expect_word("LINES", "ROWS")

    columns: list[str] = []
    if p.peek() is not None and p.peek().token_type == TokenType.L_PAREN:
        p.advance()
        while True:
            token = p.peek()
            if token is not None and token.token_type == TokenType.PARAMETER:
                p.advance()
                if token.text == "@":
                    columns.append("@" + p.expect_name("a user variable name after '@'"))
                else:  # a tokenizer that keeps '@name' in one token
                    columns.append(token.text if token.text.startswith("@") else "@" + token.text)
            else:
                columns.append(p.expect_name("a column name or @variable"))
            token = p.advance()
            if token.token_type == TokenType.R_PAREN:
                break
            if token.token_type != TokenType.COMMA:
                raise p.error("expected ',' or ')' in the column list", token)

    set_clauses: list[tuple[str, str]] = []
    if p.peek() is not None and p.peek().token_type == TokenType.SET:
        p.advance()
        while True:
            column = p.expect_name("a column name in SET")
            token = p.peek()
            if token is None or token.token_type not in (TokenType.EQ, TokenType.COLON_EQ):
                raise p.error("expected '=' after the SET column")
            p.advance()
            set_clauses.append((column, p.set_expression()))
            if p.peek() is not None and p.peek().token_type == TokenType.COMMA:
                p.advance()
                continue
            break

    if p.word("SKIP"):
        if skip_errors is not None:
            raise p.error("SKIP ... ERRORS given twice", p.tokens[p.i - 1])
        skip_errors = p.skip_errors()

    if p.word("FORMAT"):
        if "format" in options:
            raise p.error("FORMAT given twice", p.tokens[p.i - 1])
        options["format"] = p.file_format()

    if not p.at_end():
        token = p.peek()
        word = token.text.upper() if token.token_type not in _VALUE_TYPES else ""
        if word in _UNSUPPORTED_TRAILING:
            raise UnsupportedError(f"{_UNSUPPORTED_TRAILING[word]} is not supported")
        raise p.error("unexpected token (LOAD DATA clauses must come in MySQL's order: CHARACTER SET, "
                      "FIELDS, LINES, IGNORE n LINES, (columns), SET)")

    return LoadDataStatement(
        path=path, local=local, database=database, table=table, duplicates=duplicates,
        columns=tuple(columns), set_clauses=tuple(set_clauses), character_set=character_set,
        skip_errors=skip_errors, **options)
