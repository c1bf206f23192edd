"""What Select needs of anything it waits on: a subscription, readiness, priority, and pops."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import NamedTuple

from ..fields import KeyOpFieldsValues
from ..redis.connector import DBConnector


class Subscription(NamedTuple):
    """A pub/sub channel (SUBSCRIBE) or pattern (PSUBSCRIBE) on the table's redis-server."""

    name: str
    pattern: bool = False


class Selectable:
    """A consumer that Select can wait on.

    Select owns the pub/sub connection: it subscribes `subscription`, hands every message on it
    to `on_message`, awaits `on_subscribed` once the subscription is first confirmed (data written
    before it is looked for then) and calls `on_resubscribed` after every reconnect (messages sent
    meanwhile are gone). The consumer says through `ready` whether `pops()` may return something.

    A consumer fed by something other than Redis pub/sub (a ZMQ socket) has `subscription` None:
    Select then only awaits its `on_subscribed`, and the consumer calls `wake()` when it becomes
    ready, which wakes every Select waiting on it.
    """

    def __init__(self, db: DBConnector, pop_batch_size: int = 128, priority: int = 0) -> None:
        if pop_batch_size < 1:
            raise ValueError(f"pop_batch_size must be at least 1, not {pop_batch_size}")
        self.db = db
        self.pop_batch_size = pop_batch_size
        self.priority = priority
        self._buffer: deque[KeyOpFieldsValues] = deque()
        self._wakers: list[Callable[[], None]] = []

    @property
    def subscription(self) -> Subscription | None:
        """The pub/sub channel or pattern Select subscribes for this consumer; None for none."""
        raise NotImplementedError

    def add_waker(self, wake: Callable[[], None]) -> None:
        """Called by Select for a consumer without a subscription: `wake` on becoming ready."""
        self._wakers.append(wake)

    def remove_waker(self, wake: Callable[[], None]) -> None:
        if wake in self._wakers:
            self._wakers.remove(wake)

    def wake(self) -> None:
        """Tell the Selects waiting on this consumer that it may be ready (never blocks)."""
        for wake in self._wakers:
            wake()

    @property
    def ready(self) -> bool:
        raise NotImplementedError

    def on_message(self, channel: str, data: str) -> None:
        """A message arrived on the subscription (called by Select's reader, must not block)."""
        raise NotImplementedError

    def on_resubscribed(self) -> None:
        """The pub/sub connection was re-established: what was published meanwhile is lost."""
        raise NotImplementedError

    async def on_subscribed(self) -> None:
        """The subscription is in place: look for data written before it, and be ready if any."""
        raise NotImplementedError

    async def pops(self) -> list[KeyOpFieldsValues]:
        """Up to pop_batch_size changes."""
        raise NotImplementedError

    async def pop(self) -> KeyOpFieldsValues | None:
        """One change at a time, from a buffer refilled by pops(); None when nothing waits."""
        if not self._buffer:
            self._buffer.extend(await self.pops())
        return self._buffer.popleft() if self._buffer else None
