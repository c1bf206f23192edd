"""The daemon in-process (so its counters and plugins can be looked at) against the test redis-server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from swssd import DBConnector, KeyOpFieldsValues, Orch, ProducerStateTable, Retry
from swssd.orch.config_file import config_from_dict
from swssd.orch.daemon import Daemon
from swssd.orch.reliable_pop import PREFETCH_DEPTH
from swssd.redis.embedded_redis import EmbeddedRedis, free_port

MODULE = __name__


class GatedOrch(Orch):
    """Handles a task only once the test opens `gate` (per table, when `gated` lists tables)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.handled: list[tuple[str, KeyOpFieldsValues]] = []

    async def handle(self, table: str, task: KeyOpFieldsValues) -> None:
        if table in self.options.get("gated", [table]):
            await self.gate.wait()
        self.handled.append((table, task))


class BatchOutcomeOrch(Orch):
    """handle_batch with a per-task outcome: keys r* wait (Retry), x* fail, the rest are done."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[list[KeyOpFieldsValues]] = []

    async def handle_batch(self, table: str, tasks: list[KeyOpFieldsValues]) -> list[BaseException | None]:
        self.batches.append(tasks)
        out: list[BaseException | None] = []
        for t in tasks:
            if t.key.startswith("r"):
                out.append(Retry("later"))
            elif t.key.startswith("x"):
                out.append(RuntimeError("bad " + t.key))
            else:
                out.append(None)
        return out


class DependencyOrch(Orch):
    """A route waits for its port, as orchagent's RouteOrch waits for PortsOrch."""

    def __init__(self) -> None:
        super().__init__()
        self.ports: set[str] = set()
        self.routes: dict[str, str] = {}
        self.ready_flag = False

    async def handle(self, table: str, task: KeyOpFieldsValues) -> None:
        if table == "DEP_PORTS":
            self.ports.add(task.key)
            return
        fields = dict(task.fvs)
        if table == "DEP_FLAG" or fields.get("needs") == "flag":
            if not self.ready_flag:
                raise Retry("flag not set")
            self.routes[task.key] = "flag"
            return
        if fields["port"] not in self.ports:
            raise Retry(f"port {fields['port']} missing")
        self.routes[task.key] = fields["port"]


def table(name: str, **kw: Any) -> dict[str, Any]:
    return {"db": "APPL_DB", "table": name, **kw}


def make_config(db_config: Path, orchs: list[dict[str, Any]], **sections: Any) -> Any:
    return config_from_dict({"redis": {"database_config": str(db_config)}, "orchs": orchs, **sections})


@pytest.fixture
def db_config(clean_redis: EmbeddedRedis, tmp_path: Path) -> Path:
    return clean_redis.write_database_config(tmp_path / "database_config.json")


@pytest.fixture
async def start_daemon() -> AsyncIterator[Callable[[Any], Awaitable[Daemon]]]:
    """Start a Daemon in this loop; it is stopped (and must exit 0) at the end of the test."""
    running: list[tuple[Daemon, asyncio.Task[int]]] = []

    async def start(config: Any) -> Daemon:
        daemon = Daemon(config, handle_signals=False)
        task = asyncio.ensure_future(daemon.run())
        running.append((daemon, task))
        ready = asyncio.ensure_future(daemon.ready.wait())
        await asyncio.wait((task, ready), timeout=20, return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            task.result()
        assert daemon.ready.is_set()
        return daemon

    yield start
    for daemon, task in running:
        daemon.stop()
        assert await asyncio.wait_for(task, 30) == 0


async def eventually(check: Callable[[], bool], timeout: float = 15.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not check():
        assert loop.time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.02)


async def test_backpressure_stops_popping_at_the_limit_and_resumes(
    db: DBConnector, db_config: Path, start_daemon: Any
) -> None:
    config = make_config(db_config, [
        {"plugin": f"{MODULE}:GatedOrch", "tables": [table("BP", pop_batch_size=32, pending_limit=100)]}
    ])
    daemon = await start_daemon(config)
    orch: GatedOrch = daemon.runtimes[0].orch  # type: ignore[assignment]
    worker = daemon.workers[0]
    producer = ProducerStateTable(db, "BP", buffered=True)
    for i in range(1000):
        await producer.set(f"k{i}", [("f", str(i))])
    await producer.flush()

    await eventually(lambda: worker.paused and daemon.select.paused(worker.consumer))
    await asyncio.sleep(0.2)  # a pop prefetched before the pause may still land
    waiting = await db.redis.scard("BP_KEY_SET")
    assert worker.pending_count <= 100 + 32
    # In memory at most: the limit, the pop that crossed it, and the prefetched pops.
    assert waiting >= 1000 - 100 - (1 + PREFETCH_DEPTH) * 32  # the rest waits in Redis
    await asyncio.sleep(0.3)
    assert await db.redis.scard("BP_KEY_SET") == waiting  # nothing popped while paused

    orch.gate.set()
    await eventually(lambda: len(orch.handled) == 1000)
    assert not worker.paused and not daemon.select.paused(worker.consumer)
    assert {t.key for _, t in orch.handled} == {f"k{i}" for i in range(1000)}
    assert worker.stats.popped == worker.stats.handled == 1000


async def test_a_slow_handler_does_not_stall_other_tables(db: DBConnector, db_config: Path, start_daemon: Any) -> None:
    config = make_config(
        db_config,
        [{"plugin": f"{MODULE}:GatedOrch", "options": {"gated": ["SLOW"]}, "tables": [table("SLOW"), table("FAST")]}],
        daemon={"shutdown_timeout": 0.5},
    )
    daemon = await start_daemon(config)
    orch: GatedOrch = daemon.runtimes[0].orch  # type: ignore[assignment]
    await ProducerStateTable(db, "SLOW").set("stuck", [("f", "v")])
    slow = next(w for w in daemon.workers if w.table == "SLOW")
    await eventually(lambda: slow.in_flight == 1)
    fast = ProducerStateTable(db, "FAST")
    for i in range(200):
        await fast.set(f"k{i}", [("f", "v")])
    await eventually(lambda: len(orch.handled) == 200)
    assert slow.in_flight == 1 and all(t == "FAST" for t, _ in orch.handled)


async def test_handle_batch_outcomes_per_task(db: DBConnector, db_config: Path, start_daemon: Any) -> None:
    config = make_config(db_config, [{
        "plugin": f"{MODULE}:BatchOutcomeOrch", "tables": [table("BATCH")],
        "retry": {"max_attempts": 2, "backoff_initial": 0.01, "backoff_max": 0.02, "retry_interval": 0.05},
    }])
    daemon = await start_daemon(config)
    orch: BatchOutcomeOrch = daemon.runtimes[0].orch  # type: ignore[assignment]
    dead: list[tuple[str, str]] = []
    daemon.dead_letter_hooks.append(lambda w, task, reason: dead.append((task.key, reason)))
    producer = ProducerStateTable(db, "BATCH")
    await producer.set("ok", [("f", "1")])
    await producer.set("r1", [("f", "1")])
    await producer.set("x1", [("f", "1")])
    worker = daemon.workers[0]
    await eventually(lambda: worker.stats.dead_lettered == 1 and worker.stats.retried >= 3)
    assert dead == [("x1", "RuntimeError: bad x1")]
    assert worker.stats.handled == 1 and worker.stats.failed == 2
    assert worker.pending.tasks() == [KeyOpFieldsValues("r1", "SET", [("f", "1")])]
    for batch in orch.batches:
        assert len({t.key for t in batch}) == len(batch)  # at most one task per key in a batch


async def test_a_batch_gets_the_del_then_the_set_of_one_key(
    db: DBConnector, db_config: Path, start_daemon: Any
) -> None:
    producer = ProducerStateTable(db, "BATCH2", buffered=True)
    await producer.set("k", [("a", "1")])
    await producer.flush()
    config = make_config(db_config, [{"plugin": f"{MODULE}:BatchOutcomeOrch", "tables": [table("BATCH2")]}])
    daemon = await start_daemon(config)
    orch: BatchOutcomeOrch = daemon.runtimes[0].orch  # type: ignore[assignment]
    await eventually(lambda: daemon.workers[0].stats.handled == 1)
    # Deleted and set again in one pipeline, before the next pop: reported as DEL then SET.
    await producer.delete("k")
    await producer.set("k", [("b", "2")])
    await producer.flush()
    await eventually(lambda: daemon.workers[0].stats.handled == 3)
    tasks = [t for batch in orch.batches for t in batch]
    assert tasks == [
        KeyOpFieldsValues("k", "SET", [("a", "1")]),
        KeyOpFieldsValues("k", "DEL", []),
        KeyOpFieldsValues("k", "SET", [("b", "2")]),
    ]


async def test_retry_runs_again_as_soon_as_new_data_arrives_for_the_orch(
    db: DBConnector, db_config: Path, start_daemon: Any
) -> None:
    config = make_config(db_config, [{
        "plugin": f"{MODULE}:DependencyOrch", "tables": [table("DEP_ROUTES"), table("DEP_PORTS")],
        "retry": {"retry_interval": 60.0},
    }])
    daemon = await start_daemon(config)
    orch: DependencyOrch = daemon.runtimes[0].orch  # type: ignore[assignment]
    await ProducerStateTable(db, "DEP_ROUTES").set("10.0.0.0/24", [("port", "Ethernet0")])
    routes = next(w for w in daemon.workers if w.table == "DEP_ROUTES")
    await eventually(lambda: routes.stats.retried == 1)
    assert orch.routes == {}
    await ProducerStateTable(db, "DEP_PORTS").set("Ethernet0", [("mtu", "9100")])
    await eventually(lambda: orch.routes == {"10.0.0.0/24": "Ethernet0"}, timeout=10)  # not 60 s
    assert routes.pending_count == 0


async def test_retry_interval_runs_waiting_tasks_without_new_data(
    db: DBConnector, db_config: Path, start_daemon: Any
) -> None:
    config = make_config(db_config, [{
        "plugin": f"{MODULE}:DependencyOrch", "tables": [table("DEP_FLAG")], "retry": {"retry_interval": 0.1},
    }])
    daemon = await start_daemon(config)
    orch: DependencyOrch = daemon.runtimes[0].orch  # type: ignore[assignment]
    await ProducerStateTable(db, "DEP_FLAG").set("r", [("needs", "flag")])
    worker = daemon.workers[0]
    await eventually(lambda: worker.stats.retried >= 2)  # re-run by the interval alone
    orch.ready_flag = True
    await eventually(lambda: orch.routes == {"r": "flag"})
    assert worker.stats.dead_lettered == 0


async def test_redis_outage_is_reported_and_consumption_resumes(tmp_path: Path) -> None:
    port = free_port()
    server = EmbeddedRedis(port=port).start()
    config = config_from_dict({
        "redis": {"url": f"redis://127.0.0.1:{port}"},
        "daemon": {"health_interval": 0.2},
        "orchs": [{"plugin": f"{MODULE}:GatedOrch", "options": {"gated": []}, "tables": [table("OUT")]}],
    })
    daemon = Daemon(config, handle_signals=False)
    with capture_logs() as logs:
        run = asyncio.ensure_future(daemon.run())
        try:
            await asyncio.wait_for(daemon.ready.wait(), 20)
            orch: GatedOrch = daemon.runtimes[0].orch  # type: ignore[assignment]
            db = await DBConnector.from_url(server.url)
            await ProducerStateTable(db, "OUT").set("before", [("f", "v")])
            await eventually(lambda: len(orch.handled) == 1)
            await db.close()
            server.stop()
            await eventually(lambda: any(e["event"] == "Redis unreachable; still retrying" for e in logs))
            assert not daemon.redis_up and not run.done()
            server = EmbeddedRedis(port=port).start()
            db = await DBConnector.from_url(server.url)
            await ProducerStateTable(db, "OUT").set("after", [("f", "v")])
            await eventually(lambda: len(orch.handled) == 2, timeout=20)
            await db.close()
            await eventually(lambda: daemon.redis_up)
        finally:
            daemon.stop()
            assert await asyncio.wait_for(run, 30) == 0
            server.stop()
    assert [t.key for _, t in orch.handled] == ["before", "after"]


async def test_stop_while_waiting_for_redis_at_start(tmp_path: Path) -> None:
    config = config_from_dict({
        "redis": {"url": f"redis://127.0.0.1:{free_port()}"},
        "orchs": [{"plugin": f"{MODULE}:GatedOrch", "tables": [table("NEVER")]}],
    })
    daemon = Daemon(config, handle_signals=False)
    with capture_logs() as logs:
        run = asyncio.ensure_future(daemon.run())
        await eventually(lambda: any(e["event"] == "waiting for Redis" for e in logs))
        daemon.stop()
        assert await asyncio.wait_for(run, 10) == 0
    assert not daemon.ready.is_set()


async def test_reconcile_of_a_large_table_stays_within_pending_limit(
    db: DBConnector, db_config: Path, start_daemon: Any
) -> None:
    """Reconcile reads a SCAN step at a time and waits for the worker past pending_limit: memory
    stays bounded, every entry is handled, and another table is popped meanwhile."""
    entries = 3000
    for start in range(0, entries, 500):
        await db.execute_many([("HSET", f"BIG:k{i:05d}", "f", str(i)) for i in range(start, start + 500)])
    config = make_config(db_config, [{"plugin": f"{MODULE}:GatedOrch", "options": {"gated": ["BIG"]},
                                      "tables": [table("BIG", reconcile=True, pending_limit=100), table("SMALL")]}])
    daemon = await start_daemon(config)
    orch: GatedOrch = daemon.runtimes[0].orch  # type: ignore[assignment]
    big = daemon.workers[0]
    await ProducerStateTable(db, "SMALL").set("s", [("f", "v")])
    await eventually(lambda: ("SMALL", KeyOpFieldsValues("s", "SET", [("f", "v")])) in orch.handled)
    await asyncio.sleep(0.3)
    # held by the gate: reconcile stopped at the limit (plus the one SCAN step it was adding)
    assert 100 <= big.pending_count <= 100 + 1024, big.pending_count
    orch.gate.set()
    peak = 0
    for _ in range(2000):
        peak = max(peak, big.pending_count)
        if sum(t == "BIG" for t, _ in orch.handled) == entries:
            break
        await asyncio.sleep(0.005)
    assert sum(t == "BIG" for t, _ in orch.handled) == entries
    assert peak <= 100 + 1024, peak
    assert {task.key for t, task in orch.handled if t == "BIG"} == {f"k{i:05d}" for i in range(entries)}


async def test_health_sees_a_table_worker_that_stopped(db: DBConnector, db_config: Path, start_daemon: Any) -> None:
    """A worker whose task ended (here: cancelled, which is no crash, so the daemon goes on) makes
    /health unhealthy and the ready gauge 0, naming the table; the others keep running."""
    from prometheus_client import CollectorRegistry, generate_latest

    from swssd.ops.metrics import DaemonCollector, health

    config = make_config(db_config, [{"plugin": f"{MODULE}:GatedOrch", "options": {"gated": []},
                                      "tables": [table("HEALTHY"), table("DOOMED")]}])
    daemon = await start_daemon(config)
    await eventually(lambda: daemon.serving)
    assert health(daemon) == (True, "OK")
    doomed = daemon.workers[1]
    assert doomed._task is not None
    doomed._task.cancel()
    await eventually(lambda: not doomed.alive)
    assert health(daemon) == (False, "table worker stopped: DOOMED")
    registry = CollectorRegistry(auto_describe=False)
    registry.register(DaemonCollector(daemon, daemon.loop_probe))
    assert "swssd_ready 0.0" in generate_latest(registry).decode()
