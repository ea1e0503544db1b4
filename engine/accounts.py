"""MySQL accounts of a cluster: users, their password hashes and their database-level privileges.

Kept in ``data_dir/accounts.json`` (rewritten atomically on every change) or in memory without a
data_dir. Passwords are never stored: each user has the two verifiers MySQL's authentication plugins
check a client's scramble against — ``SHA1(SHA1(password))`` for ``mysql_native_password`` and
``SHA256(SHA256(password))`` for ``caching_sha2_password``'s fast path (both computable once, at
``CREATE USER``).

Privileges are granted per database (``GRANT SELECT, INSERT ON db.* TO u``) or on everything
(``*.*``); ``ALL`` covers every one. A user with ``ALL ON *.*`` administers: CREATE USER, DROP USER,
GRANT, KILL of others' connections. The embedding program (a session without a user) is not an account
and may do anything. ``information_schema`` is readable by every account.
"""
from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from engine.errors import AccessDeniedError, BindError



class AccountOperationError(BindError):
    """CREATE USER of an existing account, DROP USER of a missing one (MySQL's error 1396)."""

PRIVILEGES = ("SELECT", "INSERT", "UPDATE", "DELETE", "CREATE", "DROP", "ALTER", "INDEX", "FILE", "PROCESS")
PLUGINS = ("mysql_native_password", "caching_sha2_password")
FORMAT, VERSION = "canopy-accounts", 1


def native_verifier(password: str) -> str:
    return hashlib.sha1(hashlib.sha1(password.encode()).digest()).hexdigest()


def sha2_verifier(password: str) -> str:
    return hashlib.sha256(hashlib.sha256(password.encode()).digest()).hexdigest()


@dataclass
class Account:
    name: str
    plugin: str = "mysql_native_password"
    native: str = ""                 # SHA1(SHA1(password)) hex; "" for an empty password
    sha2: str = ""                   # SHA256(SHA256(password)) hex; "" for an empty password
    grants: dict[str, list[str]] = field(default_factory=dict)    # database (lower) or "*" -> privileges

    def allows(self, privilege: str, database: Optional[str]) -> bool:
        for scope in ("*", (database or "").lower()):
            granted = self.grants.get(scope, ())
            if "ALL" in granted or privilege in granted:
                return True
        return False

    def any_on(self, database: str) -> bool:
        return bool(self.grants.get("*")) or bool(self.grants.get(database.lower()))

    @property
    def administrator(self) -> bool:
        return "ALL" in self.grants.get("*", ())


class AccountStore:
    def __init__(self, path: Optional[Path] = None):
        self.path = Path(path) if path is not None else None
        self._lock = threading.Lock()
        self._accounts: dict[str, Account] = {}
        self.version = 0                  # bumped by every change (sessions re-check cached rights)
        if self.path is not None and self.path.exists():
            document = json.loads(self.path.read_text())
            if document.get("format") != FORMAT or document.get("version") != VERSION:
                raise BindError(f"{self.path} is not a Canopy accounts file of version {VERSION}")
            for entry in document["accounts"]:
                self._accounts[entry["name"]] = Account(**entry)

    # -- reading ----------------------------------------------------------------------------------
    def get(self, name: str) -> Optional[Account]:
        with self._lock:
            return self._accounts.get(name)

    def names(self) -> list[str]:
        with self._lock:
            return sorted(self._accounts)

    def __bool__(self) -> bool:
        return bool(self._accounts)

    # -- changes (each saved before it returns) --------------------------------------------------------
    def create(self, name: str, password: str, plugin: str = "mysql_native_password",
               if_not_exists: bool = False, grants: Optional[dict[str, list[str]]] = None) -> bool:
        if plugin not in PLUGINS:
            raise BindError(f"unknown authentication plugin {plugin!r}; use one of {', '.join(PLUGINS)}")
        with self._lock:
            if name in self._accounts:
                if if_not_exists:
                    return False
                raise AccountOperationError(f"operation CREATE USER failed for '{name}': the user exists")
            self._accounts[name] = Account(name, plugin, native_verifier(password) if password else "",
                                           sha2_verifier(password) if password else "", dict(grants or {}))
            self._save()
            return True

    def set_password(self, name: str, password: str) -> None:
        with self._lock:
            account = self._require(name)
            account.native = native_verifier(password) if password else ""
            account.sha2 = sha2_verifier(password) if password else ""
            self._save()

    def drop(self, name: str, if_exists: bool = False) -> bool:
        with self._lock:
            if name not in self._accounts:
                if if_exists:
                    return False
                raise AccountOperationError(f"operation DROP USER failed for '{name}': no such user")
            del self._accounts[name]
            self._save()
            return True

    def grant(self, name: str, privileges: list[str], database: str) -> None:
        with self._lock:
            account = self._require(name)
            scope = "*" if database == "*" else database.lower()
            current = set(account.grants.get(scope, ()))
            account.grants[scope] = sorted(current | set(privileges))
            self._save()

    def revoke(self, name: str, privileges: list[str], database: str) -> None:
        with self._lock:
            account = self._require(name)
            scope = "*" if database == "*" else database.lower()
            kept = set() if "ALL" in privileges else set(account.grants.get(scope, ())) - set(privileges)
            if kept:
                account.grants[scope] = sorted(kept)
            else:
                account.grants.pop(scope, None)
            self._save()

    def _require(self, name: str) -> Account:
        account = self._accounts.get(name)
        if account is None:
            raise BindError(f"unknown user '{name}'")
        return account

    def _save(self) -> None:
        self.version += 1
        if self.path is None:
            return
        from engine.storage.columnstore.files import write_atomic
        document = {"format": FORMAT, "version": VERSION,
                    "accounts": [vars(a) for _, a in sorted(self._accounts.items())]}
        write_atomic(self.path, json.dumps(document, indent=1).encode())


def accounts_of(runner) -> AccountStore:
    """The cluster's accounts (``data_dir/accounts.json`` when the runner has a data_dir)."""
    store = getattr(runner, "accounts", None)
    if store is None:
        data_path = runner.data_path
        store = AccountStore(Path(data_path) / "accounts.json" if data_path is not None else None)
        runner.accounts = store
    return store


def denied(user: str, host: str, privilege: str, database: Optional[str], table: Optional[str] = None
           ) -> AccessDeniedError:
    """MySQL's wording for a missing privilege."""
    if table is not None:
        return AccessDeniedError(f"{privilege} command denied to user '{user}'@'{host}' for table "
                                 f"'{database}.{table}'" if database else
                                 f"{privilege} command denied to user '{user}'@'{host}' for table '{table}'")
    return AccessDeniedError(f"access denied for user '{user}'@'{host}' to database '{database}'", scope="database")
