"""Journaled pops: a batch whose reply was lost with its connection is read back by recover().

The lost reply is made deterministic by a connector whose EVALSHA runs the script on the real
server and then raises the error a dropped connection raises (or raises before sending it).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError
from structlog.testing import capture_logs

from swssd import (
    ConsumerStateTable, ConsumerTable, DBConnector, KeyOpFieldsValues, Orch, ProducerStateTable, ProducerTable, Table,
)
from swssd.consumer_base import ConsumerTableBase
from swssd.embedded_redis import EmbeddedRedis
from swssd.orch.config import config_from_dict
from swssd.orch.daemon import Daemon

# Text the journal's JSON must carry byte for byte.
TRICKY = [
    ("plain", "v"),
    ("colon:pipe|", "a:b|c"),
    ("newline", "line1\nline2\r\n"),
    ("quotes", "\"double\" 'single' \\back\\slash /"),
    ("unicode", "héllo wörld ✓ 日本 🚀"),
    ("empty", ""),
    ("", "empty field name"),
    ("ctrl", "\x00\x01\x1f\x7f"),
    ("not-utf8", "\udcff\udcfe"),  # bytes 0xff 0xfe, as surrogateescape reads them
    ("json-ish", '{"a": [1, 2]}'),
]


class LosesReplies:
    """Wraps a connector's evalsha: the next pop runs in Redis and its reply is dropped (`after`),
    or the pop fails before it is sent (`before`). Keeps the dropped reply for comparison."""

    def __init__(self, db: DBConnector) -> None:
        self.db = db
        self.original = db.evalsha
        self.mode: str | None = None
        self.dropped: Any = None

    async def __call__(self, *args: Any, **kwargs: Any) -> Any:
        mode, self.mode = self.mode, None
        if mode == "before":
            raise RedisConnectionError("Error 111 connecting: Connection refused.")
        reply = await self.original(*args, **kwargs)
        if mode == "after":
            self.dropped = reply
            raise RedisConnectionError("Connection closed by server.")
        return reply


@pytest.fixture
def lossy(db: DBConnector, monkeypatch: pytest.MonkeyPatch) -> LosesReplies:
    wrapper = LosesReplies(db)
    monkeypatch.setattr(db, "evalsha", wrapper)
    return wrapper


async def lose_one_pop(consumer: ConsumerTableBase, lossy: LosesReplies, mode: str = "after") -> None:
    lossy.mode = mode
    with pytest.raises(RedisConnectionError):
        await consumer.pops()


async def test_state_table_lost_reply_is_recovered_byte_exact(db: DBConnector, lossy: LosesReplies) -> None:
    await ProducerStateTable(db, "T").set_many([("k:1|x", TRICKY), ("ключ\n", [("f", "v")])])
    consumer = ConsumerStateTable(db, "T", track_deletes=True, journal="_J:T")
    await lose_one_pop(consumer, lossy)
    assert not await db.redis.scard("T_KEY_SET"), "the script ran: the data left the key set"
    recovered = await consumer.recover()
    assert recovered == consumer._parse(lossy.dropped)
    assert sorted(recovered) == [("k:1|x", "SET", TRICKY), ("ключ\n", "SET", [("f", "v")])]
    assert await consumer.recover() == [], "a batch is handed over once"
    assert 0 < await db.redis.pttl("_J:T") <= 3_600_000
    assert await Table(db, "T").get("k:1|x") == TRICKY


async def test_pop_that_never_ran_recovers_nothing_and_the_data_stays(db: DBConnector, lossy: LosesReplies) -> None:
    producer = ProducerStateTable(db, "T")
    consumer = ConsumerStateTable(db, "T", track_deletes=True, journal="_J:T")
    await producer.set("k1", [("f", "1")])
    assert await consumer.pops() == [("k1", "SET", [("f", "1")])]  # journaled, answered
    await producer.set("k2", [("f", "2")])
    await lose_one_pop(consumer, lossy, "before")
    assert await db.redis.get("_J:T") is not None, "the journal holds the earlier pop"
    assert await consumer.recover() == [], "an earlier pop's journal is not handed over again"
    assert await consumer.pops() == [("k2", "SET", [("f", "2")])]


async def test_empty_lost_pop_recovers_nothing(db: DBConnector, lossy: LosesReplies) -> None:
    consumer = ConsumerStateTable(db, "T", journal="_J:T")
    await ProducerStateTable(db, "T").set("k", [("f", "v")])
    assert len(await consumer.pops()) == 1
    await lose_one_pop(consumer, lossy)
    assert lossy.dropped == []
    assert await consumer.recover() == []


async def test_a_journal_left_by_another_consumer_never_matches(db: DBConnector, lossy: LosesReplies) -> None:
    producer = ProducerStateTable(db, "T")
    await producer.set("old", [("f", "v")])
    assert len(await ConsumerStateTable(db, "T", journal="_J:T").pops()) == 1
    await producer.set("new", [("f", "v")])
    fresh = ConsumerStateTable(db, "T", journal="_J:T")
    await lose_one_pop(fresh, lossy, "before")
    assert await fresh.recover() == []


@pytest.mark.parametrize("track_deletes", [True, False])
async def test_delete_then_set_through_the_journal(db: DBConnector, lossy: LosesReplies, track_deletes: bool) -> None:
    producer = ProducerStateTable(db, "T")
    consumer = ConsumerStateTable(db, "T", track_deletes=track_deletes, journal="_J:T")
    await producer.set("k", [("a", "1"), ("b", "2")])
    await producer.set("gone", [("a", "1")])
    await consumer.pops()
    await producer.delete("k")
    await producer.set("k", [("c", "3")])
    await producer.delete("gone")
    await lose_one_pop(consumer, lossy)
    recovered = sorted(await consumer.recover(), key=lambda t: t.key)
    expected_k = [("k", "DEL", []), ("k", "SET", [("c", "3")])] if track_deletes else [("k", "SET", [("c", "3")])]
    assert recovered == [("gone", "DEL", []), *expected_k]
    assert await Table(db, "T").get("k") == [("c", "3")]


async def test_journaled_pop_changes_redis_as_the_cpp_script_does(db: DBConnector) -> None:
    """Same changes on two copies of one history: only the journal key differs."""
    for name in ("A", "B"):
        producer = ProducerStateTable(db, name)
        await producer.set_many([(f"k{i}", TRICKY) for i in range(5)])
        await ConsumerStateTable(db, name).pops()
        await producer.delete("k1")
        await producer.set("k1", [("x", "y")])
        await producer.delete("k2")
        await producer.set("k3", [("plain", "w")])
    await ConsumerStateTable(db, "A").pops()
    await ConsumerStateTable(db, "B", journal="_J:B").pops()
    assert await Table(db, "A").dump() == await Table(db, "B").dump()
    keys = {k for k in await db.redis.keys("*") if not k.startswith("_J:")}
    assert {k.replace("A", "B", 1) for k in keys if k.startswith(("A", "_A"))} == {
        k for k in keys if k.startswith(("B", "_B"))
    }


async def test_consumer_table_lost_reply_is_recovered_byte_exact(db: DBConnector, lossy: LosesReplies) -> None:
    producer = ProducerTable(db, "Q", buffered=True)
    await producer.set("k:1|x", TRICKY)
    await producer.delete("ключ\n")
    await producer.set("k2", [("f", "")], op="create")
    await producer.flush()
    consumer = ConsumerTable(db, "Q", journal="_J:Q")
    await lose_one_pop(consumer, lossy)
    assert not await db.redis.llen("Q_KEY_VALUE_OP_QUEUE")
    recovered = await consumer.recover()
    assert recovered == consumer._parse(lossy.dropped)
    assert recovered == [("k:1|x", "SET", TRICKY), ("ключ\n", "DEL", []), ("k2", "create", [("f", "")])]
    assert await Table(db, "Q").get("k:1|x") == TRICKY, "modify_redis as the C++ script does"
    assert await consumer.recover() == []


async def test_consumer_table_pop_that_never_ran_keeps_the_queue(db: DBConnector, lossy: LosesReplies) -> None:
    producer = ProducerTable(db, "Q")
    await producer.set("k", [("f", "v")])
    consumer = ConsumerTable(db, "Q", journal="_J:Q")
    await lose_one_pop(consumer, lossy, "before")
    assert await consumer.recover() == []
    assert await consumer.pops() == [("k", "SET", [("f", "v")])]


async def test_prefetched_pop_has_its_own_sequence_number(db: DBConnector, lossy: LosesReplies) -> None:
    await ProducerStateTable(db, "T").set_many([(f"k{i}", [("f", str(i))]) for i in range(5)])
    consumer = ConsumerStateTable(db, "T", pop_batch_size=2, track_deletes=True, prefetch=True, journal="_J:T")
    first = await consumer.pops()
    assert len(first) == 2 and consumer._inflight is not None
    lossy.mode = "after"  # the prefetched pop, sent once this test awaits, loses its reply
    with pytest.raises(RedisConnectionError):
        await consumer.pops()
    recovered = await consumer.recover()
    assert len(recovered) == 2 and recovered == consumer._parse(lossy.dropped)
    rest: list[Any] = []
    while batch := await consumer.pops():
        rest += batch
    assert sorted(t.key for t in first + recovered + rest) == [f"k{i}" for i in range(5)]


async def test_without_a_journal_nothing_is_recovered_and_no_key_is_written(
    db: DBConnector, lossy: LosesReplies
) -> None:
    await ProducerStateTable(db, "T").set("k", [("f", "v")])
    consumer = ConsumerStateTable(db, "T")
    await lose_one_pop(consumer, lossy)
    assert await consumer.recover() == []
    assert not [k for k in await db.redis.keys("*") if "J" in k]


class KeepingOrch(Orch):
    """Keeps every task it is handed."""

    def __init__(self) -> None:
        super().__init__()
        self.handled: list[tuple[str, KeyOpFieldsValues]] = []

    async def handle(self, table: str, task: KeyOpFieldsValues) -> None:
        self.handled.append((table, task))


@pytest.mark.parametrize("mode", ["after", "before"])
async def test_daemon_hands_over_a_batch_whose_reply_was_lost(
    db: DBConnector, clean_redis: EmbeddedRedis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    config = config_from_dict({
        "redis": {"database_config": str(clean_redis.write_database_config(tmp_path / "database_config.json"))},
        "orchs": [{"plugin": f"{__name__}:KeepingOrch",
                   "tables": [{"db": "APPL_DB", "table": "J", "pop_batch_size": 16},
                              {"db": "APPL_DB", "table": "JQ", "kind": "queue", "pop_batch_size": 16}]}],
    })
    daemon = Daemon(config, handle_signals=False)
    with capture_logs() as logs:
        run = asyncio.ensure_future(daemon.run())
        try:
            await asyncio.wait_for(daemon.ready.wait(), 20)
            orch: KeepingOrch = daemon.runtimes[0].orch  # type: ignore[assignment]
            lossy = LosesReplies(daemon.connectors["APPL_DB"])
            monkeypatch.setattr(daemon.connectors["APPL_DB"], "evalsha", lossy)
            journals = [w.consumer.journal for w in daemon.workers]
            assert all(journals) and len(set(journals)) == 2
            lossy.mode = mode
            await ProducerStateTable(db, "J").set_many([(f"k{i}", [("f", str(i))]) for i in range(100)])
            queue = ProducerTable(db, "JQ")
            for i in range(40):
                await queue.set(f"q{i}", [("f", str(i))])
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 20
            while len(orch.handled) < 140:
                assert loop.time() < deadline, f"{len(orch.handled)} of 140 handled"
                await asyncio.sleep(0.02)
            await asyncio.sleep(0.1)
            assert lossy.mode is None, "a pop went through the lossy connector"
            handled = sorted(t.key for _, t in orch.handled)
            assert handled == sorted([f"k{i}" for i in range(100)] + [f"q{i}" for i in range(40)]), "once each"
            recovered = [e for e in logs if e["event"] == "pop recovered"]
            if mode == "after":
                assert len(recovered) == 1 and recovered[0]["tasks"] == 16
                assert sum(w.stats.interrupted_pops for w in daemon.workers) == 1
            else:
                assert recovered == []
            assert await db.redis.exists(*journals) >= 1
        finally:
            daemon.stop()
            assert await asyncio.wait_for(run, 30) == 0
    assert await db.redis.exists(*journals) == 0, "journals are removed at a clean shutdown"
