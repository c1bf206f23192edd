"""RedisTransactioner: MULTI, queued commands with the reply type each must give, EXEC, as the C++
class the binding exposes (its `exec` is `_exec` there, Python 2's keyword renamed by SWIG).

It sends on the DBConnector's own connection, as the C++ does. A reply the binding hands over as an
opaque redisReply pointer (dequeueReply) is a RedisReply holding the value here.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Iterator, Sequence
from typing import Any

from .connection import RedisConnection, RedisError
from .dbconnector import DBConnector
from .redis_command import REDIS_REPLY_ARRAY, REDIS_REPLY_STATUS, RedisCommand, RedisReply, check_reply_type, reply_type

#: what the C++ exec() throws (a std::system_error with EIO, whose what() appends strerror)
UNEXPECTED_RESULT = "Got unexpected result: Input/output error"
WRONG_COUNT = "Got to different number of answers!: Input/output error"


@contextlib.contextmanager
def discarded_on_failure(conn: RedisConnection) -> Iterator[None]:
    """Around MULTI ... EXEC: an exception before EXEC (a subscription that could not be made, a
    signal) sends DISCARD, so the connection is not left queueing every later command (a get
    answered "QUEUED"). Nothing is sent when it ends normally."""
    try:
        yield
    except BaseException:
        with contextlib.suppress(RedisError):  # not in MULTI any more, or the connection is unusable
            conn.command("DISCARD")
        raise


def exec_results(replies: Any, expected: Sequence[int]) -> list[Any] | None:
    """EXEC's replies checked as the C++ exec() checks them: None when the transaction was
    discarded (a WATCHed key changed), RuntimeError with the binding's message when their count
    or a reply's type is not what was queued (an error reply among them: a key of the wrong
    type), else the replies."""
    if reply_type(replies) != REDIS_REPLY_ARRAY:
        return None
    if len(replies) != len(expected):
        raise RuntimeError(WRONG_COUNT)
    for reply, wanted in zip(replies, expected):
        if reply_type(reply) != wanted and not (isinstance(reply, str) and wanted == REDIS_REPLY_STATUS):
            raise RuntimeError(UNEXPECTED_RESULT)
    return list(replies)


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
        replies = exec_results(self._db.connection.command("EXEC"), self._expected)
        if replies is None:
            return False
        self._expected.clear()
        self._results.clear()
        self._results.extend(RedisReply(reply) for reply in replies)
        return True

    def dequeueReply(self) -> RedisReply | None:
        """The next reply of the last EXEC, None when none is left."""
        return self._results.popleft() if self._results else None
