"""The daemon consuming CONFIG_DB/STATE_DB tables (kind `subscriber`, the default there),
notification channels (kind `notification`), tables of a namespace, and the config rules around
them (issue 8 item 5)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from daemon_harness import DaemonProcess, read_records, write_config
from swssd import DBConnector, KeyOpFieldsValues, Orch
from swssd.errors import ConfigError
from swssd.orch.config_file import config_from_dict
from swssd.redis.embedded_redis import EmbeddedRedis
from test_daemon_core import GatedOrch, eventually, make_config, start_daemon  # noqa: F401 - fixture

MODULE = __name__


class TimingOrch(Orch):
    """Records each task with the loop time it reached the handler."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[float, str, KeyOpFieldsValues]] = []

    async def handle(self, table: str, task: KeyOpFieldsValues) -> None:
        self.seen.append((time.monotonic(), table, task))


@pytest.fixture
def db_config(clean_redis: EmbeddedRedis, tmp_path: Path) -> Path:
    return clean_redis.write_database_config(tmp_path / "database_config.json")


@pytest.fixture
async def cfg_db(clean_redis: EmbeddedRedis) -> Any:
    conn = await DBConnector.from_url(clean_redis.url, db_id=4, separator="|", name="CONFIG_DB")
    await conn.redis.config_set("notify-keyspace-events", "AKE")
    yield conn
    await conn.close()


async def test_config_db_table_is_a_subscriber_by_default_and_changes_arrive_in_milliseconds(
    cfg_db: DBConnector, db_config: Path, start_daemon: Any
) -> None:
    await cfg_db.redis.hset("PORT|Ethernet0", mapping={"speed": "100000", "lanes@": "0,1"})
    config = make_config(db_config, [
        {"plugin": f"{MODULE}:TimingOrch", "tables": [{"db": "CONFIG_DB", "table": "PORT"}]}
    ])
    assert config.orchs[0].tables[0].resolved_kind == "subscriber"
    daemon = await start_daemon(config)
    orch: TimingOrch = daemon.runtimes[0].orch  # type: ignore[assignment]
    await eventually(lambda: len(orch.seen) == 1)
    assert orch.seen[0][1:] == ("PORT", KeyOpFieldsValues("Ethernet0", "SET", [("speed", "100000"), ("lanes", "0,1")]))

    latencies = []
    for i in range(20):
        sent = time.monotonic()
        await cfg_db.redis.hset("PORT|Ethernet4", "mtu", str(9000 + i))
        await eventually(lambda i=i: len(orch.seen) == 2 + i)
        latencies.append(orch.seen[-1][0] - sent)
        assert orch.seen[-1][2] == KeyOpFieldsValues("Ethernet4", "SET", [("mtu", str(9000 + i))])
    latencies.sort()
    print(f"CONFIG_DB HSET -> handler: median {latencies[10] * 1000:.1f} ms, max {latencies[-1] * 1000:.1f} ms")
    assert latencies[10] < 0.5

    await cfg_db.redis.delete("PORT|Ethernet4")
    await eventually(lambda: orch.seen[-1][2] == KeyOpFieldsValues("Ethernet4", "DEL", []))


async def test_pending_sets_of_a_subscriber_table_replace_rather_than_merge(
    cfg_db: DBConnector, db_config: Path, start_daemon: Any
) -> None:
    """A field removed by HDEL while the entry waits must not come back through a merge."""
    config = make_config(db_config, [
        {"plugin": f"{MODULE}:GatedOrch", "tables": [{"db": "CONFIG_DB", "table": "PORT"}]}
    ])
    daemon = await start_daemon(config)
    orch: GatedOrch = daemon.runtimes[0].orch  # type: ignore[assignment]
    worker = daemon.workers[0]
    await cfg_db.redis.hset("PORT|a", mapping={"x": "1", "y": "2"})
    await cfg_db.redis.hset("PORT|b", "z", "1")
    await eventually(lambda: worker.pending_count == 2)  # 'a' is held in the gated handler... or pending
    await cfg_db.redis.hdel("PORT|a", "y")
    await cfg_db.redis.hset("PORT|a", "w", "3")
    await asyncio.sleep(0.3)
    orch.gate.set()
    await eventually(lambda: any(t.key == "b" for _, t in orch.handled))
    await eventually(lambda: not worker.pending_count)
    last_a = [t for _, t in orch.handled if t.key == "a"][-1]
    assert dict(last_a.fvs) == {"x": "1", "w": "3"}


async def test_bad_entries_are_logged_and_skipped(
    cfg_db: DBConnector, db_config: Path, start_daemon: Any
) -> None:
    await cfg_db.redis.set("PORT|bad", "not a hash")
    await cfg_db.redis.hset("PORT|good", "a", "1")
    config = make_config(db_config, [
        {"plugin": f"{MODULE}:TimingOrch", "tables": [{"db": "CONFIG_DB", "table": "PORT"}]}
    ])
    with capture_logs() as logs:
        daemon = await start_daemon(config)
        orch: TimingOrch = daemon.runtimes[0].orch  # type: ignore[assignment]
        await eventually(lambda: len(orch.seen) == 1)
        await cfg_db.redis.rpush("PORT|alsobad", "x")
        await cfg_db.redis.hset("PORT", "no", "separator")  # the bare table name is no entry
        await cfg_db.redis.hset("PORTX", "other", "table")
        await cfg_db.redis.hset("PORT|good2", "a", "2")
        await eventually(lambda: len(orch.seen) == 2)
    assert [t.key for _, _, t in orch.seen] == ["good", "good2"]
    assert daemon.workers[0].consumer.bad_entries == 2
    assert sum("not readable as a hash" in e["event"] for e in logs) == 2


async def test_notification_channel_reaches_the_orch_in_order_unmerged(
    db: DBConnector, db_config: Path, start_daemon: Any
) -> None:
    """Notifications wait while the handler is held, then run in arrival order, none merged,
    whatever their data (the pending map's key)."""
    from swssd.channels.notification_producer import NotificationProducer

    config = make_config(db_config, [
        {"plugin": f"{MODULE}:GatedOrch", "tables": [{"db": "APPL_DB", "table": "NTF_CH", "kind": "notification"}]}
    ])
    daemon = await start_daemon(config)
    orch: GatedOrch = daemon.runtimes[0].orch  # type: ignore[assignment]
    producer = NotificationProducer(db, "NTF_CH")
    sent = [("port_state_change", f"oid:0x{i % 3}", [("state", str(i))]) for i in range(30)]
    sent.append(("flush", "", []))
    for op, data, fvs in sent:
        assert await producer.send(op, data, fvs) == 1
    await db.redis.publish("NTF_CH", "not json")  # malformed: counted, the rest still arrives
    assert await producer.send("last", "x", []) == 1
    await eventually(lambda: daemon.workers[0].pending_count == 32)
    orch.gate.set()
    await eventually(lambda: len(orch.handled) == 32)
    expected = [KeyOpFieldsValues(d, o, f) for o, d, f in [*sent, ("last", "x", [])]]
    assert [t for _, t in orch.handled] == expected
    assert daemon.workers[0].consumer.malformed == 1


def test_reconcile_does_not_apply_to_subscriber_tables(db_config: Path) -> None:
    with pytest.raises(ConfigError) as err:
        make_config(db_config, [
            {"plugin": "x:Y", "tables": [{"db": "CONFIG_DB", "table": "PORT", "reconcile": True}]}
        ])
    assert "orchs.0.tables.0" in str(err.value) and "reconcile" in str(err.value)


def test_subscriber_tables_may_be_shared_but_state_tables_may_not(db_config: Path) -> None:
    shared = [{"plugin": "x:Y", "tables": [{"db": "CONFIG_DB", "table": "PORT"}]},
              {"plugin": "x:Z", "tables": [{"db": "CONFIG_DB", "table": "PORT"}]}]
    make_config(db_config, shared)
    with pytest.raises(ConfigError, match="one table has one consumer"):
        make_config(db_config, [{"plugin": "x:Y", "tables": [{"table": "T"}]},
                                {"plugin": "x:Z", "tables": [{"table": "T"}]}])


async def test_state_kind_on_config_db_gets_a_warning_naming_the_fix(
    cfg_db: DBConnector, db_config: Path, start_daemon: Any
) -> None:
    config = make_config(db_config, [
        {"plugin": f"{MODULE}:TimingOrch", "tables": [{"db": "CONFIG_DB", "table": "PORT", "kind": "state"}]}
    ])
    with capture_logs() as logs:
        await start_daemon(config)
    (line,) = [e["event"] for e in logs if "plain hash writes" in e["event"]]
    assert 'kind = "subscriber"' in line and "CONFIG_DB PORT" in line


async def test_state_db_stays_a_key_set_table_by_default_with_the_warning(
    db_config: Path, start_daemon: Any
) -> None:
    config = make_config(db_config, [
        {"plugin": f"{MODULE}:TimingOrch", "tables": [{"db": "STATE_DB", "table": "X"}]}
    ])
    assert config.orchs[0].tables[0].kind == "state"
    with capture_logs() as logs:
        await start_daemon(config)
    (line,) = [e["event"] for e in logs if "plain hash writes" in e["event"]]
    assert "by default" in line and "STATE_DB X" in line and 'kind = "subscriber"' in line


def test_keyspace_events_off_is_reported_by_the_daemon(clean_redis: EmbeddedRedis, tmp_path: Path) -> None:
    import redis

    r = redis.Redis(port=clean_redis.port)
    r.config_set("notify-keyspace-events", "")
    try:
        config = write_config(tmp_path, clean_redis, {"orchs": [{
            "plugin": "orch_plugins:RecordingOrch", "options": {"record": str(tmp_path / "rec.jsonl")},
            "tables": [{"db": "CONFIG_DB", "table": "PORT"}],
        }]})
        daemon = DaemonProcess(config, tmp_path / "log.jsonl")
        try:
            daemon.wait_ready()
            lines = [e for e in daemon.logs() if "notify-keyspace-events" in str(e.get("event"))]
            assert lines and "AKE" in lines[0]["event"]
        finally:
            assert daemon.stop() == 0
    finally:
        r.config_set("notify-keyspace-events", "AKE")


def test_restarted_daemon_gets_the_current_entries(clean_redis: EmbeddedRedis, tmp_path: Path) -> None:
    import redis

    r = redis.Redis(port=clean_redis.port, db=4, decode_responses=True)
    r.config_set("notify-keyspace-events", "AKE")
    record = tmp_path / "rec.jsonl"
    config = write_config(tmp_path, clean_redis, {"orchs": [{
        "plugin": "orch_plugins:RecordingOrch", "options": {"record": str(record)},
        "tables": [{"db": "CONFIG_DB", "table": "PORT"}],
    }]})
    r.hset("PORT|a", mapping={"f": "1"})
    daemon = DaemonProcess(config, tmp_path / "log.jsonl")
    daemon.wait_ready()
    r.hset("PORT|b", mapping={"f": "2"})
    assert _wait_records(record, 2)
    assert daemon.stop() == 0
    # changed while the daemon was down
    r.delete("PORT|a")
    r.hset("PORT|b", mapping={"f": "3"})
    r.hset("PORT|c", mapping={"f": "4"})
    record.unlink()
    daemon = DaemonProcess(config, tmp_path / "log2.jsonl")
    daemon.wait_ready()
    assert _wait_records(record, 2)
    time.sleep(0.3)
    got = sorted(read_records(record))
    assert got == [("PORT", "b", "SET", [("f", "3")]), ("PORT", "c", "SET", [("f", "4")])]
    assert daemon.stop() == 0


def _wait_records(path: Path, count: int, timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if len(read_records(path)) >= count:
            return True
        time.sleep(0.05)
    return False


# -- namespaces ------------------------------------------------------------------------------


def _global_config(tmp_path: Path, servers: dict[str, EmbeddedRedis]) -> Path:
    """database_global.json in SONiC's layout: the host and asic0 on their own servers."""
    root = tmp_path / "run"
    includes = []
    for ns, server in servers.items():
        sub = "redis" if not ns else f"redis{ns.removeprefix('asic')}"
        path = server.write_database_config(_mkdir(root / sub / "sonic-db") / "database_config.json")
        includes.append({"include": f"../../{sub}/sonic-db/{path.name}", **({"namespace": ns} if ns else {})})
    target = root / "redis" / "sonic-db" / "database_global.json"
    target.write_text(json.dumps({"INCLUDES": includes, "VERSION": "1.0"}))
    return target


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="module")
def asic0_server() -> Any:
    with EmbeddedRedis() as server:
        yield server


async def test_tables_of_two_namespaces_in_one_daemon(
    clean_redis: EmbeddedRedis, asic0_server: EmbeddedRedis, tmp_path: Path, start_daemon: Any
) -> None:
    global_path = _global_config(tmp_path, {"": clean_redis, "asic0": asic0_server})
    config = config_from_dict({
        "redis": {"database_config": str(clean_redis.write_database_config(tmp_path / "host.json")),
                  "database_global_config": str(global_path)},
        "orchs": [{"plugin": f"{MODULE}:TimingOrch", "tables": [
            {"db": "CONFIG_DB", "table": "PORT"},
            {"db": "CONFIG_DB", "namespace": "asic0", "table": "PORT_A"},
        ]}],
    })
    import redis.asyncio as aioredis

    host = aioredis.Redis(port=clean_redis.port, db=4)
    asic = aioredis.Redis(port=asic0_server.port, db=4)
    for r in (host, asic):
        await r.config_set("notify-keyspace-events", "AKE")
        await r.flushdb()
    daemon = await start_daemon(config)
    orch: TimingOrch = daemon.runtimes[0].orch  # type: ignore[assignment]
    assert orch.connector("CONFIG_DB", "asic0").namespace == "asic0"
    await host.hset("PORT|h", "f", "1")
    await asic.hset("PORT_A|a", "f", "2")
    await host.hset("PORT_A|wrong", "f", "3")  # the host's PORT_A is not consumed
    await eventually(lambda: len(orch.seen) >= 2)
    await asyncio.sleep(0.3)
    assert sorted((t, task.key) for _, t, task in orch.seen) == [("PORT", "h"), ("PORT_A", "a")]
    assert {w.db_name for w in daemon.workers} == {"CONFIG_DB", "asic0/CONFIG_DB"}
    await host.aclose()
    await asic.aclose()


def test_unknown_namespace_is_a_config_error_at_start(clean_redis: EmbeddedRedis, tmp_path: Path) -> None:
    global_path = _global_config(tmp_path, {"": clean_redis})
    config = write_config(tmp_path, clean_redis, {
        "orchs": [{"plugin": "orch_plugins:RecordingOrch", "options": {"record": str(tmp_path / "r")},
                   "tables": [{"db": "CONFIG_DB", "namespace": "asic7", "table": "PORT"}]}],
    })
    setting = f"database_global_config = {json.dumps(str(global_path))}"
    text = config.read_text().replace("[redis]\n", f"[redis]\n{setting}\n")
    config.write_text(text)
    daemon = DaemonProcess(config, tmp_path / "log.jsonl")
    assert daemon.wait(30) == 2
    assert "asic7" in (tmp_path / "log.jsonl").read_text()
