"""NotificationProducer / NotificationConsumer against a real redis-server: the bytes PUBLISHed
(compared with hand-derived nlohmann::json dumps), the C++ unit tests' cases (tests/ntf_ut.cpp:
test, pops, peek, pipelineProducer, AllowListFilter; notification_queue_ut.cpp: PeekOp), and what
swssd adds: bounded batches, a bounded buffer, malformed messages counted and skipped."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import pytest
from structlog.testing import capture_logs

from swssd import ConsumerStateTable, DBConnector, KeyOpFieldsValues, ProducerStateTable, Select
from swssd.channels.notification_consumer import (
    DEFAULT_NC_POP_BATCH_SIZE,
    NotificationConsumer,
    parse_notification,
    peek_op,
)
from swssd.channels.notification_producer import NotificationProducer, encode_notification
from swssd.redis.embedded_redis import EmbeddedRedis

WAIT = 10.0


@pytest.fixture
async def sel() -> AsyncIterator[Select]:
    s = Select()
    yield s
    await s.close()


class RawSubscriber:
    """A bare socket SUBSCRIBEd to one channel: what Redis delivers, byte for byte."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, channel: bytes) -> None:
        self.reader, self.writer, self.channel = reader, writer, channel

    @classmethod
    async def open(cls, server: EmbeddedRedis, channel: bytes) -> RawSubscriber:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(b"*2\r\n$9\r\nSUBSCRIBE\r\n$%d\r\n%s\r\n" % (len(channel), channel))
        confirmation = b"*3\r\n$9\r\nsubscribe\r\n$%d\r\n%s\r\n:1\r\n" % (len(channel), channel)
        assert await asyncio.wait_for(reader.readexactly(len(confirmation)), WAIT) == confirmation
        return cls(reader, writer, channel)

    async def expect(self, payload: bytes) -> None:
        """The next frame is a message on the channel carrying exactly `payload`."""
        frame = b"*3\r\n$7\r\nmessage\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (
            len(self.channel), self.channel, len(payload), payload,
        )
        assert await asyncio.wait_for(self.reader.readexactly(len(frame)), WAIT) == frame

    async def expect_nothing(self, quiet: float = 0.2) -> None:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(self.reader.read(1), quiet)

    async def close(self) -> None:
        self.writer.close()
        await self.writer.wait_closed()


async def drain(sel: Select, quiet: float = 0.3) -> list[KeyOpFieldsValues]:
    out: list[KeyOpFieldsValues] = []
    while (table := await sel.select(timeout=quiet)) is not None:
        out.extend(await table.pops())
    return out


async def wait_for(predicate: Callable[[], bool], what: str) -> None:
    for _ in range(int(WAIT / 0.02)):
        if predicate():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


# -- the bytes on the wire ---------------------------------------------------------------

# (op, data, values) -> the message nlohmann::json's dump() makes of ["op","data","f1","v1",...]:
# no spaces; '"' and '\' escaped; \b \t \n \f \r short; other C0 controls as \u00XX in lowercase
# hex; DEL (0x7f), '/', U+2028 and everything non-ASCII as raw UTF-8.
WIRE_CASES = [
    (("ntf", "1", []), b'["ntf","1"]'),
    (("", "", []), b'["",""]'),
    (("op", "data", [("f1", "v1"), ("f2", "")]), b'["op","data","f1","v1","f2",""]'),
    (('a"b', "c\\d", [('"', "\\")]), b'["a\\"b","c\\\\d","\\"","\\\\"]'),
    (("c", "\x00\x01\x08\t\n\x0b\x0c\r\x1f\x7f", []), b'["c","\\u0000\\u0001\\b\\t\\n\\u000b\\f\\r\\u001f\x7f"]'),
    (
        ("\u00e9", "\u20ac\U0001f600", [("\u540d", "\u5024"), ("/", "\u2028")]),
        b'["\xc3\xa9","\xe2\x82\xac\xf0\x9f\x98\x80","\xe5\x90\x8d","\xe5\x80\xa4","/","\xe2\x80\xa8"]',
    ),
    (("x", "a b  c", [("sp ace", " ")]), b'["x","a b  c","sp ace"," "]'),
]


@pytest.mark.parametrize(("args", "payload"), WIRE_CASES)
async def test_published_bytes_are_nlohmann_dumps(
    db: DBConnector, clean_redis: EmbeddedRedis, args: tuple[str, str, list[tuple[str, str]]], payload: bytes
) -> None:
    raw = await RawSubscriber.open(clean_redis, b"NOTIFICATIONS")
    try:
        op, data, values = args
        assert encode_notification(op, data, values).encode() == payload
        assert await NotificationProducer(db, "NOTIFICATIONS").send(op, data, values) == 1
        await raw.expect(payload)
    finally:
        await raw.close()


async def test_send_returns_the_number_of_subscribers(db: DBConnector, clean_redis: EmbeddedRedis) -> None:
    producer = NotificationProducer(db, "ntf channel")  # a raw channel name, spaces and all
    assert await producer.send("op", "d", []) == 0
    subs = [await RawSubscriber.open(clean_redis, b"ntf channel") for _ in range(2)]
    try:
        assert await producer.send("op", "d", {"f": "v"}) == 2
        for sub in subs:
            await sub.expect(b'["op","d","f","v"]')
    finally:
        for sub in subs:
            await sub.close()


async def test_buffered_producer_sends_on_flush_in_order(db: DBConnector, clean_redis: EmbeddedRedis) -> None:
    raw = await RawSubscriber.open(clean_redis, b"NOTIFICATIONS")
    try:
        producer = NotificationProducer(db, "NOTIFICATIONS", buffered=True)
        assert [await producer.send("ntf", str(i), []) for i in range(3)] == [-1, -1, -1]
        await raw.expect_nothing()
        await producer.flush()
        for i in range(3):
            await raw.expect(b'["ntf","%d"]' % i)
    finally:
        await raw.close()


async def test_producer_refuses_what_cpp_cannot_send(db: DBConnector, clean_redis: EmbeddedRedis) -> None:
    raw = await RawSubscriber.open(clean_redis, b"NOTIFICATIONS")
    try:
        producer = NotificationProducer(db, "NOTIFICATIONS")
        with pytest.raises(TypeError):
            await producer.send("op", "d", [("f", 1)])  # type: ignore[list-item]
        with pytest.raises(ValueError, match="UTF-8"):
            await producer.send("op", "\udcff", [])  # the byte 0xff kept as a surrogate escape
        assert await producer.send("op", "ok", []) == 1
        await raw.expect(b'["op","ok"]')  # the refused ones never left
    finally:
        await raw.close()


# -- producer -> consumer ----------------------------------------------------------------


async def test_round_trip_through_select(db: DBConnector, sel: Select) -> None:
    """C++ test_redis_ut.py test_Notification, and every WIRE_CASES item back as sent."""
    nc = NotificationConsumer(db, "testntf")
    await sel.add(nc)
    producer = NotificationProducer(db, "testntf")
    assert await producer.send("aaa", "bbb", [("a", "b")]) == 1
    assert await sel.select(timeout=WAIT) is nc
    op, data, cfvs = await nc.pop()  # swsscommon: (op, data, cfvs) = ntfc.pop()
    assert (op, data, cfvs) == ("aaa", "bbb", [("a", "b")])
    assert await nc.pop() is None
    for (op, data, values), _ in WIRE_CASES:
        await producer.send(op, data, values)
    assert await drain(sel) == [KeyOpFieldsValues(data, op, values) for (op, data, values), _ in WIRE_CASES]
    assert nc.malformed == 0


async def test_pops_unpack_as_cpp_pops_and_pop_as_cpp_pop(db: DBConnector, sel: Select) -> None:
    nc = NotificationConsumer(db, "NOTIFICATIONS")
    await sel.add(nc)
    producer = NotificationProducer(db, "NOTIFICATIONS")
    await producer.send("port_state_change", "[]", [("k", "v")])
    await producer.send("second", "d2", [])
    await wait_for(lambda: len(nc._buffer) == 2, "the notifications")
    first, second = await nc.pops()
    data, op, values = first  # C++ pops: KeyOpFieldsValuesTuple(data, op, values)
    assert (op, data, values) == ("port_state_change", "[]", [("k", "v")])
    assert (second.key, second.op, second.fvs) == ("d2", "second", [])
    await producer.send("third", "d3", [("a", "b")])
    await wait_for(lambda: nc.ready, "the third notification")
    item = await nc.pop()
    assert item is not None
    op, data, values = item  # C++ pop(op, data, values); swsscommon's (op, data, fvs) = pop()
    assert (op, data, values) == ("third", "d3", [("a", "b")])
    assert (item.op, item.data, item.fvs) == ("third", "d3", [("a", "b")])


async def test_alongside_a_table_on_one_pubsub_connection(db: DBConnector, sel: Select) -> None:
    """C++ defaults: priority 100 (ahead of tables at 0), batches of 2048."""
    nc = NotificationConsumer(db, "NOTIFICATIONS")
    assert (nc.priority, nc.pop_batch_size) == (100, DEFAULT_NC_POP_BATCH_SIZE) == (100, 2048)
    cst = ConsumerStateTable(db, "PORT_TABLE")
    await sel.add(cst)
    await sel.add(nc)
    await ProducerStateTable(db, "PORT_TABLE").set("Ethernet0", [("mtu", "9100")])
    await NotificationProducer(db, "NOTIFICATIONS").send("ntf", "1", [])
    await wait_for(lambda: nc.ready and cst.ready, "both")
    assert await sel.select(timeout=WAIT) is nc
    assert await nc.pops() == [KeyOpFieldsValues("1", "ntf", [])]
    assert await sel.select(timeout=WAIT) is cst
    assert await cst.pops() == [KeyOpFieldsValues("Ethernet0", "SET", [("mtu", "9100")])]
    clients = await db.redis.client_list()
    assert sum(1 for c in clients if int(c.get("sub", 0)) > 0) == 1


async def test_many_in_order_in_bounded_batches(db: DBConnector, sel: Select) -> None:
    """C++ Notifications.pops / peek: 5000 notifications, all, in order; swssd's pops() returns
    at most pop_batch_size of them."""
    nc = NotificationConsumer(db, "NOTIFICATIONS", pop_batch_size=1000)
    await sel.add(nc)
    producer = NotificationProducer(db, "NOTIFICATIONS", buffered=True)
    for i in range(5000):
        await producer.send("ntf", str(i + 1), [])
    await producer.flush()
    await wait_for(lambda: nc.received == 5000, "5000 notifications")
    batches = []
    while (table := await sel.select(timeout=0.3)) is not None:
        batches.append(await table.pops())
    assert [len(b) for b in batches] == [1000] * 5
    assert [kco for b in batches for kco in b] == [KeyOpFieldsValues(str(i + 1), "ntf", []) for i in range(5000)]
    assert await nc.pops() == []


async def test_notifications_before_the_subscription_are_lost(db: DBConnector, sel: Select) -> None:
    producer = NotificationProducer(db, "NOTIFICATIONS")
    nc = NotificationConsumer(db, "NOTIFICATIONS")
    assert await producer.send("early", "", []) == 0
    await sel.add(nc)
    assert not nc.ready
    assert await producer.send("late", "", []) == 1
    assert await drain(sel) == [KeyOpFieldsValues("", "late", [])]


async def test_different_databases_meet_on_the_server(db: DBConnector, unix_db: DBConnector, sel: Select) -> None:
    """Pub/sub ignores SELECT: a producer on db 0 over TCP reaches a consumer on db 6 over the
    unix socket, on the channel named as given (no `@<db id>` suffix)."""
    nc = NotificationConsumer(unix_db, "NOTIFICATIONS")
    await sel.add(nc)
    assert await NotificationProducer(db, "NOTIFICATIONS").send("op", "d", [("f", "v")]) == 1
    assert await drain(sel) == [KeyOpFieldsValues("d", "op", [("f", "v")])]
    channels = await db.redis.pubsub_channels()
    assert channels == ["NOTIFICATIONS"]


async def test_two_consumers_each_get_everything(db: DBConnector, sel: Select) -> None:
    a = NotificationConsumer(db, "NOTIFICATIONS")
    b = NotificationConsumer(db, "NOTIFICATIONS", pop_batch_size=1)
    await sel.add(a)
    await sel.add(b)
    producer = NotificationProducer(db, "NOTIFICATIONS")
    assert await producer.send("x", "1", []) == 1  # one connection subscribed, for both
    await producer.send("x", "2", [])
    await wait_for(lambda: a.received == b.received == 2, "both copies")
    assert await a.pops() == [KeyOpFieldsValues("1", "x", []), KeyOpFieldsValues("2", "x", [])]
    assert await b.pops() == [KeyOpFieldsValues("1", "x", [])]
    assert await b.pops() == [KeyOpFieldsValues("2", "x", [])]
    await sel.remove(a)
    await producer.send("x", "3", [])
    assert await drain(sel) == [KeyOpFieldsValues("3", "x", [])]
    assert a.received == 2


# -- messages from elsewhere -------------------------------------------------------------


async def test_raw_publish_in_the_cpp_format_is_parsed(db: DBConnector, sel: Select) -> None:
    """As orchagent's syncd sends a port state change: the data is itself escaped JSON."""
    nc = NotificationConsumer(db, "NOTIFICATIONS")
    await sel.add(nc)
    raw = (
        b'["port_state_change","[{\\"port_id\\":\\"oid:0x1000000000002\\",'
        b'\\"port_state\\":\\"SAI_PORT_OPER_STATUS_UP\\"}]","f\\u0001","\xc3\xa9\\n"]'
    )
    assert await db.redis.execute_command("PUBLISH", "NOTIFICATIONS", raw) == 1
    assert await drain(sel) == [
        KeyOpFieldsValues(
            '[{"port_id":"oid:0x1000000000002","port_state":"SAI_PORT_OPER_STATUS_UP"}]',
            "port_state_change",
            [("f\x01", "\u00e9\n")],
        )
    ]


# Each is what C++ JSon::readJson / NotificationConsumer::pop throws on.
MALFORMED = [
    b"not json",
    b"",
    b"null",
    b'"op"',
    b'{"op":"d"}',
    b"[]",
    b'["op"]',
    b'["op","d","f"]',
    b'["op",1]',
    b'["op","d","f",null]',
    b'[["op"],"d"]',
    b'["op","d"] trailing',
    b'["op","d",]',
    b'["op","\xff"]',  # not UTF-8
    b'["op","\\ud800"]',  # a lone surrogate
    b'["op","a\tb"]',  # a raw control character in a string
    b"[" * 5000,  # deeper than Python's recursion limit
    b'["' + b"x" * 1000,
]
# ... and what C++ reads as valid, though Python's json alone would not.
TOLERATED = [
    (b'\xef\xbb\xbf["bom","d"]', KeyOpFieldsValues("d", "bom", [])),
    (b'["nul","d"]\x00garbage', KeyOpFieldsValues("d", "nul", [])),
    (b' \t\r\n[ "ws" , "d" ]\n', KeyOpFieldsValues("d", "ws", [])),
    (b'["\\u00e9\\/","\\ud83d\\ude00"]', KeyOpFieldsValues("\U0001f600", "\u00e9/", [])),
]


async def test_malformed_messages_are_counted_and_skipped(db: DBConnector, sel: Select) -> None:
    nc = NotificationConsumer(db, "NOTIFICATIONS")
    await sel.add(nc)
    with capture_logs() as logs:
        for i, bad in enumerate(MALFORMED):
            await db.redis.execute_command("PUBLISH", "NOTIFICATIONS", bad)
            await db.redis.execute_command("PUBLISH", "NOTIFICATIONS", b'["ok","%d"]' % i)
        for raw, _ in TOLERATED:
            await db.redis.execute_command("PUBLISH", "NOTIFICATIONS", raw)
        got = await drain(sel)
    assert got == [KeyOpFieldsValues(str(i), "ok", []) for i in range(len(MALFORMED))] + [
        want for _, want in TOLERATED
    ]
    assert nc.malformed == len(MALFORMED)
    assert nc.received == 2 * len(MALFORMED) + len(TOLERATED)
    errors = [e for e in logs if e["event"] == "malformed notification dropped"]
    assert len(errors) == len(MALFORMED)
    assert all(len(e["message"]) <= 200 and e["channel"] == "NOTIFICATIONS" and e["reason"] for e in errors)
    assert errors[0]["message"] == "not json"


def test_parse_notification_reasons() -> None:
    assert parse_notification('["op","d","f","v"]') == KeyOpFieldsValues("d", "op", [("f", "v")])
    for text, reason in [
        ("nope", "not JSON"),
        ('{"a":"b"}', "not a JSON array"),
        ('["op"]', "1 items"),
        ('["op","d","f"]', "3 items"),
        ('["op",true]', "bool"),
        ('["op","\\udc00"]', "UTF-8"),
    ]:
        with pytest.raises(ValueError, match=reason):
            parse_notification(text)


# -- swssd's bounds ----------------------------------------------------------------------


async def test_buffer_limit_drops_new_notifications_and_says_so(db: DBConnector, sel: Select) -> None:
    nc = NotificationConsumer(db, "NOTIFICATIONS", queue_limit=10)
    await sel.add(nc)
    producer = NotificationProducer(db, "NOTIFICATIONS")
    with capture_logs() as logs:
        for i in range(25):
            await producer.send("ntf", str(i), [])
        await wait_for(lambda: nc.received == 25, "25 messages")
        assert nc.dropped == 15
        assert await nc.pops() == [KeyOpFieldsValues(str(i), "ntf", []) for i in range(10)]
        await producer.send("ntf", "after", [])
        assert await drain(sel) == [KeyOpFieldsValues("after", "ntf", [])]
    events = [(e["event"], e.get("dropped")) for e in logs]
    assert events == [
        ("notification buffer full: dropping new notifications until it drains", None),
        ("notification buffer has room again", 15),
    ]
    with pytest.raises(ValueError):
        NotificationConsumer(db, "x", queue_limit=0)


async def test_resubscription_is_counted_and_later_notifications_arrive(db: DBConnector) -> None:
    async with Select(reconnect_min=0.2) as sel:
        nc = NotificationConsumer(db, "NOTIFICATIONS")
        await sel.add(nc)
        producer = NotificationProducer(db, "NOTIFICATIONS")
        with capture_logs() as logs:
            assert await db.redis.execute_command("CLIENT", "KILL", "TYPE", "pubsub") == 1
            assert await producer.send("lost", "", []) == 0  # nobody listening: gone for good
            await wait_for(lambda: nc.resubscriptions == 1, "the resubscription")
        assert any(e["event"].startswith("notifications sent while") for e in logs)
        assert await producer.send("kept", "", []) == 1
        assert await drain(sel) == [KeyOpFieldsValues("", "kept", [])]


# -- op allowlist (C++ setOpAllowList) ---------------------------------------------------


async def test_op_allowlist_as_cpp(db: DBConnector, sel: Select) -> None:
    """C++ Notifications.AllowListFilter."""
    nc = NotificationConsumer(db, "ALLOWLIST_TEST_NOTIFICATIONS", 64, op_allowlist={"fdb_event", "flush"})
    await sel.add(nc)
    producer = NotificationProducer(db, "ALLOWLIST_TEST_NOTIFICATIONS")
    for op in ("fdb_event", "bgp_event", "flush", "port_state_change", "fdb_event", "ignored"):
        assert await producer.send(op, op + "_data", []) == 1
    await db.redis.execute_command("PUBLISH", "ALLOWLIST_TEST_NOTIFICATIONS", b'["fdb_event",1]')
    assert [kco.op for kco in await drain(sel)] == ["fdb_event", "flush", "fdb_event"]
    assert (nc.received, nc.dropped_allowlist, nc.malformed) == (7, 3, 1)


def test_peek_op_as_cpp() -> None:
    """C++ PeekOp tests (notification_queue_ut.cpp)."""
    assert peek_op('["SET","key","f","v"]') == "SET"
    assert peek_op('["fdb_event",""]') == "fdb_event"
    for text in ("", "[", '["', '""', '["unterminated', '[""]', '["","data"]', "not_json", "[]", "[1,2]",
                 '{"op":"SET"}', ' ["SET","x"]'):
        assert peek_op(text) == "", text
    assert peek_op('["\\"OP","x"]') == "\\"  # escapes are not undone
