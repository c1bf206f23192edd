"""Select with a consumer that has no pub/sub subscription (fed by a ZMQ socket, say): it wakes
Select itself through Selectable.wake(), and Select opens no Redis connection for it."""

from __future__ import annotations

import asyncio

from swssd import DBConnector, KeyOpFieldsValues, Select
from swssd.channels.selectable import Selectable, Subscription


class Fed(Selectable):
    """A consumer filled from outside, as a ZMQ consumer is by its server."""

    @property
    def subscription(self) -> Subscription | None:
        return None

    @property
    def ready(self) -> bool:
        return bool(self._buffer)

    async def on_subscribed(self) -> None:
        pass

    def feed(self, *keys: str) -> None:
        self._buffer.extend(KeyOpFieldsValues(k, "SET", [("f", "v")]) for k in keys)
        self.wake()

    async def pops(self) -> list[KeyOpFieldsValues]:
        out = list(self._buffer)
        self._buffer.clear()
        return out


async def test_wake_ends_a_waiting_select(db: DBConnector) -> None:
    sel = Select()
    fed = Fed(db)
    await sel.add(fed)
    assert await sel.select(timeout=0.05) is None
    waiting = asyncio.ensure_future(sel.select(timeout=5))
    await asyncio.sleep(0.01)
    assert not waiting.done()
    fed.feed("a")
    assert await asyncio.wait_for(waiting, 1) is fed
    assert [c.key for c in await fed.pops()] == ["a"]
    assert not sel._servers  # no pub/sub connection was made for it
    await sel.close()


async def test_ready_before_add_is_seen_and_remove_detaches(db: DBConnector) -> None:
    sel = Select()
    fed = Fed(db)
    fed.feed("early")
    await sel.add(fed)
    assert await sel.select(timeout=0.5) is fed
    await fed.pops()
    await sel.remove(fed)
    assert fed._wakers == []
    fed.feed("late")
    assert await sel.select(timeout=0.05) is None
    await sel.close()


async def test_one_consumer_in_two_selects(db: DBConnector) -> None:
    a, b = Select(), Select()
    fed = Fed(db)
    await a.add(fed)
    await b.add(fed)
    fed.feed("x")
    assert await a.select(timeout=0.5) is fed
    assert await b.select(timeout=0.5) is fed
    await a.close()
    await b.close()
