"""What the Redis pop channels (key set, op queue) share: readiness by wake-up, opt-in prefetch."""

from __future__ import annotations

import asyncio
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

    With `prefetch=True`, after a full batch the next pop (the same script, the same arguments)
    is sent at once and runs in Redis while the caller works on the batch it got; the next pops()
    returns it. The C++ library pops strictly in turn, leaving Redis idle meanwhile. The price:
    what a prefetched pop took out of Redis lives only in this object until it is returned, so
    a process that dies loses up to two batches instead of one, and a program that stops
    popping must call settle() to get it. Off by default.
    """

    def __init__(
        self, db: DBConnector, name: str, pop_batch_size: int = 128, priority: int = 0, *, prefetch: bool = False
    ) -> None:
        Selectable.__init__(self, db, pop_batch_size, priority)
        TableBase.__init__(self, db, name)
        self.prefetch = prefetch
        self._more = False
        self._notifications = 0
        self._prefetched: asyncio.Task[list[Any]] | None = None
        self._prefetch_started = 0

    @property
    def ready(self) -> bool:
        """True while data may be waiting: notified, the last pop was a full batch, or a
        prefetched pop has not been returned yet."""
        return self._more or bool(self._buffer) or self._prefetched is not None

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
        if self._prefetched is not None:
            started = self._prefetch_started
            reply = await self._await_prefetched()
        else:
            started = self.pop_started()
            reply = await self._pop_batch()
        full = len(reply) >= self.pop_batch_size  # a reply entry is one popped key or op
        self.pop_finished(started, full)
        if full and self.prefetch:
            self._prefetch_started = self.pop_started()
            self._prefetched = asyncio.ensure_future(self._pop_batch())
            self._prefetched.add_done_callback(_retrieved)  # a consumer dropped unsettled logs nothing
            await asyncio.sleep(0)  # the task's first step writes the pop: before the parse, not after
        return self.parse(reply)

    async def settle(self) -> list[KeyOpFieldsValues]:
        """The changes a prefetched pop took out of Redis, or [] when none is out: call it before
        dropping a prefetching consumer, or they are lost. Cancelling the caller leaves the pop
        running and its result for the next call; a failed pop is raised once."""
        if self._prefetched is None:
            return []
        started = self._prefetch_started
        reply = await self._await_prefetched()
        self.pop_finished(started, len(reply) >= self.pop_batch_size)
        return self.parse(reply)

    async def _await_prefetched(self) -> list[Any]:
        task = self._prefetched
        assert task is not None
        try:
            return await asyncio.shield(task)
        finally:
            if task.done():  # taken, or failed: either way it is not handed out again
                self._prefetched = None

    async def _pop_batch(self) -> list[Any]:
        """The reply of one pop script call."""
        raise NotImplementedError

    def parse(self, reply: list[Any]) -> list[KeyOpFieldsValues]:
        """The tasks of one pop script reply (or of its JSON copy, where {} stands for [])."""
        raise NotImplementedError


def _retrieved(task: asyncio.Task[Any]) -> None:
    """Mark a prefetched pop's failure as seen; it is still raised to the caller that takes it."""
    if not task.cancelled():
        task.exception()
