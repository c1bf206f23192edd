"""PeerGuard: a bound on the connections a ZmqServer holds, so idle or hostile peers cannot use up
the process's descriptors (Redis, the metrics endpoint and the log need some too).

libzmq accepts every connection and has no option to bound them. The guard watches the socket's
monitor (ZMQ_EVENT_ACCEPTED carries the new connection's descriptor, ZMQ_EVENT_DISCONNECTED the
closed one's) on the event loop, and a connection past the bound is shut down at once
(shutdown(2), never close(2): libzmq still owns the descriptor, sees the end of the stream and
closes it itself). Before shutting a descriptor down the guard checks that it is a connected
socket on the server's own address, so a number libzmq closed and the process reused meanwhile
is never touched. The first refusal is logged (one line, again only after the server went back
below its bound); every one is counted.
"""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import Callable
from typing import cast

import structlog
import zmq

from .unfinished import UnfinishedMessages

log = structlog.get_logger(__name__)

_EVENTS = zmq.EVENT_ACCEPTED | zmq.EVENT_DISCONNECTED | zmq.EVENT_ACCEPT_FAILED
_EVENT = struct.Struct("=HI")  # the first frame of a monitor message: event, value
#: accept failures (EMFILE, ...) logged one by one; past this, one line per _LOG_EVERY
_LOG_FIRST = 10
_LOG_EVERY = 1000


class PeerGuard:
    """Counts the connections of one bound socket and refuses those past `max_peers` (None:
    count only)."""

    def __init__(
        self, sock: zmq.Socket[bytes], where: str, max_peers: int | None,
        keep: Callable[[zmq.Socket[bytes]], zmq.Socket[bytes]],
    ) -> None:
        """`keep`: takes the monitor socket to close with the context (context.OwnedContext.keep)."""
        self.where = where
        self.max_peers = max_peers
        #: connections refused because the bound was reached
        self.refused = 0
        #: accepts the system refused (EMFILE: no descriptor left, ...)
        self.accept_failed = 0
        self._admitted: set[int] = set()
        self._refusing: set[int] = set()
        self._said = False
        self._local = _local_address(where)
        #: told of every connection admitted and closed, when set
        self.unfinished: UnfinishedMessages | None = None
        self._monitor: zmq.Socket[bytes] | None = keep(sock.get_monitor_socket(_EVENTS))
        self._fd = cast(int, self._monitor.getsockopt(zmq.FD))
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(self._fd, self._read)
        self._loop.call_soon(self._read)  # edge-triggered: look once now

    @property
    def peers(self) -> int:
        """Connections held (refused ones not counted)."""
        return len(self._admitted)

    def _read(self) -> None:
        monitor = self._monitor
        if monitor is None:
            return
        while True:
            try:
                frames = monitor.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return
            except zmq.ZMQError:
                return  # closed under us (ETERM)
            if len(frames[0]) != _EVENT.size:
                continue
            event, value = _EVENT.unpack(frames[0])
            if event == zmq.EVENT_ACCEPTED:
                self._accepted(value)
            elif event == zmq.EVENT_DISCONNECTED:
                self._admitted.discard(value)
                if self.unfinished is not None:
                    self.unfinished.forget(value)
                self._refusing.discard(value)
                if self._said and self.max_peers is not None and len(self._admitted) < self.max_peers * 9 // 10:
                    self._said = False
            elif event == zmq.EVENT_ACCEPT_FAILED:
                self.accept_failed += 1
                if self.accept_failed <= _LOG_FIRST or self.accept_failed % _LOG_EVERY == 0:
                    log.error("zmq connection not accepted", endpoint=self.where, error=zmq.strerror(value),
                              failed=self.accept_failed, peers=len(self._admitted))

    def _accepted(self, fd: int) -> None:
        if self.max_peers is None or len(self._admitted) < self.max_peers:
            self._admitted.add(fd)
            if self.unfinished is not None:
                self.unfinished.watch(fd)
            return
        self.refused += 1
        if not self._said:
            self._said = True
            log.warning("zmq peer limit reached: further connections are refused until peers leave",
                        endpoint=self.where, max_peers=self.max_peers, refused=self.refused)
        if self.shut_down(fd):
            self._refusing.add(fd)

    def shut_down(self, fd: int) -> bool:
        """shutdown(2) the descriptor when it is a connection to this server's address."""
        try:
            sock = socket.socket(fileno=fd)
        except OSError:
            return False  # already closed
        try:
            if sock.type != socket.SOCK_STREAM or not _same_address(sock.getsockname(), self._local):
                return False
            sock.getpeername()  # a connection, not the listener
            sock.shutdown(socket.SHUT_RDWR)
            return True
        except OSError:
            return False
        finally:
            sock.detach()  # libzmq owns the descriptor: never closed here

    def close(self) -> None:
        """Stop watching (before the socket closes)."""
        monitor, self._monitor = self._monitor, None
        if monitor is not None:
            self._loop.remove_reader(self._fd)
            monitor.close(0)


def _local_address(endpoint: str) -> str | int | None:
    """What getsockname() of an accepted connection shows: the port (tcp) or the path (ipc)."""
    if endpoint.startswith("ipc://"):
        return endpoint[len("ipc://"):]
    if endpoint.startswith("tcp://"):
        port = endpoint.rsplit(":", 1)[-1]
        return int(port) if port.isdigit() else None
    return None


def _same_address(name: object, local: str | int | None) -> bool:
    if isinstance(local, int):
        return isinstance(name, tuple) and len(name) >= 2 and name[1] == local
    if isinstance(name, bytes):
        name = name.decode(errors="surrogateescape")
    return local is not None and name == local
