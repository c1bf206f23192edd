"""The daemon's `zmq` table kind, black-box: `swssd run` binds one ZmqServer per endpoint, hands
what a ZmqProducerStateTable sends to the Orch (in order per key), persists it when asked, counts
malformed and unrouted messages in its metrics, and refuses an endpoint it cannot bind with one line.
"""

from __future__ import annotations

import asyncio
import random
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from daemon_harness import DaemonProcess, read_records, wait_until, write_config
from swssd import DBConnector, Table
from swssd.capture.format import KINDS
from swssd.channels.zmq import ZmqClient, ZmqProducerStateTable
from swssd.channels.zmq.serializer import serialize
from swssd.errors import ConfigError
from swssd.fields import KeyOpFieldsValues
from swssd.orch.config_file import config_from_dict
from swssd.redis.embedded_redis import EmbeddedRedis

KEYS = [f"10.{i}.0.0/16" for i in range(40)] + ["fe80::1:x|y", "é"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def metric(port: int, name: str) -> float | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
            text = resp.read().decode()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            return float(line.rsplit(" ", 1)[1])
    return None


async def send_changes(producer: ZmqProducerStateTable, rng: random.Random, count: int) -> tuple[dict, dict]:
    """Random sets (1-4 of 4 fields, values with ':' '|' and non-ASCII) and deletes; the state a
    handler sees (SETs merge) and the one C++ persistence leaves (a SET replaces the entry)."""
    merged: dict[str, dict[str, str]] = {}
    replaced: dict[str, dict[str, str]] = {}
    for i in range(count):
        key = rng.choice(KEYS)
        if rng.random() < 0.2:
            await producer.delete(key)
            merged.pop(key, None)
            replaced.pop(key, None)
        else:
            fvs = [(f"f{n}", f"v{i}:a|é") for n in rng.sample(range(4), rng.randint(1, 4))]
            await producer.set(key, fvs)
            merged.setdefault(key, {}).update(fvs)
            replaced[key] = dict(fvs)
        if i % 200 == 0:
            await asyncio.sleep(0.01)
    return merged, replaced


def check_order(records: list, table: str) -> None:
    """Per key and field, every handled value is newer than the one handled before it."""
    last: dict[tuple[str, str], int] = {}
    for t, key, _op, fvs in records:
        if t != table:
            continue
        for field, value in fvs:
            seq = int(value[1:].split(":")[0])
            assert seq > last.get((key, field), -1), (key, field, value)
            last[(key, field)] = seq


async def test_zmq_tables_deliver_persist_and_count(clean_redis: EmbeddedRedis, tmp_path: Path) -> None:
    records = tmp_path / "records.jsonl"
    endpoint = f"ipc://{tmp_path}/zmq.sock"
    port = free_port()
    doc = {
        "capture": {"enabled": True, "directory": str(tmp_path / "capture")},
        "metrics": {"enabled": True, "address": "127.0.0.1", "port": port},
        "orchs": [{
            "plugin": "orch_plugins:RecordingOrch",
            "tables": [
                {"db": "APPL_DB", "table": "ZROUTE", "kind": "zmq", "endpoint": endpoint, "db_persistence": True},
                {"db": "APPL_DB", "table": "ZPORT", "kind": "zmq", "endpoint": endpoint, "pop_batch_size": 7},
            ],
            "options": {"record": str(records)},
        }],
    }
    appl = await DBConnector.from_url(clean_redis.url, db_id=0, separator=":", name="APPL_DB")
    daemon = DaemonProcess(write_config(tmp_path, clean_redis, doc), tmp_path / "log")
    client = ZmqClient(endpoint)
    try:
        daemon.wait_ready()
        routes = ZmqProducerStateTable(appl, "ZROUTE", client, db_persistence=False)
        ports = ZmqProducerStateTable(appl, "ZPORT", client, db_persistence=False)
        bad = [b"", serialize("APPL_DB", "ZROUTE", [KeyOpFieldsValues("k", "SET", [("f", "v")])])[:-2]]
        unrouted = serialize("APPL_DB", "NOBODY", [KeyOpFieldsValues("k", "SET", [("f", "v")])])
        for data in bad:
            await client.send_bytes(data)
        await client.send_bytes(unrouted)
        route_merged, route_replaced = await send_changes(routes, random.Random(1), 3000)
        port_merged, _ = await send_changes(ports, random.Random(2), 1000)

        expected = {**{("ZROUTE", k): v for k, v in route_merged.items()},
                    **{("ZPORT", k): v for k, v in port_merged.items()}}

        def handled_all() -> bool:
            state: dict = {}
            for table, key, op, fvs in read_records(records):
                if op == "DEL":
                    state.pop((table, key), None)
                else:
                    state.setdefault((table, key), {}).update(fvs)
            return state == expected

        assert await asyncio.to_thread(wait_until, handled_all, 60.0), daemon.log_path.read_text()[-3000:]
        handled = read_records(records)
        check_order(handled, "ZROUTE")
        check_order(handled, "ZPORT")
        assert all(op in ("SET", "DEL") and (op == "DEL") == (not fvs) for _, _, op, fvs in handled)

        # db_persistence on ZROUTE only: the table as C++'s AsyncDBUpdater leaves it
        table = Table(appl, "ZROUTE")

        async def persisted() -> dict:
            return await table.dump()

        for _ in range(200):
            if await persisted() == route_replaced:
                break
            await asyncio.sleep(0.05)
        assert await persisted() == route_replaced
        assert await Table(appl, "ZPORT").keys() == []

        assert metric(port, "swssd_zmq_malformed_total") == len(bad)
        assert metric(port, "swssd_zmq_dropped_total") == 1
        assert metric(port, "swssd_zmq_received_total") == len(bad) + 1 + 4000
        assert daemon.stop() == 0
    finally:
        client.close()
        daemon.kill()
        await appl.close()
    log = daemon.log_path.read_text()
    assert "Traceback" not in log
    captured = (tmp_path / "capture" / "swssd.capture.jsonl").read_text()
    assert '"kind":"zmq"' in captured.replace(" ", "") and "zmq" in KINDS


def test_an_endpoint_in_use_is_one_line_and_exit_2(clean_redis: EmbeddedRedis, tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        endpoint = f"tcp://127.0.0.1:{taken.getsockname()[1]}"
        doc = {"orchs": [{
            "plugin": "orch_plugins:RecordingOrch",
            "tables": [{"table": "ZROUTE", "kind": "zmq", "endpoint": endpoint}],
            "options": {"record": str(tmp_path / "r.jsonl")},
        }]}
        config = write_config(tmp_path, clean_redis, doc)
        proc = subprocess.run(
            [sys.executable, "-m", "swssd.cli", "run", "--config", str(config)],
            capture_output=True, text=True, timeout=60, env={**__import__("os").environ, "PYTHONPATH": "tests"},
        )
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    errors = [line for line in lines if "cannot bind" in line]
    assert len(errors) == 1 and "orchs.0.tables.0.endpoint" in errors[0], proc.stderr


@pytest.mark.parametrize(
    ("table", "problem"),
    [
        ({"table": "R", "kind": "zmq"}, "needs endpoint"),
        ({"table": "R", "kind": "zmq", "endpoint": "http://127.0.0.1:1"}, "must start with tcp:// or ipc://"),
        ({"table": "R", "endpoint": "tcp://127.0.0.1:8100"}, "zmq\" tables only"),
        ({"table": "R", "db_persistence": True}, "zmq\" tables only"),
        ({"table": "R", "kind": "zmq", "endpoint": "tcp://127.0.0.1:8100", "reconcile": True}, "reconcile"),
    ],
)
def test_zmq_table_config_errors_name_the_field(table: dict, problem: str) -> None:
    with pytest.raises(ConfigError, match=r"orchs\.0\.tables\.0") as info:
        config_from_dict({"orchs": [{"plugin": "x:Y", "tables": [table]}]}, "swssd.toml")
    assert problem in str(info.value)


def test_one_zmq_table_has_one_consumer_per_endpoint() -> None:
    a = {"table": "R", "kind": "zmq", "endpoint": "tcp://127.0.0.1:8100"}
    b = {"table": "R", "kind": "zmq", "endpoint": "tcp://127.0.0.1:8101"}
    config_from_dict({"orchs": [{"plugin": "x:Y", "tables": [a]}, {"plugin": "x:Z", "tables": [b]}]})
    with pytest.raises(ConfigError, match="already consumed"):
        config_from_dict({"orchs": [{"plugin": "x:Y", "tables": [a]}, {"plugin": "x:Z", "tables": [a]}]})


async def test_a_change_arriving_while_the_daemon_adds_its_tables_waits_for_its_consumer(
    clean_redis: EmbeddedRedis, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon binds its zmq servers before it adds its tables (a bad endpoint fails early),
    and a producer's queue waits for the server (README, The ZMQ channel): what the queue
    delivers in between must wait for the table's consumer, not be dropped as "for a table
    without consumer" (found by the fault campaign, tests/campaign: a restarted daemon dropped
    changes for its own zmq table that its producer had queued while it was down). The window
    is widened here by a table add that takes its time, as a large take-over does."""
    from swssd.orch.daemon import Daemon
    from test_daemon_core import make_config

    records = tmp_path / "records.jsonl"
    endpoint = f"tcp://127.0.0.1:{free_port()}"
    config = make_config(clean_redis.write_database_config(tmp_path / "database_config.json"), [{
        "plugin": "orch_plugins:RecordingOrch", "options": {"record": str(records)},
        "tables": [{"db": "APPL_DB", "table": "ZEARLY", "kind": "zmq", "endpoint": endpoint}],
    }])
    appl = await DBConnector.from_url(clean_redis.url, db_id=0, separator=":", name="APPL_DB")
    client = ZmqClient(endpoint)
    producer = ZmqProducerStateTable(appl, "ZEARLY", client, db_persistence=False)
    await producer.set("queued", [("f", "1")])  # waits in the client's queue: no server yet
    add_table = Daemon._add_table

    async def slow_add_table(self: Daemon, *args: object) -> None:
        await asyncio.sleep(1.0)  # the client connects and sends meanwhile
        await add_table(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(Daemon, "_add_table", slow_add_table)
    daemon = Daemon(config, handle_signals=False)
    run = asyncio.ensure_future(daemon.run())
    try:
        await asyncio.wait_for(daemon.ready.wait(), 20)
        await asyncio.to_thread(wait_until, lambda: bool(read_records(records)), 10.0)
        assert read_records(records) == [("ZEARLY", "queued", "SET", [("f", "1")])]
        assert [s.dropped for s in daemon.zmq_servers.values()] == [0]
    finally:
        daemon.stop()
        assert await asyncio.wait_for(run, 30) == 0
        await producer.close()
        client.close()
        await appl.close()
