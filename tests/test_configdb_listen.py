"""ConfigDBConnector.subscribe/listen and events() against a real redis-server: swsscommon's
test_redis_ut.py listen tests (test_ConfigDBSubscribe, test_ConfigDBInit) ported, the cache
check of configdb.h's listen() (init_data entries leave the cache as they are hit, the row string
is the lookup key), deletes, lists, tuple keys, coroutine handlers, stop and cancellation, and no
loss across pub/sub kills."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from structlog.testing import capture_logs

from swssd.channels.configdb import ConfigDBConnector
from swssd.channels.configdb_listener import ConfigEvent, ConfigEvents, _ListenedTable
from swssd.redis.embedded_redis import EmbeddedRedis

WAIT = 10.0


@pytest.fixture
async def cdb(clean_redis: EmbeddedRedis) -> AsyncIterator[ConfigDBConnector]:
    """The listening connector (CONFIG_DB, id 4, '|'), keyspace events on as SONiC has them."""
    conn = await ConfigDBConnector.from_url(clean_redis.url)
    await conn.db.redis.config_set("notify-keyspace-events", "AKE")
    yield conn
    conn.stop()
    await conn.db.redis.config_set("notify-keyspace-events", "AKE")
    await conn.close()


@pytest.fixture
async def writer(clean_redis: EmbeddedRedis) -> AsyncIterator[ConfigDBConnector]:
    conn = await ConfigDBConnector.from_url(clean_redis.url)
    yield conn
    await conn.close()


class Recorder:
    """What handlers were called with, in order: (table, key, data), or ("init", data)."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def handler(self, table: str, key: Any, data: Any) -> None:
        self.calls.append((table, key, data))

    def init(self, data: Any) -> None:
        self.calls.append(("init", data))

    def of(self, table: str) -> list[tuple[Any, Any]]:
        return [(c[1], c[2]) for c in self.calls if c[0] == table]


async def until(predicate: Callable[[], bool], timeout: float = WAIT) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        assert loop.time() < deadline, "timed out"
        await asyncio.sleep(0.01)


async def pubsub_clients(cdb: ConfigDBConnector, expected: int) -> int:
    """The server's pub/sub clients, polled for a second until there are `expected`: the server
    notices a closed connection a moment after its client closed it."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 1.0
    while True:
        listed = await cdb.db.redis.execute_command("CLIENT", "LIST", "TYPE", "pubsub")
        count = len([line for line in str(listed).splitlines() if line.strip()])
        if count == expected or loop.time() > deadline:
            return count
        await asyncio.sleep(0.01)


async def start_listen(cdb: ConfigDBConnector, rec: Recorder, init: bool = True) -> asyncio.Task[None]:
    """listen() in a task, returned once its initial data went out (marked by the READY table's
    entry, fired through its handler after every table was read)."""
    await cdb.db.redis.hset("READY|marker", "ok", "1")
    cdb.subscribe("READY", rec.handler, fire_init_data=True)
    fired = rec.calls.count(("READY", "marker", {"ok": "1"}))
    task = asyncio.ensure_future(cdb.listen(rec.init if init else None))
    await until(lambda: rec.calls.count(("READY", "marker", {"ok": "1"})) > fired or task.done())
    if task.done():
        task.result()
    return task


async def stop_listen(cdb: ConfigDBConnector, task: asyncio.Task[None]) -> None:
    cdb.stop()
    await asyncio.wait_for(task, WAIT)


async def mark(writer: ConfigDBConnector, rec: Recorder, table: str, n: int) -> None:
    """Write a marker entry into `table` and wait for its change: earlier changes of the table
    have been handled (a table's keys are read in the order their events came)."""
    await writer.set_entry(table, f"marker{n}", {"n": str(n)})
    await until(lambda: (table, f"marker{n}", {"n": str(n)}) in rec.calls)


# -- swsscommon's test_redis_ut.py ----------------------------------------------------------


async def test_config_db_subscribe(cdb: ConfigDBConnector, writer: ConfigDBConnector) -> None:
    """test_ConfigDBSubscribe: a handler subscribed before listen() gets a later set_entry."""
    got: list[tuple[str, Any, Any]] = []
    cdb.subscribe("TEST_TABLE", lambda table, key, data: got.append((table, key, data)))
    assert "TEST_TABLE" in cdb.handlers
    rec = Recorder()
    task = await start_listen(cdb, rec, init=False)
    await writer.set_entry("TEST_TABLE", "key1", {"field1": "value1"})
    await until(lambda: bool(got))
    assert got == [("TEST_TABLE", "key1", {"field1": "value1"})]
    cdb.unsubscribe("TEST_TABLE")
    assert "TEST_TABLE" not in cdb.handlers
    await stop_listen(cdb, task)


async def test_config_db_init(cdb: ConfigDBConnector, writer: ConfigDBConnector) -> None:
    """test_ConfigDBInit: fire_init_data tables go through their handler before the init data
    handler gets the others' ({} for an entry with no fields), then changes come."""
    data = {"field1": "value1", "field2": "value2"}
    t1_data = {f"TEST_TABLE_1_{k}": v for k, v in data.items()}
    t2_data = {f"TEST_TABLE_2_{k}": v for k, v in data.items()}
    await writer.set_entry("TEST_TABLE_1", "key1", t1_data)
    await writer.set_entry("TEST_TABLE_2", "key1", t2_data)
    await writer.set_entry("TEST_TABLE_3", "key1", {})

    rec = Recorder()
    cdb.subscribe("TEST_TABLE_1", rec.handler, fire_init_data=False)
    cdb.subscribe("TEST_TABLE_2", rec.handler, fire_init_data=True)
    cdb.subscribe("TEST_TABLE_3", rec.handler, fire_init_data=False)
    task = asyncio.ensure_future(cdb.listen(init_data_handler=rec.init))
    await until(lambda: len(rec.calls) == 2)
    assert rec.calls == [
        ("TEST_TABLE_2", "key1", t2_data),
        ("init", {"TEST_TABLE_1": {"key1": t1_data}, "TEST_TABLE_3": {"key1": {}}}),
    ]

    t1_data.popitem()
    await writer.set_entry("TEST_TABLE_1", "key1", t1_data)
    await until(lambda: rec.calls[-1] == ("TEST_TABLE_1", "key1", t1_data))
    await writer.set_entry("TEST_TABLE_1", "key1", {})
    await until(lambda: rec.calls[-1] == ("TEST_TABLE_1", "key1", {}))
    await writer.set_entry("TEST_TABLE_1", "key1", None)
    await until(lambda: rec.calls[-1] == ("TEST_TABLE_1", "key1", None))
    await writer.set_entry("TEST_TABLE_3", "key1", None)
    await until(lambda: rec.calls[-1] == ("TEST_TABLE_3", "key1", None))
    await stop_listen(cdb, task)


# -- configdb.h's cache check -----------------------------------------------------------------


@pytest.mark.parametrize("mode", ["fire_init_data", "init_data_handler", "neither"])
async def test_first_change_equal_to_initial_entry_is_not_fired(
    cdb: ConfigDBConnector, writer: ConfigDBConnector, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """Writes land between the subscription and the initial read: the read has them, and their
    events come after it, as in swsscommon (psubscribe, then get_table, then the queued events).
    A change equal to the cached initial entry is not fired, once per key (the entry leaves the
    cache when hit, equal or not); keys absent from the initial data always fire; tuple keys
    never hit (listen() looks the row string up among deserialized keys). Without fire_init_data
    and init_data_handler there is no cache: every change fires."""
    await writer.set_entry("PORT", "same", {"mtu": "1500"})
    await writer.set_entry("PORT", "untouched", {"mtu": "1500"})
    await writer.set_entry("PORT", "gone", {"mtu": "1500"})
    original = _ListenedTable.read_initial

    async def written_meanwhile(self: _ListenedTable) -> dict[str, dict[str, str]]:
        if self.name == "PORT":
            await self.subscribed
            await writer.set_entry("PORT", "same", {"mtu": "9100"})
            await writer.set_entry("PORT", "new", {"mtu": "9100", "lanes": ["1", "2"]})
            await writer.set_entry("PORT", ("Vlan1", "Ethernet0"), {"mode": "tagged"})
            await writer.set_entry("PORT", "gone", None)
        return await original(self)

    monkeypatch.setattr(_ListenedTable, "read_initial", written_meanwhile)
    rec = Recorder()
    cdb.subscribe("PORT", rec.handler, fire_init_data=mode == "fire_init_data")
    task = await start_listen(cdb, rec, init=mode == "init_data_handler")
    initial = {  # get_table's order: the row strings' bytes
        ("Vlan1", "Ethernet0"): {"mode": "tagged"},
        "new": {"lanes": ["1", "2"], "mtu": "9100"},
        "same": {"mtu": "9100"},
        "untouched": {"mtu": "1500"},
    }
    await mark(writer, rec, "PORT", 1)
    await writer.mod_entry("PORT", "untouched", {"mtu": "1500"})  # equal to the cache: a hit
    await writer.mod_entry("PORT", "same", {"mtu": "9100"})  # equal again, but no longer cached
    await mark(writer, rec, "PORT", 2)
    await stop_listen(cdb, task)

    queued = [  # the events behind the initial read, in the order they were written
        ("same", {"mtu": "9100"}),
        ("new", {"lanes": ["1", "2"], "mtu": "9100"}),
        ("Vlan1|Ethernet0", {"mode": "tagged"}),
        ("gone", None),
    ]
    marker1 = [("marker1", {"n": "1"})]
    later = [("untouched", {"mtu": "1500"}), ("same", {"mtu": "9100"}), ("marker2", {"n": "2"})]
    if mode == "neither":
        assert rec.of("PORT") == queued + marker1 + later
        assert [c for c in rec.calls if c[0] == "init"] == []
        return
    not_hit = [("Vlan1|Ethernet0", {"mode": "tagged"}), ("gone", None)]
    if mode == "fire_init_data":
        assert rec.of("PORT")[:4] == list(initial.items())
        assert rec.of("PORT")[4:] == not_hit + marker1 + later[1:]
    else:
        (init,) = [c[1] for c in rec.calls if c[0] == "init"]
        assert list(init["PORT"].items()) == list(initial.items())
        assert rec.of("PORT") == not_hit + marker1 + later[1:]


async def test_events_hit_tuple_keys_too(
    cdb: ConfigDBConnector, writer: ConfigDBConnector, monkeypatch: pytest.MonkeyPatch
) -> None:
    """events() deserializes every key, so its cache check holds for tuple keys as well."""
    original = _ListenedTable.read_initial

    async def written_meanwhile(self: _ListenedTable) -> dict[str, dict[str, str]]:
        await self.subscribed
        await writer.set_entry("VLAN_MEMBER", ("Vlan1", "Ethernet0"), {"mode": "tagged"})
        return await original(self)

    monkeypatch.setattr(_ListenedTable, "read_initial", written_meanwhile)
    async with cdb.events(["VLAN_MEMBER"]) as events:
        assert events.initial == {"VLAN_MEMBER": {("Vlan1", "Ethernet0"): {"mode": "tagged"}}}
        await writer.set_entry("VLAN_MEMBER", ("Vlan1", "Ethernet4"), {"mode": "untagged"})
        got = [await asyncio.wait_for(anext(events), WAIT) for _ in range(2)]
    assert got == [
        ConfigEvent("VLAN_MEMBER", ("Vlan1", "Ethernet0"), {"mode": "tagged"}),
        ConfigEvent("VLAN_MEMBER", ("Vlan1", "Ethernet4"), {"mode": "untagged"}),
    ]


# -- what handlers get ------------------------------------------------------------------------


async def test_deletes_are_none_once(cdb: ConfigDBConnector, writer: ConfigDBConnector) -> None:
    """DEL, HDEL of the last field and expiry all come as one None; an entry with no fields as {}."""
    for key in ("a", "b", "c", "d"):
        await writer.set_entry("PORT", key, {"f": "v"})
    rec = Recorder()
    cdb.subscribe("PORT", rec.handler)
    task = await start_listen(cdb, rec, init=False)
    await writer.set_entry("PORT", "a", None)
    await writer.db.redis.hdel("PORT|b", "f")
    await writer.db.redis.pexpire("PORT|c", 20)
    await asyncio.sleep(0.2)
    await writer.set_entry("PORT", "d", {})
    await mark(writer, rec, "PORT", 1)
    await stop_listen(cdb, task)
    got = rec.of("PORT")
    assert [e for e in got if e[0] != "c"] == [("a", None), ("b", None), ("d", {}), ("marker1", {"n": "1"})]
    # PEXPIRE is an `expire` event of an existing key: the entry, unless `expired` came first
    assert [e for e in got if e[0] == "c"] in ([("c", {"f": "v"}), ("c", None)], [("c", None)])


async def test_lists_and_tuple_keys(cdb: ConfigDBConnector, writer: ConfigDBConnector) -> None:
    """`field@` lists arrive as lists (a list wins over a plain field of the same name, as in
    get_entry); initial keys are deserialized, a change's key is the row string (swsscommon)."""
    await writer.set_entry("VLAN_MEMBER", ("Vlan1", "Ethernet0"), {"ports": ["a", "b"]})
    rec = Recorder()
    cdb.subscribe("VLAN_MEMBER", rec.handler, fire_init_data=True)
    task = await start_listen(cdb, rec)
    await writer.mod_entry("VLAN_MEMBER", ("Vlan1", "Ethernet4"), {"ports": ["c"], "x": "1"})
    await writer.db.redis.hset("VLAN_MEMBER|Vlan1|Ethernet8", mapping={"p@": "1,2", "p": "3"})
    await until(lambda: len(rec.of("VLAN_MEMBER")) == 3)
    await stop_listen(cdb, task)
    assert rec.of("VLAN_MEMBER") == [
        (("Vlan1", "Ethernet0"), {"ports": ["a", "b"]}),
        ("Vlan1|Ethernet4", {"ports": ["c"], "x": "1"}),
        ("Vlan1|Ethernet8", {"p": ["1", "2"]}),
    ]


async def test_coroutine_handlers_are_awaited_in_order(cdb: ConfigDBConnector, writer: ConfigDBConnector) -> None:
    await writer.set_entry("PORT", "Ethernet0", {"mtu": "9100"})
    log: list[str] = []

    async def handler(table: str, key: Any, data: Any) -> None:
        log.append(f"start {key}")
        await asyncio.sleep(0.02)
        log.append(f"end {key}")

    async def init(data: Any) -> None:
        await asyncio.sleep(0.02)
        log.append(f"init {sorted(data)}")

    cdb.subscribe("PORT", handler)
    cdb.subscribe("VLAN", handler, fire_init_data=True)
    task = asyncio.ensure_future(cdb.listen(init))
    await until(lambda: bool(log))
    for i in (1, 2, 3):
        await writer.set_entry("PORT", f"Ethernet{i}", {"mtu": "9100"})
    await until(lambda: len(log) == 7)
    await stop_listen(cdb, task)
    assert log == ["init ['PORT']"] + [f"{s} Ethernet{i}" for i in (1, 2, 3) for s in ("start", "end")]


async def test_handlers_get_their_own_initial_entries(cdb: ConfigDBConnector, writer: ConfigDBConnector) -> None:
    """A handler changing an initial entry does not change what the first change is checked against."""
    await writer.set_entry("PORT", "Ethernet0", {"lanes": ["1"]})
    rec = Recorder()

    def spoiling(table: str, key: Any, data: Any) -> None:
        rec.handler(table, key, data)
        if data and "lanes" in data:
            data["lanes"].append("spoiled")

    cdb.subscribe("PORT", spoiling, fire_init_data=True)
    task = await start_listen(cdb, rec)
    await writer.mod_entry("PORT", "Ethernet0", {"lanes": ["1"]})  # equal to the initial entry
    await mark(writer, rec, "PORT", 1)
    await stop_listen(cdb, task)
    assert [key for key, _ in rec.of("PORT")] == ["Ethernet0", "marker1"]


async def test_subscribe_and_unsubscribe_while_listening(cdb: ConfigDBConnector, writer: ConfigDBConnector) -> None:
    """As swsscommon: a table subscribed while listen() runs is followed from then on (its
    existing entries are not fired, even with fire_init_data); an unsubscribed one is not.
    "Then" is once its subscription is in place: the probe is written until a change comes."""
    await writer.set_entry("VLAN", "Vlan1", {"vlanid": "1"})
    rec = Recorder()

    def on_port(table: str, key: Any, data: Any) -> None:
        rec.handler(table, key, data)
        if key == "Ethernet0":
            cdb.subscribe("VLAN", rec.handler, fire_init_data=True)
            cdb.unsubscribe("PORT")

    cdb.subscribe("PORT", on_port)
    task = await start_listen(cdb, rec, init=False)
    await writer.set_entry("PORT", "Ethernet0", {"mtu": "9100"})
    await until(lambda: "VLAN" in cdb.handlers)
    probes = 0
    while not rec.of("VLAN"):
        probes += 1
        await writer.set_entry("VLAN", "probe", {"n": str(probes)})
        await asyncio.sleep(0.02)
    await writer.set_entry("PORT", "Ethernet4", {"mtu": "9100"})
    await writer.set_entry("VLAN", "Vlan2", {"vlanid": "2"})
    await until(lambda: len(rec.of("VLAN")) == 2)
    await mark(writer, rec, "READY", 1)
    await stop_listen(cdb, task)
    assert rec.of("PORT") == [("Ethernet0", {"mtu": "9100"})]
    assert rec.of("VLAN")[0][0] == "probe"
    assert rec.of("VLAN")[1] == ("Vlan2", {"vlanid": "2"})


async def test_non_hash_keys_are_logged_and_skipped(cdb: ConfigDBConnector, writer: ConfigDBConnector) -> None:
    await writer.db.redis.set("PORT|bad", "a string")
    rec = Recorder()
    cdb.subscribe("PORT", rec.handler, fire_init_data=True)
    with capture_logs() as logs:
        task = await start_listen(cdb, rec)
        await writer.db.redis.set("PORT|bad2", "another")
        await mark(writer, rec, "PORT", 1)
    await stop_listen(cdb, task)
    assert rec.of("PORT") == [("marker1", {"n": "1"})]
    assert sum(1 for e in logs if "not readable as a hash" in e["event"]) == 2


async def test_keyspace_events_off_is_said(cdb: ConfigDBConnector, writer: ConfigDBConnector) -> None:
    """No silent nothing: one warning line per table at the start; initial data still comes."""
    await cdb.db.redis.config_set("notify-keyspace-events", "")
    await writer.set_entry("PORT", "Ethernet0", {"mtu": "9100"})
    rec = Recorder()
    cdb.subscribe("PORT", rec.handler)
    with capture_logs() as logs:
        task = await start_listen(cdb, rec)
        async with cdb.events(["PORT"]) as events:
            assert events.keyspace_events is False
            assert events.initial == {"PORT": {"Ethernet0": {"mtu": "9100"}}}
    await stop_listen(cdb, task)
    assert ("init", {"PORT": {"Ethernet0": {"mtu": "9100"}}}) in rec.calls
    lines = [e["event"] for e in logs if "notify-keyspace-events" in e["event"]]
    assert len(lines) == 3  # READY and PORT for listen(), PORT for events()
    assert all("AKE" in line for line in lines) and sum("PORT gets" in line for line in lines) == 2


# -- stopping -------------------------------------------------------------------------------


async def test_stop_returns_and_listen_runs_again(cdb: ConfigDBConnector, writer: ConfigDBConnector) -> None:
    before = await pubsub_clients(cdb, 0)
    rec = Recorder()
    task = await start_listen(cdb, rec)
    assert await pubsub_clients(cdb, before + 1) == before + 1
    with pytest.raises(RuntimeError, match="already runs"):
        await cdb.listen()
    await stop_listen(cdb, task)
    assert task.result() is None
    assert await pubsub_clients(cdb, before) == before

    rec2 = Recorder()
    cdb.subscribe("PORT", rec2.handler)
    task = await start_listen(cdb, rec2)
    await until(lambda: ("init", {"PORT": {}}) in rec2.calls)
    await writer.set_entry("PORT", "Ethernet0", {"mtu": "9100"})
    await until(lambda: rec2.of("PORT") == [("Ethernet0", {"mtu": "9100"})])
    await cdb.close()  # stops listen() too
    await asyncio.wait_for(task, WAIT)


async def test_stop_from_a_handler(cdb: ConfigDBConnector, writer: ConfigDBConnector) -> None:
    seen: list[Any] = []

    def handler(table: str, key: Any, data: Any) -> None:
        seen.append(key)
        cdb.stop()

    cdb.subscribe("PORT", handler)
    task = asyncio.ensure_future(cdb.listen(lambda data: None))
    await asyncio.sleep(0.2)
    async with writer.db.redis.pipeline(transaction=True) as pipe:
        for i in range(10):
            pipe.hset(f"PORT|k{i}", "f", "v")
        await pipe.execute()
    await asyncio.wait_for(task, WAIT)
    assert seen == ["k0"]


async def test_cancel_closes_the_pubsub_connection(cdb: ConfigDBConnector, writer: ConfigDBConnector) -> None:
    before = await pubsub_clients(cdb, 0)
    rec = Recorder()
    cdb.subscribe("PORT", rec.handler)
    task = await start_listen(cdb, rec)
    assert await pubsub_clients(cdb, before + 1) == before + 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await pubsub_clients(cdb, before) == before
    task = await start_listen(cdb, rec)  # not "already running"
    await stop_listen(cdb, task)


async def test_cancel_during_a_coroutine_handler(cdb: ConfigDBConnector, writer: ConfigDBConnector) -> None:
    before = await pubsub_clients(cdb, 0)
    entered = asyncio.Event()

    async def slow(table: str, key: Any, data: Any) -> None:
        entered.set()
        await asyncio.sleep(60)

    cdb.subscribe("PORT", slow)
    task = asyncio.ensure_future(cdb.listen())
    await asyncio.sleep(0.2)
    await writer.set_entry("PORT", "Ethernet0", {"mtu": "9100"})
    await asyncio.wait_for(entered.wait(), WAIT)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await pubsub_clients(cdb, before) == before


# -- events() -------------------------------------------------------------------------------


async def test_events_initial_then_changes(cdb: ConfigDBConnector, writer: ConfigDBConnector) -> None:
    await writer.set_entry("PORT", "Ethernet4", {"mtu": "9100"})
    await writer.set_entry("PORT", "Ethernet0", {"lanes": ["1", "2"]})
    await writer.set_entry("VLAN_MEMBER", ("Vlan1", "Ethernet0"), {})
    got: list[ConfigEvent] = []
    async with cdb.events(tables=["PORT", "VLAN_MEMBER", "PORT"]) as events:
        assert events.keyspace_events is True
        for _ in range(3):
            got.append(await asyncio.wait_for(anext(events), WAIT))
        await writer.set_entry("PORT", "Ethernet0", None)
        await writer.set_entry("VLAN_MEMBER", ("Vlan1", "Ethernet4"), {"tagging_mode": "tagged"})
        async for event in events:
            got.append(event)
            if len(got) == 5:
                break
    assert got == [
        ConfigEvent("PORT", "Ethernet0", {"lanes": ["1", "2"]}),
        ConfigEvent("PORT", "Ethernet4", {"mtu": "9100"}),
        ConfigEvent("VLAN_MEMBER", ("Vlan1", "Ethernet0"), {}),
        ConfigEvent("PORT", "Ethernet0", None),
        ConfigEvent("VLAN_MEMBER", ("Vlan1", "Ethernet4"), {"tagging_mode": "tagged"}),
    ]
    table, key, data = got[0]  # a plain 3-tuple too
    assert (table, key, data) == ("PORT", "Ethernet0", {"lanes": ["1", "2"]})


async def test_events_without_fire_init_data(cdb: ConfigDBConnector, writer: ConfigDBConnector) -> None:
    await writer.set_entry("PORT", "Ethernet0", {"mtu": "9100"})
    before = await pubsub_clients(cdb, 0)
    async with cdb.events(["PORT"], fire_init_data=False) as events:
        assert events.initial == {"PORT": {"Ethernet0": {"mtu": "9100"}}}
        assert await pubsub_clients(cdb, before + 1) == before + 1
        await writer.mod_entry("PORT", "Ethernet0", {"mtu": "9100"})  # equal to the initial entry
        await writer.mod_entry("PORT", "Ethernet0", {"speed": "1000"})
        event = await asyncio.wait_for(anext(events), WAIT)
    assert event == ConfigEvent("PORT", "Ethernet0", {"mtu": "9100", "speed": "1000"})
    assert await pubsub_clients(cdb, before) == before


async def test_events_without_async_with(cdb: ConfigDBConnector, writer: ConfigDBConnector) -> None:
    """Subscribed at the first iteration; cancelling the consumer closes the connection."""
    before = await pubsub_clients(cdb, 0)
    await writer.set_entry("PORT", "Ethernet0", {"mtu": "9100"})
    got: list[ConfigEvent] = []

    async def consume() -> None:
        async for event in cdb.events(["PORT"]):
            got.append(event)

    task = asyncio.ensure_future(consume())
    await until(lambda: len(got) == 1)
    assert await pubsub_clients(cdb, before + 1) == before + 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await pubsub_clients(cdb, before) == before


async def test_events_aclose_ends_a_waiting_iteration(cdb: ConfigDBConnector) -> None:
    events = cdb.events(["PORT"])
    assert isinstance(events, ConfigEvents) and events.keyspace_events is None
    got: list[ConfigEvent] = []

    async def consume() -> None:
        async for event in events:
            got.append(event)

    task = asyncio.ensure_future(consume())
    await until(lambda: events.keyspace_events is not None)
    await asyncio.sleep(0.05)
    await events.aclose()
    await asyncio.wait_for(task, WAIT)
    assert got == []
    with pytest.raises(StopAsyncIteration):
        await anext(events)


async def test_events_beside_listen(cdb: ConfigDBConnector, writer: ConfigDBConnector) -> None:
    rec = Recorder()
    cdb.subscribe("PORT", rec.handler)
    task = await start_listen(cdb, rec, init=False)
    async with cdb.events(["PORT"]) as events:
        await writer.set_entry("PORT", "Ethernet0", {"mtu": "9100"})
        assert await asyncio.wait_for(anext(events), WAIT) == ConfigEvent("PORT", "Ethernet0", {"mtu": "9100"})
    await until(lambda: rec.of("PORT") == [("Ethernet0", {"mtu": "9100"})])
    await stop_listen(cdb, task)


# -- no loss ----------------------------------------------------------------------------------


@pytest.mark.parametrize("form", ["listen", "events"])
async def test_pubsub_kill_under_load_converges(cdb: ConfigDBConnector, writer: ConfigDBConnector, form: str) -> None:
    """CLIENT KILL TYPE pubsub three times while a writer changes 10,000 keys (sets, merges,
    lists, field HDELs, deletes, tuple keys): what the handlers saw, folded, is the final table."""
    rng = random.Random(8)
    keys: list[Any] = [f"Ethernet{i}" for i in range(1500)] + [("Vlan1", f"Ethernet{i}") for i in range(300)]
    for key in keys[::3]:
        await writer.set_entry("PORT", key, {"speed": "100000"})
    view: dict[Any, Any] = {}

    def fold(table: str, key: Any, data: Any) -> None:
        key = cdb.deserialize_key(key) if isinstance(key, str) else key
        if data is None:
            view.pop(key, None)
        else:
            view[key] = data

    if form == "listen":
        ready = asyncio.Event()
        cdb.subscribe("PORT", fold, fire_init_data=True)
        task = asyncio.ensure_future(cdb.listen(lambda data: ready.set()))
        await asyncio.wait_for(ready.wait(), WAIT)
    else:
        events = await cdb.events(["PORT"]).start()

        async def consume() -> None:
            async for event in events:
                fold(*event)

        task = asyncio.ensure_future(consume())

    killed = []
    for n in range(10_000):
        key = rng.choice(keys)
        r = rng.random()
        if r < 0.4:
            await writer.mod_entry("PORT", key, {f"f{rng.randint(0, 3)}": str(n), "lanes": [str(n), "x"]})
        elif r < 0.6:
            await writer.set_entry("PORT", key, {"g": str(n)})
        elif r < 0.75:
            await writer.db.redis.hdel(f"PORT|{writer.serialize_key(key)}", "f0", "f1", "lanes@")
        else:
            await writer.set_entry("PORT", key, None)
        if n in (2500, 6000, 9000):
            killed.append(await writer.db.redis.execute_command("CLIENT", "KILL", "TYPE", "pubsub"))
    final = await writer.get_table("PORT")
    await until(lambda: view == final, timeout=30)
    assert all(k >= 1 for k in killed)  # our connection was up (again) at every kill
    if form == "listen":
        await stop_listen(cdb, task)
    else:
        await events.aclose()
        await asyncio.wait_for(task, WAIT)
