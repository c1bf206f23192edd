"""What a ZmqServer holds, and the endpoints it takes, with real peers (issue 27): pyzmq sockets
and hand-made ZMTP peers (zmtp_peer.py). The daemon-level cases are in test_daemon_zmq_limits.py."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import socket
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import zmq
from structlog.testing import capture_logs

import zmtp_peer
from swssd import DBConnector, KeyOpFieldsValues, Select
from swssd.channels.zmq import ZmqConsumerStateTable, ZmqServer
from swssd.channels.zmq.serializer import serialize

TABLE = "ZLIM"


def port_of(server: ZmqServer) -> int:
    assert server.last_endpoint is not None
    return int(server.last_endpoint.rsplit(":", 1)[1])


async def until(check: object, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return True
        await asyncio.sleep(0.02)
    return bool(check())  # type: ignore[operator]


@pytest.fixture
async def push() -> AsyncIterator[zmq.Context[zmq.Socket[bytes]]]:
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    yield ctx
    ctx.destroy(0)


async def test_peers_past_the_bound_are_refused_logged_once_and_counted() -> None:
    with capture_logs() as logs:
        server = ZmqServer("tcp://127.0.0.1:*", max_peers=20)
        peers = []
        try:
            for _ in range(50):
                peers.append(zmtp_peer.connect(("127.0.0.1", port_of(server))))
                await asyncio.sleep(0)
            assert await until(lambda: server.refused_peers == 30)
            assert server.peers == 20
            closed = [zmtp_peer.closed_by_peer(p, 0.5) for p in peers]
            assert sum(closed) == 30
            assert not any(closed[:20])  # the first 20 were kept
            said = [e for e in logs if e["event"].startswith("zmq peer limit reached")]
            assert len(said) == 1 and said[0]["max_peers"] == 20
            # peers that leave make room again
            for peer in peers[:10]:
                peer.close()
            assert await until(lambda: server.peers == 10)
            fresh = zmtp_peer.connect(("127.0.0.1", port_of(server)))
            assert await until(lambda: server.peers == 11)
            assert not zmtp_peer.closed_by_peer(fresh, 0.3)
            fresh.close()
        finally:
            for peer in peers:
                peer.close()
            await server.close()


async def test_a_refused_peer_leaves_the_others_served(db: DBConnector, push: zmq.Context) -> None:  # type: ignore[type-arg]
    server = ZmqServer("tcp://127.0.0.1:*", max_peers=1)
    sel = Select()
    consumer = ZmqConsumerStateTable(db, TABLE, server)
    await sel.add(consumer)
    idle = zmtp_peer.connect(("127.0.0.1", port_of(server)))  # takes the one place
    sender = push.socket(zmq.PUSH)
    sender.connect(server.last_endpoint or "")
    try:
        assert await until(lambda: server.refused_peers >= 1)
        idle.close()  # the place frees; the refused PUSH reconnects by itself
        sender.send(serialize("APPL_DB", TABLE, [KeyOpFieldsValues("k", "SET", [("f", "v")])]))
        assert await sel.select(timeout=5) is consumer
        assert await consumer.pops() == [("k", "SET", [("f", "v")])]
    finally:
        sender.close(0)
        await sel.close()
        await server.close()


async def test_a_frame_past_the_message_limit_closes_its_connection_unread() -> None:
    server = ZmqServer("tcp://127.0.0.1:*")
    try:
        peer = zmtp_peer.connect(("127.0.0.1", port_of(server)))
        with contextlib.suppress(OSError):  # closed while sending
            peer.sendall(zmtp_peer.long_frame_header(2 << 30) + bytes(1 << 20))
        assert zmtp_peer.closed_by_peer(peer)
        peer.close()
        assert server.received == 0 and server.malformed == 0
    finally:
        await server.close()


async def test_reading_stops_while_a_consumer_holds_its_limit(db: DBConnector, push: zmq.Context) -> None:  # type: ignore[type-arg]
    """Nothing is popped: the server stops at max_waiting (and what libzmq queues), the sender's
    queue fills and its sends fail with EAGAIN, as against a C++ server that does not keep up;
    once popped, everything arrives, in order."""
    server = ZmqServer("tcp://127.0.0.1:*")
    consumer = ZmqConsumerStateTable(db, TABLE, server, pop_batch_size=1000, max_waiting=200)
    sender = push.socket(zmq.PUSH)
    sender.setsockopt(zmq.SNDHWM, 100)
    sender.connect(server.last_endpoint or "")
    sent = 0
    try:
        deadline = time.monotonic() + 10
        again = 0
        while time.monotonic() < deadline and again < 50:
            try:
                sender.send(serialize("APPL_DB", TABLE, [KeyOpFieldsValues(f"k{sent}", "SET", [("v", "x" * 1000)])]),
                            zmq.NOBLOCK)
                sent += 1
                again = 0
            except zmq.Again:
                again += 1
                await asyncio.sleep(0.01)
        assert again >= 50, "the sender's queue never filled"
        assert server.paused
        assert 200 <= consumer.waiting < 200 + 512
        assert sent < 200 + 512 + 5000  # the rest waits in libzmq's queues and TCP, not here
        got: list[KeyOpFieldsValues] = []
        deadline = time.monotonic() + 20
        while len(got) < sent and time.monotonic() < deadline:
            got += await consumer.pops()
            await asyncio.sleep(0.001)
        assert [c.key for c in got] == [f"k{i}" for i in range(sent)]
        assert not server.paused and server.buffered == 0
    finally:
        sender.close(0)
        await consumer.close()
        await server.close()


async def test_reading_stops_at_the_buffer_bytes(db: DBConnector, push: zmq.Context) -> None:  # type: ignore[type-arg]
    server = ZmqServer("tcp://127.0.0.1:*", max_buffer_bytes=1 << 20)
    consumer = ZmqConsumerStateTable(db, TABLE, server, pop_batch_size=10)
    sender = push.socket(zmq.PUSH)
    sender.connect(server.last_endpoint or "")
    value = "y" * 100_000
    try:
        for i in range(100):
            sender.send(serialize("APPL_DB", TABLE, [KeyOpFieldsValues(f"k{i}", "SET", [("v", value)])]))
        assert await until(lambda: server.paused)
        await asyncio.sleep(0.2)
        assert 10 <= consumer.waiting <= 35  # 1 MiB, plus the burst that crossed it
        assert (1 << 20) <= server.buffered < (1 << 20) + (3 << 20)
        got: list[KeyOpFieldsValues] = []
        deadline = time.monotonic() + 10
        while len(got) < 100 and time.monotonic() < deadline:
            got += await consumer.pops()
            await asyncio.sleep(0.005)
        assert [c.key for c in got] == [f"k{i}" for i in range(100)]
        assert server.buffered == 0 and not server.paused
    finally:
        sender.close(0)
        await consumer.close()
        await server.close()


# -- endpoints ----------------------------------------------------------------------------


async def test_a_second_server_cannot_take_a_live_ipc_path(db: DBConnector, tmp_path: Path, push: zmq.Context) -> None:  # type: ignore[type-arg]
    endpoint = f"ipc://{tmp_path}/zmq.sock"
    first = ZmqServer(endpoint)
    consumer = ZmqConsumerStateTable(db, TABLE, first)
    try:
        with pytest.raises(OSError) as info:
            ZmqServer(endpoint)
        assert info.value.errno == errno.EADDRINUSE
        sender = push.socket(zmq.PUSH)
        sender.connect(endpoint)
        for i in range(5):
            sender.send(serialize("APPL_DB", TABLE, [KeyOpFieldsValues(f"k{i}", "SET", [("f", "v")])]))
        assert await until(lambda: consumer.waiting == 5)
        sender.close(0)
    finally:
        await consumer.close()
        await first.close()


async def test_an_ipc_path_that_is_not_a_socket_is_refused_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "zmq"
    path.write_text("precious")
    with pytest.raises(OSError) as info:
        ZmqServer(f"ipc://{path}")
    assert info.value.errno == errno.ENOTSOCK
    assert path.read_text() == "precious"
    (tmp_path / "dir").mkdir()
    with pytest.raises(OSError):
        ZmqServer(f"ipc://{tmp_path / 'dir'}")
    assert (tmp_path / "dir").is_dir()


async def test_a_stale_ipc_socket_is_replaced(tmp_path: Path) -> None:
    path = str(tmp_path / "zmq.sock")
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(path)
    stale.close()  # a socket file nobody listens on: what a killed server leaves
    assert os.path.exists(path)
    server = ZmqServer(f"ipc://{path}")
    try:
        peer = zmtp_peer.connect(path)
        peer.close()
    finally:
        await server.close()


@pytest.mark.parametrize(("endpoint", "warned"), [("tcp://*:0", True), ("tcp://127.0.0.1:0", False)])
async def test_a_wildcard_tcp_bind_is_warned_about(endpoint: str, warned: bool) -> None:
    with capture_logs() as logs:
        server = ZmqServer(endpoint.replace(":0", ":*"))
        await server.close()
    found = [e for e in logs if e["event"].startswith("zmq endpoint reachable beyond this host")]
    assert len(found) == int(warned)
    if warned:
        assert found[0]["wildcard"] is True and found[0]["endpoint"].startswith("tcp://0.0.0.0:")


async def test_a_paused_table_stops_the_server_at_once(db: DBConnector, push: zmq.Context) -> None:  # type: ignore[type-arg]
    """pause_reading() (the daemon calls it when the table's pending work reaches pending_limit):
    the server reads nothing more, however little the consumer holds; resume_reading() and
    everything sent meanwhile arrives, in order."""
    server = ZmqServer("tcp://127.0.0.1:*")
    consumer = ZmqConsumerStateTable(db, TABLE, server, pop_batch_size=1000)
    sender = push.socket(zmq.PUSH)
    sender.connect(server.last_endpoint or "")
    try:
        consumer.pause_reading()
        assert server.paused
        for i in range(300):
            sender.send(serialize("APPL_DB", TABLE, [KeyOpFieldsValues(f"k{i}", "SET", [("f", "v")])]))
        await asyncio.sleep(0.3)
        assert consumer.waiting == 0 and server.received == 0
        consumer.resume_reading()
        assert await until(lambda: consumer.waiting == 300)
        assert [c.key for c in await consumer.pops()] == [f"k{i}" for i in range(300)]
    finally:
        sender.close(0)
        await consumer.close()
        await server.close()


async def test_complete_messages_queued_while_the_loop_is_busy_drop_no_peer(db: DBConnector, push: zmq.Context) -> None:  # type: ignore[type-arg]
    """libzmq queues a connection's complete messages (up to the receive high-water mark) while
    the event loop is busy elsewhere, more bytes than a message may hold: a queue of finished
    messages is not an unfinished message, and the peer stays, every message read in order."""
    server = ZmqServer("tcp://127.0.0.1:*", receive_hwm=32, max_buffer_bytes=64 << 20)
    consumer = ZmqConsumerStateTable(db, TABLE, server, pop_batch_size=100)
    sender = push.socket(zmq.PUSH)
    sender.connect(server.last_endpoint or "")
    value = "z" * (1 << 20)
    try:
        for round_ in range(3):
            keys = [f"r{round_}-{i}" for i in range(40)]
            for key in keys:
                sender.send(serialize("APPL_DB", TABLE, [KeyOpFieldsValues(key, "SET", [("v", value)])]), copy=False)
            time.sleep(1.0)  # the loop busy: libzmq takes what it may hold, complete messages
            got: list[KeyOpFieldsValues] = []
            deadline = time.monotonic() + 20
            while len(got) < len(keys) and time.monotonic() < deadline:
                got += await consumer.pops()
                await asyncio.sleep(0.01)
            assert [c.key for c in got] == keys
            assert server.unfinished_peers == 0
    finally:
        sender.close(0)
        await consumer.close()
        await server.close()


def send_parts(sock: socket.socket, count: int) -> int:
    """Up to `count` parts of 1 MiB flagged MORE (a message never finished): how many were sent
    before the server shut the connection down."""
    part = zmtp_peer.frame(serialize("APPL_DB", TABLE, [KeyOpFieldsValues("k", "SET", [("v", "x" * (1 << 20))])]),
                           more=True)
    sent = 0
    with contextlib.suppress(OSError):  # shut down while sending
        for _ in range(count):
            sock.sendall(part)
            sent += 1
    return sent


@pytest.mark.parametrize("paused", [False, True])
async def test_a_message_in_parts_that_never_ends_drops_its_peer(db: DBConnector, paused: bool) -> None:
    """Parts flagged MORE and never a last one (libzmq would keep them all): the connection is
    shut down once they pass the message limit, whether the server reads or is paused (libzmq
    keeps taking parts of a paused server's connections), counted once."""
    server = ZmqServer("tcp://127.0.0.1:*")
    consumer = ZmqConsumerStateTable(db, TABLE, server)
    hostile = zmtp_peer.connect(("127.0.0.1", port_of(server)))
    try:
        if paused:
            consumer.pause_reading()
        sent = await asyncio.to_thread(send_parts, hostile, 100)
        assert await until(lambda: server.unfinished_peers == 1)
        assert zmtp_peer.closed_by_peer(hostile)
        assert sent < 100
        assert server.received == 0
    finally:
        hostile.close()
        await consumer.close()
        await server.close()


async def test_a_hostile_peer_of_a_paused_server_drops_past_the_queue_bound(db: DBConnector, push: zmq.Context) -> None:  # type: ignore[type-arg]
    """While reading is paused and another peer's complete messages wait in libzmq, the guard
    cannot tell whose bytes it counts: a peer sending parts without a last one is shut down only
    past the message limit plus what `receive_hwm` complete messages may hold, and then it is; the
    other peer's messages stay and are read in order once reading resumes."""
    server = ZmqServer("tcp://127.0.0.1:*", receive_hwm=2)
    consumer = ZmqConsumerStateTable(db, TABLE, server)
    polite = push.socket(zmq.PUSH)
    polite.connect(server.last_endpoint or "")
    hostile = zmtp_peer.connect(("127.0.0.1", port_of(server)))
    try:
        consumer.pause_reading()
        for key in ("a", "b"):
            polite.send(serialize("APPL_DB", TABLE, [KeyOpFieldsValues(key, "SET", [("v", "1")])]))
        await asyncio.sleep(0.3)  # both complete messages in libzmq's queue, unread
        sent = await asyncio.to_thread(send_parts, hostile, 150)
        assert await until(lambda: server.unfinished_peers == 1, timeout=10)
        assert zmtp_peer.closed_by_peer(hostile)
        # 16 MiB a message and 3 more for the queue of 2: not before 64 MiB of parts, well before 150
        assert 64 <= sent < 150
        assert server.received == 0
        consumer.resume_reading()
        got: list[KeyOpFieldsValues] = []
        deadline = time.monotonic() + 10
        while len(got) < 2 and time.monotonic() < deadline:
            got += await consumer.pops()
            await asyncio.sleep(0.01)
        assert [c.key for c in got] == ["a", "b"]
        assert server.unfinished_peers == 1
    finally:
        hostile.close()
        polite.close(0)
        await consumer.close()
        await server.close()
