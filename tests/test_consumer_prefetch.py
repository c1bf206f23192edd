"""prefetch=True (or a number of pops): the next pops run in Redis while the caller works; nothing
is lost or reordered."""

from __future__ import annotations

import asyncio

import pytest
import redis
from redis.exceptions import ResponseError

from late_reply import settle_cancelled_while_a_reply_is_late
from swssd import ConsumerStateTable, ConsumerTable, DBConnector, ProducerStateTable, ProducerTable, Select
from swssd.redis.embedded_redis import EmbeddedRedis

FV = [("f0", "v0"), ("f1", "v1")]


async def _waiting_keys(db: DBConnector, table: str = "T") -> int:
    """SCARD of the key set, sent on the connection the pops use: Redis answers it after any pop
    written before it."""
    (count,) = await db.execute_many([("SCARD", f"{table}_KEY_SET")])
    return int(count)


async def _fill_queue(db: DBConnector, keys: list[str], op: str = "SET") -> None:
    producer = ProducerTable(db, "Q", buffered=True)
    for key in keys:
        await producer.set(key, FV, op=op)
    await producer.flush()


@pytest.mark.parametrize("prefetch", [True, 2])
@pytest.mark.parametrize("options", [{}, {"track_deletes": True}, {"fast_scripts": True}])
async def test_state_drain_gets_every_key_once_with_its_fields(
    db: DBConnector, options: dict[str, bool], prefetch: int
) -> None:
    await ProducerStateTable(db, "T").set_many([(f"k{i}", [("n", str(i)), *FV]) for i in range(1000)])
    consumer = ConsumerStateTable(db, "T", pop_batch_size=64, prefetch=prefetch, **options)
    seen: dict[str, list[tuple[str, str]]] = {}
    while batch := await consumer.pops():
        for task in batch:
            assert task.key not in seen
            seen[task.key] = task.fvs
    assert seen == {f"k{i}": [("n", str(i)), *FV] for i in range(1000)}
    assert not consumer.ready and await consumer.settle() == []
    assert await db.redis.hgetall("T:k7") == {"n": "7", "f0": "v0", "f1": "v1"}


@pytest.mark.parametrize("prefetch", [True, 2, 3])
async def test_queue_drain_keeps_producer_order_and_writes_the_table(db: DBConnector, prefetch: int) -> None:
    await _fill_queue(db, [f"k{i}" for i in range(500)])
    consumer = ConsumerTable(db, "Q", pop_batch_size=32, prefetch=prefetch)
    got: list[str] = []
    while batch := await consumer.pops():
        got += [t.key for t in batch]
    assert got == [f"k{i}" for i in range(500)]
    assert await db.redis.hgetall("Q:k499") == dict(FV)


async def test_the_next_batch_is_popped_while_the_caller_works_and_settle_returns_it(db: DBConnector) -> None:
    await ProducerStateTable(db, "T").set_many([(f"k{i}", FV) for i in range(10)])
    consumer = ConsumerStateTable(db, "T", pop_batch_size=4, prefetch=True)
    first = await consumer.pops()
    assert len(first) == 4 and consumer.ready
    assert await _waiting_keys(db) == 2  # the next 4 are out of Redis, held by the consumer
    prefetched = await consumer.settle()
    assert len(prefetched) == 4
    rest = await consumer.pops()
    assert sorted(t.key for t in first + prefetched + rest) == sorted(f"k{i}" for i in range(10))
    assert await consumer.pops() == [] and not consumer.ready


async def test_prefetch_2_keeps_two_pops_ahead_and_settle_returns_both_in_order(db: DBConnector) -> None:
    await _fill_queue(db, [f"k{i}" for i in range(10)])
    consumer = ConsumerTable(db, "Q", pop_batch_size=3, prefetch=2)
    first = await consumer.pops()
    assert [t.key for t in first] == ["k0", "k1", "k2"] and consumer.ready
    (left,) = await db.execute_many([("LLEN", consumer.op_queue)])  # after both pops: same connection
    assert left == 3  # one op (three list elements) is left in Redis
    assert [t.key for t in await consumer.settle()] == [f"k{i}" for i in range(3, 9)]
    assert [t.key for t in await consumer.pops()] == ["k9"]
    assert await consumer.settle() == [] and not consumer.ready


async def test_a_failed_second_prefetched_pop_comes_after_the_first_ones_changes(db: DBConnector) -> None:
    await _fill_queue(db, ["a0", "a1", "a2", "a3"])
    await _fill_queue(db, ["bad"], op="no_such_op")  # the C++ pops script raises on it
    await _fill_queue(db, ["b0", "b1", "b2"])
    consumer = ConsumerTable(db, "Q", pop_batch_size=2, prefetch=2)
    assert [t.key for t in await consumer.pops()] == ["a0", "a1"]
    assert [t.key for t in await consumer.settle()] == ["a2", "a3"]  # the failed pop is held back
    with pytest.raises(ResponseError, match="unsupported operation"):
        await consumer.settle()  # raised once: the pop of "bad", "b0" failed in Redis
    assert [t.key for t in await consumer.pops()] == ["b1", "b2"]
    assert await consumer.pops() == [] and await consumer.settle() == []


async def test_a_settle_cancelled_while_a_reply_is_late_loses_nothing(db: DBConnector) -> None:
    await _fill_queue(db, [f"k{i}" for i in range(9)])
    consumer = ConsumerTable(db, "Q", pop_batch_size=3, prefetch=2)
    got = [t.key for t in await consumer.pops()]
    got += [t.key for t in await settle_cancelled_while_a_reply_is_late(consumer._prefetched, consumer.settle)]
    assert got == [f"k{i}" for i in range(9)]


def test_a_negative_prefetch_is_refused(db: DBConnector) -> None:
    with pytest.raises(ValueError, match="prefetch"):
        ConsumerTable(db, "Q", prefetch=-1)


async def test_without_prefetch_nothing_is_popped_before_the_caller_asks(db: DBConnector) -> None:
    await ProducerStateTable(db, "T").set_many([(f"k{i}", FV) for i in range(10)])
    consumer = ConsumerStateTable(db, "T", pop_batch_size=4)
    assert len(await consumer.pops()) == 4
    assert await _waiting_keys(db) == 6
    assert await consumer.settle() == []


async def test_no_prefetch_after_a_partial_batch(db: DBConnector) -> None:
    await ProducerStateTable(db, "T").set_many([(f"k{i}", FV) for i in range(3)])
    consumer = ConsumerStateTable(db, "T", pop_batch_size=4, prefetch=True)
    assert len(await consumer.pops()) == 3
    assert not consumer.ready  # a pop sent after the partial batch would keep it ready
    await ProducerStateTable(db, "T").set_many([(f"late{i}", FV) for i in range(5)])
    assert await _waiting_keys(db) == 5  # nothing took the late keys early
    assert await consumer.settle() == []


async def test_cancelled_caller_keeps_the_prefetched_batch(db: DBConnector) -> None:
    await _fill_queue(db, [f"k{i}" for i in range(9)])
    consumer = ConsumerTable(db, "Q", pop_batch_size=3, prefetch=True)
    got = [t.key for t in await consumer.pops()]
    waiter = asyncio.ensure_future(consumer.pops())
    await asyncio.sleep(0)
    waiter.cancel()
    await asyncio.gather(waiter, return_exceptions=True)
    while batch := await consumer.pops():
        got += [t.key for t in batch]
    assert got == [f"k{i}" for i in range(9)]  # queue order kept across the cancelled call


async def test_single_pop_reads_through_prefetched_batches(db: DBConnector) -> None:
    await _fill_queue(db, [f"k{i}" for i in range(7)])
    consumer = ConsumerTable(db, "Q", pop_batch_size=2, prefetch=True)
    got = []
    while (task := await consumer.pop()) is not None:
        got.append(task.key)
    assert got == [f"k{i}" for i in range(7)]


async def test_a_failed_prefetched_pop_is_raised_once_then_popping_goes_on(db: DBConnector) -> None:
    await _fill_queue(db, ["a0", "a1", "a2"])
    await _fill_queue(db, ["bad"], op="no_such_op")  # the C++ pops script raises on it
    await _fill_queue(db, ["b0", "b1", "b2"])
    consumer = ConsumerTable(db, "Q", pop_batch_size=3, prefetch=True)
    assert [t.key for t in await consumer.pops()] == ["a0", "a1", "a2"]
    with pytest.raises(ResponseError, match="unsupported operation"):
        await consumer.pops()  # the prefetched pop of "bad", "b0", "b1" failed in Redis
    assert [t.key for t in await consumer.pops()] == ["b2"]
    assert await consumer.pops() == []


async def test_select_serves_a_prefetching_table_until_drained(db: DBConnector) -> None:
    consumer = ConsumerStateTable(db, "T", pop_batch_size=16, prefetch=True)
    async with Select() as sel:
        await sel.add(consumer)
        await ProducerStateTable(db, "T").set_many([(f"k{i}", FV) for i in range(100)])
        keys: list[str] = []
        while (table := await sel.select(timeout=1.0)) is not None:
            keys += [t.key for t in await table.pops()]
        assert sorted(keys) == sorted(f"k{i}" for i in range(100))
    assert not consumer.ready


# -- a pops() cancelled with its batch popped in Redis ------------------------------------------


@pytest.mark.parametrize("kind", ["state", "queue"])
async def test_a_pops_cancelled_while_its_pop_is_out_leaves_the_batch_to_the_next(
    db: DBConnector, clean_redis: EmbeddedRedis, kind: str
) -> None:
    """Without prefetch too: the pop runs in Redis after the caller gave up (a time-out around
    pops()), and its batch is the next pops()' instead of lost."""
    keys = [f"k{i}" for i in range(6)]
    if kind == "state":
        await ProducerStateTable(db, "T").set_many([(k, FV) for k in keys])
        consumer: ConsumerStateTable | ConsumerTable = ConsumerStateTable(db, "T", pop_batch_size=4)
    else:
        await _fill_queue(db, keys)
        consumer = ConsumerTable(db, "Q", pop_batch_size=4)
    admin = redis.Redis(port=clean_redis.port)
    admin.execute_command("CLIENT", "PAUSE", "20000", "WRITE")  # Redis holds the pop
    try:
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.2):
                await consumer.pops()
    finally:
        admin.execute_command("CLIENT", "UNPAUSE")
        admin.close()
    assert consumer.ready
    got = [t.key for t in await consumer.pops()]
    assert len(got) == 4  # the batch the cancelled call popped
    got += [t.key for t in await consumer.pops()]
    assert sorted(got) == keys
    assert await consumer.pops() == [] and await consumer.settle() == []


async def test_a_pops_cancelled_after_sending_the_pops_ahead_keeps_its_batch(db: DBConnector) -> None:
    await _fill_queue(db, [f"k{i}" for i in range(9)])
    consumer = ConsumerTable(db, "Q", pop_batch_size=3, prefetch=True)
    got = [t.key for t in await consumer.pops()]
    await asyncio.wait([task for _, task in consumer._prefetched])  # k3-k5 popped, the reply in
    waiter = asyncio.ensure_future(consumer.pops())
    await asyncio.sleep(0)  # it took k3-k5, sent the next pop ahead and yields before the parse
    assert len(consumer._prefetched) == 1 and not waiter.done()
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    while batch := await consumer.pops():
        got += [t.key for t in batch]
    assert got == [f"k{i}" for i in range(9)]


@pytest.mark.parametrize("prefetch", [0, 1, 2])
async def test_concurrent_pops_never_return_one_batch_twice(db: DBConnector, prefetch: int) -> None:
    await _fill_queue(db, [f"k{i}" for i in range(40)])
    consumer = ConsumerTable(db, "Q", pop_batch_size=4, prefetch=prefetch)
    got: list[str] = []
    while batches := [b for b in await asyncio.gather(*(consumer.pops() for _ in range(3))) if b]:
        got += [t.key for b in batches for t in b]
    got += [t.key for t in await consumer.settle()]
    assert sorted(got) == sorted(f"k{i}" for i in range(40))  # each once
