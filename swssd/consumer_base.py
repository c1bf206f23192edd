"""What the Redis pop channels (key set, op queue) share: readiness by wake-up."""

from __future__ import annotations

from typing import Any

from redis.exceptions import ResponseError

from .connector import CONNECTION_ERRORS, DBConnector
from .fields import KeyOpFieldsValues
from .selectable import Selectable, Subscription
from .table import TableBase


class ConsumerTableBase(Selectable, TableBase):
    """A consumer popped by a script, woken by PUBLISHes on `<TABLE>_CHANNEL@<db id>`.

    Notifications are only wake-ups: a table is ready from the first PUBLISH (or from data found
    at start-up) until a pop returns less than a full batch with no notification arriving meanwhile.
    So a table is drained in full however few PUBLISHes announced it. Something that pops the
    table with its own script (the daemon's reliable pop) reports its pops through pop_started()
    and pop_finished(), so readiness stays the same.
    """

    def __init__(self, db: DBConnector, name: str, pop_batch_size: int = 128, priority: int = 0) -> None:
        Selectable.__init__(self, db, pop_batch_size, priority)
        TableBase.__init__(self, db, name)
        self._more = False
        self._notifications = 0

    @property
    def ready(self) -> bool:
        """True while data may be waiting: notified, or the last pop was a full batch."""
        return self._more or bool(self._buffer)

    @property
    def subscription(self) -> Subscription:
        return Subscription(self.channel)

    def notify(self) -> None:
        """Mark the table as having data (a PUBLISH arrived, or a reconnect asks for a re-check)."""
        self._notifications += 1
        self._more = True

    def on_message(self, channel: str, data: str) -> None:
        self.notify()  # a PUBLISH is only a wake-up: its payload is ignored, as in C++

    def on_resubscribed(self) -> None:
        self.notify()

    async def on_subscribed(self) -> None:
        try:
            pending = await self.has_pending()
        except (ResponseError, *CONNECTION_ERRORS):
            pending = True  # a wrong-type key, Redis gone: the pop says so, Select must not fail here
        if pending:
            self.notify()

    async def has_pending(self) -> bool:
        """Whether Redis holds data for this consumer right now."""
        raise NotImplementedError

    def pop_started(self) -> int:
        """Call before sending a pop; pass the result to pop_finished()."""
        return self._notifications

    def pop_finished(self, started: int, more: bool) -> None:
        """A pop sent when pop_started() returned `started` came back; `more` when it says more
        data waits (a full batch). A notification since the pop was sent keeps the table ready."""
        self._more = more or started != self._notifications

    async def pops(self) -> list[KeyOpFieldsValues]:
        """Pop up to pop_batch_size changes."""
        started = self.pop_started()
        items = self.parse(await self._pop_batch())
        self.pop_finished(started, len(items) >= self.pop_batch_size)
        return items

    async def _pop_batch(self) -> list[Any]:
        """The reply of one pop script call."""
        raise NotImplementedError

    def parse(self, reply: list[Any]) -> list[KeyOpFieldsValues]:
        """The tasks of one pop script reply (or of its JSON copy, where {} stands for [])."""
        raise NotImplementedError
