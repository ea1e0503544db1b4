"""One MySQL client connection: mysql-mimic's protocol handling around one Canopy session.

mysql-mimic reads and writes packets on the asyncio loop; every engine call runs on the server's thread
pool (:meth:`WireSession.call`), so a long query never blocks other clients. While a statement runs the
connection watches its socket: a client that goes away has its statement cancelled (the session's
KILL QUERY path) instead of running on for nobody.

What this layer adds over mysql-mimic's own connection (:class:`WireConnection`):

* results from the engine: column definitions with MySQL's types, lengths, decimals and flags; OK packets
  with affected rows and the warning count; errors with MySQL's code and SQLSTATE
  (:mod:`engine.server.errors`);
* multi-statement batches, only when the client asked for them (CLIENT_MULTI_STATEMENTS, MySQL's opt-in):
  one result per statement, flagged SERVER_MORE_RESULTS_EXISTS, stopping at the first error;
* prepared statements whose parameters are bound by the engine as values (mysql-mimic pastes them into
  the SQL text), results in the binary protocol;
* ``LOAD DATA LOCAL INFILE`` through the client (only when it allows local files), and server-side
  ``LOAD DATA INFILE`` only inside ``--load-dir``;
* a login that fails ends the connection (mysql-mimic would go on reading commands).

Everything a client asks — ``SELECT @@version_comment``, ``SET NAMES``, ``SHOW VARIABLES``, ``KILL`` — is
answered by the engine session, the same code an in-process DB-API connection runs.
"""
from __future__ import annotations

import asyncio
import io
import logging
import os
import shutil
import tempfile
from typing import TYPE_CHECKING, Any, Optional

from mysql_mimic import packets, types
from mysql_mimic.connection import Connection
from mysql_mimic.constants import KillKind
from mysql_mimic.errors import MysqlError
from mysql_mimic.session import BaseSession
from mysql_mimic.stream import ConnectionClosed
from mysql_mimic.types import Capabilities, ServerStatus
import pyarrow as pa

from engine import collation
from engine.errors import AccessDeniedError, Error, UnsupportedError
from engine.exec import statement_warnings
from engine.result import Result
from engine.server.auth import FAST_AUTH_SUCCESS, FastAuthName
from engine.server.errors import SECURE_FILE_PRIV, mysql_error
from engine.server.params import check_count, parameter_count, read_execute_params
from engine.server.results import binary_rows, text_rows, wire_columns
from engine.sql.parameters import qmark_to_pyformat
from engine.sql.parser import split_statements

if TYPE_CHECKING:
    from engine.server.server import CanopyServer
    from engine.session import Session

log = logging.getLogger("canopy.server")
DISCONNECT_POLL_S = 0.1
SMALL_RESULT_VALUES = 256        # results up to this many values are encoded without a thread hand-off
_MAX_HEADERS = 256               # result headers a connection keeps (WireConnection._result_header)


class LoginFailed(Exception):
    """Authentication failed: the error packet is written, the connection closes."""


class WireVariables:
    """What mysql-mimic reads and sets (the character sets, ``version``, ``external_user``), kept in
    the engine session's variables once there is one, in defaults before login."""

    def __init__(self) -> None:
        from engine.sql.variables import Variables
        self.engine_variables = Variables()
        self.external_user: Optional[str] = None

    def get(self, name: str) -> Any:
        if name == "external_user":
            return self.external_user
        return self.engine_variables.get(name)

    def set(self, name: str, value: Any, force: bool = False) -> None:
        if name == "external_user":
            self.external_user = value
            return
        self.engine_variables.set(name, value, force=True)


class WireSession(BaseSession):
    """mysql-mimic's session interface over one :class:`engine.session.Session` (created at login)."""

    def __init__(self, server: "CanopyServer"):
        self.server = server
        self.variables = WireVariables()
        self.database: Optional[str] = None
        self._username: Optional[str] = None
        self.engine: Optional["Session"] = None
        self.connection: Optional["WireConnection"] = None

    # mysql-mimic sets the username once the client proved its password: the engine session starts then
    @property
    def username(self) -> Optional[str]:
        return self._username

    @username.setter
    def username(self, name: Optional[str]) -> None:
        if isinstance(name, FastAuthName) and self.connection is not None:
            self.connection.fast_auth_pending = True
            name = str(name)
        self._username = name
        if name is not None and self.engine is None:
            self.engine = self.server.open_session(name, self.database, self.peer(),
                                                   self.connection.connection_id)
            self.engine.variables = _carry(self.variables.engine_variables, self.engine.variables)
            self.variables.engine_variables = self.engine.variables
            loop = asyncio.get_running_loop()
            self.engine.on_kill.append(lambda: loop.call_soon_threadsafe(self._killed))

    def peer(self) -> str:
        if self.connection is None:
            return "localhost"
        address = self.connection.stream.writer.get_extra_info("peername")
        return address[0] if isinstance(address, tuple) else "localhost"

    def _killed(self) -> None:
        if self.connection is not None:
            self.connection.kill(KillKind.CONNECTION)

    async def init(self, connection) -> None:
        if self.engine is None:
            raise LoginFailed()

    async def close(self) -> None:
        if self.engine is not None:
            engine = self.engine
            engine.kill(query_only=True)       # a statement still running for a client that left
            await self.server.loop.run_in_executor(self.server.executor, engine.close)

    async def use(self, database: str) -> None:     # COM_INIT_DB (mysql CLI's `use db`, reconnects)
        await self.call(self.engine.execute, f"USE `{database.replace('`', '``')}`")

    async def handle_query(self, sql: str, attrs: dict) -> Any:  # COM_FIELD_LIST's SHOW COLUMNS
        result = await self.call(self.engine.execute, sql)
        return (text_rows(result.table), [c.name for c in wire_columns(result)]) if result.table is not None \
            else None

    # -- running engine calls -----------------------------------------------------------------------
    async def call(self, function, *args) -> Any:
        """``function(*args)`` on the server's thread pool; the statement is cancelled if the client
        disconnects meanwhile (its socket reaches EOF)."""
        loop = self.server.loop
        future = loop.run_in_executor(self.server.executor, function, *args)
        reader = self.connection.stream.reader if self.connection is not None else None
        try:
            while True:
                done, _ = await asyncio.wait({future}, timeout=DISCONNECT_POLL_S)
                if done:
                    return future.result()
                if reader is not None and reader.at_eof() and self.engine is not None:
                    log.info("client of connection %s went away: cancelling its statement",
                             self.engine.connection_id)
                    self.engine.kill(query_only=True)
                    reader = None
        except asyncio.CancelledError:          # KILL CONNECTION, server shutdown
            if self.engine is not None:
                self.engine.kill(query_only=True)
            raise

    def check_statement(self, text: str, local_files: bool) -> Optional[str]:
        """Refuse what a network client may not do; returns the LOCAL file to ask the client for."""
        words = text.lstrip().split(None, 4)
        upper = [w.upper() for w in words[:4]]
        if upper[:2] != ["LOAD", "DATA"]:
            return None
        from engine.load.load_data import parse_load_data
        statement = parse_load_data(text)
        if statement.local:
            if not local_files:
                raise AccessDeniedError("LOAD DATA LOCAL INFILE: the client does not allow local files "
                                        "(mysql --local-infile=1, PyMySQL local_infile=True)", scope="global")
            return statement.path
        if self.server.load_dir is None:
            raise _SecureFilePriv()
        return None


class _SecureFilePriv(Error):
    """Server-side LOAD DATA INFILE without --load-dir (MySQL's secure_file_priv = NULL)."""

    def __init__(self):
        super().__init__("the server is running without --load-dir, so it cannot execute LOAD DATA INFILE "
                         "(use LOAD DATA LOCAL INFILE to send a file from the client)")


class WireConnection(Connection):
    session: WireSession

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.session.connection = self
        self.status_flags = ServerStatus.SERVER_STATUS_AUTOCOMMIT
        self.fast_auth_pending = False
        self._headers: dict[tuple, tuple[list[bytes], list, list]] = {}     # see _result_header

    def ok(self, **kwargs: Any) -> bytes:
        if self.fast_auth_pending:           # caching_sha2_password: 0x03, then the login's OK
            self.fast_auth_pending = False
            self.stream.write_many([packets.make_auth_more_data(FAST_AUTH_SUCCESS)])
        return super().ok(**kwargs)

    # -- login -------------------------------------------------------------------------------------------
    async def authenticate(self, *args, **kwargs) -> None:
        try:
            await super().authenticate(*args, **kwargs)
        except Error as error:           # the account is fine but its session cannot start (unknown db)
            await self.stream.write(self.error_packet(error))
            raise LoginFailed() from None
        if self.session.engine is None:   # mysql-mimic wrote the 1045 error; do not read commands
            raise LoginFailed()

    async def connection_phase(self) -> None:
        """mysql-mimic's handshake with one change: the TLS upgrade keeps what the client sent right
        after its SSL request (the start of its TLS hello, already read into the stream's buffer),
        which mysql-mimic's upgrade loses now and then, failing the handshake."""
        from mysql_mimic.packets import SSLRequest
        plugin = self.identity_provider.get_default_plugin()
        auth_data, auth_state = await plugin.start()
        self.handshake_auth_data, self.handshake_auth_plugin = auth_data, plugin.name
        await self.stream.write(packets.make_handshake_v10(
            capabilities=self.server_capabilities, server_charset=self.server_charset,
            server_version=str(self.session.variables.get("version")), connection_id=self.connection_id,
            auth_data=auth_data, status_flags=self.status_flags, auth_plugin_name=plugin.name))
        data = await self.stream.read()
        response = packets.parse_handshake_response(capabilities=self.server_capabilities, data=data)
        if isinstance(response, SSLRequest):
            await self._start_tls()
            data = await self.stream.read()
            response = packets.parse_handshake_response_41(capabilities=self.server_capabilities, data=data)
        self.capabilities = response.capabilities
        self.max_packet_size = response.max_packet_size
        self.session.variables.set("character_set_client", response.client_charset.name)
        self._apply_handshake_collation(data)
        self.session.database = response.database
        self.client_plugin_name = response.client_plugin
        self.client_connect_attrs = response.connect_attrs
        self.zstd_compression_level = response.zstd_compression_level
        self.session.variables.set("external_user", response.username, force=True)
        await self.authenticate(auth_state=auth_state, server_plugin=plugin, username=response.username,
                                client_plugin_name=response.client_plugin, auth_response=response.auth_response,
                                connect_attrs=response.connect_attrs)
        self.stream.reset_seq()

    def _apply_handshake_collation(self, response: bytes) -> None:
        """The collation id of the client's handshake (the byte after capabilities and max packet size
        in a 4.1 response) becomes the session's character_set_client / _connection / _results and
        collation_connection, as in MySQL (mysql-connector-python sends utf8mb4_0900_ai_ci's 255); an id
        Canopy does not have leaves the server's defaults, as MySQL does with one it does not know."""
        if not self.capabilities & Capabilities.CLIENT_PROTOCOL_41 or len(response) < 9:
            return
        name = collation.BY_ID.get(response[8])
        if name is None:
            return
        charset = collation.charset_of(name)
        for variable in ("character_set_client", "character_set_connection", "character_set_results"):
            self.session.variables.set(variable, charset)
        self.session.variables.set("collation_connection", name)

    async def _start_tls(self) -> None:
        """asyncio's ``loop.start_tls`` with the bytes already buffered fed to the TLS layer first."""
        from asyncio import sslproto
        reader, writer = self.stream.reader, self.stream.writer
        transport = writer.transport
        early = bytes(reader._buffer)                      # noqa: SLF001 - read ahead of the upgrade
        reader._buffer.clear()                             # noqa: SLF001
        loop = asyncio.get_running_loop()
        waiter = loop.create_future()
        tls = sslproto.SSLProtocol(loop, transport.get_protocol(), self.ssl, waiter, server_side=True,
                                   call_connection_made=False)
        if early:
            tls._incoming.write(early)                     # noqa: SLF001 - before the handshake reads it
        transport.pause_reading()
        transport.set_protocol(tls)
        loop.call_soon(tls.connection_made, transport)
        loop.call_soon(transport.resume_reading)
        try:
            await waiter
        except BaseException:
            transport.close()
            raise
        writer._transport = tls._app_transport            # noqa: SLF001 - as mysql-mimic does
        reader._transport = tls._app_transport            # noqa: SLF001

    async def _start(self) -> None:
        try:
            await super()._start()
        except LoginFailed:
            log.info("login failed on connection %s", self.connection_id)
        except (ConnectionClosed, ConnectionError):
            log.info("connection %s closed by the client", self.connection_id)

    # -- commands ------------------------------------------------------------------------------------
    async def handle_query(self, data: bytes) -> None:
        com_query = packets.parse_com_query(capabilities=self.capabilities, client_charset=self.client_charset,
                                            data=data)
        await self.run_batch(com_query.sql)

    async def run_batch(self, sql: str) -> None:
        session = self.session
        try:
            texts = _one_statement(sql) or await session.call(split_statements, sql)
            if not texts:
                raise MysqlError("Query was empty", code=1065)
            if len(texts) > 1 and Capabilities.CLIENT_MULTI_STATEMENTS not in self.capabilities:
                raise UnsupportedError("several statements in one query: the client must enable multiple "
                                       "statements (CLIENT_MULTI_STATEMENTS) to send a batch")
        except MysqlError:
            raise
        except BaseException as error:
            if isinstance(error, (asyncio.CancelledError, KeyboardInterrupt)):
                raise
            await self.stream.write(self.error_packet(error))
            return
        for number, text in enumerate(texts):
            more = number + 1 < len(texts)
            try:
                result = await self.execute_text(text)
            except asyncio.CancelledError:
                raise
            except Exception as error:          # noqa: BLE001 - every error goes to the client as a packet
                await self.stream.write(self.error_packet(error))
                return
            await self.write_result(result, more=more, binary=False)

    async def execute_text(self, text: str) -> Result:
        session = self.session
        local_path = session.check_statement(text, Capabilities.CLIENT_LOCAL_FILES in self.capabilities)
        if local_path is None:
            # a cached plan that reads no table runs here on the loop: a thread hand-off would cost
            # more than the query (SELECT 1 round trips)
            return session.engine.execute_if_instant(text) or await session.call(session.engine.execute, text)
        path = await self.receive_local_file(local_path)
        try:
            return await session.call(session.engine.execute_local, text, path)
        finally:
            shutil.rmtree(os.path.dirname(path), ignore_errors=True)

    async def receive_local_file(self, name: str) -> str:
        """MySQL's LOCAL INFILE request: ask the client for ``name``, store what it sends in a temporary
        file (its packets end with an empty one)."""
        await self.stream.write(b"\xfb" + name.encode())
        path = os.path.join(tempfile.mkdtemp(prefix="canopy-local-"), "data" + os.path.splitext(name)[1])
        with open(path, "wb") as out:
            while True:
                data = await self.stream.read()
                if not data:
                    break
                out.write(data)
        return path

    async def handle_stmt_execute(self, data: bytes) -> None:
        """COM_STMT_EXECUTE: the statement's ``?`` become engine parameters (bound as values)."""
        reader = io.BytesIO(data)
        stmt = self.get_stmt(types.read_uint_4(reader))
        use_cursor, count_available = packets._read_cursor_flags(reader)     # noqa: SLF001
        types.read_uint_4(reader)                                             # iteration count: 1
        session = self.session
        try:
            count = parameter_count(reader, stmt.num_params, count_available, self.capabilities)
            values = check_count(read_execute_params(reader, count, self.capabilities, self.client_charset, stmt),
                                 stmt.num_params)
            stmt.param_buffers = None
            session.check_statement(stmt.sql, local_files=False)
            prepared = getattr(stmt, "engine_statement", None)
            if prepared is None:            # the text made ready to bind once (engine.session.Prepared)
                prepared = stmt.engine_statement = session.engine.prepare(qmark_to_pyformat(stmt.sql),
                                                                          stmt.num_params)
            result = await session.call(session.engine.execute_prepared, prepared, values)
        except (asyncio.CancelledError, MysqlError):      # mysql-mimic writes a MysqlError with its code
            raise
        except Exception as error:               # noqa: BLE001
            await self.stream.write(self.error_packet(error))
            return
        if use_cursor and result.table is not None:
            raise MysqlError("cursors on prepared statements are not supported; fetch the whole result",
                             code=1235)
        await self.write_result(result, more=False, binary=True)

    # -- writing results ------------------------------------------------------------------------------
    def current_status(self) -> ServerStatus:
        status = ServerStatus(0)
        engine = self.session.engine
        if engine is None or getattr(engine, "autocommit", True):
            status |= ServerStatus.SERVER_STATUS_AUTOCOMMIT
        if engine is not None and getattr(engine, "in_transaction", False):
            status |= ServerStatus.SERVER_STATUS_IN_TRANS
        return status

    async def write_result(self, result: Result, more: bool, binary: bool) -> None:
        self.status_flags = self.current_status()
        flags = ServerStatus.SERVER_MORE_RESULTS_EXISTS if more else 0
        warnings = min(statement_warnings.count(result.warnings), 65535)     # all, not only those listed
        if result.table is None:
            await self.stream.write(self.ok(affected_rows=max(result.rowcount, 0), warnings=warnings,
                                            flags=flags, last_insert_id=_last_insert_id(self.session.engine)))
            return
        header, columns, result_columns = self._result_header(result)
        if not self.deprecate_eof():         # old clients: an EOF (with the status flags of now) after them
            header = header + [self.eof()]
        self.stream.write_many(header)
        if not isinstance(result.table, pa.Table):
            await self._write_spilled_rows(result, columns, result_columns, binary)
            await self.stream.write(self.ok_or_eof(affected_rows=result.table.num_rows, warnings=warnings,
                                                   flags=flags))
            return
        # a few values are converted here on the loop; more on the thread pool, not to hold up other clients
        small = result.table.num_rows * max(result.table.num_columns, 1) <= SMALL_RESULT_VALUES
        if binary:
            rows = binary_rows(result.table, columns) if small else \
                await self.session.call(binary_rows, result.table, columns)
            self.stream.write_many([packets.make_binary_resultrow(row, result_columns) for row in rows])
        else:
            rows = text_rows(result.table) if small else await self.session.call(text_rows, result.table)
            self.stream.write_text_rows(rows, result_columns)
        await self.stream.write(self.ok_or_eof(affected_rows=len(rows), warnings=warnings, flags=flags))

    async def _write_spilled_rows(self, result: Result, columns: list, result_columns: list, binary: bool) -> None:
        """An answer past memory_limit, on disk (engine.exec.answer.SpilledAnswer): read, converted and
        sent a batch at a time on the thread pool, each batch's packets drained before the next."""
        answer = result.table
        batches = answer.to_batches()
        try:
            while (batch := await self.session.call(next, batches, None)) is not None:
                chunk = pa.Table.from_batches([batch])
                if binary:
                    rows = await self.session.call(binary_rows, chunk, columns)
                    self.stream.write_many([packets.make_binary_resultrow(row, result_columns) for row in rows])
                else:
                    self.stream.write_text_rows(await self.session.call(text_rows, chunk), result_columns)
                await self.stream.drain()
        finally:
            batches.close()
            answer.close()

    def _result_header(self, result: Result) -> tuple[list[bytes], list, list]:
        """The column count and column definition packets of ``result``, with its wire columns and
        mysql-mimic's columns for the rows: kept per connection by the columns' descriptions, since a
        client mostly runs the same few queries again."""
        key = (tuple(result.columns), tuple(result.table.schema.types))
        cached = self._headers.get(key)
        if cached is not None:
            return cached
        columns = wire_columns(result)
        header = [packets.make_column_count(capabilities=self.capabilities, column_count=len(columns))]
        for column in columns:
            header.append(packets.make_column_definition_41(
                server_charset=self.server_charset, name=column.name, column_type=column.result_column.type,
                character_set=column.result_column.character_set, column_length=column.length,
                flags=column.flags, decimals=column.decimals))
        if len(self._headers) >= _MAX_HEADERS:
            self._headers.clear()
        self._headers[key] = made = (header, columns, [c.result_column for c in columns])
        return made

    def error_packet(self, error: BaseException) -> bytes:
        if isinstance(error, _SecureFilePriv):
            code, state, message = (*SECURE_FILE_PRIV, str(error))
        else:
            code, state, message = mysql_error(error)
        if not isinstance(error, Error):
            log.error("unexpected error on connection %s", self.connection_id, exc_info=error)
        parts = [b"\xff", code.to_bytes(2, "little")]
        if Capabilities.CLIENT_PROTOCOL_41 in self.capabilities:
            parts += [b"#", state.encode()]
        parts.append(self.server_charset.encode(message))
        return b"".join(parts)

    def error(self, **kwargs: Any) -> bytes:
        """mysql-mimic's own errors (bad packets, login): MySQL's wording for a failed login."""
        return super().error(**kwargs)


def _one_statement(sql: str) -> Optional[list[str]]:
    """``[sql]`` when it is one statement for certain (no ``;``, not blank, not opening with a comment),
    without tokenizing it; None: ``split_statements`` decides."""
    head = sql.lstrip()[:2]
    if ";" in sql or not head or head[0] == "#" or head in ("--", "/*"):
        return None
    return [sql]


def _last_insert_id(engine) -> int:
    if engine is None:
        return 0
    try:
        return int(engine.variables.get("last_insert_id") or 0)
    except (TypeError, ValueError):
        return 0


def _carry(before, after):
    """Character-set variables mysql-mimic set from the handshake, carried into the engine session."""
    for name, value in before.system.items():
        after.set(name, value, force=True)
    return after

