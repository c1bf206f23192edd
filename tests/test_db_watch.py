"""`swssd db` (sonic-db-cli's shape) and `swssd watch` against a real redis-server, on CONFIG_DB and
APPL_DB; watch never takes a change away from a key-set consumer."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from swssd import ConsumerStateTable, DBConnector, ProducerStateTable
from swssd.redis.embedded_redis import EmbeddedRedis
from test_faults import restart_redis

CLI = [sys.executable, "-m", "swssd.cli"]


def swssd(*args: str | Path, timeout: float | None = None) -> subprocess.CompletedProcess[str]:
    """The command's output; with `timeout`, whatever it printed until then (then it is stopped)."""
    env = dict(os.environ)
    env.pop("SWSSD_DB_CONFIG", None)
    if timeout is None:
        return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, timeout=60, env=env)
    proc = subprocess.Popen([*CLI, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.terminate()
        out, err = proc.communicate(timeout=30)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


@pytest.fixture
def server(clean_redis: EmbeddedRedis) -> Iterator[EmbeddedRedis]:
    """The test server publishing keyspace events, as SONiC's redis.conf has it (AKE)."""
    client = redis.Redis(port=clean_redis.port, decode_responses=True)
    before = client.config_get("notify-keyspace-events")["notify-keyspace-events"]
    client.config_set("notify-keyspace-events", "AKE")
    yield clean_redis
    client.config_set("notify-keyspace-events", before)
    client.close()


@pytest.fixture
def db_config(clean_redis: EmbeddedRedis, tmp_path: Path) -> Path:
    return clean_redis.write_database_config(tmp_path / "database_config.json")


def raw(server: EmbeddedRedis, db: int) -> redis.Redis:
    return redis.Redis(port=server.port, db=db, decode_responses=True)


def ok(*args: str | Path) -> str:
    out = swssd(*args)
    assert out.returncode == 0, out.stderr
    return out.stdout


# -- swssd db -----------------------------------------------------------------------------


def test_db_config_db_as_sonic_db_cli(clean_redis: EmbeddedRedis, db_config: Path) -> None:
    cli = ("db", "--db-config", db_config, "CONFIG_DB")
    assert ok(*cli, "hset", "PORT|Ethernet0", "admin_status", "up", "mtu", "9100") == "2\n"
    assert raw(clean_redis, 4).hgetall("PORT|Ethernet0") == {"admin_status": "up", "mtu": "9100"}
    assert ok(*cli, "hgetall", "PORT|Ethernet0") == "{'admin_status': 'up', 'mtu': '9100'}\n"
    assert ok(*cli, "hget", "PORT|Ethernet0", "mtu") == "9100\n"
    assert ok(*cli, "hget", "PORT|Ethernet0", "nothing") == ""
    ok(*cli, "hset", "PORT|Ethernet4", "speed", "-40000")  # a value that looks like an option
    assert sorted(ok(*cli, "keys", "PORT|*").splitlines()) == ["PORT|Ethernet0", "PORT|Ethernet4"]
    assert json.loads(ok("db", "--json", "--db-config", db_config, "CONFIG_DB", "hgetall", "PORT|Ethernet4")) == {
        "speed": "-40000"}
    assert ok(*cli, "hdel", "PORT|Ethernet0", "mtu") == "1\n"
    assert ok(*cli, "del", "PORT|Ethernet4") == "1\n"
    assert ok(*cli, "keys") == "PORT|Ethernet0\n"  # pattern defaults to *


async def test_db_appl_db_reads_what_a_producer_wrote(
    clean_redis: EmbeddedRedis, db_config: Path, db: DBConnector
) -> None:
    await ProducerStateTable(db, "PORT_TABLE").set("Ethernet0", {"admin_status": "up"})
    await ConsumerStateTable(db, "PORT_TABLE").pops()
    hgetall = ok("db", "--db-config", db_config, "APPL_DB", "hgetall", "PORT_TABLE:Ethernet0")
    assert hgetall == "{'admin_status': 'up'}\n"
    # --url as produce and dump take it: the database number comes from SONiC's usual one for the name
    assert ok("db", "--url", clean_redis.url, "APPL_DB", "hget", "PORT_TABLE:Ethernet0", "admin_status") == "up\n"


def test_db_errors(db_config: Path) -> None:
    out = swssd("db", "--db-config", db_config, "NO_DB", "keys")
    assert out.returncode == 2 and "NO_DB" in out.stderr and len(out.stderr.splitlines()) == 1
    out = swssd("db", "--db-config", db_config, "CONFIG_DB", "frobnicate")
    assert out.returncode == 1 and "Redis replied with an error" in out.stderr


# -- swssd watch --------------------------------------------------------------------------


class Watch:
    """`swssd watch --json ...` in the background, its lines read as they come."""

    def __init__(self, *args: str | Path) -> None:
        env = dict(os.environ)
        env.pop("SWSSD_DB_CONFIG", None)
        self.proc = subprocess.Popen([*CLI, "watch", "--json", *map(str, args)], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=env)
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for text in self.proc.stdout:
            self.lines.put(text)

    def next(self, timeout: float = 20.0) -> dict[str, Any]:
        try:
            return dict(json.loads(self.lines.get(timeout=timeout)))
        except queue.Empty:
            self.proc.kill()
            raise AssertionError(f"no line from swssd watch; stderr: {self.proc.communicate()[1]}") from None

    def quiet(self, seconds: float) -> bool:
        try:
            self.lines.get(timeout=seconds)
        except queue.Empty:
            return True
        return False

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait(10)


def change(line: dict[str, Any]) -> tuple[str, str, str, dict[str, str]]:
    return line["table"], line["key"], line["op"], line["fvs"]


def test_watch_config_db(server: EmbeddedRedis, db_config: Path) -> None:
    cfg = raw(server, 4)
    cfg.hset("PORT|Ethernet0", mapping={"admin_status": "down"})
    watch = Watch("--db-config", db_config, "--db", "CONFIG_DB", "--table", "PORT", "--table", "VLAN")
    try:
        first = watch.next()  # existing entries first: the subscription is in place
        assert change(first) == ("PORT", "Ethernet0", "SET", {"admin_status": "down"})
        assert first["db"] == "CONFIG_DB" and first["ts"].endswith("Z")
        cfg.hset("PORT|Ethernet0", "admin_status", "up")
        assert change(watch.next()) == ("PORT", "Ethernet0", "SET", {"admin_status": "up"})
        cfg.hset("VLAN|Vlan10", "vlanid", "10")
        assert change(watch.next()) == ("VLAN", "Vlan10", "SET", {"vlanid": "10"})
        cfg.hset("PORT_QOS_MAP|Ethernet0", "x", "y")  # another table: not shown
        cfg.delete("PORT|Ethernet0")
        assert change(watch.next()) == ("PORT", "Ethernet0", "DEL", {})
        assert watch.quiet(0.5)
    finally:
        watch.stop()


async def test_watch_appl_db_leaves_the_key_set_to_the_consumer(
    server: EmbeddedRedis, db_config: Path, db: DBConnector
) -> None:
    appl = raw(server, 0)
    appl.hset("ROUTE_TABLE:0.0.0.0/0", "nexthop", "10.0.0.1")
    watch = Watch("--db-config", db_config, "--db", "APPL_DB", "--table", "ROUTE_TABLE")
    try:
        assert change(watch.next()) == ("ROUTE_TABLE", "0.0.0.0/0", "SET", {"nexthop": "10.0.0.1"})
        await ProducerStateTable(db, "ROUTE_TABLE").set("10.1.0.0/24", {"nexthop": "10.0.0.2", "ifname": "Ethernet0"})
        assert watch.quiet(1.0)  # produced, not yet consumed: the key set is untouched
        assert appl.smembers("ROUTE_TABLE_KEY_SET") == {"10.1.0.0/24"}
        popped = await ConsumerStateTable(db, "ROUTE_TABLE").pops()
        assert [t.key for t in popped] == ["10.1.0.0/24"]  # the consumer gets its change
        applied = {"nexthop": "10.0.0.2", "ifname": "Ethernet0"}
        assert change(watch.next()) == ("ROUTE_TABLE", "10.1.0.0/24", "SET", applied)
        await ProducerStateTable(db, "ROUTE_TABLE").delete("10.1.0.0/24")
        assert [t.op for t in await ConsumerStateTable(db, "ROUTE_TABLE").pops()] == ["DEL"]
        assert change(watch.next()) == ("ROUTE_TABLE", "10.1.0.0/24", "DEL", {})
    finally:
        watch.stop()


def test_watch_text_form_and_count(server: EmbeddedRedis, db_config: Path) -> None:
    """--count N stops after N changes: the existing entries printed first are not counted."""
    cfg = raw(server, 4)
    cfg.hset("PORT|Ethernet8", mapping={"mtu": "9100", "speed": "100000"})
    cfg.hset("PORT|Ethernet12", mapping={"mtu": "1500"})
    env = dict(os.environ)
    env.pop("SWSSD_DB_CONFIG", None)
    proc = subprocess.Popen(
        [*CLI, "watch", "--db-config", str(db_config), "--db", "CONFIG_DB", "--table", "PORT", "--count", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    try:
        assert proc.stdout is not None
        existing = [proc.stdout.readline(), proc.stdout.readline()]
        stamp, rest = existing[1].split(" ", 1)
        assert stamp.endswith("Z") and rest == "SET PORT|Ethernet8 mtu=9100 speed=100000\n", existing
        assert proc.poll() is None  # two existing entries printed, no change yet: still watching
        cfg.hset("PORT|Ethernet8", "mtu", "1500")
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert out.split(" ", 1)[1] == "SET PORT|Ethernet8 mtu=1500 speed=100000\n", out

def test_watch_without_keyspace_events_names_its_own_flag(clean_redis: EmbeddedRedis, db_config: Path) -> None:
    """The warning names what turns them on from where the user is: the flag, not the library's parameter."""
    client = redis.Redis(port=clean_redis.port, decode_responses=True)
    before = client.config_get("notify-keyspace-events")["notify-keyspace-events"]
    client.config_set("notify-keyspace-events", "")
    try:
        out = swssd("watch", "--db-config", db_config, "--db", "CONFIG_DB", "--table", "PORT", "--count", "1",
                    timeout=3)
    finally:
        client.config_set("notify-keyspace-events", before)
    assert "does not publish keyspace events" in out.stderr and "--enable-keyspace-events" in out.stderr, out.stderr


@pytest.fixture
def own_server() -> Iterator[EmbeddedRedis]:
    """A redis-server of this test alone (it is restarted), without keyspace events: after a
    restart its `notify-keyspace-events` is the default again, off."""
    server = EmbeddedRedis().start()
    try:
        yield server
    finally:
        server.stop()


def until(watch: Watch, *wanted: tuple[str, str, str, dict[str, str]], timeout: float = 20.0) -> list[Any]:
    """The watch's lines up to the last of `wanted` to show (all must come within `timeout`)."""
    seen: list[Any] = []
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        seen.append(change(watch.next(timeout=left)))
        if all(w in seen for w in wanted):
            return seen
    raise AssertionError(f"{wanted} not all shown within {timeout:g} s; shown: {seen}")


def test_watch_goes_on_across_a_redis_restart(own_server: EmbeddedRedis, tmp_path: Path) -> None:
    """Redis restarted (without persistence: the table is gone, keyspace events are off again):
    the watch reconnects, turns the events on again, reads the table again (the entry it showed is
    gone: a DEL) and shows the changes written after the restart, each as it comes."""
    db_config = own_server.write_database_config(tmp_path / "database_config.json")
    raw(own_server, 4).hset("PORT|Ethernet0", mapping={"mtu": "1500"})
    watch = Watch("--db-config", db_config, "--db", "CONFIG_DB", "--table", "PORT", "--enable-keyspace-events")
    try:
        assert change(watch.next()) == ("PORT", "Ethernet0", "SET", {"mtu": "1500"})
        raw(own_server, 4).hset("PORT|Ethernet0", "mtu", "9100")
        assert change(watch.next()) == ("PORT", "Ethernet0", "SET", {"mtu": "9100"})
        restart_redis(own_server)
        cfg = raw(own_server, 4)
        cfg.hset("PORT|Ethernet4", "mtu", "1")  # shown by the re-read after the reconnect or by its event
        until(watch, ("PORT", "Ethernet4", "SET", {"mtu": "1"}), ("PORT", "Ethernet0", "DEL", {}))
        assert "K" in str(cfg.config_get("notify-keyspace-events")["notify-keyspace-events"]), "turned on again"
        cfg.hset("PORT|Ethernet4", "mtu", "2")  # after the re-read: only an event shows it
        assert change(watch.next()) == ("PORT", "Ethernet4", "SET", {"mtu": "2"})
        cfg.delete("PORT|Ethernet4")
        assert change(watch.next()) == ("PORT", "Ethernet4", "DEL", {})
        assert watch.proc.poll() is None
    finally:
        watch.stop()
