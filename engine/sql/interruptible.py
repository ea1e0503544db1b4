"""statement_timeout (and KILL QUERY) while a statement is read: sqlglot's MySQL tokenizer and parser,
each checking the running statement's deadline every few thousand tokens.

The runners check the deadline at batch boundaries; before a plan runs, a huge statement (an IN list
of 500,000 values) spends its time here and in the binder, which checks it per expression
(``engine.core.deadline.check_statement_deadline``). A check costs a counter test per token and a clock read per
:data:`EVERY` tokens.
"""
from __future__ import annotations

import sqlglot
from sqlglot.errors import TokenError
from sqlglot.tokenizer_core import TokenizerCore
from sqlglot.tokens import TokenType

from engine.errors import Error
from engine.core.deadline import check_statement_deadline as check_deadline

EVERY = 4096            # tokens between two checks: ~1 ms of tokenizing or parsing

_MYSQL = sqlglot.Dialect.get_or_raise("mysql")


_add = TokenizerCore._add


class _CheckingCore(TokenizerCore):
    __slots__ = ()

    def _add(self, token_type, text=None) -> None:
        _add(self, token_type, text)
        if not len(self.tokens) % EVERY:
            check_deadline()


class _Tokenizer(_MYSQL.tokenizer_class):
    def _init_core(self) -> TokenizerCore:
        core = super()._init_core()
        core.__class__ = _CheckingCore        # the same object, its per-token step checking too
        return core


class _Parser(_MYSQL.parser_class):
    _next_check = EVERY         # the token index of the next check (a short statement never checks)

    def _parse_csv(self, parse_method, sep=TokenType.COMMA):
        """Lists (an IN list, VALUES rows, select lists) are where a statement gets long: each item
        parsed checks the deadline once every :data:`EVERY` tokens (not per token: the parser
        advances several times a token, and a check there cost 12% of a bulk INSERT's parse)."""
        def item():
            if self._index >= self._next_check:
                self._next_check = self._index + EVERY
                check_deadline()
            return parse_method()
        return super()._parse_csv(item, sep)


def tokenize(sql: str) -> list:
    """sqlglot's MySQL tokens of ``sql`` (its TokenError for text that does not tokenize)."""
    try:
        return _Tokenizer(dialect=_MYSQL).tokenize(sql)
    except TokenError as error:       # sqlglot wraps what its steps raise, our deadline's error too
        if isinstance(error.__cause__ or error.__context__, Error):
            raise (error.__cause__ or error.__context__) from None
        raise


def parse_tokens(tokens: list, sql: str) -> list:
    """sqlglot's MySQL parse of ``tokens`` (its ParseError for what does not parse)."""
    return _Parser(dialect=_MYSQL).parse(tokens, sql)
