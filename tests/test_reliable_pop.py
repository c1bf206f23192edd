"""The daemon's reliable pop: poison entries set aside, the in-flight record, lost replies read
back, take-over at start, clearing and compaction.

A lost reply is made deterministic by wrapping the connector's evalsha: the pop runs on the real
server and then the error a dropped connection raises is raised instead of the reply.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError

from late_reply import settle_cancelled_while_a_reply_is_late
from swssd import (
    ConsumerStateTable,
    ConsumerTable,
    DBConnector,
    KeyOpFieldsValues,
    ProducerStateTable,
    ProducerTable,
    Table,
)
from swssd.lua import INFLIGHT_CLEAR
from swssd.orch.pending import PendingMap
from swssd.orch.reliable_pop import DEAD_CAP, PREFETCH_DEPTH, Batch, ReliablePop, dead_key, inflight_key

TRICKY = [
    ("plain", "v"),
    ("colon:pipe|", "a:b|c"),
    ("newline", "line1\nline2\r\n"),
    ("quotes", "\"double\" 'single' \\back\\slash /"),
    ("unicode", "héllo wörld ✓ 日本 🚀"),
    ("empty", ""),
    ("", "empty field name"),
    ("ctrl", "\x00\x01\x1f\x7f"),
    ("not-utf8", "\udcff\udcfe"),
    ("json-ish", '{"a": [1, 2]}'),
]


class LosesReplies:
    """Wraps a connector's evalsha: with mode "after" the next call runs in Redis and its reply is
    dropped; with "before" it fails before it is sent."""

    def __init__(self, db: DBConnector) -> None:
        self.original = db.evalsha
        self.mode: str | None = None

    async def __call__(self, *args: Any, **kwargs: Any) -> Any:
        mode, self.mode = self.mode, None
        if mode == "before":
            raise RedisConnectionError("Error 111 connecting: Connection refused.")
        reply = await self.original(*args, **kwargs)
        if mode == "after":
            raise RedisConnectionError("Connection closed by server.")
        return reply


@pytest.fixture
def lossy(db: DBConnector, monkeypatch: pytest.MonkeyPatch) -> LosesReplies:
    wrapper = LosesReplies(db)
    monkeypatch.setattr(db, "evalsha", wrapper)
    return wrapper


def state_pop(db: DBConnector, name: str = "T", batch: int = 128, **kw: Any) -> ReliablePop:
    return ReliablePop(ConsumerStateTable(db, name, batch, track_deletes=True), PendingMap(), instance="test", **kw)


def queue_pop(db: DBConnector, name: str = "Q", batch: int = 128, **kw: Any) -> ReliablePop:
    return ReliablePop(ConsumerTable(db, name, batch), PendingMap(), instance="test", **kw)


async def drain(source: ReliablePop) -> list[Batch]:
    """Pop until nothing is left; each batch goes to the pending map as the daemon does."""
    out: list[Batch] = []
    while True:
        batches = await source.pop()
        for b in batches:
            source.pending.add_many(b.tasks, b.seq)
        out += batches
        if not batches and not source.consumer.ready:
            return out


def tasks_of(batches: list[Batch]) -> list[KeyOpFieldsValues]:
    return [t for b in batches for t in b.tasks]


def finish_all(pending: PendingMap) -> None:
    for key, entries in pending.snapshot():
        for _ in list(entries):
            pending.done(pending.take(key))


# -- poison entries -------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [
    ["junk"],                                   # one stray element: shifts every triple after it
    ["k-null", "null", "Sset"],                 # JSON, but not an array
    ["k-nested", '[["x"]]', "Sset"],            # an array of arrays
    ["k-odd", '["a"]', "Sset"],                 # an odd number of strings
    ["k-op", '["a","b"]', "Snosuchop"],         # an op the C++ script does not know
    ["k-prefix", '["a","b"]', "Xset"],          # neither S nor D
    ["junk1", "junk2"],                         # two strays
    ["a", "b", "c", "d"],                       # a bad triple and a stray
])
async def test_a_bad_queue_entry_costs_that_entry_only(db: DBConnector, bad: list[str]) -> None:
    producer = ProducerTable(db, "Q", buffered=True)
    for i in range(500):
        await producer.set(f"k{i}", [("f", str(i))])
    await producer.flush()
    await db.redis.lpush("Q_KEY_VALUE_OP_QUEUE", *bad)
    for i in range(500, 1000):
        await producer.set(f"k{i}", [("f", str(i))])
    await producer.flush()
    set_aside: list[int] = []
    source = queue_pop(db, on_set_aside=set_aside.append)
    source.consumer.notify()
    got = tasks_of(await drain(source))
    assert got == [KeyOpFieldsValues(f"k{i}", "SET", [("f", str(i))]) for i in range(1000)], "all, in order"
    records = [json.loads(r) for r in await db.redis.lrange(dead_key("test", "Q"), 0, -1)]
    assert sum(set_aside) == len(records) >= 1
    assert all(r["reason"] for r in records)
    assert await db.redis.llen("Q_KEY_VALUE_OP_QUEUE") == 0
    assert await Table(db, "Q").get("k999") == [("f", "999")], "valid ops applied as the C++ script does"


async def test_queue_of_only_bad_entries_and_a_bounded_excerpt(db: DBConnector) -> None:
    await db.redis.lpush("Q_KEY_VALUE_OP_QUEUE", "k", "x" * 5000, "Sset")
    source = queue_pop(db)
    source.consumer.notify()
    assert tasks_of(await drain(source)) == []
    (record,) = [json.loads(r) for r in await db.redis.lrange(dead_key("test", "Q"), 0, -1)]
    assert record["key"] == "k" and record["op"] == "Sset" and len(record["value"]) == 512


@pytest.mark.parametrize("kind", ["state", "queue"])
async def test_a_batch_that_sets_aside_more_than_unpack_takes_still_pops(db: DBConnector, kind: str) -> None:
    """Lua's unpack() stops near 8,000 values: one pop setting aside 9,000 entries (a large
    pop_batch_size) failed for ever before the dead-letter list was written in chunks."""
    n = 9000
    if kind == "queue":
        await db.redis.lpush("Q_KEY_VALUE_OP_QUEUE", *[x for i in range(n) for x in (f"k{i}", "not json", "Sset")])
    else:
        await db.redis.sadd("T_KEY_SET", *[f"k{i}" for i in range(n)])
        await db.execute_many([("SET", f"_T:k{i}", "not a hash") for i in range(n)])
    set_aside: list[int] = []
    pop = queue_pop if kind == "queue" else state_pop
    source = pop(db, batch=n, on_set_aside=set_aside.append)
    source.consumer.notify()
    assert tasks_of(await drain(source)) == []
    assert sum(set_aside) == n
    assert await db.redis.llen(dead_key("test", source.consumer.name)) == min(n, DEAD_CAP)


async def test_wrong_type_table_entry_of_a_queue_is_set_aside(db: DBConnector) -> None:
    producer = ProducerTable(db, "Q")
    await db.redis.set("Q:bad", "str")
    for key in ("a", "bad", "b"):
        await producer.set(key, [("f", "v")])
    source = queue_pop(db)
    source.consumer.notify()
    assert [t.key for t in tasks_of(await drain(source))] == ["a", "b"]
    assert await db.redis.llen(dead_key("test", "Q")) == 1


async def test_wrong_type_staging_hash_costs_that_key_only(db: DBConnector) -> None:
    producer = ProducerStateTable(db, "T")
    await producer.set_many([(f"k{i}", [("f", str(i))]) for i in range(50)])
    await db.redis.delete("_T:k7")
    await db.redis.set("_T:k7", "str")
    await db.redis.delete("T:k8")
    await db.redis.set("T:k8", "table entry, not a hash")
    set_aside: list[int] = []
    source = state_pop(db, on_set_aside=set_aside.append)
    source.consumer.notify()
    got = sorted(t.key for t in tasks_of(await drain(source)))
    assert got == sorted(f"k{i}" for i in range(50) if i not in (7, 8))
    assert sum(set_aside) == 2
    assert not await db.redis.exists("_T:k7"), "the staging key is removed, so it cannot loop"
    records = {r["key"]: r for r in map(json.loads, await db.redis.lrange(dead_key("test", "T"), 0, -1))}
    assert records["k7"]["value"] == "str" and "not a hash" in records["k7"]["reason"]
    assert "T:k8" in records["k8"]["reason"]


@pytest.mark.parametrize("kind", ["state", "queue"])
async def test_wrong_type_key_set_or_queue_is_refused_and_nothing_popped(db: DBConnector, kind: str) -> None:
    key = "T_KEY_SET" if kind == "state" else "Q_KEY_VALUE_OP_QUEUE"
    await db.redis.set(key, "str")
    source = state_pop(db) if kind == "state" else queue_pop(db)
    with pytest.raises(ResponseError, match="WRONGTYPE"):
        await source.pop()
    assert await db.redis.get(key) == "str"


async def test_reliable_state_pop_changes_redis_as_the_cpp_script_does(db: DBConnector) -> None:
    """Same history on two tables, one popped by the C++ script, one reliably: same tables."""
    for name in ("A", "B"):
        producer = ProducerStateTable(db, name)
        await producer.set_many([(f"k{i}", TRICKY) for i in range(5)])
        await producer.delete("k1")
        await producer.set("k1", [("x", "y")])
        await producer.delete("k2")
    while await ConsumerStateTable(db, "A").pops():
        pass
    source = state_pop(db, "B")
    source.consumer.notify()
    got = tasks_of(await drain(source))
    assert await Table(db, "A").dump() == await Table(db, "B").dump()
    assert ("k1", "DEL", []) in got and ("k1", "SET", [("x", "y")]) in got
    assert sorted(k.replace("A", "B", 1) for k in await db.redis.keys("*A*")) == sorted(
        k for k in await db.redis.keys("*B*") if not k.startswith("_SWSSD_")
    )


# -- the in-flight record ------------------------------------------------------------------


async def test_each_batch_is_in_the_record_until_its_tasks_are_done(db: DBConnector) -> None:
    await ProducerStateTable(db, "T").set_many([("k:1|x", TRICKY), ("ключ\n", [("f", "v")])])
    source = state_pop(db)
    source.consumer.notify()
    batches = await drain(source)
    assert [b.seq for b in batches] == [1]
    record = await db.redis.hgetall(inflight_key("test", "T"))
    assert record["seq"] == "1" and source.consumer.parse(json.loads(record["1"])) == batches[0].tasks
    assert sorted(batches[0].tasks) == [("k:1|x", "SET", TRICKY), ("ключ\n", "SET", [("f", "v")])]
    await source.clear()
    assert await db.redis.hexists(inflight_key("test", "T"), "1"), "not done yet"
    finish_all(source.pending)
    await source.clear()
    assert await db.redis.hkeys(inflight_key("test", "T")) == ["seq"]


@pytest.mark.parametrize("kind", ["state", "queue"])
async def test_a_lost_reply_is_read_back_byte_exact(db: DBConnector, lossy: LosesReplies, kind: str) -> None:
    if kind == "state":
        await ProducerStateTable(db, "T").set_many([("k:1|x", TRICKY), ("k2", [("f", "v")])])
        source = state_pop(db)
    else:
        producer = ProducerTable(db, "Q")
        await producer.set("k:1|x", TRICKY)
        await producer.delete("ключ\n")
        await producer.set("k2", [("f", "")], op="create")
        source = queue_pop(db)
    lossy.mode = "after"
    with pytest.raises(RedisConnectionError):
        await source.pop()
    (batch,) = await source.pop()
    assert batch.seq == 1 and source.recovered == 1
    if kind == "state":
        assert sorted(batch.tasks) == [("k2", "SET", [("f", "v")]), ("k:1|x", "SET", TRICKY)]
    else:
        assert batch.tasks == [("k:1|x", "SET", TRICKY), ("ключ\n", "DEL", []), ("k2", "create", [("f", "")])]
    assert await source.pop() == [], "handed over once"


async def test_a_pop_that_never_ran_recovers_nothing(db: DBConnector, lossy: LosesReplies) -> None:
    await ProducerStateTable(db, "T").set("k", [("f", "v")])
    source = state_pop(db)
    lossy.mode = "before"
    with pytest.raises(RedisConnectionError):
        await source.pop()
    assert await source.pop() == [], "the record is read: nothing"
    assert source.consumer.ready
    assert tasks_of(await source.pop()) == [("k", "SET", [("f", "v")])]


async def test_a_gap_in_the_sequence_is_filled_in_order(db: DBConnector) -> None:
    """A pop that ran after its caller gave up (e.g. Redis was frozen): the next reply's number
    shows the gap, and the missing batch comes first."""
    producer = ProducerStateTable(db, "T")
    await producer.set("k1", [("f", "1")])
    other = state_pop(db)  # pops under the same record, as the late pop would have
    await other.pop()
    await producer.set("k2", [("f", "2")])
    source = state_pop(db)
    batches = await source.pop()
    assert [(b.seq, [t.key for t in b.tasks]) for b in batches] == [(1, ["k1"]), (2, ["k2"])]


async def test_prefetch_runs_the_next_pops_and_settle_hands_them_over(db: DBConnector) -> None:
    assert PREFETCH_DEPTH == 2
    await ProducerStateTable(db, "T").set_many([(f"k{i}", [("f", str(i))]) for i in range(7)])
    source = state_pop(db, batch=2)
    first = await source.pop()
    assert len(tasks_of(first)) == 2 and source.consumer.ready
    # the next two pops ran before this read, which is sent after them on the same connection
    assert await db.execute_many([("SCARD", "T_KEY_SET")]) == [1]
    settled = await source.settle()
    assert len(tasks_of(settled)) == 4 and [b.seq for b in settled] == [2, 3]
    rest = await drain(source)
    assert sorted(t.key for t in tasks_of(first + settled + rest)) == [f"k{i}" for i in range(7)]


async def test_a_settle_cancelled_while_pops_are_out_loses_nothing(db: DBConnector) -> None:
    await ProducerStateTable(db, "T").set_many([(f"k{i}", [("f", str(i))]) for i in range(6)])
    source = state_pop(db, batch=2)
    first = await source.pop()
    settled = await settle_cancelled_while_a_reply_is_late(source._prefetch, source.settle)
    assert [b.seq for b in settled] == [2, 3]
    assert sorted(t.key for t in tasks_of(first + settled)) == [f"k{i}" for i in range(6)]
    assert await source.settle() == []


async def test_the_table_stays_ready_until_every_prefetched_pop_is_handed_over(db: DBConnector) -> None:
    await ProducerStateTable(db, "T").set_many([(f"k{i}", [("f", str(i))]) for i in range(5)])
    source = state_pop(db, batch=2)
    got = [await source.pop()]  # 2 keys; pops of 2 and of 1 sent
    got.append(await source.pop())  # 2 keys, and more=1 when popped: one more pop sent
    got.append(await source.pop())  # the last key (more=0), a pop still out
    assert source.consumer.ready
    got.append(await source.pop())  # that pop found nothing
    assert sorted(t.key for t in tasks_of([b for batch in got for b in batch])) == [f"k{i}" for i in range(5)]
    assert not source.consumer.ready



async def test_a_hand_over_that_fails_with_a_prefetch_out_loses_and_repeats_nothing(
    db: DBConnector, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The next pop is sent before a batch is handed over; when the hand-over fails (reading
    back a gap), the prefetched batch is read back once with the rest, not handed over twice."""
    await ProducerStateTable(db, "T").set_many([(f"k{i}", [("f", str(i))]) for i in range(8)])
    other = state_pop(db, batch=2)  # same instance and table: its batch is a gap for `source`
    source = state_pop(db, batch=2)
    assert [b.seq for b in await other.pop()] == [1]
    await other.settle()  # its prefetch (seq 2) lands in the record too
    original = db.redis.hmget
    calls = 0

    async def fails_once(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RedisConnectionError("Connection closed by server.")
        return await original(*args, **kwargs)

    monkeypatch.setattr(db.redis, "hmget", fails_once)
    with pytest.raises(RedisConnectionError):
        await source.pop()  # seq 3 popped, its prefetch (seq 4) sent, reading back 1-2 fails
    batches = await drain(source)
    assert [b.seq for b in batches] == [1, 2, 3, 4]
    assert sorted(t.key for t in tasks_of(batches)) == [f"k{i}" for i in range(8)]


async def test_take_over_hands_over_what_an_earlier_run_left_in_order(db: DBConnector) -> None:
    producer = ProducerTable(db, "Q")
    await producer.set("a", [("f", "1")])
    first = queue_pop(db)
    await first.pop()
    await producer.delete("a")
    await producer.set("b", [("f", "2")])
    await first.pop()  # the process "dies" here: nothing was done
    again = queue_pop(db)
    batches = await again.take_over()
    assert [b.seq for b in batches] == [1, 2]
    assert tasks_of(batches) == [("a", "SET", [("f", "1")]), ("a", "DEL", []), ("b", "SET", [("f", "2")])]
    assert again.last_seq == 2
    await producer.set("c", [("f", "3")])
    assert [b.seq for b in await again.pop()] == [3]


async def test_a_task_held_back_forever_gets_the_record_compacted(db: DBConnector) -> None:
    producer = ProducerStateTable(db, "T")
    source = state_pop(db, compact_after=4)
    pending = source.pending
    await producer.set("held", [("f", "0")])
    await producer.delete("gone")
    for b in await source.pop():
        pending.add_many(b.tasks, b.seq)
    held = pending.take("held")  # running, never done (a Retry that never clears)
    for i in range(1, 10):
        await producer.set(f"k{i}", [("f", str(i))])
        await producer.set("held", [("g", str(i))])
        for b in await source.pop():
            pending.add_many(b.tasks, b.seq)
        for key in [k for k, _ in pending.snapshot() if k != "held"]:
            pending.done(pending.take(key))
        await source.clear()
    record = inflight_key("test", "T")
    fields = [f for f in await db.redis.hkeys(record) if f != "seq"]
    assert len(fields) <= 5 and source.compactions >= 1, fields
    replay = PendingMap()
    for b in await state_pop(db).take_over():
        replay.add_many(b.tasks, b.seq)
    by_key = {t.key: t for t in replay.tasks()}
    assert by_key["held"] == ("held", "SET", [("f", "0"), ("g", "9")]), "the held task, merged in order"
    assert held.task == ("held", "SET", [("f", "0")])
    assert set(by_key) <= {"held", "gone", *(f"k{i}" for i in range(1, 10))}


@pytest.mark.parametrize("kind", ["state", "queue"])
async def test_an_entry_with_many_fields_is_written_whole(db: DBConnector, kind: str) -> None:
    fvs = [(f"f{i}", f"v{i}") for i in range(3000)]
    if kind == "state":
        await ProducerStateTable(db, "T").set("big", fvs)
        source = state_pop(db)
    else:
        await ProducerTable(db, "T").set("big", fvs)
        source = queue_pop(db, "T")
    source.consumer.notify()
    (task,) = tasks_of(await drain(source))
    assert task.op == "SET" and sorted(task.fvs) == sorted(fvs)
    assert sorted(await Table(db, "T").get("big")) == sorted(fvs)


async def test_close_ends_a_clearing_task_that_lost_a_cancellation(
    db: DBConnector, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A library call may swallow the cancellation meant for the clearing task, which then goes
    back to waiting for progress: close() asks again instead of waiting for it forever."""
    source = state_pop(db)
    source.start()
    swallowed = []

    async def clear_that_swallows_one_cancellation() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            if swallowed:
                raise
            swallowed.append(True)
            asyncio.current_task().uncancel()  # type: ignore[union-attr]

    monkeypatch.setattr(source, "clear", clear_that_swallows_one_cancellation)
    source._kept.append(1)
    source.progress()
    await asyncio.sleep(0.5)  # the clearing task waited clear_delay (0.05 s) and is in clear() now
    monkeypatch.undo()
    await asyncio.wait_for(source.close(1.0), 10)
    assert swallowed == [True]


# -- a record that started over (Redis lost its data) ------------------------------------------


async def lose_redis_data(db: DBConnector) -> None:
    """What a redis-server restarted without persistence holds: nothing (the record included)."""
    await db.redis.flushall()


async def three_popped_batches(db: DBConnector) -> tuple[ProducerStateTable, Any]:
    """A producer of table T and a reliable pop that took three batches (old0-old2), one each,
    added to its pending map: the record's numbers 1-3 handed over."""
    producer = ProducerStateTable(db, "T")
    source = state_pop(db)
    for i in range(3):
        await producer.set(f"old{i}", [("f", "v")])
        for b in await source.pop():
            source.pending.add_many(b.tasks, b.seq)
    return producer, source


async def test_after_redis_lost_its_data_a_lost_reply_is_read_back_and_nothing_handled_comes_again(
    db: DBConnector, lossy: LosesReplies
) -> None:
    """The record's counter starts again at 1, below the numbers handed over: the batch of a pop
    whose reply was lost is read back all the same, and once handled it is cleared, so the next
    start does not hand it over again after a newer change of its key (a field the key no longer
    had would come back, as in the campaign's seed 10, which test_a_removal_meant_for_the_lost_
    record_leaves_the_new_records_batches plays)."""
    producer, source = await three_popped_batches(db)
    assert source.last_seq == 3
    finish_all(source.pending)
    await source.clear()
    await lose_redis_data(db)
    await producer.set("k", [("f2", "a")])
    lossy.mode = "after"
    with pytest.raises(RedisConnectionError):
        await source.pop()
    batches = await source.pop()
    assert tasks_of(batches) == [("k", "SET", [("f2", "a")])] and source.restarts == 1
    for b in batches:
        source.pending.add_many(b.tasks, b.seq)
    finish_all(source.pending)
    await producer.delete("k")
    await producer.set("k", [("f1", "b")])
    batches = await drain(source)
    assert tasks_of(batches) == [("k", "DEL", []), ("k", "SET", [("f1", "b")])]
    finish_all(source.pending)
    await source.clear()
    assert await db.redis.hkeys(inflight_key("test", "T")) == ["seq"]
    assert await state_pop(db).take_over() == []


@pytest.mark.parametrize("rounds", [5, 9])
async def test_after_redis_lost_its_data_a_compaction_keeps_the_order_of_the_new_record(
    db: DBConnector, rounds: int
) -> None:
    """A task in a handler across the loss, then a task held back while batches pile up and the
    record is compacted: the next start takes over the held task whole, and nothing older (a
    snapshot once went under a number of the lost record, which the new record's counter reached
    again: the held task's newer fields were overwritten)."""
    producer = ProducerStateTable(db, "T")
    source = state_pop(db, compact_after=3)
    pending = source.pending
    for i in range(6):
        await producer.set(f"old{i}", [("f", "v")])
        for b in await source.pop():
            pending.add_many(b.tasks, b.seq)
    running = pending.take("old5")  # in a handler while Redis loses its data
    finish_all(pending)
    await source.clear()
    await lose_redis_data(db)
    for i in range(1, rounds + 1):
        await producer.set(f"k{i}", [("f", str(i))])
        await producer.set("held", [(f"g{i}", str(i))])
        for b in await source.pop():
            pending.add_many(b.tasks, b.seq)
        for key in [k for k, _ in pending.snapshot() if k != "held"]:
            pending.done(pending.take(key))
        await source.clear()
    replay = PendingMap()
    for b in await state_pop(db).take_over():
        replay.add_many(b.tasks, b.seq)
    by_key = {t.key: t for t in replay.tasks()}
    assert by_key["held"] == ("held", "SET", [(f"g{i}", str(i)) for i in range(1, rounds + 1)])
    assert by_key.get("old5", running.task) == running.task, "not done: in the snapshot, or lost with Redis"
    assert set(by_key) <= {"held", "old5", *(f"k{i}" for i in range(1, rounds + 1))}
    assert source.compactions >= 1 and getattr(source, "restarts", None) == 1


async def test_a_removal_meant_for_the_lost_record_leaves_the_new_records_batches(db: DBConnector) -> None:
    """Finished batches 1-3, then Redis loses its data and new batches 1-3 land in the new record
    (pops that ran before the removal, re-sent after a reconnect, arrived: played here by a
    second pop on the same record) before the removal of the old 1-3 runs: the new ones stay, and
    the next start takes them over (the campaign's seed 10: a DEL removed so was never replayed,
    and an older field of its key came back)."""
    producer, source = await three_popped_batches(db)
    finish_all(source.pending)
    await lose_redis_data(db)
    other = state_pop(db)
    for key in ("a", "b", "c"):
        await producer.set(key, [("f", key)])
        await other.pop()
    await source.clear()  # its numbers 1-3 are the lost record's
    assert sorted(await db.redis.hkeys(inflight_key("test", "T"))) == ["1", "2", "3", "seq"]
    assert [t.key for t in tasks_of(await state_pop(db).take_over())] == ["a", "b", "c"]


async def test_a_compaction_sent_again_after_its_reply_was_lost_is_stored_once(
    db: DBConnector, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The removal and compaction script runs in Redis, its reply is lost with the connection and
    the connector sends it again: the second run finds the snapshot already in place."""
    producer = ProducerStateTable(db, "T")
    source = state_pop(db, compact_after=2)
    pending = source.pending
    for key in ("a", "b", "c"):
        await producer.set(key, [("f", key)])
        for b in await source.pop():
            pending.add_many(b.tasks, b.seq)
    original = db._send_all
    lost: list[bool] = []

    def loses_the_first_clear_reply(commands: Any) -> Any:
        async def send() -> Any:
            replies = await original(commands)
            if commands[0][1] == INFLIGHT_CLEAR.sha and not lost:
                lost.append(True)
                raise RedisConnectionError("Connection closed by server.")
            return replies
        return send()

    monkeypatch.setattr(db, "_send_all", loses_the_first_clear_reply)
    await source.clear()  # nothing done: three batches kept, more than compact_after
    assert lost and source.compactions == 1
    assert sorted(await db.redis.hkeys(inflight_key("test", "T"))) == ["1", "seq"]
    pending.done(pending.take("a"))
    pending.done(pending.take("b"))
    pending.done(pending.take("c"))
    await source.clear()
    assert await db.redis.hkeys(inflight_key("test", "T")) == ["seq"], "the snapshot is removed once done"
