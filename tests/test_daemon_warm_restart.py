"""The daemon in SONiC's warm restart, black-box: `swssd run` as a subprocess against a real
redis-server, started cold, stopped, changed while down, started warm, with SONiC's readers
watching: the blocking layer's WarmStart and RestartWaiter, and the C++ binding's when
$SWSSD_SWSSCOMMON_ENV (or ../cpp/env.sh) provides it.

What "existing entries" means is the module docstring of swssd/orch/warm_restart.py: a state or
queue table's entries with what waited in its channel applied, a subscriber table's first read.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from compat_fixtures import sonic_db_config
from daemon_harness import DaemonProcess, wait_until, write_config
from swssd import DBConnector, ProducerStateTable, ProducerTable
from swssd.compat.restart_waiter import RestartWaiter
from swssd.compat.warm_restart import WarmStart
from swssd.redis.embedded_redis import EmbeddedRedis
from test_configdb_interop import _env_file, _swsscommon_env

_ = sonic_db_config
APP, CONTAINER = "swssdtest", "swss"
RECORD = f"WARM_RESTART_TABLE|{APP}"

#: the real binding's reader: WarmStart's check (not counting), then RestartWaiter's wait
BINDING_READER = f"""
import sys
from swsscommon import swsscommon
swsscommon.SonicDBConfig.initialize(sys.argv[1])
swsscommon.WarmStart.initialize("{APP}", "{CONTAINER}")
print("warm", swsscommon.WarmStart.checkWarmStart("{APP}", "{CONTAINER}", False), flush=True)
done = swsscommon.RestartWaiter.waitWarmBootDone(60)
state = swsscommon.DBConnector("STATE_DB", 0).hget("{RECORD}", "state")
print("done", done, state, flush=True)
"""


def notes(path: Path) -> list[list[Any]]:
    lines = path.read_text().splitlines() if path.exists() else []
    return [json.loads(line) for line in lines if line.endswith("]")]


def kinds(found: list[list[Any]], kind: str) -> list[list[Any]]:
    return [n for n in found if n[0] == kind]


class StateMonitor:
    """Every HSET of the app's `state`, in order, with Redis's time (MONITOR, in a thread)."""

    def __init__(self, server: EmbeddedRedis) -> None:
        self.client = redis.Redis(unix_socket_path=server.unix_socket, decode_responses=True)
        self.states: list[tuple[str, float]] = []
        self._monitor = self.client.monitor()
        self._monitor.__enter__()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            try:
                cmd = self._monitor.next_command()
            except Exception:
                return
            words = cmd["command"].split(" ")
            if words[:2] == ["ECHO", "stop-monitor"]:
                return
            if len(words) == 4 and words[0].upper() == "HSET" and words[1:3] == [RECORD, "state"]:
                self.states.append((words[3], float(cmd["time"])))

    def close(self) -> None:
        self.client.echo("stop-monitor")
        self._thread.join(10)
        self._monitor.__exit__()


@pytest.fixture
def state_db(clean_redis: EmbeddedRedis) -> Iterator[redis.Redis]:
    client = redis.Redis(unix_socket_path=clean_redis.unix_socket, db=6, decode_responses=True)
    client.config_set("notify-keyspace-events", "AKE")
    WarmStart._instance = None
    yield client
    WarmStart._instance = None
    client.close()


async def test_cold_then_warm_start_restores_reconciles_and_loses_nothing(
    clean_redis: EmbeddedRedis, db: DBConnector, state_db: redis.Redis, sonic_db_config: Path, tmp_path: Path
) -> None:
    record = tmp_path / "notes.jsonl"
    config_db = redis.Redis(unix_socket_path=clean_redis.unix_socket, db=4, decode_responses=True)
    config = write_config(tmp_path, clean_redis, {
        "redis": {"database_config": str(sonic_db_config)},
        "warm_restart": {"app": APP, "container": CONTAINER},
        "orchs": [{
            "plugin": "warm_plugins:WarmRecordingOrch", "name": "warm",
            "tables": [{"db": "APPL_DB", "table": "WR_ROUTE"}, {"db": "APPL_DB", "table": "WR_Q", "kind": "queue"},
                       {"db": "CONFIG_DB", "table": "WR_CFG"}],
            "options": {"record": str(record)},
        }],
    })
    routes, queue = ProducerStateTable(db, "WR_ROUTE"), ProducerTable(db, "WR_Q")
    config_db.hset("WR_CFG|a", "x", "1")

    # -- a cold start: restore_count 0, no restore, reconciled once started ----------------------
    daemon = DaemonProcess(config, tmp_path / "log1")
    try:
        daemon.wait_ready()
        assert wait_until(lambda: state_db.hget(RECORD, "state") == "reconciled", 10)
        assert state_db.hget(RECORD, "restore_count") == "0"
        for i in range(1, 6):
            await routes.set(f"r{i}", [("nh", f"10.0.0.{i}"), ("if", "Ethernet0")])
        await queue.set("q1", [("v", "1")])
        await queue.set("q2", [("v", "2")])
        assert wait_until(lambda: len(kinds(notes(record), "handle")) == 8, 10), notes(record)
        assert daemon.stop() == 0
    finally:
        daemon.kill()
    cold = notes(record)
    assert cold[0][:2] == ["start", False] and not kinds(cold, "restore") and not kinds(cold, "reconcile")
    assert sorted(n[2] for n in kinds(cold, "handle")) == ["a", "q1", "q2", "r1", "r2", "r3", "r4", "r5"]

    # -- while it is down: a warm reboot is announced, changes keep coming -------------------------
    state_db.hset("WARM_RESTART_ENABLE_TABLE|system", "enable", "true")
    state_db.hdel(RECORD, "state")  # as warm-reboot clears every app's state before it goes down
    config_db.hset(f"WARM_RESTART|{CONTAINER}", f"{APP}_timer", "2")
    await routes.set("r1", [("nh", "10.0.0.100")])
    await routes.delete("r2")
    await routes.set("r6", [("nh", "10.0.0.6")])
    await queue.set("q3", [("v", "3")])
    config_db.hset("WR_CFG|b", "y", "2")

    # -- the warm start, SONiC's readers waiting for it --------------------------------------------
    waited: dict[str, bool] = {}
    layer_saw: list[int] = []

    def layer_waiter() -> None:
        waited["layer"] = RestartWaiter.waitWarmBootDone(60)

    def finalizer() -> None:
        """warmboot-finalizer's part: once the app is reconciled, the warm reboot is over."""
        WarmStart.initialize(APP, CONTAINER)
        assert WarmStart.checkWarmStart(APP, CONTAINER, False)  # not counting: only the daemon counts
        wait_until(lambda: WarmStart.getWarmStartState(APP) == WarmStart.RECONCILED, 60)
        layer_saw.append(WarmStart.getWarmStartState(APP))
        state_db.hset("WARM_RESTART_ENABLE_TABLE|system", "enable", "false")

    env = _swsscommon_env()
    binding = None
    if env is not None and _env_file() is not None:
        binding = subprocess.Popen([env.get("PYTHON", sys.executable), "-c", BINDING_READER, str(sonic_db_config)],
                                   env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    monitor = StateMonitor(clean_redis)
    threads = [threading.Thread(target=layer_waiter), threading.Thread(target=finalizer)]
    for thread in threads:
        thread.start()
    start = len(notes(record))
    daemon = DaemonProcess(config, tmp_path / "log2")
    try:
        daemon.wait_ready()
        # new changes right away: they must come after every restored entry
        await routes.set("r7", [("nh", "10.0.0.7")])
        await routes.delete("r3")
        config_db.hset("WR_CFG|c", "z", "3")
        assert wait_until(lambda: state_db.hget(RECORD, "state") == "reconciled", 20), state_db.hgetall(RECORD)
        assert wait_until(lambda: len(kinds(notes(record)[start:], "handle")) == 3, 10), notes(record)[start:]
        for thread in threads:
            thread.join(30)
        assert waited == {"layer": True} and layer_saw == [WarmStart.RECONCILED]
        assert daemon.stop() == 0
    finally:
        daemon.kill()
        monitor.close()
    warm = notes(record)[start:]

    assert state_db.hget(RECORD, "restore_count") == "1"
    assert [s for s, _ in monitor.states] == ["initialized", "restored", "reconciled"]
    assert warm[0][:2] == ["start", True]
    restored = {(n[1], n[2]): dict(n[4]) for n in kinds(warm, "restore")}
    assert len(restored) == len(kinds(warm, "restore"))  # each entry once
    assert restored == {
        ("WR_ROUTE", "r1"): {"nh": "10.0.0.100", "if": "Ethernet0"},  # the change made while down, applied
        ("WR_ROUTE", "r3"): {"nh": "10.0.0.3", "if": "Ethernet0"},
        ("WR_ROUTE", "r4"): {"nh": "10.0.0.4", "if": "Ethernet0"},
        ("WR_ROUTE", "r5"): {"nh": "10.0.0.5", "if": "Ethernet0"},
        ("WR_ROUTE", "r6"): {"nh": "10.0.0.6"},
        ("WR_Q", "q1"): {"v": "1"}, ("WR_Q", "q2"): {"v": "2"}, ("WR_Q", "q3"): {"v": "3"},
        ("WR_CFG", "a"): {"x": "1"}, ("WR_CFG", "b"): {"y": "2"},
    }
    handled = [(n[1], n[2], n[3]) for n in kinds(warm, "handle")]
    assert sorted(handled) == [("WR_CFG", "c", "SET"), ("WR_ROUTE", "r3", "DEL"), ("WR_ROUTE", "r7", "SET")]
    last_restore = max(n[-1] for n in kinds(warm, "restore"))
    assert all(n[-1] >= last_restore for n in kinds(warm, "handle"))  # restored state before any change
    [reconcile] = kinds(warm, "reconcile")
    restored_at = dict(monitor.states)["restored"]
    assert reconcile[-1] - restored_at >= 1.9, (restored_at, reconcile)  # the 2 s timer of CONFIG_DB
    assert reconcile[-1] <= dict(monitor.states)["reconciled"]

    if binding is not None:
        out, err = binding.communicate(timeout=60)
        if "No module named" in err or "cannot open shared object" in err:
            pytest.skip(f"swsscommon's binding not importable: {err.strip().splitlines()[-1]}")
        assert binding.returncode == 0, err
        assert out.split() == ["warm", "True", "done", "True", "reconciled"], out


async def test_plugins_asking_reconcile_early_and_a_knob_without_a_record(
    clean_redis: EmbeddedRedis, db: DBConnector, state_db: redis.Redis, tmp_path: Path
) -> None:
    """The container's knob with no restore_count on record is a cold start, as in C++ (restore_count
    0, no restore); a warm start whose plugin calls reconcile_now() reconciles without the timer."""
    record = tmp_path / "notes.jsonl"
    config = write_config(tmp_path, clean_redis, {
        "warm_restart": {"app": APP, "container": CONTAINER, "default_timer": 600},
        "orchs": [{
            "plugin": "warm_plugins:WarmRecordingOrch", "name": "warm",
            "tables": [{"db": "APPL_DB", "table": "WR_ROUTE", "reconcile": True}],
            "options": {"record": str(record), "reconcile_now": True},
        }],
    })
    await ProducerStateTable(db, "WR_ROUTE").set("r1", [("nh", "1")])
    state_db.hset(f"WARM_RESTART_ENABLE_TABLE|{CONTAINER}", "enable", "true")
    for expected_count, warm in (("0", False), ("1", True)):
        daemon = DaemonProcess(config, tmp_path / f"log{expected_count}")
        try:
            daemon.wait_ready()
            assert wait_until(lambda: state_db.hget(RECORD, "state") == "reconciled", 10), state_db.hgetall(RECORD)
            assert state_db.hget(RECORD, "restore_count") == expected_count
            assert daemon.stop() == 0
        finally:
            daemon.kill()
        run = notes(record)
        ours = run[max(i for i, n in enumerate(run) if n[0] == "start"):]
        assert ours[0][:2] == ["start", warm]
        if warm:  # restored once, not handled again by `reconcile = true`; reconciled early
            assert [(n[1], n[2]) for n in kinds(ours, "restore")] == [("WR_ROUTE", "r1")]
            assert not kinds(ours, "handle") and len(kinds(ours, "reconcile")) == 1
        else:
            assert not kinds(ours, "restore") and [n[2] for n in kinds(ours, "handle")] == ["r1"]


async def test_nothing_lost_or_handled_twice_across_a_warm_restart_under_a_steady_producer(
    clean_redis: EmbeddedRedis, db: DBConnector, state_db: redis.Redis, tmp_path: Path
) -> None:
    """A producer writes `v<seq>` values without pause through a SIGTERM, the time the daemon is
    down and the warm start. Per key and field, the values the warm run sees (restored, then
    handled) only advance and end at the producer's last; none handled by the cold run is handled
    again; and the cold run's handled values never run ahead of what was restored."""
    record = tmp_path / "notes.jsonl"
    config = write_config(tmp_path, clean_redis, {
        "warm_restart": {"app": APP, "container": CONTAINER, "default_timer": 1},
        "orchs": [{"plugin": "warm_plugins:WarmRecordingOrch", "name": "warm",
                   "tables": [{"db": "APPL_DB", "table": "WR_FLOW", "pop_batch_size": 16}],
                   "options": {"record": str(record)}}],
    })
    producer = ProducerStateTable(db, "WR_FLOW")
    last: dict[str, int] = {}
    seq = 0

    async def produce(seconds: float) -> None:
        nonlocal seq
        until = asyncio.get_running_loop().time() + seconds
        while asyncio.get_running_loop().time() < until:
            key = f"k{seq % 97}"
            if seq % 31 == 30:
                await producer.delete(key)
                last.pop(key, None)
            else:
                await producer.set(key, [("f", f"v{seq}")])
                last[key] = seq
            seq += 1
            if seq % 50 == 0:
                await asyncio.sleep(0.005)

    daemon = DaemonProcess(config, tmp_path / "log1")
    try:
        daemon.wait_ready()
        await produce(1.5)
        daemon.signal(signal.SIGTERM)
        await produce(0.5)  # on through the shutdown
        assert await asyncio.to_thread(daemon.wait, 30) == 0
    finally:
        daemon.kill()
    cold_end = len(notes(record))
    state_db.hset("WARM_RESTART_ENABLE_TABLE|system", "enable", "true")
    await produce(0.5)  # while down
    daemon = DaemonProcess(config, tmp_path / "log2")
    try:
        started = asyncio.ensure_future(produce(1.0))  # on through the warm start
        await asyncio.to_thread(daemon.wait_ready)
        await started
        await produce(1.0)  # and after it
        assert wait_until(lambda: state_db.hget(RECORD, "state") == "reconciled", 20)
        expected = {k: f"v{s}" for k, s in last.items()}

        def caught_up() -> bool:
            known: dict[str, str] = {}
            for n in notes(record)[cold_end:]:
                if n[0] in ("restore", "handle"):
                    if n[3] == "DEL":
                        known.pop(n[2], None)
                    else:
                        known[n[2]] = dict(n[4])["f"]
            return known == expected

        assert wait_until(caught_up, 20), "the warm run's view never matched what was produced"
        assert daemon.stop() == 0
    finally:
        daemon.kill()
    cold, warm = notes(record)[:cold_end], notes(record)[cold_end:]
    cold_handled = {(n[2], dict(n[4])["f"]) for n in kinds(cold, "handle") if n[3] == "SET"}
    warm_handled = [(n[2], dict(n[4])["f"]) for n in kinds(warm, "handle") if n[3] == "SET"]
    assert cold_handled and warm_handled and kinds(warm, "restore")
    assert not cold_handled & set(warm_handled), "a change handled by both runs"
    assert len(warm_handled) == len(set(warm_handled)), "a change handled twice"
    seen: dict[str, int] = {}
    for n in warm:  # restored values first, then handled ones: per key they only advance
        if n[0] in ("restore", "handle") and n[3] == "SET":
            value = int(dict(n[4])["f"][1:])
            assert value > seen.get(n[2], -1), (n, seen.get(n[2]))
            seen[n[2]] = value
    newest_cold: dict[str, int] = {}
    for key, value in cold_handled:
        newest_cold[key] = max(newest_cold.get(key, -1), int(value[1:]))
    restored = {n[2]: int(dict(n[4])["f"][1:]) for n in kinds(warm, "restore")}
    for key, value in restored.items():  # what the cold run handled last is restored, or newer
        assert value >= newest_cold.get(key, -1), key


async def test_redis_going_away_during_the_restore_fails_the_start_in_one_line(tmp_path: Path) -> None:
    with EmbeddedRedis() as server:
        record = tmp_path / "notes.jsonl"
        config = write_config(tmp_path, server, {
            "warm_restart": {"app": APP},
            "orchs": [{"plugin": "warm_plugins:RedisGoneOrch", "name": "gone",
                       "tables": [{"db": "APPL_DB", "table": "WR_A"}, {"db": "APPL_DB", "table": "WR_B"}],
                       "options": {"record": str(record)}}],
        })
        client = redis.Redis(unix_socket_path=server.unix_socket, decode_responses=True)
        client.hset("WR_A:a", "f", "1")
        client.hset("WR_B:b", "f", "2")
        state = redis.Redis(unix_socket_path=server.unix_socket, db=6, decode_responses=True)
        state.hset("WARM_RESTART_ENABLE_TABLE|system", "enable", "true")
        state.hset(RECORD, "restore_count", "4")
        daemon = DaemonProcess(config, tmp_path / "log")
        try:
            assert daemon.wait(60) == 1
        finally:
            daemon.kill()
        text = (tmp_path / "log").read_text()
        assert "Redis went away while APPL_DB WR_B was restored" in text and "Traceback" not in text, text[-3000:]
        assert [n[2] for n in kinds(notes(record), "restore")] == ["a"]
