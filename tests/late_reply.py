"""A settle() cancelled while a prefetched pop's reply is late: shared by the library's and the
daemon's prefetch tests."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest

from swssd.channels.consumer_base import Prefetched

T = TypeVar("T")


async def settle_cancelled_while_a_reply_is_late(prefetched: Prefetched, settle: Callable[[], Awaitable[T]]) -> T:
    """Wait for the two pops sent ahead, hold the second one's reply back, cancel a settle() that
    waits for it, then let the reply through: what the next settle() returns."""
    await asyncio.wait([task for _, task in prefetched])
    started, second = prefetched[1]
    late: asyncio.Future[list[Any]] = asyncio.get_running_loop().create_future()
    prefetched[1] = (started, late)
    settling = asyncio.ensure_future(settle())
    await asyncio.sleep(0.05)
    assert not settling.done()
    settling.cancel()
    with pytest.raises(asyncio.CancelledError):
        await settling
    late.set_result(second.result())
    return await settle()
