"""What every consumer channel shares: pop batch size, priority, and readiness for Select."""

from __future__ import annotations

from collections import deque

from .connector import DBConnector
from .fields import KeyOpFieldsValues
from .table import TableBase


class ConsumerTableBase(TableBase):
    """A consumer that Select can wait on.

    Notifications are only wake-ups: a table is ready from the first PUBLISH (or from data found
    at start-up) until a pop returns less than a full batch with no notification arriving meanwhile.
    So a table is drained in full however few PUBLISHes announced it.
    """

    def __init__(self, db: DBConnector, name: str, pop_batch_size: int = 128, priority: int = 0) -> None:
        if pop_batch_size < 1:
            raise ValueError(f"pop_batch_size must be at least 1, not {pop_batch_size}")
        super().__init__(db, name)
        self.pop_batch_size = pop_batch_size
        self.priority = priority
        self._more = False
        self._notifications = 0
        self._buffer: deque[KeyOpFieldsValues] = deque()

    @property
    def ready(self) -> bool:
        """True while data may be waiting: notified, or the last pop was a full batch."""
        return self._more or bool(self._buffer)

    def notify(self) -> None:
        """Mark the table as having data (a PUBLISH arrived, or a reconnect asks for a re-check)."""
        self._notifications += 1
        self._more = True

    async def has_pending(self) -> bool:
        """Whether Redis holds data for this consumer right now."""
        raise NotImplementedError

    async def pops(self) -> list[KeyOpFieldsValues]:
        """Pop up to pop_batch_size changes."""
        seen = self._notifications
        items = await self._pop_batch()
        self._more = len(items) >= self.pop_batch_size or seen != self._notifications
        return items

    async def pop(self) -> KeyOpFieldsValues | None:
        """One change at a time, from a buffer refilled by pops(); None when nothing waits."""
        if not self._buffer:
            self._buffer.extend(await self.pops())
        return self._buffer.popleft() if self._buffer else None

    async def _pop_batch(self) -> list[KeyOpFieldsValues]:
        raise NotImplementedError
