"""ZmqClient and ZmqServer: the two ends of the ZMQ channel, with the C++ library's sockets.

The client is a PUSH socket that connects, the server a PULL socket that binds; one server serves
every (db, table) whose messages reach its endpoint (tcp://, ipc://). Both use the options of
sonic-swss-common's ZmqClient/ZmqServer: linger 0 on the client, a high-water mark of 10,000
messages (send side on the client, receive side on the server), TCP keepalive after 5 s idle with
5 probes 1 s apart, and an optional VRF device (SO_BINDTODEVICE).

libzmq reconnects by itself: while the server is away, messages wait in the client's queue (up to
the high-water mark) and go out once it is back; the ones already handed to the dead connection
are lost, exactly as with the C++ client. When the queue is full, send_msg retries as C++ sendMsg
does (11 attempts, 20 ms doubling to ~10 s between them, then an error), sleeping on the event
loop instead of blocking the thread; sends queue behind one that is waiting, so their order is kept.

Neither end uses a thread. The client sends with ZMQ_DONTWAIT; the server's socket is watched by
the event loop through its ZMQ_FD, and every wake-up drains what is queued (a burst costs one
wake-up, not a future per message). A server (and a consumer's persistence) needs the event loop.

What a server holds is bounded, so a peer can neither starve the process nor grow it without
limit: its connections (`max_peers`, peers.py), a message's size (ZMQ_MAXMSGSIZE: a frame that
declares more than the C++ limit closes its connection before anything is allocated; parts of a
message that never ends close it past that limit, unfinished.py), libzmq's queue (`receive_hwm`
messages a connection: libzmq counts messages, not bytes, and C++'s 10,000 of 1 MB each is 10 GB),
and the bytes read that its consumers did not pop yet (`max_buffer_bytes`).
While those bytes are over the bound, or a consumer's table is paused, the server stops reading:
libzmq's queue fills, then the TCP window, then the peer's send queue, whose sends then fail with
EAGAIN and are retried, as against a C++ server that does not keep up.
"""
from __future__ import annotations

import asyncio
import errno as errnos
from collections.abc import Iterable, Sequence
from typing import Any, Protocol, cast

import structlog
import zmq

from ...errors import SwssdError
from ...fields import KeyOpFieldsValues
from .context import OwnedContext
from .drops import DropLog
from .endpoints import check_ipc_path, warn_if_exposed
from .one_change import read_one, remember_tail
from .peers import PeerGuard
from .serializer import (
    MAX_MESSAGE_SIZE,
    MessageTooLargeError,
    ZmqMessageError,
    header,
    serialize,
)
from .serializer import deserialize as _deserialize
from .speedups import direct_address, read_single
from .unfinished import FRAME_OVERHEAD, UnfinishedMessages

log = structlog.get_logger(__name__)

#: MQ_WATERMARK (zmqserver.h): messages queued per socket before sends fail (EAGAIN).
HIGH_WATER_MARK = 10_000
#: MQ_MAX_RETRY: attempts after the first before sendMsg gives up.
MAX_RETRY = 10
#: sendMsg's first back-off (10 ms, doubled before every sleep: 20 ms, 40 ms, ...).
RETRY_DELAY = 0.010
#: ORCH_ZMQ_PORT: the port orchagent's ZMQ server listens on in SONiC.
ORCH_ZMQ_PORT = 8100
#: Keepalive as C++: on, 5 s idle before the first probe, 1 s between probes, 5 probes.
_KEEPALIVE = (
    (zmq.TCP_KEEPALIVE, 1), (zmq.TCP_KEEPALIVE_IDLE, 5), (zmq.TCP_KEEPALIVE_INTVL, 1), (zmq.TCP_KEEPALIVE_CNT, 5)
)
#: messages a server's connection queues in libzmq while the server does not read (ZMQ_RCVHWM):
#: what bounds libzmq's memory, with the message size, when reading is paused. The reader tells
#: libzmq's thread every half of it that it read on (a command each time): 64 costs nothing
#: measurable against C++'s 10,000, 16 costs 0.3-0.4 us a message (measured: main-thread CPU per
#: change, a C++ producer, 100,000 one-change messages); the daemon takes 16 (zmq_receive_hwm),
#: for its memory with 1 MB messages.
RECEIVE_HWM = 64
#: bytes of received changes not popped yet, per server, above which it stops reading
BUFFER_BYTES = 8 * 1024 * 1024
#: messages (and bytes) taken off the server socket before letting other tasks run
_BURST = 512
_BURST_BYTES = 256 * 1024  # a 1 MB message is a burst: the Redis tables' turns come between
_NONE: dict[str, ZmqMessageHandler] = {}
#: libzmq's send without pyzmq's Python-level wrapper (none of it applies to bytes on PUSH)
_send = getattr(getattr(zmq, "backend", None), "Socket", zmq.Socket).send
#: messages this large or larger are handed over without a copy (pyzmq's copy_threshold)
_COPY_BELOW = 65536
_NOBLOCK = int(zmq.NOBLOCK)
#: read_one() is judged every this many messages, and paused for this many when it read less
#: than a third of them
_FAST_JUDGE = 512
_FAST_PAUSE = 16384


class ZmqSendError(SwssdError, OSError):
    """A message could not be handed to the ZMQ socket (the queue stayed full through every
    retry, the context was terminated, or another socket error)."""


class ZmqMessageHandler(Protocol):
    """What a server hands the changes of one (db, table) to: the changes, and the bytes of the
    messages they came in, which the handler gives back with ZmqServer.release() once popped."""

    def handle_received(self, changes: list[KeyOpFieldsValues], size: int = 0) -> None: ...


def _apply_common(sock: zmq.Socket[bytes], vrf: str | None) -> None:
    for option, value in _KEEPALIVE:
        sock.setsockopt(option, value)
    if vrf:
        sock.setsockopt(zmq.BINDTODEVICE, vrf.encode())


class ZmqClient:
    """The producer's end: a PUSH socket connected to `endpoint` (`tcp://host:port`, `ipc://path`).

    Construct it anywhere; send from the event loop. Sending never blocks the loop.
    """

    def __init__(self, endpoint: str, vrf: str | None = None) -> None:
        self.endpoint = endpoint
        self.vrf = vrf
        self.connected = False
        #: messages handed to the socket
        self.sent = 0
        #: sends that found the queue full (each then retried after a sleep)
        self.retries = 0
        self._context: OwnedContext | None = None
        self._socket: zmq.Socket[bytes] | None = None
        self._lock = asyncio.Lock()
        #: sends waiting to retry (holding or waiting for _lock): while any is, send_nowait()
        #: hands nothing to the socket, so the order is kept
        self._waiting = 0
        self.direct = 0  #: direct_address() of the socket while none waits to retry, else 0
        self.connect()

    def connect(self) -> None:
        """Create the socket and connect it (again, after close() or a terminated context)."""
        if self.connected:
            return
        self._close_socket()
        self._context = context = OwnedContext(self)
        sock = context.socket(zmq.PUSH)
        sock.setsockopt(zmq.LINGER, 0)  # closing drops what is queued, never waits
        sock.setsockopt(zmq.SNDHWM, HIGH_WATER_MARK)
        _apply_common(sock, self.vrf)
        try:
            sock.connect(self.endpoint)
        except zmq.ZMQError as exc:
            self._close_socket()
            raise ZmqSendError(exc.errno, f"cannot connect to zmq endpoint {self.endpoint}: {exc}") from None
        self._socket = sock
        self.direct = direct_address(sock)
        self.connected = True

    def is_connected(self) -> bool:
        return self.connected

    async def send_msg(
        self, db_name: str, table_name: str, changes: Iterable[KeyOpFieldsValues | Sequence[Any]]
    ) -> None:
        """Send the changes of one table as one message (BinarySerializer format).

        Raises MessageTooLargeError (nothing sent) for a message C++ would refuse, and
        ZmqSendError when the socket refuses it after the C++ retries.
        """
        await self.send_bytes(serialize(db_name, table_name, changes))

    async def send_bytes(self, data: bytes) -> None:
        """Send one already serialized message, retrying as C++ sendMsg does."""
        if not self.send_nowait(data):
            self._waiting += 1
            self.direct = 0
            try:
                async with self._lock:  # later sends wait here: the order of messages is kept
                    await self._send_retrying(data)
            finally:
                self._waiting -= 1
                if not self._waiting and self._socket is not None:
                    self.direct = direct_address(self._socket)

    def send_nowait(self, data: bytes) -> bool:
        """Hand a message to the socket if that can be done at once and keeps the order (no
        send is waiting to retry); False otherwise, and then send_bytes() must send it."""
        size = len(data)
        if size >= MAX_MESSAGE_SIZE:
            raise MessageTooLargeError(f"message of {size} bytes; C++ sends less than {MAX_MESSAGE_SIZE}")
        sock = self._socket
        if self._waiting or sock is None:
            if sock is None:
                raise ZmqSendError(errnos.ENOTCONN, f"zmq client for {self.endpoint} is closed")
            return False
        try:
            _send(sock, data, _NOBLOCK, size < _COPY_BELOW)
        except zmq.Again:
            return False
        self.sent += 1
        return True

    def _send_now(self, data: bytes) -> None:
        sock = self._socket
        if sock is None:
            raise ZmqSendError(errnos.ENOTCONN, f"zmq client for {self.endpoint} is closed")
        _send(sock, data, _NOBLOCK, len(data) < _COPY_BELOW)
        self.sent += 1

    async def _send_retrying(self, data: bytes) -> None:
        delay = RETRY_DELAY
        error = 0
        for attempt in range(MAX_RETRY + 1):
            try:
                self._send_now(data)
                return
            except zmq.ZMQError as exc:
                error = cast(int, exc.errno)  # ZMQError fills it from zmq_errno() when not given
                delay *= 2
                if error in (errnos.EINTR, zmq.EFSM):
                    delay = 0.0  # as C++: retried at once (and never slept on again)
                elif error == errnos.EAGAIN:
                    self.retries += 1
                    if attempt < MAX_RETRY:
                        log.warning("zmq queue is full; retrying", endpoint=self.endpoint, delay_ms=round(delay * 1000))
                elif error == zmq.ETERM:
                    self.connected = False
                    raise ZmqSendError(errnos.ECONNRESET, f"zmq connection break, endpoint: {self.endpoint}") from None
                else:
                    raise ZmqSendError(error, f"zmq send failed, endpoint: {self.endpoint}: {exc}") from None
            if attempt < MAX_RETRY:
                await asyncio.sleep(delay)
        raise ZmqSendError(
            errnos.EIO,
            f"zmq send failed, endpoint: {self.endpoint}, zmqerrno: {error}:{zmq.strerror(error)}, "
            f"msg length: {len(data)} (queue full through {MAX_RETRY + 1} attempts)",
        )

    def _close_socket(self) -> None:
        self.direct = 0
        self._socket = None
        if self._context is not None:
            self._context.close()
            self._context = None

    def close(self) -> None:
        """Close the socket; what is still queued is dropped (linger 0, as C++)."""
        self._close_socket()
        self.connected = False

    def __repr__(self) -> str:
        return f"ZmqClient({self.endpoint!r})"


class ZmqServer:
    """The consumers' end: a PULL socket bound to `endpoint` (`tcp://*:8100`, `ipc://path`),
    read on the event loop, each message handed to the consumer registered for its (db, table)
    as it is read.

    Messages that cannot be read (truncated, a length past the end, MAX_MESSAGE_SIZE bytes or
    more, ...) are counted in `malformed` and logged; messages for a (db, table) no consumer is
    registered for are counted in `dropped` (C++ drops both, the first by throwing in its
    receive thread). Neither stops the server.

    Create and bind it with the event loop running; `lazy_bind=True` leaves binding to `bind()`.
    `max_peers` bounds its connections (None: no bound); `max_buffer_bytes` the bytes of what it
    read and was not popped yet (module docstring). An `ipc://` path a live server holds, or that
    names a file that is not a socket, is not bound (OSError; the file is left as it is).
    """

    def __init__(
        self,
        endpoint: str,
        vrf: str | None = None,
        lazy_bind: bool = False,
        *,
        max_peers: int | None = None,
        max_buffer_bytes: int = BUFFER_BYTES,
        receive_hwm: int = RECEIVE_HWM,
    ) -> None:
        self.endpoint = endpoint
        self.vrf = vrf
        self.max_peers = max_peers
        self.max_buffer_bytes = max_buffer_bytes
        self.receive_hwm = receive_hwm
        #: bytes of received changes the consumers hold (not popped yet)
        self.buffered = 0
        #: times reading stopped because of what the consumers held
        self.pauses = 0
        #: consumers over their own bound: reading waits for them
        self._held: set[object] = set()
        self._reading = False
        self._peers: PeerGuard | None = None
        self._unfinished: UnfinishedMessages | None = None
        #: bytes of the messages taken off the socket, with FRAME_OVERHEAD a message
        self.read_bytes = 0
        #: messages taken off the socket
        self.received = 0
        #: changes handed to consumers
        self.changes = 0
        self._drops = DropLog(endpoint)  # malformed and unrouted messages
        self._handlers: dict[str, dict[str, ZmqMessageHandler]] = {}
        #: (header(), consumer) of the table the last message went to; None after (un)register
        self._route: tuple[bytes, ZmqMessageHandler] | None = None
        #: messages left to read without trying read_one(), and what it did since last judged
        self._fast_pause = 0
        self._fast_tried = self._fast_slow = 0
        self._context: OwnedContext | None = None
        self._socket: zmq.Socket[bytes] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._fd = -1
        self._where = endpoint  # for logs: the endpoint as bound
        if not lazy_bind:
            self.bind()

    # -- consumers ----------------------------------------------------------------------

    def register(self, db_name: str, table_name: str, handler: ZmqMessageHandler) -> None:
        """Hand the changes for (db_name, table_name) to `handler` from now on."""
        tables = self._handlers.setdefault(db_name, {})
        if tables.get(table_name, handler) is not handler:
            raise ValueError(f"a consumer for {db_name}/{table_name} is already registered on {self.endpoint}")
        tables[table_name] = handler
        self._route = None

    def unregister(self, db_name: str, table_name: str) -> None:
        self._route = None
        tables = self._handlers.get(db_name, {})
        tables.pop(table_name, None)
        if not tables:
            self._handlers.pop(db_name, None)

    # -- flow control -------------------------------------------------------------------

    def hold(self, holder: object) -> None:
        """`holder` (a consumer, or its paused table) may take no more: stop reading until
        unhold(holder)."""
        self._held.add(holder)
        self._pause()

    def unhold(self, holder: object) -> None:
        """Undo hold(); reading resumes when nothing else holds it."""
        self._held.discard(holder)
        self._resume()

    def release(self, size: int) -> None:
        """`size` bytes of what handle_received() was given were popped: no longer held."""
        self.buffered = max(0, self.buffered - size)
        if not self._reading and self.buffered < self.max_buffer_bytes // 2:
            self._resume()

    @property
    def paused(self) -> bool:
        """Whether reading is stopped because of what the consumers hold."""
        return self._socket is not None and not self._reading

    def _over(self) -> bool:
        return bool(self._held) or self.buffered >= self.max_buffer_bytes

    def _pause(self) -> None:
        if self._reading and self._loop is not None:
            self._reading = False
            self.pauses += 1
            self._loop.remove_reader(self._fd)  # the fd stays readable while nothing is read

    def _resume(self) -> None:
        if self._reading or self._socket is None or self._loop is None or self._over():
            return
        self._reading = True
        self._loop.add_reader(self._fd, self._drain)
        self._loop.call_soon(self._drain)  # edge-triggered: what waits is not signalled again

    @property
    def peers(self) -> int:
        """Connections held."""
        return self._peers.peers if self._peers is not None else 0

    @property
    def refused_peers(self) -> int:
        """Connections refused because max_peers was reached."""
        return self._peers.refused if self._peers is not None else 0

    @property
    def malformed(self) -> int:
        """Messages that were not BinarySerializer messages."""
        return self._drops.malformed

    @property
    def dropped(self) -> int:
        """Well-formed messages for a (db, table) without a consumer."""
        return self._drops.unrouted

    @property
    def unfinished_peers(self) -> int:
        """Connections shut down for sending more of an unfinished message than a message may hold."""
        return self._unfinished.dropped if self._unfinished is not None else 0

    # -- the socket ---------------------------------------------------------------------

    def bind(self) -> None:
        """Bind the socket and start reading it (needs the running event loop)."""
        if self._socket is not None:
            raise RuntimeError(f"ZmqServer has already been bound to the endpoint: {self.endpoint}")
        loop = asyncio.get_running_loop()
        check_ipc_path(self.endpoint)
        context = OwnedContext(self)
        sock = context.socket(zmq.PULL)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.RCVHWM, self.receive_hwm)
        sock.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE_SIZE - 1)  # what C++ can send at most
        _apply_common(sock, self.vrf)
        try:
            sock.bind(self.endpoint)
        except zmq.ZMQError as exc:
            context.close()
            raise OSError(exc.errno, f"zmq bind failed on endpoint {self.endpoint}: {exc}") from None
        self._context = context
        self._socket = sock
        self._loop = loop
        self._where = self._drops.where = self.last_endpoint or self.endpoint
        self._peers = PeerGuard(sock, self._where, self.max_peers, context.keep)
        self._unfinished = self._peers.unfinished = UnfinishedMessages(
            self._where, sock, self.receive_hwm, lambda: self.read_bytes, self._drain, self._peers.shut_down
        )
        # The loop watches the socket's notification fd itself (as pyzmq's asyncio sockets do),
        # and a wake-up drains every message waiting: no future, no task switch per message.
        self._fd = cast(int, sock.getsockopt(zmq.FD))
        self._resume()
        log.info("zmq server bound", endpoint=self._where, max_peers=self.max_peers)
        warn_if_exposed(self._where)

    @property
    def bound(self) -> bool:
        return self._socket is not None

    @property
    def last_endpoint(self) -> str | None:
        """The endpoint as bound: with `tcp://127.0.0.1:*`, the port the system chose."""
        if self._socket is None:
            return None
        return cast(bytes, self._socket.getsockopt(zmq.LAST_ENDPOINT)).decode()

    def _drain(self) -> None:
        """Take the messages waiting off the socket (up to _BURST, then again on the next loop
        iteration, so other tasks run in between) and hand each consumer its changes of the
        burst at once, in order.

        A one-change message of the table the previous message went to, with fields seen
        before, is read by read_one() (most of a producer's set() calls); with other values, by
        read_single() (one pass, any values); any other by deserialize(), which also routes it
        and says what is wrong with a malformed one. When read_one() finds too little (every
        message its own values, or many changes a message), it is not tried for a while: trying
        and keeping tails would cost more than it saves."""
        sock = self._socket
        if sock is None or not self._reading:
            return
        if self._over():
            self._pause()
            return
        recv = sock.recv
        read = _deserialize
        fast = read_one
        single = read_single
        remember = remember_tail
        learn = self._fast_pause <= 0
        handlers = self._handlers
        again = zmq.Again
        burst: dict[ZmqMessageHandler, list[KeyOpFieldsValues]] = {}
        last_db = last_table = None
        # the header() of the table the last message went to (kept from the last burst while
        # no consumer comes or goes) when read_one() is tried, and that table's changes
        head: bytes | None = None
        route: bytes | None = None  # that header, whether read_one() is tried or not
        target: list[KeyOpFieldsValues] = []
        if self._route is not None:
            route, handler = self._route
            target = burst[handler] = []
            if learn:
                head = route
        received = slow = total = kept = 0
        more = True
        try:
            for _ in range(_BURST):
                try:
                    data = recv(zmq.NOBLOCK)
                except again:
                    more = False  # drained: the fd signals again when more arrives
                    break
                received += 1
                size = len(data)
                total += size
                if head is not None:
                    change = fast(data, head)
                    if change is not None:
                        target.append(change)
                        kept += size
                        if total >= _BURST_BYTES:
                            break
                        continue
                slow += 1
                if route is not None:
                    change = single(data, route)
                    if change is not None:
                        if learn:
                            remember(data, change)
                        target.append(change)
                        kept += size
                        if total >= _BURST_BYTES:
                            break
                        continue
                try:
                    db_name, table_name, changes = read(data)
                except ZmqMessageError as exc:
                    self._drops.malformed_message(data, exc)
                    continue
                if table_name != last_table or db_name != last_db:
                    found = handlers.get(db_name, _NONE).get(table_name)
                    if found is None:
                        self._drops.unrouted_message(db_name, table_name)
                        last_db = last_table = head = route = self._route = None
                        continue
                    target = burst.setdefault(found, [])
                    last_db, last_table = db_name, table_name
                    self._route = (header(db_name, table_name), found)
                    route = self._route[0]
                    if learn:
                        head = route
                if learn and len(changes) == 1:
                    remember(data, changes[0])
                target += changes
                kept += size
                if total >= _BURST_BYTES:
                    break
        except zmq.ZMQError as exc:
            more = False
            if exc.errno != zmq.ETERM:
                log.error("zmq receive failed; retrying", endpoint=self._where, error=str(exc))
                self._loop.call_later(0.1, self._drain)  # type: ignore[union-attr]
        finally:
            self.received += received
            self.read_bytes += total + FRAME_OVERHEAD * received
            self._judge_fast(received, slow, learn)
            self._hand_over(burst, kept)
        if self._over():
            self._pause()  # _resume() looks again
        elif more:
            self._loop.call_soon(self._drain)  # type: ignore[union-attr]  # more may wait, unsaid

    def _hand_over(self, burst: dict[ZmqMessageHandler, list[KeyOpFieldsValues]], kept: int) -> None:
        """Each consumer its changes of a burst, with its share of the burst's bytes (by changes)."""
        count = sum(len(changes) for changes in burst.values())
        if not count:
            return
        self.changes += count
        self.buffered += kept
        for handler, changes in burst.items():
            if not changes:
                continue
            try:
                handler.handle_received(changes, kept * len(changes) // count)
            except Exception:  # a consumer's surprise must not stop the server
                log.exception("zmq message handler failed", endpoint=self._where)

    def _judge_fast(self, received: int, slow: int, tried: bool) -> None:
        """Pause read_one() for _FAST_PAUSE messages when, over the last _FAST_JUDGE messages it
        was tried on, it read fewer than a third of them; count the pause down otherwise."""
        if not tried:
            self._fast_pause -= received
            return
        self._fast_tried += received
        self._fast_slow += slow
        if self._fast_tried >= _FAST_JUDGE:
            if self._fast_slow * 3 > self._fast_tried * 2:
                self._fast_pause = _FAST_PAUSE
            self._fast_tried = self._fast_slow = 0

    async def close(self) -> None:
        """Stop reading and close the socket (messages not read yet are lost, as in C++)."""
        sock, self._socket = self._socket, None
        if self._peers is not None:
            self._peers.close()
        if self._unfinished is not None:
            self._unfinished.close()
        if sock is not None:
            assert self._loop is not None  # bind() set it with the socket
            if self._reading:
                self._loop.remove_reader(self._fd)
            self._reading = False
        if self._context is not None:
            self._context.close()  # the socket and the monitor's, then the context
            self._context = None

    async def __aenter__(self) -> ZmqServer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"ZmqServer({self.endpoint!r})"
