"""DBConnector's group commit: calls made while a round trip is out go together in the next one,
in the order they came, on the connector's one connection; failures reach every call of a group
and the next calls reconnect."""

from __future__ import annotations

import asyncio

import pytest

import swssd.connector
from swssd import DBConnector, ProducerStateTable, Table
from swssd.embedded_redis import EmbeddedRedis


async def test_concurrent_sets_share_round_trips_and_keep_each_callers_order(
    db: DBConnector, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[int] = []
    real = swssd.connector._roundtrip

    async def counting(conn, commands):  # type: ignore[no-untyped-def]
        sent.append(len(commands))
        return await real(conn, commands)

    monkeypatch.setattr(swssd.connector, "_roundtrip", counting)
    producer = ProducerStateTable(db, "GC_T")

    async def writer(n: int) -> None:
        for i in range(40):
            await producer.set(f"k{n}", [("seq", str(i)), ("writer", str(n))])

    await asyncio.gather(*(writer(n) for n in range(32)))
    calls = 32 * 40
    assert sum(sent) >= calls  # every set went out (plus a SCRIPT LOAD)
    assert len(sent) < calls / 4, f"{len(sent)} round trips for {calls} calls: not grouped"
    staged = await db.redis.hgetall("_GC_T:k7")
    assert staged == {"seq": "39", "writer": "7"}  # the last set of each writer wins: order kept
    assert await db.redis.scard("GC_T_KEY_SET") == 32


async def test_a_cancelled_waiting_call_is_not_sent(db: DBConnector) -> None:
    table = Table(db, "GC_C")
    slow = asyncio.ensure_future(db.execute_many([("BLPOP", "gc-nothing", "0.3")]))
    await asyncio.sleep(0.05)  # the slow round trip is out
    waiting = asyncio.ensure_future(db.execute_many([("HSET", "GC_C:cancelled", "f", "v")]))
    after = asyncio.ensure_future(db.execute_many([("HSET", "GC_C:kept", "f", "v")]))
    await asyncio.sleep(0.01)
    waiting.cancel()
    await slow
    assert await after == [1]
    assert await table.get("cancelled") is None
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
