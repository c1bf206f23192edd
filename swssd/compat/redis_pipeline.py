"""RedisPipeline: a connection of its own that writes can wait on, as the C++ class.

Every C++ writer (Table, ProducerStateTable, ProducerTable, NotificationProducer) made from a
DBConnector builds a RedisPipeline of size 1 around a new connection to the same database; made
from a RedisPipeline with buffered=True, its writes wait there until flush(), until COMMAND_MAX are
waiting, or until a read on the pipeline, then go out in one write. Reads are never queued.
A program's own RedisCommand goes in by push(): queued when the reply expected is a status, an
integer or nil (its type checked at flush() or pop()), sent at once otherwise.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from ..lua import Script
from .connection import RedisConnection
from .dbconnector import DBConnector
from .redis_command import (
    REDIS_REPLY_INTEGER,
    REDIS_REPLY_NIL,
    REDIS_REPLY_STATUS,
    RedisCommand,
    RedisReply,
    check_reply_type,
)

Command = tuple[object, ...]

#: the reply types whose commands push() queues rather than sends
_QUEUED_TYPES = (REDIS_REPLY_NIL, REDIS_REPLY_STATUS, REDIS_REPLY_INTEGER)


class RedisPipeline:
    """RedisPipeline(db, sz=128)."""

    #: the C++ NEWCONNECTOR_TIMEOUT: the pipeline's connection waits for ever
    NEWCONNECTOR_TIMEOUT = 0

    def __init__(self, db: DBConnector, sz: int = 128) -> None:
        self.COMMAND_MAX = sz
        self._db = db.newConnector(self.NEWCONNECTOR_TIMEOUT)
        self.connection: RedisConnection = self._db.connection
        self._queued: list[tuple[Script | None, Command]] = []
        #: the reply type push() expects of each queued command (None: an error reply is all it checks)
        self._expected: list[int | None] = []
        #: replies read off the socket (by pop()) but not yet checked: (script, command, reply, type)
        self._unread: list[tuple[Script | None, Command, Any, int | None]] = []
        self._publish_channels: list[str] = []
        self._publish_script: Script | None = None

    def getDBConnector(self) -> DBConnector:
        return self._db

    def getDbId(self) -> int:
        return self._db.getDbId()

    def getDbName(self) -> str:
        return self._db.getDbName()

    def size(self) -> int:
        """Commands whose replies have not been read yet."""
        return len(self._queued) + len(self._unread)

    def write(self, command: Command, buffered: bool) -> None:
        """A write: sent now unless `buffered` (then when COMMAND_MAX wait, or at flush())."""
        if not buffered and not self._queued:
            self.connection.command(*command)
            return
        self._queue(None, command, None)
        if not buffered or len(self._queued) >= self.COMMAND_MAX:
            self.flush()

    def evalsha(self, script: Script, keys: Sequence[object], args: Sequence[object], buffered: bool) -> None:
        """An EVALSHA write; sent alone, one refused with NOSCRIPT is loaded and sent again."""
        if not buffered and not self._queued:
            self.connection.evalsha(script, keys, args)
            return
        self._queue(script, ("EVALSHA", script.sha, str(len(keys)), *keys, *args), None)
        if not buffered or len(self._queued) >= self.COMMAND_MAX:
            self.flush()

    def flush(self) -> None:
        """Send every waiting write in one write, then read every answer (the first error raised,
        any script refused with NOSCRIPT loaded for the next call); then the channels' "G"."""
        if not self._queued and not self._unread:
            return
        self._send_queued()
        unread, self._unread = self._unread, []
        missing = {script for script, _, reply, _ in unread if script and _is_noscript(reply)}
        if missing:
            self.connection.load_scripts(*missing)
        for _, command, reply, reply_type in unread:
            _check(self.connection, reply, command, reply_type)
        self.publish()

    def _queue(self, script: Script | None, command: Command, reply_type: int | None) -> None:
        self._queued.append((script, command))
        self._expected.append(reply_type)

    def _send_queued(self) -> None:
        """Write the queue in one write and read its replies into the unread ones."""
        if not self._queued:
            return
        queued, self._queued = self._queued, []
        expected, self._expected = self._expected, []
        replies = self.connection.pipeline_replies([command for _, command in queued])
        self._unread += [(script, command, reply, reply_type)
                         for (script, command), reply, reply_type in zip(queued, replies, expected)]

    def push(self, command: RedisCommand, expectedType: int | None = None) -> RedisReply | None:
        """A program's command: queued when `expectedType` is a status, integer or nil reply (None
        returned; the type checked when it is read), else sent after the waiting writes and its
        reply returned (a RedisReply, where the binding returns an opaque redisReply pointer)."""
        if not command.args:
            raise ValueError("RedisPipeline.push of a RedisCommand that was never formatted")
        if expectedType in _QUEUED_TYPES:
            self._queue(None, command.args, expectedType)
            if self.size() >= self.COMMAND_MAX:
                self.flush()
            return None
        reply = self.read(*command.args)
        if expectedType is not None:
            check_reply_type(reply, expectedType, command.toPrintableString())
        return RedisReply(reply)

    def pop(self) -> RedisReply | None:
        """The reply of the oldest waiting command, its type checked (None when nothing waits)."""
        if not self._unread:
            self._send_queued()
        if not self._unread:
            return None
        _, command, reply, reply_type = self._unread.pop(0)
        return RedisReply(_check(self.connection, reply, command, reply_type))

    def addChannel(self, channel: str) -> None:
        """Publish "G" on `channel` after each flush that sent something (one Lua script for
        every channel added, as the C++ builds it)."""
        if channel in self._publish_channels:
            return
        self._publish_channels.append(channel)
        source = "".join(f"redis.call('PUBLISH', '{name}', 'G')\n" for name in self._publish_channels).encode()
        self._publish_script = Script("pipeline_publish", source, hashlib.sha1(source).hexdigest())
        self.loadRedisScript(source.decode())

    def publish(self) -> None:
        """The added channels' "G" (nothing when none was added)."""
        if self._publish_script is not None:
            self.connection.evalsha(self._publish_script, [], [])

    def read(self, *command: object) -> Any:
        """A read (or any command whose answer is wanted): the waiting writes first."""
        self.flush()
        return self.connection.command(*command)

    def loadRedisScript(self, script: str) -> str:
        """SCRIPT LOAD; the SHA1."""
        return str(self.read("SCRIPT", "LOAD", script))


def _check(connection: RedisConnection, reply: Any, command: Command, reply_type: int | None) -> Any:
    """The reply, or RuntimeError for an error reply or one not of the type push() was told."""
    connection.raise_if_error(reply, command)
    if reply_type is not None:
        check_reply_type(reply, reply_type, " ".join(map(str, command)))
    return reply


def _is_noscript(reply: Any) -> bool:
    return isinstance(reply, Exception) and str(reply).startswith("NOSCRIPT")
