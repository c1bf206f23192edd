"""RedisTransactioner: MULTI, queued commands with the reply type each must give, EXEC, as the C++
class the binding exposes (its `exec` is `_exec` there, Python 2's keyword renamed by SWIG).

It sends on the DBConnector's own connection, as the C++ does. A reply the binding hands over as an
opaque redisReply pointer (dequeueReply) is a RedisReply holding the value here.
"""

from __future__ import annotations

from collections import deque

from .dbconnector import DBConnector
from .redis_command import REDIS_REPLY_ARRAY, REDIS_REPLY_STATUS, RedisCommand, RedisReply, check_reply_type, reply_type


class RedisTransactioner:
    """RedisTransactioner(db)."""

    def __init__(self, db: DBConnector) -> None:
        self._db = db
        self._expected: deque[int] = deque()
        self._results: deque[RedisReply] = deque()

    def multi(self) -> None:
        """Start a transaction (the expected types of an earlier one forgotten)."""
        self._expected.clear()
        check_reply_type(self._db.connection.command("MULTI"), REDIS_REPLY_STATUS, "MULTI")

    def enqueue(self, command: str | RedisCommand, expectedType: int) -> None:
        """Queue a command (a RedisCommand, or a command line split at spaces); RuntimeError when
        Redis does not answer QUEUED."""
        args = command.args if isinstance(command, RedisCommand) else tuple(command.split())
        reply = self._db.connection.command(*args)
        if reply != "QUEUED":
            raise RuntimeError(f"Redis reply {reply} != QUEUED, command: {' '.join(args)}")
        self._expected.append(expectedType)

    def _exec(self) -> bool:
        """EXEC: False when the transaction was discarded, else True with each reply kept for
        dequeueReply(); RuntimeError when a reply is not of the type enqueue() was told."""
        replies = self._db.connection.command("EXEC")
        if reply_type(replies) != REDIS_REPLY_ARRAY:
            return False
        if len(replies) != len(self._expected):
            raise RuntimeError("Got to different number of answers!")
        self._results.clear()
        for reply in replies:
            expected = self._expected.popleft()
            if reply_type(reply) != expected and not (isinstance(reply, str) and expected == REDIS_REPLY_STATUS):
                raise RuntimeError(f"Got unexpected result: expected redis type {expected}, got {reply!r}")
        self._results.extend(RedisReply(reply) for reply in replies)
        return True

    def dequeueReply(self) -> RedisReply | None:
        """The next reply of the last EXEC, None when none is left."""
        return self._results.popleft() if self._results else None
