"""Issue 34 item 2, black-box: a CONFIG_DB subscriber table across a restart of its redis-server,
which brings notify-keyspace-events back to its default (off). With [daemon]
enable_keyspace_events the daemon turns them on again at the reconnect, before it reads the
table again, and every later change reaches the plugin; without it, /health answers 503 naming
the table, `swssd status` exits 1 and the log says so, never 200 while deaf. The library's
SubscriberStateTable raises a clear error at that reconnect instead of going on deaf."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from daemon_harness import DaemonProcess, health, read_records, wait_until, write_config
from swssd import DBConnector, Select, SubscriberStateTable
from swssd.errors import KeyspaceEventsOffError
from swssd.redis.embedded_redis import EmbeddedRedis, free_port
from test_daemon_ops import swssd
from test_faults import restart_redis

CONFIG_DB = 4


@pytest.fixture
def server() -> Iterator[EmbeddedRedis]:
    """A redis-server of this test's own, restarted by it (its default: keyspace events off)."""
    srv = EmbeddedRedis().start()
    try:
        yield srv
    finally:
        srv.stop()


def start(srv: EmbeddedRedis, tmp_path: Path, enable: bool) -> tuple[DaemonProcess, Path, int]:
    records, port = tmp_path / "records.jsonl", free_port()
    config = write_config(tmp_path, srv, {
        "daemon": {"enable_keyspace_events": enable, "health_interval": 1.0},
        "metrics": {"enabled": True, "port": port},
        "orchs": [{"plugin": "orch_plugins:RecordingOrch", "options": {"record": str(records)},
                   "tables": [{"db": "CONFIG_DB", "table": "KS"}]}],
    })
    daemon = DaemonProcess(config, tmp_path / "log.jsonl")
    daemon.wait_ready()
    return daemon, records, port


def handled(records: Path) -> set[str]:
    return {key for _t, key, op, _f in read_records(records) if op == "SET"}


def test_keyspace_events_turned_on_again_after_a_redis_restart(server: EmbeddedRedis, tmp_path: Path) -> None:
    client = redis.Redis(port=server.port, db=CONFIG_DB)
    daemon, records, port = start(server, tmp_path, enable=True)
    try:
        client.hset("KS|before", "f", "1")
        assert wait_until(lambda: "before" in handled(records), 20)
        restart_redis(server)
        client = redis.Redis(port=server.port, db=CONFIG_DB)
        daemon.wait_for_log("pubsub reconnected", 30)
        for i in range(3):  # after the reconnect, some while it re-reads, some well after
            client.hset(f"KS|after{i}", "f", str(i))
            time.sleep(2.0 * i)
        assert wait_until(lambda: {f"after{i}" for i in range(3)} <= handled(records), 20), (
            handled(records), daemon.log_path.read_text()[-2000:])
        assert "K" in client.config_get("notify-keyspace-events")["notify-keyspace-events"]
        client.hset("KS|later", "f", "x")  # the table's events, not its re-read, deliver this one
        assert wait_until(lambda: "later" in handled(records), 20)
        assert health(port)[0] == 200
    finally:
        assert daemon.stop() == 0


def test_without_the_option_a_deaf_table_is_unhealthy_not_silent(server: EmbeddedRedis, tmp_path: Path) -> None:
    client = redis.Redis(port=server.port, db=CONFIG_DB)
    client.config_set("notify-keyspace-events", "AKE")  # as SONiC's redis.conf; a restart forgets a CONFIG SET
    daemon, records, port = start(server, tmp_path, enable=False)
    try:
        assert wait_until(lambda: health(port)[0] == 200, 20), health(port)
        restart_redis(server)
        # (503 "Redis unreachable" while it restarts, then 503 for the deaf table)
        assert wait_until(lambda: health(port)[0] == 503 and "KS" in health(port)[1], 20), health(port)
        _code, text = health(port)
        assert "KS" in text and "notify-keyspace-events" in text and "enable_keyspace_events" in text, text
        status = swssd("status", "--metrics-url", f"127.0.0.1:{port}")
        assert status.returncode == 1 and "keyspace events off" in status.stdout and "KS" in status.stdout, (
            status.stdout)
        # the line comes from the health watch's next look (every health_interval), maybe after /health's 503
        def deaf_lines() -> list[dict[str, Any]]:
            return [e for e in daemon.logs() if str(e.get("event", "")).startswith("subscriber table deaf")]

        assert wait_until(lambda: bool(deaf_lines()), 20), daemon.log_path.read_text()[-3000:]
        assert deaf_lines()[0]["table"] == "KS"
        # Fixed in Redis: healthy again, and what changed while deaf is read.
        client = redis.Redis(port=server.port, db=CONFIG_DB)
        client.hset("KS|while_deaf", "f", "1")
        client.config_set("notify-keyspace-events", "AKE")
        assert wait_until(lambda: health(port)[0] == 200, 20), health(port)
        assert wait_until(lambda: "while_deaf" in handled(records), 20)
    finally:
        assert daemon.stop() == 0


async def test_the_library_raises_at_a_reconnect_to_a_redis_without_keyspace_events(server: EmbeddedRedis) -> None:
    admin = redis.Redis(port=server.port, db=CONFIG_DB)
    admin.config_set("notify-keyspace-events", "AKE")
    db = await DBConnector.from_url(server.url, db_id=CONFIG_DB, separator="|", name="CONFIG_DB")
    deaf = SubscriberStateTable(db, "KS")
    fixed = SubscriberStateTable(db, "KS2", enable_keyspace_events=True)
    async with Select() as select:
        await select.add(deaf)
        await select.add(fixed)
        assert await deaf.pops() == [] and await fixed.pops() == []
        await asyncio.to_thread(restart_redis, server)
        admin = redis.Redis(port=server.port, db=CONFIG_DB)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 20
        while select.reconnects == 0 and loop.time() < deadline:
            await asyncio.sleep(0.1)
        with pytest.raises(KeyspaceEventsOffError, match=r"KS.*notify-keyspace-events"):
            await asyncio.wait_for(_pop_until_error(deaf), 20)
        await select.remove(deaf)  # stays ready (raising) until Redis is fixed
        await fixed.pops()  # turns them on again, then reads
        admin.hset("KS2|k", "f", "v")
        got = await asyncio.wait_for(_pop_some(select, fixed), 20)
        assert [(t.key, t.op) for t in got] == [("k", "SET")]
    await db.close()
    assert "K" in admin.config_get("notify-keyspace-events")["notify-keyspace-events"]


async def _pop_until_error(table: SubscriberStateTable) -> None:
    while True:
        with contextlib.suppress(redis.exceptions.ConnectionError, OSError):  # Redis still restarting
            await table.pops()
        await asyncio.sleep(0.1)


async def _pop_some(select: Select, table: SubscriberStateTable) -> list[object]:
    while True:
        ready = await select.select(timeout=1)
        if ready is table:
            got = await table.pops()
            if got:
                return got
        await asyncio.sleep(0)
