"""swssd's NotificationProducer/NotificationConsumer and libswsscommon's on one redis-server: C++
sends and swssd receives (and the bytes C++ publishes are the bytes swssd would), swssd sends and
C++ receives; op, data and field/values carried exactly, in order. And the messages swssd counts
as malformed are exactly those C++ NotificationConsumer::pop throws on.

The C++ side is tests/cpp/notification_driver.cpp, built by tests/cpp_build.py against a built
sonic-swss-common tree ($SWSS_COMMON_DIR, else ../cpp/env.sh); skipped when there is none.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis

from cpp_build import build_driver
from swssd import DBConnector, KeyOpFieldsValues, Select
from swssd.channels.notification_consumer import NotificationConsumer
from swssd.channels.notification_producer import NotificationProducer, encode_notification
from swssd.redis.embedded_redis import EmbeddedRedis
from test_notification import MALFORMED, TOLERATED

#: a channel of this file's own: PUBLISH counts subscribers across the server, and other tests of the
#: same worker's redis-server listen on the usual names
CHANNEL = "SWSSD_NOTIFICATION_INTEROP"
CPP_DB_ID = 1  # the C++ side talks to another database than swssd's: pub/sub ignores it
WAIT = 20.0

Notification = tuple[str, str, list[tuple[str, str]]]

NOTIFICATIONS: list[Notification] = [
    ("port_state_change", '[{"port_id":"oid:0x1000000000002","port_state":"SAI_PORT_OPER_STATUS_UP"}]', []),
    ("", "", []),
    ("op", "data", [("f1", "v1"), ("f2", ""), ("", "v3")]),
    ('q"uote', "back\\slash", [('"', "\\"), ("/", "\\/")]),
    ("ctl", "\x01\x08\t\n\x0b\x0c\r\x1f\x7f", [("nul", "a\x00b")]),
    ("\u00e9", "\u20ac\U0001f600", [("\u540d", "\u5024"), ("sep", "\u2028")]),
    ("spaces", " a  b ", [("f f", " ")]),
] + [("ntf", str(i), [("i", str(i))]) for i in range(1, 301)]


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The driver, compiled against the sonic-swss-common tree (skip when there is none)."""
    return build_driver("notification_driver.cpp", tmp_path_factory.mktemp("cpp"), "notificationconsumer.h")


@pytest.fixture
async def sel() -> AsyncIterator[Select]:
    s = Select()
    yield s
    await s.close()


def as_lines(items: list[Notification]) -> bytes:
    return "".join(json.dumps([op, data, values], ensure_ascii=False) + "\n" for op, data, values in items).encode()


async def test_cpp_producer_to_swssd_consumer(
    driver: Path, clean_redis: EmbeddedRedis, db: DBConnector, sel: Select
) -> None:
    nc = NotificationConsumer(db, CHANNEL, pop_batch_size=64)
    await sel.add(nc)
    raw = aioredis.Redis.from_url(clean_redis.url)  # bytes as Redis delivers them
    pubsub = raw.pubsub()
    await pubsub.subscribe(CHANNEL)
    try:
        assert (await pubsub.get_message(timeout=WAIT))["type"] == "subscribe"  # type: ignore[index]
        done = await asyncio.to_thread(
            subprocess.run,
            [str(driver), "send", clean_redis.unix_socket, str(CPP_DB_ID), CHANNEL],
            input=as_lines(NOTIFICATIONS), capture_output=True, timeout=WAIT,
        )
        assert done.returncode == 0, done.stderr.decode()
        assert done.stdout.decode().split() == ["2"] * len(NOTIFICATIONS)  # C++ send: subscribers

        for op, data, values in NOTIFICATIONS:
            message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=WAIT)
            assert message is not None
            assert message["data"] == encode_notification(op, data, values).encode()

        got: list[KeyOpFieldsValues] = []
        while len(got) < len(NOTIFICATIONS):
            table = await sel.select(timeout=WAIT)
            assert table is nc, f"only {len(got)} notifications arrived"
            batch = await nc.pops()
            assert len(batch) <= 64
            got += batch
        assert got == [KeyOpFieldsValues(data, op, values) for op, data, values in NOTIFICATIONS]
        assert nc.malformed == 0
    finally:
        await pubsub.aclose()
        await raw.aclose()


async def start_receiver(driver: Path, server: EmbeddedRedis, *args: str) -> asyncio.subprocess.Process:
    """The driver receiving (`receive ...` or `receive-each ...`), once it is subscribed."""
    proc = await asyncio.create_subprocess_exec(
        str(driver), args[0], server.unix_socket, str(CPP_DB_ID), CHANNEL, *args[1:],
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stdout is not None
    try:
        assert await asyncio.wait_for(proc.stdout.readline(), WAIT) == b"subscribed\n"
    except BaseException:
        proc.kill()
        await proc.wait()
        raise
    return proc


async def received_by(proc: asyncio.subprocess.Process) -> list[Any]:
    """The driver's output lines, parsed, once it got all it waited for."""
    try:
        out, err = await asyncio.wait_for(proc.communicate(), WAIT)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, err.decode()
    return [json.loads(line) for line in out.decode().split("\n") if line]  # not splitlines: U+2028


async def test_swssd_producer_to_cpp_consumer(driver: Path, clean_redis: EmbeddedRedis, db: DBConnector) -> None:
    proc = await start_receiver(driver, clean_redis, "receive", str(len(NOTIFICATIONS)), "50")
    producer = NotificationProducer(db, CHANNEL)
    for op, data, values in NOTIFICATIONS[:100]:
        assert await producer.send(op, data, values) == 1
    buffered = NotificationProducer(db, CHANNEL, buffered=True)
    for op, data, values in NOTIFICATIONS[100:]:
        assert await buffered.send(op, data, values) == -1
    await buffered.flush()
    assert await received_by(proc) == [[op, data, [list(fv) for fv in values]] for op, data, values in NOTIFICATIONS]


async def test_malformed_exactly_where_cpp_pop_throws(
    driver: Path, clean_redis: EmbeddedRedis, db: DBConnector, sel: Select
) -> None:
    payloads = [p for i, bad in enumerate(MALFORMED) for p in (bad, b'["ok","%d"]' % i)]
    payloads += [raw for raw, _ in TOLERATED]
    nc = NotificationConsumer(db, CHANNEL)
    await sel.add(nc)
    proc = await start_receiver(driver, clean_redis, "receive-each", str(len(payloads)))
    for payload in payloads:
        assert await db.redis.execute_command("PUBLISH", CHANNEL, payload) == 2
    cpp = await received_by(proc)

    thrown = [i for i, item in enumerate(cpp) if isinstance(item, dict)]
    assert thrown == list(range(0, 2 * len(MALFORMED), 2)), [cpp[i] for i in thrown]
    read = [KeyOpFieldsValues(data, op, [tuple(fv) for fv in fvs]) for op, data, fvs in (
        item for item in cpp if not isinstance(item, dict)
    )]
    got: list[KeyOpFieldsValues] = []
    while len(got) < len(read):
        assert await sel.select(timeout=WAIT) is nc
        got += await nc.pops()
    assert got == read
    assert nc.malformed == len(thrown)
