"""Black-box fault suite: `swssd run` as a process, mirroring an APPL_DB state table (reconcile on)
and a queue table into STATE_DB, while a producer writes a random stream of changes and faults are
injected. After the stream and a final drain the mirror must equal the producers' folded truth:
0 lost, 0 stale, 0 mismatched, 0 crashes (every exit status checked), nothing set aside (no
task blamed for a kill it did not cause: issue 34).

The stream has SWSSD_FAULT_CHANGES changes (default 20,000) per scenario, spread over
SWSSD_FAULT_SECONDS (default 8) so every fault lands mid-stream; the whole file takes about a
minute and a half on two cores:

    SWSSD_FAULT_CHANGES=20000 .venv/bin/python -m pytest -q tests/test_faults.py

Redis runs with AOF here (its own server, not the session's), so it can be restarted mid-stream.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from daemon_harness import DaemonProcess, write_config
from swssd import DBConnector, ProducerStateTable, ProducerTable
from swssd.redis.embedded_redis import EmbeddedRedis

CHANGES = int(os.environ.get("SWSSD_FAULT_CHANGES", "20000"))
#: seconds the stream is spread over, so the faults (within the first ~6 s) hit it mid-stream
STREAM_SECONDS = float(os.environ.get("SWSSD_FAULT_SECONDS", "8"))
STATE, QUEUE = "FAULT_STATE", "FAULT_QUEUE"
KEYS = {STATE: 2000, QUEUE: 1000}
FIELDS = [f"f{i}" for i in range(5)]
CHUNK = 100

Truth = dict[tuple[str, str], dict[str, str]]


@pytest.fixture(scope="module")
def aof_redis() -> Iterator[EmbeddedRedis]:
    """A redis-server of this module with AOF on, so a restart keeps everything acknowledged."""
    server = EmbeddedRedis(extra_args=["--appendonly", "yes", "--appendfsync", "everysec"]).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
async def redis(aof_redis: EmbeddedRedis) -> AsyncIterator[EmbeddedRedis]:
    admin = await DBConnector.from_url(aof_redis.url, db_id=0)
    await admin.redis.flushall()
    await admin.close()
    yield aof_redis


def restart_redis(server: EmbeddedRedis) -> None:
    """Stop redis-server (SIGTERM: it writes its AOF) and start it again on the same port, socket and dir."""
    assert server.process is not None
    server.process.terminate()
    server.process.wait(10)
    if server.process.stderr:
        server.process.stderr.close()
    server.start()


@dataclass
class Run:
    """One scenario: the daemon process(es), the producers, the truth they wrote."""

    tmp: Path
    server: EmbeddedRedis
    fail_once: bool = False
    plugin: str = "orch_plugins:MirrorOrch"
    truth: Truth = field(default_factory=dict)
    daemons: list[DaemonProcess] = field(default_factory=list)
    exits: list[tuple[str, int]] = field(default_factory=list)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    #: held while a daemon is replaced: no other restart (of it or of Redis) meanwhile
    starting: asyncio.Lock = field(default_factory=asyncio.Lock)
    rng: random.Random = field(default_factory=lambda: random.Random(20_000))
    seq: int = 0

    def config(self) -> Path:
        doc = {
            "daemon": {"shutdown_timeout": 10.0, "health_interval": 1.0},
            "retry": {"max_attempts": 1000, "backoff_initial": 0.02, "backoff_max": 0.5, "handler_timeout": 5.0},
            "orchs": [{
                "plugin": self.plugin, "options": {"fail_once": self.fail_once},
                "tables": [{"db": "APPL_DB", "table": STATE, "reconcile": True, "pop_batch_size": 64},
                           {"db": "APPL_DB", "table": QUEUE, "kind": "queue", "pop_batch_size": 64}],
            }],
        }
        return write_config(self.tmp, self.server, doc, f"swssd{len(self.daemons)}.toml")

    @property
    def daemon(self) -> DaemonProcess:
        return self.daemons[-1]

    def start(self) -> DaemonProcess:
        daemon = DaemonProcess(self.config(), self.tmp / f"log{len(self.daemons)}")
        self.daemons.append(daemon)
        daemon.wait_ready(30)
        return daemon

    async def restart(self, sig: int) -> None:
        """Stop the daemon with `sig` (SIGTERM: it must exit 0) and start another one."""
        async with self.starting:
            daemon = self.daemon
            daemon.signal(sig)
            code = await asyncio.to_thread(daemon.wait, 40)
            self.exits.append((signal.Signals(sig).name, code))
            await asyncio.to_thread(self.start)

    async def produce(self, changes: int) -> None:
        """Random sets, deletes and delete-then-sets on both tables, in chunks; a fault may run
        between two chunks (the lock), never in the middle of a write."""
        db = await DBConnector.from_url(self.server.url, db_id=0, name="APPL_DB")
        producers: dict[str, Any] = {STATE: ProducerStateTable(db, STATE, buffered=True),
                                     QUEUE: ProducerTable(db, QUEUE, buffered=True)}
        rng = self.rng
        loop = asyncio.get_running_loop()
        start, chunks = loop.time(), max(1, changes // CHUNK)
        try:
            done = 0
            while done < changes:
                async with self.lock:
                    for _ in range(min(CHUNK, changes - done)):
                        table = rng.choice((STATE, STATE, QUEUE))
                        key = f"k{rng.randrange(KEYS[table])}"
                        done += 1
                        if rng.random() < 0.2:
                            await producers[table].delete(key)
                            self.truth.pop((table, key), None)
                            if rng.random() < 0.5:
                                continue  # a delete; else a delete then a set
                        fvs = [(f, f"v{self._next()}") for f in rng.sample(FIELDS, rng.randint(1, 3))]
                        await producers[table].set(key, fvs)
                        self.truth.setdefault((table, key), {}).update(fvs)
                    for p in producers.values():
                        await p.flush()
                due = start + STREAM_SECONDS * (done // CHUNK) / chunks
                await asyncio.sleep(max(0.0, due - loop.time()))
        finally:
            await db.close()

    def _next(self) -> int:
        self.seq += 1
        return self.seq

    async def mirror(self) -> Truth:
        db = await DBConnector.from_url(self.server.url, db_id=6, separator="|", name="STATE_DB")
        try:
            out: Truth = {}
            async for name in db.redis.scan_iter(match="MIRROR_*", count=1000):
                table, _, key = name[len("MIRROR_"):].partition("|")
                out[(table, key)] = await db.redis.hgetall(name)
            return out
        finally:
            await db.close()

    async def check(self, timeout: float = 60.0) -> None:
        """Wait for the mirror to equal the truth, stop the daemon (exit 0), then compare again."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while await self.mirror() != self.truth and loop.time() < deadline and self.daemon.proc.poll() is None:
            await asyncio.sleep(0.5)
        daemon = self.daemon
        daemon.signal(signal.SIGTERM)
        self.exits.append(("SIGTERM", await asyncio.to_thread(daemon.wait, 40)))
        mirror = await self.mirror()
        lost = [k for k in self.truth if k not in mirror]
        stale = [k for k in self.truth if k in mirror and mirror[k] != self.truth[k]]
        extra = [k for k in mirror if k not in self.truth]
        crashes = [(how, code) for how, code in self.exits if how != "SIGKILL" and code != 0]
        aside = [e for d in self.daemons for e in d.logs()
                 if str(e.get("event", "")).startswith("in-flight tasks set aside")]
        assert aside == [], aside
        logs = "".join(d.log_path.read_text()[-1500:] for d in self.daemons[-2:])
        assert (len(lost), len(stale), len(extra), crashes) == (0, 0, 0, []), (
            f"lost {len(lost)} {lost[:3]}, stale {len(stale)} {stale[:3]}, mismatched {len(extra)} {extra[:3]}, "
            f"crashes {crashes}\n{logs}"
        )


async def scenario(tmp_path: Path, server: EmbeddedRedis, faults: Callable[[Run], Awaitable[None]],
                   fail_once: bool = False) -> Run:
    run = Run(tmp_path, server, fail_once=fail_once)
    await asyncio.to_thread(run.start)
    producing = asyncio.ensure_future(run.produce(CHANGES))
    injecting = asyncio.ensure_future(faults(run))
    await asyncio.gather(producing, injecting)
    await run.check()
    return run


def daemon_clients(clients: str) -> tuple[list[str], list[str]]:
    """(pub/sub, command) connection ids of the daemon: the unix-socket clients."""
    pubsub, normal = [], []
    for line in clients.splitlines():
        fields = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
        if "U" in fields.get("flags", ""):
            (pubsub if "P" in fields["flags"] else normal).append(fields["id"])
    return pubsub, normal


async def every(run: Run, period: float, times: int, fault: Callable[[int], Awaitable[None]]) -> None:
    for i in range(times):
        await asyncio.sleep(period)
        async with run.lock:
            await fault(i)


# -- the faults -----------------------------------------------------------------------------


async def sigkill_restarts(run: Run, times: int = 3, period: float = 1.5) -> None:
    for _ in range(times):
        await asyncio.sleep(period)
        await run.restart(signal.SIGKILL)


async def sigterm_restarts(run: Run, times: int = 2, period: float = 2.0) -> None:
    for _ in range(times):
        await asyncio.sleep(period)
        await run.restart(signal.SIGTERM)


async def connection_kills(run: Run, times: int = 10, period: float = 0.4) -> None:
    admin = await DBConnector.from_url(run.server.url, db_id=0)

    async def kill(i: int) -> None:
        pubsub, normal = daemon_clients(await admin.redis.execute_command("CLIENT", "LIST"))
        for client in pubsub + (normal if i % 2 else []):
            await admin.redis.execute_command("CLIENT", "KILL", "ID", client)
        if i % 3 == 2:
            await admin.redis.execute_command("SCRIPT", "FLUSH")

    try:
        await every(run, period, times, kill)
    finally:
        await admin.close()


async def redis_restarts(run: Run, times: int = 2, period: float = 2.0) -> None:
    async def restart(_: int) -> None:
        async with run.starting:
            await asyncio.to_thread(restart_redis, run.server)

    await every(run, period, times, restart)


# -- the scenarios --------------------------------------------------------------------------


async def test_sigkill_and_restart_several_times_mid_stream(redis: EmbeddedRedis, tmp_path: Path) -> None:
    run = await scenario(tmp_path, redis, sigkill_restarts)
    assert [how for how, _ in run.exits].count("SIGKILL") == 3


async def test_sigkill_four_times_1_3_s_apart_sets_nothing_aside(redis: EmbeddedRedis, tmp_path: Path) -> None:
    """Issue 34: what a restart loop does. Every kill lands while tasks are taken over, popped and
    pending; none of them caused it, so none is set aside (the old guard blamed thousands)."""
    run = await scenario(tmp_path, redis, lambda r: sigkill_restarts(r, 4, 1.3))
    assert [how for how, _ in run.exits].count("SIGKILL") == 4
    admin = await DBConnector.from_url(redis.url, db_id=0)
    try:
        assert [k async for k in admin.redis.scan_iter(match="_SWSSD_DEAD:*")] == []
    finally:
        await admin.close()


async def test_a_poison_task_is_set_aside_by_the_third_restart_and_nothing_else(
    redis: EmbeddedRedis, tmp_path: Path
) -> None:
    """A handler that ends the process (os._exit(1)) for one task among valid ones, in the state
    table (reconcile on) and the queue table: each start dies on it until the one after three such
    ends sets it aside (dead-lettered, kept on the table's dead-letter list with the reason); every
    other task is handled and the daemon serves on."""
    run = Run(tmp_path, redis, plugin="orch_plugins:ExitingMirrorOrch")
    first = DaemonProcess(run.config(), tmp_path / "log0")
    run.daemons.append(first)
    first.wait_ready(30)
    db = await DBConnector.from_url(redis.url, db_id=0, name="APPL_DB")
    try:
        state, queue = ProducerStateTable(db, STATE), ProducerTable(db, QUEUE)
        for i in range(300):
            if i == 150:
                await state.set("poison1", [("f0", "bad")])
            table, producer = (STATE, state) if i % 3 else (QUEUE, queue)
            await producer.set(f"k{i}", [("f0", f"v{i}")])
            run.truth[(table, f"k{i}")] = {"f0": f"v{i}"}
    finally:
        await db.close()
    assert await asyncio.to_thread(first.wait, 30) == 1
    for start in (1, 2):  # the poison taken over again, and in a handler again when each ends
        again = DaemonProcess(run.config(), tmp_path / f"log{start}")
        run.daemons.append(again)
        assert await asyncio.to_thread(again.wait, 30) == 1, again.log_path.read_text()[-2000:]
    fourth = DaemonProcess(run.config(), tmp_path / "log3")
    run.daemons.append(fourth)
    await asyncio.to_thread(fourth.wait_ready, 30)
    (aside,) = fourth.events("in-flight tasks set aside: in a handler when each of the last 3 runs ended "
                             "abnormally (crashed, killed or stalled): it may be what ends the daemon")
    assert aside["keys"] == ["poison1"] and aside["tasks"] == 1 and aside["table"] == STATE
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30
    while await run.mirror() != run.truth and loop.time() < deadline:
        await asyncio.sleep(0.2)
    assert fourth.proc.poll() is None  # serving: the reconciled poison was set aside too
    assert await run.mirror() == run.truth
    admin = await DBConnector.from_url(redis.url, db_id=0)
    try:
        dead = [json.loads(r) for r in await admin.redis.lrange(f"_SWSSD_DEAD:swssd:{STATE}", 0, -1)]
    finally:
        await admin.close()
    assert [(d["key"], d["op"]) for d in dead] == [("poison1", "SET")] and "in a handler" in dead[0]["reason"]
    fourth.signal(signal.SIGTERM)
    assert await asyncio.to_thread(fourth.wait, 30) == 0


async def test_sigterm_while_a_handler_fails_once_per_key(redis: EmbeddedRedis, tmp_path: Path) -> None:
    run = await scenario(tmp_path, redis, sigterm_restarts, fail_once=True)
    assert [code for how, code in run.exits if how == "SIGTERM"] == [0, 0, 0]


async def test_connection_kills_and_script_flush(redis: EmbeddedRedis, tmp_path: Path) -> None:
    run = await scenario(tmp_path, redis, connection_kills)
    assert run.daemon.events("pubsub reconnected") or run.daemons[0].events("pubsub reconnected")


async def test_redis_restart_with_aof(redis: EmbeddedRedis, tmp_path: Path) -> None:
    await scenario(tmp_path, redis, redis_restarts)


async def test_all_faults_together(redis: EmbeddedRedis, tmp_path: Path) -> None:
    async def together(run: Run) -> None:
        await asyncio.gather(
            sigkill_restarts(run, 2, 2.0), sigterm_restarts(run, 1, 3.0), connection_kills(run, 8, 0.5),
            redis_restarts(run, 1, 2.5),
        )

    await scenario(tmp_path, redis, together, fail_once=True)
