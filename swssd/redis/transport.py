"""A Redis connection swssd owns: an asyncio protocol around the hiredis reader.

The scripts and pipelines of the tables run here, not through redis-py's connection: redis-py
reads each reply through several Python layers and wraps every write in a time-out task, which
cost more than the round trip of a pop. A request is packed by hiredis and written at once;
calls made while others are in flight are written together at the end of the loop iteration
(so many coroutines setting at once cost one write, not one each), and replies are taken from
the hiredis reader as they arrive and handed to each request in order (Redis answers in the
order it read). A pub/sub connection hands every reply nobody asked for to a callback instead,
a socket read's burst at a time.

Where to connect and how (address, TLS, credentials, database, time-outs) is taken from a
redis-py connection pool's settings, so a DBConnector's own connection and its redis-py client
always agree.
"""

from __future__ import annotations

import asyncio
import dataclasses
import select
import socket
import ssl
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, cast

import hiredis
from redis.asyncio.connection import ConnectionPool, SSLConnection, UnixDomainSocketConnection
from redis.exceptions import (
    AuthenticationError,
    BusyLoadingError,
    ExecAbortError,
    InvalidResponse,
    NoPermissionError,
    NoScriptError,
    OutOfMemoryError,
    ReadOnlyError,
    RedisError,
    ResponseError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from .wire import pack_command

#: Error replies Redis marks with a code, as redis-py raises them (the code is cut from the text).
_ERROR_CLASSES: dict[str, type[RedisError]] = {
    "WRONGPASS": AuthenticationError,
    "NOAUTH": AuthenticationError,
    "NOPERM": NoPermissionError,
    "NOSCRIPT": NoScriptError,
    "LOADING": BusyLoadingError,
    "READONLY": ReadOnlyError,
    "EXECABORT": ExecAbortError,
    "OOM": OutOfMemoryError,
}
#: "ERR ..." replies that are not about the command
_ERR_CLASSES: dict[str, type[RedisError]] = {
    "invalid password": AuthenticationError,
    "max number of clients reached": RedisConnectionError,
}

#: what redis-py says when the server closed the connection
SERVER_CLOSED = "Connection closed by server."

#: what the reader returns while a reply is incomplete
_MORE = object()


def reply_error(text: str) -> RedisError:
    """The exception for an error reply, of the class redis-py would give it."""
    code, _, rest = text.partition(" ")
    if code == "ERR":
        return _ERR_CLASSES.get(rest, ResponseError)(rest)
    cls = _ERROR_CLASSES.get(code)
    return cls(rest) if cls is not None else ResponseError(text)


@dataclasses.dataclass(frozen=True)
class ConnectionSpec:
    """Where and how to connect. Built from a redis-py pool (from_pool) so both agree."""

    host: str = "localhost"
    port: int = 6379
    #: a unix socket's path; when set, host and port are not used
    path: str = ""
    ssl_context: ssl.SSLContext | None = None
    username: str | None = dataclasses.field(default=None, repr=False)
    password: str | None = dataclasses.field(default=None, repr=False)
    #: redis-py's credential provider, asked at every connect (wins over username/password)
    credential_provider: Any = dataclasses.field(default=None, repr=False)
    db: int = 0
    client_name: str | None = None
    connect_timeout: float | None = None
    #: seconds without a reply while requests are out before the connection is dropped; None: no limit
    read_timeout: float | None = None
    keepalive: bool = False
    #: decode replies as this encoding (None: bytes), with these error handlers
    encoding: str | None = "utf-8"
    encoding_errors: str = "strict"

    @classmethod
    def from_pool(cls, pool: ConnectionPool) -> ConnectionSpec:
        """The settings a connection of `pool` would use (read from a connection never connected)."""
        proto = pool.make_connection()
        encoder = proto.encoder
        common: dict[str, Any] = dict(
            username=proto.username,
            password=proto.password,
            credential_provider=proto.credential_provider,
            db=int(proto.db or 0),
            client_name=proto.client_name,
            connect_timeout=proto.socket_connect_timeout,
            read_timeout=proto.socket_timeout,
            encoding=encoder.encoding if encoder.decode_responses else None,
            encoding_errors=encoder.encoding_errors,
        )
        if isinstance(proto, UnixDomainSocketConnection):
            return cls(path=proto.path, **common)
        tls = proto.ssl_context.get() if isinstance(proto, SSLConnection) else None
        host: str = getattr(proto, "host", "localhost")
        port = int(getattr(proto, "port", 6379))
        keepalive = bool(getattr(proto, "socket_keepalive", False))
        return cls(host=host, port=port, ssl_context=tls, keepalive=keepalive, **common)

    def replace(self, **changes: Any) -> ConnectionSpec:
        """A copy with some settings changed (a pub/sub connection: no read time-out)."""
        return dataclasses.replace(self, **changes)

    @property
    def address(self) -> str:
        """host:port or unix:path, for messages."""
        return f"unix:{self.path}" if self.path else f"{self.host}:{self.port}"

    async def _credentials(self) -> tuple[str | None, str | None]:
        provider = self.credential_provider
        if provider is None:
            return self.username, self.password
        creds = await provider.get_credentials_async()
        return (creds[0], creds[1]) if len(creds) > 1 else (None, creds[0])


class _Request:
    __slots__ = ("count", "future", "replies")

    def __init__(self, count: int, future: asyncio.Future[list[Any]]) -> None:
        self.count = count
        self.replies: list[Any] = []
        self.future = future


class RedisConnection(asyncio.Protocol):
    """One connection to Redis. `request()` sends commands and returns their replies; several
    requests may be in flight. With `on_push`, replies no request waits for (pub/sub messages)
    go to it, a burst at a time; an exception it raises, or an error reply nobody asked for,
    closes the connection with that error (see `wait_closed`)."""

    def __init__(self, spec: ConnectionSpec, on_push: Callable[[list[Any]], None] | None = None) -> None:
        self.spec = spec
        self._on_push = on_push
        kwargs: dict[str, Any] = {"replyError": reply_error, "protocolError": InvalidResponse, "notEnoughData": _MORE}
        if spec.encoding is not None:
            kwargs.update(encoding=spec.encoding, errors=spec.encoding_errors)
        self._reader = hiredis.Reader(**kwargs)
        self._loop = asyncio.get_running_loop()
        self._transport: asyncio.Transport | None = None
        self._pending: deque[_Request] = deque()
        #: packed commands of this loop iteration, written together at its end
        self._corked: list[bytes] | None = None
        self._closed: asyncio.Future[None] = self._loop.create_future()
        self._writable: asyncio.Future[None] | None = None
        self._watchdog: asyncio.TimerHandle | None = None
        #: loop time of the last reply, or of the first request sent while none was out
        self._progress = 0.0
        self._fileno = -1
        #: writes to the socket (a write carries every request of an iteration): for tests and stats
        self.writes = 0

    # -- opening --------------------------------------------------------------------------

    @classmethod
    async def open(
        cls, spec: ConnectionSpec, on_push: Callable[[list[Any]], None] | None = None
    ) -> RedisConnection:
        """Connect, authenticate, name the client and select the database.

        Raises redis-py's errors: ConnectionError (refused, unreachable, closed), TimeoutError,
        AuthenticationError; `ssl.SSLError` is raised as a ConnectionError naming it."""
        loop = asyncio.get_running_loop()
        protocol = cls(spec, on_push)
        try:
            async with asyncio.timeout(spec.connect_timeout):
                if spec.path:
                    await loop.create_unix_connection(lambda: protocol, spec.path)
                else:
                    await loop.create_connection(
                        lambda: protocol, spec.host, spec.port, ssl=spec.ssl_context,
                        server_hostname=spec.host if spec.ssl_context is not None else None,
                    )
                await protocol._handshake()
        except TimeoutError:
            protocol.close()
            raise RedisTimeoutError(f"Timeout connecting to {spec.address}") from None
        except OSError as exc:  # refused, no such socket, TLS failures (ssl.SSLError is an OSError)
            protocol.close()
            raise RedisConnectionError(f"Error connecting to {spec.address}: {exc}") from exc
        except BaseException:
            protocol.close()
            raise
        return protocol

    async def _handshake(self) -> None:
        spec = self.spec
        commands: list[tuple[Any, ...]] = []
        username, password = await spec._credentials()
        if password is not None or username is not None:
            commands.append(("AUTH", username, password) if username else ("AUTH", password))
        if spec.client_name:
            commands.append(("CLIENT", "SETNAME", spec.client_name))
        if spec.db:
            commands.append(("SELECT", spec.db))
        if not commands:
            return
        for reply in await self.request(commands):
            if isinstance(reply, Exception):
                raise reply

    # -- asyncio.Protocol -----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # a stream transport (uvloop's are not subclasses)
        sock = transport.get_extra_info("socket")
        self._fileno = sock.fileno() if sock is not None else -1
        if self.spec.keepalive and not self.spec.path and sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)

    def data_received(self, data: bytes) -> None:
        reader = self._reader
        reader.feed(data)
        pending = self._pending
        burst: list[Any] | None = None
        while True:
            try:
                reply = reader.gets()
            except InvalidResponse as exc:  # not RESP: nothing after it can be trusted
                self._abort(exc)
                return
            if reply is _MORE:
                break
            if pending:
                request = pending[0]
                request.replies.append(reply)
                if len(request.replies) == request.count:
                    pending.popleft()
                    if not request.future.done():  # a caller that gave up (cancelled) is skipped
                        request.future.set_result(request.replies)
            elif self._on_push is not None and not isinstance(reply, Exception):
                if burst is None:
                    burst = []
                burst.append(reply)
            else:
                error = reply if isinstance(reply, RedisError) else InvalidResponse(f"unexpected reply {reply!r:.80}")
                self._abort(error)
                return
        self._progress = self._loop.time()
        if burst is not None:
            assert self._on_push is not None
            try:
                self._on_push(burst)
            except Exception as exc:
                self._abort(exc)

    def eof_received(self) -> bool | None:
        self._abort(RedisConnectionError(SERVER_CLOSED))
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._abort(RedisConnectionError(f"{SERVER_CLOSED[:-1]}: {exc}" if exc else SERVER_CLOSED))

    def pause_writing(self) -> None:
        if self._writable is None:
            self._writable = self._loop.create_future()

    def resume_writing(self) -> None:
        if self._writable is not None:
            if not self._writable.done():
                self._writable.set_result(None)
            self._writable = None

    # -- requests -------------------------------------------------------------------------

    @property
    def is_closed(self) -> bool:
        return self._closed.done()

    def stale(self) -> bool:
        """Whether the connection is closed, or, with no request out, has input waiting: nothing
        is owed to it then, so that is an EOF (the server closed it, e.g. a restart) or garbage.
        Asked of the socket itself, because the event loop may not have run since the peer
        closed it (the connection would not know yet)."""
        if self._closed.done():
            return True
        if self._pending or self._corked is not None or self._fileno < 0:  # owed replies, or not connected
            return False
        poller = select.poll()  # not select(): a descriptor past 1,023 is out of its range
        poller.register(self._fileno, select.POLLIN)
        return bool(poller.poll(0))

    async def request(self, commands: Sequence[tuple[Any, ...]]) -> list[Any]:
        """Send `commands` and return one reply each, in order; error replies are exceptions in the
        list. A connection lost (or silent past the read time-out) fails every request out on it
        with ConnectionError (TimeoutError), and stays closed."""
        if self._writable is not None:  # writable(), inline: one coroutine less on every call's way
            await asyncio.shield(self._writable)
        return await self.submit(commands)

    async def writable(self) -> None:
        """Return once the socket takes writes again (at once unless the kernel's buffer is full)."""
        if self._writable is not None:
            await asyncio.shield(self._writable)

    def submit(self, commands: Sequence[tuple[Any, ...]]) -> asyncio.Future[list[Any]]:
        """`request()` without waiting: the commands are queued to be written after any sent
        before them, and the future gets their replies. For callers that keep several requests
        out in order and wait on them later; they await `writable()` before each."""
        if self._closed.done():
            self._closed.result()  # raises the error it closed with
        future: asyncio.Future[list[Any]] = self._loop.create_future()
        packed = pack_command(commands[0]) if len(commands) == 1 else b"".join(map(pack_command, commands))
        if self._corked is not None:
            self._corked.append(packed)
        elif self._pending:
            self._corked = [packed]
            self._loop.call_soon(self._flush)
        else:
            self._write(packed)
            self._progress = self._loop.time()
        self._pending.append(_Request(len(commands), future))
        if self._watchdog is None and self.spec.read_timeout is not None:
            self._watchdog = self._loop.call_later(self.spec.read_timeout, self._check_progress)
        return future

    def send(self, command: tuple[Any, ...]) -> None:
        """Write a command whose replies go to `on_push` (SUBSCRIBE and the like)."""
        if self._closed.done():
            self._closed.result()
        self._write(pack_command(command))

    def _write(self, data: bytes) -> None:
        assert self._transport is not None
        self._transport.write(data)
        self.writes += 1

    def _flush(self) -> None:
        corked, self._corked = self._corked, None
        if corked and not self._closed.done():
            self._write(b"".join(corked))

    def _check_progress(self) -> None:
        self._watchdog = None
        if not self._pending or self._closed.done():
            return
        timeout = self.spec.read_timeout
        assert timeout is not None
        silent = self._loop.time() - self._progress
        if silent >= timeout:
            self._abort(RedisTimeoutError(f"Timeout reading from {self.spec.address}: no reply in {timeout:g} s"))
        else:
            self._watchdog = self._loop.call_later(timeout - silent, self._check_progress)

    # -- closing --------------------------------------------------------------------------

    def _abort(self, error: Exception) -> None:
        """Close with `error`: every request out fails with it, and so does `wait_closed`."""
        if not self._closed.done():
            self._closed.set_exception(error)
            self._closed.exception()  # retrieved: nobody needs to await it
        while self._pending:
            request = self._pending.popleft()
            if not request.future.done():
                request.future.set_exception(error)
        self._corked = None
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        if self._writable is not None and not self._writable.done():
            self._writable.set_result(None)
        transport, self._transport = self._transport, None
        if transport is not None:
            transport.abort()

    def close(self) -> None:
        self._abort(RedisConnectionError("connection closed by swssd"))

    async def wait_closed(self) -> None:
        """Wait until the connection ends, and raise the error it ended with."""
        await asyncio.shield(self._closed)
