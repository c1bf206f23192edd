"""What the Redis pop channels (key set, op queue) share: readiness by wake-up, opt-in prefetch."""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

from redis.exceptions import ResponseError

from ..fields import KeyOpFieldsValues
from ..redis.connector import CONNECTION_ERRORS, DBConnector
from .selectable import Selectable, Subscription
from .table import TableBase

#: Pops out and not taken yet, oldest first (sent ahead, or left by a cancelled pops()), each
#: with what pop_started() said when it was sent.
Prefetched = deque[tuple[int, "asyncio.Future[list[Any]]"]]


class ConsumerTableBase(Selectable, TableBase):
    """A consumer popped by a script, woken by PUBLISHes on `<TABLE>_CHANNEL@<db id>`.

    Notifications are only wake-ups: a table is ready from the first PUBLISH (or from data found
    at start-up) until a pop returns less than a full batch with no notification arriving meanwhile.
    So a table is drained in full however few PUBLISHes announced it. Something that pops the
    table with its own script (the daemon's reliable pop) reports its pops through pop_started()
    and pop_finished(), so readiness stays the same.

    With `prefetch=True` (or a number: how many pops to keep ahead, True being one), after a
    full batch the next pop (the same script, the same arguments) is sent at once and runs in
    Redis while the caller works on the batch it got; the next pops() returns it. The C++ library
    pops strictly in turn, leaving Redis idle meanwhile; with one pop ahead Redis still waits
    while each reply travels back and the next pop is sent, which a second pop queued behind it
    fills (`prefetch=2`). The price: what a prefetched pop took out of Redis lives only in this
    object until it is returned, so a process that dies loses up to 1 + prefetch batches instead
    of one, and a program that stops popping must call settle() to get them. Off by default.
    """

    def __init__(
        self, db: DBConnector, name: str, pop_batch_size: int = 128, priority: int = 0, *, prefetch: int = 0
    ) -> None:
        if prefetch < 0:
            raise ValueError(f"prefetch must be a number of pops >= 0 (or True/False), not {prefetch!r}")
        Selectable.__init__(self, db, pop_batch_size, priority)
        TableBase.__init__(self, db, name)
        #: pops kept ahead after a full batch (True: 1)
        self.prefetch = int(prefetch)
        self._more = False
        self._notifications = 0
        self._prefetched: Prefetched = deque()

    @property
    def ready(self) -> bool:
        """True while data may be waiting: notified, the last pop was a full batch, or a pop out
        has not been returned yet."""
        return self._more or bool(self._buffer) or bool(self._prefetched)

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
        """Pop up to pop_batch_size changes.

        A caller cancelled while its pop is out (a time-out around pops(), say) leaves the batch
        to the next pops() or settle(): the pop has run in Redis, and dropped it would be lost."""
        if not self._prefetched:
            self._send_pop()
        started = self._prefetched[0][0]
        reply = await await_oldest(self._prefetched)  # taken: a concurrent pops() gets the next
        full = len(reply) >= self.pop_batch_size  # a reply entry is one popped key or op
        self.pop_finished(started, full)
        if full and self.prefetch:
            while len(self._prefetched) < self.prefetch:
                self._send_pop()
            try:
                await asyncio.sleep(0)  # the tasks' first steps write the pops: before the parse, not after
            except asyncio.CancelledError:
                self._prefetched.appendleft((started, _done(reply)))  # first again, for the next call
                raise
        return self.parse(reply)

    def _send_pop(self) -> None:
        """Send a pop, queued behind any out: pops() and settle() take them in order."""
        task = asyncio.ensure_future(self._pop_batch())
        task.add_done_callback(_retrieved)  # a consumer dropped unsettled logs nothing
        self._prefetched.append((self.pop_started(), task))

    async def settle(self) -> list[KeyOpFieldsValues]:
        """The changes the pops still out (sent ahead, or left by a cancelled pops()) took out of
        Redis, in order, or [] when none is out: call it before dropping a consumer that
        prefetches or whose pops() was cancelled, or they are lost. Cancelling the caller
        leaves the pops running and their results for the next call. A failed pop is raised once,
        by the call that reaches it first (the changes popped before it are returned first)."""
        if self._prefetched:
            # every reply first: a cancellation while waiting takes nothing out of the queue
            await asyncio.wait([task for _, task in self._prefetched])
        out: list[KeyOpFieldsValues] = []
        while self._prefetched:
            started, task = self._prefetched[0]
            if out and (task.cancelled() or task.exception() is not None):
                break  # raised by the next call, after these are returned
            self._prefetched.popleft()
            reply = task.result()  # raises a failed pop's error
            self.pop_finished(started, len(reply) >= self.pop_batch_size)
            out += self.parse(reply)
        return out

    async def _pop_batch(self) -> list[Any]:
        """The reply of one pop script call."""
        raise NotImplementedError

    def parse(self, reply: list[Any]) -> list[KeyOpFieldsValues]:
        """The tasks of one pop script reply (or of its JSON copy, where {} stands for [])."""
        raise NotImplementedError


async def await_oldest(prefetched: Prefetched) -> list[Any]:
    """The reply of the oldest pop out, taken from the queue before the wait, so that two callers
    never get the same one. Shielded: a cancelled caller puts it back, first, for the next call,
    while the pop runs on. A failed pop is raised once."""
    entry = prefetched.popleft()
    try:
        return await asyncio.shield(entry[1])
    except asyncio.CancelledError:
        if not entry[1].cancelled():  # the caller's cancellation, not the pop's
            prefetched.appendleft(entry)
        raise


def _done(reply: list[Any]) -> asyncio.Future[list[Any]]:
    """A pop's reply as a finished future, to queue it again."""
    future: asyncio.Future[list[Any]] = asyncio.get_running_loop().create_future()
    future.set_result(reply)
    return future


def _retrieved(task: asyncio.Task[Any]) -> None:
    """Mark a prefetched pop's failure as seen; it is still raised to the caller that takes it."""
    if not task.cancelled():
        task.exception()
