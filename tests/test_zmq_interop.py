"""The ZMQ channel against libswsscommon (issue 9): the C++ ZmqProducerStateTable -> swssd
ZmqConsumerStateTable and the swssd ZmqProducerStateTable -> the C++ ZmqConsumerStateTable,
100,000 changes each way (sets of 1-8 fields, deletes, keys and values with ':' '|' NUL and
non-ASCII), every change delivered in order, and the Redis table that db persistence leaves equal
to the one the C++ library leaves for the same changes. Also: the serializer's bytes equal the
bytes BinarySerializer writes.

The C++ side is tests/cpp/zmq_driver.cpp (see tests/cpp_build.py; skipped without the library).
"""

from __future__ import annotations

import asyncio
import json
import random
import socket
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import zmq
from zmq.utils.monitor import recv_monitor_message

from cpp_build import build_driver
from swssd import DBConnector, KeyOpFieldsValues, Select, Table
from swssd.channels.zmq import ZmqClient, ZmqConsumerStateTable, ZmqProducerStateTable, ZmqServer
from swssd.channels.zmq.serializer import deserialize, serialize
from swssd.redis.embedded_redis import EmbeddedRedis

KFV = KeyOpFieldsValues
CHANGES = 100_000
TEXTS = ["plain", "co:lon", "pi|pe", "nul\x00byte", "\x00", "Ünïcødé ✓", "中文", "🙂", "sp ace", ""]
WAIT = 120.0


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_driver("zmq_driver.cpp", tmp_path_factory.mktemp("cpp"), header="zmqconsumerstatetable.h")


@pytest.fixture
def db_config(clean_redis: EmbeddedRedis, tmp_path: Path) -> Path:
    return clean_redis.write_database_config(tmp_path / "database_config.json")


@pytest.fixture
async def appl(clean_redis: EmbeddedRedis) -> AsyncIterator[DBConnector]:
    conn = await DBConnector.from_url(f"unix://{clean_redis.unix_socket}", db_id=0, separator=":", name="APPL_DB")
    yield conn
    await conn.close()


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


def free_tcp_endpoint() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"tcp://127.0.0.1:{s.getsockname()[1]}"


def random_ops(seed: int, count: int, keys: int = 2000) -> list[list[Any]]:
    """Producer calls (the driver's JSON lines) adding up to `count` changes: single sets and
    deletes, batched sends mixing both, set_many and del_many; some sets with op HSET, which
    persistence merges instead of replacing."""
    rng = random.Random(seed)
    names = [f"10.{i // 250}.{i % 250}.0/24{rng.choice(TEXTS)}" for i in range(keys)]
    made = 0

    def change(deletes: bool = True) -> list[Any]:
        nonlocal made
        key = rng.choice(names)
        made += 1
        if deletes and rng.random() < 0.15:
            return [key, "DEL", []]
        fvs = [["seq", str(made)]]
        fvs += [[f"f{j}{rng.choice(TEXTS)}", f"{rng.choice(TEXTS)}{made}"] for j in range(rng.randint(0, 7))]
        return [key, "HSET" if rng.random() < 0.05 else "SET", fvs]

    ops: list[list[Any]] = []
    while made < count:
        r = rng.random()
        left = count - made
        if r < 0.4:
            key, op, fvs = change()
            ops.append(["del", key] if op == "DEL" else ["set", key, fvs, op])
        elif r < 0.7:
            ops.append(["send", [change() for _ in range(min(left, rng.randint(1, 200)))]])
        elif r < 0.85:
            ops.append(["set_many", [change(deletes=False) for _ in range(min(left, rng.randint(1, 50)))]])
        else:
            n = min(left, rng.randint(1, 30))
            made += n
            ops.append(["del_many", [rng.choice(names) for _ in range(n)]])
    return ops


def sent_changes(ops: list[list[Any]]) -> list[KeyOpFieldsValues]:
    """The changes the calls send, in order, with the op each one carries (persistence's)."""
    out: list[KeyOpFieldsValues] = []
    for op in ops:
        if op[0] == "set":
            out.append(KFV(op[1], op[3], [tuple(fv) for fv in op[2]]))
        elif op[0] == "del":
            out.append(KFV(op[1], "DEL", []))
        elif op[0] in ("send", "set_many"):
            out += [KFV(k, o, [tuple(fv) for fv in fvs]) for k, o, fvs in op[1]]
        else:
            out += [KFV(k, "DEL", []) for k in op[1]]
    return out


def as_received(changes: list[KeyOpFieldsValues]) -> list[KeyOpFieldsValues]:
    """What a consumer gets: the op is not sent, no fields means DEL."""
    return [KFV(k, "SET" if fvs else "DEL", fvs) for k, _, fvs in changes]


async def play(producer: ZmqProducerStateTable, ops: list[list[Any]]) -> None:
    """The same calls through swssd's producer."""
    for op in ops:
        kind = op[0]
        if kind == "set":
            await producer.set(op[1], [tuple(fv) for fv in op[2]], op=op[3])
        elif kind == "del":
            await producer.delete(op[1])
        elif kind == "send":
            await producer.send([KFV(k, o, [tuple(fv) for fv in fvs]) for k, o, fvs in op[1]])
        elif kind == "set_many":
            await producer.set_many([KFV(k, o, [tuple(fv) for fv in fvs]) for k, o, fvs in op[1]])
        else:
            await producer.delete_many(op[1])


async def dump(db: DBConnector, table: str) -> dict[str, dict[str, str]]:
    t = Table(db, table)
    keys = await t.keys()
    values = await db.execute_many([("HGETALL", t.key_name(k)) for k in keys])
    return {k: dict(v) if isinstance(v, dict) else dict(zip(v[::2], v[1::2])) for k, v in zip(keys, values)}


def check_sequence(got: list[KeyOpFieldsValues], want: list[KeyOpFieldsValues]) -> None:
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g == w, f"change {i}: got {g!r}, sent {w!r}"


# -- bytes ------------------------------------------------------------------------------------


async def test_serializer_bytes_equal_cpp(driver: Path) -> None:
    rng = random.Random(7)
    inputs: list[tuple[str, str, list[KeyOpFieldsValues]]] = [
        ("APPL_DB", "ROUTE_TABLE", [KFV("10.0.0.0/24", "SET", [("nexthop", "10.0.0.1"), ("ifname", "Ethernet0")])]),
        ("APPL_DB", "ROUTE_TABLE", [KFV("10.1.0.0/16", "DEL", [])]),
        ("DPU_APPL_DB", "DASH_ROUTE_TABLE", []),
        ("", "", [KFV("", "SET", [("", "")])]),
        ("APPL_DB", "T", [KFV("k", "SET", [(f"f{i}", "v" * i) for i in range(300)])]),  # lengths > 255
        ("APPL_DB", "T", [KFV("big", "SET", [("v", "x" * 70_000)])]),
    ]
    for n in range(60):
        ops = random_ops(n, rng.randint(1, 40), keys=30)
        inputs.append((rng.choice(["APPL_DB", "Ü_DB"]), rng.choice(TEXTS) + "T", sent_changes(ops)))
    lines = "".join(
        json.dumps([d, t, [[k, o, [list(fv) for fv in fvs]] for k, o, fvs in c]]) + "\n" for d, t, c in inputs
    )
    proc = await asyncio.create_subprocess_exec(
        str(driver), "serialize", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=1 << 24
    )
    out, _ = await asyncio.wait_for(proc.communicate(lines.encode()), WAIT)
    assert proc.returncode == 0
    cpp = [bytes.fromhex(h) for h in out.decode().split()]
    assert len(cpp) == len(inputs)
    for (db_name, table, changes), theirs in zip(inputs, cpp):
        assert serialize(db_name, table, changes) == theirs
        assert deserialize(theirs) == (db_name, table, as_received(changes))


# -- C++ producer -> swssd consumer -----------------------------------------------------------


async def test_cpp_producer_to_swssd_consumer(driver: Path, appl: DBConnector, db_config: Path, tmp_path: Path) -> None:
    ops = random_ops(11, CHANGES)
    want = sent_changes(ops)
    assert len(want) == CHANGES
    endpoint = f"ipc://{tmp_path}/cpp-to-swssd.sock"
    server = ZmqServer(endpoint)
    consumer = ZmqConsumerStateTable(appl, "ZMQ_CPP", server)
    sel = Select()
    await sel.add(consumer)
    producer = await asyncio.create_subprocess_exec(
        str(driver), "produce", str(db_config), "APPL_DB", "ZMQ_CPP", endpoint, "1",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    )
    assert producer.stdin is not None and producer.stdout is not None

    async def feed() -> None:
        assert producer.stdin is not None
        for i in range(0, len(ops), 500):
            producer.stdin.write("".join(json.dumps(op) + "\n" for op in ops[i:i + 500]).encode())
            await producer.stdin.drain()
        producer.stdin.write(b'["wait"]\n')
        await producer.stdin.drain()

    feeding = asyncio.ensure_future(feed())
    got: list[KeyOpFieldsValues] = []
    deadline = time.monotonic() + WAIT
    while len(got) < CHANGES and time.monotonic() < deadline:
        if await sel.select(timeout=1.0) is consumer:
            got += await consumer.pops()
    await feeding
    # "sent": the C++ AsyncDBUpdater has written every change
    assert (await asyncio.wait_for(producer.stdout.readline(), WAIT)).decode().strip() == "sent"
    producer.stdin.write(b'["quit"]\n')
    producer.stdin.close()
    assert await asyncio.wait_for(producer.wait(), WAIT) == 0
    check_sequence(got, as_received(want))
    assert server.malformed == 0 and server.dropped == 0
    await sel.close()
    await consumer.close()

    # The same calls through swssd's producer (persistence on) leave the same table.
    cpp_table = await dump(appl, "ZMQ_CPP")
    client = ZmqClient(endpoint)
    ours = ZmqProducerStateTable(appl, "ZMQ_SWSSD", client, db_persistence=True)
    await play(ours, ops)
    await ours.flush()
    assert cpp_table, "the C++ producer persisted entries"
    assert any("\x00" in v for e in cpp_table.values() for v in e.values())
    assert await dump(appl, "ZMQ_SWSSD") == cpp_table
    await ours.close()
    client.close()
    await server.close()


# -- swssd producer -> C++ consumer -----------------------------------------------------------


async def test_swssd_producer_to_cpp_consumer(driver: Path, appl: DBConnector, db_config: Path) -> None:
    ops = random_ops(12, CHANGES)
    want = as_received(sent_changes(ops))
    endpoint = free_tcp_endpoint()
    consumer = await asyncio.create_subprocess_exec(
        str(driver), "consume", str(db_config), "APPL_DB", "ZMQ_CPP", endpoint, "1", str(CHANGES), "20000",
        stdout=asyncio.subprocess.PIPE, limit=1 << 24,
    )
    assert consumer.stdout is not None
    assert (await asyncio.wait_for(consumer.stdout.readline(), WAIT)).decode().strip() == "ready"
    client = ZmqClient(endpoint)
    producer = ZmqProducerStateTable(appl, "ZMQ_CPP", client, db_persistence=False)
    await play(producer, ops)
    out, _ = await asyncio.wait_for(consumer.communicate(), WAIT)
    assert consumer.returncode == 0
    lines = out.decode().splitlines()
    assert lines[-1] == f"done {CHANGES}"
    got = [KFV(k, op, [tuple(fv) for fv in fvs]) for k, op, fvs in map(json.loads, lines[:-1])]
    check_sequence(got, want)
    client.close()

    # The C++ consumer persisted what it received; swssd's consumer persistence does the same.
    cpp_table = await dump(appl, "ZMQ_CPP")
    server = ZmqServer("tcp://127.0.0.1:*")
    ours = ZmqConsumerStateTable(appl, "ZMQ_SWSSD", server, db_persistence=True)
    client = ZmqClient(server.last_endpoint or "")
    sender = ZmqProducerStateTable(appl, "ZMQ_SWSSD", client, db_persistence=False)
    sel = Select()
    await sel.add(ours)
    feeding = asyncio.ensure_future(play(sender, ops))
    received = 0
    deadline = time.monotonic() + WAIT
    while received < CHANGES and time.monotonic() < deadline:
        if await sel.select(timeout=1.0) is ours:
            received += len(await ours.pops())
    await feeding
    await ours.flush()
    assert received == CHANGES
    assert cpp_table
    assert await dump(appl, "ZMQ_SWSSD") == cpp_table
    await sel.close()
    await ours.close()
    await server.close()
    client.close()


# -- a C++ consumer killed and started again while the swssd producer sends ---------------------


async def test_cpp_consumer_restarted_while_swssd_producer_sends(
    driver: Path, appl: DBConnector, db_config: Path, tmp_path: Path
) -> None:
    """SIGKILL the C++ consumer: the swssd producer keeps sending without blocking the loop or
    failing, and the next C++ consumer on the endpoint gets what was queued meanwhile and what
    follows, in order (libzmq's client queue, as for the C++ client with the same options)."""
    endpoint = f"ipc://{tmp_path}/restart.sock"

    async def start(count: int) -> asyncio.subprocess.Process:
        proc = await asyncio.create_subprocess_exec(
            str(driver), "consume", str(db_config), "APPL_DB", "ZMQ_CPP", endpoint, "0", str(count), "5000",
            stdout=asyncio.subprocess.PIPE, limit=1 << 24,
        )
        assert proc.stdout is not None
        assert (await asyncio.wait_for(proc.stdout.readline(), WAIT)).decode().strip() == "ready"
        return proc

    client = ZmqClient(endpoint)
    monitor = client._socket.get_monitor_socket(zmq.EVENT_DISCONNECTED)  # type: ignore[union-attr]
    producer = ZmqProducerStateTable(appl, "ZMQ_CPP", client, db_persistence=False)
    seq = 0

    async def send(count: int) -> None:
        nonlocal seq
        for _ in range(count):
            await producer.set("k", [("seq", str(seq))])
            seq += 1

    loop = asyncio.get_running_loop()
    worst = 0.0

    async def probe() -> None:
        nonlocal worst
        while True:
            t = loop.time()
            await asyncio.sleep(0.001)
            worst = max(worst, loop.time() - t - 0.001)

    probing = asyncio.ensure_future(probe())
    first = await start(1_000_000)
    assert first.stdout is not None
    await send(200)
    for _ in range(200):
        await asyncio.wait_for(first.stdout.readline(), WAIT)
    first.kill()
    await first.wait()
    await disconnected(monitor)
    await send(500)  # queued in the client
    second = await start(800)
    await send(300)
    out, _ = await asyncio.wait_for(second.communicate(), WAIT)
    lines = out.decode().splitlines()
    assert lines[-1] == "done 800"
    assert [int(json.loads(line)[2][0][1]) for line in lines[:-1]] == list(range(200, 1000))
    probing.cancel()
    assert worst < 0.25
    monitor.close(0)
    client.close()


# -- a swssd server that stops reading (issue 27) -----------------------------------------------


async def test_cpp_producer_waits_while_the_swssd_server_stops_reading(
    driver: Path, appl: DBConnector, db_config: Path, tmp_path: Path
) -> None:
    """A consumer that is not popped holds at most max_waiting changes: the server stops reading,
    libzmq's queue and the TCP window fill, and the C++ producer's sendMsg retries on EAGAIN (its
    thread sleeps) instead of this process growing. Once popped, every change arrives in order,
    values that differ per key read as C++ wrote them."""
    count = 30_000
    ops = [["set", f"k{i}", [["seq", str(i)], ["v", f"{i:x}" * (60 + i % 40)]], "SET"] for i in range(count)]
    endpoint = f"ipc://{tmp_path}/paused.sock"
    server = ZmqServer(endpoint)
    consumer = ZmqConsumerStateTable(appl, "ZMQ_PAUSED", server, pop_batch_size=1000, max_waiting=200)
    producer = await asyncio.create_subprocess_exec(
        str(driver), "produce", str(db_config), "APPL_DB", "ZMQ_PAUSED", endpoint, "0",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    )
    assert producer.stdin is not None and producer.stdout is not None

    async def feed() -> None:  # the producer stops reading its input while its sends wait
        assert producer.stdin is not None
        producer.stdin.write("".join(json.dumps(op) + "\n" for op in ops).encode() + b'["wait"]\n')
        await producer.stdin.drain()

    feeding = asyncio.ensure_future(feed())
    try:
        deadline = time.monotonic() + WAIT
        while not server.paused and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        assert server.paused
        await asyncio.sleep(1.0)  # the producer keeps sending into full queues meanwhile
        assert 200 <= consumer.waiting < 200 + 512
        assert server.received < count
        got: list[KeyOpFieldsValues] = []
        while len(got) < count and time.monotonic() < deadline:
            got += await consumer.pops()
            await asyncio.sleep(0.001)
        want = [KFV(f"k{i}", "SET", [("seq", str(i)), ("v", f"{i:x}" * (60 + i % 40))]) for i in range(count)]
        check_sequence(got, want)
        await feeding
        assert (await asyncio.wait_for(producer.stdout.readline(), WAIT)).decode().strip() == "sent"
        producer.stdin.write(b'["quit"]\n')
        producer.stdin.close()
        assert await asyncio.wait_for(producer.wait(), WAIT) == 0
        assert not server.paused and server.buffered == 0 and server.malformed == 0
    finally:
        feeding.cancel()
        if producer.returncode is None:
            producer.kill()
            await producer.wait()
        await consumer.close()
        await server.close()
