"""The ZMQ state-table channel end to end: real ZMQ sockets (tcp:// and ipc://), a real
redis-server for persistence, swssd's Select. The C++ side is in tests/test_zmq_interop.py."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import zmq
from zmq.utils.monitor import recv_monitor_message

from swssd import ConsumerStateTable, DBConnector, KeyOpFieldsValues, ProducerStateTable, Select, Table
from swssd.channels.zmq import (
    MessageTooLargeError,
    ZmqClient,
    ZmqConsumerStateTable,
    ZmqProducerStateTable,
    ZmqServer,
    one_change,
    sockets,
)
from swssd.channels.zmq.one_change import read_one
from swssd.channels.zmq.serializer import MAX_MESSAGE_SIZE, header, serialize
from swssd.redis.embedded_redis import EmbeddedRedis

KFV = KeyOpFieldsValues
TABLE = "ZMQ_ROUTE"
WAIT = 10.0


@pytest.fixture(params=["tcp", "ipc"])
def endpoint(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A free endpoint: tcp on a port ZMQ picks (see bound()), or an ipc path."""
    return "tcp://127.0.0.1:*" if request.param == "tcp" else f"ipc://{tmp_path}/zmq.sock"


def bound(server: ZmqServer) -> str:
    """What a client connects to."""
    ep = server.last_endpoint
    assert ep is not None
    return ep


async def receive(
    sel: Select, consumer: ZmqConsumerStateTable, count: int, timeout: float = WAIT
) -> list[KeyOpFieldsValues]:
    got: list[KeyOpFieldsValues] = []
    deadline = time.monotonic() + timeout
    while len(got) < count:
        left = deadline - time.monotonic()
        if left <= 0 or await sel.select(timeout=left) is not consumer:
            break
        got += await consumer.pops()
    return got


def random_changes(seed: int, count: int) -> list[KeyOpFieldsValues]:
    rng = random.Random(seed)
    texts = ["plain", "co:lon", "pi|pe", "nul\x00byte", "Ünïcødé ✓", "中文", ""]
    keys = [f"10.{i}.0.0/16{rng.choice(texts)}" for i in range(60)]
    out = []
    for n in range(count):
        key = rng.choice(keys)
        if rng.random() < 0.2:
            out.append(KFV(key, "DEL", []))
        else:
            fvs = [("seq", str(n))] + [(f"f{j}", f"{rng.choice(texts)}{n}") for j in range(rng.randint(0, 7))]
            out.append(KFV(key, "SET", fvs))
    return out


@pytest.fixture
async def server(endpoint: str) -> AsyncIterator[ZmqServer]:
    srv = ZmqServer(endpoint)
    yield srv
    await srv.close()


async def test_producer_to_consumer_in_order(db: DBConnector, server: ZmqServer) -> None:
    client = ZmqClient(bound(server))
    consumer = ZmqConsumerStateTable(db, TABLE, server, pop_batch_size=50)
    producer = ZmqProducerStateTable(db, TABLE, client, db_persistence=False)
    sel = Select()
    await sel.add(consumer)
    changes = random_changes(1, 3000)
    for i in range(0, 1000):  # one change a message
        key, op, fvs = changes[i]
        if op == "SET":
            await producer.set(key, fvs)
        else:
            await producer.delete(key)
    for i in range(1000, 3000, 100):  # many a message, sets and deletes mixed
        await producer.send(changes[i:i + 100])
    got = await receive(sel, consumer, len(changes))
    assert got == changes
    assert consumer.received == len(changes) and server.changes == len(changes)
    assert server.malformed == 0 and server.dropped == 0
    assert await db.redis.dbsize() == 0  # no persistence: Redis untouched
    await sel.close()
    await consumer.close()
    client.close()


async def test_set_many_and_delete_many(db: DBConnector, server: ZmqServer) -> None:
    client = ZmqClient(bound(server))
    consumer = ZmqConsumerStateTable(db, TABLE, server)
    producer = ZmqProducerStateTable(db, TABLE, client, db_persistence=False)
    sel = Select()
    await sel.add(consumer)
    await producer.set_many([("a", {"x": "1"}), ("b", [("y", "2")]), KFV("c", "HSET", [("z", "3")])])
    await producer.delete_many(["a", "b"])
    got = await receive(sel, consumer, 5)
    assert got == [
        KFV("a", "SET", [("x", "1")]), KFV("b", "SET", [("y", "2")]), KFV("c", "SET", [("z", "3")]),
        KFV("a", "DEL", []), KFV("b", "DEL", []),
    ]
    await sel.close()
    await consumer.close()
    client.close()


@pytest.mark.parametrize(("batch", "sizes"), [(40, [40, 40, 40, 30]), (-1, [128, 128, 128])])
async def test_pop_batch_size_as_cpp(db: DBConnector, server: ZmqServer, batch: int, sizes: list[int]) -> None:
    """zmq_state_ut.cpp's ZmqConsumerStateTablePopSize: 150 with batch 40, 384 with an invalid one."""
    client = ZmqClient(bound(server))
    consumer = ZmqConsumerStateTable(db, TABLE, server, pop_batch_size=batch)
    producer = ZmqProducerStateTable(db, TABLE, client, db_persistence=False)
    await producer.send([KFV(f"key_{i}", "SET", [("field", "value")]) for i in range(sum(sizes))])
    sel = Select()
    await sel.add(consumer)
    got = []
    while len(got) < len(sizes):
        assert await sel.select(timeout=WAIT) is consumer
        got.append(len(await consumer.pops()))
    assert got == sizes
    assert await sel.select(timeout=0.05) is None
    await sel.close()
    await consumer.close()
    client.close()


async def test_tables_share_a_server(db: DBConnector, unix_db: DBConnector, server: ZmqServer) -> None:
    """One server, several (db, table): each message reaches its own consumer only."""
    client = ZmqClient(bound(server))
    routes = ZmqConsumerStateTable(db, "ROUTE_TABLE", server)
    ports = ZmqConsumerStateTable(db, "PORT_TABLE", server)
    state = ZmqConsumerStateTable(unix_db, "ROUTE_TABLE", server)  # same table name, STATE_DB
    sel = Select()
    for c in (routes, ports, state):
        await sel.add(c)
    await ZmqProducerStateTable(db, "ROUTE_TABLE", client, db_persistence=False).set("r", [("a", "1")])
    await ZmqProducerStateTable(db, "PORT_TABLE", client, db_persistence=False).set("p", [("b", "2")])
    await ZmqProducerStateTable(unix_db, "ROUTE_TABLE", client, db_persistence=False).set("s", [("c", "3")])
    got: dict[str, list[str]] = {}
    deadline = time.monotonic() + WAIT
    while sum(map(len, got.values())) < 3 and time.monotonic() < deadline:
        table = await sel.select(timeout=1)
        if table is not None:
            got.setdefault(repr(table), []).extend(c.key for c in await table.pops())
    assert got == {repr(routes): ["r"], repr(ports): ["p"], repr(state): ["s"]}
    with pytest.raises(ValueError, match="already registered"):
        ZmqConsumerStateTable(db, "ROUTE_TABLE", server)
    await sel.close()
    for c in (routes, ports, state):
        await c.close()
    client.close()


async def test_malformed_and_unrouted_messages_are_counted_never_fatal(
    db: DBConnector, server: ZmqServer, caplog: pytest.LogCaptureFixture
) -> None:
    client = ZmqClient(bound(server))
    consumer = ZmqConsumerStateTable(db, TABLE, server)
    sel = Select()
    await sel.add(consumer)
    good = serialize("APPL_DB", TABLE, [KFV("k", "SET", [("f", "v")])])
    bad = [
        b"",                                   # nothing at all
        good[:-3],                             # truncated
        good[:8] + b"\xff" * 8 + good[16:],    # the db name's length far past the end
        (1).to_bytes(8, "little"),             # a count and nothing else
        good + b"junk",                        # bytes after the last pair
        (2).to_bytes(8, "little") + good[8:],  # a pair count below the pairs sent
    ]
    unrouted = [
        serialize("STATE_DB", TABLE, [KFV("k", "SET", [("f", "v")])]),   # wrong db
        serialize("APPL_DB", "OTHER", [KFV("k", "SET", [("f", "v")])]),  # wrong table
    ]
    for data in [*bad, good, *unrouted, good]:
        await client.send_bytes(data)
    got = await receive(sel, consumer, 2)
    assert got == [KFV("k", "SET", [("f", "v")])] * 2
    for _ in range(100):
        if server.received == len(bad) + len(unrouted) + 2:
            break
        await asyncio.sleep(0.01)
    assert server.malformed == len(bad)
    assert server.dropped == len(unrouted)
    assert server.received == len(bad) + len(unrouted) + 2
    await sel.close()
    await consumer.close()
    client.close()


async def test_repeated_fields_read_fast_and_routed_as_any_message(
    db: DBConnector, server: ZmqServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One-change messages whose fields were seen before take read_one() (counted here), and
    still go to their own table, in order; malformed ones with those fields are counted, and a
    table whose consumer left gets nothing more."""
    fast: list[KeyOpFieldsValues] = []

    def counting(data: bytes, head: bytes) -> KeyOpFieldsValues | None:
        got = read_one(data, head)
        if got is not None:
            fast.append(got)
        return got

    monkeypatch.setattr(sockets, "read_one", counting)
    client = ZmqClient(bound(server))
    routes = ZmqConsumerStateTable(db, TABLE, server)
    other = ZmqConsumerStateTable(db, "OTHER", server)
    sel = Select()
    try:
        await sel.add(routes)
        await sel.add(other)
        fvs = [("nexthop", "10.0.0.1"), ("ifname", "Ethernet0")]
        one = serialize("APPL_DB", TABLE, [KFV("k0", "SET", fvs)])
        key_at = 8 + len(header("APPL_DB", TABLE))
        tail = one[key_at + 8 + 2:]
        want_routes: list[KeyOpFieldsValues] = []
        want_other: list[KeyOpFieldsValues] = []
        malformed = [
            (5).to_bytes(8, "little") + one[8:],                                  # a pair count not the tail's
            one[:key_at] + (100).to_bytes(8, "little") + b"k0" + tail,             # the key's length past the end
            one[:-1],                                                             # truncated
        ]
        for i in range(300):
            key = f"10.{i}.0.0/16" if i % 7 else f"Ü{i}:|\x00"
            if i % 11 == 3:
                await client.send_bytes(serialize("APPL_DB", "OTHER", [KFV(key, "SET", fvs)]))
                want_other.append(KFV(key, "SET", fvs))
            elif i % 13 == 5:
                await client.send_bytes(serialize("APPL_DB", TABLE, [KFV(key, "DEL", [])]))
                want_routes.append(KFV(key, "DEL", []))
            elif i % 17 == 8:
                await client.send_bytes(malformed[i % len(malformed)])
                await client.send_bytes(serialize("STATE_DB", TABLE, [KFV(key, "SET", fvs)]))  # no consumer
            else:
                await client.send_bytes(serialize("APPL_DB", TABLE, [KFV(key, "SET", fvs)]))
                want_routes.append(KFV(key, "SET", fvs))
        got: dict[str, list[KeyOpFieldsValues]] = {TABLE: [], "OTHER": []}
        deadline = time.monotonic() + WAIT
        while len(got[TABLE]) + len(got["OTHER"]) < len(want_routes) + len(want_other) and time.monotonic() < deadline:
            table = await sel.select(timeout=max(0.0, deadline - time.monotonic()))
            if isinstance(table, ZmqConsumerStateTable):
                got[table.name] += await table.pops()
        assert got[TABLE] == want_routes
        assert got["OTHER"] == want_other
        assert len(fast) > len(want_routes) // 2  # most took the fast path
        bad = sum(1 for i in range(300) if i % 11 != 3 and i % 13 != 5 and i % 17 == 8)
        assert server.malformed == bad
        assert server.dropped == bad
        # the consumer of TABLE leaves: the next message of TABLE with known fields is dropped
        await sel.remove(routes)
        await routes.close()
        fast.clear()
        await client.send_bytes(serialize("APPL_DB", TABLE, [KFV("late", "SET", fvs)]))
        await client.send_bytes(serialize("APPL_DB", "OTHER", [KFV("last", "SET", fvs)]))
        assert await receive(sel, other, 1) == [KFV("last", "SET", fvs)]
        assert server.dropped == bad + 1
        assert routes.waiting == 0
    finally:  # a failed check must not leave a ZMQ context to hang the interpreter's exit
        await sel.close()
        await other.close()
        await routes.close()
        client.close()


async def test_read_one_rests_while_every_message_has_its_own_fields(
    db: DBConnector, server: ZmqServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Messages whose fields never repeat: read_one() is tried on a few, then left alone for
    _FAST_PAUSE messages; once fields repeat it reads them again. Every change arrives in order."""
    monkeypatch.setattr(sockets, "_BURST", 10)
    monkeypatch.setattr(sockets, "_FAST_JUDGE", 50)
    monkeypatch.setattr(sockets, "_FAST_PAUSE", 200)
    monkeypatch.setattr(one_change, "_tails", {})  # nothing kept from earlier tests
    calls = [0, 0]  # tried, read

    def counting(data: bytes, head: bytes) -> KeyOpFieldsValues | None:
        got = read_one(data, head)
        calls[0] += 1
        calls[1] += got is not None
        return got

    monkeypatch.setattr(sockets, "read_one", counting)
    client = ZmqClient(bound(server))
    consumer = ZmqConsumerStateTable(db, TABLE, server)
    sel = Select()
    try:
        await sel.add(consumer)
        unique = [KFV(f"k{i}", "SET", [("seq", str(i))]) for i in range(300)]
        for change in unique:
            await client.send_bytes(serialize("APPL_DB", TABLE, [change]))
        assert await receive(sel, consumer, len(unique)) == unique
        assert calls[1] == 0
        assert calls[0] < 150  # 300 without the pause
        repeated = [KFV(f"r{i}", "SET", [("nexthop", "10.0.0.1")]) for i in range(600)]
        for change in repeated:
            await client.send_bytes(serialize("APPL_DB", TABLE, [change]))
        assert await receive(sel, consumer, len(repeated)) == repeated
        assert calls[1] >= 300
    finally:  # a failed check must not leave a ZMQ context to hang the interpreter's exit
        await sel.close()
        await consumer.close()
        client.close()


async def test_oversize_is_refused_before_sending(db: DBConnector, server: ZmqServer) -> None:
    client = ZmqClient(bound(server))
    producer = ZmqProducerStateTable(db, TABLE, client, db_persistence=True)
    with pytest.raises(MessageTooLargeError):
        await producer.set("k", [("f", "x" * MAX_MESSAGE_SIZE)])
    assert client.sent == 0
    assert producer.db_updater_queue_size() == 0  # nothing persisted either (C++ throws before)
    await producer.close()
    client.close()


# -- persistence ----------------------------------------------------------------------------------


async def dump(db: DBConnector, table: str = TABLE) -> dict[str, dict[str, str]]:
    t = Table(db, table)
    return {k: dict(await t.get(k) or []) for k in await t.keys()}


def persisted(table: dict[str, dict[str, str]], changes: list[KeyOpFieldsValues]) -> dict[str, dict[str, str]]:
    """What the C++ AsyncDBUpdater leaves: SET is DEL then HSET, HSET is HSET, DEL is DEL, each
    with the key name as a C string (cut at a NUL)."""
    state = {k: dict(v) for k, v in table.items()}
    for key, op, fvs in changes:
        key = key.split("\x00")[0]
        if op in ("SET", "DEL"):
            state.pop(key, None)
        if op in ("SET", "HSET") and fvs:
            state.setdefault(key, {}).update(fvs)
    return state


async def test_producer_persistence_as_async_db_updater(db: DBConnector, server: ZmqServer) -> None:
    """SET replaces the entry (DEL then HSET), HSET merges, DEL removes; a plain table: no key
    set, no state hash, no PUBLISH (zmq_state_ut.cpp's AsyncDBUpdater tests)."""
    await Table(db, TABLE).set("old", [("a", "1"), ("b", "2")])
    await Table(db, TABLE).set("merged", [("a", "1"), ("b", "2")])
    await Table(db, TABLE).set("gone", [("a", "1")])
    client = ZmqClient(bound(server))
    producer = ZmqProducerStateTable(db, TABLE, client)  # persistence is the default, as in C++
    assert producer.db_persistence
    await producer.set("old", [("a", "9")])
    await producer.set("merged", [("a", "9")], op="HSET")
    await producer.delete("gone")
    await producer.set("empty", [])  # a SET without fields: DEL, and no HSET
    await producer.set_many([("n1", [("x", "1")]), ("n2", [("x", "2")])])
    await producer.delete_many(["n1"])
    await producer.flush()
    assert producer.db_updater_queue_size() == 0
    assert await dump(db) == {"old": {"a": "9"}, "merged": {"a": "9", "b": "2"}, "n2": {"x": "2"}}
    assert sorted(await db.redis.keys("*")) == sorted(f"{TABLE}:{k}" for k in ("old", "merged", "n2"))
    await producer.close()
    client.close()


async def test_consumer_persistence(db: DBConnector, server: ZmqServer) -> None:
    await Table(db, TABLE).set("k", [("stale", "1")])
    client = ZmqClient(bound(server))
    consumer = ZmqConsumerStateTable(db, TABLE, server, db_persistence=True)
    producer = ZmqProducerStateTable(db, TABLE, client, db_persistence=False)
    sel = Select()
    await sel.add(consumer)
    changes = random_changes(2, 2000)
    for i in range(0, len(changes), 37):
        await producer.send(changes[i:i + 37])
    assert await receive(sel, consumer, len(changes)) == changes
    await consumer.flush()
    assert consumer.db_updater_queue_size() == 0
    assert await dump(db) == persisted({"k": {"stale": "1"}}, changes)
    await sel.close()
    await consumer.close()
    client.close()


async def test_persistence_cuts_the_key_at_nul_as_cpp(db: DBConnector, server: ZmqServer) -> None:
    """C++ passes the key name as a C string ("DEL %s", formatHSET's key.c_str()): it ends at
    a NUL byte. Fields and values keep theirs."""
    await Table(db, TABLE).set("a", [("x", "1")])
    client = ZmqClient(bound(server))
    producer = ZmqProducerStateTable(db, TABLE, client)
    await producer.set("a\x00b", [("new\x00f", "v\x00")])
    await producer.flush()
    assert await db.redis.keys("*") == [f"{TABLE}:a"]
    assert await db.redis.hgetall(f"{TABLE}:a") == {"new\x00f": "v\x00"}  # replaced
    await producer.close()
    client.close()


async def test_persistence_survives_a_redis_write_error(db: DBConnector, server: ZmqServer) -> None:
    await db.redis.set(f"{TABLE}:str", "not a hash")
    client = ZmqClient(bound(server))
    producer = ZmqProducerStateTable(db, TABLE, client)
    await producer.set("str", [("f", "v")], op="HSET")  # WRONGTYPE
    await producer.set("ok", [("f", "v")])
    await producer.flush()
    assert producer._updater is not None and producer._updater.errors == 1
    assert await db.redis.hgetall(f"{TABLE}:ok") == {"f": "v"}
    await producer.close()
    client.close()


# -- the consumer goes away and comes back --------------------------------------------------------


async def disconnected(monitor: zmq.Socket, timeout: float = 10.0) -> None:
    """Wait until libzmq reports the client's connection gone (what was handed to the dead
    connection before that is lost, for the C++ client as for this one; what is sent after it
    waits in the queue)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if monitor.poll(50):
            if recv_monitor_message(monitor)["event"] == zmq.EVENT_DISCONNECTED:
                return
        else:
            await asyncio.sleep(0)
    raise AssertionError("the client never noticed the server went away")


class LoopLag:
    """How late a 1 ms sleep wakes up: the longest the event loop was blocked."""

    def __init__(self) -> None:
        self.worst = 0.0
        self._task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            t = loop.time()
            await asyncio.sleep(0.001)
            self.worst = max(self.worst, loop.time() - t - 0.001)

    async def stop(self) -> float:
        self._task.cancel()
        await asyncio.wait((self._task,))
        return self.worst


async def test_consumer_restart_while_the_producer_sends(db: DBConnector, endpoint: str) -> None:
    """The server goes away while the producer keeps sending: sends never block the loop nor
    fail; what was queued while it was away (the client's queue, as libzmq keeps it for C++
    too) and everything sent after it is back arrives, in order."""
    first = ZmqServer(endpoint)
    address = bound(first)
    client = ZmqClient(address)
    monitor = client._socket.get_monitor_socket(zmq.EVENT_DISCONNECTED)  # type: ignore[union-attr]
    producer = ZmqProducerStateTable(db, TABLE, client, db_persistence=False)
    consumer = ZmqConsumerStateTable(db, TABLE, first)
    sel = Select()
    await sel.add(consumer)
    lag = LoopLag()
    seq = 0

    async def send(count: int) -> None:
        nonlocal seq
        for _ in range(count):
            await producer.set("k", [("seq", str(seq))])
            seq += 1

    await send(100)
    before = await receive(sel, consumer, 100)
    assert [int(c.fvs[0][1]) for c in before] == list(range(100))
    await sel.close()
    await consumer.close()
    await first.close()
    await disconnected(monitor)
    await send(500)  # queued in the client
    second = ZmqServer(address)
    consumer = ZmqConsumerStateTable(db, TABLE, second)
    sel = Select()
    await sel.add(consumer)
    await send(500)
    after = await receive(sel, consumer, 1000)
    assert [int(c.fvs[0][1]) for c in after] == list(range(100, 1100))
    assert await lag.stop() < 0.25
    await sel.close()
    await consumer.close()
    await second.close()
    monitor.close(0)
    client.close()


async def test_full_queue_backs_off_without_blocking_and_keeps_order(
    db: DBConnector, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No server: past the high-water mark sends are retried with C++'s doubling back-off on the
    event loop (other tasks run), later sends wait behind them, and all arrive, in order, once a
    server binds."""
    monkeypatch.setattr(sockets, "HIGH_WATER_MARK", 50)
    address = f"ipc://{tmp_path}/late.sock"
    client = ZmqClient(address)
    producer = ZmqProducerStateTable(db, TABLE, client, db_persistence=False)
    lag = LoopLag()
    sends = [asyncio.ensure_future(producer.set("k", [("seq", str(i))])) for i in range(200)]
    await asyncio.sleep(0.5)
    assert client.retries > 0
    assert not all(s.done() for s in sends)
    server = ZmqServer(address)
    consumer = ZmqConsumerStateTable(db, TABLE, server)
    sel = Select()
    await sel.add(consumer)
    got = await receive(sel, consumer, 200)
    await asyncio.gather(*sends)
    assert [int(c.fvs[0][1]) for c in got] == list(range(200))
    assert await lag.stop() < 0.25
    await sel.close()
    await consumer.close()
    await server.close()
    client.close()


async def test_send_gives_up_after_the_cpp_retries(
    db: DBConnector, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sockets, "HIGH_WATER_MARK", 1)
    monkeypatch.setattr(sockets, "RETRY_DELAY", 0.0001)
    client = ZmqClient(f"ipc://{tmp_path}/nobody.sock")
    for _ in range(10):  # fill the queue
        try:
            await client.send_bytes(b"x")
        except sockets.ZmqSendError:
            break
    with pytest.raises(sockets.ZmqSendError, match="11 attempts"):
        await client.send_bytes(b"y")
    client.close()


async def test_zmq_and_redis_consumers_in_one_select(db: DBConnector, server: ZmqServer) -> None:
    client = ZmqClient(bound(server))
    zc = ZmqConsumerStateTable(db, "Z", server)
    rc = ConsumerStateTable(db, "R")
    sel = Select()
    await sel.add(zc)
    await sel.add(rc)
    await ProducerStateTable(db, "R").set("r", [("a", "1")])
    await ZmqProducerStateTable(db, "Z", client, db_persistence=False).set("z", [("b", "2")])
    seen = {}
    while len(seen) < 2:
        table = await sel.select(timeout=WAIT)
        assert table is not None
        seen[table] = await table.pops()
    assert seen == {zc: [KFV("z", "SET", [("b", "2")])], rc: [KFV("r", "SET", [("a", "1")])]}
    await sel.close()
    await zc.close()
    client.close()


async def test_lazy_bind_gets_what_was_sent_before(db: DBConnector, tmp_path: Path) -> None:
    """zmq_state_ut.cpp's ZmqServerLazzyBind: a change sent before the server binds is delivered
    once it does (it waited in the client's queue)."""
    address = f"ipc://{tmp_path}/lazy.sock"
    client = ZmqClient(address)
    await ZmqProducerStateTable(db, TABLE, client, db_persistence=False).set("testkey", [])
    server = ZmqServer(address, lazy_bind=True)
    consumer = ZmqConsumerStateTable(db, TABLE, server)
    assert not server.bound
    server.bind()
    with pytest.raises(RuntimeError, match="already been bound"):
        server.bind()
    sel = Select()
    await sel.add(consumer)
    assert await receive(sel, consumer, 1) == [KFV("testkey", "DEL", [])]
    await sel.close()
    await consumer.close()
    await server.close()
    client.close()


async def test_bad_endpoints_and_nameless_connectors_fail_clearly(clean_redis: EmbeddedRedis, tmp_path: Path) -> None:
    with pytest.raises(sockets.ZmqSendError, match="cannot connect to zmq endpoint nowhere"):
        ZmqClient("nowhere")
    with pytest.raises(OSError, match=r"zmq bind failed on endpoint tcp://256\.0\.0\.1:1"):
        ZmqServer("tcp://256.0.0.1:1")
    nameless = await DBConnector.from_url(clean_redis.url, db_id=0)  # messages carry the db name
    client = ZmqClient(f"ipc://{tmp_path}/n.sock")
    server = ZmqServer(f"ipc://{tmp_path}/m.sock")
    with pytest.raises(ValueError, match="database name"):
        ZmqProducerStateTable(nameless, TABLE, client)
    with pytest.raises(ValueError, match="database name"):
        ZmqConsumerStateTable(nameless, TABLE, server)
    await server.close()
    client.close()
    await nameless.close()


async def test_closed_client_refuses_to_send(tmp_path: Path) -> None:
    client = ZmqClient(f"ipc://{tmp_path}/c.sock")
    client.close()
    assert not client.is_connected()
    with pytest.raises(sockets.ZmqSendError, match="closed"):
        await client.send_bytes(b"x")
    client.connect()  # as C++ connect(): a new socket
    await client.send_bytes(serialize("APPL_DB", TABLE, []))
    client.close()
