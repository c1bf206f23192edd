"""OwnedContext: the zmq context of one client or server and the sockets made in it, closed in
the order libzmq needs (the sockets, then the context) whether the owner is closed or dropped.

Why not leave a dropped context to pyzmq: its Context.__del__ terms the context, and term()
blocks until every socket of it is closed. When the owner, its sockets and the context are
garbage of one reference cycle (a server holds its event loop's callbacks, which hold it), the
collector clears the context's weak set of sockets before any finalizer runs, so __del__ closes
none of them and term() then waits for ever: the whole process hangs, at whatever allocation
started that collection. Here a finalizer of the owner holds the context and its sockets
(strongly, so they are not part of that garbage) and closes them in order.
"""

from __future__ import annotations

import weakref

import zmq


def _close(context: zmq.Context[zmq.Socket[bytes]], sockets: list[zmq.Socket[bytes]]) -> None:
    for sock in sockets:
        sock.close(0)
    sockets.clear()
    context.term()


class OwnedContext:
    """A zmq context for `owner` alone; every socket it keeps is closed (linger 0) before the
    context is termed, by close() or when `owner` is collected without it."""

    def __init__(self, owner: object) -> None:
        self.context: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
        self._sockets: list[zmq.Socket[bytes]] = []
        self._finalizer = weakref.finalize(owner, _close, self.context, self._sockets)

    def socket(self, kind: int) -> zmq.Socket[bytes]:
        """A new socket of this context, kept until close()."""
        return self.keep(self.context.socket(kind))

    def keep(self, sock: zmq.Socket[bytes]) -> zmq.Socket[bytes]:
        """Close `sock` with the context (one made in it by pyzmq, e.g. a monitor socket)."""
        self._sockets.append(sock)
        return sock

    def close(self) -> None:
        """Close the sockets, then term the context; once (a second call does nothing)."""
        self._finalizer()

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive
