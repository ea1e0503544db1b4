"""SQL text -> statements: split on ``;``, recognise what sqlglot cannot parse, map its errors.

sqlglot (MySQL dialect) parses everything except three SingleStore/MySQL spellings this module handles
on the token stream first:

* ``CREATE REFERENCE TABLE`` — ``REFERENCE`` is removed and recorded;
* ``SHARD KEY [name] (cols)`` and ``SORT KEY [name] (cols)`` inside ``CREATE TABLE`` — removed and
  recorded (sqlglot would read them as columns named SHARD/SORT);
* ``LOAD DATA ... INFILE`` — handed whole to :mod:`engine.load.load_data`;
* ``CREATE / ALTER / START / STOP / DROP PIPELINE`` and ``SHOW PIPELINES`` — to :mod:`engine.pipelines.statements`;
* ``REPLACE INTO t ...`` — parsed as INSERT and marked REPLACE.

No sqlglot object leaves ``engine/sql`` and ``engine/plan``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Optional

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError as SqlglotParseError
from sqlglot.errors import TokenError
from sqlglot.tokens import Token, TokenType

from engine.errors import ParseError, UnsupportedError
from engine.sql import interruptible
from engine.sql.accounts import is_account_statement, parse_account_statement

DIALECT = "mysql"


@dataclass(frozen=True)
class TableOptions:
    """SingleStore table options cut out of a CREATE TABLE before sqlglot parses it."""

    reference: bool = False
    shard_key: Optional[tuple[str, ...]] = None     # None: not given; (): SHARD KEY () (keyless)
    sort_key: tuple[str, ...] = ()


@dataclass
class Statement:
    """One statement: its sqlglot tree (or a LoadDataStatement), plus what was cut out before parsing."""

    node: Any
    text: str
    table_options: TableOptions = field(default_factory=TableOptions)


def tokenize(sql: str) -> list[Token]:
    try:
        return interruptible.tokenize(sql)
    except TokenError:
        raise _unterminated(sql) from None


def _unterminated(sql: str) -> ParseError:
    """sqlglot's TokenError carries no position: find the quote that is never closed."""
    i = 0
    while i < len(sql):
        c = sql[i]
        if c in ("'", '"', "`"):
            j = i + 1
            while j < len(sql):
                if sql[j] == "\\" and c != "`":
                    j += 2
                    continue
                if sql[j] == c:
                    if j + 1 < len(sql) and sql[j + 1] == c:
                        j += 2
                        continue
                    break
                j += 1
            if j >= len(sql):
                line = sql.count("\n", 0, i) + 1
                column = i - (sql.rfind("\n", 0, i) + 1) + 1
                what = {"'": "string literal", '"': "quoted string", "`": "quoted identifier"}[c]
                return ParseError(f"unterminated {what}", line, column, sql[i:i + 20])
            i = j + 1
            continue
        i += 1
    return ParseError("the statement could not be tokenized")


_MISSING = re.compile(r"Required keyword: '(\w+)' missing for <class '[\w.]*?(\w+)'>")


def _plain_message(message: str) -> str:
    """sqlglot names its own classes when a clause ends early; say what SQL is missing instead."""
    match = _MISSING.search(message)
    if match:
        return f"incomplete {match.group(2).upper()}: an expression is missing"
    return re.sub(r"<class '[\w.]*?(\w+)'>", lambda m: m.group(1).upper(), message)


def split_statements(sql: str) -> list[str]:
    """The statements of ``sql`` without their ``;`` (empty statements dropped)."""
    return [sql[start:end] for start, end, _ in _split(sql, tokenize(sql))]


def _split(sql: str, tokens: list[Token]) -> list[tuple[int, int, list[Token]]]:
    """(start, end, tokens) of each non-empty statement; offsets index ``sql``."""
    pieces, start, current = [], 0, []
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            if current:
                pieces.append((start, token.start, current))
            start, current = token.end + 1, []
        else:
            current.append(token)
    if current:
        pieces.append((start, len(sql), current))
    return pieces


def parse(sql: str) -> list[Statement]:
    """Parse every statement of ``sql``; raise :class:`ParseError` naming line, column and token.

    The text is tokenized once; sqlglot's parser reads each statement's tokens (a 20,000-row INSERT
    costs one tokenization, not one per step). Only a CREATE statement is re-tokenized, after its
    SingleStore options are cut out.
    """
    statements = []
    for start, end, tokens in _split(sql, tokenize(sql)):
        text = sql[start:end]
        words = [t.text.upper() for t in tokens[:2]]
        if words == ["LOAD", "DATA"]:
            from engine.load.load_data import parse_load_data
            statements.append(Statement(parse_load_data(text), text))
        elif words[0] in ("EXPLAIN", "PROFILE", "DESCRIBE", "DESC") and len(tokens) > 1 and _is_pipeline(tokens[1:]):
            # refused here, not handed to sqlglot: its fallback logs the statement's text, CREDENTIALS included
            raise UnsupportedError(f"{words[0]} of a pipeline statement")
        elif words[0] == "PROFILE" and len(tokens) > 1:     # SingleStore's PROFILE <query>: EXPLAIN ANALYZE
            query = _checked(lambda: _parse_tokens(tokens[1:], sql))
            statements.append(Statement(exp.Describe(this=query, style="ANALYZE"), text))
        elif is_account_statement([t.text.upper() for t in tokens[:2]]):
            statements.append(Statement(parse_account_statement(tokens), text))
        elif words[0] == "OPTIMIZE":
            statements.append(Statement(parse_optimize_table(tokens), text))
        elif words[0] in ("CREATE", "START", "STOP", "DROP", "SHOW", "ALTER") and _is_pipeline(tokens):
            from engine.pipelines.statements import parse_pipeline_statement
            statements.append(Statement(parse_pipeline_statement(text), text))
        elif words[0] == "REPLACE" and len(tokens) > 1:
            # MySQL's REPLACE [INTO] t ...: sqlglot reads it as a Command; it is INSERT with REPLACE
            # semantics (engine.load.keys.replace_rows). "INSERT " keeps error columns where they were.
            node = parse_one(sql[start:tokens[0].start] + "INSERT " + sql[tokens[0].end + 1:end])
            if not isinstance(node, exp.Insert) or node.args.get("ignore") or node.args.get("conflict"):
                raise UnsupportedError("REPLACE takes INTO table VALUES / SELECT, without IGNORE or ON DUPLICATE KEY")
            node.set("alternative", "REPLACE")
            statements.append(Statement(node, text))
        elif words[0] == "SAVEPOINT" or words == ["RELEASE", "SAVEPOINT"]:
            statements.append(Statement(parse_savepoint(tokens), text))
        elif words[0] == "RENAME":
            statements.append(Statement(parse_rename_tables(tokens), text))
        elif words[0] == "CREATE":
            cleaned, options = extract_table_options(text)
            statements.append(Statement(parse_one(cleaned), text, options))
        else:
            check_lists(tokens)
            statements.append(Statement(_checked(lambda: _parse_tokens(tokens, sql)), text))
    if not statements:
        raise ParseError("empty statement")
    return statements


@dataclass(frozen=True)
class OptimizeTable:
    """``OPTIMIZE [LOCAL | NO_WRITE_TO_BINLOG] TABLE t[, db.t2] [FULL | FLUSH]`` (sqlglot reads it as
    a Command): ``tables`` as (database or None, name)."""

    tables: tuple[tuple[Optional[str], str], ...]


def parse_optimize_table(tokens: list[Token]) -> OptimizeTable:
    if len(tokens) == 2 and tokens[1].token_type == TokenType.STRING:
        tokens = tokens[:1] + tokenize(tokens[1].text)      # the tokenizer reads OPTIMIZE as a command
    words = [t.text for t in tokens]
    i = 1
    if i < len(words) and words[i].upper() in ("LOCAL", "NO_WRITE_TO_BINLOG"):
        i += 1
    if i >= len(words) or words[i].upper() != "TABLE":
        raise ParseError("OPTIMIZE needs TABLE and a table name", tokens[0].line, tokens[0].col)
    names: list[list[str]] = [[]]
    for token in tokens[i + 1:]:
        if token.token_type == TokenType.COMMA:
            names.append([])
        elif token.token_type != TokenType.DOT:
            names[-1].append(token.text)
    if names[-1] and names[-1][-1].upper() in ("FULL", "FLUSH") and len(names[-1]) > 1:
        names[-1].pop()
    if any(len(n) not in (1, 2) for n in names):
        raise ParseError("OPTIMIZE TABLE takes a list of table names", tokens[0].line, tokens[0].col)
    return OptimizeTable(tuple((n[0], n[1]) if len(n) == 2 else (None, n[0]) for n in names))


@dataclass(frozen=True)
class SavepointStatement:
    """``SAVEPOINT name`` (action "SAVEPOINT") or ``RELEASE SAVEPOINT name`` (action "RELEASE")."""

    action: str
    name: str


def parse_savepoint(tokens: list[Token]) -> SavepointStatement:
    action = tokens[0].text.upper()
    rest = tokens[1:] if action == "SAVEPOINT" else tokens[2:]
    if len(rest) != 1:
        raise ParseError(f"{'SAVEPOINT' if action == 'SAVEPOINT' else 'RELEASE SAVEPOINT'} takes one name",
                         tokens[0].line, tokens[0].col)
    return SavepointStatement(action, rest[0].text)


@dataclass(frozen=True)
class RenameTables:
    """``RENAME TABLE a TO b[, db.c TO db.d]`` (sqlglot reads it as a Command): ``pairs`` of
    ((database or None, name), (database or None, name))."""

    pairs: tuple


def parse_rename_tables(tokens: list[Token]) -> RenameTables:
    if len(tokens) == 2 and tokens[1].token_type == TokenType.STRING:
        tokens = tokens[:1] + tokenize(tokens[1].text)      # the tokenizer reads RENAME as a command
    if len(tokens) < 2 or tokens[1].text.upper() != "TABLE":
        raise UnsupportedError("RENAME other than RENAME TABLE")
    pairs, current = [], [[]]
    for token in tokens[2:]:
        if token.token_type == TokenType.COMMA:
            pairs.append(current)
            current = [[]]
        elif token.text.upper() == "TO" and len(current) == 1:
            current.append([])
        elif token.token_type != TokenType.DOT:
            current[-1].append(token.text)
    pairs.append(current)
    if any(len(p) != 2 or len(p[0]) not in (1, 2) or len(p[1]) not in (1, 2) for p in pairs):
        raise ParseError("RENAME TABLE takes a list of old_name TO new_name", tokens[0].line, tokens[0].col)

    def name(parts):
        return (parts[0], parts[1]) if len(parts) == 2 else (None, parts[0])
    return RenameTables(tuple((name(old), name(new)) for old, new in pairs))


# What may not follow a list's comma, nor SELECT itself: sqlglot accepts ``SELECT a, FROM t``,
# ``SELECT FROM t`` and ``FROM t,`` (an empty list item is dropped); MySQL rejects them.
_LIST_ENDS = {TokenType.FROM, TokenType.WHERE, TokenType.GROUP_BY, TokenType.HAVING, TokenType.ORDER_BY,
              TokenType.LIMIT, TokenType.R_PAREN, TokenType.UNION, TokenType.INTERSECT, TokenType.EXCEPT,
              TokenType.COMMA, TokenType.INTO, TokenType.WINDOW}
_SELECT_MODIFIERS = {"DISTINCT", "DISTINCTROW", "ALL"}


def check_lists(tokens: list[Token]) -> None:
    """Raise :class:`ParseError` at an empty select list or an empty item of a comma-separated list."""
    for i, token in enumerate(tokens):
        following = tokens[i + 1] if i + 1 < len(tokens) else None
        if token.token_type == TokenType.COMMA and (following is None or following.token_type in _LIST_ENDS):
            where = f"before {following.text.upper()!r}" if following is not None else "at the end"
            raise ParseError(f"an expression is missing after ',' {where}", token.line, token.col, token.text)
        if token.token_type == TokenType.SELECT:
            j = i + 1
            while j < len(tokens) and tokens[j].text.upper() in _SELECT_MODIFIERS:
                j += 1
            if j == len(tokens) or tokens[j].token_type in _LIST_ENDS:
                raise ParseError("SELECT needs a select list", token.line, token.col, token.text)


def _is_pipeline(tokens: list[Token]) -> bool:
    from engine.pipelines.statements import is_pipeline_statement
    return is_pipeline_statement(tokens)


def _parse_tokens(tokens: list[Token], sql: str) -> Optional[exp.Expression]:
    parsed = interruptible.parse_tokens(tokens, sql)
    if parsed and parsed[0] is not None:
        parsed[0].meta["sql"] = sql     # refusals quote names as typed (engine/plan/sql_words.py)
    return parsed[0] if parsed else None


def parse_one(text: str) -> exp.Expression:
    return _checked(lambda: sqlglot.parse_one(text, read=DIALECT))


def _checked(parse_call) -> exp.Expression:
    try:
        node = parse_call()
    except SqlglotParseError as error:
        detail = error.errors[0] if error.errors else {}
        message = _plain_message(str(detail.get("description") or error).split("\n")[0])
        raise ParseError(message, detail.get("line"), detail.get("col"),
                         detail.get("highlight") or None) from None
    if node is None:
        raise ParseError("empty statement")
    if isinstance(node, exp.Command):
        rest = node.expression.name if isinstance(node.expression, exp.Literal) else str(node.expression or "")
        words = f"{node.this} {rest.strip()}".split()
        raise UnsupportedError(f"statement {' '.join(words[:3]).upper()} ... is not supported")
    return node


def extract_table_options(text: str) -> tuple[str, TableOptions]:
    """Cut REFERENCE, SHARD KEY (...) and SORT KEY (...) out of a CREATE TABLE statement."""
    tokens = tokenize(text)
    if not tokens or tokens[0].text.upper() != "CREATE":
        return text, TableOptions()
    cuts: list[tuple[int, int]] = []           # character spans to remove
    reference = False
    shard_key: Optional[tuple[str, ...]] = None
    sort_key: tuple[str, ...] = ()
    i = 1
    # CREATE [ROWSTORE|COLUMNSTORE] [REFERENCE] TABLE
    while i < len(tokens) and tokens[i].text.upper() in ("ROWSTORE", "COLUMNSTORE", "REFERENCE"):
        if tokens[i].text.upper() == "REFERENCE":
            reference = True
        cuts.append((tokens[i].start, tokens[i].end + 1))
        i += 1
    depth = 0
    while i < len(tokens):
        token = tokens[i]
        if token.token_type == TokenType.L_PAREN:
            depth += 1
        elif token.token_type == TokenType.R_PAREN:
            depth -= 1
        elif depth == 1 and token.text.upper() in ("SHARD", "SORT") and i + 1 < len(tokens) \
                and tokens[i + 1].text.upper() == "KEY":
            j = i + 2
            if j < len(tokens) and tokens[j].token_type != TokenType.L_PAREN:
                j += 1                                  # an optional key name
            if j >= len(tokens) or tokens[j].token_type != TokenType.L_PAREN:
                raise ParseError(f"{token.text.upper()} KEY needs a parenthesised column list",
                                 token.line, token.col, token.text)
            names, k = [], j + 1
            while k < len(tokens) and tokens[k].token_type != TokenType.R_PAREN:
                if tokens[k].token_type != TokenType.COMMA:
                    names.append(tokens[k].text)
                k += 1
            if k >= len(tokens):
                raise ParseError(f"unterminated {token.text.upper()} KEY column list", token.line, token.col)
            end = tokens[k].end + 1
            # swallow the comma before the clause (or after it, when it comes first)
            previous = tokens[i - 1]
            start = token.start
            if previous.token_type == TokenType.COMMA:
                start = previous.start
            elif k + 1 < len(tokens) and tokens[k + 1].token_type == TokenType.COMMA:
                end = tokens[k + 1].end + 1
            cuts.append((start, end))
            if token.text.upper() == "SHARD":
                shard_key = tuple(names)
            else:
                sort_key = tuple(names)
            i = k + 1
            continue
        i += 1
    if not cuts:
        return text, TableOptions()
    out, position = [], 0
    for start, end in sorted(cuts):
        out.append(text[position:start])
        out.append(" ")
        position = end
    out.append(text[position:])
    return "".join(out), TableOptions(reference, shard_key, sort_key)

