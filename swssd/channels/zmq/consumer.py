"""ZmqConsumerStateTable: the consumer side of the ZMQ state-table channel, a Selectable."""

from __future__ import annotations

from collections import deque

import structlog

from ...fields import KeyOpFieldsValues
from ...redis.connector import DBConnector
from ..selectable import Selectable, Subscription
from ..table import TableBase
from .db_updater import AsyncDBUpdater
from .sockets import ZmqServer

log = structlog.get_logger(__name__)

#: ZmqConsumerStateTable::DEFAULT_POP_BATCH_SIZE
DEFAULT_POP_BATCH_SIZE = 128
#: changes received and not popped above which the server stops reading (the daemon passes the
#: table's pending_limit)
DEFAULT_MAX_WAITING = 100_000


class ZmqConsumerStateTable(Selectable, TableBase):
    """What `server` receives for (db.name, name), for Select and pops() like every consumer.

    As the C++ ZmqConsumerStateTable: every change arrives as sent (SET with its fields, DEL
    without), in order, none merged; pops() returns up to pop_batch_size of them, oldest first;
    a pop_batch_size below 1 is replaced by 128 (and logged). Nothing is read from Redis and
    nothing received before construction is kept (the server drops messages for tables without
    a consumer). With `db_persistence`, each received change is also written to the Redis table
    as the C++ AsyncDBUpdater does (SET replaces the entry, DEL removes it), by a task of its own.

    It has no pub/sub subscription: the server wakes Select when changes arrive.

    While more than `max_waiting` changes wait to be popped (Select passes the table over while
    its pending work is at its limit), the server stops reading until half of them are popped:
    the producers' queues fill instead of this process. `change_bytes` estimates the message
    bytes a change takes (rising at once, falling slowly), for bounds in bytes on what was popped.
    """

    def __init__(
        self,
        db: DBConnector,
        name: str,
        server: ZmqServer,
        pop_batch_size: int = DEFAULT_POP_BATCH_SIZE,
        priority: int = 0,
        db_persistence: bool = False,
        max_waiting: int = DEFAULT_MAX_WAITING,
    ) -> None:
        if pop_batch_size < 1:
            log.error("invalid pop batch size; using the default", given=pop_batch_size, used=DEFAULT_POP_BATCH_SIZE)
            pop_batch_size = DEFAULT_POP_BATCH_SIZE
        Selectable.__init__(self, db, pop_batch_size, priority)
        TableBase.__init__(self, db, name)
        if not db.name:
            raise ValueError("ZmqConsumerStateTable needs a DBConnector with a database name (messages carry it)")
        self.server = server
        self.db_name = db.name
        #: changes received
        self.received = 0
        self.max_waiting = max(1, max_waiting)
        #: message bytes a change took, recently (see the class docstring)
        self.change_bytes = 0
        #: [changes, bytes] of each hand-over not fully popped yet, oldest first
        self._sizes: deque[list[int]] = deque()
        self._holding = False
        #: held by pause_reading() (its table's pending work at its limit)
        self._pause_token: object | None = None
        self._updater = AsyncDBUpdater(db, name) if db_persistence else None
        server.register(self.db_name, name, self)

    # -- Select's side ------------------------------------------------------------------

    @property
    def subscription(self) -> Subscription | None:
        return None

    @property
    def ready(self) -> bool:
        return bool(self._buffer)

    async def on_subscribed(self) -> None:
        """Nothing to look for: the channel keeps nothing for a consumer that was not there."""

    def on_message(self, channel: str, data: str) -> None:  # pragma: no cover - no subscription
        pass

    def on_resubscribed(self) -> None:  # pragma: no cover - no subscription
        pass

    # -- the server's side --------------------------------------------------------------

    def handle_received(self, changes: list[KeyOpFieldsValues], size: int = 0) -> None:
        """Changes the server read, and the bytes of their messages (on the event loop; never
        blocks); the bytes go back to the server with server.release() as they are popped."""
        if not changes:
            return
        buffer = self._buffer
        woken = bool(buffer)  # Select was woken when the buffer stopped being empty
        buffer.extend(changes)
        n = len(changes)
        self.received += n
        if size:
            self._sizes.append([n, size])
            per = size // n
            cb = self.change_bytes
            self.change_bytes = per if per > cb else cb + ((per - cb) >> 4)
        if len(buffer) >= self.max_waiting and not self._holding:
            self._holding = True
            self.server.hold(self)
        updater = self._updater
        if updater is not None:
            for key, op, fvs in changes:
                updater.update(key, op, fvs)
        if not woken:
            self.wake()

    # -- popping ------------------------------------------------------------------------

    async def pops(self) -> list[KeyOpFieldsValues]:
        """Up to pop_batch_size changes, oldest first."""
        buffer = self._buffer
        n = len(buffer)
        if n <= self.pop_batch_size:
            out = list(buffer)
            buffer.clear()
        else:
            popleft = buffer.popleft
            out = [popleft() for _ in range(self.pop_batch_size)]
        if self._sizes or self._holding:
            self._popped(len(out))
        return out

    async def pop(self) -> KeyOpFieldsValues | None:
        """The oldest change; None when none waits."""
        if not self._buffer:
            return None
        change = self._buffer.popleft()
        if self._sizes or self._holding:
            self._popped(1)
        return change

    def pause_reading(self) -> None:
        """The table's pending work is at its limit: the server reads nothing more (for any of
        its tables) until resume_reading(), so the producers' queues fill, not this process."""
        if self._pause_token is None:
            self._pause_token = object()
            self.server.hold(self._pause_token)

    def resume_reading(self) -> None:
        """Undo pause_reading()."""
        token, self._pause_token = self._pause_token, None
        if token is not None:
            self.server.unhold(token)

    def _popped(self, count: int) -> None:
        """Give the server back the bytes of `count` popped changes; let it read again once
        half of max_waiting is left."""
        sizes = self._sizes
        freed = 0
        while count and sizes:
            chunk = sizes[0]
            if chunk[0] <= count:
                count -= chunk[0]
                freed += chunk[1]
                sizes.popleft()
            else:
                part = chunk[1] * count // chunk[0]
                chunk[0] -= count
                chunk[1] -= part
                freed += part
                count = 0
        if freed:
            self.server.release(freed)
        if self._holding and len(self._buffer) <= self.max_waiting // 2:
            self._holding = False
            self.server.unhold(self)

    def db_updater_queue_size(self) -> int:
        """Changes not yet persisted (C++ dbUpdaterQueueSize); an error without persistence."""
        if self._updater is None:
            raise RuntimeError("Database persistence is not enabled")
        return self._updater.queue_size()

    @property
    def waiting(self) -> int:
        """Changes received and not popped yet (in memory only: a restart loses them, as in C++)."""
        return len(self._buffer)

    @property
    def db_persistence(self) -> bool:
        return self._updater is not None

    async def flush(self) -> None:
        """Wait until every change received so far is persisted."""
        if self._updater is not None:
            await self._updater.flush()

    async def close(self) -> None:
        """Stop receiving (unregister from the server) and persist what is queued."""
        self.server.unregister(self.db_name, self.name)
        self.resume_reading()
        if self._holding:
            self._holding = False
            self.server.unhold(self)
        self.server.release(sum(size for _n, size in self._sizes))
        self._sizes.clear()
        if self._updater is not None:
            await self._updater.close()

    def __repr__(self) -> str:
        return f"ZmqConsumerStateTable({self.name!r}, db={self.db_name}, server={self.server.endpoint!r})"
