"""Account statements (sqlglot reads them as opaque commands, so they are parsed here from tokens):

* ``CREATE USER [IF NOT EXISTS] user [IDENTIFIED [WITH plugin] BY 'password']``
* ``ALTER USER user IDENTIFIED [WITH plugin] BY 'password'``
* ``DROP USER [IF EXISTS] user [, user ...]``
* ``GRANT priv [, priv ...] ON {*.* | db.*} TO user [, user ...] [WITH GRANT OPTION]``
* ``REVOKE priv [, priv ...] ON {*.* | db.*} FROM user [, user ...]``
* ``SHOW GRANTS [FOR user]``

``user`` is ``name``, ``'name'`` or ``'name'@'host'``; accounts match a name from any host, so a host
other than ``%`` is refused rather than silently widened. Table-level grants are refused too.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from sqlglot.tokens import Token, TokenType

from engine.accounts import PLUGINS, PRIVILEGES
from engine.errors import ParseError, UnsupportedError


@dataclass(frozen=True)
class CreateUser:
    name: str
    password: str
    plugin: str
    if_not_exists: bool


@dataclass(frozen=True)
class AlterUser:
    name: str
    password: str
    plugin: Optional[str]


@dataclass(frozen=True)
class DropUser:
    names: tuple[str, ...]
    if_exists: bool


@dataclass(frozen=True)
class Grant:
    privileges: tuple[str, ...]
    database: str                      # "*" for *.*
    names: tuple[str, ...]
    revoke: bool = False


@dataclass(frozen=True)
class ShowGrants:
    name: Optional[str]                # None: the current user


def is_account_statement(words: list[str]) -> bool:
    return (words[:1] in (["GRANT"], ["REVOKE"]) or words[1:2] == ["USER"] and words[0] in ("CREATE", "ALTER", "DROP")
            or words[:2] == ["SHOW", "GRANTS"])


def parse_account_statement(tokens: list[Token]):
    p = _Tokens(tokens)
    first = p.word()
    if first == "SHOW":
        p.expect("GRANTS")
        name = p.user() if p.accept("FOR") else None
        p.end()
        return ShowGrants(name)
    if first in ("CREATE", "ALTER", "DROP"):
        p.expect("USER")
        if first == "DROP":
            if_exists = p.accept("IF") and p.expect("EXISTS")
            names = [p.user()]
            while p.accept_comma():
                names.append(p.user())
            p.end()
            return DropUser(tuple(names), bool(if_exists))
        if_not_exists = first == "CREATE" and p.accept("IF") and p.expect("NOT") and p.expect("EXISTS")
        name = p.user()
        plugin, password = None, ""
        if p.accept("IDENTIFIED"):
            if p.accept("WITH"):
                plugin = p.name().lower()
                if plugin not in PLUGINS:
                    raise UnsupportedError(f"authentication plugin {plugin!r}; use one of {', '.join(PLUGINS)}")
            p.expect("BY")
            password = p.string()
        elif first == "ALTER":
            raise UnsupportedError("ALTER USER without IDENTIFIED BY")
        p.end()
        if first == "CREATE":
            return CreateUser(name, password, plugin or "mysql_native_password", bool(if_not_exists))
        return AlterUser(name, password, plugin)
    # GRANT / REVOKE
    privileges = [_privilege(p)]
    while p.accept_comma():
        privileges.append(_privilege(p))
    p.expect("ON")
    database = p.name()
    if not p.accept_dot() or not p.accept_star():
        raise UnsupportedError(f"{first} on a table: Canopy grants privileges per database (db.*) or on *.*")
    p.expect("TO" if first == "GRANT" else "FROM")
    names = [p.user()]
    while p.accept_comma():
        names.append(p.user())
    if first == "GRANT" and p.accept("WITH"):
        p.expect("GRANT")
        p.expect("OPTION")
        raise UnsupportedError("WITH GRANT OPTION: only administrators (ALL ON *.*) grant privileges")
    p.end()
    return Grant(tuple(privileges), database, tuple(names), revoke=first == "REVOKE")


def _privilege(p: "_Tokens") -> str:
    word = p.word()
    if word == "ALL":
        p.accept("PRIVILEGES")
        return "ALL"
    if word not in PRIVILEGES:
        raise UnsupportedError(f"privilege {word}; Canopy grants ALL, {', '.join(PRIVILEGES)}")
    return word


class _Tokens:
    def __init__(self, tokens: list[Token]):
        self.tokens, self.i = tokens, 0

    def _peek(self) -> Optional[Token]:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def _error(self, what: str) -> ParseError:
        token = self._peek() or self.tokens[-1]
        return ParseError(f"expected {what}", token.line, token.col, token.text)

    def word(self) -> str:
        token = self._peek()
        if token is None:
            raise self._error("a keyword")
        self.i += 1
        return token.text.upper()

    def accept(self, word: str) -> bool:
        token = self._peek()
        if token is not None and token.token_type != TokenType.STRING and token.text.upper() == word:
            self.i += 1
            return True
        return False

    def expect(self, word: str) -> bool:
        if not self.accept(word):
            raise self._error(word)
        return True

    def _accept_type(self, token_type) -> bool:
        token = self._peek()
        if token is not None and token.token_type == token_type:
            self.i += 1
            return True
        return False

    def accept_comma(self) -> bool:
        return self._accept_type(TokenType.COMMA)

    def accept_dot(self) -> bool:
        return self._accept_type(TokenType.DOT)

    def accept_star(self) -> bool:
        return self._accept_type(TokenType.STAR)

    def name(self) -> str:
        token = self._peek()
        if token is None:
            raise self._error("a name")
        if token.token_type == TokenType.STAR:
            self.i += 1
            return "*"
        self.i += 1
        return token.text

    def string(self) -> str:
        token = self._peek()
        if token is None or token.token_type != TokenType.STRING:
            raise self._error("a quoted string")
        self.i += 1
        return token.text

    def user(self) -> str:
        name = self.name()
        token = self._peek()
        host = None
        if token is not None and token.text.startswith("@"):      # name@host read as one parameter
            self.i += 1
            host = token.text[1:] or self.name()
        elif token is not None and token.token_type == TokenType.PARAMETER:
            self.i += 1
            host = self.name()
        if host not in (None, "%", ""):
            raise UnsupportedError(f"account '{name}'@'{host}': Canopy matches accounts by name from any host "
                                   "('%')")
        return name

    def end(self) -> None:
        if self._peek() is not None:
            raise self._error("the end of the statement")
