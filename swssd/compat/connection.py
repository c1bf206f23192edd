"""One blocking connection to a redis-server: commands packed as swssd packs them (swssd.redis.wire),
replies read by the hiredis reader, no event loop.

It is what hiredis's redisContext is to the C++ library: requests and replies in order on one
socket, the connect timeout also bounding every read and write (0 waits for ever), and a real file
descriptor a program can poll. Strings go out as UTF-8 and come back decoded with surrogateescape,
so bytes that are not UTF-8 round-trip.

No reply ever goes to the wrong call: a call that ends before its reply is read (a time-out, a
signal handler that raises, KeyboardInterrupt, a lost connection: any exception escaping part
way) leaves the connection unusable. It is shut down at once (Redis drops the client, so a BLPOP
it was blocked in pops nothing) and every later call on it raises ConnectionLostError; its late
reply would otherwise be the next call's. That is the binding's rule for a failed call: hiredis
marks the context failed and every later redisGetReply errors. It does not reconnect behind the
program's back, as a new connection would silently lose what the old one held (a subscription, a
WATCH or MULTI, CLIENT SETNAME); a program makes a new connector (DBInterface, under
SonicV2Connector's reads, reconnects as the C++ class does). Waiting for pushed replies (pub/sub)
is different: a signal that interrupts the wait itself, before anything was read, leaves the
connection as it was.
"""

from __future__ import annotations

import contextlib
import select
import socket
from collections.abc import Sequence
from types import TracebackType
from typing import Any, NoReturn

import hiredis

from ..lua import Script
from ..redis.wire import pack_command

#: bytes asked of the socket per read
READ_SIZE = 65536


class RedisError(RuntimeError):
    """A Redis error reply, a lost connection or a time-out: the binding raises RuntimeError for each."""


class ConnectError(RedisError):
    """The server could not be reached at all."""


class ConnectionLostError(RedisError):
    """The connection failed or timed out under a request (what DBInterface reconnects after)."""


def _timeout(timeout_ms: int) -> float | None:
    """The C++ rule: 0 ms means no time-out."""
    return timeout_ms / 1000 if timeout_ms else None


class RedisConnection:
    """A socket to one redis-server and the reader of its replies."""

    def __init__(self, sock: socket.socket, where: str, host: str = "", port: int = 0, path: str = "") -> None:
        self._sock = sock
        self._reader = hiredis.Reader(encoding="utf-8", errors="surrogateescape")
        self.where = where
        self.host = host
        self.port = port
        self.path = path
        #: True from a call's write until its reply is taken: still True when a call starts, the
        #: one before it ended part way and the connection is unusable
        self._in_call = False
        #: why the connection is unusable, for the error later calls raise
        self._unusable = ""
        self._reading = _Reading(self)

    @classmethod
    def tcp(cls, host: str, port: int, timeout_ms: int) -> RedisConnection:
        """Connect over TCP; RedisError naming the address when it cannot."""
        where = f"{host}:{port}"
        try:
            sock = socket.create_connection((host, port), timeout=_timeout(timeout_ms))
        except (OSError, OverflowError) as exc:
            reason = getattr(exc, "strerror", None) or exc
            raise ConnectError(f"Unable to connect to redis - {where}: {reason}") from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return cls(sock, where, host=host, port=port)

    @classmethod
    def unix(cls, path: str, timeout_ms: int) -> RedisConnection:
        """Connect to a unix socket; RedisError naming the path when it cannot."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(_timeout(timeout_ms))
        try:
            sock.connect(path)
        except OSError as exc:
            sock.close()
            raise ConnectError(f"Unable to connect to redis (unix-socket) - {path}: {exc.strerror or exc}") from None
        return cls(sock, path, path=path)

    def reconnect(self, timeout_ms: int) -> RedisConnection:
        """A new connection to the same server (the C++ newConnector's context)."""
        if self.path:
            return RedisConnection.unix(self.path, timeout_ms)
        return RedisConnection.tcp(self.host, self.port, timeout_ms)

    def fileno(self) -> int:
        return self._sock.fileno()

    def close(self) -> None:
        self._sock.close()

    def command(self, *args: object) -> Any:
        """Send one command and return its reply; RedisError for an error reply.

        The path of every single call, so written flat: one sendall, then the reader."""
        data = pack_command(args)
        if self._in_call:
            self._refuse()
        self._in_call = True
        try:
            try:
                self._sock.sendall(data)
            except OSError as exc:
                raise ConnectionLostError(f"Redis connection to {self.where} failed on write: {exc}") from None
            reply = self._reader.gets()
            while reply is False:
                self._fill()
                reply = self._reader.gets()
        except BaseException as exc:
            self._abandon(_name(args), exc)
            raise
        self._in_call = False
        if type(reply) is hiredis.ReplyError:
            raise RedisError(f"{_name(args)} failed on {self.where}: {reply}")
        return reply

    def pipeline(self, commands: Sequence[tuple[object, ...]]) -> list[Any]:
        """Send the commands in one write, read every reply, then raise the first error reply."""
        replies = self.pipeline_replies(commands)
        for reply, args in zip(replies, commands):
            self._checked(reply, args)
        return replies

    def pipeline_replies(self, commands: Sequence[tuple[object, ...]]) -> list[Any]:
        """Send the commands in one write and read every reply, error replies included as they are."""
        if not commands:
            return []
        return self._exchange(b"".join(pack_command(args) for args in commands), len(commands), _name(commands[0]))

    def raise_if_error(self, reply: Any, args: tuple[object, ...]) -> None:
        """RedisError naming the command when `reply` is an error reply."""
        self._checked(reply, args)

    def _checked(self, reply: Any, args: tuple[object, ...]) -> Any:
        if isinstance(reply, hiredis.ReplyError):
            raise RedisError(f"{_name(args)} failed on {self.where}: {reply}")
        return reply

    def load_scripts(self, *scripts: Script) -> None:
        """SCRIPT LOAD each, in one write (the C++ tables load theirs when constructed)."""
        self.pipeline([("SCRIPT", "LOAD", script.source) for script in scripts])

    def evalsha(self, script: Script, keys: Sequence[object], args: Sequence[object]) -> Any:
        """EVALSHA; after a NOSCRIPT (a SCRIPT FLUSH since it was loaded) the script is loaded
        and the call made once more. Written flat, as command(): every table write comes here."""
        command = ("EVALSHA", script.sha, str(len(keys)), *keys, *args)
        data = pack_command(command)
        if self._in_call:
            self._refuse()
        self._in_call = True
        try:
            try:
                self._sock.sendall(data)
            except OSError as exc:
                raise ConnectionLostError(f"Redis connection to {self.where} failed on write: {exc}") from None
            reply = self._reader.gets()
            while reply is False:
                self._fill()
                reply = self._reader.gets()
        except BaseException as exc:
            self._abandon(f"EVALSHA of {script.name}", exc)
            raise
        self._in_call = False
        if type(reply) is hiredis.ReplyError:
            if not _noscript(reply):
                raise RedisError(f"EVALSHA of {script.name} failed on {self.where}: {reply}")
            self.load_scripts(script)
            reply = self._checked(self._exchange(data, 1, f"EVALSHA of {script.name}")[0], command)
        return reply

    def evalsha_many(self, calls: Sequence[tuple[Script, Sequence[object], Sequence[object]]]) -> list[Any]:
        """EVALSHAs in one write, their replies read after. A NOSCRIPT among them is raised as
        the error it is (later calls ran already, so none is sent again), with the script loaded
        for the next call; the C++ library raises there too."""
        commands = [("EVALSHA", script.sha, str(len(keys)), *keys, *args) for script, keys, args in calls]
        if not commands:
            return []
        replies = self._exchange(b"".join(pack_command(command) for command in commands), len(commands), "EVALSHA")
        missing = {call[0] for call, reply in zip(calls, replies) if _noscript(reply)}
        if missing:
            self.load_scripts(*missing)
        for reply, command in zip(replies, commands):
            self._checked(reply, command)
        return replies

    def _exchange(self, data: bytes, count: int, what: str) -> list[Any]:
        """Write `data` (`count` commands) and read their `count` replies, as one call."""
        if self._in_call:
            self._refuse()
        self._in_call = True
        try:
            try:
                self._sock.sendall(data)
            except OSError as exc:
                raise ConnectionLostError(f"Redis connection to {self.where} failed on write: {exc}") from None
            replies = [self._read() for _ in range(count)]
        except BaseException as exc:
            self._abandon(what, exc)
            raise
        self._in_call = False
        return replies

    def _refuse(self) -> NoReturn:
        """Raise for a call on a connection an earlier call left part way (shut down, if that
        call's own handler did not get to it)."""
        self._shutdown()
        reason = self._unusable or "an earlier call ended before its reply was read"
        raise ConnectionLostError(f"Redis connection to {self.where} is unusable: {reason}; make a new connector")

    def _abandon(self, what: str, exc: BaseException) -> None:
        """The call `what` ends by `exc` before its reply was taken: the connection stays marked
        as in a call (so unusable) and is shut down now."""
        if not self._unusable:
            cause = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            self._unusable = f"{what} ended before its reply was read ({cause})"
        self._shutdown()

    def _shutdown(self) -> None:
        """End the connection for Redis and for every later read, keeping the descriptor (a
        Select holding it sees it readable and the read fail, as when Redis dies)."""
        with contextlib.suppress(OSError):  # closed already, or the peer is gone
            self._sock.shutdown(socket.SHUT_RDWR)

    def _read(self) -> Any:
        """The next reply, waiting for it as long as the time-out allows (inside a call)."""
        reply = self._reader.gets()
        while reply is False:
            self._fill()
            reply = self._reader.gets()
        return reply

    def next_reply(self, timeout: float | None) -> Any:
        """The next reply Redis pushed (a subscription's message): one read already, else waited
        for up to `timeout` seconds (None: for ever); False when none came. A signal interrupting
        the wait leaves the connection as it was; a read ended part way leaves it unusable."""
        if self._in_call:
            self._refuse()
        reply = self._reader.gets()
        if reply is not False or not self.wait_readable(timeout):
            return reply
        with self._reading:
            return self._read()

    def reading(self) -> _Reading:
        """`with conn.reading():` around a read of pushed replies (fill(), buffered_reply()) and
        the caller's bookkeeping of them, which must finish whole: an exception escaping it
        leaves the connection unusable, as one escaping a call does."""
        return self._reading

    def buffered_reply(self) -> Any:
        """The next reply if it has been read off the socket already, else False."""
        return self._reader.gets()

    def wait_readable(self, timeout: float | None) -> bool:
        """Whether the socket has data within `timeout` seconds (None: wait for ever). By poll(),
        not select(): a descriptor past 1,023 is out of select()'s range."""
        fd = self._sock.fileno()
        if fd < 0:
            raise ConnectionLostError(f"Redis connection to {self.where} is closed")
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(None if timeout is None else max(timeout, 0.0) * 1000))

    def fill(self) -> bytes:
        """One recv() into the reader (call it inside reading(), when the socket is readable):
        the bytes read, for a caller that counts the replies they complete."""
        return self._fill()

    def _fill(self) -> bytes:
        try:
            data = self._sock.recv(READ_SIZE)
        except TimeoutError:
            raise ConnectionLostError(f"Redis connection to {self.where} timed out waiting for a reply") from None
        except OSError as exc:
            raise ConnectionLostError(f"Redis connection to {self.where} failed on read: {exc}") from None
        if not data:
            raise ConnectionLostError(f"Redis connection to {self.where} was closed by the server")
        self._reader.feed(data)
        return data


class _Reading:
    """RedisConnection.reading()'s context: in a call while inside, abandoned on an exception."""

    __slots__ = ("_conn",)

    def __init__(self, conn: RedisConnection) -> None:
        self._conn = conn

    def __enter__(self) -> None:
        conn = self._conn
        if conn._in_call:
            conn._refuse()
        conn._in_call = True

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if exc is None:
            self._conn._in_call = False
        else:
            self._conn._abandon("a read of a pushed reply", exc)


def _noscript(reply: Any) -> bool:
    return isinstance(reply, hiredis.ReplyError) and str(reply).startswith("NOSCRIPT")


def _name(args: tuple[object, ...]) -> str:
    """The command's name as a message shows it."""
    return str(args[0]) if args else "command"
