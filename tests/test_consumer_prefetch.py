"""prefetch=True: the next pop runs in Redis while the caller works; nothing is lost or reordered."""

from __future__ import annotations

import asyncio

from swssd import ConsumerStateTable, ConsumerTable, DBConnector, ProducerStateTable, ProducerTable, Select

FV = [("f0", "v0"), ("f1", "v1")]


async def test_drain_with_prefetch_gets_everything_once(db: DBConnector) -> None:
    await ProducerStateTable(db, "T").set_many([(f"k{i}", FV) for i in range(1000)])
    consumer = ConsumerStateTable(db, "T", pop_batch_size=64, prefetch=True)
    seen: list[str] = []
    while batch := await consumer.pops():
        assert consumer._inflight is not None or len(batch) < 64
        seen += [t.key for t in batch]
    assert sorted(seen) == sorted(f"k{i}" for i in range(1000))
    assert len(seen) == 1000
    assert not consumer.ready and await consumer.settle() == []


async def test_settle_returns_what_was_prefetched(db: DBConnector) -> None:
    await ProducerStateTable(db, "T").set_many([(f"k{i}", FV) for i in range(10)])
    consumer = ConsumerStateTable(db, "T", pop_batch_size=4, prefetch=True)
    first = await consumer.pops()
    assert len(first) == 4 and consumer.ready
    prefetched = await consumer.settle()
    assert len(prefetched) == 4
    assert int(await db.redis.scard("T_KEY_SET")) == 2  # popped out of Redis, held by the consumer
    rest = await consumer.pops()
    assert {t.key for t in first + prefetched + rest} == {f"k{i}" for i in range(10)}


async def test_cancelled_caller_keeps_the_prefetched_batch(db: DBConnector) -> None:
    producer = ProducerTable(db, "Q", buffered=True)
    for i in range(9):
        await producer.set(f"k{i}", FV)
    await producer.flush()
    consumer = ConsumerTable(db, "Q", pop_batch_size=3, prefetch=True)
    got = [t.key for t in await consumer.pops()]
    waiter = asyncio.ensure_future(consumer.pops())
    await asyncio.sleep(0)
    waiter.cancel()
    await asyncio.gather(waiter, return_exceptions=True)
    while batch := await consumer.pops():
        got += [t.key for t in batch]
    assert got == [f"k{i}" for i in range(9)]  # queue order kept across the cancelled call


async def test_select_serves_a_prefetching_table_until_drained(db: DBConnector) -> None:
    consumer = ConsumerStateTable(db, "T", pop_batch_size=16, prefetch=True)
    async with Select() as sel:
        await sel.add(consumer)
        await ProducerStateTable(db, "T").set_many([(f"k{i}", FV) for i in range(100)])
        keys: set[str] = set()
        while (table := await sel.select(timeout=1.0)) is not None:
            keys |= {t.key for t in await table.pops()}
        assert keys == {f"k{i}" for i in range(100)}
