"""Where a ZMQ producer's set() spends its CPU (issue 27): process and sending-thread CPU per call
of ZmqProducerStateTable.set(), and of its parts alone.

    .venv/bin/python bench/bench_zmq_producer.py [--changes 100000] [--repeat 5] [--same-fields]

N route-like changes (bench_zmq.py's keys; with values that differ per key unless --same-fields)
go to a PULL socket in another process that reads as fast as it can, over tcp://127.0.0.1,
persistence off, on uvloop, after gc.freeze() as `swssd run` does. Each round times, one after
the other:

    await set()             ZmqProducerStateTable.set() per change (what bench_zmq.py's producer does)
    encoding alone          the producer's sender given no socket (it returns the message), per change
    send_nowait() alone     ZmqClient.send_nowait() of the messages encoded before the round
    await empty coroutine   an `async def` that does nothing, awaited per change

with time.thread_time (the sending thread) and time.process_time (libzmq's I/O thread too, which
turns each message handed over into TCP writes). The medians of --repeat rounds are printed. The
parts need not add up to set(): how many messages libzmq's thread finds per wake-up, and so its
CPU per message, depends on how fast they come.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import uvloop
import zmq

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from bench_zmq import fields_of, route_key  # noqa: E402

from swssd import DBConnector  # noqa: E402
from swssd.channels.zmq import ZmqClient, ZmqProducerStateTable  # noqa: E402
from swssd.redis.embedded_redis import EmbeddedRedis  # noqa: E402


def sink(endpoint: str) -> None:
    """Read and drop messages until b"quit"."""
    ctx = zmq.Context()
    pull = ctx.socket(zmq.PULL)
    pull.bind(endpoint)
    print("ready", flush=True)
    while pull.recv() != b"quit":
        pass
    pull.close(0)
    ctx.term()


async def rounds(
    url: str, endpoint: str, count: int, repeat: int, unique: bool
) -> dict[str, list[tuple[float, float]]]:
    db = await DBConnector.from_url(url, db_id=0, separator=":", name="APPL_DB")
    client = ZmqClient(endpoint)
    await asyncio.sleep(0.2)  # connected
    producer = ZmqProducerStateTable(db, "ROUTE_TABLE", client, db_persistence=False)
    routes = [(route_key(i), fields_of(i, unique)) for i in range(count)]
    encode = functools.partial(producer._send_one, 0)  # no socket: the message only
    encoded = [encode(key, fvs) for key, fvs in routes]
    gc.collect()
    gc.freeze()

    async def sets() -> None:
        for key, fvs in routes:
            await producer.set(key, fvs)

    async def encodings() -> None:
        for key, fvs in routes:
            encode(key, fvs)

    async def sends() -> None:
        for data in encoded:
            if not client.send_nowait(data):
                await client.send_bytes(data)

    async def nothing(key: str, fvs: list[tuple[str, str]]) -> None:
        pass

    async def awaits() -> None:
        for key, fvs in routes:
            await nothing(key, fvs)

    cases: dict[str, Callable[[], Awaitable[None]]] = {
        "await set()": sets, "encoding alone": encodings, "send_nowait() alone": sends,
        "await empty coroutine": awaits,
    }
    out: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    for _ in range(repeat):
        for name, case in cases.items():
            process, thread = time.process_time_ns(), time.thread_time_ns()
            await case()
            process, thread = time.process_time_ns() - process, time.thread_time_ns() - thread
            out[name].append((thread / 1e3 / count, process / 1e3 / count))
            await asyncio.sleep(0.2)  # libzmq's thread catches up before the next case
    client.send_nowait(b"quit")
    await asyncio.sleep(0.2)
    client.close()
    await db.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--changes", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--same-fields", action="store_true", help="the same 4 values for every key")
    parser.add_argument("--sink", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.sink:
        sink(args.sink)
        return
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        endpoint = f"tcp://127.0.0.1:{s.getsockname()[1]}"
    reader = subprocess.Popen([sys.executable, __file__, "--sink", endpoint], stdout=subprocess.PIPE, text=True)
    try:
        assert reader.stdout is not None and reader.stdout.readline().strip() == "ready"
        with EmbeddedRedis() as server:
            url = f"unix://{server.unix_socket}"
            out = uvloop.run(rounds(url, endpoint, args.changes, args.repeat, not args.same_fields))
        reader.wait(timeout=30)
    finally:
        if reader.poll() is None:
            reader.kill()
    shape = "the same 4 values for every key" if args.same_fields else "values that differ per key"
    print(f"{args.changes:,} changes ({shape}), CPU per change, medians of {args.repeat}:")
    print("| case | sending thread, us | process, us |")
    print("| --- | ---: | ---: |")
    for name, figures in out.items():
        print(f"| {name} | {statistics.median(t for t, _ in figures):.2f} "
              f"| {statistics.median(p for _, p in figures):.2f} |")


if __name__ == "__main__":
    main()
