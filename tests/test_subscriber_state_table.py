"""SubscriberStateTable against a real redis-server: the C++ unit tests' cases
(tests/redis_subscriber_state_ut.cpp: set, set2_pop1_set1_pop1, pops_intial, del, table_state,
cachedData), the '@' cut of Table::get, and what swssd adds: one read per key per pop, pipelined
reads, batches, bad entries, keyspace-event checks and no loss across a pub/sub kill."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator

import pytest
from structlog.testing import capture_logs

from swssd import (
    ConsumerStateTable,
    DBConnector,
    KeyOpFieldsValues,
    ProducerStateTable,
    Select,
    SubscriberStateTable,
    Table,
)
from swssd.channels.subscriber_state_table import keyspace_events_sufficient
from swssd.redis.scan import glob_escape

WAIT = 10.0


@pytest.fixture
async def cfg(unix_db: DBConnector) -> AsyncIterator[DBConnector]:
    """A CONFIG_DB-like connector ('|') with keyspace events on, as SONiC's redis.conf has them."""
    await unix_db.redis.config_set("notify-keyspace-events", "AKE")
    yield unix_db
    await unix_db.redis.config_set("notify-keyspace-events", "AKE")


@pytest.fixture
async def sel() -> AsyncIterator[Select]:
    s = Select()
    yield s
    await s.close()


def fold(state: dict[str, dict[str, str]], tasks: list[KeyOpFieldsValues]) -> None:
    """What a subscriber's consumer holds: SET replaces the entry, DEL removes it."""
    for key, op, fvs in tasks:
        if op == "SET":
            state[key] = dict(fvs)
        else:
            assert op == "DEL"
            state.pop(key, None)


async def drain(sel: Select, quiet: float = 0.3) -> list[KeyOpFieldsValues]:
    """Everything served until nothing is ready for `quiet` seconds."""
    out: list[KeyOpFieldsValues] = []
    while (table := await sel.select(timeout=quiet)) is not None:
        out.extend(await table.pops())
    return out


async def command_calls(db: DBConnector, command: str) -> int:
    stats = await db.redis.info("commandstats")
    return int(stats.get(f"cmdstat_{command}", {}).get("calls", 0))


async def table_contents(db: DBConnector, name: str) -> dict[str, dict[str, str]]:
    t = Table(db, name)
    return {k: dict(v) for k in await t.keys() if (v := await t.get(k))}


# -- the C++ unit tests' cases -----------------------------------------------------------


async def test_set_delivers_all_fields(cfg: DBConnector, sel: Select) -> None:
    sst = SubscriberStateTable(cfg, "PORT")
    await sel.add(sst)
    assert await drain(sel) == []
    await Table(cfg, "PORT").set("Ethernet0", [(f"f{j}", f"v{j}") for j in range(10)])
    table = await sel.select(timeout=WAIT)
    assert table is sst
    (task,) = await sst.pops()
    assert task == KeyOpFieldsValues("Ethernet0", "SET", [(f"f{j}", f"v{j}") for j in range(10)])


async def test_hset_then_pop_then_hset_gives_full_entry_each_time(cfg: DBConnector, sel: Select) -> None:
    sst = SubscriberStateTable(cfg, "PORT")
    await sel.add(sst)
    t = Table(cfg, "PORT")
    await t.hset("k", "a", "1")
    await t.hset("k", "b", "2")
    assert await drain(sel) == [KeyOpFieldsValues("k", "SET", [("a", "1"), ("b", "2")])]
    await t.hset("k", "c", "3")
    assert await drain(sel) == [KeyOpFieldsValues("k", "SET", [("a", "1"), ("b", "2"), ("c", "3")])]


async def test_existing_entries_come_first_as_sets(cfg: DBConnector, sel: Select) -> None:
    t = Table(cfg, "PORT")
    for i in range(300):
        await t.set(f"Ethernet{i}", [("speed", "100000"), ("ports@", "a,b")])
    await Table(cfg, "VLAN").set("Vlan1", [("x", "y")])
    sst = SubscriberStateTable(cfg, "PORT", pop_batch_size=128)
    await sel.add(sst)
    batches = []
    while (table := await sel.select(timeout=0.3)) is not None:
        batches.append(await table.pops())
    assert [len(b) for b in batches] == [128, 128, 44]
    got = [task for b in batches for task in b]
    assert {task.key for task in got} == {f"Ethernet{i}" for i in range(300)}
    assert all(task.op == "SET" and task.fvs == [("speed", "100000"), ("ports", "a,b")] for task in got)


async def test_pops_without_select_reads_existing_entries(cfg: DBConnector) -> None:
    await Table(cfg, "PORT").set("Ethernet0", [("a", "1")])
    sst = SubscriberStateTable(cfg, "PORT")
    assert await sst.pops() == [KeyOpFieldsValues("Ethernet0", "SET", [("a", "1")])]
    assert await sst.pops() == []


async def test_del_and_hdel_of_last_field_give_del(cfg: DBConnector, sel: Select) -> None:
    sst = SubscriberStateTable(cfg, "PORT")
    await sel.add(sst)
    t = Table(cfg, "PORT")
    await t.set("a", [("f", "v")])
    await t.set("b", [("f", "v")])
    assert len(await drain(sel)) == 2
    await t.delete("a")
    await t.hdel("b", "f")  # the hash is empty: Redis deletes it and says so
    assert await drain(sel) == [KeyOpFieldsValues("a", "DEL", []), KeyOpFieldsValues("b", "DEL", [])]


async def test_other_tables_and_databases_are_not_seen(cfg: DBConnector, sel: Select, db: DBConnector) -> None:
    await db.redis.config_set("notify-keyspace-events", "AKE")
    sst = SubscriberStateTable(cfg, "PORT")
    await sel.add(sst)
    await Table(cfg, "PORTCHANNEL").set("x", [("a", "1")])
    await Table(cfg, "VLAN").set("x", [("a", "1")])
    await db.redis.hset("PORT|x", "a", "1")  # same name in another database
    await cfg.redis.hset("PORT", "a", "1")  # the bare table name is not an entry
    assert await drain(sel) == []


async def test_cached_events_are_all_delivered(cfg: DBConnector, sel: Select) -> None:
    """C++ cachedData: many events read in one go are all handed over."""
    sst = SubscriberStateTable(cfg, "PORT", pop_batch_size=1000)
    await sel.add(sst)
    pipe = cfg.redis.pipeline(transaction=False)
    for i in range(500):
        pipe.hset(f"PORT|k{i}", "f", str(i))
    await pipe.execute()
    state: dict[str, dict[str, str]] = {}
    fold(state, await drain(sel))
    assert state == {f"k{i}": {"f": str(i)} for i in range(500)}


# -- beyond C++ --------------------------------------------------------------------------


async def test_several_events_for_a_key_cost_one_read(cfg: DBConnector, sel: Select) -> None:
    sst = SubscriberStateTable(cfg, "PORT")
    await sel.add(sst)
    assert await drain(sel) == []
    for j in range(20):
        await cfg.redis.hset("PORT|k", f"f{j}", str(j))
    await asyncio.sleep(0.2)  # every event read by Select before the pop
    before = await command_calls(cfg, "hgetall")
    tasks = await sst.pops()
    assert await command_calls(cfg, "hgetall") - before == 1
    assert tasks == [KeyOpFieldsValues("k", "SET", [(f"f{j}", str(j)) for j in range(20)])]


async def test_a_batch_is_read_in_one_pipeline(cfg: DBConnector, sel: Select) -> None:
    sst = SubscriberStateTable(cfg, "PORT", pop_batch_size=100)
    await sel.add(sst)
    assert await drain(sel) == []
    for i in range(100):
        await cfg.redis.hset(f"PORT|k{i}", "f", "v")
    await asyncio.sleep(0.2)
    await sst.pops()  # the connector's own connection is made (HELLO/SELECT/CLIENT SETINFO)
    for i in range(100):
        await cfg.redis.hset(f"PORT|k{i}", "f", "w")
    await asyncio.sleep(0.2)
    commands_before = (await cfg.redis.info("stats"))["total_commands_processed"]
    hgetall_before = await command_calls(cfg, "hgetall")
    assert len(await sst.pops()) == 100
    assert await command_calls(cfg, "hgetall") - hgetall_before == 100
    # besides the 100 HGETALLs, only this test's INFOs (the first one counts itself, the last
    # one does not): no other command per key
    assert (await cfg.redis.info("stats"))["total_commands_processed"] - commands_before == 103


async def test_deleted_and_set_again_between_pops_is_del_then_set(cfg: DBConnector, sel: Select) -> None:
    sst = SubscriberStateTable(cfg, "PORT")
    await sel.add(sst)
    t = Table(cfg, "PORT")
    await t.set("k", [("old", "1")])
    assert len(await drain(sel)) == 1
    await t.delete("k")
    await t.set("k", [("new", "2")])
    await asyncio.sleep(0.2)
    assert await sst.pops() == [KeyOpFieldsValues("k", "DEL", []), KeyOpFieldsValues("k", "SET", [("new", "2")])]


async def test_non_hash_key_is_skipped_and_counted(cfg: DBConnector, sel: Select) -> None:
    await cfg.redis.set("PORT|bad", "a string")
    await Table(cfg, "PORT").set("good1", [("a", "1")])
    sst = SubscriberStateTable(cfg, "PORT")
    with capture_logs() as logs:
        await sel.add(sst)
        got = await drain(sel)
        await cfg.redis.set("PORT|bad2", "another")
        await Table(cfg, "PORT").set("good2", [("a", "2")])
        got += await drain(sel)
    assert got == [KeyOpFieldsValues("good1", "SET", [("a", "1")]), KeyOpFieldsValues("good2", "SET", [("a", "2")])]
    assert sst.bad_entries == 2
    assert sum(1 for e in logs if "not readable as a hash" in e["event"]) == 2


async def test_field_names_are_cut_at_at_sign_unless_raw(cfg: DBConnector, sel: Select) -> None:
    await cfg.redis.hset("PORT|k", mapping={"ports@": "a,b", "x@y": "v@w"})
    cut = SubscriberStateTable(cfg, "PORT")
    raw = SubscriberStateTable(cfg, "PORT", raw_fields=True)
    assert await cut.pops() == [KeyOpFieldsValues("k", "SET", [("ports", "a,b"), ("x", "v@w")])]
    assert await raw.pops() == [KeyOpFieldsValues("k", "SET", [("ports@", "a,b"), ("x@y", "v@w")])]


async def test_table_get_and_hget_cut_at_at_sign_as_cpp(cfg: DBConnector) -> None:
    await cfg.redis.hset("PORT|k", mapping={"ports@": "a,b", "v": "x@y"})
    t = Table(cfg, "PORT")
    assert await t.get("k") == [("ports", "a,b"), ("v", "x@y")]
    assert await t.hget("k", "v") == "x"  # Table::hget cuts the value
    assert await t.hget("k", "ports@") == "a,b"


async def test_glob_characters_in_the_table_name_are_literal(cfg: DBConnector, sel: Select) -> None:
    assert glob_escape("P*R?[x]\\") == "P\\*R\\?\\[x\\]\\\\"
    await Table(cfg, "PORTX").set("a", [("f", "v")])
    sst = SubscriberStateTable(cfg, "PORT*")
    await sel.add(sst)
    await Table(cfg, "PORTY").set("b", [("f", "v")])
    await Table(cfg, "PORT*").set("c", [("f", "v")])
    assert await drain(sel) == [KeyOpFieldsValues("c", "SET", [("f", "v")])]


async def test_subscriber_shares_the_pubsub_connection_and_priority(
    cfg: DBConnector, sel: Select
) -> None:
    low = SubscriberStateTable(cfg, "LOW", priority=0)
    high = SubscriberStateTable(cfg, "HIGH", priority=5)
    cst = ConsumerStateTable(cfg, "APP", priority=1)
    for c in (low, high, cst):
        await sel.add(c)
    await Table(cfg, "LOW").set("a", [("f", "v")])
    await Table(cfg, "HIGH").set("a", [("f", "v")])
    await ProducerStateTable(cfg, "APP").set("a", [("f", "v")])
    await asyncio.sleep(0.2)
    order = []
    while (table := await sel.select(timeout=0.3)) is not None:
        if await table.pops():
            order.append(table)
    assert order == [high, cst, low]
    clients = await cfg.redis.client_list()
    assert sum(1 for c in clients if int(c.get("sub", 0)) + int(c.get("psub", 0)) > 0) == 1


async def test_keyspace_events_off_is_said_in_one_line(cfg: DBConnector, sel: Select) -> None:
    await cfg.redis.config_set("notify-keyspace-events", "")
    sst = SubscriberStateTable(cfg, "PORT")
    with capture_logs() as logs:
        await sel.add(sst)
    assert sst.keyspace_events is False
    (line,) = [e["event"] for e in logs if "notify-keyspace-events" in e["event"]]
    assert "AKE" in line and "PORT" in line


async def test_keyspace_events_can_be_enabled(cfg: DBConnector, sel: Select) -> None:
    await cfg.redis.config_set("notify-keyspace-events", "E$")
    sst = SubscriberStateTable(cfg, "PORT", enable_keyspace_events=True)
    await sel.add(sst)
    assert sst.keyspace_events is True
    flags = (await cfg.redis.config_get("notify-keyspace-events"))["notify-keyspace-events"]
    assert keyspace_events_sufficient(flags) and "$" in flags
    await Table(cfg, "PORT").set("a", [("f", "v")])
    assert await drain(sel) == [KeyOpFieldsValues("a", "SET", [("f", "v")])]


def test_keyspace_flags() -> None:
    assert keyspace_events_sufficient("AKE")
    assert keyspace_events_sufficient("Kgh")
    assert not keyspace_events_sufficient("AE")
    assert not keyspace_events_sufficient("Kh")
    assert not keyspace_events_sufficient("")


async def test_expired_key_is_a_delete(cfg: DBConnector, sel: Select) -> None:
    sst = SubscriberStateTable(cfg, "PORT")
    await sel.add(sst)
    await Table(cfg, "PORT").set("k", [("f", "v")])
    assert len(await drain(sel)) == 1
    await cfg.redis.pexpire("PORT|k", 50)
    await asyncio.sleep(0.3)
    assert await drain(sel) == [KeyOpFieldsValues("k", "DEL", [])]


async def test_pubsub_kill_under_load_loses_nothing(cfg: DBConnector, sel: Select) -> None:
    """CLIENT KILL TYPE pubsub while a writer changes 10,000 keys (sets, field changes, hdels,
    deletes): the consumer's fold equals the final table."""
    sst = SubscriberStateTable(cfg, "PORT", pop_batch_size=128)
    await sel.add(sst)
    rng = random.Random(8)
    keys = [f"Ethernet{i}" for i in range(2000)]

    async def writer() -> None:
        for n in range(10_000):
            key = "PORT|" + rng.choice(keys)
            r = rng.random()
            if r < 0.6:
                await cfg.redis.hset(key, mapping={f"f{j}": f"{n}" for j in range(rng.randint(1, 4))})
            elif r < 0.75:
                await cfg.redis.hdel(key, "f0", "f1")
            else:
                await cfg.redis.delete(key)
            if n in (2500, 6000, 9000):
                await cfg.redis.execute_command("CLIENT", "KILL", "TYPE", "pubsub")

    state: dict[str, dict[str, str]] = {}
    task = asyncio.ensure_future(writer())
    while not task.done():
        table = await sel.select(timeout=0.05)
        if table is not None:
            fold(state, await table.pops())
    await task
    fold(state, await drain(sel, quiet=1.0))
    assert sel.reconnects >= 3
    assert sst.resyncs >= 1
    assert state == await table_contents(cfg, "PORT")


async def test_keys_deleted_while_the_pubsub_connection_was_down_come_as_del(cfg: DBConnector, sel: Select) -> None:
    """Keys delivered, some with an event not popped yet, then the pub/sub connection killed and
    the keys deleted in the same round trip (their `del` events go nowhere): the re-read after the
    reconnect delivers a DEL for each, whether or not an event of it was waiting."""
    sst = SubscriberStateTable(cfg, "PORT")
    await sel.add(sst)
    table = Table(cfg, "PORT")
    for key in ("quiet", "busy", "kept"):
        await table.set(key, [("f", "v1")])
    state: dict[str, dict[str, str]] = {}
    fold(state, await drain(sel))
    assert set(state) == {"quiet", "busy", "kept"}
    await table.set("busy", [("f", "v2")])  # an event for "busy" arrives and waits, not popped
    assert await sel.select(timeout=WAIT) is sst
    async with cfg.redis.pipeline(transaction=False) as pipe:
        pipe.execute_command("CLIENT", "KILL", "TYPE", "pubsub")
        pipe.delete("PORT|quiet", "PORT|busy")
        await pipe.execute()
    for _ in range(int(WAIT / 0.01)):  # back and subscribed before anything was popped: the event still waits
        if sst._resync_needed:
            break
        await asyncio.sleep(0.01)
    assert sst._resync_needed and "busy" in sst._pending, "the table is to read itself again, busy's event waiting"
    tasks = await drain(sel, quiet=1.0)
    fold(state, tasks)
    assert sel.reconnects >= 1 and sst.resyncs >= 1
    assert state == {"kept": {"f": "v1"}}
    assert sorted(t.key for t in tasks if t.op == "DEL") == ["busy", "quiet"]


async def test_a_read_that_fails_midway_loses_no_entry(cfg: DBConnector, monkeypatch: pytest.MonkeyPatch) -> None:
    """The table's first read spans SCAN pages and one pops() takes them all; the connection drops
    at the second page: pops() raises, and the next pops() delivers every entry, the first page's
    too (they had been taken from the buffer and were dropped with the error: the campaign's seed
    179, a subscriber table 12 keys short after its connections were cut at start)."""
    from redis.exceptions import ConnectionError as RedisConnectionError

    table = Table(cfg, "PORT")
    for i in range(600):
        await table.set(f"Ethernet{i}", [("mtu", str(i))])
    sst = SubscriberStateTable(cfg, "PORT", pop_batch_size=10_000)
    original = cfg.redis.execute_command
    scans: list[object] = []

    async def second_scan_fails(*args: object, **kwargs: object) -> object:
        if args[0] == "SCAN":
            scans.append(args)
            if len(scans) == 2:
                raise RedisConnectionError("Connection closed by server.")
        return await original(*args, **kwargs)

    monkeypatch.setattr(cfg.redis, "execute_command", second_scan_fails)
    with pytest.raises(RedisConnectionError):
        await sst.pops()
    state: dict[str, dict[str, str]] = {}
    while tasks := await sst.pops():
        fold(state, tasks)
    assert state == await table_contents(cfg, "PORT")
    assert len(state) == 600 and len(scans) > 2
