"""DBConnector's one connection (swssd.redis.transport): calls made while others are in flight are
written together, in the order they came; a caller that gives up does not shift the replies of
the others; failures reach every call out on the connection and the next calls reconnect."""

from __future__ import annotations

import asyncio

import pytest

from swssd import DBConnector, ProducerStateTable, Table
from swssd.redis.embedded_redis import EmbeddedRedis


async def test_concurrent_sets_share_round_trips_and_keep_each_callers_order(
    db: DBConnector, monkeypatch: pytest.MonkeyPatch
) -> None:
    producer = ProducerStateTable(db, "GC_T")
    await producer.set("warm-up", [("f", "v")])  # connected, script loaded
    conn = db._own
    assert conn is not None
    writes_before = conn.writes

    async def writer(n: int) -> None:
        for i in range(40):
            await producer.set(f"k{n}", [("seq", str(i)), ("writer", str(n))])

    await asyncio.gather(*(writer(n) for n in range(32)))
    calls = 32 * 40
    writes = conn.writes - writes_before
    assert db._own is conn  # one connection throughout
    assert writes < calls / 4, f"{writes} writes for {calls} calls: not grouped"
    staged = await db.redis.hgetall("_GC_T:k7")
    assert staged == {"seq": "39", "writer": "7"}  # the last set of each writer wins: order kept
    assert await db.redis.scard("GC_T_KEY_SET") == 33


async def test_a_caller_that_gives_up_does_not_shift_the_other_replies(db: DBConnector) -> None:
    """Calls are written as they come (several in flight); one cancelled while out still has its
    replies read, and dropped, so every later call gets its own."""
    table = Table(db, "GC_C")
    slow = asyncio.ensure_future(db.execute_many([("BLPOP", "gc-nothing", "0.3")]))
    await asyncio.sleep(0.05)  # the slow request is out
    given_up = asyncio.ensure_future(db.execute_many([("HSET", "GC_C:given-up", "f", "v"), ("PING",)]))
    after = asyncio.ensure_future(db.execute_many([("HSET", "GC_C:kept", "f", "v"), ("ECHO", "mine")]))
    await asyncio.sleep(0.01)
    given_up.cancel()
    assert await slow == [None]
    assert await after == [1, "mine"]
    assert await db.execute_many([("ECHO", "next")]) == ["next"]
    assert await table.get("given-up") == [("f", "v")]  # it had been sent: Redis ran it
    assert await table.get("kept") == [("f", "v")]


async def test_a_lost_connection_fails_the_group_and_the_next_calls_reconnect(
    clean_redis: EmbeddedRedis,
) -> None:
    db = await DBConnector.from_url(clean_redis.url, db_id=0)
    admin = await DBConnector.from_url(clean_redis.url, db_id=0)
    try:
        await db.execute_many([("CLIENT", "SETNAME", "gc-victim")])
        slow = asyncio.ensure_future(db.execute_many([("BLPOP", "gc-nothing", "0.3")]))
        await asyncio.sleep(0.05)
        group = [asyncio.ensure_future(db.execute_many([("PING",)])) for _ in range(5)]
        await admin.redis.execute_command("CLIENT", "KILL", "SKIPME", "yes", "TYPE", "normal")
        results = await asyncio.gather(slow, *group, return_exceptions=True)
        assert isinstance(results[0], Exception)  # the round trip out when the connection died
        assert all(r == ["PONG"] or isinstance(r, Exception) for r in results[1:])
        assert await db.execute_many([("PING",)]) == ["PONG"]
    finally:
        await db.close()
        await admin.close()
