"""Select: start-up readiness, one pub/sub connection per server, draining, priority, wake-ups,
a promptly read subscription, reconnects and removal (issue 2, must-hold 4 and 5)."""

from __future__ import annotations

import asyncio
import itertools
import math
import socket
from collections.abc import AsyncIterator, Callable

import pytest

from swssd import (
    ConsumerStateTable,
    ConsumerTable,
    ConsumerTableBase,
    DBConnector,
    KeyOpFieldsValues,
    ProducerStateTable,
    ProducerTable,
    Select,
)
from swssd.redis.embedded_redis import EmbeddedRedis

WAIT = 10.0  # generous: the machine is shared


@pytest.fixture
async def sel() -> AsyncIterator[Select]:
    s = Select()
    yield s
    await s.close()


# -- helpers ---------------------------------------------------------------------------


async def subscribers(db: DBConnector) -> list[dict[str, str]]:
    """The server's clients that hold at least one channel subscription."""
    clients = await db.redis.client_list()
    return [c for c in clients if int(c.get("sub", 0)) + int(c.get("psub", 0)) > 0]


async def command_calls(db: DBConnector, command: str) -> int:
    """How often the server ran `command` (also from inside scripts), from INFO commandstats."""
    stats = await db.redis.info("commandstats")
    return int(stats.get(f"cmdstat_{command}", {}).get("calls", 0))


Rounds = list[tuple[ConsumerTableBase, list[KeyOpFieldsValues]]]


async def serve(sel: Select, rounds: int, timeout: float = WAIT) -> Rounds:
    """Run `rounds` select/pops rounds and return what each one served."""
    served = []
    for _ in range(rounds):
        table = await sel.select(timeout=timeout)
        assert table is not None, "a table that should be ready was not reported"
        served.append((table, await table.pops()))
    return served


async def drain(sel: Select, idle: float = 0.5) -> Rounds:
    """select/pops until nothing becomes ready for `idle` seconds; every round is returned."""
    rounds = []
    while (table := await sel.select(timeout=idle)) is not None:
        rounds.append((table, await table.pops()))
    return rounds


async def wait_until(predicate: Callable[[], object], timeout: float = WAIT) -> None:
    """Poll an async or sync predicate until it holds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        result = predicate()
        if asyncio.iscoroutine(result):
            result = await result
        if result:
            return
        assert loop.time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.02)


async def added(sel: Select, *tables: ConsumerTableBase) -> None:
    """add() and wait for the subscriptions, failing instead of hanging when they never come."""
    await asyncio.wait_for(asyncio.gather(*(sel.add(t) for t in tables)), WAIT)


def fill(n: int, prefix: str = "k") -> list[tuple[str, list[tuple[str, str]]]]:
    return [(f"{prefix}{i}", [("f", str(i))]) for i in range(n)]


# -- must-hold 4: nothing lost at start-up -----------------------------------------------


async def test_state_table_written_before_consumer_is_ready_at_once(db: DBConnector, sel: Select) -> None:
    await ProducerStateTable(db, "PORT_TABLE").set("Ethernet0", [("mtu", "9100")])
    cst = ConsumerStateTable(db, "PORT_TABLE")
    await added(sel, cst)
    # timeout=0: the PUBLISH went out before anyone listened, so only the start-up check can say so.
    assert await sel.select(timeout=0) is cst
    assert await cst.pops() == [KeyOpFieldsValues("Ethernet0", "SET", [("mtu", "9100")])]


async def test_op_queue_written_before_consumer_is_ready_at_once(db: DBConnector, sel: Select) -> None:
    pt = ProducerTable(db, "ASIC_STATE")
    await pt.set("k1", [("a", "1")])
    await pt.delete("k2")
    ct = ConsumerTable(db, "ASIC_STATE")
    await added(sel, ct)
    assert await sel.select(timeout=0) is ct
    assert await ct.pops() == [
        KeyOpFieldsValues("k1", "SET", [("a", "1")]),
        KeyOpFieldsValues("k2", "DEL", []),
    ]


async def test_buffered_then_flushed_before_consumer_is_ready_at_once(
    unix_db: DBConnector, sel: Select
) -> None:
    pst = ProducerStateTable(unix_db, "PORT_TABLE", buffered=True)
    await pst.set("Ethernet4", [("speed", "100000")])
    await pst.flush()
    cst = ConsumerStateTable(unix_db, "PORT_TABLE")
    await added(sel, cst)
    assert await sel.select(timeout=0) is cst


async def test_empty_tables_time_out(db: DBConnector, sel: Select) -> None:
    await added(sel, ConsumerStateTable(db, "PORT_TABLE"), ConsumerTable(db, "ASIC_STATE"))
    loop = asyncio.get_running_loop()
    start = loop.time()
    assert await sel.select(timeout=0.2) is None
    assert loop.time() - start >= 0.15  # it did wait, it did not give up at once
    assert await sel.select(timeout=0) is None


async def test_select_without_tables_times_out(sel: Select) -> None:
    assert await sel.select(timeout=0.05) is None


async def test_write_after_add_wakes_a_waiting_select(db: DBConnector, sel: Select) -> None:
    cst = ConsumerStateTable(db, "PORT_TABLE")
    await added(sel, cst)
    waiting = asyncio.ensure_future(sel.select(timeout=WAIT))
    await asyncio.sleep(0.05)
    assert not waiting.done()
    await ProducerStateTable(db, "PORT_TABLE").set("Ethernet0", [("mtu", "1500")])
    assert await waiting is cst
    assert await cst.pops() == [KeyOpFieldsValues("Ethernet0", "SET", [("mtu", "1500")])]
    assert await sel.select(timeout=0.1) is None


async def test_add_without_await_is_ready_by_first_select(db: DBConnector, sel: Select) -> None:
    await ProducerStateTable(db, "PORT_TABLE").set("Ethernet0", [("mtu", "1500")])
    cst = ConsumerStateTable(db, "PORT_TABLE")
    sel.add(cst)  # not awaited: select() waits for pending subscriptions itself
    assert await sel.select(timeout=0) is cst


# -- must-hold 5: one pub/sub connection per server ----------------------------------------


async def test_one_subscriber_connection_for_twenty_tables_on_two_databases(
    db: DBConnector, clean_redis: EmbeddedRedis, sel: Select
) -> None:
    other = await DBConnector.from_url(clean_redis.url, db_id=6, separator="|", name="STATE_DB")
    try:
        tables: list[ConsumerTableBase] = []
        for i in range(7):
            tables.append(ConsumerStateTable(db, f"T{i}"))
            tables.append(ConsumerStateTable(other, f"T{i}"))  # same name, other database: other channel
        tables += [ConsumerTable(db, f"Q{i}") for i in range(3)]
        tables += [ConsumerTable(other, f"Q{i}") for i in range(3)]
        assert len(tables) == 20
        await added(sel, *tables)

        subs = await subscribers(db)
        assert len(subs) == 1, subs
        assert int(subs[0]["sub"]) == 20
        assert sel.connected

        # Every one of the twenty is woken through that one connection.
        for t in tables:
            if isinstance(t, ConsumerStateTable):
                await ProducerStateTable(t.db, t.name).set("k", [("db", str(t.db.db_id))])
            else:
                await ProducerTable(t.db, t.name).set("k", [("db", str(t.db.db_id))])
        rounds = await drain(sel)
        got = {(t.db.db_id, t.name): items for t, items in rounds if items}
        assert got == {
            (t.db.db_id, t.name): [KeyOpFieldsValues("k", "SET", [("db", str(t.db.db_id))])] for t in tables
        }
    finally:
        await other.close()


async def test_one_subscriber_connection_when_tcp_and_unix_reach_one_server(
    db: DBConnector, unix_db: DBConnector, sel: Select
) -> None:
    """db (TCP) and unix_db (unix socket) are one redis-server: pub/sub is server-wide, one suffices."""
    tables = [ConsumerStateTable(db, f"T{i}") for i in range(10)]
    tables += [ConsumerStateTable(unix_db, f"T{i}") for i in range(10)]
    await added(sel, *tables)
    subs = await subscribers(db)
    assert len(subs) == 1, f"{len(subs)} pub/sub connections to one server: {subs}"


# -- must-hold 5: a table stays ready until drained ----------------------------------------


async def test_one_publish_of_1000_keys_is_drained_in_full(db: DBConnector, sel: Select) -> None:
    cst = ConsumerStateTable(db, "ROUTE_TABLE", pop_batch_size=128)
    await added(sel, cst)
    publishes = await command_calls(db, "publish")
    await ProducerStateTable(db, "ROUTE_TABLE").set_many(fill(1000))
    assert await command_calls(db, "publish") == publishes + 1  # (the stats call itself is no PUBLISH)

    rounds = await drain(sel)
    keys = [e.key for _, items in rounds for e in items]
    assert sorted(keys) == sorted(k for k, _ in fill(1000))
    assert len(keys) == len(set(keys))
    # ceil(1000/128) = 8 rounds; one more when the PUBLISH was read while the first pop ran.
    assert math.ceil(1000 / 128) <= len(rounds) <= math.ceil(1000 / 128) + 1
    assert await command_calls(db, "publish") == publishes + 1
    assert not cst.ready


async def test_pre_filled_key_set_larger_than_a_batch_is_drained(db: DBConnector, sel: Select) -> None:
    await ProducerStateTable(db, "ROUTE_TABLE").set_many(fill(300))
    cst = ConsumerStateTable(db, "ROUTE_TABLE", pop_batch_size=64)
    await added(sel, cst)
    rounds = await drain(sel)
    assert sorted(e.key for _, items in rounds for e in items) == sorted(k for k, _ in fill(300))


async def test_op_queue_larger_than_a_batch_is_drained_in_order(db: DBConnector, sel: Select) -> None:
    ct = ConsumerTable(db, "ASIC_STATE", pop_batch_size=16)
    await added(sel, ct)
    pt = ProducerTable(db, "ASIC_STATE", buffered=True)
    for i in range(100):
        await pt.set(f"k{i}", [("i", str(i))])
    await pt.flush()
    rounds = await drain(sel)
    assert [e.key for _, items in rounds for e in items] == [f"k{i}" for i in range(100)]


# -- must-hold 5: priority and fairness ----------------------------------------------------


async def test_higher_priority_first(db: DBConnector, sel: Select) -> None:
    pst_low, pst_high = ProducerStateTable(db, "LOW"), ProducerStateTable(db, "HIGH")
    await pst_low.set("k", [("f", "v")])
    await pst_high.set("k", [("f", "v")])
    low = ConsumerStateTable(db, "LOW", priority=0)
    high = ConsumerStateTable(db, "HIGH", priority=5)
    await added(sel, low)  # added first, so insertion order cannot explain the result
    await added(sel, high)
    assert await sel.select(timeout=WAIT) is high
    await high.pops()
    assert await sel.select(timeout=WAIT) is low


async def test_equal_priorities_alternate_while_both_stay_busy(db: DBConnector, sel: Select) -> None:
    a = ConsumerStateTable(db, "A", pop_batch_size=2)
    b = ConsumerStateTable(db, "B", pop_batch_size=2)
    await ProducerStateTable(db, "A").set_many(fill(40, "a"))
    await ProducerStateTable(db, "B").set_many(fill(10, "b"))
    await added(sel, a)
    await added(sel, b)

    async def refill_b() -> None:  # B is kept busy by a producer while A is merely large
        pst = ProducerStateTable(db, "B")
        for i in range(10, 400, 5):
            await pst.set_many([(f"b{j}", [("f", str(j))]) for j in range(i, i + 5)])
            await asyncio.sleep(0)

    refill = asyncio.ensure_future(refill_b())
    try:
        served = [t for t, _ in await serve(sel, 16)]
    finally:
        refill.cancel()
    assert set(served) == {a, b}
    assert all(x is not y for x, y in itertools.pairwise(served)), [t.name for t in served]


async def test_lower_priority_is_served_within_the_starvation_limit(db: DBConnector) -> None:
    async with Select(starvation_limit=3) as sel:
        high = ConsumerStateTable(db, "HIGH", pop_batch_size=1, priority=10)
        low = ConsumerStateTable(db, "LOW", pop_batch_size=1, priority=0)
        await ProducerStateTable(db, "HIGH").set_many(fill(200))
        await ProducerStateTable(db, "LOW").set_many(fill(200))
        await added(sel, high)
        await added(sel, low)
        served = [t for t, _ in await serve(sel, 40)]
        window = sel.starvation_limit + 1
        for i in range(len(served) - window + 1):
            assert low in served[i : i + window], f"LOW not served in rounds {i}..{i + window - 1}"
        # ...and otherwise the higher priority wins.
        assert served.count(high) >= len(served) * sel.starvation_limit // window - 1


# -- must-hold 5: notifications are only wake-ups ------------------------------------------


async def test_thousands_of_publishes_cost_few_pop_rounds(db: DBConnector, sel: Select) -> None:
    cst = ConsumerStateTable(db, "PORT_TABLE", pop_batch_size=128)
    await added(sel, cst)
    publishes = await command_calls(db, "publish")
    pst = ProducerStateTable(db, "PORT_TABLE", buffered=True)
    for i in range(5000):
        await pst.set(f"k{i}", [("f", str(i))])  # a new key each time: one PUBLISH each
    await pst.flush()
    assert await command_calls(db, "publish") - publishes == 5000

    rounds = await drain(sel)
    keys = [e.key for _, items in rounds for e in items]
    assert len(keys) == len(set(keys)) == 5000
    assert len(rounds) <= math.ceil(5000 / 128) + 5, f"{len(rounds)} pop rounds for 5000 keys"


class _LazySubscriber:
    """A raw unix-socket subscriber that never reads: the control that Redis does cut off."""

    def __init__(self, path: str, channel: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.sock.connect(path)
        self.sock.settimeout(WAIT)
        self.sock.sendall(b"CLIENT ID\r\n")
        self.id = int(self._read_line()[1:])
        self.sock.sendall(f"SUBSCRIBE {channel}\r\n".encode())
        reply = b""
        while reply.count(b"\r\n") < 6:  # *3 $9 subscribe $n channel :1
            reply += self.sock.recv(1)
        assert b"subscribe" in reply

    def _read_line(self) -> bytes:
        line = b""
        while not line.endswith(b"\r\n"):
            line += self.sock.recv(1)
        return line[:-2]

    def close(self) -> None:
        self.sock.close()


async def test_subscription_is_read_while_pops_are_slow(
    unix_db: DBConnector, clean_redis: EmbeddedRedis
) -> None:
    redis = unix_db.redis
    saved = (await redis.config_get("client-output-buffer-limit"))["client-output-buffer-limit"]
    await redis.config_set("client-output-buffer-limit", "pubsub 64kb 32kb 5")
    lazy = None
    try:
        async with Select() as sel:
            cst = ConsumerStateTable(unix_db, "PORT_TABLE", pop_batch_size=8)
            await ProducerStateTable(unix_db, "PORT_TABLE").set_many(fill(400))
            await added(sel, cst)
            (ours,) = await subscribers(unix_db)
            lazy = _LazySubscriber(clean_redis.unix_socket, cst.channel)

            popped: list[str] = []

            async def slow_consumer() -> None:
                while (table := await sel.select(timeout=1.0)) is not None:
                    popped.extend(e.key for e in await table.pops())
                    await asyncio.sleep(0.01)  # a consumer busy with its own work between pops

            async def publisher() -> None:
                payload = "x" * 8192
                for _ in range(1000):  # 8 MB, far past 64 kB plus what the sockets can hold
                    await redis.publish(cst.channel, payload)

            consumer = asyncio.ensure_future(slow_consumer())
            await publisher()
            await consumer

            ids = {int(c["id"]) for c in await redis.client_list()}
            assert lazy.id not in ids, "control: this limit and load must cut off a non-reading subscriber"
            assert int(ours["id"]) in ids, "Select's pub/sub connection was cut off"
            assert sel.reconnects == 0
            assert sel.connected
            assert sorted(popped) == sorted(k for k, _ in fill(400))
    finally:
        if lazy is not None:
            lazy.close()
        await redis.config_set("client-output-buffer-limit", saved)


# -- reconnect and removal -------------------------------------------------------------------


async def test_reconnects_after_the_subscription_is_killed(db: DBConnector) -> None:
    async with Select(reconnect_min=0.3) as sel:
        cst = ConsumerStateTable(db, "PORT_TABLE")
        ct = ConsumerTable(db, "ASIC_STATE")
        await added(sel, cst)
        await added(sel, ct)
        (before,) = await subscribers(db)
        assert sel.reconnects == 0

        assert await db.redis.execute_command("CLIENT", "KILL", "TYPE", "pubsub") == 1
        # Written while nobody is subscribed: the PUBLISH is lost, the data is not.
        await ProducerStateTable(db, "PORT_TABLE").set("Ethernet0", [("mtu", "9100")])
        await ProducerTable(db, "ASIC_STATE").set("oid:1", [("a", "b")])

        got: dict[ConsumerTableBase, list[KeyOpFieldsValues]] = {}
        while len(got) < 2:
            table = await sel.select(timeout=WAIT)
            assert table is not None, f"after the reconnect only {got} arrived"
            if items := await table.pops():
                got.setdefault(table, []).extend(items)
        assert got == {
            cst: [KeyOpFieldsValues("Ethernet0", "SET", [("mtu", "9100")])],
            ct: [KeyOpFieldsValues("oid:1", "SET", [("a", "b")])],
        }
        assert sel.reconnects == 1
        assert sel.connected
        (after,) = await subscribers(db)
        assert after["id"] != before["id"]
        assert int(after["sub"]) == 2

        # The new subscription carries later PUBLISHes too.
        await ProducerStateTable(db, "PORT_TABLE").set("Ethernet4", [("mtu", "1500")])
        assert await sel.select(timeout=WAIT) is cst
        assert await cst.pops() == [KeyOpFieldsValues("Ethernet4", "SET", [("mtu", "1500")])]


async def test_reconnect_is_logged_when_it_happens_with_how_long_it_was_down(db: DBConnector) -> None:
    """The reader says when it is back, with the time it was down (the daemon's health loop used to
    say it at its next tick, with a duration counted from when it noticed)."""
    from structlog.testing import capture_logs

    async with Select(reconnect_min=0.4, reconnect_max=0.4) as sel:
        await added(sel, ConsumerStateTable(db, "PORT_TABLE"))
        assert sel.down_since is None
        with capture_logs() as logs:
            await db.redis.execute_command("CLIENT", "KILL", "TYPE", "pubsub")
            for _ in range(100):
                if sel.down_since is not None:
                    break
                await asyncio.sleep(0.01)
            lost_at = sel.down_since
            assert lost_at is not None
            for _ in range(300):
                if sel.connected:
                    break
                await asyncio.sleep(0.01)
            assert sel.connected and sel.down_since is None
        (back,) = [e for e in logs if e["event"] == "pubsub reconnected"]
        assert 0.3 <= back["down_for"] < 2.0, back  # the reconnect delay, not a health interval


async def test_remove_unsubscribes_only_when_no_table_shares_the_channel(
    db: DBConnector, sel: Select
) -> None:
    first = ConsumerStateTable(db, "PORT_TABLE")
    second = ConsumerStateTable(db, "PORT_TABLE")  # same channel
    other = ConsumerStateTable(db, "ROUTE_TABLE")
    for t in (first, second, other):
        await added(sel, t)

    async def numsub(channel: str) -> int:
        return int(dict(await db.redis.pubsub_numsub(channel))[channel])

    assert await numsub(first.channel) == 1
    await sel.remove(first)
    await asyncio.sleep(0.1)
    assert await numsub(first.channel) == 1
    assert first not in sel.tables

    await sel.remove(second)

    async def unsubscribed() -> bool:
        return await numsub(first.channel) == 0

    await wait_until(unsubscribed)
    assert await numsub(other.channel) == 1
    assert sel.tables == [other]

    await ProducerStateTable(db, "PORT_TABLE").set("Ethernet0", [("mtu", "9100")])
    assert await sel.select(timeout=0.3) is None

    # Added again: subscribed again, and the entry written meanwhile is found at once.
    await added(sel, second)
    assert await numsub(first.channel) == 1
    assert await sel.select(timeout=0) is second
    assert await second.pops() == [KeyOpFieldsValues("Ethernet0", "SET", [("mtu", "9100")])]


async def test_consumer_table_and_state_table_in_one_select(
    db: DBConnector, unix_db: DBConnector, sel: Select
) -> None:
    cst = ConsumerStateTable(unix_db, "PORT_TABLE")
    ct = ConsumerTable(db, "ASIC_STATE", pop_batch_size=4)
    await added(sel, cst)
    await added(sel, ct)
    pt = ProducerTable(db, "ASIC_STATE")
    pst = ProducerStateTable(unix_db, "PORT_TABLE")
    for i in range(10):
        await pt.set(f"oid:{i}", [("i", str(i))])
        await pst.set(f"Ethernet{i}", [("i", str(i))])
    await pt.delete("oid:3")
    await pst.delete("Ethernet3")

    rounds = await drain(sel)
    queue = [e for t, items in rounds if t is ct for e in items]
    assert queue == [KeyOpFieldsValues(f"oid:{i}", "SET", [("i", str(i))]) for i in range(10)] + [
        KeyOpFieldsValues("oid:3", "DEL", [])
    ]
    state = {e.key: e for t, items in rounds if t is cst for e in items}
    assert state["Ethernet3"] == KeyOpFieldsValues("Ethernet3", "DEL", [])
    assert {k: e.fvs for k, e in state.items() if k != "Ethernet3"} == {
        f"Ethernet{i}": [("i", str(i))] for i in range(10) if i != 3
    }


async def test_a_paused_table_is_passed_over_until_resumed(db: DBConnector, sel: Select) -> None:
    """Pauses nest (backpressure and a refused pop may overlap); resume wakes a waiting select."""
    await ProducerStateTable(db, "PAUSE_A").set("k", [("f", "v")])
    await ProducerStateTable(db, "PAUSE_B").set("k", [("f", "v")])
    a, b = ConsumerStateTable(db, "PAUSE_A", priority=1), ConsumerStateTable(db, "PAUSE_B")
    await added(sel, a)
    await added(sel, b)
    sel.pause(a)
    sel.pause(a)
    assert sel.paused(a) and not sel.paused(b)
    assert await sel.select(timeout=0) is b
    await b.pops()
    assert await sel.select(timeout=0) is None, "only the paused table is ready"
    sel.resume(a)
    assert sel.paused(a) and await sel.select(timeout=0) is None, "one pause is still in place"
    waiting = asyncio.ensure_future(sel.select(timeout=WAIT))
    await asyncio.sleep(0.05)
    sel.resume(a)
    assert await asyncio.wait_for(waiting, WAIT) is a
    assert not sel.paused(a)


async def test_a_table_added_as_a_subscribe_is_refused_waits_for_the_retry(clean_redis: EmbeddedRedis) -> None:
    """A SUBSCRIBE refused by the ACL closes the pub/sub connection; a table added in the moment
    before the reader notices (the daemon adds its tables one by one, as each reconciles) must wait
    for the retry like the others, not raise the refusal into the daemon (a CI run's crash)."""
    admin = await DBConnector.from_url(clean_redis.url, db_id=0, separator=":", name="APPL_DB")
    await admin.redis.execute_command("ACL", "SETUSER", "nosub", "reset", "on", ">pw", "~*", "&*", "+@all",
                                      "-subscribe", "-psubscribe")
    db = await DBConnector.from_url(clean_redis.url, db_id=0, separator=":", name="APPL_DB",
                                    username="nosub", password="pw")
    try:
        async with Select(reconnect_min=0.05, reconnect_max=0.2) as sel:
            first = asyncio.ensure_future(sel.add(ConsumerStateTable(db, "PORT_TABLE")))
            await wait_until(lambda: sel._servers)
            (server,) = sel._servers.values()
            # Poll each loop turn for the closed connection, then add at once, before the reader's turn.
            while not (server._conn is not None and server._conn.is_closed):
                await asyncio.sleep(0)
            second = asyncio.ensure_future(server.add(ConsumerStateTable(db, "ROUTE_TABLE")))
            await asyncio.sleep(0.5)  # retries come and are refused again
            assert not second.done() or second.exception() is None
            assert not first.done()
            await admin.redis.execute_command("ACL", "SETUSER", "nosub", "+subscribe", "+psubscribe")
            await asyncio.wait_for(asyncio.gather(first, second), WAIT)
    finally:
        await db.close()
        await admin.redis.execute_command("ACL", "DELUSER", "nosub")
        await admin.close()
