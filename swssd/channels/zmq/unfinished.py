"""UnfinishedMessages: a bound on what one connection of a ZmqServer may send as a message it
never finishes, so a peer cannot grow the process by sending parts flagged MORE without a last one.

libzmq hands a message to the reader only once its last part is in, and counts only complete
messages against the receive high-water mark; ZMQ_MAXMSGSIZE bounds one frame, not the parts of a
message. The parts of an unfinished message therefore sit in libzmq's queue, out of the server's
sight, and libzmq keeps reading the connection without limit. (C++ producers send one frame a
message; a multipart message never comes from them.)

What the server cannot see, the kernel counts: for a TCP connection, the bytes libzmq took off it
are TCP_INFO's bytes received less those still queued (FIONREAD). A connection's bytes taken, less
every byte the server read meanwhile (from any connection, with a frame header's 9 bytes a
message), is a lower bound on what libzmq holds for that connection: its complete messages not
read yet, and the message it is still receiving. Only the second says anything about the peer.
So a connection is shut down (libzmq then drops its unfinished parts) when that bound passes the
message size limit (with a margin for frames on their way) at a moment libzmq holds no complete
message for the server (ZMQ_EVENTS, asked after the bytes were counted): the bound is
then all unfinished message. While complete messages wait (the event loop busy elsewhere, or
reading paused), they may be this connection's, up to the receive high-water mark of them; the
connection is looked at again, and shut down then only past that queue's bound as well.

The connections are watched edge-triggered through a private epoll on the event loop, one shot a
connection every _INTERVAL: an idle connection costs nothing, a busy one about 100 looks a second.
ipc:// connections are not watched (a Unix socket counts no bytes received); their path's
permissions say who may connect.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import select
import socket
import struct
import termios
from collections.abc import Callable
from typing import Any, cast

import structlog
import zmq

from .serializer import MAX_MESSAGE_SIZE

log = structlog.get_logger(__name__)

#: seconds between two looks at a busy connection
_INTERVAL = 0.01
#: bytes past the message limit a connection may hold: frames read between two looks
_MARGIN = 1 << 20
#: what every message read adds to the bytes a connection sent beyond its body (flags, 8-byte size)
FRAME_OVERHEAD = 9
_TCP_INFO_SIZE = 232
_BYTES_RECEIVED = struct.Struct("=Q")  # struct tcp_info's tcpi_bytes_received
_BYTES_RECEIVED_AT = 128
_INT = struct.Struct("=i")
_EVENTS = select.EPOLLIN | select.EPOLLET | select.EPOLLONESHOT
#: peers shut down logged one by one; past this, one line per _LOG_EVERY
_LOG_FIRST = 100
_LOG_EVERY = 1000


class _Connection:
    __slots__ = ("held", "read", "taken")

    def __init__(self, taken: int, read: int) -> None:
        self.taken = taken  #: bytes libzmq had taken off the connection at the last look
        self.read = read  #: the server's bytes read then
        self.held = 0  #: lower bound on the bytes libzmq holds for it


class UnfinishedMessages:
    """Watches the TCP connections of the server reading `sock` (a message may hold MAX_MESSAGE_SIZE
    bytes, and libzmq queue `receive_hwm` complete messages a connection) and shuts down one that
    holds more than a message libzmq cannot hand over. `read_bytes()` says the bytes the server
    read so far (with FRAME_OVERHEAD a message), `drain()` reads what waits (if the server reads),
    `shut_down(fd)` shuts a connection down (False if it is not one of the server's any more)."""

    def __init__(
        self,
        where: str,
        sock: zmq.Socket[Any],
        receive_hwm: int,
        read_bytes: Callable[[], int],
        drain: Callable[[], None],
        shut_down: Callable[[int], bool],
    ) -> None:
        self.where = where
        self.limit = MAX_MESSAGE_SIZE + _MARGIN
        #: what complete messages libzmq may hold for one connection may add
        self.queue_limit = (receive_hwm + 1) * (MAX_MESSAGE_SIZE + FRAME_OVERHEAD)
        #: connections shut down for holding an unfinished message past the limit
        self.dropped = 0
        self._sock = sock
        self._read_bytes = read_bytes
        self._drain = drain
        self._shut_down = shut_down
        self._connections: dict[int, _Connection] = {}
        self._due: set[int] = set()
        self._timer: asyncio.TimerHandle | None = None
        self._epoll: select.epoll | None = select.epoll()
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(self._epoll.fileno(), self._woken)

    def watch(self, fd: int) -> None:
        """Watch a new connection (nothing happens for one that is not TCP)."""
        taken = _taken(fd)
        if taken is None or self._epoll is None:
            return
        try:
            self._epoll.register(fd, _EVENTS)
        except OSError:
            return  # closed meanwhile
        self._connections[fd] = _Connection(taken, self._read_bytes())

    def forget(self, fd: int) -> None:
        """The connection closed."""
        if self._connections.pop(fd, None) is not None and self._epoll is not None:
            with contextlib.suppress(OSError):  # closed: the kernel forgot it already
                self._epoll.unregister(fd)
        self._due.discard(fd)

    def _woken(self) -> None:
        if self._epoll is None:
            return
        for fd, _ in self._epoll.poll(0):
            self._look(fd)
            self._due.add(fd)
        if self._due and self._timer is None:
            self._timer = self._loop.call_later(_INTERVAL, self._rearm)

    def _rearm(self) -> None:
        """Look at the connections that were busy again (what came since the event) and wait
        for their next bytes; one that could not be judged is looked at again."""
        self._timer = None
        due, self._due = self._due, set()
        for fd in due:
            if fd not in self._connections or self._epoll is None:
                continue
            self._look(fd)
            if fd in self._connections:
                try:
                    self._epoll.modify(fd, _EVENTS)
                except OSError:
                    self.forget(fd)
        if self._due and self._timer is None:
            self._timer = self._loop.call_later(_INTERVAL, self._rearm)

    def _look(self, fd: int) -> None:
        state = self._connections.get(fd)
        taken = _taken(fd)
        if state is None or taken is None:
            return
        read = self._read_bytes()
        state.held = max(0, state.held + (taken - state.taken) - (read - state.read))
        state.taken, state.read = taken, read
        if state.held <= self.limit:
            return
        if state.held <= self.limit + self.queue_limit and self._message_waits():
            self._due.add(fd)  # complete messages may be part of it: judged once they are read
            return
        held = state.held
        self.forget(fd)
        if not self._shut_down(fd):
            return
        self.dropped += 1
        if self.dropped <= _LOG_FIRST or self.dropped % _LOG_EVERY == 0:
            log.warning(
                "zmq peer dropped: it sent more of an unfinished message than a message may hold",
                endpoint=self.where, held_bytes=held, limit=self.limit - _MARGIN, dropped=self.dropped,
            )

    def _message_waits(self) -> bool:
        """Whether libzmq holds a complete message for the server now. Asking runs libzmq's
        pending commands, which may take the wake-up the server waits for on ZMQ_FD: a drain is
        scheduled when one waits."""
        waits = bool(cast(int, self._sock.getsockopt(zmq.EVENTS)) & zmq.POLLIN)
        if waits:
            self._loop.call_soon(self._drain)
        return waits

    def close(self) -> None:
        """Stop watching (before the socket closes)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        epoll, self._epoll = self._epoll, None
        if epoll is not None:
            self._loop.remove_reader(epoll.fileno())
            epoll.close()
        self._connections.clear()
        self._due.clear()


def _taken(fd: int) -> int | None:
    """Bytes libzmq read off a TCP connection so far (None: not a TCP connection, or closed)."""
    try:
        sock = socket.socket(fileno=fd)
    except OSError:
        return None
    try:
        if sock.family not in (socket.AF_INET, socket.AF_INET6) or sock.type != socket.SOCK_STREAM:
            return None
        info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCP_INFO_SIZE)
        if len(info) < _BYTES_RECEIVED_AT + _BYTES_RECEIVED.size:
            return None  # a kernel older than 4.1
        received: int = _BYTES_RECEIVED.unpack_from(info, _BYTES_RECEIVED_AT)[0]
        waiting: int = _INT.unpack(fcntl.ioctl(fd, termios.FIONREAD, bytes(_INT.size)))[0]
        return received - waiting
    except OSError:
        return None
    finally:
        sock.detach()  # libzmq owns the descriptor: never closed here
