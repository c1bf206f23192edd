"""RedisPipeline: a connection of its own that writes can wait on, as the C++ class.

Every C++ writer (Table, ProducerStateTable, ProducerTable, NotificationProducer) made from a
DBConnector builds a RedisPipeline of size 1 around a new connection to the same database; made
from a RedisPipeline with buffered=True, its writes wait there until flush(), until COMMAND_MAX are
waiting, or until a read on the pipeline, then go out in one write. Reads are never queued.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..lua import Script
from .connection import RedisConnection
from .dbconnector import DBConnector

Command = tuple[object, ...]


class RedisPipeline:
    """RedisPipeline(db, sz=128)."""

    #: the C++ NEWCONNECTOR_TIMEOUT: the pipeline's connection waits for ever
    NEWCONNECTOR_TIMEOUT = 0

    def __init__(self, db: DBConnector, sz: int = 128) -> None:
        self.COMMAND_MAX = sz
        self._db = db.newConnector(self.NEWCONNECTOR_TIMEOUT)
        self.connection: RedisConnection = self._db.connection
        self._queued: list[tuple[Script | None, Command]] = []

    def getDBConnector(self) -> DBConnector:
        return self._db

    def getDbId(self) -> int:
        return self._db.getDbId()

    def getDbName(self) -> str:
        return self._db.getDbName()

    def size(self) -> int:
        """Writes waiting."""
        return len(self._queued)

    def write(self, command: Command, buffered: bool) -> None:
        """A write: sent now unless `buffered` (then when COMMAND_MAX wait, or at flush())."""
        if not buffered and not self._queued:
            self.connection.command(*command)
            return
        self._queued.append((None, command))
        if not buffered or len(self._queued) >= self.COMMAND_MAX:
            self.flush()

    def evalsha(self, script: Script, keys: Sequence[object], args: Sequence[object], buffered: bool) -> None:
        """An EVALSHA write; sent alone, one refused with NOSCRIPT is loaded and sent again."""
        if not buffered and not self._queued:
            self.connection.evalsha(script, keys, args)
            return
        self._queued.append((script, ("EVALSHA", script.sha, len(keys), *keys, *args)))
        if not buffered or len(self._queued) >= self.COMMAND_MAX:
            self.flush()

    def flush(self) -> None:
        """Send every waiting write in one write, then read every answer (the first error raised,
        any script refused with NOSCRIPT loaded for the next call)."""
        if not self._queued:
            return
        queued, self._queued = self._queued, []
        replies = self.connection.pipeline_replies([command for _, command in queued])
        missing = {script for (script, _), reply in zip(queued, replies) if script and _is_noscript(reply)}
        if missing:
            self.connection.load_scripts(*missing)
        for reply, (_, command) in zip(replies, queued):
            self.connection.raise_if_error(reply, command)

    def read(self, *command: object) -> Any:
        """A read (or any command whose answer is wanted): the waiting writes first."""
        self.flush()
        return self.connection.command(*command)

    def loadRedisScript(self, script: str) -> str:
        """SCRIPT LOAD; the SHA1."""
        return str(self.read("SCRIPT", "LOAD", script))


def _is_noscript(reply: Any) -> bool:
    return isinstance(reply, Exception) and str(reply).startswith("NOSCRIPT")
