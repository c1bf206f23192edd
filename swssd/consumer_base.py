"""What the Redis pop channels (key set, op queue) share: readiness by wake-up, prefetch, journal."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

from .connector import DBConnector
from .fields import KeyOpFieldsValues
from .selectable import Selectable, Subscription
from .table import TableBase


class ConsumerTableBase(Selectable, TableBase):
    """A consumer popped by a script, woken by PUBLISHes on `<TABLE>_CHANNEL@<db id>`.

    Notifications are only wake-ups: a table is ready from the first PUBLISH (or from data found
    at start-up) until a pop returns less than a full batch with no notification arriving meanwhile.
    So a table is drained in full however few PUBLISHes announced it.

    With `prefetch=True`, after a full batch the next pop is sent at once and runs in Redis while
    the caller works on the batch it got (the C++ library pops strictly in turn). What such a
    pop took out of Redis lives in this object until the next pops(): call settle() before
    dropping a prefetching consumer.

    With a `journal` key (a Redis key name no other consumer uses), pops run swssd's journaled
    variant of the pop script, which also stores its reply with the pop's sequence number in that
    key, atomically. A pop whose connection dropped after Redis ran it lost its reply, and with it
    the batch (the C++ consumer's fate too); recover() reads the batch back from the journal.
    """

    def __init__(
        self,
        db: DBConnector,
        name: str,
        pop_batch_size: int = 128,
        priority: int = 0,
        *,
        prefetch: bool = False,
        journal: str | None = None,
    ) -> None:
        Selectable.__init__(self, db, pop_batch_size, priority)
        TableBase.__init__(self, db, name)
        self.prefetch = prefetch
        self._more = False
        self._notifications = 0
        self._inflight: asyncio.Task[list[KeyOpFieldsValues]] | None = None
        self._inflight_seen = 0
        self.journal = journal
        # Sequence numbers carry a token of this object, so a journal left by an earlier
        # consumer under the same key never matches one of ours.
        self._token = uuid.uuid4().hex[:8]
        self._seq = 0
        #: the last journaled pop whose reply has not arrived (None once it has, or once recovered)
        self._unanswered: str | None = None

    @property
    def ready(self) -> bool:
        """True while data may be waiting: notified, or the last pop was a full batch."""
        return self._more or bool(self._buffer) or self._inflight is not None

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
        if await self.has_pending():
            self.notify()

    async def has_pending(self) -> bool:
        """Whether Redis holds data for this consumer right now."""
        raise NotImplementedError

    async def pops(self) -> list[KeyOpFieldsValues]:
        """Pop up to pop_batch_size changes."""
        if self._inflight is not None:
            seen = self._inflight_seen
            items = await self.settle()
        else:
            seen = self._notifications
            items = await self._pop_batch()
        full = len(items) >= self.pop_batch_size
        self._more = full or seen != self._notifications
        if full and self.prefetch:
            self._inflight_seen = self._notifications
            self._inflight = asyncio.ensure_future(self._pop_batch())
        return items

    async def settle(self) -> list[KeyOpFieldsValues]:
        """What a prefetched pop took out of Redis (empty when none is in flight).

        Shielded: cancelling the caller leaves the pop running and its result for the next call.
        """
        task = self._inflight
        if task is None:
            return []
        try:
            return await asyncio.shield(task)
        finally:
            if task.done():  # a failed pop is raised once, not forever
                self._inflight = None

    async def recover(self) -> list[KeyOpFieldsValues]:
        """After a pop raised (e.g. its connection dropped): what that pop took out of Redis,
        read back from the journal; empty when it never ran (its data is still in Redis), when
        it found nothing, or without a journal. Call it before the next pop, which overwrites
        the journal; a second call returns nothing, so a batch is never handed over twice."""
        sent = self._unanswered
        if self.journal is None or sent is None:
            return []
        raw = await self.db.redis.get(self.journal)
        self._unanswered = None
        if raw is None:
            return []
        seq, reply = json.loads(raw)
        return self._parse(reply) if seq == sent else []

    def _next_seq(self) -> str:
        """The sequence number of a journaled pop about to be sent."""
        self._seq += 1
        self._unanswered = seq = f"{self._token}:{self._seq}"
        return seq

    async def _pop_batch(self) -> list[KeyOpFieldsValues]:
        raise NotImplementedError

    def _parse(self, reply: list[Any]) -> list[KeyOpFieldsValues]:
        """The tasks of one pop script reply (or of its copy in the journal)."""
        raise NotImplementedError
