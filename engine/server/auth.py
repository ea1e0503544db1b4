"""Authentication of MySQL clients against :mod:`engine.accounts`.

Two plugins, as MySQL 8 offers them: ``mysql_native_password`` (the client proves it knows the
password by ``SHA1(password) XOR SHA1(nonce + SHA1(SHA1(password)))``) and ``caching_sha2_password``
(``SHA256(password) XOR SHA256(SHA256(SHA256(password)) + nonce)``). Both check the scramble against
the stored verifier, so no password is kept and none crosses the wire; caching_sha2_password always
succeeds on its "fast path" (MySQL's cache of verifiers is, here, the accounts file), so it needs
neither TLS nor RSA keys. An unknown user is answered exactly as a wrong password (1045), with a
scramble checked against a random verifier, so the reply says nothing about which names exist.
"""
from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Optional

from mysql_mimic import utils
from mysql_mimic.auth import AuthInfo, AuthPlugin, AuthState, Forbidden, IdentityProvider, Success, User

from engine.accounts import AccountStore

FAST_AUTH_SUCCESS = b"\x03"


class FastAuthName(str):
    """The user name of a caching_sha2_password login: the connection sends the fast-auth-success
    packet before its OK (engine.server.wire.WireConnection.ok)."""


def _denied(auth_info: AuthInfo) -> Forbidden:
    using = "YES" if auth_info.data else "NO"
    return Forbidden(f"Access denied for user '{auth_info.username}'@'%' (using password: {using})")


class _ScramblePlugin(AuthPlugin):
    """Shared shape: a 20-byte nonce (reused from the handshake when the client answered it), then
    one scramble checked against the user's verifier."""

    verifier_field = ""

    async def auth(self, auth_info: Optional[AuthInfo] = None) -> AuthState:
        if auth_info and auth_info.handshake_plugin_name == self.name and auth_info.handshake_auth_data:
            nonce = auth_info.handshake_auth_data.rstrip(b"\x00")
        else:
            nonce = utils.nonce(20)
            auth_info = yield nonce + b"\x00"
        user = auth_info.user
        verifier = user.auth_string or ""
        if user.auth_plugin == "anonymous":               # the server runs with --allow-anonymous
            yield Success(user.name)
        elif not verifier and not auth_info.data.rstrip(b"\x00"):   # an account with no password
            yield Success(user.name)
        elif verifier and self.matches(bytes.fromhex(verifier), auth_info.data, nonce):
            # caching_sha2_password announces its fast path (0x03) right before the OK; mysql-mimic
            # would wait for a reply to it, so the connection writes it (see FastAuthName)
            yield Success(FastAuthName(user.name) if self.name == "caching_sha2_password" else user.name)
        else:
            yield _denied(auth_info)

    def matches(self, verifier: bytes, scramble: bytes, nonce: bytes) -> bool:
        raise NotImplementedError


class NativePassword(_ScramblePlugin):
    name = "mysql_native_password"
    client_plugin_name = "mysql_native_password"

    def matches(self, verifier: bytes, scramble: bytes, nonce: bytes) -> bool:
        if len(scramble) != 20:
            return False
        sha1_password = utils.xor(scramble, hashlib.sha1(nonce + verifier).digest())
        return hmac.compare_digest(hashlib.sha1(sha1_password).digest(), verifier)


class CachingSha2Password(_ScramblePlugin):
    name = "caching_sha2_password"
    client_plugin_name = "caching_sha2_password"

    def matches(self, verifier: bytes, scramble: bytes, nonce: bytes) -> bool:
        if len(scramble) != 32:
            return False
        sha256_password = utils.xor(scramble, hashlib.sha256(verifier + nonce).digest())
        return hmac.compare_digest(hashlib.sha256(sha256_password).digest(), verifier)


class Accounts(IdentityProvider):
    """mysql-mimic's view of the accounts: each user with its plugin and that plugin's verifier."""

    def __init__(self, store: AccountStore, allow_anonymous: bool = False):
        self.store = store
        self.allow_anonymous = allow_anonymous
        self._plugins = [NativePassword(), CachingSha2Password()]

    def get_plugins(self):
        return self._plugins

    async def get_user(self, username: str) -> Optional[User]:
        account = self.store.get(username)
        if account is None:
            if self.allow_anonymous:
                return User(name=username, auth_string=None, auth_plugin="anonymous")
            # answered like a wrong password: a random verifier no scramble matches
            return User(name=username, auth_string=secrets.token_hex(20), auth_plugin="unknown")
        verifier = account.sha2 if account.plugin == "caching_sha2_password" else account.native
        return User(name=username, auth_string=verifier or None, auth_plugin=account.plugin)

    def get_plugin(self, name: str) -> Optional[AuthPlugin]:
        if name in ("anonymous", "unknown"):
            return self._plugins[0]
        return super().get_plugin(name)
