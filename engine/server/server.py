"""The Canopy MySQL server: one cluster (embedded or on Ray), many client connections.

:class:`CanopyServer` owns the runner, the accounts and a thread pool; mysql-mimic's asyncio server
accepts connections and hands each a :class:`~engine.server.wire.WireConnection` over its own engine
session. Shutdown (SIGTERM, SIGINT, :meth:`CanopyServer.stop`) stops accepting, cancels the statements
still running (their clients get MySQL's "query interrupted" error), closes every session, stops the
pipelines and shuts the runner down, which closes a data_dir cleanly.
"""
from __future__ import annotations

import asyncio
import errno
import logging
import signal
import ssl
from concurrent.futures import ThreadPoolExecutor
from typing import Optional

from mysql_mimic.server import MysqlServer
from mysql_mimic.constants import DEFAULT_SERVER_CAPABILITIES
from mysql_mimic.control import LocalControl, TooManyConnections
from mysql_mimic.types import Capabilities

from engine.accounts import AccountStore, accounts_of
from engine.errors import OperationalError
from engine.server.auth import Accounts
from engine.server.wire import WireConnection, WireSession

log = logging.getLogger("canopy.server")

CAPABILITIES = (DEFAULT_SERVER_CAPABILITIES | Capabilities.CLIENT_MULTI_STATEMENTS
                | Capabilities.CLIENT_MULTI_RESULTS | Capabilities.CLIENT_TRANSACTIONS
                | Capabilities.CLIENT_LOCAL_FILES | Capabilities.CLIENT_FOUND_ROWS)


class ServerStartError(OperationalError):
    """The server cannot start: its port is taken, no administrator was given, a bad certificate."""


class CanopyServer:
    """``runner``: a started runner (the server shuts it down on stop). ``admin``: (name, password) of
    an administrator to create or update; ``allow_anonymous``: any user name logs in without a password
    (with the embedding program's rights: for trusted local use only)."""

    def __init__(self, runner, *, host: str = "127.0.0.1", port: int = 3306, database: Optional[str] = None,
                 load_dir: Optional[str] = None, admin: Optional[tuple[str, str]] = None,
                 allow_anonymous: bool = False, tls: Optional[tuple[str, str]] = None,
                 workers: int = 64, max_connections: int = 1000, memory_limit=None):
        """``memory_limit``: the sessions' initial memory_limit (bytes or '4GB'; None: the default)."""
        from engine.exec.memory import parse_memory_limit
        self.runner = runner
        self.memory_limit = None if memory_limit is None else parse_memory_limit(memory_limit)
        self.host, self.port = host, port
        self.database = database
        self.load_dir = load_dir
        self.allow_anonymous = allow_anonymous
        self.accounts: AccountStore = accounts_of(runner)
        if admin is not None:
            name, password = admin
            if self.accounts.get(name) is None:
                self.accounts.create(name, password, grants={"*": ["ALL"]})
            else:
                self.accounts.set_password(name, password)
                self.accounts.grant(name, ["ALL"], "*")
        if not self.accounts and not allow_anonymous:
            raise ServerStartError("no accounts: give an administrator with --user NAME --password SECRET "
                                   "(or CANOPY_ROOT_PASSWORD), or start with --allow-anonymous")
        self.tls = _tls_context(*tls) if tls else None
        self.executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="canopy-wire")
        self.max_connections = max_connections
        self.loop: Optional[asyncio.AbstractEventLoop] = None
        self._mysql: Optional[MysqlServer] = None
        self._stopped: Optional[asyncio.Event] = None
        self._sessions: set[WireSession] = set()

    # -- sessions -------------------------------------------------------------------------------------
    def open_session(self, user: str, database: Optional[str], host: str, connection_id: int):
        """The engine session of a client that just logged in as ``user`` (runs on the loop: cheap)."""
        from engine.session import Session
        account_user = None if self.allow_anonymous and self.accounts.get(user) is None else user
        session = Session(self.runner, database=database or None, load_dir=self.load_dir, user=account_user,
                          host=host, create_database=False, connection_id=connection_id,
                          memory_limit=self.memory_limit)
        if database and account_user is not None:
            try:
                from sqlglot import exp
                session.authorize(exp.Use(this=exp.to_identifier(database)))
            except Exception:
                session.close()
                raise
        return session

    def _session_factory(self) -> WireSession:
        session = WireSession(self)
        self._sessions.add(session)
        return session

    # -- lifecycle ------------------------------------------------------------------------------------
    async def start(self) -> None:
        """Bind the port (``port=0``: any free one; :attr:`port` tells which)."""
        self.loop = asyncio.get_running_loop()
        self._stopped = asyncio.Event()
        self._mysql = _MysqlServer(session_factory=self._session_factory, capabilities=CAPABILITIES,
                                   identity_provider=Accounts(self.accounts, self.allow_anonymous),
                                   ssl=self.tls, control=_Control(self.runner))
        self._mysql.max_connections = self.max_connections
        try:
            await self._mysql.start_server(host=self.host, port=self.port, reuse_address=True)
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                raise ServerStartError(f"port {self.port} on {self.host} is already in use; stop what is "
                                       f"listening there or choose another with --port") from None
            raise ServerStartError(f"cannot listen on {self.host}:{self.port}: {error.strerror}") from None
        self.port = self._mysql.sockets()[0].getsockname()[1]
        log.info("Canopy server listening on %s:%s", self.host, self.port)

    async def serve(self) -> None:
        """Start, serve until :meth:`stop` or SIGTERM / SIGINT, then shut down cleanly."""
        await self.start()
        for signum in (signal.SIGTERM, signal.SIGINT):
            try:
                self.loop.add_signal_handler(signum, self.stop)
            except (NotImplementedError, RuntimeError):   # not the main thread (tests run it in one)
                pass
        try:
            await self._stopped.wait()
        finally:
            await self.shutdown()

    def stop(self) -> None:
        """Ask the server to stop (from the loop or any thread)."""
        if self.loop is not None and self._stopped is not None:
            self.loop.call_soon_threadsafe(self._stopped.set)

    async def shutdown(self) -> None:
        log.info("shutting down: closing %d connections", len(self._sessions))
        if self._mysql is not None:
            self._mysql.close()
            for connection in list(self._mysql.control._connections.values()):   # noqa: SLF001
                connection.kill()
            await self._mysql.wait_closed()
        for session in list(self._sessions):
            if session.engine is not None:
                session.engine.kill()
        self.executor.shutdown(wait=True, cancel_futures=True)
        from engine.pipelines import shutdown_pipelines
        shutdown_pipelines(self.runner)
        self.runner.shutdown()
        log.info("stopped")


class _Control(LocalControl):
    """Connection ids from the cluster's session registry: the id a client reads in the handshake
    (and sends in ``KILL QUERY`` on Ctrl-C) is its session's ``CONNECTION_ID()``."""

    def __init__(self, runner):
        super().__init__()
        from engine.sessions import registry_of
        self.registry = registry_of(runner)

    def _new_connection_id(self) -> int:
        return self.registry.reserve()


class _MysqlServer(MysqlServer):
    """mysql-mimic's server building :class:`WireConnection` (its own callback builds its base class)."""

    max_connections = 1000

    async def _client_connected_cb(self, reader, writer) -> None:
        from mysql_mimic.stream import MysqlStream
        stream = MysqlStream(reader, writer)
        session = self.session_factory()
        connection = WireConnection(stream=stream, session=session, control=self.control,
                                    server_capabilities=self.capabilities,
                                    identity_provider=self.identity_provider, ssl=self.ssl)
        try:
            if len(self.control._connections) >= self.max_connections:     # noqa: SLF001
                raise TooManyConnections()
            connection.connection_id = await self.control.add(connection)
        except TooManyConnections:
            await stream.write(connection.error(msg="Too many connections", code=1040))
            writer.close()
            return
        try:
            await connection.start()
        finally:
            writer.close()
            await self.control.remove(connection.connection_id)
            session.server._sessions.discard(session)     # noqa: SLF001


def _tls_context(certificate: str, key: str) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(certificate, key)
    except (OSError, ssl.SSLError) as error:
        raise ServerStartError(f"cannot load the TLS certificate {certificate} / key {key}: {error}") from None
    return context
