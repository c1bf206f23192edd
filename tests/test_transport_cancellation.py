"""A cancelled call never makes a later call receive its reply (issue 34): swssd's own asyncio
connection (swssd.redis.transport, under DBConnector's scripts and pipelines and SendAhead) pairs
each request with its replies by order, and a request whose caller gave up keeps its place, so
its late replies are read and dropped. A seeded random campaign against a real redis-server:
concurrent callers on one connector, each call cut short at a random moment by asyncio.timeout
or by cancelling its task, often while another client holds every client in CLIENT PAUSE so the
replies come late; every key holds a value naming it, so a shifted reply is seen.

A failing run prints its seed; SWSSD_LATE_REPLY_SEED=<seed> replays the same schedule.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import random
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

from swssd.lua import Script
from swssd.redis.connector import DBConnector
from swssd.redis.embedded_redis import EmbeddedRedis
from swssd.redis.send_ahead import SendAhead

#: callers at once on the one connector, and calls each
CALLERS = 8
CALLS = 1000
KEYS = 16

_GET_SOURCE = b"return redis.call('GET', KEYS[1])"
GET_SCRIPT = Script("get_key", _GET_SOURCE, hashlib.sha1(_GET_SOURCE).hexdigest())
_SET_SOURCE = b"redis.call('SET', KEYS[1], ARGV[1]) return 1"
SET_SCRIPT = Script("set_key", _SET_SOURCE, hashlib.sha1(_SET_SOURCE).hexdigest())


def s_value(i: int) -> str:
    return f"s|{i}"


def h_value(i: int) -> list[str]:
    return ["f", f"h|{i}", "g", f"g|{i}"]


@dataclass
class Tally:
    checked: int = 0
    cancelled: int = 0
    anomalies: list[str] = field(default_factory=list)

    def expect(self, what: str, got: Any, wanted: Any) -> None:
        self.checked += 1
        if got != wanted:
            self.anomalies.append(f"{what}: got {got!r}, wanted {wanted!r}")


async def cut_short(rng: random.Random, call: Coroutine[Any, Any, Any]) -> tuple[bool, Any]:
    """`call` run whole, under an asyncio.timeout, or as a task cancelled after a random pause:
    (True, result) or (False, None) when it was cut short."""
    mode = rng.choice(["whole", "timeout", "cancel"])
    delay = rng.choice([0.0, 0.0, 0.0001, 0.0005, 0.001, 0.003])
    try:
        if mode == "whole":
            return True, await call
        if mode == "timeout":
            async with asyncio.timeout(delay):
                return True, await call
        task = asyncio.ensure_future(call)
        await asyncio.sleep(delay)
        task.cancel()
        return True, await task
    except (TimeoutError, asyncio.CancelledError):
        return False, None


async def caller(db: DBConnector, rng: random.Random, tally: Tally) -> None:
    for _ in range(CALLS):
        i, j = rng.randrange(KEYS), rng.randrange(KEYS)
        kind = rng.choice(["get", "pipeline", "evalsha", "evalsha_many"])
        if kind == "get":
            ok, got = await cut_short(rng, db.execute_many([("GET", f"k{i}")]))
            wanted: Any = [s_value(i)]
        elif kind == "pipeline":
            ok, got = await cut_short(rng, db.execute_many(
                [("GET", f"k{i}"), ("HGETALL", f"h{j}"), ("GET", f"k{j}")]))
            wanted = [s_value(i), h_value(j), s_value(j)]
        elif kind == "evalsha":
            ok, got = await cut_short(rng, db.evalsha(GET_SCRIPT, [f"k{i}"], []))
            wanted = s_value(i)
        else:
            ok, got = await cut_short(rng, db.evalsha_many(
                [(GET_SCRIPT, [f"k{i}"], []), (GET_SCRIPT, [f"k{j}"], [])]))
            wanted = [s_value(i), s_value(j)]
        if ok:
            tally.expect(f"{kind} k{i} k{j}", got, wanted)
        else:
            tally.cancelled += 1


async def pauser(admin: DBConnector, rng: random.Random, done: asyncio.Event) -> int:
    """CLIENT PAUSE of every client for 1 to 10 ms, now and then, until `done`: the pauses made."""
    pauses = 0
    while not done.is_set():
        await asyncio.sleep(rng.choice([0.001, 0.003, 0.01]))
        ms = rng.randint(1, 10)
        await admin.execute_many([("CLIENT", "PAUSE", ms, "ALL")])
        pauses += 1
        await asyncio.sleep(ms / 1000)
    return pauses


async def test_cancelled_calls_never_shift_replies(clean_redis: EmbeddedRedis) -> None:
    seed = int(os.environ.get("SWSSD_LATE_REPLY_SEED") or random.randrange(2**32))
    print(f"seed {seed}")
    db = await DBConnector.from_url(clean_redis.url)
    admin = await DBConnector.from_url(clean_redis.url)
    try:
        [(_, hz)] = await admin.execute_many([("CONFIG", "GET", "hz")])
        await admin.execute_many(
            [("CONFIG", "SET", "hz", "500")]  # pauses end within 2 ms of their time
            + [("SET", f"k{i}", s_value(i)) for i in range(KEYS)]
            + [("HSET", f"h{i}", *h_value(i)) for i in range(KEYS)]
        )
        tally = Tally()
        done = asyncio.Event()
        pausing = asyncio.ensure_future(pauser(admin, random.Random(seed + 1), done))
        rngs = [random.Random(f"{seed}/{n}") for n in range(CALLERS)]
        await asyncio.gather(*(caller(db, rng, tally) for rng in rngs))
        done.set()
        pauses = await pausing
        await admin.execute_many([("CONFIG", "SET", "hz", hz)])
        summary = (f"seed {seed} (replay: SWSSD_LATE_REPLY_SEED={seed}): {CALLERS * CALLS} calls, "
                   f"{tally.checked} replies checked, {tally.cancelled} cut short, {pauses} pauses")
        print(summary)
        assert not tally.anomalies, f"{summary}\nfirst anomalies: {tally.anomalies[:10]}"
        assert tally.cancelled >= 500 and tally.checked >= 1000, summary
    finally:
        await db.close()
        await admin.close()


async def test_send_ahead_under_cancellation_keeps_every_write_in_order(clean_redis: EmbeddedRedis) -> None:
    """SendAhead's window over the same transport: sends cancelled at random moments (the call
    stays in the window, sent once) and every write lands, the last one per key winning."""
    seed = int(os.environ.get("SWSSD_LATE_REPLY_SEED") or random.randrange(2**32))
    rng = random.Random(seed)
    db = await DBConnector.from_url(clean_redis.url)
    admin = await DBConnector.from_url(clean_redis.url)
    try:
        window = SendAhead(db, 16)
        last: dict[str, str] = {}
        done = asyncio.Event()
        pausing = asyncio.ensure_future(pauser(admin, random.Random(seed + 1), done))
        for n in range(600):
            key = f"w{rng.randrange(KEYS)}"
            last[key] = f"{key}|{n}"
            await cut_short(rng, window.send((SET_SCRIPT, [key], [last[key]])))
        done.set()
        await pausing
        await window.wait()
        got = await db.execute_many([("GET", key) for key in sorted(last)])
        assert got == [last[key] for key in sorted(last)], f"seed {seed}"
    finally:
        await db.close()
        await admin.close()
