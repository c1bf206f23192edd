"""NotificationConsumer: the messages of one pub/sub channel, queued as they are read and popped
as (op, data, values), parsed by the asyncio library's parser (swssd.channels.notification_consumer)."""

from __future__ import annotations

from collections import deque
from typing import Any

from ..channels.notification_consumer import parse_notification
from .dbconnector import DBConnector
from .selectable import Selectable

#: the C++ DEFAULT_NC_POP_BATCH_SIZE
DEFAULT_NC_POP_BATCH_SIZE = 2048
#: the C++ NOTIFICATION_SUBSCRIBE_TIMEOUT, in milliseconds
NOTIFICATION_SUBSCRIBE_TIMEOUT = 1000


class NotificationConsumer(Selectable):
    """NotificationConsumer(db, channel, pri=100, popBatchSize=2048): subscribed at construction."""

    def __init__(self, db: DBConnector, channel: str, pri: int = 100,
                 popBatchSize: int = DEFAULT_NC_POP_BATCH_SIZE) -> None:
        super().__init__(pri)
        self.POP_BATCH_SIZE = popBatchSize
        self._channel = channel
        self._subscribe = db.newConnector(NOTIFICATION_SUBSCRIBE_TIMEOUT)
        self._subscribe.subscribe(channel)
        self._queue: deque[str] = deque()
        self._take_buffered()

    def getFd(self) -> int:
        return self._subscribe.connection.fileno()

    def readData(self) -> int:
        """Queue every message one read completes (the socket is readable)."""
        conn = self._subscribe.connection
        with conn.reading():
            conn.fill()
            self._take_buffered()
        return 0

    def _take_buffered(self) -> None:
        conn = self._subscribe.connection
        while (reply := conn.buffered_reply()) is not False:
            if not isinstance(reply, list) or len(reply) != 3:
                raise RuntimeError(f"getRedisReply operation failed: not a message of channel {self._channel}")
            self._queue.append(str(reply[2]))

    def hasData(self) -> bool:
        return bool(self._queue)

    def hasCachedData(self) -> bool:
        return len(self._queue) > 1

    def peek(self) -> int:
        """1 when a message is queued or waiting on the socket, else 0 (-1: the socket failed)."""
        if self._queue:
            return 1
        conn = self._subscribe.connection
        try:
            if not conn.wait_readable(0):
                return 0
            self.readData()
        except (OSError, RuntimeError):
            return -1
        return 1 if self._queue else 0

    def pop(self) -> list[Any]:
        """[op, data, values] of the oldest message; RuntimeError when none is queued, ValueError
        for a message that is not a notification."""
        if not self._queue:
            raise RuntimeError("notification queue is empty, can't pop")
        data, op, fvs = parse_notification(self._queue.popleft())
        return [op, data, tuple(fvs)]

    def pops(self) -> list[tuple[str, str, tuple[tuple[str, str], ...]]]:
        """Every queued message as (data, op, values): the queue drained, as C++ does."""
        out = []
        while self._queue:
            op, data, fvs = self.pop()
            out.append((data, op, fvs))
        return out
