"""One blocking connection to a redis-server: commands packed as swssd packs them (swssd.redis.wire),
replies read by the hiredis reader, no event loop.

It is what hiredis's redisContext is to the C++ library: requests and replies in order on one
socket, the connect timeout also bounding every read and write (0 waits for ever), and a real file
descriptor a program can poll. Strings go out as UTF-8 and come back decoded with surrogateescape,
so bytes that are not UTF-8 round-trip.
"""

from __future__ import annotations

import select
import socket
from collections.abc import Sequence
from typing import Any

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

    def send(self, *args: object) -> None:
        """Write one command without waiting for its reply."""
        self.send_packed(pack_command(args))

    def send_packed(self, data: bytes) -> None:
        try:
            self._sock.sendall(data)
        except OSError as exc:
            raise ConnectionLostError(f"Redis connection to {self.where} failed on write: {exc}") from None

    def command(self, *args: object) -> Any:
        """Send one command and return its reply; RedisError for an error reply.

        The path of every single call, so written flat: one sendall, then the reader."""
        try:
            self._sock.sendall(pack_command(args))
        except OSError as exc:
            raise ConnectionLostError(f"Redis connection to {self.where} failed on write: {exc}") from None
        reply = self._reader.gets()
        while reply is False:
            self._fill()
            reply = self._reader.gets()
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
        self.send_packed(b"".join(pack_command(args) for args in commands))
        return [self.read_reply() for _ in commands]

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
        command = ("EVALSHA", script.sha, len(keys), *keys, *args)
        try:
            self._sock.sendall(pack_command(command))
        except OSError as exc:
            raise ConnectionLostError(f"Redis connection to {self.where} failed on write: {exc}") from None
        reply = self._reader.gets()
        while reply is False:
            self._fill()
            reply = self._reader.gets()
        if type(reply) is hiredis.ReplyError:
            if not _noscript(reply):
                raise RedisError(f"EVALSHA of {script.name} failed on {self.where}: {reply}")
            self.load_scripts(script)
            self.send_packed(pack_command(command))
            reply = self._checked(self.read_reply(), command)
        return reply

    def evalsha_many(self, calls: Sequence[tuple[Script, Sequence[object], Sequence[object]]]) -> list[Any]:
        """EVALSHAs in one write, their replies read after. A NOSCRIPT among them is raised as
        the error it is (later calls ran already, so none is sent again), with the script loaded
        for the next call; the C++ library raises there too."""
        commands = [("EVALSHA", script.sha, len(keys), *keys, *args) for script, keys, args in calls]
        if not commands:
            return []
        self.send_packed(b"".join(pack_command(command) for command in commands))
        replies = [self.read_reply() for _ in commands]
        missing = {call[0] for call, reply in zip(calls, replies) if _noscript(reply)}
        if missing:
            self.load_scripts(*missing)
        for reply, command in zip(replies, commands):
            self._checked(reply, command)
        return replies

    def read_reply(self) -> Any:
        """The next reply, waiting for it as long as the time-out allows."""
        reply = self._reader.gets()
        while reply is False:
            self._fill()
            reply = self._reader.gets()
        return reply

    def buffered_reply(self) -> Any:
        """The next reply if it has been read off the socket already, else False."""
        return self._reader.gets()

    def wait_readable(self, timeout: float | None) -> bool:
        """Whether the socket has data within `timeout` seconds (None: wait for ever)."""
        ready, _, _ = select.select([self._sock], [], [], timeout)
        return bool(ready)

    def fill(self) -> bytes:
        """One recv() into the reader (call it when the socket is readable): the bytes read, for a
        caller that counts the replies they complete."""
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


def _noscript(reply: Any) -> bool:
    return isinstance(reply, hiredis.ReplyError) and str(reply).startswith("NOSCRIPT")


def _name(args: tuple[object, ...]) -> str:
    """The command's name as a message shows it."""
    return str(args[0]) if args else "command"
