"""A small HTTP endpoint on the daemon's event loop: `GET /metrics` and `GET /health`, nothing else.

Why not prometheus-client's own server: it runs one thread per connection, without a limit or a
timeout, so idle connections cost the daemon threads (3,000 gave 3,004) and delayed its work.
Here a connection is a few KB on the loop: at most `max_connections` at once, the request head
must arrive within `head_timeout` and fit in HEAD_LIMIT bytes, one request per connection. When
every slot is taken, the connection that has waited longest for its head is dropped to make room,
so a flood of idle connections cannot lock a real scrape out. The body is built in a worker
thread, one scrape at a time, so a large page does not stall the loop.
"""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import Callable
from http import HTTPStatus

import structlog

log = structlog.get_logger("swssd.metrics")

#: connections served at once
MAX_CONNECTIONS = 64
#: seconds a client has to send its request head
HEAD_TIMEOUT = 5.0
#: seconds a client has to read the response
WRITE_TIMEOUT = 10.0
#: bytes a request head may take
HEAD_LIMIT = 8192

_METRICS_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_TEXT_TYPE = "text/plain; charset=utf-8"

Response = tuple[HTTPStatus, str, bytes]


class MetricsServer:
    """`render()` gives the /metrics body (called in a thread); `health()` gives (healthy, reason)
    for /health, answered 200 or 503."""

    def __init__(
        self, render: Callable[[], bytes], health: Callable[[], tuple[bool, str]], *,
        max_connections: int = MAX_CONNECTIONS, head_timeout: float = HEAD_TIMEOUT,
    ) -> None:
        self._render = render
        self._health = health
        self.max_connections = max_connections
        self.head_timeout = head_timeout
        #: open connections, oldest first; True while still waiting for the request head
        self._conns: dict[asyncio.StreamWriter, bool] = {}
        self._scrape = asyncio.Lock()
        self._server: asyncio.Server | None = None

    async def start(self, host: str, port: int) -> None:
        """Listen on host:port; OSError when that cannot be bound (e.g. address in use)."""
        self._server = await asyncio.start_server(self._serve, host, port, limit=HEAD_LIMIT)

    @property
    def addresses(self) -> list[str]:
        """The bound addresses (IP only)."""
        return [str(sock.getsockname()[0]) for sock in self._server.sockets] if self._server else []

    @property
    def loopback_only(self) -> bool:
        """Whether only this host can connect."""
        return all(is_loopback(a) for a in self.addresses)

    async def close(self) -> None:
        """Stop listening and drop every open connection."""
        if self._server is None:
            return
        self._server.close()
        for writer in list(self._conns):
            writer.transport.abort()
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self._conns) >= self.max_connections and not self._evict_idle():
            writer.transport.abort()
            return
        self._conns[writer] = True
        writer.transport.set_write_buffer_limits(high=0)  # drain() then means "all sent"
        try:
            try:
                async with asyncio.timeout(self.head_timeout):
                    head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.LimitOverrunError:
                head = b""  # too long: answered 431 below
            self._conns[writer] = False
            status, ctype, body = await self._respond(head)
            extra = "Allow: GET\r\n" if status == HTTPStatus.METHOD_NOT_ALLOWED else ""
            writer.write(
                f"HTTP/1.1 {status.value} {status.phrase}\r\nContent-Type: {ctype}\r\n"
                f"Content-Length: {len(body)}\r\n{extra}Connection: close\r\n\r\n".encode() + body
            )
            async with asyncio.timeout(WRITE_TIMEOUT):
                await writer.drain()
            writer.close()
        except (TimeoutError, asyncio.IncompleteReadError, ConnectionError):
            writer.transport.abort()  # idle, gone or not reading: nothing more to say
        finally:
            self._conns.pop(writer, None)

    def _evict_idle(self) -> bool:
        """Drop the oldest connection still waiting for its request head; False when none is."""
        for writer, waiting in self._conns.items():
            if waiting:
                del self._conns[writer]
                writer.transport.abort()
                return True
        return False

    async def _respond(self, head: bytes) -> Response:
        if not head:
            return _text(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE)
        parts = head.split(b"\r\n", 1)[0].split(b" ")
        if len(parts) != 3 or parts[2] not in (b"HTTP/1.0", b"HTTP/1.1"):
            return _text(HTTPStatus.BAD_REQUEST)
        method, path = parts[0], parts[1].split(b"?", 1)[0]
        if path not in (b"/metrics", b"/health"):
            return _text(HTTPStatus.NOT_FOUND)
        if method != b"GET":
            return _text(HTTPStatus.METHOD_NOT_ALLOWED)
        if path == b"/health":
            healthy, reason = self._health()
            return _text(HTTPStatus.OK if healthy else HTTPStatus.SERVICE_UNAVAILABLE, reason)
        async with self._scrape:
            try:
                body = await asyncio.to_thread(self._render)
            except Exception as exc:
                log.error("metrics scrape failed", error=f"{type(exc).__name__}: {exc}")
                return _text(HTTPStatus.INTERNAL_SERVER_ERROR)
        return HTTPStatus.OK, _METRICS_TYPE, body


def _text(status: HTTPStatus, text: str | None = None) -> Response:
    return status, _TEXT_TYPE, f"{text or status.phrase}\n".encode()


def is_loopback(address: str) -> bool:
    """Whether a bound IP address is reachable from this host only (0.0.0.0 and :: are not)."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    return (getattr(ip, "ipv4_mapped", None) or ip).is_loopback
